//! The boot path's readahead decisions on real files (root: the pack must be root's): what
//! `prepare` plans from the configuration, the pack and the state file; what
//! `Session::finish` adds to the history, and when readahead switches itself off.

use std::fs;
use std::path::Path;

use readahead::pack::{Entry, Header, Pack, Range, RootId};
use readahead::state::{BootKind, BootRecord, State, Verdict};
use readahead::system;
use record::config::Config;
use record::readahead::{
    fork_initramfs_process, prepare, prepare_at, InitramfsFiles, InitramfsReplay, Milestones,
    Paths, Plan, Session,
};
use trace::Event;

/// What the initramfs's /init does (`start_in_initramfs`), with the real root at `/` here
/// and the configuration `c`: fork the process that decides, notes and replays.
fn start_like_init(files: &InitramfsFiles, c: &Config) -> String {
    let (said, moves_done) = fork_initramfs_process(Path::new("/"), &at(files), || c.clone());
    // No moves here: done at once.
    drop(moves_done);
    said
}

/// The system's paths, with the initramfs's files where `files` says.
fn at(files: &InitramfsFiles) -> Paths {
    Paths {
        initramfs: files.clone(),
        ..Paths::system()
    }
}

fn our_root() -> RootId {
    let paths = system::Paths::default();
    let mi = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let mounts = system::parse_mountinfo(&mi, "mountinfo").unwrap();
    system::root_id(&paths, system::root_mount(&mounts))
}

fn config_in(d: &Path) -> Config {
    Config {
        readahead: true,
        readahead_pack: d.join("readahead.pack"),
        readahead_state: d.join("readahead.state"),
        ..Config::default()
    }
}

/// A valid pack of one real file in `d`, learned on this root filesystem.
fn write_pack(d: &Path, c: &Config) {
    let f = d.join("data");
    fs::write(&f, vec![1u8; 64 * 1024]).unwrap();
    let md = fs::metadata(&f).unwrap();
    let pack = Pack {
        header: Header {
            created_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
            kernel_release: sys::kernel_release().unwrap_or_default(),
            root: our_root(),
            rotational: false,
            relocated: false,
            disk_bound: false,
            budget_bytes: 1 << 20,
            metadata: Vec::new(),
        },
        entries: vec![Entry::of_file(
            f.clone(),
            &md,
            vec![Range {
                offset: 0,
                len: 64 * 1024,
            }],
        )],
    };
    pack.write_file(&c.readahead_pack).unwrap();
}

fn rec(kind: BootKind, login: f64) -> BootRecord {
    BootRecord {
        unix_s: 1,
        kind,
        login_s: Some(login),
        done_s: None,
    }
}

fn save(c: &Config, boots: &[BootRecord]) {
    let mut st = State::default();
    for b in boots {
        st.push(b.clone());
    }
    st.save(&c.readahead_state).unwrap();
}

fn kinds(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}

fn is_root() -> bool {
    sys::euid() == 0
}

#[test]
fn plans_from_config_pack_and_state() {
    if !is_root() {
        testkit::skip("needs root (a pack must be root's)");
        return;
    }
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let mut c = config_in(d);
    c.readahead = false;
    assert!(matches!(prepare(&c), Plan::Off));
    c.readahead = true;
    match prepare(&c) {
        Plan::Learn(why) => assert_eq!(why, "io", "no pack yet"),
        other => panic!("expected to learn, got {other:?}"),
    }
    write_pack(d, &c);
    if !our_root().matches(&our_root()) {
        testkit::skip("this root filesystem has no identity to match a pack (the rest)");
        return;
    }
    // After the learning boot: replay.
    save(&c, &[rec(BootKind::Learn, 30.0)]);
    let plan = prepare(&c);
    assert!(matches!(plan, Plan::Replay(_)), "{plan:?}");
    let mut events = vec![];
    let session = Session::start(plan, &c, &mut events);
    let seen = Milestones {
        login_ns: Some(20_000_000_000),
        done_ns: Some(25_500_000_000),
    };
    session.finish(
        &mut events,
        &c,
        &sys::kernel_release().unwrap_or_default(),
        seen,
    );
    // A fresh pack, same kernel, nothing stale, nothing missed: kept (no readahead_relearn).
    let k = kinds(&events);
    assert_eq!(
        k,
        [
            "readahead_replay_start",
            "readahead_replay",
            "readahead_hit",
            "readahead_history"
        ],
        "{events:?}"
    );
    let replay = &events[1];
    assert!(replay
        .fields
        .iter()
        .any(|(k, v)| k == "bytes" && v == "65536"));
    let st = State::load(&c.readahead_state).unwrap();
    assert_eq!(st.boots.len(), 2);
    assert_eq!(st.boots[1].kind, BootKind::Replay);
    assert_eq!(st.boots[1].login_s, Some(20.0));
    assert_eq!(st.boots[1].done_s, Some(25.5));
    // Then a comparison boot: the pack is kept, not replayed.
    assert!(matches!(prepare(&c), Plan::Control));
    assert!(c.readahead_pack.exists());
    // compare_every = 0: never compare.
    let never = Config {
        readahead_compare_every: 0,
        ..c.clone()
    };
    assert!(matches!(prepare(&never), Plan::Replay(_)));
    // Another kernel: the replay boot removes the pack so the next one learns.
    save(&c, &[rec(BootKind::Learn, 30.0)]);
    let mut events = vec![];
    Session::start(prepare(&c), &c, &mut events).finish(&mut events, &c, "other-kernel", seen);
    let relearn = events
        .iter()
        .find(|e| e.kind == "readahead_relearn")
        .unwrap();
    assert_eq!(
        relearn.fields[0],
        ("reason".to_string(), "kernel".to_string())
    );
    assert!(!c.readahead_pack.exists());
    write_pack(d, &c);
    // Switched off by itself: nothing.
    let mut st = State::load(&c.readahead_state).unwrap();
    st.verdict = Verdict::Off {
        unix_s: 5,
        reason: "slower".into(),
    };
    st.save(&c.readahead_state).unwrap();
    match prepare(&c) {
        Plan::SwitchedOff(r) => assert_eq!(r, "slower"),
        other => panic!("expected switched off, got {other:?}"),
    }
}

