//! The generator (systemd.generator(7)): run by systemd before its first transaction, it
//! defers the learned late units. Each gets a drop-in with
//! `ConditionPathExists=/run/bootprint/late-go`, so its start job at boot ends at once
//! ("condition failed") and holds nothing up; `bootprint-late.target` wants them all, and
//! `bootprint-late.service` (wanted by multi-user.target, started once the gettys and the
//! display manager are) waits until the machine is idle, creates the flag and starts the
//! target. No job stays queued, so a getty's `Type=idle` wait and multi-user.target are
//! not delayed.
//!
//! Nothing here can break a boot: with no state, a bad state or any error the generator
//! writes nothing, and the boot is as if bootprint were not installed.

use std::fs;
use std::io;
use std::path::Path;

use crate::late::{check_state, fingerprint, from_state, Deferral, Pins, UNIT_SOURCES};

/// The flag the late units' condition waits for.
pub const GO_FLAG: &str = "/run/bootprint/late-go";
/// The waiter's span log (`late.log` in a trace).
pub const LATE_LOG: &str = "/run/bootprint/late.log";
/// The learned late units.
pub const STATE_FILE: &str = "/var/lib/bootprint/systemd-late";
/// The target that starts them.
pub const TARGET: &str = "bootprint-late.target";
/// The waiter.
pub const SERVICE: &str = "bootprint-late.service";
/// The drop-in's file name in each late unit's `.d` directory.
pub const DROP_IN: &str = "50-bootprint-late.conf";

/// The largest state file read.
const MAX_STATE_BYTES: u64 = 1 << 20;

/// What the generator defers this boot, for the system under `root` with the pins of its
/// configuration now: `Ok(None)` when nothing was learned yet (no state file, the first
/// boot with the switch on); `Ok(Some(d))`: defer `d.late` (`d.refused` are listed but kept
/// early, [`check_state`]); `Err(why)`: defer nothing, for this reason. The state file is
/// trusted only when it is a regular file owned by root (or this user), which no one else
/// can write, and only as far as [`check_state`] finds it still true.
pub fn plan(root: &Path, pins: &Pins) -> Result<Option<Deferral>, String> {
    let Some(text) = read_trusted_state(root, STATE_FILE)? else {
        return Ok(None);
    };
    let state = from_state(&text)
        .map_err(|e| format!("{STATE_FILE}:{}: expected {}", e.line, e.expected))?;
    check_state(&state, fingerprint(root), pins, |unit| enabled(root, unit)).map(Some)
}

/// A state file of the generator's (`file`, absolute, read under `root`) as text:
/// `Ok(None)` when there is none; Err why it is not used. It is trusted only when it is a
/// regular file owned by root (or this user) that no one else can write, of at most
/// [`MAX_STATE_BYTES`], UTF-8.
pub fn read_trusted_state(root: &Path, file: &str) -> Result<Option<String>, String> {
    let path = root.join(file.trim_start_matches('/'));
    let f = match sys::open_regular(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{file}: {e}")),
    };
    let st = sys::fstat(&f).map_err(|e| format!("{file}: {e}"))?;
    if (st.uid != 0 && st.uid != sys::euid()) || st.mode & 0o022 != 0 {
        return Err(format!(
            "{file}: owned by uid {} with mode {:o}: only a file of root's that no one else can write is trusted",
            st.uid,
            st.mode & 0o7777
        ));
    }
    sys::read_capped(f, MAX_STATE_BYTES)
        .and_then(|b| {
            String::from_utf8(b)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
        })
        .map(Some)
        .map_err(|e| format!("{file}: {e}"))
}

/// Whether `unit` is enabled under `root`: linked in a `.wants` or `.requires` directory of
/// the unit directories (`sockets.target.wants/avahi-daemon.socket`). A socket installed but
/// not enabled (Debian's ssh.socket) starts nothing.
fn enabled(root: &Path, unit: &str) -> bool {
    UNIT_SOURCES.iter().any(|d| {
        fs::read_dir(root.join(d.trim_start_matches('/')))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n.ends_with(".wants") || n.ends_with(".requires")
            })
            .any(|e| fs::symlink_metadata(e.path().join(unit)).is_ok())
    })
}

/// The files to write into the generator's normal directory: (relative path, contents).
/// A symlink is given as contents starting with `->`.
pub fn files(late: &[String], boot_bin: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for u in late {
        out.push((
            format!("{u}.d/{DROP_IN}"),
            format!(
                "# bootprint: started after the login, once the machine is idle, by {SERVICE}\n\
                 # (learned from the last boot; see /var/lib/bootprint/systemd-late)\n\
                 [Unit]\nConditionPathExists={GO_FLAG}\n"
            ),
        ));
    }
    let mut target = format!(
        "# bootprint: the late units, started by {SERVICE}\n[Unit]\n\
         Description=bootprint: services started after the login, once idle\n"
    );
    for chunk in late.chunks(8) {
        target.push_str(&format!("Wants={}\n", chunk.join(" ")));
    }
    out.push((TARGET.to_string(), target));
    out.push((
        SERVICE.to_string(),
        format!(
            "# bootprint: starts {TARGET} once the machine is idle after the login\n[Unit]\n\
             Description=bootprint: start the late services once idle\n\
             After=getty.target display-manager.service systemd-user-sessions.service\n\
             [Service]\nType=simple\nExecStart={boot_bin} late-start\n\
             Restart=on-failure\nRestartSec=1\n"
        ),
    ));
    out.push((
        format!("multi-user.target.wants/{SERVICE}"),
        format!("->{SERVICE}"),
    ));
    out
}

