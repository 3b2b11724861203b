//! The desktop images' session (issue 18): Xfce, a test user whose session starts real
//! programs, and two ways to log in chosen on the kernel command line, so the third boot
//! time (graphical login to a working desktop) and preload can be measured.
//!
//! Xfce because it is a complete, light desktop Debian packages whole (session manager,
//! window manager, panel, desktop, file manager, terminal) and runs on Xorg's modesetting
//! driver without 3D; GNOME's shell needs GL, which software rendering under emulation
//! makes minutes slow. The session starts Xfce's default programs (xfwm4, xfce4-panel,
//! xfdesktop, Thunar's daemon), a terminal and Firefox ESR (the heavy program, some 300 MB
//! installed, whose start is what preload has most to win on).
//!
//! The login, by `testbed.login=` on the kernel command line (the init script
//! [`LOGIN_SCRIPT`], which runs before LightDM, reads it):
//! - `auto`: LightDM's autologin of the test user, no greeter wait;
//! - `greeter:N`: the greeter comes up; N seconds later, as a person would, [`TYPE_SCRIPT`]
//!   types the password into it with xdotool (the XTEST extension);
//! - absent: the greeter waits, as the desktop images always did (`bench rc --desktop`).

use std::fs;
use std::path::Path;

use crate::vm::image::{chroot, set_mode, write};
use crate::vm::util::{io_err, run_logged, Result};

/// Added to both desktop images' packages (`--no-install-recommends`).
pub const PACKAGES: &[&str] = &[
    "xfce4-session",
    "xfwm4",
    "xfce4-panel",
    "xfdesktop4",
    "xfce4-settings",
    "xfconf",
    "thunar",
    "xfce4-terminal",
    // The session bus Xfce needs, started by Debian's Xsession.d on both inits.
    "dbus-x11",
    "firefox-esr",
    "xdotool",
];

/// The test user and its password (the greeter types the password).
pub const USER: &str = "tester";
pub const PASSWORD: &str = "bootprint";

/// The kernel command-line word that picks the login (see the module's doc). Not under
/// `bootprint.`: the recorder takes every `bootprint.*` word for one of its keys and warns
/// about the others (a real Xfce trace of 2026-11-26 carried that warning).
pub const LOGIN_WORD: &str = "testbed.login";
/// Seconds the greeter login waits at the greeter before typing, as a person does (`desktop
/// --greeter-wait`'s default and `bench desktop`'s wait).
pub const GREETER_WAIT_S: u32 = 8;
/// The kernel parameter that sets preload up for this boot, read by [`LOGIN_SCRIPT`] before
/// LightDM starts: `off` (bootprint.toml without preload), `learn` (preload on, its model and
/// history removed: this login learns) or `prefetch` (preload on, the model kept, never a
/// login without prefetch to compare: `compare_every = 0`). Both with a learning window of
/// 300 s and 30 s of quiet (defaults 60 and 5): under emulation the session's start takes
/// minutes (Firefox's first start alone 130 s of CPU). Absent: bootprint.toml as it is.
pub const PRELOAD_WORD: &str = "testbed.preload";

const LOGIN_PATH: &str = "/etc/init.d/bootprint-testbed-login";
/// Runs before LightDM (`X-Start-Before`; systemd's sysv generator orders it the same).
pub const LOGIN_SCRIPT: &str = "#!/bin/sh
### BEGIN INIT INFO
# Provides:          bootprint-testbed-login
# Required-Start:    $local_fs
# Required-Stop:
# X-Start-Before:    lightdm
# Default-Start:     2 3 4 5
# Default-Stop:
# Short-Description: bootprint test bed: how the test user logs in
# Description:       testbed.login=auto: LightDM logs the test user in;
#                    testbed.login=greeter:N: the password is typed into the
#                    greeter N seconds after it is up; absent: the greeter waits.
#                    testbed.preload=off|learn|prefetch: preload's settings.
### END INIT INFO
[ \"$1\" = start ] || exit 0
conf=/etc/lightdm/lightdm.conf.d/60-bootprint-testbed-login.conf
rm -f \"$conf\"
for w in $(cat /proc/cmdline); do
	case \"$w\" in
	testbed.login=auto)
		printf '[Seat:*]\\nautologin-user=tester\\nautologin-user-timeout=0\\n' > \"$conf\" ;;
	testbed.login=greeter:*)
		setsid /usr/local/sbin/bootprint-testbed-type-password \"${w#testbed.login=greeter:}\" \\
			</dev/null >/var/log/bootprint-testbed-login.log 2>&1 &
		;;
	testbed.preload=off)
		mkdir -p /etc/bootprint
		printf '[preload]\\nenabled = false\\n' > /etc/bootprint/bootprint.toml ;;
	testbed.preload=learn)
		mkdir -p /etc/bootprint
		rm -rf /var/lib/bootprint/preload
		printf '[preload]\\nenabled = true\\ncompare_every = 0\\nwindow_s = 300\\nquiet_s = 30\\n' > /etc/bootprint/bootprint.toml ;;
	testbed.preload=prefetch)
		mkdir -p /etc/bootprint
		printf '[preload]\\nenabled = true\\ncompare_every = 0\\nwindow_s = 300\\nquiet_s = 30\\n' > /etc/bootprint/bootprint.toml ;;
	esac
