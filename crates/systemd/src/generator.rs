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
