//! The hand-made desktop trace in `tests/fixtures/desktop-trace` (see tests/fixtures/README.md):
//! the session's start and desktop ready from the recorder's events, the same computed from the
//! samples without them, none (with a note) when the recorder gave up, the session's processes,
//! the `desktop_s` budget and the diff of two desktop boots.

use std::path::{Path, PathBuf};

use analyze::budget::{phases, Budgets, PhaseId};
use analyze::{analyze, BootModel};
use trace::Trace;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/desktop-trace")
}

fn model_of(dir: &Path) -> BootModel {
    analyze(&Trace::open(dir).unwrap()).unwrap()
}

/// A copy of the fixture whose events.log has `edit` applied, in a temporary directory.
fn copy_with_events(edit: impl Fn(&str) -> String) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(fixture()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), tmp.path().join(e.file_name())).unwrap();
    }
    let ev = std::fs::read_to_string(fixture().join("events.log")).unwrap();
    std::fs::write(tmp.path().join("events.log"), edit(&ev)).unwrap();
    tmp
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

fn session_pids(m: &BootModel) -> Vec<u32> {
    let mut v: Vec<u32> = m
        .processes
        .iter()
        .filter(|p| p.session)
        .map(|p| p.pid)
        .collect();
    v.sort();
    v
}

#[test]
fn session_start_and_desktop_ready_from_the_events() {
    let m = model_of(&fixture());
    let ms = &m.milestones;
    let s = ms.session_start.as_ref().unwrap();
    let d = ms.desktop_ready.as_ref().unwrap();
    assert!(near(s.t_s, 20.0) && s.source == "event", "{s:?}");
    assert!(near(d.t_s, 26.0) && d.source == "event (idle)", "{d:?}");
    assert!(near(ms.desktop_start_s().unwrap(), 6.0));
    // Boot done is the boot's, not the session's.
    assert!(near(ms.boot_done.t_s, 12.0));
    // The session manager and its descendants; not the greeter, its worker, nor cron.
    assert_eq!(session_pids(&m), [500, 510, 520, 530, 531]);
    assert!(
        m.notes.iter().all(|n| !n.contains("desktop")),
        "{:?}",
        m.notes
    );
}

#[test]
fn without_the_events_both_are_computed_and_agree() {
    let tmp = copy_with_events(|ev| {
        ev.lines()
            .filter(|l| !l.contains("session_start") && !l.contains("desktop_ready"))
            .map(|l| format!("{l}\n"))
            .collect()
    });
    let m = model_of(tmp.path());
    let ms = &m.milestones;
    let s = ms.session_start.as_ref().unwrap();
    let d = ms.desktop_ready.as_ref().unwrap();
    assert!(near(s.t_s, 20.0), "{s:?}");
    assert_eq!(s.source, "process xfce4-session (500) after the greeter");
    // Busy until 26.0 s; the session's last process started at 23.0 s.
    assert!(near(d.t_s, 26.0), "{d:?}");
    assert_eq!(
        d.source,
        "computed: idle after the session's last process Web Content (531)"
    );
    assert_eq!(session_pids(&m), [500, 510, 520, 530, 531]);
    // The computed rule is also a check on the event in the fixture itself.
    let with_events = model_of(&fixture());
    let c = analyze::build::computed_desktop_ready(&with_events, &analyze::Options::default());
    assert!(near(c.unwrap().t_s, 26.0));
}

#[test]
fn without_a_greeter_the_session_manager_alone_starts_the_session() {
    // Without the greeter's event or process (LightDM's autologin starts none), the session
    // manager still marks the session's start, as the recorder does.
    let tmp = copy_with_events(|ev| {
        ev.lines()
            .filter(|l| !l.contains("milestone") && !l.contains("desktop_ready"))
            .map(|l| format!("{l}\n"))
            .collect()
    });
    std::fs::write(
        tmp.path().join("proc_ps.log"),
        std::fs::read_to_string(fixture().join("proc_ps.log"))
            .unwrap()
            .replace("(lightdm-gtk-gre)", "(some-greeter)"),
    )
    .unwrap();
    let m = model_of(tmp.path());
    assert_eq!(m.milestones.graphical_login, None);
    let s = m.milestones.session_start.as_ref().unwrap();
    assert!(near(s.t_s, 20.0), "{s:?}");
    assert_eq!(s.source, "process xfce4-session (500)");
    assert!(near(m.milestones.desktop_ready.as_ref().unwrap().t_s, 26.0));
    assert!(session_pids(&m).contains(&500));
}