done
exit 0
";

const TYPE_PATH: &str = "/usr/local/sbin/bootprint-testbed-type-password";
/// Waits for the greeter's window to show, waits `$1` seconds more, types the password and
/// Return, as a person does. The greeter lists the users (one: the test user, selected) and
/// asks for the password at once. Until the session manager starts, it types again after a
/// minute (at most three times): under emulation the greeter can show before its password
/// field takes keys, and a person whose first try went nowhere types again too.
pub const TYPE_SCRIPT: &str = r#"#!/bin/sh
# bootprint test bed: a person at LightDM's greeter. $1: seconds to wait once it shows.
export DISPLAY=:0 XAUTHORITY=/var/run/lightdm/root/:0
i=0
until xdotool search --onlyvisible --class lightdm-gtk-greeter >/dev/null 2>&1; do
	sleep 0.5; i=$((i + 1))
	[ $i -lt 1200 ] || { echo 'no greeter window after 600 s'; exit 1; }
done
echo "greeter shown; typing in $1 s"
sleep "$1"
for try in 1 2 3; do
	xdotool type --delay 150 bootprint && xdotool key Return && echo "typed ($try)"
	i=0
	while [ $i -lt 120 ]; do
		pgrep -u tester -x xfce4-session >/dev/null && { echo 'session started'; exit 0; }
		sleep 0.5; i=$((i + 1))
	done
done
echo 'no session after three tries'
exit 1
"#;

/// LightDM: the Xfce session; the greeter lists the users, so it asks for the test user's
/// password at once (what TYPE_SCRIPT types into).
const LIGHTDM_CONF: &str = "[Seat:*]
user-session=xfce
greeter-hide-users=false
";

/// The session's own programs beyond Xfce's default ones: XDG autostart entries.
const AUTOSTART: &[(&str, &str)] = &[
    ("bootprint-testbed-terminal", "xfce4-terminal"),
    ("bootprint-testbed-browser", "firefox-esr about:blank"),
];

/// The test user, its session's files and the login scripts, in the image's chroot.
pub fn install(root: &Path, log: &Path) -> Result<()> {
    run_logged(
        &mut chroot(
            root,
            &[
                "sh",
                "-c",
                &format!("useradd -m -s /bin/bash {USER} && echo {USER}:{PASSWORD} | chpasswd"),
            ],
        ),
        log,
    )?;
    let home = root.join("home").join(USER);
    // Xfce's panel asks on a first login whether to use the default panel or an empty one,
    // a dialog that would hold the session: the default, in place already.
    let panel = home.join(".config/xfce4/xfconf/xfce-perchannel-xml/xfce4-panel.xml");
    let default = root.join("etc/xdg/xfce4/panel/default.xml");
    mkdir(panel.parent().expect("a parent"))?;
    fs::copy(&default, &panel).map_err(|e| io_err("cannot copy", &default, e))?;
    let autostart = home.join(".config/autostart");
    mkdir(&autostart)?;
    for (name, exec) in AUTOSTART {
        write(
            &autostart.join(format!("{name}.desktop")),
            &format!(
                "[Desktop Entry]\nType=Application\nName={name}\nExec={exec}\n\
                 X-GNOME-Autostart-enabled=true\n"
            ),
        )?;
    }
    run_logged(
        &mut chroot(
            root,
            &[
                "chown",
                "-R",
                &format!("{USER}:{USER}"),
                &format!("/home/{USER}"),
            ],
        ),
        log,
    )?;
    let confd = root.join("etc/lightdm/lightdm.conf.d");
    mkdir(&confd)?;
    write(&confd.join("50-bootprint-testbed.conf"), LIGHTDM_CONF)?;
    for (path, text) in [(LOGIN_PATH, LOGIN_SCRIPT), (TYPE_PATH, TYPE_SCRIPT)] {
        let p = root.join(path.trim_start_matches('/'));
        write(&p, text)?;
        set_mode(&p, 0o755)?;
    }
    run_logged(
        &mut chroot(
            root,
            &["update-rc.d", "bootprint-testbed-login", "defaults"],
        ),
        log,
    )
}

