//! The exports: Perfetto / Chrome trace-event JSON checked against the Trace Event Format's
//! rules, and the Prometheus textfile checked against the text exposition format. The boot
//! is the hand-made mini-trace (tests/fixtures/README.md), with the kernel log of a real
//! test-bed boot with initcall_debug (tests/fixtures/dmesg/) for the initcalls, and a
//! `readahead_hit` event added for the hit rate.

use std::path::PathBuf;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn mini_copy(extra_event: Option<&str>) -> tempfile::TempDir {
    let src = root().join("tests/fixtures/mini-trace");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    if let Some(line) = extra_event {
        let mut ev = std::fs::read_to_string(dir.join("events.log")).unwrap();
        ev.push_str(line);
        ev.push('\n');
        std::fs::write(dir.join("events.log"), ev).unwrap();
    }
    tmp
}

#[test]
fn perfetto_follows_the_trace_event_format() {
    let dir_tmp = mini_copy(None);
    let dir = dir_tmp.path();
    let t = trace::Trace::open(dir).unwrap();
    let m = analyze::analyze(&t).unwrap();
    let dmesg = std::fs::read_to_string(
        root().join("tests/fixtures/dmesg/debian12-6.1-testbed-initcall_debug.trace.dmesg"),
    )
    .unwrap();
    let k = kernel::Report::from_text("dmesg", &dmesg);
    let mut buf = Vec::new();
    render::perfetto::write(&mut buf, &m, "mini", Some(&k)).unwrap();
    let v: Value = serde_json::from_slice(&buf).unwrap();
    assert_eq!(v["displayTimeUnit"], "ms");
    let events = v["traceEvents"].as_array().unwrap();
    let int = |e: &Value, k: &str| e[k].as_f64().unwrap_or_else(|| panic!("{k} of {e}"));
    let (mut x, mut c, mut meta) = (0, 0, 0);
    for e in events {
        let ph = e["ph"]
            .as_str()
            .unwrap_or_else(|| panic!("ph missing: {e}"));
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
        assert!(e["name"].is_string(), "{e}");
        match ph {
            "X" => {
                x += 1;
                assert!(int(e, "ts") >= 0.0 && int(e, "dur") >= 0.0, "{e}");
                // Microseconds: whole numbers.
                assert_eq!(int(e, "ts").fract(), 0.0);
            }
            "C" => {
                c += 1;
                let args = e["args"].as_object().unwrap();
                assert!(
                    !args.is_empty() && args.values().all(Value::is_number),
                    "{e}"
                );
            }
            "M" => {
                meta += 1;
                assert!(e["args"]["name"].is_string(), "{e}");
                assert!(["process_name", "thread_name"].contains(&e["name"].as_str().unwrap()));
            }
            "i" => assert_eq!(e["s"], "g"),
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(x > 0 && c > 0 && meta > 0);
    // udevd (pid 200) started at 5.2 s: ts in microseconds.
    let udevd = events
        .iter()
        .find(|e| e["ph"] == "X" && e["pid"] == 200)
        .unwrap();
    assert_eq!(udevd["ts"].as_f64().unwrap(), 5_200_000.0);
    assert_eq!(udevd["tid"], 200);
    // Counters: one CPU and one disk counter per sample interval.
    let cpu = events.iter().filter(|e| e["name"] == "cpu %").count();
    assert_eq!(cpu, m.cpu.len());
    assert_eq!(
        events.iter().filter(|e| e["name"] == "disk").count(),
        m.disk.len()
    );
    // Initcalls from the kernel log, on their own track, with the kernel's durations.
    let calls: Vec<&Value> = events.iter().filter(|e| e["cat"] == "initcall").collect();
    assert_eq!(
        calls.len(),
        k.boot
            .initcalls
            .iter()
            .filter(|c| c.start_us.is_some())
            .count()
    );
    assert!(calls.len() > 100, "{}", calls.len());
    assert!(calls
        .iter()
        .all(|e| e["pid"] == render::perfetto::INITCALLS_PID));
    let slowest = k.boot.initcalls.iter().max_by_key(|c| c.cost_us()).unwrap();
    assert!(calls.iter().any(
        |e| e["name"] == slowest.func.as_str() && e["dur"].as_u64() == Some(slowest.cost_us())
    ));
    // Milestones: text login at 12.0 s.
    assert!(events
        .iter()
        .any(|e| e["ph"] == "i" && e["name"] == "text login" && e["ts"].as_f64() == Some(12e6)));
}

/// Checks the exposition format line by line; returns (metric, labels, value) samples.
fn parse_prom(text: &str) -> Vec<(String, String, f64)> {
    let mut helped = std::collections::HashSet::new();
    let mut typed = std::collections::HashSet::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap();
            assert!(helped.insert(name.to_string()), "HELP twice for {name}");
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut w = rest.split(' ');
            let name = w.next().unwrap();
            assert_eq!(w.next(), Some("gauge"), "{line}");
            assert!(helped.contains(name), "TYPE before HELP: {line}");
            typed.insert(name.to_string());
            continue;
        }
        assert!(!line.starts_with('#'), "{line}");
        let (series, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => {
                assert!(l.ends_with('}'), "{line}");
                (n, l.trim_end_matches('}'))
            }
            None => (series, ""),
        };
        assert!(name.starts_with("bootprint_"), "{line}");
        assert!(
            name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "{line}"
        );
        assert!(typed.contains(name), "sample before its TYPE: {line}");
        let v: f64 = value.parse().unwrap_or_else(|_| panic!("value of {line}"));
        out.push((name.to_string(), labels.to_string(), v));
    }
    out
}