#[test]
fn a_recorder_that_gave_up_gives_no_desktop_ready_and_says_why() {
    for (reason, says) in [
        ("timeout", "not idle within the recorder's limit"),
        ("terminated", "stopped (SIGTERM)"),
    ] {
        let tmp = copy_with_events(|ev| {
            ev.replace(
                "reason=idle settle_s=3 session",
                &format!("reason={reason} settle_s=3 session"),
            )
        });
        let m = model_of(tmp.path());
        assert!(m.milestones.session_start.is_some());
        assert_eq!(m.milestones.desktop_ready, None, "{reason}");
        assert_eq!(m.milestones.desktop_start_s(), None);
        assert!(
            m.notes
                .iter()
                .any(|n| n.contains(says) && n.contains("no desktop ready")),
            "{reason}: {:?}",
            m.notes
        );
    }
    let tmp = copy_with_events(|ev| {
        ev.lines()
            .filter(|l| !l.contains("session_start"))
            .map(|l| {
                let l = l.replace(
                    "desktop_ready reason=idle settle_s=3 session_pid=500",
                    "desktop_ready reason=no_session settle_s=3 waited_s=120",
                );
                format!("{l}\n")
            })
            .collect()
    });
    let m = model_of(tmp.path());
    assert_eq!(m.milestones.desktop_ready, None);
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains("no desktop session started within 120 s")),
        "{:?}",
        m.notes
    );
}

#[test]
fn the_desktop_budget_runs_from_the_session_start() {
    let m = model_of(&fixture());
    let p = phases(&m, &Budgets::default());
    let d = p.iter().find(|p| p.id == PhaseId::Desktop).unwrap();
    assert!(near(d.from_s, 20.0) && near(d.to_s, 26.0) && near(d.duration_s, 6.0));
    assert!(near(d.budget_s, 2.0) && near(d.over_s, 4.0));
    assert!(d.blame.iter().any(|u| u.pid == 510), "{:?}", d.blame);
    // The phase before it is untouched: login to done still ends at boot done.
    let done = p.iter().find(|p| p.id == PhaseId::Done).unwrap();
    assert!(near(done.to_s, 12.0));
    let b = Budgets::from_toml("[budget]\ndesktop_s = 7\n", "b.toml").unwrap();
    assert_eq!((b.desktop_s, b.done_s), (7.0, 2.0));
    let p = phases(&m, &b);
    let d = p.iter().find(|p| p.id == PhaseId::Desktop).unwrap();
    assert!(near(d.over_s, 0.0) && d.blame.is_empty());
    // No session, no desktop phase.
    let mini = model_of(&fixture().join("../mini-trace"));
    assert!(phases(&mini, &Budgets::default())
        .iter()
        .all(|p| p.id != PhaseId::Desktop));
}

#[test]
fn the_diff_compares_the_desktop_milestones() {
    let a = model_of(&fixture());
    let tmp =
        copy_with_events(|ev| ev.replace("26000000000 desktop_ready", "28500000000 desktop_ready"));
    let b = model_of(tmp.path());
    let d = analyze::diff::diff(&a, &b);
    let names: Vec<&str> = d.milestones.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        &names[names.len() - 3..],
        ["boot_done", "session_start", "desktop_ready"]
    );
    let dr = d.milestones.last().unwrap();
    assert_eq!((dr.a_s, dr.b_s), (Some(26.0), Some(28.5)));
    let ph = d.phases.iter().find(|p| p.name == "desktop start").unwrap();
    assert!(near(ph.delta_s.unwrap(), 2.5));
    // Two boots without a session: no desktop rows at all.
    let mini = model_of(&fixture().join("../mini-trace"));
    let d = analyze::diff::diff(&mini, &mini);
    assert!(d.milestones.iter().all(|p| p.name != "desktop_ready"));
    assert!(d.phases.iter().all(|p| p.name != "desktop start"));
}