/// The shutdown recorder's unit (record's `shutdown`, docs/recorder.md "Shutdown").
pub const SHUTDOWN_SERVICE: &str = "bootprint-shutdown.service";

/// The targets a shutdown starts: each wants [`SHUTDOWN_SERVICE`].
pub const SHUTDOWN_TARGETS: [&str; 4] = [
    "reboot.target",
    "poweroff.target",
    "halt.target",
    "kexec.target",
];

/// The files that record a shutdown on a recorded boot: the unit, started with the
/// shutdown's first jobs (no default dependencies, so nothing orders it after a stop) and
/// ended by systemd-shutdown's SIGTERM to what remains once every unit stopped, while the
/// root is still writable; and its place in each of [`SHUTDOWN_TARGETS`].
pub fn shutdown_files(boot_bin: &str) -> Vec<(String, String)> {
    let mut out = vec![(
        SHUTDOWN_SERVICE.to_string(),
        format!(
            "# bootprint: records the shutdown into this boot's trace
[Unit]
\
             Description=bootprint: record the shutdown
DefaultDependencies=no
\
             Before=shutdown.target
\
             [Service]
Type=simple
ExecStart={boot_bin} shutdown --how systemd
"
        ),
    )];
    for t in SHUTDOWN_TARGETS {
        out.push((
            format!("{t}.wants/{SHUTDOWN_SERVICE}"),
            format!("->{SHUTDOWN_SERVICE}"),
        ));
    }
    out
}

/// The `kexec` lever's unit (docs/reboot.md, "An ordinary reboot by kexec").
pub const KEXEC_SERVICE: &str = "bootprint-kexec.service";

/// The files of the `kexec` lever: a unit active from boot on whose stop, at a shutdown,
/// comes before /boot and the EFI system partition (GRUB's and systemd-boot's files) are
/// unmounted (it was started after them) and, when systemd is
/// rebooting, loads the loader's next entry and marks the reboot (`bootprint-boot
/// kexec-prepare`); systemd-shutdown's hook (`bootprint-kexec` in
/// /usr/lib/systemd/system-shutdown, the boot binary under that name) then reboots into
/// it. Its stop never fails a shutdown: the binary exits 0 whatever happens.
pub fn kexec_files(boot_bin: &str) -> Vec<(String, String)> {
    vec![
        (
            KEXEC_SERVICE.to_string(),
            format!(
                "# bootprint: an ordinary reboot goes by kexec into the boot loader's next entry\n\
                 [Unit]\nDescription=bootprint: reboot by kexec where safe\n\
                 RequiresMountsFor=/boot /boot/efi /efi\n\
                 [Service]\nType=oneshot\nRemainAfterExit=yes\n\
                 ExecStop={boot_bin} kexec-prepare\nTimeoutStopSec=60\n"
            ),
        ),
        (
            format!("multi-user.target.wants/{KEXEC_SERVICE}"),
            format!("->{KEXEC_SERVICE}"),
        ),
    ]
}

/// Writes [`files`] under `dir` (the generator's normal output directory). A symlink points
/// at the file of that name in `dir`.
pub fn write(dir: &Path, files: &[(String, String)]) -> io::Result<()> {
    for (rel, contents) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        match contents.strip_prefix("->") {
            Some(target) => {
                let _ = fs::remove_file(&path);
                std::os::unix::fs::symlink(dir.join(target), &path)?;
            }
            None => fs::write(&path, contents)?,
        }
    }
    Ok(())
}

