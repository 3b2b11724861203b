//! The real `bootprint` binary on the fixtures: exit codes, text, JSON and SVG output.

use std::path::PathBuf;

mod common;
use common::{run, text};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    assert_eq!(run(&[]).status.code(), Some(2));
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(run(&["report"]).status.code(), Some(2));
    // The error names the option and shows the verb's usage (clap's wording).
    let o = run(&["report", "--bogus", "x"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("unexpected argument '--bogus'") && err.contains("Usage: bootprint report"),
        "{err}"
    );
    assert_eq!(run(&["report", "a", "b"]).status.code(), Some(2));
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).contains("report [TRACE] [--systemd]"));
    let o = run(&["report", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).contains("--svg <FILE>"));
}

#[test]
fn a_bad_flag_prints_that_verbs_usage() {
    for verb in [
        &["report"][..],
        &["modules", "load"],
        &["rc", "services"],
        &["services"],
        &["readahead", "show"],
        &["initramfs", "build"],
    ] {
        let mut args = verb.to_vec();
        args.push("--badflag");
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{verb:?}");
        let err = text(&o.stderr);
        assert!(
            err.contains("'--badflag'")
                && err.contains(&format!("Usage: bootprint {}", verb.join(" "))),
            "{verb:?}: {err}"
        );
        assert!(o.stdout.is_empty(), "{verb:?}");
    }
}

