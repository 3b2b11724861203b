//! The reboot cycle: a boot's trace (the repository's mini-trace, with a `clock` and a
//! `previous_boot` event added) joined with the shutdown recorded in the boot before's
//! directory beside it, on the hardware clock and, without its offsets, on the wall clock.

use std::fs;
use std::path::Path;

use analyze::cycle::{Cycle, CycleClock};

use testkit::cycle::log_dir;

fn cycle_of(boot: &Path) -> Option<Cycle> {
    let trace = trace::Trace::open(boot).unwrap();
    let model = analyze::analyze(&trace).unwrap();
    Cycle::load(boot, trace.events.as_deref().unwrap(), &model)
}

#[test]
fn the_stages_add_up_on_the_hardware_clock() {
    let (_tmp, boot) = log_dir(true);
    let c = cycle_of(&boot).unwrap();
    assert_eq!(c.previous_boot, "a");
    assert_eq!(c.shutdown_how, "runlevel 6");
    assert_eq!(c.clock, CycleClock::Rtc);
    // The kernel started at 1000000100 - 20.5 s on the wall clock, 0.5 s ahead of the
    // hardware clock: 1000000079 s; the shutdown was saved at 1000000060 s.
    assert!((c.shutdown_s - 6.0).abs() < 1e-9, "{c:?}");
    assert!((c.gap_s - 19.0).abs() < 1e-6, "{c:?}");
    assert_eq!(c.login_s, Some(12.0));
    assert!((c.to_login_s.unwrap() - 37.0).abs() < 1e-6);
    assert!((c.to_boot_done_s - (6.0 + 19.0 + c.boot_done_s)).abs() < 1e-6);
    assert!(c.notes.is_empty(), "{:?}", c.notes);
}

#[test]
fn without_the_offsets_the_wall_clock_says_so() {
    let (_tmp, boot) = log_dir(false);
    let c = cycle_of(&boot).unwrap();
    assert_eq!(c.clock, CycleClock::Wall);
    assert!((c.gap_s - 19.5).abs() < 1e-6, "{c:?}");
    assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
}

#[test]
fn no_cycle_without_the_previous_boots_shutdown() {
    let (_tmp, boot) = log_dir(true);
    fs::remove_dir_all(boot.parent().unwrap().join("a/shutdown")).unwrap();
    assert!(cycle_of(&boot).is_none());
    // And the report says so with a null.
    let trace = trace::Trace::open(&boot).unwrap();
    let r = analyze::report::Report::build(&trace, &Default::default(), "defaults").unwrap();
    assert!(r.cycle.is_none());
}

#[test]
fn the_advice_names_a_stop_that_ran_out_its_timeout_in_the_shutdown_before() {
    let (_tmp, boot) = log_dir(true);
    fs::write(
        boot.parent().unwrap().join("a/shutdown/systemd-stops.log"),
        "# bootprint events 1\n100100000000 unit_stopping unit=bp-slowstop.service\n\
         104000000000 unit_failed unit=bp-slowstop.service result=timeout\n\
         104100000000 unit_stopped unit=bp-slowstop.service result=done\n\
         104200000000 unit_stopping unit=quick.service\n\
         104300000000 unit_stopped unit=quick.service result=done\n",
    )
    .unwrap();
    let trace = trace::Trace::open(&boot).unwrap();
    let r = analyze::report::Report::build(&trace, &Default::default(), "defaults").unwrap();
    let f: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.id == "stop-timeout" || f.id == "slow-stop")
        .collect();
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].id, "stop-timeout");
    assert!(
        f[0].title.contains("unit bp-slowstop.service"),
        "{}",
        f[0].title
    );
    assert!((f[0].gain_s.unwrap() - 4.0).abs() < 1e-6);
    assert!(f[0].fix.contains("TimeoutStopSec"), "{}", f[0].fix);
    // Its evidence is in the boot before's uptime: the shutdown began at 100 s.
    assert!((f[0].evidence[0].from_s - 100.1).abs() < 1e-6);
}

/// A slow unmount is said once, as unmounting (not also as a slow stop), and a slow sync
/// after the save with the dirty data it wrote; short ones are not findings.
#[test]
fn the_advice_names_slow_unmounting_and_a_slow_sync() {
    let (_tmp, boot) = log_dir(true);
    let shutdown = boot.parent().unwrap().join("a/shutdown");
    fs::write(
        shutdown.join("systemd-stops.log"),
        "# bootprint events 1\n100100000000 unit_stopping unit=srv-nfs.mount\n\
         103100000000 unit_stopped unit=srv-nfs.mount result=done\n\
         103200000000 unit_stopping unit=quick.service\n\
         103300000000 unit_stopped unit=quick.service result=done\n",
    )
    .unwrap();
    let sync = |ms: u64| {
        format!(
            "# bootprint events 1\n105000000000 shutdown_sync ms={ms} dirty_kb=204800 \
             writeback_kb=0 after_dirty_kb=0 after_writeback_kb=0 written_kb=210000\n"
        )
    };
    fs::write(shutdown.join("sync.log"), sync(2500)).unwrap();
    let findings = |ids: &[&str]| {
        let trace = trace::Trace::open(&boot).unwrap();
        let r = analyze::report::Report::build(&trace, &Default::default(), "defaults").unwrap();
        r.findings
            .into_iter()
            .filter(|f| ids.contains(&f.id.as_str()))
            .collect::<Vec<_>>()
    };
    let f = findings(&["slow-unmount", "slow-sync", "slow-stop"]);
    let ids: Vec<&str> = f.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["slow-unmount", "slow-sync"], "{f:?}");
    assert!(
        f[0].title.contains("3.0 s") && f[0].title.contains("srv-nfs.mount"),
        "{}",
        f[0].title
    );
    assert!(f[0].fix.contains("_netdev"), "{}", f[0].fix);
    assert_eq!(f[0].evidence[0].what, "srv-nfs.mount");
    assert!((f[0].evidence[0].from_s - 100.1).abs() < 1e-6);
    assert!(
        f[1].title.contains("2.5 s, writing 200.0 MiB"),
        "{}",
        f[1].title
    );
    assert!(
        f[1].fix.contains("vm.dirty_background_bytes"),
        "{}",
        f[1].fix
    );
    assert!((f[1].evidence[0].from_s - 105.0).abs() < 1e-6);
    // Under the thresholds: nothing.
    fs::write(shutdown.join("sync.log"), sync(300)).unwrap();
    fs::write(
        shutdown.join("systemd-stops.log"),
        "# bootprint events 1\n100100000000 unit_stopping unit=srv-nfs.mount\n\
         100600000000 unit_stopped unit=srv-nfs.mount result=done\n",
    )
    .unwrap();
    assert!(findings(&["slow-unmount", "slow-sync"]).is_empty());
}
