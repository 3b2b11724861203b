//! The reboot cycle in the report's views: text, JSON and Prometheus (the cycle itself:
//! crates/analyze/tests/cycle.rs).

use testkit::cycle::log_dir;

#[test]
fn the_report_carries_it_to_json_and_prometheus() {
    let (_tmp, boot) = log_dir(true);
    let trace = trace::Trace::open(&boot).unwrap();
    let r = analyze::report::Report::build(&trace, &Default::default(), "defaults").unwrap();
    let j = render::json::report(&r);
    assert_eq!(j["cycle"]["previous_boot"], "a");
    assert_eq!(j["cycle"]["clock"], "rtc");
    assert_eq!(j["cycle"]["shutdown"]["how"], "runlevel 6");
    let prom = render::prometheus::report(&r);
    assert!(
        prom.contains("bootprint_reboot_stage_seconds{stage=\"gap\"} 19\n"),
        "{prom}"
    );
    assert!(prom.contains("bootprint_reboot_stage_seconds{stage=\"to_login\"} 37\n"));
    let mut text = Vec::new();
    render::text::report(&mut text, &r).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("Reboot cycle (from boot a's shutdown"),
        "{text}"
    );
}