#[test]
fn man_pages_and_completions() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let o = run(&["man", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    for page in [
        "bootprint.1",
        "bootprint-report.1",
        "bootprint-rc.1",
        "bootprint-rc-services.1",
        "bootprint-modules-load.1",
        "bootprint-man.1",
    ] {
        let roff = std::fs::read_to_string(dir.join(page)).unwrap_or_default();
        assert!(roff.starts_with(".ie"), "{page}: {roff}");
    }
    assert!(!dir.join("bootprint-help.1").exists());
    let report = std::fs::read_to_string(dir.join("bootprint-report.1")).unwrap();
    assert!(report.contains("perfetto"), "{report}");
    assert_eq!(run(&["man", "/nonexistent/dir"]).status.code(), Some(1));
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let script = text(&o.stdout);
        for word in ["readahead", "relearn", "perfetto", "runlevel", "learn-wait"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
    }
    assert_eq!(run(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn failures_exit_1_naming_the_problem() {
    let o = run(&["report", "/nonexistent/trace"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("/nonexistent/trace"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn text_report_of_the_mini_trace() {
    let dir = fixtures().join("mini-trace");
    let o = run(&["report", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    for want in [
        "kernel (init starts)       4.20 s   (dmesg)",
        "text login                12.00 s   (event)",
        "boot done                 14.00 s   (event (idle))",
        "idle 28.9%, iowait 17.8%",
        "/lib/systemd/systemd-udevd --daemon",
        "(from delayacct_blkio_ticks)",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
}

#[test]
fn json_report_has_the_documented_keys() {
    let dir = fixtures().join("mini-trace");
    let o = run(&["report", dir.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["kernel_s"], 4.2);
    assert_eq!(v["init_exec_s"], 5.1);
    assert_eq!(v["text_login_s"], 12.0);
    assert!(v["graphical_login_s"].is_null());
    assert_eq!(v["boot_done_s"], 14.0);
    assert_eq!(v["boot_done_computed_s"], 14.0);
    assert!((v["idle_fraction"].as_f64().unwrap() - 520.0 / 1800.0).abs() < 1e-12);
    assert!((v["iowait_fraction"].as_f64().unwrap() - 320.0 / 1800.0).abs() < 1e-12);
    assert_eq!(v["blocked_source"], "delayacct_blkio_ticks");
    assert_eq!(v["top_cpu"][0]["name"], "udevd");
    assert_eq!(v["top_blocked"][0]["blocked_s"], 1.4);
    let procs = v["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 7);
    for key in [
        "pid",
        "ppid",
        "name",
        "start_s",
        "end_s",
        "cpu_s",
        "blocked_s",
        "cmdline",
        "exe",
    ] {
        assert!(procs[0].get(key).is_some(), "process key {key}");
    }
    assert_eq!(v["series"]["cpu"].as_array().unwrap().len(), 30);
    assert_eq!(v["series"]["disk"][0]["util"], 0.6);
}

#[test]
fn bootchart2_log_and_svg() {
    let dir = fixtures().join("bootchart2-example1");
    let tmp = tempfile::tempdir().unwrap();
    let svg = tmp.path().join("report.svg");
    let o = run(&[
        "report",
        dir.to_str().unwrap(),
        "--json",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "bootchart2");
    assert_eq!(v["text_login_s"], 18.58);
    assert_eq!(v["blocked_source"], "d_state_samples");
    let written = std::fs::read_to_string(&svg).unwrap();
    assert!(written.starts_with("<?xml") && written.contains("<svg"));
}

#[test]
fn report_carries_the_kernel_share_from_the_trace_dmesg() {
    let trace = fixtures().join("mini-trace");
    let o = run(&["report", "--json", trace.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let k = &v["kernel"];
    assert!(k.is_object(), "no kernel object: {k}");
    // The fixture's dmesg runs /init at 4.2 s, the same figure the report's kernel_s takes.
    assert_eq!(k["kernel_s"].as_f64(), v["kernel_s"].as_f64());
    let o = run(&["report", trace.to_str().unwrap()]);
    assert!(
        text(&o.stdout).contains("Kernel (from the trace's dmesg"),
        "{}",
        text(&o.stdout)
    );
}

/// Android's bootchart.tgz (tests/fixtures/android-phone): the report names the platform and
/// the rule behind each Android milestone, in text and JSON.
#[test]
fn an_android_bootchart_gets_its_milestones() {
    let tgz = fixtures().join("android-phone/bootchart.tgz");
    let o = run(&["report", tgz.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    for want in [
        "Platform: android (header: version = Android init 0.8)",
        "  zygote started             6.62 s   (process zygote64 (pid 440) started)",
        "  launcher running          15.22 s   (process com.android.launcher3 (pid 700) started)",
        "  graphical login           16.40 s   (boot animation exited: process \
         /system/bin/bootanimation (pid 470) last seen at 16.40 s)",
        "  boot done                 19.00 s   (last sample: Android's init stops bootcharting \
         at sys.boot_completed=1)",
    ] {
        assert!(out.contains(want), "{want:?} not in\n{out}");
    }
    let o = run(&["report", tgz.to_str().unwrap(), "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["platform"], "android");
    assert_eq!(v["platform_rule"], "header: version = Android init 0.8");
    assert_eq!(v["graphical_login_s"], 16.4);
    let names: Vec<&str> = v["platform_milestones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "surfaceflinger",
            "zygote",
            "boot_animation",
            "system_server",
            "launcher"
        ]
    );
    assert_eq!(
        v["platform_milestones"][3]["source"],
        "process system_server (pid 520) started"
    );
}

/// Issue 42: what `bootprint report` and `bootprint kernel` say on today's logs: a bootchart2
/// log without proc_ps.log, one whose sample clock started late, a systemd initramfs.
#[test]
fn issue_42_partial_and_late_clock_logs_and_a_systemd_initramfs() {
    let tmp = tempfile::tempdir().unwrap();
    for f in ["header", "proc_stat.log", "proc_diskstats.log"] {
        std::fs::copy(
            fixtures().join("bootchart2-example1").join(f),
            tmp.path().join(f),
        )
        .unwrap();
    }
    let o = run(&["report", tmp.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("proc_ps.log is missing"), "{out}");
    assert!(out.contains("CPU from 1.54 s to 30.32 s"), "{out}");

    let late = fixtures().join("bootchart2-late-clock");
    let o = run(&["report", "--json", late.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["clock_offset_s"].as_f64(), Some(10.0));
    assert_eq!(v["text_login_s"].as_f64(), Some(11.3), "{v}");

    let arch = fixtures().join("dmesg/arch-6.19-systemd-initrd.dmesg");
    let o = run(&["kernel", arch.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("in initramfs                 5.502 s"),
        "{out}"
    );
    assert!(
        out.contains("the initramfs ran systemd 259-1-arch"),
        "{out}"
    );
}
