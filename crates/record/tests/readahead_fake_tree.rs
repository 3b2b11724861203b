//! The boot path's readahead orchestration on a fake tree, without root: `/proc`, `/sys`,
//! `/dev/disk/by-uuid`, the initramfs's files and the pack's owner are `Paths`, so what it
//! decides (off, learn, compare, switched off, take over the initramfs's replay), the pack it
//! finds or refuses, and what it writes at boot done (events, the history) run here as any
//! user.

use std::fs;
use std::path::{Path, PathBuf};

use readahead::pack::{Entry, Header, Pack, Range};
use readahead::replay::ReplayStats;
use readahead::state::{BootKind, BootRecord, State, Verdict};
use readahead::system;
use record::config::Config;
use record::readahead::{
    prepare_at, InitramfsFiles, InitramfsReplay, Milestones, Paths, Plan, Session,
};
use trace::Event;

/// The fake root's device, as its mountinfo line says.
const DEV: (u32, u32) = (8, 1);
/// The initramfs's replaying process, as the fake /proc has it.
const PID: i32 = 4242;

/// A fake tree in `d`: /proc with the root's mount and its read count, empty /sys and
/// by-uuid, a root directory, the initramfs's files; packs are trusted from our own uid.
fn fake_tree(d: &Path) -> Paths {
    let proc = d.join("proc");
    fs::create_dir_all(proc.join("self")).unwrap();
    fs::write(
        proc.join("self/mountinfo"),
        format!(
            "22 1 {}:{} / / rw,relatime shared:1 - ext4 rootdev rw\n\
             23 22 0:21 / /proc rw,relatime - proc proc rw\n",
            DEV.0, DEV.1
        ),
    )
    .unwrap();
    diskstats(&proc, 1000);
    for sub in ["sys", "by-uuid", "root", "run"] {
        fs::create_dir_all(d.join(sub)).unwrap();
    }
    Paths {
        system: system::Paths {
            proc,
            sys: d.join("sys"),
            by_uuid: d.join("by-uuid"),
            root: d.join("root"),
        },
        initramfs: InitramfsFiles {
            pid: d.join("run/readahead-initramfs.pid"),
            note: d.join("run/readahead-replay"),
            report: d.join("run/readahead-replay.stats"),
        },
        pack_owner: sys::euid(),
    }
}

/// /proc/diskstats with `sectors` (512 bytes) read from the root device.
fn diskstats(proc: &Path, sectors: u64) {
    fs::write(
        proc.join("diskstats"),
        format!(
            "   7       0 loop0 1 0 2 0 0 0 0 0 0 0 0\n   {}       {} sda1 10 0 {sectors} 5 0 0 0 0 0 7 5\n",
            DEV.0, DEV.1
        ),
    )
    .unwrap();
}

/// A process `pid` in the fake /proc, running (`S`).
fn fake_process(proc: &Path, pid: i32) {
    fs::create_dir_all(proc.join(pid.to_string())).unwrap();
    fs::write(
        proc.join(format!("{pid}/stat")),
        format!("{pid} (bootprint-boot) S 1 {pid} {pid} 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n"),
    )
    .unwrap();
}

fn config_in(d: &Path) -> Config {
    Config {
        readahead: true,
        readahead_pack: d.join("readahead.pack"),
        readahead_state: d.join("readahead.state"),
        ..Config::default()
    }
}

/// A valid pack of one real file, learned on the fake root's file system.
fn write_pack(d: &Path, c: &Config, paths: &Paths) {
    let f = d.join("data");
    fs::write(&f, vec![1u8; 64 * 1024]).unwrap();
    let md = fs::metadata(&f).unwrap();
    let mi = fs::read_to_string(paths.system.proc.join("self/mountinfo")).unwrap();
    let mounts = system::parse_mountinfo(&mi, "mountinfo").unwrap();
    let pack = Pack {
        header: Header {
            created_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
            kernel_release: sys::kernel_release().unwrap_or_default(),
            root: system::root_id(&paths.system, system::root_mount(&mounts)),
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

fn save(c: &Config, boots: &[BootKind]) {
    let mut st = State::default();
    for &kind in boots {
        st.push(BootRecord {
            unix_s: 1,
            kind,
            login_s: Some(20.0),
            done_s: None,
        });
    }
    st.save(&c.readahead_state).unwrap();
}

fn find<'a>(events: &'a [Event], kind: &str) -> &'a Event {
    events
        .iter()
        .find(|e| e.kind == kind)
        .unwrap_or_else(|| panic!("no {kind} in {events:?}"))
}

fn field<'a>(e: &'a Event, key: &str) -> &'a str {
    e.fields
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {key} in {e:?}"))
}

