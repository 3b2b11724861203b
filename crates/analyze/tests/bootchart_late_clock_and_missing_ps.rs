//! bootchart2 logs as today's users bring them. A log whose sample clock started
//! long after the kernel's (tests/fixtures/bootchart2-late-clock, hand-made: see the fixtures'
//! README) is placed on the kernel's clock; one without `proc_ps.log` shows CPU and disk and
//! says what is missing.

use std::path::PathBuf;

use analyze::analyze;
use trace::Trace;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn a_late_sample_clock_is_detected_and_every_sample_moved() {
    let m = analyze(&Trace::open(&fixture("bootchart2-late-clock")).unwrap()).unwrap();
    // hwclock, modprobe and getty, born while sampling, started 9.95, 9.98 and 10.00 s after
    // the sample that first saw them: the sample clock started 10.00 s late.
    assert_eq!(m.clock_offset_s, Some(10.0));
    let note = m
        .notes
        .iter()
        .find(|n| n.starts_with("sample clock offset"))
        .expect("the offset is said");
    assert!(note.contains("each of the 3 processes"), "{note}");
    assert!(note.contains("10.00 s"), "{note}");
    // Nothing starts after its first sighting any more: no process is clamped.
    assert_eq!(m.started_after_first_sample, 0);
    assert!(!m.notes.iter().any(|n| n.contains("clocks disagree")));
    // The processes that were there at the first sample keep their own start times.
    assert!(near(m.process(1).unwrap().start_s, 0.05));
    assert!(near(m.process(50).unwrap().start_s, 9.0));
    assert!(near(m.process(60).unwrap().start_s, 10.2));
    assert!(near(m.process(200).unwrap().start_s, 11.3));
    // The samples moved with them: 10.5 s to 11.5 s.
    assert!(near(m.first_sample_s, 10.5));
    assert!(near(m.last_sample_s, 11.5));
    assert!(near(m.cpu[0].t_s, 10.7), "{:?}", m.cpu[0]);
    // The login is the getty's start on the kernel's clock, not the sample clock's 1.3 s.
    assert!(near(m.milestones.text_login.as_ref().unwrap().t_s, 11.3));
}

#[test]
fn clocks_that_agree_within_a_sample_are_not_moved() {
    for dir in ["bootchart2-clock-skew", "bootchart2-example1", "mini-trace"] {
        let m = analyze(&Trace::open(&fixture(dir)).unwrap()).unwrap();
        assert_eq!(m.clock_offset_s, None, "{dir}");
    }
}

#[test]
fn without_proc_ps_the_cpu_and_disk_are_shown_and_the_gap_said() {
    let tmp = tempfile::tempdir().unwrap();
    for f in ["header", "proc_stat.log", "proc_diskstats.log"] {
        std::fs::copy(fixture("bootchart2-example1").join(f), tmp.path().join(f)).unwrap();
    }
    let m = analyze(&Trace::open(tmp.path()).unwrap()).unwrap();
    assert!(m.processes.is_empty());
    // The example's 141 CPU samples.
    assert_eq!(m.cpu.len(), 141);
    assert!(!m.disk.is_empty());
    assert!(
        m.notes
            .iter()
            .any(|n| n.starts_with("proc_ps.log is missing")),
        "{:?}",
        m.notes
    );
    assert!(m.milestones.text_login.is_none());
}
