//! `late::choose` on the graph of a real boot (the test bed's text image booted with
//! systemd 252; tests/fixtures/README.md says how the file was made), and on small graphs
//! that each make one rule fail if it were missing.

use systemd::late::{check_state, choose, from_state, to_state, Pins, State};
use systemd::show::{self, Unit};

fn graph() -> Vec<Unit> {
    show::parse(include_str!("fixtures/text-image-active.show")).unwrap()
}

#[test]
fn the_text_images_late_units() {
    let c = choose(&graph(), &Pins::default());
    assert_eq!(
        c.late,
        [
            "bootprint-plant.service",
            "cron.service",
            "exim4.service",
            "nginx.service",
            "postgresql.service",
            "postgresql@15-main.service",
            "ssh.service"
        ]
    );
    assert_eq!(
        c.login_units,
        ["getty@tty1.service", "serial-getty@ttyS0.service"]
    );
    let why = |u: &str| c.kept.get(u).cloned().unwrap_or_default();
    assert_eq!(
        why("avahi-daemon.service"),
        "started by avahi-daemon.socket on demand"
    );
    assert_eq!(why("rsyslog.service"), "started by syslog.socket on demand");
    assert!(why("rc-local.service").starts_with("on the path to the login"));
    assert!(why("systemd-user-sessions.service").starts_with("on the path to the login"));
    assert!(why("systemd-logind.service").contains("part of systemd"));
    // The state file round-trips, reasons as comments.
    let pins = Pins::default();
    let state = to_state(&c, 0x1234, &pins);
    assert_eq!(
        from_state(&state).unwrap(),
        State {
            late: c.late.clone(),
            units: 0x1234,
            pins,
        }
    );
    assert!(state.contains("# kept avahi-daemon.service: started by avahi-daemon.socket"));
}

#[test]
fn pins_move_units_both_ways() {
    let pins = Pins {
        late: vec!["avahi-daemon.service".into(), "no-such.service".into()],
        never_late: vec!["ssh.service".into(), "postgresql.service".into()],
    };
    let c = choose(&graph(), &pins);
    assert!(!c.late.contains(&"ssh.service".to_string()));
    assert_eq!(c.kept["ssh.service"], "needed by ssh.service (never_late)");
    // What a never-late unit needs stays early too.
    assert!(c.kept["postgresql.service"].contains("(never_late)"));
    assert!(!c.late.contains(&"postgresql@15-main.service".to_string()));
    // A pin does not override a socket: the socket would start it on demand anyway.
    assert!(c.kept["avahi-daemon.service"].starts_with("started by"));
    assert_eq!(c.kept["no-such.service"], "pinned late but not loaded");
}

fn unit(id: &str, deps: &[(&str, &str)]) -> Unit {
    let mut u = Unit {
        id: id.into(),
        names: vec![id.into()],
        load_state: "loaded".into(),
        active_state: "active".into(),
        default_dependencies: true,
        ..Unit::default()
    };
    for (k, v) in deps {
        u.deps.insert(
            k.to_string(),
            v.split_whitespace().map(String::from).collect(),
        );
    }
    u
}

#[test]
fn an_early_unit_that_waits_for_a_candidate_keeps_it_early() {
    let units = vec![
        unit("getty@tty1.service", &[("After", "basic.target")]),
        unit(
            "a.service",
            &[
                ("WantedBy", "multi-user.target"),
                ("Before", "b.service multi-user.target"),
            ],
        ),
        // b is started by its socket, so early; it is ordered after a: a must stay early.
        unit(
            "b.service",
            &[
                ("WantedBy", "multi-user.target"),
                ("After", "a.service"),
                ("TriggeredBy", "b.socket"),
            ],
        ),
        // c is wanted only by d, which is late: c goes late with it (also when the last
        // boot's bootprint-late.target wants it too: learning is stable).
        unit(
            "c.service",
            &[("WantedBy", "d.service bootprint-late.target")],
        ),
        unit(
            "bootprint-late.service",
            &[("WantedBy", "multi-user.target")],
        ),
        unit(
            "d.service",
            &[("WantedBy", "multi-user.target"), ("Wants", "c.service")],
        ),
        // e is on the path: the getty is ordered after it.
        unit(
            "e.service",
            &[
                ("WantedBy", "multi-user.target"),
                ("Before", "getty@tty1.service"),
            ],
        ),
    ];
    let mut units = units;
    units[0].deps.insert(
        "After".into(),
        vec!["basic.target".into(), "e.service".into()],
    );
    let c = choose(&units, &Pins::default());
    assert_eq!(c.late, ["c.service", "d.service"]);
    assert_eq!(c.kept["a.service"], "b.service waits for it or needs it");
    assert!(
        !c.kept.contains_key("bootprint-late.service"),
        "ours, never judged"
    );
    assert!(c.kept["e.service"].starts_with("on the path to the login"));
}

