//! The reboot cycle in the report's views: text, JSON, HTML, Prometheus and diff (the cycle itself:
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
    // What the firmware and loader did not report has no series; the kernel's share has.
    assert!(!prom.contains("stage=\"firmware\"") && !prom.contains("stage=\"loader\""));
    let kernel = r.cycle.as_ref().unwrap().kernel_s.unwrap();
    assert!(
        prom.contains(&format!(
            "bootprint_reboot_stage_seconds{{stage=\"kernel\"}} {}\n",
            (kernel * 1000.0).round() / 1000.0
        )),
        "{prom}"
    );
    let mut text = Vec::new();
    render::text::report(&mut text, &r).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("Reboot cycle (from boot a's shutdown"),
        "{text}"
    );
    let mut html = Vec::new();
    render::html::report(&mut html, &r).unwrap();
    let html = String::from_utf8(html).unwrap();
    assert!(
        html.contains("<h2>Reboot cycle</h2><p>From boot a's shutdown (runlevel 6), joined by the hardware clock"),
        "{html}"
    );
    assert!(
        html.contains("<tr><td class=l>to this kernel</td><td>19.00</td>"),
        "{html}"
    );
    assert!(
        html.contains("<tr><td class=l>whole, to the login</td><td>37.00</td>"),
        "{html}"
    );
}

/// `bootprint diff` of two boots: the stages of the reboot before each, side by side, when
/// either has one.
#[test]
fn the_diff_puts_the_cycles_side_by_side() {
    let (_tmp, boot) = log_dir(true);
    let trace = trace::Trace::open(&boot).unwrap();
    let model = analyze::analyze(&trace).unwrap();
    let cycle = analyze::cycle::Cycle::load(&boot, trace.events.as_deref().unwrap(), &model);
    assert!(cycle.is_some());
    let d = analyze::diff::diff(&model, &model).with_cycles(None, cycle.as_ref());
    let gap = d.cycle.iter().find(|p| p.name == "to_kernel").unwrap();
    assert_eq!((gap.a_s, gap.delta_s), (None, None));
    assert!((gap.b_s.unwrap() - 19.0).abs() < 1e-6);
    let mut text = Vec::new();
    render::diff::write_text(&mut text, "a", "b", &d).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("The reboot that led to each boot"), "{text}");
    let j = render::diff::json(&d, "a", "b");
    assert_eq!(j["cycle"][4]["name"], "whole_to_boot_done");
    // Neither has one: no section.
    let plain = analyze::diff::diff(&model, &model).with_cycles(None, None);
    assert!(plain.cycle.is_empty());
}

/// The shutdown's storage figures reach the cycle's text, HTML and JSON (`cycle.shutdown
/// .storage`); without them the line is left out.
#[test]
fn the_cycle_shows_the_shutdowns_storage() {
    let (_tmp, boot) = log_dir(true);
    let views = || {
        let trace = trace::Trace::open(&boot).unwrap();
        let r = analyze::report::Report::build(&trace, &Default::default(), "defaults").unwrap();
        let (mut text, mut html) = (Vec::new(), Vec::new());
        render::text::report(&mut text, &r).unwrap();
        render::html::report(&mut html, &r).unwrap();
        (
            String::from_utf8(text).unwrap(),
            String::from_utf8(html).unwrap(),
            render::json::report(&r),
        )
    };
    let (text, html, _) = views();
    assert!(!text.contains("    storage:"), "{text}");
    assert!(!html.contains("The shutdown's storage"));
    std::fs::write(
        boot.parent().unwrap().join("a/shutdown/sync.log"),
        "# bootprint events 1\n106100000000 shutdown_sync ms=1500 dirty_kb=3072 writeback_kb=0 \
         after_dirty_kb=0 after_writeback_kb=0 written_kb=3100\n",
    )
    .unwrap();
    let (text, html, json) = views();
    assert!(
        text.contains("    storage: sync after the save 1.50 s of 3.0 MiB\n"),
        "{text}"
    );
    assert!(
        html.contains("<p>The shutdown's storage: sync after the save 1.50 s of 3.0 MiB.</p>"),
        "{html}"
    );
    assert_eq!(json["cycle"]["shutdown"]["storage"]["sync"]["took_s"], 1.5);
    assert_eq!(
        json["cycle"]["shutdown"]["storage"]["sync"]["written_kib"],
        3100
    );
}
