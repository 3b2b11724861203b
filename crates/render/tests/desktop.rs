//! Every view of a desktop boot shows the third boot time: the hand-made desktop trace
//! (tests/fixtures/desktop-trace, see tests/fixtures/README.md) rendered as text, JSON, HTML,
//! SVG, Perfetto, Prometheus and a diff, each checked for the session's start, desktop ready
//! and the desktop start time; a boot without a session shows none of it.

use std::path::PathBuf;

use analyze::budget::Budgets;
use analyze::report::Report;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn report_of(name: &str) -> Report {
    let t = trace::Trace::open(&fixture(name)).unwrap();
    Report::build(&t, &Budgets::default(), "defaults").unwrap()
}

#[test]
fn text_report() {
    let mut out = Vec::new();
    render::text::report(&mut out, &report_of("desktop-trace")).unwrap();
    let t = String::from_utf8(out).unwrap();
    assert!(
        t.contains("  session start             20.00 s   (event)\n"),
        "{t}"
    );
    assert!(
        t.contains("  desktop ready             26.00 s   (event (idle); desktop start 6.00 s)\n"),
        "{t}"
    );
    assert!(
        t.contains("  desktop start          20.00   26.00    6.00    2.00    +4.00"),
        "{t}"
    );
    let mut out = Vec::new();
    render::text::report(&mut out, &report_of("mini-trace")).unwrap();
    let t = String::from_utf8(out).unwrap();
    assert!(
        !t.contains("session start") && !t.contains("desktop"),
        "{t}"
    );
}

#[test]
fn json_report() {
    let v = render::json::report(&report_of("desktop-trace"));
    assert_eq!(v["session_start_s"], 20.0);
    assert_eq!(v["session_start_source"], "event");
    assert_eq!(v["desktop_ready_s"], 26.0);
    assert_eq!(v["desktop_ready_source"], "event (idle)");
    assert_eq!(v["desktop_start_s"], 6.0);
    let procs = v["processes"].as_array().unwrap();
    let session: Vec<u64> = procs
        .iter()
        .filter(|p| p["session"] == true)
        .map(|p| p["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(session.len(), 5, "{session:?}");
    assert!(session.contains(&531) && !session.contains(&600));
    let v = render::json::report(&report_of("mini-trace"));
    assert!(v["desktop_ready_s"].is_null() && v["desktop_start_s"].is_null());
}

#[test]
fn html_report() {
    let mut out = Vec::new();
    render::html::report(&mut out, &report_of("desktop-trace")).unwrap();
    let h = String::from_utf8(out).unwrap();
    assert!(
        h.contains("<tr><td class=l>session start</td><td>20.00</td><td class=l>event</td></tr>")
    );
    assert!(h.contains(
        "<tr><td class=l>desktop ready</td><td>26.00</td><td class=l>event (idle)</td></tr>"
    ));
    assert!(h.contains("<td class=l>desktop start</td><td>6.00</td>"));
    assert!(
        h.contains("[\"desktop ready\",26.0]"),
        "the chart's milestone marks"
    );
    // The zoomable chart's rows say which belong to the session (drawn in its colour).
    let rows = render::html::chart_data(&report_of("desktop-trace").model)["rows"].clone();
    let session: Vec<u64> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["session"] == true)
        .map(|r| r["pid"].as_u64().unwrap())
        .collect();
    assert!(
        session.contains(&500) && !session.contains(&600),
        "{session:?}"
    );
    assert!(h.contains("r.session?'#d6e6fa'"));
}

#[test]
fn svg_chart_marks_the_milestones_and_the_session() {
    let mut out = Vec::new();
    render::svg::report(&mut out, &report_of("desktop-trace")).unwrap();
    let s = String::from_utf8(out).unwrap();
    assert!(s.contains("id=\"milestone-session_start\""));
    assert!(s.contains("id=\"milestone-desktop_ready\""));
    // The session manager and its descendants are told apart; the boot's own are not.
    let rows: Vec<&str> = s.split("<g class=\"row").skip(1).collect();
    let row = |name: &str| {
        *rows
            .iter()
            .find(|r| r.contains(&format!(">{name}")))
            .unwrap()
    };
    for name in ["xfce4-session", "xfwm4", "Web Content"] {
        let r = row(name);
        assert!(
            r.starts_with(" session\"") && r.contains("\u{b7} session"),
            "{name}: {r}"
        );
    }
    for name in ["udevd", "Xorg"] {
        assert!(row(name).starts_with('"'), "{name}");
    }
}

#[test]
fn perfetto_and_prometheus() {
    let r = report_of("desktop-trace");
    let ev = render::perfetto::events(&r.model, None);
    let mark = |name: &str| {
        ev.iter()
            .find(|e| e["name"] == name && e["cat"] == "milestone")
            .map(|e| e["ts"].as_f64().unwrap())
    };
    assert_eq!(mark("session start"), Some(20e6));
    assert_eq!(mark("desktop ready"), Some(26e6));
    let p = render::prometheus::report(&r);
    assert!(
        p.contains("bootprint_milestone_seconds{milestone=\"session_start\"} 20\n"),
        "{p}"
    );
    assert!(
        p.contains("bootprint_milestone_seconds{milestone=\"desktop_ready\"} 26\n"),
        "{p}"
    );
    assert!(
        p.contains("bootprint_phase_seconds{phase=\"desktop\"} 6\n"),
        "{p}"
    );
    assert!(
        p.contains("bootprint_phase_budget_seconds{phase=\"desktop\"} 2\n"),
        "{p}"
    );
    let p = render::prometheus::report(&report_of("mini-trace"));
    assert!(
        !p.contains("desktop") && !p.contains("session_start"),
        "{p}"
    );
}

#[test]
fn diff_views() {
    let a = report_of("desktop-trace").model;
    let b = report_of("mini-trace").model;
    let d = analyze::diff::diff(&a, &b);
    let mut out = Vec::new();
    render::diff::write_text(&mut out, "desk", "mini", &d).unwrap();
    let t = String::from_utf8(out).unwrap();
    assert!(
        t.contains("desktop_ready") && t.contains("session_start"),
        "{t}"
    );
    let j: Value = render::diff::json(&d, "desk", "mini");
    let ms = j["milestones"].as_array().unwrap();
    assert!(
        ms.iter()
            .any(|m| m["name"] == "desktop_ready" && m["a_s"] == 26.0 && m["b_s"].is_null()),
        "{j}"
    );
    let mut out = Vec::new();
    render::diff::write_svg(&mut out, ("desk", &a), ("mini", &b)).unwrap();
    let s = String::from_utf8(out).unwrap();
    assert!(
        s.contains(">desktop 26.00</text>"),
        "the desktop milestone line"
    );
}