/// Everything above that goes into the image, for its cache key.
pub fn key_parts() -> Vec<&'static str> {
    let mut v = vec![USER, PASSWORD, LOGIN_SCRIPT, TYPE_SCRIPT, LIGHTDM_CONF];
    for (name, exec) in AUTOSTART {
        v.push(name);
        v.push(exec);
    }
    v
}

fn mkdir(d: &Path) -> Result<()> {
    fs::create_dir_all(d).map_err(|e| io_err("cannot create", d, e))
}

/// The session's programs, by the name the kernel gives the process (`comm`).
pub const PROGRAMS: &[&str] = &[
    "xfce4-session",
    "xfwm4",
    "xfce4-panel",
    "xfdesktop",
    "Thunar",
    "xfce4-terminal",
    "firefox-esr",
];

/// How long the guest waits for the whole session, from the serial login (seconds).
const SESSION_LIMIT_S: u64 = 900;
/// How long the guest then waits for preload's session stage to end (seconds).
const PRELOAD_LIMIT_S: u64 = 420;
/// The recording's limit on these boots (`bootprint.timeout_s`), and the test bed's wait for
/// the trace after the login, s.
pub const RECORD_LIMIT_S: u64 = 900;

/// Waits until every program runs as the test user (or the limit), then says which run and
/// when each started (seconds since the kernel's start, from /proc/PID/stat's start time).
pub fn guest_script() -> String {
    let programs = PROGRAMS.join(" ");
    format!(
        r#"end=$(( $(cut -d. -f1 /proc/uptime) + {SESSION_LIMIT_S} ))
while :; do
  missing=
  for p in {programs}; do pgrep -u {USER} -x "$p" >/dev/null || missing="$missing $p"; done
  [ -z "$missing" ] && break
  [ "$(cut -d. -f1 /proc/uptime)" -ge "$end" ] && break
  sleep 2
done
for p in {programs}; do
  if pgrep -u {USER} -x "$p" >/dev/null; then echo "running $p"; else echo "missing $p"; fi
done
echo "== started"
hz=$(getconf CLK_TCK)
for p in {programs}; do
  pid=$(pgrep -o -u {USER} -x "$p") || continue
  t=$(cut -d')' -f2 /proc/$pid/stat | cut -d' ' -f21)
  echo "$p $(( t / hz )).$(( t % hz * 100 / hz )) s"
done
echo "== login-log"
cat /var/log/bootprint-testbed-login.log 2>/dev/null
# preload's session stage learns for up to a minute after the session's start: wait for it
# (and so for its model) before the disk is kept or the test reads its state.
i=0
while pgrep -f 'bootprint preload run' >/dev/null && [ $i -lt {PRELOAD_LIMIT_S} ]; do sleep 2; i=$((i+2)); done
echo "== preload-log"
cat /run/bootprint-preload.log 2>/dev/null
echo "== preload-status"
bootprint preload status 2>&1
sync
echo "== end"
"#
    )
}

/// The lines after `== NAME` up to the next `== ` line.
pub fn section<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    out.lines()
        .skip_while(|l| *l != format!("== {name}"))
        .skip(1)
        .take_while(|l| !l.starts_with("== "))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_split_at_their_headers() {
        let out = "running x\n== started\nx 1.00 s\ny 2.00 s\n== login-log\ntyped\n== end\n";
        assert_eq!(section(out, "started"), ["x 1.00 s", "y 2.00 s"]);
        assert_eq!(section(out, "login-log"), ["typed"]);
        assert!(section(out, "absent").is_empty());
    }
}
