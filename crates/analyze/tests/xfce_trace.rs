//! A real desktop boot (tests/fixtures/xfce-trace, see tests/fixtures/README.md): the test
//! bed's Xfce session by LightDM's autologin under sysvinit, Firefox ESR started from the
//! session, recorded by bootprint-boot and thinned by the fixture's trim.py. The recorder's
//! session start and desktop ready, the session's processes, and the same milestones computed
//! from the samples when the events are removed.

use std::path::{Path, PathBuf};

use analyze::{analyze, BootModel};
use trace::Trace;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/xfce-trace")
}

fn model_of(dir: &Path) -> BootModel {
    analyze(&Trace::open(dir).unwrap()).unwrap()
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() < 0.005
}

fn session_comms(m: &BootModel) -> Vec<String> {
    let mut v: Vec<String> = m
        .processes
        .iter()
        .filter(|p| p.session)
        .map(|p| p.name.clone())
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn the_recorders_session_and_desktop_ready() {
    let m = model_of(&fixture());
    let ms = &m.milestones;
    let s = ms.session_start.as_ref().unwrap();
    let d = ms.desktop_ready.as_ref().unwrap();
    assert!(near(s.t_s, 82.73) && s.source == "event", "{s:?}");
    assert!(near(d.t_s, 271.11) && d.source == "event (idle)", "{d:?}");
    assert!(near(ms.desktop_start_s().unwrap(), 188.38));
    // Autologin: no greeter, so no graphical login.
    assert!(ms.graphical_login.is_none());
    let comms = session_comms(&m);
    for c in [
        "xfce4-session",
        "xfwm4",
        "xfce4-panel",
        "xfdesktop",
        "firefox-esr",
    ] {
        assert!(
            comms.iter().any(|x| x == c),
            "{c} not in the session: {comms:?}"
        );
    }
    // Not the session: the X server LightDM started, the recorder, the getty.
    for c in ["Xorg", "bootprint-boot", "getty"] {
        assert!(
            !comms.iter().any(|x| x == c),
            "{c} in the session: {comms:?}"
        );
    }
}

#[test]
fn without_the_events_the_milestones_are_computed_near_the_recorders() {
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(fixture()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), tmp.path().join(e.file_name())).unwrap();
    }
    let ev = std::fs::read_to_string(fixture().join("events.log")).unwrap();
    let kept: String = ev
        .lines()
        .filter(|l| !l.contains("session_start") && !l.contains("desktop_ready"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(tmp.path().join("events.log"), kept).unwrap();
    let m = model_of(tmp.path());
    let ms = &m.milestones;
    let s = ms.session_start.as_ref().unwrap();
    let d = ms.desktop_ready.as_ref().unwrap();
    // The session manager's start, from its process (the samples keep its start time).
    assert!(near(s.t_s, 82.73), "{s:?}");
    assert!(s.source.contains("xfce4-session"), "{s:?}");
    // Computed by the idle rule from the samples (thinned to 1 s): within a few seconds of
    // the recorder's, which saw every 0.2 s.
    assert!(d.source.starts_with("computed"), "{d:?}");
    assert!((d.t_s - 271.11).abs() < 5.0, "{d:?}");
}
