//! Regression tests for the reliability issue's defects, named after them: the real
//! `bootprint` binary on traces with hostile contents (a copy of tests/fixtures/mini-trace
//! edited by a minimal change) or hostile arguments. Each run has a time limit, so a loop
//! fails the test instead of hanging it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// A copy of the mini trace in `dir` with `edit` applied to each `proc_ps.log` line.
fn mini_with(dir: &Path, edit: impl Fn(&str) -> String) -> PathBuf {
    let trace = dir.join("trace");
    std::fs::create_dir_all(&trace).unwrap();
    for e in std::fs::read_dir(fixtures().join("mini-trace")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        let bytes = std::fs::read(e.path()).unwrap();
        let bytes = if name == "proc_ps.log" {
            let text = String::from_utf8(bytes).unwrap();
            let lines: Vec<String> = text.split('\n').map(&edit).collect();
            lines.join("\n").into_bytes()
        } else {
            bytes
        };
        std::fs::write(trace.join(name), bytes).unwrap();
    }
    trace
}

/// Exit code, stdout and stderr of `bootprint ARGS`, killed after a minute.
fn run<S: AsRef<OsStr>>(args: &[S]) -> (Option<i32>, String, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bootprint runs");
    let pid = child.id();
    // Its output is read while it runs (a full pipe would stop it).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("bootprint did not finish within a minute (a loop)");
        }
    };
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Defect 3: udevd's ppid names modprobe, its own child (pid reuse can do this): advise and
/// the HTML report looped forever.
#[test]
fn defect3_parent_cycle_does_not_hang_advise_or_html() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let trace = mini_with(d, |l| {
        l.strip_prefix("200 (udevd) ")
            .map(|rest| {
                let (state, rest) = rest.split_once(' ').unwrap();
                let (_ppid, rest) = rest.split_once(' ').unwrap();
                format!("200 (udevd) {state} 250 {rest}")
            })
            .unwrap_or_else(|| l.to_string())
    });
    let html = d.join("r.html");
    for args in [
        vec![OsStr::new("advise"), trace.as_os_str()],
        vec![
            OsStr::new("advise"),
            trace.as_os_str(),
            OsStr::new("--json"),
        ],
        vec![
            OsStr::new("report"),
            trace.as_os_str(),
            OsStr::new("--html"),
            html.as_os_str(),
        ],
    ] {
        let (code, _, err) = run(&args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
    }
    assert!(std::fs::read_to_string(&html).unwrap().contains("udevd"));
}

/// Defect 4: a pid of 4294967295 in proc_ps.log aborted report and advise (a Vec indexed by
/// pid asked for 32 GiB).
#[test]
fn defect4_largest_pid_does_not_abort_report_or_advise() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let trace = mini_with(d, |l| match l.strip_prefix("50 (kworker") {
        Some(rest) => format!("4294967295 (kworker{rest}"),
        None => l.to_string(),
    });
    let t = trace.to_str().unwrap();
    let (html, svg, perfetto) = (d.join("r.html"), d.join("r.svg"), d.join("r.json"));
    let all = [
        "report",
        t,
        "--html",
        html.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--perfetto",
        perfetto.to_str().unwrap(),
    ];
    for args in [
        &["report", t][..],
        &["report", t, "--json"],
        &["advise", t],
        &all,
    ] {
        let (code, out, err) = run(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        if args.contains(&"--json") {
            assert!(out.contains("4294967295"), "{out}");
        }
    }
}

