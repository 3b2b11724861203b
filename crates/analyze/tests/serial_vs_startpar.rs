//! Two real test-bed boots of one image, the second with a difference planted on the kernel
//! command line: `concurrency=none` makes Debian's /etc/init.d/rc run the init scripts one
//! after another instead of through startpar (tests/data/testbed-startpar.tgz and
//! testbed-serial.tgz, recorded back to back on 2026-11-22; the image has exim4, postgresql,
//! nginx, cups and more, and reaches the getty after about 97 s under emulation).

use analyze::diff::diff;
use analyze::services::services;

fn data(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn model(name: &str) -> analyze::BootModel {
    analyze::analyze(&trace::Trace::open(&data(name)).unwrap()).unwrap()
}

/// The most `start` runs of init scripts at one moment (checkroot.sh runs `mountkernfs.sh
/// reload` inside itself, which is not parallelism).
fn max_parallel(m: &analyze::BootModel) -> usize {
    let mut s = services(m);
    s.retain(|x| x.action.as_deref() == Some("start"));
    s.iter()
        .map(|x| {
            s.iter()
                .filter(|y| y.start_s <= x.start_s + 1e-9 && y.end_s > x.start_s + 0.05)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn serial_boot_against_startpar() {
    let a = model("testbed-startpar.tgz");
    let b = model("testbed-serial.tgz");
    let d = diff(&a, &b);
    // startpar ran in A and not in B: the planted difference.
    assert!(
        d.disappeared.iter().any(|p| p.name.starts_with("startpar")),
        "{:?}",
        d.disappeared
    );
    assert!(d.appeared.iter().all(|p| !p.name.starts_with("startpar")));
    // The scripts run as rc links in B (comm `S02udev`) and as /etc/init.d scripts in A
    // (`udev`): they are matched, not reported as appeared and disappeared.
    for name in [
        "udev",
        "mountall.sh",
        "mountdevsubfs.sh",
        "checkroot.sh",
        "exim4",
    ] {
        assert!(
            d.appeared
                .iter()
                .chain(&d.disappeared)
                .all(|p| p.name != name),
            "{name} reported as appeared or disappeared"
        );
        assert!(
            d.services
                .iter()
                .any(|s| s.name == name && s.a_start_s.is_some() && s.b_start_s.is_some()),
            "service {name} in both boots"
        );
    }
    // Serial: never two init scripts at once in B; startpar ran several in A.
    assert_eq!(max_parallel(&b), 1);
    assert!(max_parallel(&a) >= 3, "{}", max_parallel(&a));
    // The real init to the getty took longer serially.
    let phase = d.phases.iter().find(|p| p.name == "to text login").unwrap();
    assert!(phase.delta_s.unwrap() > 3.0, "{phase:?}");
}