#[test]
fn switches_itself_off_when_replay_is_not_faster() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let c = config_in(d);
    let history = [
        rec(BootKind::Learn, 40.0),
        rec(BootKind::Replay, 30.0),
        rec(BootKind::Control, 29.0),
        rec(BootKind::Replay, 31.0),
        rec(BootKind::Control, 29.5),
        rec(BootKind::Replay, 30.5),
    ];
    save(&c, &history);
    let mut events = vec![];
    let session = Session::start(Plan::Control, &c, &mut events);
    let seen = Milestones {
        login_ns: Some(29_200_000_000),
        done_ns: None,
    };
    session.finish(&mut events, &c, "any", seen);
    assert_eq!(
        kinds(&events),
        ["readahead_control", "readahead_history", "readahead_off"]
    );
    let st = State::load(&c.readahead_state).unwrap();
    assert_eq!(st.boots.len(), history.len() + 1);
    assert_eq!(st.boots.last().unwrap().kind, BootKind::Control);
    match &st.verdict {
        Verdict::Off { reason, .. } => {
            assert!(reason.contains("with replay 30.500 s"), "{reason}");
            assert!(reason.contains("without 29.200 s"), "{reason}");
        }
        other => panic!("expected off, got {other:?}"),
    }

    // The same history where replay is faster keeps it on.
    let faster: Vec<BootRecord> = history
        .iter()
        .map(|b| match b.kind {
            BootKind::Replay => rec(BootKind::Replay, 20.0),
            _ => b.clone(),
        })
        .collect();
    save(&c, &faster);
    let mut events = vec![];
    Session::start(Plan::Control, &c, &mut events).finish(&mut events, &c, "any", seen);
    assert_eq!(kinds(&events), ["readahead_control", "readahead_history"]);
    assert_eq!(
        State::load(&c.readahead_state).unwrap().verdict,
        Verdict::Auto
    );

    // A state file that does not parse is replaced, with a warning.
    fs::write(&c.readahead_state, "version 1\nboot x\n").unwrap();
    let mut events = vec![];
    Session::start(Plan::Control, &c, &mut events).finish(&mut events, &c, "any", seen);
    assert_eq!(
        kinds(&events),
        ["readahead_control", "warning", "readahead_history"]
    );
    let what = &events[1].fields[0].1;
    assert!(what.contains("readahead.state:2: expected"), "{what}");
    assert_eq!(State::load(&c.readahead_state).unwrap().boots.len(), 1);

    // The module loader compared on this boot: readahead's figures are set aside.
    let mut events = vec![];
    let mut session = Session::start(Plan::Control, &c, &mut events);
    session.set_aside("the module loader compared on this boot");
    session.finish(&mut events, &c, "any", seen);
    let h = events
        .iter()
        .find(|e| e.kind == "readahead_history")
        .unwrap();
    assert_eq!(h.get("counted"), Some("0"));
    assert_eq!(State::load(&c.readahead_state).unwrap().boots.len(), 1);
}