/// The recorder's own cost (`recorder_stats`) reaches the model, the text report, the JSON
/// and the Prometheus export; an old trace without the share has the CPU seconds only.
#[test]
fn the_recorders_cost_is_reported() {
    let dir_tmp = mini_copy(
        Some("19500000000 recorder_stats samples=90 hz=10 boot_cpu_s=28.000 share_pct=2.50 cpu_s=0.700 maxrss_kb=2000"),
    );
    let dir = dir_tmp.path();
    let m = analyze::analyze(&trace::Trace::open(dir).unwrap()).unwrap();
    let r = m.recorder.expect("recorder cost");
    assert_eq!(
        (r.cpu_s, r.boot_cpu_s, r.share_pct, r.hz),
        (0.7, Some(28.0), Some(2.5), Some(10.0))
    );
    let mut text = Vec::new();
    render::text::write(&m, "t", &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("Recorder: 0.70 s of CPU, 2.5 % of the 28.00 s the boot used"),
        "{text}"
    );
    let json = render::json::to_value(&m, "t");
    assert_eq!(json["recorder"]["share_pct"], 2.5);
    let prom = render::prometheus::text(&m);
    assert!(
        prom.contains("bootprint_recorder_cpu_share_ratio 0.025"),
        "{prom}"
    );
    let old_tmp = mini_copy(Some("19500000000 recorder_stats samples=90 cpu_s=0.700"));
    let old = old_tmp.path();
    let m = analyze::analyze(&trace::Trace::open(old).unwrap()).unwrap();
    assert_eq!(m.recorder.unwrap().share_pct, None);
    assert!(!render::prometheus::text(&m).contains("share_ratio"));
}

#[test]
fn prometheus_textfile() {
    let dir_tmp = mini_copy(Some(
        "19000000000 readahead_hit replayed=1000000 resident=900000 ratio=0.900",
    ));
    let dir = dir_tmp.path();
    let m = analyze::analyze(&trace::Trace::open(dir).unwrap()).unwrap();
    let text = render::prometheus::text(&m);
    let samples = parse_prom(&text);
    let get = |name: &str, labels: &str| {
        samples
            .iter()
            .find(|s| s.0 == name && s.1 == labels)
            .map(|s| s.2)
            .unwrap_or_else(|| panic!("{name}{{{labels}}} in\n{text}"))
    };
    assert_eq!(
        get("bootprint_milestone_seconds", "milestone=\"text_login\""),
        12.0
    );
    assert_eq!(
        get("bootprint_milestone_seconds", "milestone=\"boot_done\""),
        14.0
    );
    assert_eq!(get("bootprint_phase_seconds", "phase=\"text_login\""), 6.9);
    assert_eq!(get("bootprint_phase_budget_seconds", "phase=\"done\""), 2.0);
    assert_eq!(get("bootprint_readahead_hit_ratio", ""), 0.9);
    assert_eq!(get("bootprint_readahead_replayed_bytes", ""), 1e6);
    // The machine and software, the levers the boot ran with.
    assert_eq!(
        get(
            "bootprint_info",
            "version=\"0.1.0\",kernel_release=\"6.1.0-test\",os=\"Debian GNU/Linux 12 \
             (bookworm)\",vendor=\"\",product=\"\""
        ),
        1.0
    );
    assert_eq!(get("bootprint_lever_self_off", "lever=\"readahead\""), 0.0);
    // Without the event there is no readahead metric.
    let plain_tmp = mini_copy(None);
    let plain = plain_tmp.path();
    let m2 = analyze::analyze(&trace::Trace::open(plain).unwrap()).unwrap();
    assert!(!render::prometheus::text(&m2).contains("readahead_hit"));
    // A lever that switched itself off says so.
    let off_tmp = mini_copy(Some("19000000000 modules_off by=itself reason=slower"));
    let m3 = analyze::analyze(&trace::Trace::open(off_tmp.path()).unwrap()).unwrap();
    let text3 = render::prometheus::text(&m3);
    assert!(
        text3.contains("bootprint_lever_self_off{lever=\"modules\"} 1\n"),
        "{text3}"
    );
    assert!(text3.contains("bootprint_lever_self_off{lever=\"readahead\"} 0\n"));
}

