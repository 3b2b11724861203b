//! `bootprint-boot rc` as /lib/init/rc runs it (through the startpar form): startpar's
//! answer on stdout, the process returns once the path to the login is done, and a detached
//! child starts the late services afterwards. Real scripts on a temporary root.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn script(root: &Path, name: &str, extra: &str, body: &str) {
    let text = format!(
        "#!/bin/sh\n### BEGIN INIT INFO\n# Provides: {name}\n{extra}### END INIT INFO\n[ \"$1\" = start ] || exit 0\n{body}\n"
    );
    let p = root.join("etc/init.d").join(name);
    fs::write(&p, text).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    symlink(
        format!("../init.d/{name}"),
        root.join(format!("etc/rc2.d/S01{name}")),
    )
    .unwrap();
}

#[test]
fn startpar_form_returns_at_the_login_path_and_late_services_follow() {
    let root = std::env::temp_dir().join(format!("bootprint-boot-rc-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    for d in ["etc/init.d", "etc/rc2.d", "etc/bootprint"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    fs::write(root.join("etc/insserv.conf"), "$syslog logger\n").unwrap();
    fs::write(
        root.join("etc/bootprint/rc.conf"),
        "late-max-wait = 0.2\nidle-window = 0.1\n",
    )
    .unwrap();
    script(&root, "logger", "", "echo logger up");
    script(&root, "bad", "# X-Start-Before: logger\n", "exit 1");
    // An interactive script has the console: its output must not land in the answer that
    // /lib/init/rc evaluates.
    script(
        &root,
        "ask",
        "# X-Interactive: true\n# X-Start-Before: logger\n",
        "echo \"Starting ask: (fsck)\"",
    );
    script(&root, "lateweb", "", "sleep 3\necho lateweb up");
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args([
            "rc",
            "--startpar",
            "-p",
            "4",
            "-t",
            "20",
            "-T",
            "3",
            "-M",
            "start",
        ])
        .args(["-P", "N", "-R", "2", "--root"])
        .arg(&root)
        // The console: a file, as `$(...)` in /lib/init/rc only waits for stdout.
        .stderr(fs::File::create(root.join("console")).unwrap())
        .output()
        .unwrap();
    let took = t0.elapsed();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("failed_service='bad'"), "{stdout}");
    assert!(!stdout.contains("Starting"), "{stdout}");
    assert!(
        took < Duration::from_millis(3000),
        "returned after {took:?}: waited for the late service"
    );
    let log = root.join("run/bootprint/rc.log");
    let at_return = fs::read_to_string(&log).unwrap();
    assert!(at_return.contains(" rc_reached "), "{at_return}");
    assert!(!at_return.contains(" rc_done "), "{at_return}");
    // The detached child runs lateweb and finishes the log.
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let t = fs::read_to_string(&log).unwrap();
        if t.contains(" rc_done ") || Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        text.contains("rc_end script=lateweb action=start runlevel=2 late=1 exit=0 outcome=ok"),
        "{text}"
    );
    assert!(root.join("var/lib/bootprint/rc-durations").is_file());
    let console = fs::read_to_string(root.join("console")).unwrap();
    assert!(console.contains("logger: logger up\n"), "{console}");
    assert!(console.contains("lateweb: lateweb up\n"), "{console}");
    assert!(console.contains("Starting ask: (fsck)\n"), "{console}");
    let _ = fs::remove_dir_all(&root);
}
