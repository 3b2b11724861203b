//! `analyze::diff` on two real test-bed boots of one image, and on bootchart2's example log
//! against a copy with a planted difference (an `ifup` asleep from 8 to 12 s, and `hald`
//! removed).

mod common;

use analyze::diff::diff;
use common::{example, planted, ps_line, testbed, testbed2};

fn model(p: &std::path::Path) -> analyze::BootModel {
    analyze::analyze(&trace::Trace::open(p).unwrap()).unwrap()
}

#[test]
fn planted_difference_is_found() {
    let dir_tmp = planted(|name, t, lines| {
        if name == "proc_ps.log" {
            if (800..=1200).contains(&t) {
                lines.push(ps_line(9001, "ifup", 1, 800));
            }
            lines.retain(|l| !l.contains("(hald)"));
        }
    });
    let dir = dir_tmp.path();
    let a = model(&example());
    let b = model(dir);
    let d = diff(&a, &b);
    assert_eq!(d.appeared.len(), 1, "{:?}", d.appeared);
    let ifup = &d.appeared[0];
    assert_eq!(ifup.name, "ifup");
    let runs = ifup.b.unwrap();
    assert_eq!(runs.count, 1);
    assert!((runs.life_s - 4.0).abs() < 0.25, "{runs:?}");
    assert!((runs.first_start_s - 8.0).abs() < 0.01);
    assert!(
        d.disappeared.iter().any(|p| p.name == "hald"),
        "{:?}",
        d.disappeared
    );
    assert!(d.disappeared.iter().all(|p| p.b.is_none()));
    // Nothing else moved: milestones are the same.
    for m in &d.milestones {
        assert!(m.delta_s.unwrap_or(0.0).abs() < 1e-9, "{m:?}");
    }
}

#[test]
fn two_real_boots() {
    let a = model(&testbed2());
    let b = model(&testbed());
    let d = diff(&a, &b);
    let login = d
        .milestones
        .iter()
        .find(|m| m.name == "text_login")
        .unwrap();
    let (la, lb) = (login.a_s.unwrap(), login.b_s.unwrap());
    assert!((login.delta_s.unwrap() - (lb - la)).abs() < 1e-9);
    assert!(
        (la - 25.57).abs() < 0.01 && (lb - 25.64).abs() < 0.01,
        "{login:?}"
    );
    // The two boots' services are the same; bootlogs took 0.76 s in A and 0.08 s in B, the
    // largest change.
    assert_eq!(d.services[0].name, "bootlogs", "{:?}", &d.services[..3]);
    assert!(
        (d.services[0].delta_s + 0.68).abs() < 0.02,
        "{:?}",
        d.services[0]
    );
    assert!(d
        .services
        .iter()
        .all(|s| s.a_start_s.is_some() && s.b_start_s.is_some()));
    // Sorted by change.
    assert!(d.changed.windows(2).all(|w| w[0].change_s >= w[1].change_s));
    assert!(d.phases.iter().any(|p| p.name == "to text login"));
}
