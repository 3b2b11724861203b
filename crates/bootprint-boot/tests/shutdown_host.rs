//! Runs the real shutdown recorder on the machine running the tests: started as the runner
//! starts it, it samples until asked to save (sysvinit's way) or terminated (systemd's), and
//! writes `shutdown/` into the trace of the running boot.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .trim()
        .to_string()
}

/// A log directory holding a trace directory for this boot, as the boot's recorder leaves it.
fn log_dir_with_this_boot(tmp: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let log = tmp.join("log");
    fs::create_dir_all(log.join(boot_id())).unwrap();
    fs::set_permissions(log.join(boot_id()), fs::Permissions::from_mode(0o700)).unwrap();
    log
}

fn start(log: &Path, pid_file: &Path, how: &str) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args(["shutdown", "--how", how, "--log-dir"])
        .arg(log)
        .arg("--pid-file")
        .arg(pid_file)
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !pid_file.exists() {
        assert!(t.elapsed() < Duration::from_secs(10), "no pid file");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn events(log: &Path) -> Vec<trace::Event> {
    let dir = log.join(boot_id()).join("shutdown");
    trace::events::parse(&fs::read_to_string(dir.join("events.log")).unwrap()).unwrap()
}

#[test]
fn saved_on_request_with_what_ran_meanwhile() {
    if !testkit::is_root() {
        return testkit::skip("the recorder reads /dev/kmsg and every /proc/PID: needs root");
    }
    let tmp = tempfile::tempdir().unwrap();
    let log = log_dir_with_this_boot(tmp.path());
    let pid_file = tmp.path().join("shutdown.pid");
    let mut recorder = start(&log, &pid_file, "runlevel 6");
    // A stop that takes a while, as a script's would.
    let stop = tmp.path().join("bp-slowstop");
    testkit::copy_program(Path::new("/bin/sleep"), &stop, 0o755);
    Command::new(&stop).arg("0.6").status().unwrap();
    let saved = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args(["shutdown", "--save", "--wait", "30", "--pid-file"])
        .arg(&pid_file)
        .status()
        .unwrap();
    assert!(saved.success());
    // --save returns once the trace is written: the pid file is gone by then.
    assert!(!pid_file.exists());
    assert!(recorder.wait().unwrap().success());
    let ev = events(&log);
    let first = &ev[0];
    assert_eq!(first.kind, "recorder_start");
    let start = ev.iter().find(|e| e.kind == "shutdown_start").unwrap();
    assert_eq!(start.get("how"), Some("runlevel 6"));
    let end = ev.iter().find(|e| e.kind == "shutdown_end").unwrap();
    assert_eq!(end.get("reason"), Some("saved"));
    assert!(
        end.t_ns > start.t_ns + 600_000_000,
        "ended before the stop did"
    );
    let clock = ev.iter().find(|e| e.kind == "clock").unwrap();
    let real: u64 = clock.get("realtime_ns").unwrap().parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    assert!(
        real <= now && now - real < 60_000_000_000,
        "{real} vs {now}"
    );
    let dir = log.join(boot_id()).join("shutdown");
    let ps = fs::read_to_string(dir.join("proc_ps.log")).unwrap();
    assert!(
        ps.contains("(bp-slowstop)"),
        "the stop's process is in the samples"
    );
    assert!(!log.join(boot_id()).join(".shutdown.tmp").exists());
}

#[test]
fn terminated_as_systemd_shutdown_ends_it() {
    if !testkit::is_root() {
        return testkit::skip("the recorder reads /dev/kmsg and every /proc/PID: needs root");
    }
    let tmp = tempfile::tempdir().unwrap();
    let log = log_dir_with_this_boot(tmp.path());
    let pid_file = tmp.path().join("shutdown.pid");
    let mut recorder = start(&log, &pid_file, "systemd");
    std::thread::sleep(Duration::from_millis(300));
    let pid = recorder.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    assert!(recorder.wait().unwrap().success());
    let ev = events(&log);
    let end = ev.iter().find(|e| e.kind == "shutdown_end").unwrap();
    assert_eq!(end.get("reason"), Some("terminated"));
    assert!(!pid_file.exists());
}

#[test]
fn nothing_when_this_boot_was_not_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("log");
    fs::create_dir_all(&log).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args(["shutdown", "--how", "systemd", "--log-dir"])
        .arg(&log)
        .arg("--pid-file")
        .arg(tmp.path().join("pid"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(fs::read_dir(&log).unwrap().count(), 0);
    // --save with no recorder running says so and does not fail the shutdown.
    let out = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args(["shutdown", "--save", "--wait", "0", "--pid-file"])
        .arg(tmp.path().join("pid"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no shutdown recorder runs"));
}