#[test]
fn a_replay_the_initramfs_started_is_taken_over() {
    if !is_root() {
        testkit::skip("needs root (a pack must be root's)");
        return;
    }
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let c = config_in(d);
    write_pack(d, &c);
    if !our_root().matches(&our_root()) {
        testkit::skip("this root filesystem has no identity to match a pack");
        return;
    }
    save(&c, &[rec(BootKind::Learn, 30.0)]);
    // What the initramfs's /init does, with the real root at `/` here: fork the process
    // that decides, notes and replays.
    let files = InitramfsFiles {
        pid: d.join("pid"),
        note: d.join("note"),
        report: d.join("report"),
    };
    let before_ns = sys::boottime_ns();
    let said = start_like_init(&files, &c);
    let pid: i32 = fs::read_to_string(&files.pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(said, format!("deciding in pid {pid}"));
    let plan = prepare_at(&c, &at(&files));
    assert!(matches!(plan, Plan::Replay(_)), "{plan:?}");
    let note =
        InitramfsReplay::parse(&fs::read_to_string(&files.note).unwrap(), &files.note).unwrap();
    assert_eq!(
        (note.pid, note.report.as_path()),
        (pid, files.report.as_path())
    );
    assert_eq!(
        InitramfsReplay::parse(&note.to_text(), &files.note).unwrap(),
        note
    );
    let mut events = vec![];
    let session = Session::start(plan, &c, &mut events);
    assert_eq!(events[0].kind, "readahead_replay_start");
    assert!(
        events[0].t_ns >= before_ns,
        "the initramfs process's start time"
    );
    assert_eq!(events[0].get("from"), Some("initramfs"));
    assert_eq!(events[0].get("pid"), Some(pid.to_string().as_str()));
    let seen = Milestones {
        login_ns: Some(20_000_000_000),
        done_ns: None,
    };
    session.finish(
        &mut events,
        &c,
        &sys::kernel_release().unwrap_or_default(),
        seen,
    );
    let replay = events
        .iter()
        .find(|e| e.kind == "readahead_replay")
        .unwrap_or_else(|| panic!("no readahead_replay: {events:?}"));
    assert_eq!(replay.get("files"), Some("1"), "{replay:?}");
    assert_eq!(replay.get("bytes"), Some("65536"), "{replay:?}");
    let _ = sys::waitpid(pid);

    // A damaged note: the recorder starts its own replay.
    save(&c, &[rec(BootKind::Learn, 30.0)]);
    fs::write(&files.note, "bootprint-initramfs-replay 1\npid x\n").unwrap();
    match prepare_at(&c, &at(&files)) {
        Plan::Replay(r) => {
            let mut events = vec![];
            let s = Session::start(Plan::Replay(r), &c, &mut events);
            assert_eq!(events[0].get("from"), None);
            s.finish(
                &mut events,
                &c,
                &sys::kernel_release().unwrap_or_default(),
                seen,
            );
        }
        other => panic!("expected our own replay, got {other:?}"),
    }
}

#[test]
fn without_a_pack_the_initramfs_process_leaves_learning_to_the_recorder() {
    if !is_root() {
        testkit::skip("needs root (a pack must be root's)");
        return;
    }
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let mut c = config_in(d);
    let files = InitramfsFiles {
        pid: d.join("pid"),
        note: d.join("note"),
        report: d.join("report"),
    };
    // Off: the process ends without a note; the recorder does nothing.
    c.readahead = false;
    let said = start_like_init(&files, &c);
    let pid: i32 = said
        .strip_prefix("deciding in pid ")
        .unwrap()
        .parse()
        .unwrap();
    sys::waitpid(pid).unwrap();
    assert!(!files.note.exists());
    assert!(matches!(prepare_at(&c, &at(&files)), Plan::Off));
    c.readahead = true;
    let said = start_like_init(&files, &c);
    assert!(said.starts_with("deciding in pid "), "{said}");
    // The recorder waits for it to end and, finding no note, learns.
    match prepare_at(&c, &at(&files)) {
        Plan::Learn(why) => assert_eq!(why, "io"),
        other => panic!("expected to learn, got {other:?}"),
    }
    assert!(!files.note.exists());
}

#[test]
fn the_initramfs_note_names_what_is_wrong() {
    let p = Path::new("/run/bootprint/readahead-replay");
    let err = |t: &str| InitramfsReplay::parse(t, p).unwrap_err();
    assert_eq!(
        err("something else\n"),
        "/run/bootprint/readahead-replay:1: expected \"bootprint-initramfs-replay 1\""
    );
    assert_eq!(
        err("bootprint-initramfs-replay 1\npid 12\nstarted_ns soon\n"),
        "/run/bootprint/readahead-replay:3: expected a number after started_ns, found \"soon\""
    );
    assert_eq!(
        err("bootprint-initramfs-replay 1\npid 1\nstarted_ns 5\nreport /r\n"),
        "/run/bootprint/readahead-replay:4: expected a process id above 1, found 1"
    );
    assert_eq!(
        err("bootprint-initramfs-replay 1\npid 7\nstarted_ns 5\nroot_dev 254\n"),
        "/run/bootprint/readahead-replay:4: expected MAJOR:MINOR after root_dev, found \"254\""
    );
    assert_eq!(
        err("bootprint-initramfs-replay 1\npid 7\nstarted_ns 5\n"),
        "/run/bootprint/readahead-replay:3: expected a report line with an absolute path"
    );
    let ok = InitramfsReplay::parse(
        "bootprint-initramfs-replay 1\npid 7\nstarted_ns 5\nroot_dev 254:0\nread_at_start 9\nreport /run/x\nlater_key 1\n",
        p,
    )
    .unwrap();
    assert_eq!(
        (ok.pid, ok.root_dev, ok.read_at_start),
        (7, Some((254, 0)), Some(9))
    );
}
