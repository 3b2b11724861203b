//! Budgets and the boot-done view over the hand-made mini-trace (tests/fixtures/README.md:
//! kernel 4.2 s, init exec 5.1 s, text login 12.0 s, boot done 14.0 s; udevd, pid 200, uses
//! 30 ticks of 100 per 0.5 s busy interval from 5.2 s to 12.0 s) and a real test-bed trace.

use std::path::PathBuf;

use analyze::budget::{phases, worst, Budgets, PhaseId};
use analyze::settle::settle;

fn mini() -> analyze::BootModel {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/mini-trace");
    analyze::analyze(&trace::Trace::open(&dir).unwrap()).unwrap()
}

#[test]
fn phases_against_default_budgets() {
    let m = mini();
    let p = phases(&m, &Budgets::default());
    let ids: Vec<PhaseId> = p.iter().map(|x| x.id).collect();
    assert_eq!(
        ids,
        [
            PhaseId::Kernel,
            PhaseId::Early,
            PhaseId::TextLogin,
            PhaseId::Done
        ]
    );
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    assert!(
        close(p[0].duration_s, 4.2) && close(p[0].over_s, 3.2),
        "{:?}",
        p[0]
    );
    assert!(
        close(p[1].duration_s, 0.9) && p[1].over_s == 0.0,
        "{:?}",
        p[1]
    );
    assert!(close(p[2].from_s, 5.1) && close(p[2].to_s, 12.0));
    assert!(close(p[2].over_s, 5.9), "{:?}", p[2]);
    assert!(close(p[3].duration_s, 2.0) && p[3].over_s == 0.0);
    assert!(p[3].blame.is_empty(), "a phase within budget blames nobody");
    let w = worst(&p).unwrap();
    assert_eq!(w.id, PhaseId::TextLogin);
    // udevd is the heaviest inside 5.1..12.0: 0.3 s of CPU per busy 0.5 s interval.
    let top = &w.blame[0];
    assert_eq!(top.pid, 200, "{:?}", w.blame);
    assert!(top.cpu_s > 3.5 && top.cpu_s < 4.5, "{top:?}");
    assert!(
        top.blocked_s > 1.0,
        "udevd is in state D every other busy sample: {top:?}"
    );
}

#[test]
fn budgets_from_the_config_change_the_verdict() {
    let m = mini();
    let b = Budgets::from_toml("[budget]\nkernel_s = 5\ntext_login_s = 7\n", "t.toml").unwrap();
    let p = phases(&m, &b);
    assert_eq!(p[0].over_s, 0.0);
    assert_eq!(p[2].over_s, 0.0);
    assert!(worst(&p).is_none());
}

#[test]
fn boot_done_view_of_the_mini_trace() {
    let m = mini();
    let s = settle(&m);
    assert_eq!(s.login_s, Some(12.0));
    // Settling until 14.0 s at 30% busy, then idle: the samples say idle from 14.0 s.
    assert!((s.idle_from_s - 14.0).abs() < 1e-6, "{s:?}");
    assert!(s.idle_to_end && s.idle_found, "{s:?}");
    assert!((s.tail_s.unwrap() - 2.0).abs() < 1e-6);
    // The settling CPU of 12..14 s is in /proc/stat only: no process's counters grow there
    // (udevd's work ends at 12.0 s), so nothing is blamed.
    assert!(s.busy.is_empty(), "{:?}", s.busy);
    assert!(
        s.started.is_empty(),
        "nothing starts between 12 and 14: {:?}",
        s.started
    );
}

#[test]
fn a_boot_that_never_settles_says_so() {
    // bootchart2's example log: busy (disk and CPU) until its last sample at 30.39 s.
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bootchart2-example1");
    let m = analyze::analyze(&trace::Trace::open(&dir).unwrap()).unwrap();
    let s = settle(&m);
    assert!(!s.idle_found, "{s:?}");
    assert_eq!(s.idle_source, "last sample");
    assert!((s.login_s.unwrap() - 18.58).abs() < 0.01);
    assert!(!s.busy.is_empty());
    // Xorg starts after the getty and is among the busiest after the login.
    assert!(s.busy.iter().any(|u| u.name == "Xorg"), "{:?}", s.busy);
}

#[test]
fn services_from_command_lines_and_from_rc_links() {
    // The test-bed boot has command lines: /bin/sh /etc/init.d/udev start, pid 267, 9.82 s.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/testbed-sysvinit.tgz");
    let m = analyze::analyze(&trace::Trace::open(&dir).unwrap()).unwrap();
    let s = analyze::services::services(&m);
    let udev = s.iter().find(|x| x.name == "udev").unwrap();
    assert_eq!((udev.pid, udev.action.as_deref()), (267, Some("start")));
    assert!((udev.start_s - 9.82).abs() < 0.01 && (udev.end_s - 13.88).abs() < 0.01);
    // Its forks (same command line) are not services of their own.
    assert_eq!(s.iter().filter(|x| x.name == "udev").count(), 1);
    // bootchart2's example has no cmdline2.log: rc's S10udev link shows in comm.
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bootchart2-example1");
    let m = analyze::analyze(&trace::Trace::open(&dir).unwrap()).unwrap();
    let s = analyze::services::services(&m);
    let udev = s.iter().find(|x| x.name == "udev").unwrap();
    assert_eq!(udev.pid, 3017);
    assert!((udev.start_s - 13.05).abs() < 0.01, "{udev:?}");
    assert!(s.windows(2).all(|w| w[0].start_s <= w[1].start_s));
}
