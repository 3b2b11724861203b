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
    // The detached child runs lateweb, finishes the log, then saves what it learned (after
    // rc_done, with fsyncs: wait for that too).
    let durations = root.join("var/lib/bootprint/rc-durations");
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let t = fs::read_to_string(&log).unwrap();
        if (t.contains(" rc_done ") && durations.is_file()) || Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        text.contains("rc_end script=lateweb action=start runlevel=2 late=1 exit=0 outcome=ok"),
        "{text}"
    );
    assert!(durations.is_file());
    let console = fs::read_to_string(root.join("console")).unwrap();
    assert!(console.contains("logger: logger up\n"), "{console}");
    assert!(console.contains("lateweb: lateweb up\n"), "{console}");
    assert!(console.contains("Starting ask: (fsck)\n"), "{console}");
    let _ = fs::remove_dir_all(&root);
}

/// A fake root with two scripts on the path (`bad` fails) and a fake /proc whose cmdline
/// holds `cmdline`.
fn fault_root(tag: &str, cmdline: &str) -> std::path::PathBuf {
    let root = std::env::temp_dir().join(format!("bootprint-boot-rc-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    for d in ["etc/init.d", "etc/rc2.d", "proc"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    fs::write(root.join("etc/insserv.conf"), "$syslog logger\n").unwrap();
    fs::write(root.join("proc/cmdline"), format!("{cmdline}\n")).unwrap();
    script(&root, "logger", "", "echo logger up");
    script(
        &root,
        "bad",
        "# X-Start-Before: logger\n",
        "echo bad ran; exit 1",
    );
    root
}

fn startpar(root: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
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
        .arg(root)
        .arg("--proc")
        .arg(root.join("proc"))
        .stderr(fs::File::create(root.join("console")).unwrap())
        .output()
        .unwrap()
}

/// Issue defect 6 through the binary, as /lib/init/rc runs it: a failure forced in each
/// phase still runs every script, exits 0 and answers like startpar.
#[test]
fn startpar_form_with_a_fault_in_any_phase_runs_every_script_and_answers() {
    for fault in ["config", "load", "plan", "run", "panic"] {
        let root = fault_root(fault, &format!("quiet bootprint.rc.fault={fault}"));
        let out = startpar(&root);
        let console = fs::read_to_string(root.join("console")).unwrap();
        assert!(out.status.success(), "fault={fault}: {out:?}\n{console}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("failed_service='bad'"),
            "fault={fault}: {stdout}\n{console}"
        );
        assert!(console.contains("logger up\n"), "fault={fault}: {console}");
        assert!(console.contains("bad ran\n"), "fault={fault}: {console}");
        assert!(
            console.contains(&format!("bootprint.rc.fault={fault}")),
            "fault={fault}: {console}"
        );
        let _ = fs::remove_dir_all(&root);
    }
}

/// What the startpar wrapper must take as "the runner did not do its job" (anything but
/// exit 0): `abort` dies by SIGABRT having run nothing; a usage error exits 2.
#[test]
fn the_runner_exits_non_zero_only_when_it_did_not_run_the_runlevel() {
    let root = fault_root("abort", "bootprint.rc.fault=abort");
    let out = startpar(&root);
    assert!(!out.status.success(), "{out:?}");
    assert!(!fs::read_to_string(root.join("console"))
        .unwrap()
        .contains("logger up"));
    let _ = fs::remove_dir_all(&root);
    let out = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args(["rc", "--startpar", "-M", "start"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