/// Undoes a partial [`write`]: removes what it wrote (best effort).
pub fn remove(dir: &Path, files: &[(String, String)]) {
    for (rel, _) in files {
        let path = dir.join(rel);
        let _ = fs::remove_file(&path);
        if let Some(parent) = path.parent() {
            if parent != dir {
                let _ = fs::remove_dir(parent);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::late::{to_state, Choice};
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_shutdown_unit_is_wanted_by_every_shutdown_target() {
        let t = tempfile::tempdir().unwrap();
        let files = shutdown_files("/usr/lib/bootprint/bootprint-boot");
        write(t.path(), &files).unwrap();
        let unit = fs::read_to_string(t.path().join(SHUTDOWN_SERVICE)).unwrap();
        assert!(unit.contains("DefaultDependencies=no\n"), "{unit}");
        assert!(
            unit.contains("ExecStart=/usr/lib/bootprint/bootprint-boot shutdown --how systemd\n"),
            "{unit}"
        );
        for target in SHUTDOWN_TARGETS {
            let link = t
                .path()
                .join(format!("{target}.wants"))
                .join(SHUTDOWN_SERVICE);
            assert_eq!(
                fs::read_link(&link).unwrap(),
                t.path().join(SHUTDOWN_SERVICE)
            );
        }
    }

    /// A root with a few unit files, and a state learned from it.
    fn root_with_state(pins: &Pins) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        let lib = r.join("lib/systemd/system");
        fs::create_dir_all(lib.join("multi-user.target.wants")).unwrap();
        fs::write(
            lib.join("cron.service"),
            "[Service]\nExecStart=/usr/sbin/cron\n",
        )
        .unwrap();
        fs::write(lib.join("avahi-daemon.service"), "[Service]\n").unwrap();
        fs::write(lib.join("avahi-daemon.socket"), "[Socket]\n").unwrap();
        fs::create_dir_all(lib.join("sockets.target.wants")).unwrap();
        std::os::unix::fs::symlink(
            "../avahi-daemon.socket",
            lib.join("sockets.target.wants/avahi-daemon.socket"),
        )
        .unwrap();
        // Installed, not enabled (as Debian's ssh.socket): it starts nothing.
        fs::write(lib.join("cron.socket"), "[Socket]\n").unwrap();
        fs::create_dir_all(r.join("etc/systemd/system")).unwrap();
        fs::write(r.join("etc/fstab"), "/dev/vda / ext4 rw 0 1\n").unwrap();
        let choice = Choice {
            late: vec!["cron.service".into(), "avahi-daemon.service".into()],
            ..Choice::default()
        };
        let state = r.join(STATE_FILE.trim_start_matches('/'));
        fs::create_dir_all(state.parent().unwrap()).unwrap();
        fs::write(&state, to_state(&choice, fingerprint(r), pins)).unwrap();
        fs::set_permissions(&state, fs::Permissions::from_mode(0o644)).unwrap();
        t
    }

    #[test]
    fn the_plan_defers_what_still_holds_and_refuses_the_rest() {
        let t = root_with_state(&Pins::default());
        let d = plan(t.path(), &Pins::default()).unwrap().unwrap();
        assert_eq!(d.late, ["cron.service"]);
        assert_eq!(d.refused[0].0, "avahi-daemon.service");
        // Nothing learned yet: nothing to do, no error.
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(plan(empty.path(), &Pins::default()), Ok(None));
    }

    /// The unit files' fingerprint: the same tree gives the same value; a unit installed, a
    /// drop-in added, a unit enabled (a link in a .wants directory) or /etc/fstab edited
    /// changes it, and then nothing is deferred.
    #[test]
    fn any_change_to_the_unit_files_stops_the_deferral() {
        type Change = (&'static str, fn(&Path));
        let changes: [Change; 4] = [
            ("a unit installed", |r| {
                fs::write(
                    r.join("etc/systemd/system/needs-cron.service"),
                    "[Unit]\nRequires=cron.service\n",
                )
                .unwrap()
            }),
            ("a drop-in", |r| {
                let d = r.join("etc/systemd/system/cron.service.d");
                fs::create_dir_all(&d).unwrap();
                fs::write(d.join("x.conf"), "[Unit]\n").unwrap();
            }),
            ("a unit enabled", |r| {
                std::os::unix::fs::symlink(
                    "../cron.service",
                    r.join("lib/systemd/system/multi-user.target.wants/cron.service"),
                )
                .unwrap()
            }),
            ("fstab", |r| {
                fs::write(
                    r.join("etc/fstab"),
                    "/dev/vda / ext4 rw 0 1\nnfs:/x /x nfs\n",
                )
                .unwrap()
            }),
        ];
        for (what, change) in changes {
            let t = root_with_state(&Pins::default());
            let before = fingerprint(t.path());
            assert_eq!(fingerprint(t.path()), before, "stable");
            change(t.path());
            assert_ne!(fingerprint(t.path()), before, "{what}");
            let e = plan(t.path(), &Pins::default()).unwrap_err();
            assert!(e.contains("unit files changed"), "{what}: {e}");
        }
    }

    #[test]
    fn a_state_others_can_write_is_not_trusted() {
        let t = root_with_state(&Pins::default());
        let state = t.path().join(STATE_FILE.trim_start_matches('/'));
        fs::set_permissions(&state, fs::Permissions::from_mode(0o666)).unwrap();
        let e = plan(t.path(), &Pins::default()).unwrap_err();
        assert!(e.contains("no one else can write"), "{e}");
        fs::remove_file(&state).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &state).unwrap();
        assert!(
            plan(t.path(), &Pins::default()).is_err(),
            "a link is refused"
        );
    }
}
