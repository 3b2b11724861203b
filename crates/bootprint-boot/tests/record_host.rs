//! Runs the real recorder on the machine running the tests for a few seconds while a program
//! named like a getty starts, and checks the trace it writes.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

#[test]
fn records_this_machine_and_marks_the_login() {
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path();
    let out = dir.join("traces");
    let delayacct = || fs::read_to_string("/proc/sys/kernel/task_delayacct").ok();
    let delayacct_before = delayacct();
    let recorder = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args(["record", "--seconds", "3", "--hz", "50", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A program whose comm is "getty" starts while recording: the text-login milestone.
    std::thread::sleep(Duration::from_millis(800));
    let getty = dir.join("getty");
    testkit::copy_program(Path::new("/bin/sleep"), &getty, 0o755);
    let mut child = Command::new(&getty).arg("1").spawn().unwrap();
    let getty_pid = child.id();
    child.wait().unwrap();
    let output = recorder.wait_with_output().unwrap();
    assert!(output.status.success());
    let trace = PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
    assert_eq!(
        fs::canonicalize(out.join("latest")).unwrap(),
        fs::canonicalize(&trace).unwrap()
    );

    for file in [
        "header",
        "proc_stat.log",
        "proc_diskstats.log",
        "proc_meminfo.log",
        "proc_ps.log",
        "cmdline2.log",
        "dmesg",
        "events.log",
    ] {
        assert!(trace.join(file).is_file(), "{file} missing");
    }
    let header = fs::read_to_string(trace.join("header")).unwrap();
    assert!(header.contains("bootprint.clk_tck = "), "{header}");

    let events =
        trace::events::parse(&fs::read_to_string(trace.join("events.log")).unwrap()).unwrap();
    assert!(
        events.windows(2).all(|w| w[0].t_ns <= w[1].t_ns),
        "events out of order"
    );
    let login = events
        .iter()
        .find(|e| e.kind == "milestone" && e.get("name") == Some("text_login"))
        .expect("text_login milestone");
    assert_eq!(login.get("pid"), Some(getty_pid.to_string().as_str()));
    let start = events.iter().find(|e| e.kind == "recorder_start").unwrap();
    assert!(login.t_ns >= start.t_ns && login.t_ns - start.t_ns < 2_000_000_000);
    let done = events.iter().find(|e| e.kind == "boot_done").unwrap();
    assert_eq!(done.get("reason"), Some("limit"));
    let stats = events.iter().find(|e| e.kind == "recorder_stats").unwrap();
    // Without `delayacct = true` the recorder leaves the kernel's delay accounting as it
    // found it (flipping its static key while processes fork wedged test-bed guests).
    if let Some(before) = &delayacct_before {
        assert_eq!(stats.get("delayacct"), Some(before.trim()));
        assert_eq!(delayacct().as_deref(), Some(before.as_str()));
    }
    let samples: f64 = stats.get("samples").unwrap().parse().unwrap();
    // 3 s at 50 Hz: about 150 samples; a loaded test machine may starve a few.
    assert!((100.0..=160.0).contains(&samples), "{samples} samples");

    // The getty appears in the process samples and its command line was logged.
    let ps = fs::read_to_string(trace.join("proc_ps.log")).unwrap();
    assert!(ps.contains(&format!("\n{getty_pid} (getty) ")));
    let cmdlines = fs::read(trace.join("cmdline2.log")).unwrap();
    let needle = format!("{getty_pid}\n:");
    assert!(String::from_utf8_lossy(&cmdlines).contains(&needle));
    // The process events connector (or fanotify) needs root: then the exec itself is an
    // event, stamped by the kernel between the getty's start (its fork, to the clock tick)
    // and a moment later.
    if unsafe_is_root() {
        assert_eq!(stats.get("exec_source"), Some("connector"), "{stats:?}");
        let exec = events
            .iter()
            .find(|e| e.kind == "exec" && e.get("pid") == Some(getty_pid.to_string().as_str()))
            .expect("no exec event for the getty");
        assert!(
            exec.get("path").is_some_and(|p| p.ends_with("/getty")),
            "{exec:?}"
        );
        assert!(
            exec.t_ns + 10_000_000 >= login.t_ns && exec.t_ns < login.t_ns + 500_000_000,
            "exec at {} ns, the getty started at {} ns",
            exec.t_ns,
            login.t_ns
        );
    }
}

fn unsafe_is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

#[test]
fn help_after_a_verb_prints_the_usage_and_exits_0() {
    for args in [
        &["rc", "--help"][..],
        &["rc", "2", "-h"],
        &["record", "--help"],
        &["late-start", "--help"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("bootprint-boot rc RUNLEVEL"),
            "{args:?}"
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .arg("bogus")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args(["record", "--hz", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--hz"));
}

#[test]
fn sigterm_writes_what_was_recorded() {
    let dir_tmp = tempfile::tempdir().unwrap();
    let dir = dir_tmp.path();
    let out = dir.join("traces");
    let recorder = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args(["record", "--seconds", "60", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let pid = recorder.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let output = recorder.wait_with_output().unwrap();
    assert!(output.status.success(), "{:?}", output.status);
    let events = fs::read_to_string(out.join("latest/events.log")).unwrap();
    assert!(events.contains(" boot_done reason=terminated "), "{events}");
}