/// Defect 10: a process named `<!--<script>` disabled the HTML report's script (only `</`
/// was escaped in the embedded data). No process name may change the page's structure.
#[test]
fn defect10_process_names_cannot_change_the_html_page() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let names = [
        ("200 (udevd)", "200 (<!--<script>)"),
        ("250 (modprobe)", "250 (</script>&amp;\u{2028}x\u{2029})"),
        ("300 (agetty)", "300 (]]><!-- -->)"),
    ];
    let trace = mini_with(d, |l| {
        for (from, to) in names {
            if let Some(rest) = l.strip_prefix(from) {
                return format!("{to}{rest}");
            }
        }
        l.to_string()
    });
    // And in a command line.
    let c = std::fs::read_to_string(trace.join("cmdline2.log")).unwrap();
    let c = c.replace("--daemon", "<!--<script>--daemon");
    std::fs::write(trace.join("cmdline2.log"), c).unwrap();
    let html = d.join("r.html");
    let (code, _, err) = run(&[
        OsStr::new("report"),
        trace.as_os_str(),
        OsStr::new("--html"),
        html.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let page = std::fs::read_to_string(&html).unwrap();
    let lower = page.to_ascii_lowercase();
    assert_eq!(lower.matches("<script").count(), 2, "script tags");
    assert_eq!(lower.matches("</script").count(), 2, "script ends");
    assert!(!page.contains("<!--"), "a comment opened");
    let open = "<script type=\"application/json\" id=\"bp-data\">";
    let data = &page[page.find(open).unwrap() + open.len()..];
    let data = &data[..data.find("</script>").unwrap()];
    for bad in ['<', '>', '&', '\u{2028}', '\u{2029}'] {
        assert!(!data.contains(bad), "{bad:?} in the embedded data");
    }
    let v: serde_json::Value = serde_json::from_str(data).unwrap();
    let shown: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(shown.contains(&"<!--<script>"), "{shown:?}");
    assert!(
        shown.contains(&"</script>&amp;\u{2028}x\u{2029}"),
        "{shown:?}"
    );
}

/// Defect 7: a path is bytes, not text; an argument that is not UTF-8 made the CLI panic.
/// Now a path argument is used as it is (here: it does not exist, exit 1, named), and an
/// argument that must be text is a usage error (exit 2) naming it.
#[test]
fn defect7_arguments_not_utf8_are_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let bad = OsStr::from_bytes(b"/nonexistent/tr\xffce");
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let dir = d.as_os_str();
    let o = OsStr::new;
    let cases: Vec<(Vec<&OsStr>, i32)> = vec![
        (vec![bad], 2),
        (vec![o("report"), bad], 1),
        (vec![o("report"), bad, o("--json")], 1),
        (vec![o("report"), o("--config"), bad, bad], 1),
        (vec![o("advise"), bad], 1),
        (vec![o("diff"), bad, bad], 1),
        (vec![o("kernel"), bad], 1),
        (vec![o("export"), o("--prometheus"), dir, bad], 1),
        (vec![o("rc"), o("services"), bad], 1),
        (vec![o("services"), bad], 1),
        (vec![o("rc"), o("graph"), o("--root"), bad], 1),
        (vec![o("rc"), o("graph"), o("--runlevel"), bad], 2),
        (vec![o("modules"), o("plan"), o("--root"), bad], 1),
        (vec![o("modules"), o("plan"), o("--kernel"), bad], 2),
        (vec![o("initramfs"), o("plan"), o("--kernel"), bad], 2),
        (
            vec![
                o("readahead"),
                o("show"),
                o("--root"),
                dir,
                o("--pack"),
                bad,
            ],
            1,
        ),
        (
            vec![o("report"), OsStr::from_bytes(b"--tr\xffce"), o("x")],
            2,
        ),
        (vec![o("diff"), OsStr::from_bytes(b"--tr\xffce"), o("x")], 2),
    ];
    for (args, want) in cases {
        let (code, _, err) = run(&args);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(code, Some(want), "{args:?}: {err}");
        assert!(
            err.contains("tr\u{fffd}ce") || err.to_lowercase().contains("tr\\xffce"),
            "{args:?}: the argument is not named: {err}"
        );
    }
}

/// Defect 8: where a bootchart log's sample clock and the kernel's start times disagree, a
/// process "started" after the first sample that saw it, and report gave negative durations.
/// tests/fixtures/bootchart2-clock-skew has two such processes; bootchart2's example log 23.
#[test]
fn defect8_clock_skew_gives_no_negative_durations_and_is_reported() {
    for (dir, late) in [
        (fixtures().join("bootchart2-clock-skew"), 2),
        (fixtures().join("bootchart2-example1"), 23),
    ] {
        let t = dir.to_str().unwrap();
        let (code, out, err) = run(&["report", t, "--json"]);
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["started_after_first_sample"], late, "{t}");
        let note = format!(
            "clocks disagree: {late} processes started after they were first sampled; start \
             taken as first sighting"
        );
        assert!(v["notes"]
            .as_array()
            .unwrap()
            .contains(&note.clone().into()));
        for p in v["processes"].as_array().unwrap() {
            let (s, e) = (p["start_s"].as_f64().unwrap(), p["end_s"].as_f64().unwrap());
            assert!(
                e >= s,
                "{t}: pid {} starts at {s} after its end {e}",
                p["pid"]
            );
        }
        let (code, text, _) = run(&["report", t]);
        assert_eq!(code, Some(0));
        assert!(text.contains(&note), "{text}");
    }
    // The fixture's two: the start is the first sighting.
    let (_, out, _) = run(&[
        "report",
        fixtures().join("bootchart2-clock-skew").to_str().unwrap(),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let start = |pid: u32| {
        v["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pid"] == pid)
            .map(|p| (p["start_s"].as_f64().unwrap(), p["end_s"].as_f64().unwrap()))
            .unwrap()
    };
    assert_eq!(start(120), (1.2, 1.2));
    assert_eq!(start(130), (1.4, 1.8));
    assert_eq!(start(200), (1.5, 1.8));
}

/// Defect 4, the same rule for times: a block time of 10^15 cs (about 300,000 years) in every
/// log must size no allocation (the SVG's buckets were sized by the time span) and no loop
/// (the boot-done view walked the span half a second at a time).
#[test]
fn defect4_huge_block_time_does_not_abort_or_hang() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let trace = mini_with(d, |l| {
        if l == "2000" {
            "1000000000000000".to_string()
        } else {
            l.to_string()
        }
    });
    for name in ["proc_stat.log", "proc_diskstats.log", "proc_meminfo.log"] {
        let text = std::fs::read_to_string(trace.join(name)).unwrap();
        let text = text.replace("\n2000\n", "\n1000000000000000\n");
        std::fs::write(trace.join(name), text).unwrap();
    }
    let t = trace.to_str().unwrap();
    let (html, svg) = (d.join("r.html"), d.join("r.svg"));
    let (html, svg) = (html.to_str().unwrap(), svg.to_str().unwrap());
    for args in [
        &["report", t][..],
        &["advise", t],
        &["report", t, "--svg", svg, "--html", html, "--json"],
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
    }
    assert!(std::fs::metadata(svg).unwrap().len() < 10_000_000);
}