/// The whole export of a report (every metric, the reboot cycle's and the services' too)
/// passes Prometheus' own linter, and its services are bounded.
#[test]
fn promtool_accepts_the_export() {
    if !testkit::have_tool_or_skip("promtool") {
        return;
    }
    let report_of = |dir: &std::path::Path| {
        let trace = trace::Trace::open(dir).unwrap();
        analyze::report::Report::build(&trace, &Default::default(), "defaults").unwrap()
    };
    // A boot after a recorded reboot (the cycle's stages) ...
    let (_tmp, boot) = testkit::cycle::log_dir(true);
    let cycle = render::prometheus::report(&report_of(&boot));
    assert!(cycle.contains("bootprint_reboot_stage_seconds"), "{cycle}");
    // ... and a boot under the runner: twelve scripts started, one of them twice, and a
    // stop in runlevel 6 that is not a start.
    let runner_tmp = mini_copy(None);
    let mut rc = String::from("# bootprint rc 1\n");
    let span = |rc: &mut String, script: &str, rl: &str, action: &str, from_s: f64, took_s: f64| {
        let (a, b) = ((from_s * 1e9) as u64, ((from_s + took_s) * 1e9) as u64);
        rc.push_str(&format!(
            "{a} rc_start script={script} action={action} runlevel={rl} late=0 waited_for= pid=9\n\
             {b} rc_end script={script} action={action} runlevel={rl} late=0 exit=0 outcome=ok \
             timed_out=0\n"
        ));
    };
    for i in 0..12 {
        span(
            &mut rc,
            &format!("svc{i:02}"),
            "2",
            "start",
            6.0,
            0.1 * (i + 1) as f64,
        );
    }
    span(&mut rc, "svc00", "2", "start", 8.0, 0.05);
    span(&mut rc, "slowstop", "6", "stop", 15.0, 4.0);
    std::fs::write(runner_tmp.path().join("rc.log"), rc).unwrap();
    let r = report_of(runner_tmp.path());
    let text = render::prometheus::report(&r);
    let services = render::prometheus::slowest_services(&r);
    let names: Vec<&str> = services.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "svc11", "svc10", "svc09", "svc08", "svc07", "svc06", "svc05", "svc04", "svc03",
            "svc02"
        ],
        "the ten slowest starts, one series a name, no stop"
    );
    assert!((services[0].1 - 1.2).abs() < 1e-6, "{services:?}");
    for (name, v) in &services {
        assert!(
            text.contains(&format!("bootprint_service_seconds{{service=\"{name}\"}} ")),
            "{name} {v}: {text}"
        );
    }
    let check = |text: &str| {
        testkit::run_with_input(
            std::process::Command::new("promtool").args(["check", "metrics"]),
            Some(text.as_bytes()),
        )
    };
    for text in [&cycle, &text] {
        let (ok, said) = check(text);
        assert!(ok, "promtool check metrics: {said}\n{text}");
    }
    // The check can fail: a counter without `_total` is refused.
    let (ok, said) = check(
        "# HELP bootprint_x_seconds x\n# TYPE bootprint_x_seconds counter\nbootprint_x_seconds 1\n",
    );
    assert!(!ok, "promtool accepted a counter without _total: {said}");
}
