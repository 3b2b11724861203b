//! `reboot --init systemd-timeouts`: the `timeouts` lever on systemd, for real
//! (docs/systemd.md, "Learned stop timeouts"). A planted service stops in about a second,
//! unless /etc/bp-hang exists: then its stop hangs until systemd's `TimeoutStopSec=30s`
//! ends it. Four boots with `bootprint.timeouts=1`, in two QEMU runs (the second from the
//! disk the first left):
//!
//! 1. A plants the service, with the flag, and reboots: the stop runs out its 30 s;
//!    B (the boot after) removes the flag and powers off cleanly: the stop ends in a second.
//!    Both shutdowns are recorded, and the boot after each reads systemd's journal of it.
//! 2. C, at boot done, learns from both: the service hung once and stopped once by itself,
//!    so its timeout becomes 10 s (3 times its stop, at least 10 s); the state is written
//!    and the generator's drop-in holds at once (`systemctl daemon-reload`). C sets the flag
//!    and reboots: the hang is ended after 10 s, not 30. D, the boot after, reads it.

use crate::checks::checklist::Checks;
use crate::vm::image::Image;
use crate::vm::qemu::{self, BootOpts, BootResult, Profile, RebootOpts};
use crate::vm::serial;
use crate::vm::util::{section, Error, Paths, Result};

/// The kernel arguments of every boot: systemd, recorded, the lever on.
const APPEND: &str = "bootprint.init=/lib/systemd/systemd bootprint.timeouts=1";

/// The planted service's own stop timeout, s.
const OWN_TIMEOUT_S: f64 = 30.0;
/// What the lever may learn for it: 3 times a stop of a second or two is at most the 10 s
/// floor; an emulated stop that took longer may give more, never up to the 30 s it ran out.
const LEARNED_S: std::ops::RangeInclusive<u64> = 10..=20;

/// The console lines the hanging stop prints as it begins to hang and as systemd's SIGTERM
/// ends it (host-timed; each after a newline of its own, since the host times a line by its
/// first byte and a getty's escapes may have begun one).
const HANGS: &str = "bp-hangstop: stop hangs";
const ENDED: &str = "bp-hangstop: stop ended";

/// The service, enabled (started at every boot, stopped at every shutdown), its stop a
/// script, and the flag.
const PLANT: &str = r#"cat > /usr/local/sbin/bp-hangstop-stop <<'EOF'
#!/bin/sh
if [ -e /etc/bp-hang ]; then
	printf '\nbp-hangstop: stop hangs\n' > /dev/console
	trap 'printf "\nbp-hangstop: stop ended\n" > /dev/console; exit 0' TERM
	/bin/sleep 600 &
	wait
fi
/bin/sleep 1
EOF
chmod 755 /usr/local/sbin/bp-hangstop-stop
cat > /etc/systemd/system/bp-hangstop.service <<'EOF'
[Unit]
Description=bootprint test bed: a service whose stop hangs while /etc/bp-hang exists

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/usr/local/sbin/bp-hangstop-stop
TimeoutStopSec=30s

[Install]
WantedBy=multi-user.target
EOF
systemctl daemon-reload && systemctl enable --now bp-hangstop
touch /etc/bp-hang
echo "== planted"
systemctl is-active bp-hangstop
"#;

/// What the learned state and the unit look like now.
const SHOW: &str = r#"echo "== state"
cat /var/lib/bootprint/stop-timeouts 2>&1
echo "== unit timeout"
systemctl show -p TimeoutStopUSec --value bp-hangstop
echo "== drop-in"
cat /run/systemd/generator/bp-hangstop.service.d/50-bootprint-stop-timeout.conf 2>&1
"#;

fn opts(disk_from: Option<std::path::PathBuf>, reboot: RebootOpts) -> BootOpts {
    let mut o = BootOpts::new(Profile::Fast);
    o.record = true;
    o.append = APPEND.to_string();
    o.keep_disk = true;
    o.disk_from = disk_from;
    o.reboot = Some(reboot);
    o
}

/// The host's seconds from the hanging stop's first console line to its second (the
/// SIGTERM that ended it).
fn hang_s(r: &BootResult) -> Option<f64> {
    let lines = serial::read_log(&r.serial_log);
    let at = |text: &str| {
        lines
            .iter()
            .find(|(_, l)| l.trim_end() == text)
            .map(|(t, _)| *t)
    };
    Some(at(ENDED)? - at(HANGS)?)
}

