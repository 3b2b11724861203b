//! bootprint's reading of a real systemd boot's `systemd-units.log` against systemd-analyze's
//! reading of the same boot (tests/fixtures/systemd-units, README there).

use analyze::services::{ServicesView, Source};
use analyze::systemd_analyze::{check_blame, check_chain, parse_blame};

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/systemd-units")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn view() -> ServicesView {
    let (v, problems) = ServicesView::from_units_text(&fixture("systemd-units.log"), "f");
    assert!(problems.is_empty(), "{problems:?}");
    v
}

#[test]
fn blame_agrees_with_systemd_analyze() {
    let v = view();
    assert_eq!(v.source, Source::Systemd);
    let checks = check_blame(&v, &fixture("systemd-analyze-blame.txt"), 10, 0.10);
    for c in &checks {
        assert!(c.ok, "{}", c.what);
    }
    assert_eq!(checks.len(), 11);
    // Every unit systemd-analyze blames, but the one still activating at boot done, has the
    // same time to the millisecond.
    for (unit, us) in parse_blame(&fixture("systemd-analyze-blame.txt")) {
        let Some(s) = v.spans.iter().find(|s| s.script == unit) else {
            panic!("{unit} is not in the view");
        };
        if unit == "exim4.service" {
            assert_eq!(s.outcome, "running");
            continue;
        }
        let ours = s.duration_ns() / 1000;
        assert!(ours.abs_diff(us) <= 1000, "{unit}: {ours} µs against {us}");
    }
}

#[test]
fn the_chain_to_the_login_agrees_with_systemd_analyze() {
    let v = view();
    assert_eq!(v.login_unit.as_deref(), Some("getty@tty1.service"));
    let checks = check_chain(
        &v,
        &fixture("systemd-analyze-critical-chain-getty@tty1.txt"),
        0.10,
    );
    for c in &checks {
        assert!(c.ok, "{}", c.what);
    }
    assert_eq!(checks.len(), 14, "the chain and each of its 13 links");
    let chain: Vec<&str> = v
        .critical_chain()
        .iter()
        .map(|s| s.script.as_str())
        .collect();
    assert_eq!(chain[0], "-.slice");
    assert_eq!(chain[chain.len() - 2], "systemd-user-sessions.service");
    // Another chain is not this one.
    let other = check_chain(
        &v,
        &fixture("systemd-analyze-critical-chain-serial-getty@ttyS0.txt"),
        0.10,
    );
    assert!(!other[0].ok, "serial-getty's chain starts at serial-getty");
}

/// systemd's timestamps are CLOCK_MONOTONIC, the trace's CLOCK_BOOTTIME; the file says the
/// offset was 0, and the recorder's own clock agrees: the getty's process started (the
/// `text_login` milestone, from /proc) within half a second of systemd's activation of
/// getty@tty1, and cron's exec (fanotify/connector event) within half a second after
/// cron.service began activating.
#[test]
fn the_clocks_agree() {
    let (units, _) = trace::units::parse(&fixture("systemd-units.log"), "f");
    assert_eq!(units.boottime_minus_monotonic_ns, Some(0));
    let events = trace::events::parse(&fixture("events.log")).unwrap();
    let at = |kind: &str, key: &str, value: &str| {
        events
            .iter()
            .find(|e| e.kind == kind && e.get(key) == Some(value))
            .map(|e| e.t_ns)
            .unwrap()
    };
    let unit = |id: &str| units.units.iter().find(|u| u.id == id).unwrap();
    let login = at("milestone", "name", "text_login");
    let getty = units.boottime_ns(unit("getty@tty1.service").activating_us);
    assert!(login.abs_diff(getty) < 500_000_000, "{login} {getty}");
    let cron_exec = at("exec", "path", "/usr/sbin/cron");
    let cron = units.boottime_ns(unit("cron.service").activating_us);
    assert!(
        cron_exec >= cron && cron_exec - cron < 500_000_000,
        "{cron_exec} {cron}"
    );
}

#[test]
fn late_units_are_advised_with_the_unit_and_the_drop_in() {
    let v = view();
    let findings = analyze::advise::late_units(&v, 2);
    assert_eq!(findings.len(), 1);
    let f = &findings[0];
    assert_eq!(f.id, "late-unit");
    let units: Vec<&str> = f.evidence.iter().map(|e| e.what.as_str()).collect();
    // ssh, nginx and postgresql's cluster ran before the getty; cups and avahi are socket
    // or path activated, and left alone.
    for u in [
        "unit ssh.service",
        "unit nginx.service",
        "unit postgresql@15-main.service",
    ] {
        assert!(units.contains(&u), "{units:?}");
    }
    assert!(
        !units
            .iter()
            .any(|u| u.contains("cups") || u.contains("avahi")),
        "{units:?}"
    );
    assert!(
        f.fix.contains("bootprint.late=1") && f.fix.contains(".timer"),
        "{}",
        f.fix
    );
    assert!(f.gain_s.is_some_and(|g| g > 0.0));
}
