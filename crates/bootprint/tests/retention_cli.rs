//! The real `bootprint list`, `keep` and `prune` on a log directory made of fixture traces
//! (tests/fixtures/mini-trace, copied), with what a log directory also holds: a user's
//! file, a symlink out of it, a bootchart2 log (no trace of ours), a crashed write.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::run;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// t1..t4 (seq 1..4), t2 without events.log, `latest` at t1, and the things that must stay.
fn log_dir(root: &Path) -> PathBuf {
    let d = root.join("log");
    for i in 1..=4 {
        let t = d.join(format!("t{i}"));
        copy_dir(&fixtures().join("mini-trace"), &t);
        fs::remove_file(t.join("make.py")).unwrap();
        fs::write(t.join("seq"), format!("{i}\n")).unwrap();
    }
    fs::remove_file(d.join("t2/events.log")).unwrap();
    std::os::unix::fs::symlink("t1", d.join("latest")).unwrap();
    copy_dir(&fixtures().join("bootchart2-example1"), &d.join("bc2"));
    fs::write(d.join("README.mine"), "keep me").unwrap();
    let outside = root.join("outside");
    copy_dir(&fixtures().join("mini-trace"), &outside);
    std::os::unix::fs::symlink(&outside, d.join("elsewhere")).unwrap();
    let crashed = d.join(".00000000-1111-4000-8000-000000000000.tmp");
    fs::create_dir(&crashed).unwrap();
    fs::write(crashed.join("proc_stat.log"), "half").unwrap();
    d
}

fn ids(json: &serde_json::Value) -> Vec<String> {
    json["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn list_keep_and_prune_on_a_fixture_log_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let d = log_dir(tmp.path());
    let ds = d.to_str().unwrap();
    let config = tmp.path().join("bootprint.toml");
    fs::write(&config, "[record]\nkeep_traces = 2\nkeep_mb = 0\n").unwrap();
    let cfg = config.to_str().unwrap();

    // list: newest first, figures from events.log, or from the model without it.
    let o = run(&["list", "--json", ds]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(ids(&j), ["t4", "t3", "t2", "t1"]);
    let t = &j["traces"];
    assert_eq!(
        (t[0]["text_login_s"].as_f64(), t[0]["boot_done_s"].as_f64()),
        (Some(12.0), Some(14.0))
    );
    assert_eq!(t[0]["figures_from"], "events");
    assert_eq!(t[0]["kernel_release"], "6.1.0-test");
    assert_eq!(t[2]["figures_from"], "model");
    assert_eq!(
        t[2]["text_login_s"].as_f64(),
        Some(12.0),
        "agetty's start, as the report"
    );
    assert_eq!(t[3]["latest"], true);
    let o = run(&["list", ds]);
    let text = out(&o);
    assert!(text.lines().nth(1).unwrap().starts_with("t4 "), "{text}");
    assert!(text.contains("4 traces,"), "{text}");
    assert!(text.lines().nth(4).unwrap().ends_with("latest"), "{text}");

    // keep: by unambiguous prefix or whole name; a wrong or ambiguous one fails, exit 1.
    let o = run(&["keep", "t3", "--dir", ds]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(d.join("t3/pinned").exists());
    let o = run(&["keep", "t", "--dir", ds]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("start of 4 traces"), "{}", err(&o));
    let o = run(&["keep", "zz", "--dir", ds]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("no trace named \"zz\""), "{}", err(&o));

    // prune --dry-run says and removes nothing.
    let o = run(&["prune", "--dry-run", "--dir", ds, "--config", cfg]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("would remove t2 (count"), "{}", out(&o));
    assert!(
        out(&o).contains("would remove .00000000-1111-4000-8000-000000000000.tmp (crashed-write")
    );
    assert!(d.join("t2").exists());

    // prune: t1 is latest, t3 pinned (not counted): of t1, t2, t4 the oldest unprotected goes.
    let o = run(&["prune", "--dir", ds, "--config", cfg]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let j: serde_json::Value =
        serde_json::from_slice(&run(&["list", "--json", ds]).stdout).unwrap();
    assert_eq!(ids(&j), ["t4", "t3", "t1"]);
    for stays in ["bc2", "README.mine", "elsewhere", "latest"] {
        assert!(
            fs::symlink_metadata(d.join(stays)).is_ok(),
            "{stays} removed"
        );
    }
    assert!(tmp.path().join("outside/header").exists());
    assert!(!d.join(".00000000-1111-4000-8000-000000000000.tmp").exists());

    // Unpinned, t3 counts again and goes (t1 stays: latest).
    let o = run(&["keep", "--unpin", "t3", "--dir", ds]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    run(&["prune", "--dir", ds, "--config", cfg]);
    let j: serde_json::Value =
        serde_json::from_slice(&run(&["list", "--json", ds]).stdout).unwrap();
    assert_eq!(ids(&j), ["t4", "t1"]);
}

#[test]
fn a_bad_limit_names_file_and_line_and_removes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = log_dir(tmp.path());
    let config = tmp.path().join("bad.toml");
    fs::write(&config, "[record]\nkeep_traces = -1\n").unwrap();
    let o = run(&[
        "prune",
        "--dir",
        d.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert!(
        e.contains("bad.toml:2: expected")
            && e.contains("whole number")
            && e.contains("nothing removed"),
        "{e}"
    );
    assert!(d.join("t2").exists() && d.join(".00000000-1111-4000-8000-000000000000.tmp").exists());
    // An empty directory lists as such; a missing one fails naming it.
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let o = run(&["list", empty.to_str().unwrap()]);
    assert_eq!(
        (o.status.code(), out(&o).trim()),
        (
            Some(0),
            format!("no traces in {}", empty.display()).as_str()
        )
    );
    let o = run(&["list", "/nonexistent/bootprint-log"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("/nonexistent/bootprint-log"),
        "{}",
        err(&o)
    );
}

/// A boot whose boot before has its shutdown beside it (testkit's reboot-cycle log
/// directory: `b` after `a`'s shutdown) shows the reboot that led to it, request to login,
/// as the report joins it (37 s); the boot before has none.
#[test]
fn list_shows_the_reboot_that_led_to_a_boot() {
    let (_tmp, boot) = testkit::cycle::log_dir(true);
    let log = boot.parent().unwrap().to_str().unwrap().to_string();
    let v: serde_json::Value =
        serde_json::from_slice(&run(&["list", "--json", &log]).stdout).unwrap();
    let traces = v["traces"].as_array().unwrap();
    let b = traces.iter().find(|t| t["id"] == "b").expect("b listed");
    assert!((b["reboot_s"].as_f64().unwrap() - 37.0).abs() < 1e-6, "{b}");
    let o = run(&["list", &log]);
    assert!(out(&o).contains("REBOOT"), "{}", out(&o));
}