/// Both runs; their checks into `c`.
pub fn run(paths: &Paths, img: &Image, c: &mut Checks) -> Result<()> {
    let name = "systemd-timeouts";
    // Run 1: the hang runs out the service's own timeout; then a stop that ends by itself.
    let mut first = opts(
        None,
        RebootOpts {
            command: "reboot".into(),
            before: Some(format!("#!/bin/sh\nset -e\n{PLANT}")),
            after: Some(format!("#!/bin/sh\nrm -f /etc/bp-hang\n{SHOW}")),
            copy_log_dir: false,
        },
    );
    first.clean_poweroff = true;
    let r1 = qemu::boot(paths, img, &first)?;
    let planted = section(
        r1.before_reboot_output.as_deref().unwrap_or_default(),
        "planted",
    )
    .join(" ");
    let own = hang_s(&r1);
    c.check(
        planted == "active" && own.is_some_and(|s| s >= OWN_TIMEOUT_S - 1.0),
        &format!(
            "{name}: A's shutdown waited out the service's own {OWN_TIMEOUT_S} s ({} s from `{HANGS}` to `{ENDED}`; planted: {planted})",
            own.map_or("-".into(), |s| format!("{s:.1}"))
        ),
    );
    let after1 = r1.after_reboot_output.clone().unwrap_or_default();
    c.check(
        section(&after1, "unit timeout") == ["30s"],
        &format!(
            "{name}: B learned nothing from a hang alone (TimeoutStopUSec {:?}; state {:?})",
            section(&after1, "unit timeout"),
            section(&after1, "state")
        ),
    );
    c.check(
        r1.qemu_exit == "clean",
        &format!(
            "{name}: B powered off by its own shutdown (qemu_exit {})",
            r1.qemu_exit
        ),
    );
    let disk = r1
        .kept_disk()
        .ok_or_else(|| Error::fail("the first run kept no disk"))?;
    // Run 2: learned from both shutdowns; the next hang is ended at the learned timeout.
    let second = opts(
        Some(disk.clone()),
        RebootOpts {
            command: "reboot".into(),
            before: Some(format!("#!/bin/sh\n{SHOW}touch /etc/bp-hang\n")),
            after: Some(
                "#!/bin/sh\necho \"== journal\"\njournalctl -b -1 -u bp-hangstop -o cat --no-pager | tail -n 6\n"
                    .into(),
            ),
            copy_log_dir: false,
        },
    );
    let r2 = qemu::boot(paths, img, &second);
    let _ = std::fs::remove_file(&disk);
    let r2 = r2?;
    let before2 = r2.before_reboot_output.clone().unwrap_or_default();
    let state = section(&before2, "state");
    let learned_s = state
        .iter()
        .find_map(|l| l.strip_prefix("bp-hangstop.service ")?.parse::<u64>().ok());
    c.check(
        learned_s.is_some_and(|s| LEARNED_S.contains(&s)),
        &format!(
            "{name}: C learned {:?} s (10 to 20 expected) for the service from A's hang and B's stop: {}",
            learned_s,
            state.join(" | ")
        ),
    );
    let v = learned_s.unwrap_or(0);
    c.check(
        section(&before2, "unit timeout") == [format!("{v}s").as_str()]
            && section(&before2, "drop-in")
                .contains(&format!("TimeoutStopSec={v}s").as_str()),
        &format!(
            "{name}: the generator's drop-in holds in C already (TimeoutStopUSec {:?}, drop-in {:?})",
            section(&before2, "unit timeout"),
            section(&before2, "drop-in")
        ),
    );
    let learned = hang_s(&r2);
    let v = v as f64;
    c.check(
        learned.is_some_and(|s| s >= v - 1.0 && s < v + 3.0 && s < OWN_TIMEOUT_S - 5.0),
        &format!(
            "{name}: C's shutdown ended the same hang after the learned {v} s, not {OWN_TIMEOUT_S} ({} s from `{HANGS}` to `{ENDED}`)",
            learned.map_or("-".into(), |s| format!("{s:.1}"))
        ),
    );
    let journal = section(
        r2.after_reboot_output.as_deref().unwrap_or_default(),
        "journal",
    );
    c.check(
        journal
            .iter()
            .any(|l| l.contains("timed out") || l.contains("timeout")),
        &format!(
            "{name}: systemd's journal says the stop timed out: {}",
            journal.join(" | ")
        ),
    );
    if let Some(d) = r2.kept_disk() {
        let _ = std::fs::remove_file(d);
    }
    Ok(())
}
