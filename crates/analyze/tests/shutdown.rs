//! A shutdown's view from its trace: the journal's unit stops (systemd) and the runner's
//! stop spans (sysvinit) take precedence over the process samples, in that order.

use std::fs;

use analyze::shutdown::{ShutdownView, StopSource};

const EVENTS: &str = "# bootprint events 1\n100000000000 recorder_start pid=7 hz=50\n\
    100000000000 shutdown_start how=systemd\n\
    108000000000 shutdown_end reason=terminated settle_s=3\n\
    108000000000 clock realtime_ns=5 monotonic_ns=107000000000\n";

#[test]
fn the_journals_unit_stops_with_a_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(d.join("events.log"), EVENTS).unwrap();
    fs::write(
        d.join("systemd-stops.log"),
        "# bootprint events 1\n\
         80000000000 unit_stopped unit=before.service result=done\n\
         100100000000 unit_stopping unit=bp-slowstop.service\n\
         100200000000 unit_stopping unit=cron.service\n\
         100300000000 unit_stopped unit=cron.service result=done\n\
         105100000000 unit_failed unit=bp-slowstop.service result=timeout\n\
         105150000000 unit_stopped unit=bp-slowstop.service result=done\n\
         106000000000 unit_stopped unit=quick.service result=done\n",
    )
    .unwrap();
    let (v, problems) = ShutdownView::load(d).unwrap();
    assert_eq!(problems, Vec::<String>::new());
    assert_eq!(v.source, StopSource::Systemd);
    assert_eq!(v.end_reason, "terminated");
    assert!((v.saved_s - 8.0).abs() < 1e-9);
    let names: Vec<&str> = v.stops.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["bp-slowstop.service", "cron.service", "quick.service"]
    );
    let blame = v.blame();
    assert_eq!(blame[0].name, "bp-slowstop.service");
    assert_eq!(blame[0].outcome, "timeout");
    assert!((blame[0].duration_s(v.saved_s) - 5.05).abs() < 1e-6);
    let quick = &v.stops[2];
    assert_eq!(quick.duration_s(v.saved_s), 0.0);
    assert!(
        v.chain().is_empty(),
        "the journal does not say what waited for what"
    );
}

#[test]
fn a_trace_without_its_end_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(
        d.join("events.log"),
        "# bootprint events 1\n100000000000 shutdown_start how=systemd\n",
    )
    .unwrap();
    let e = ShutdownView::load(d).unwrap_err();
    assert!(
        e.contains("events.log") && e.contains("expected a shutdown_end"),
        "{e}"
    );
}

/// systemd acts on the request before the recorder's unit runs: logind's record of it and a
/// stop that began first (both in the journal, before `shutdown_start`) move the start back.
#[test]
fn the_journal_knows_the_request_before_the_recorder_ran() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(d.join("events.log"), EVENTS).unwrap();
    fs::write(
        d.join("systemd-stops.log"),
        "# bootprint events 1\n\
         80000000000 unit_stopped unit=long-before.service result=done\n\
         99000000000 shutdown_requested verb=reboot\n\
         99200000000 unit_stopping unit=bp-slowstop.service\n\
         103300000000 unit_stopped unit=bp-slowstop.service result=done\n",
    )
    .unwrap();
    let (v, _) = ShutdownView::load(d).unwrap();
    assert!((v.start_uptime_s - 99.0).abs() < 1e-9, "{v:?}");
    assert!((v.saved_s - 9.0).abs() < 1e-9);
    let names: Vec<&str> = v.stops.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["bp-slowstop.service"],
        "an older stop is not the shutdown's"
    );
    assert!((v.stops[0].duration_s(v.saved_s) - 4.1).abs() < 1e-6);
}