#[test]
fn decides_from_the_fake_tree_and_refuses_a_pack_it_does_not_trust() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let paths = fake_tree(d);
    let mut c = config_in(d);
    c.readahead = false;
    assert!(matches!(prepare_at(&c, &paths), Plan::Off));
    c.readahead = true;
    match prepare_at(&c, &paths) {
        Plan::Learn(why) => assert_eq!(why, "io", "no pack yet"),
        other => panic!("expected to learn, got {other:?}"),
    }
    write_pack(d, &c, &paths);
    // Another owner's pack is refused, whatever it holds.
    let strict = Paths {
        pack_owner: sys::euid() + 1,
        ..paths.clone()
    };
    match prepare_at(&c, &strict) {
        Plan::Learn(why) => assert_eq!(why, "unsafe"),
        other => panic!("expected to refuse the pack, got {other:?}"),
    }
    // A root the pack was not learned on (another file system's fsid): refused as foreign.
    let elsewhere = Paths {
        system: system::Paths {
            root: PathBuf::from("/proc"),
            ..paths.system.clone()
        },
        ..paths.clone()
    };
    let fsid = |p: &Path| sys::statfs(p).map_or(0, |s| s.fsid);
    if fsid(&elsewhere.system.root) != fsid(&paths.system.root) {
        match prepare_at(&c, &elsewhere) {
            Plan::Learn(why) => assert_eq!(why, "foreign_root"),
            other => panic!("expected a foreign root, got {other:?}"),
        }
    }
    if sys::statfs(&paths.system.root).map_or(0, |s| s.fsid) == 0 {
        testkit::skip("the temp dir's file system has no fsid to match a pack by (the rest)");
        return;
    }
    // After replay boots and no comparison yet: the comparison boot, nothing started.
    save(&c, &[BootKind::Learn, BootKind::Replay]);
    assert!(matches!(prepare_at(&c, &paths), Plan::Control));
    // Switched off by its own verdict: said, and nothing read.
    let mut st = State::load(&c.readahead_state).unwrap();
    st.verdict = Verdict::Off {
        unix_s: 1,
        reason: "slower".into(),
    };
    st.save(&c.readahead_state).unwrap();
    match prepare_at(&c, &paths) {
        Plan::SwitchedOff(why) => assert_eq!(why, "slower"),
        other => panic!("expected switched off, got {other:?}"),
    }
}

#[test]
fn takes_over_the_initramfs_replay_and_writes_its_outcome() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let paths = fake_tree(d);
    if sys::statfs(&paths.system.root).map_or(0, |s| s.fsid) == 0 {
        testkit::skip("the temp dir's file system has no fsid to match a pack by");
        return;
    }
    let c = config_in(d);
    write_pack(d, &c, &paths);
    save(&c, &[BootKind::Learn]);
    // What the initramfs's process leaves: its pid (running, in the fake /proc) and its note.
    fake_process(&paths.system.proc, PID);
    fs::write(&paths.initramfs.pid, format!("{PID}\n")).unwrap();
    let started_ns = sys::boottime_ns();
    let note = InitramfsReplay {
        pid: PID,
        started_ns,
        root_dev: Some(DEV),
        read_at_start: Some(1000 * 512),
        report: paths.initramfs.report.clone(),
    };
    fs::write(&paths.initramfs.note, note.to_text()).unwrap();
    let plan = prepare_at(&c, &paths);
    assert!(matches!(plan, Plan::Replay(_)), "{plan:?}");
    let mut events = vec![];
    let session = Session::start(plan, &c, &mut events);
    let start = find(&events, "readahead_replay_start");
    assert_eq!(start.t_ns, started_ns);
    assert_eq!(field(start, "from"), "initramfs");
    assert_eq!(field(start, "pid"), PID.to_string());
    assert_eq!(field(start, "files"), "1");

    // The replay ends: its figures in the report, the process gone; the boot read 64 KiB
    // the replay asked for and 8 KiB more from the root device.
    let stats = ReplayStats {
        bytes_requested: 64 * 1024,
        ranges: 1,
        files_read: 1,
        ..ReplayStats::default()
    };
    fs::write(&paths.initramfs.report, format!("{}\n", stats.to_line())).unwrap();
    fs::remove_dir_all(paths.system.proc.join(PID.to_string())).unwrap();
    diskstats(&paths.system.proc, 1000 + (64 + 8) * 2);
    let seen = Milestones {
        login_ns: Some(20_000_000_000),
        done_ns: Some(25_000_000_000),
    };
    session.finish(
        &mut events,
        &c,
        &sys::kernel_release().unwrap_or_default(),
        seen,
    );
    let replay = find(&events, "readahead_replay");
    assert_eq!(field(replay, "bytes"), "65536");
    assert_eq!(field(replay, "missed_bytes"), "8192");
    find(&events, "readahead_hit");
    let history = find(&events, "readahead_history");
    assert_eq!(field(history, "kind"), "replay");
    assert_eq!(field(history, "boots"), "2");
    // The history on disk has this boot.
    let st = State::load(&c.readahead_state).unwrap();
    let last = st.boots.last().unwrap();
    assert_eq!((last.kind, last.login_s), (BootKind::Replay, Some(20.0)));
}