#[test]
fn a_bad_state_file_names_its_line() {
    const H: &str = "# bootprint systemd late units 2\nunits 00000000000000ff\n";
    let e = from_state(&format!("{H}cron.service\nrm -rf /\n")).unwrap_err();
    assert_eq!(e.line, 4);
    assert!(from_state("cron.service\n").is_err(), "no header");
    // Version 1 (no fingerprint, no pins): refused, so nothing is deferred until relearned.
    let e = from_state("# bootprint systemd late units 1\ncron.service\n").unwrap_err();
    assert_eq!(e.line, 1);
    let e = from_state("# bootprint systemd late units 2\ncron.service\n").unwrap_err();
    assert!(e.expected.contains("`units HEX`"), "{e:?}");
    for bad in [
        "units 12",
        "units 00000000000000ff",
        "pins sometimes x.service",
        "pins never_late ;",
    ] {
        let e = from_state(&format!("{H}{bad}\n")).unwrap_err();
        assert_eq!(e.line, 3, "{bad}");
    }
    let st = from_state(&format!(
        "{H}pins never_late ssh.service\npins late_units\n# kept x: y\n\nssh.service\n"
    ))
    .unwrap();
    assert_eq!(st.late, ["ssh.service"]);
    assert_eq!(
        (st.units, st.pins.never_late.as_slice()),
        (0xff, &["ssh.service".to_string()][..])
    );
}

fn state(late: &[&str], pins: &Pins) -> State {
    State {
        late: late.iter().map(|s| s.to_string()).collect(),
        units: 7,
        pins: pins.clone(),
    }
}

/// Defect 7 of the security issue: the generator deferred whatever the state listed. It
/// now refuses units learning always keeps early (the manager's, the login's, ours, the
/// pinned, the socket-activated), and defers nothing when the unit files or the pins changed
/// since learning.
#[test]
fn the_generator_rechecks_what_the_state_says() {
    let none = Pins::default();
    let no_trigger = |_: &str| false;
    let listed = [
        "dbus.service",
        "systemd-journald.service",
        "getty@tty1.service",
        "serial-getty@ttyS0.service",
        "systemd-remount-fs.service",
        "display-manager.service",
        "bootprint-late.service",
        "cron.service",
    ];
    let d = check_state(&state(&listed, &none), 7, &none, no_trigger).unwrap();
    assert_eq!(d.late, ["cron.service"]);
    assert_eq!(d.refused.len(), listed.len() - 1, "{:?}", d.refused);
    // A socket of the same name starts it on demand.
    let d = check_state(&state(&["avahi-daemon.service"], &none), 7, &none, |t| {
        t == "avahi-daemon.socket"
    })
    .unwrap();
    assert!(d.late.is_empty());
    assert_eq!(d.refused[0].1, "started by avahi-daemon.socket on demand");
    // `never_late = ["ssh.service"]` added after learning: nothing is deferred (what ssh needs
    // is known only to a new choice), until the next boot done learns again with the pin.
    let pinned = Pins {
        never_late: vec!["ssh.service".into()],
        late: vec![],
    };
    let e = check_state(
        &state(&["ssh.service", "cron.service"], &none),
        7,
        &pinned,
        no_trigger,
    )
    .unwrap_err();
    assert!(e.contains("pins changed"), "{e}");
    let d = check_state(
        &state(&["ssh.service", "cron.service"], &pinned),
        7,
        &pinned,
        no_trigger,
    )
    .unwrap();
    assert_eq!(d.late, ["cron.service"]);
    // A unit installed since learning (the fingerprint moved): nothing deferred.
    let e = check_state(&state(&["cron.service"], &none), 8, &none, no_trigger).unwrap_err();
    assert!(e.contains("unit files changed"), "{e}");
}
