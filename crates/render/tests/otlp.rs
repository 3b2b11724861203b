//! A boot as an OTLP trace: its spans are the report's, placed at the boot's wall clock (the
//! real backend's view: the testbed's `otlp` check, docs/testbed.md).

use serde_json::Value;

fn report_of(dir: &std::path::Path) -> analyze::report::Report {
    let trace = trace::Trace::open(dir).unwrap();
    analyze::report::Report::build(&trace, &Default::default(), "defaults").unwrap()
}

fn ns(v: &Value) -> i128 {
    v.as_str().unwrap().parse().unwrap()
}

#[test]
fn a_boot_after_a_reboot_is_one_trace_with_the_reports_times() {
    let (_tmp, boot) = testkit::cycle::log_dir(true);
    let r = report_of(&boot);
    let j = render::json::report(&r);
    let base: u64 = 1_700_000_000_000_000_000;
    let req = render::otlp::request(&r, base, "0.1.0");
    let spans = req["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    let plan = render::otlp::spans(&r);
    assert_eq!(spans.len(), plan.len());
    // One root; every other span is its child; one trace id; no span id twice.
    let root = &spans[0];
    assert_eq!(root["name"], "boot");
    assert_eq!(root["parentSpanId"], "");
    let trace_id = root["traceId"].as_str().unwrap();
    assert_eq!(trace_id.len(), 32);
    let mut ids: Vec<&str> = spans
        .iter()
        .map(|s| s["spanId"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), spans.len());
    for s in &spans[1..] {
        assert_eq!(s["traceId"], trace_id);
        assert_eq!(s["parentSpanId"], root["spanId"]);
        assert!(ns(&s["startTimeUnixNano"]) <= ns(&s["endTimeUnixNano"]));
        assert!(ns(&s["startTimeUnixNano"]) >= ns(&root["startTimeUnixNano"]));
    }
    // The shutdown before the kernel: its start is the request, shutdown + gap before 0.
    let cycle = &j["cycle"];
    let shutdown = spans.iter().find(|s| s["name"] == "shutdown").unwrap();
    let before = cycle["shutdown_s"].as_f64().unwrap() + cycle["gap_s"].as_f64().unwrap();
    assert_eq!(
        ns(&shutdown["startTimeUnixNano"]),
        base as i128 - (before * 1e9).round() as i128
    );
    assert_eq!(
        ns(&root["startTimeUnixNano"]),
        ns(&shutdown["startTimeUnixNano"])
    );
    // Every phase of the budget table, at its times.
    for p in j["budgets"]["phases"].as_array().unwrap() {
        let s = spans
            .iter()
            .find(|s| s["name"] == p["phase"])
            .unwrap_or_else(|| panic!("no span for phase {}", p["phase"]));
        let at = |k: &str| base as i128 + (p[k].as_f64().unwrap() * 1e9).round() as i128;
        assert_eq!(ns(&s["startTimeUnixNano"]), at("from_s"));
        assert_eq!(ns(&s["endTimeUnixNano"]), at("to_s"));
    }
    // The boot's resource names it.
    let res = req["resourceSpans"][0]["resource"]["attributes"]
        .as_array()
        .unwrap();
    assert!(res
        .iter()
        .any(|a| a["key"] == "service.name" && a["value"]["stringValue"] == "bootprint"));
}

#[test]
fn the_runners_services_and_the_slowest_processes_are_spans() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/mini-trace");
    let r = report_of(&dir);
    let j = render::json::report(&r);
    let req = render::otlp::request(&r, 0, "0.1.0");
    let spans = req["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    let kind = |s: &Value| {
        s["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["key"] == "bootprint.kind")
            .map(|a| a["value"]["stringValue"].as_str().unwrap().to_string())
            .unwrap()
    };
    let count = |k: &str| spans.iter().filter(|s| kind(s) == k).count();
    let ended = j["services"]["spans"]
        .as_array()
        .map_or(0, |a| a.iter().filter(|s| !s["end_s"].is_null()).count());
    assert_eq!(count("service"), ended);
    let mut top: Vec<i64> = j["top_cpu"]
        .as_array()
        .unwrap()
        .iter()
        .chain(j["top_blocked"].as_array().unwrap())
        .map(|p| p["pid"].as_i64().unwrap())
        .collect();
    top.sort_unstable();
    top.dedup();
    assert!(!top.is_empty());
    assert_eq!(count("process"), top.len());
    // No boot id in a bootchart2-style trace is still a stable id.
    let again = render::otlp::request(&r, 0, "0.1.0");
    assert_eq!(
        again["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"],
        spans[0]["traceId"]
    );
}
