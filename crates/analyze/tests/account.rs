//! The login's account of a real systemd boot (tests/data/testbed-systemd.tgz): the
//! segments follow one another from the kernel's start to the getty, at the marks the
//! trace holds, and the getty's wait for the job queue shows (`Type=idle`).

use std::path::PathBuf;

fn report(name: &str) -> analyze::report::Report {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let trace = trace::Trace::open(&dir).unwrap();
    analyze::report::Report::build(&trace, &Default::default(), "defaults").unwrap()
}

#[test]
fn every_second_to_the_login_of_a_systemd_boot() {
    let r = report("testbed-systemd.tgz");
    let a = r
        .account
        .expect("a systemd boot with a login has an account");
    assert_eq!(a.login, "text_login");
    assert!((a.login_s - 27.287).abs() < 0.001, "{}", a.login_s);
    let names: Vec<&str> = a.segments.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "kernel",
            "initramfs",
            "to_init",
            "systemd_start",
            "generators",
            "units",
            "login_wait"
        ]
    );
    // One after the other, from 0 to the login.
    assert_eq!(a.segments[0].from_s, 0.0);
    for w in a.segments.windows(2) {
        assert_eq!(w[0].to_s, w[1].from_s, "{w:?}");
    }
    assert_eq!(a.segments.last().unwrap().to_s, a.login_s);
    let sum: f64 = a.segments.iter().map(|s| s.seconds()).sum();
    assert!((sum - a.login_s).abs() < 1e-9);
    let seg = |n: &str| a.segments.iter().find(|s| s.name == n).unwrap().clone();
    // The kernel log's `Run /init` at 3.498885 s and the root's mount at 6.334219 s.
    assert!((seg("kernel").to_s - 3.498885).abs() < 1e-6);
    assert!((seg("initramfs").to_s - 6.334219).abs() < 1e-6);
    // bootprint-boot exec'd systemd at 6.794650136 s (`init_exec`).
    assert!((seg("to_init").to_s - 6.794650).abs() < 1e-6);
    // systemd-analyze put getty@tty1.service at 13.594 s after userspace (6.939949 s); the
    // prompt came 6.75 s later: the getty is Type=idle.
    assert!(
        (seg("units").to_s - (6.939949 + 13.594)).abs() < 0.002,
        "{:?}",
        seg("units")
    );
    assert!(seg("login_wait").seconds() > 6.0, "{:?}", seg("login_wait"));
    // The chain as systemd-analyze critical-chain printed it in that boot (13 units).
    let chain: Vec<&str> = a.chain.iter().map(|c| c.unit.as_str()).collect();
    assert_eq!(chain.len(), 13, "{chain:?}");
    assert_eq!(chain.first(), Some(&"-.slice"));
    assert_eq!(chain.last(), Some(&"getty@tty1.service"));
    assert!(a.chain.iter().all(|c| c.waited_s >= 0.0 && c.took_s >= 0.0));
    // CPU: systemd's share is part of the whole; the top list leaves it out.
    assert!(a.systemd_cpu_s > 0.0 && a.systemd_cpu_s < a.cpu_s);
    assert!(a.top_cpu.iter().all(|u| u.pid != 1));
    assert!(a.top_cpu.windows(2).all(|w| w[0].cpu_s >= w[1].cpu_s));
}

#[test]
fn no_account_without_systemd() {
    assert!(report("testbed-sysvinit.tgz").account.is_none());
}

/// The getty's wait is advice (`idle-getty`): its figures, the units still starting while it
/// waited, and the gain it estimates.
#[test]
fn the_getty_held_by_the_job_queue_is_a_finding() {
    let r = report("testbed-systemd.tgz");
    let a = r.account.as_ref().unwrap();
    let wait = a.segments.iter().find(|s| s.name == "login_wait").unwrap();
    let f = r
        .findings
        .iter()
        .find(|f| f.id == "idle-getty")
        .expect("an idle-getty finding");
    assert!(f.title.contains("getty@tty1.service"), "{}", f.title);
    assert_eq!(f.evidence.len(), 1);
    let e = &f.evidence[0];
    assert_eq!((e.from_s, e.to_s), (wait.from_s, wait.to_s));
    assert!(e.detail.contains("still starting then"), "{}", e.detail);
    let gain = f.gain_s.unwrap();
    assert!((gain - (wait.seconds() - 0.2)).abs() < 1e-9, "{gain}");
    assert!(f.fix.contains("Type=simple"), "{}", f.fix);
}
