//! The hand-off as PID 1, for real: bootprint-boot runs as PID 1 of a new PID namespace
//! (`unshare`), with a kernel command line of the test's choosing bind-mounted over
//! /proc/cmdline, and must exec the "real init" (a script here) with its arguments, while the
//! recorder it forked writes a trace. Needs root; skipped otherwise.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// Runs bootprint-boot as PID 1 of a fresh PID and mount namespace with `cmdline` as the
/// kernel command line; returns the unshare exit status.
fn boot_in_namespace(dir: &Path, cmdline: &str, args: &[&str]) -> std::process::ExitStatus {
    fs::write(dir.join("cmdline"), format!("{cmdline}\n")).unwrap();
    let script = format!(
        "mount -t proc proc /proc && mount --bind {}/cmdline /proc/cmdline && exec {} {}",
        dir.display(),
        env!("CARGO_BIN_EXE_bootprint-boot"),
        args.join(" ")
    );
    Command::new("unshare")
        .args([
            "--pid",
            "--fork",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
        ])
        .status()
        .expect("unshare")
}

/// A stand-in for the real init: records its pid and arguments, starts a "getty", waits for
/// the recorder's trace (at most 30 s), then exits (which ends the namespace).
fn fake_init(dir: &Path, log_dir: &Path) -> PathBuf {
    let init = dir.join("fake-init");
    testkit::copy_program(Path::new("/bin/sleep"), &dir.join("getty"), 0o755);
    fs::write(
        &init,
        format!(
            "#!/bin/sh\necho \"pid=$$ args=$*\" > {dir}/marker\n{dir}/getty 1\n\
             i=0; while [ ! -e {log}/latest/events.log ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n",
            dir = dir.display(),
            log = log_dir.display()
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("755")
        .arg(&init)
        .status()
        .unwrap();
    init
}

#[test]
fn pid1_execs_the_real_init_and_the_recorder_writes_a_trace() {
    if !is_root() {
        testkit::skip("needs root for unshare");
        return;
    }
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path();
    let log_dir = dir.join("log");
    let init = fake_init(dir, &log_dir);
    // The uptime of this machine is past any boot's time limit: the recorder stops after its
    // first samples, which is all this test needs.
    let cmdline = format!(
        "quiet bootprint.init={} bootprint.log_dir={} bootprint.timeout=1",
        init.display(),
        log_dir.display()
    );
    let status = boot_in_namespace(dir, &cmdline, &["single", "-b"]);
    assert!(status.success(), "{status}");
    let marker = fs::read_to_string(dir.join("marker")).expect("the real init ran");
    assert_eq!(
        marker.trim(),
        "pid=1 args=single -b",
        "init must be PID 1 with our arguments"
    );

    let trace = log_dir.join("latest");
    let events =
        trace::events::parse(&fs::read_to_string(trace.join("events.log")).unwrap()).unwrap();
    let exec = events
        .iter()
        .find(|e| e.kind == "init_exec")
        .expect("init_exec event");
    assert_eq!(exec.get("path"), Some(init.to_str().unwrap()));
    let start = events.iter().find(|e| e.kind == "recorder_start").unwrap();
    assert_ne!(
        start.get("pid"),
        Some("1"),
        "the recorder is a child, not PID 1"
    );
    assert!(events
        .iter()
        .any(|e| e.kind == "boot_done" && e.get("reason") == Some("timeout")));
    assert!(
        !events.iter().any(|e| e.kind == "warning"),
        "no warning expected: {events:?}"
    );
}

#[test]
fn a_bad_setting_is_reported_and_the_boot_goes_on() {
    if !is_root() {
        testkit::skip("needs root for unshare");
        return;
    }
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path();
    let log_dir = dir.join("log");
    let init = fake_init(dir, &log_dir);
    // hz=0 is out of range: that parameter alone is dropped, the rest apply.
    let cmdline = format!(
        "bootprint.hz=0 bootprint.init={} bootprint.log_dir={} bootprint.timeout=1",
        init.display(),
        log_dir.display()
    );
    let status = boot_in_namespace(dir, &cmdline, &[]);
    assert!(status.success(), "{status}");
    let marker = fs::read_to_string(dir.join("marker")).expect("the real init ran");
    assert!(marker.starts_with("pid=1 "), "{marker}");
    let events =
        trace::events::parse(&fs::read_to_string(log_dir.join("latest/events.log")).unwrap())
            .unwrap();
    let warning = events
        .iter()
        .find(|e| e.kind == "warning")
        .expect("the bad parameter is reported in the trace");
    assert!(
        warning.get("what").unwrap().contains("bootprint.hz=0"),
        "{warning:?}"
    );
    let start = events.iter().find(|e| e.kind == "recorder_start").unwrap();
    let default_hz = record::Config::default().hz.to_string();
    assert_eq!(
        start.get("hz"),
        Some(default_hz.as_str()),
        "the default rate is used"
    );
}
