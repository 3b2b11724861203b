//! Preload for real on this machine: a "session" (a child shell reading files) is learned
//! with real fanotify (and the filemap tracepoints where the kernel has them), the files are
//! dropped from the page cache with posix_fadvise(DONTNEED), prefetched, and mincore says
//! whether their pages are cached again. Needs root (fanotify filesystem marks); without it
//! the tests say so and pass (under `CI=true` they fail: testkit's rule).
//!
//! Only the test's own files are dropped from the page cache, so the rest of the machine is
//! not disturbed.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use preload::config::Config;
use preload::model::Model;
use preload::run::{self, RunOptions};
use readahead::learn::{AddedPages, LearnConfig};
use readahead::state::{BootKind, State};
use readahead::sys;

const FILES: usize = 8;
const FILE_SIZE: u64 = 1 << 20;
const PAGE: u64 = 4096;

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn root_or_skip() -> bool {
    if ::sys::euid() != 0 {
        testkit::skip("needs root for fanotify filesystem marks");
        return false;
    }
    true
}

fn setup(dir: &Path) -> Vec<PathBuf> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..FILES)
        .map(|i| {
            let p = dir.join(format!("f{i}.bin"));
            let mut buf = vec![0u8; FILE_SIZE as usize];
            for b in buf.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.copy_from_slice(&x.to_le_bytes()[..b.len()]);
            }
            let mut f = File::create(&p).unwrap();
            f.write_all(&buf).unwrap();
            f.sync_all().unwrap();
            p
        })
        .collect()
}

fn drop_cache(files: &[PathBuf]) {
    for p in files {
        sys::fadvise_dontneed(&File::open(p).unwrap(), 0, 0).unwrap();
        assert_eq!(resident(p), 0, "{p:?} still cached after DONTNEED");
    }
}

/// Bytes of `p` in the page cache.
fn resident(p: &Path) -> u64 {
    let f = File::open(p).unwrap();
    let pages = sys::mincore(&f, f.metadata().unwrap().len()).unwrap();
    pages.iter().filter(|&&r| r).count() as u64 * PAGE
}

/// A "session": a shell started now that waits half a second (so the learner is watching),
/// then reads `full` whole and the first 32 KiB of `part`.
fn session(full: &[&PathBuf], part: Option<&PathBuf>) -> std::process::Child {
    let mut script = String::from("sleep 0.5; cat");
    for p in full {
        script.push_str(&format!(" '{}'", p.display()));
    }
    script.push_str(" > /dev/null");
    if let Some(p) = part {
        script.push_str(&format!(
            "; dd if='{}' bs=4096 count=8 status=none > /dev/null",
            p.display()
        ));
    }
    Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .spawn()
        .unwrap()
}

fn config(state: &Path) -> Config {
    Config {
        enabled: true,
        dir: state.to_path_buf(),
        window: Duration::from_secs(20),
        quiet: Duration::from_millis(1500),
        // This machine's disk is shared with whatever else runs here (builds, other test
        // binaries): a prefetch that yields to it could wait out its window. Yielding is
        // tested alone on a disk of its own (crates/readahead/tests/yield_io.rs).
        yield_quiet: None,
        ..Config::default()
    }
}

/// Where learning takes the pages from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pages {
    /// The access tracepoints (6.10+), else mincore.
    Access,
    /// The page-cache additions (what preload uses before 6.10), else mincore.
    Added,
    /// mincore when the window ends.
    Mincore,
}

fn options(files_dir: &Path, pages: Pages) -> RunOptions {
    RunOptions {
        learn: LearnConfig {
            only_under: vec![files_dir.to_path_buf()],
            read_ahead_kb: None,
            tracefs: (pages != Pages::Mincore).then(|| PathBuf::from(readahead::filemap::TRACEFS)),
            added_pages: if pages == Pages::Added {
                AddedPages::Always
            } else {
                AddedPages::Never
            },
            ..LearnConfig::default()
        },
        wait_settled: true,
        mem_available: None,
    }
}

fn weights(m: &Model) -> Vec<(String, f64)> {
    m.files
        .iter()
        .map(|f| {
            (
                f.entry.path.file_name().unwrap().to_string_lossy().into(),
                f.weight,
            )
        })
        .collect()
}

/// With the filemap tracepoints where the kernel has them (else this is the mincore run
/// again).
#[test]
fn learn_with_tracepoints_then_prefetch_within_the_budget() {
    learn_two_logins_then_prefetch_within_the_budget(Pages::Access);
}

/// With the page-cache additions, as preload learns before 6.10 (the test beds' 6.1).
#[test]
fn learn_with_added_pages_then_prefetch_within_the_budget() {
    learn_two_logins_then_prefetch_within_the_budget(Pages::Added);
}

/// With mincore when the window ends, as on kernels without tracefs.
#[test]
fn learn_with_mincore_then_prefetch_within_the_budget() {
    learn_two_logins_then_prefetch_within_the_budget(Pages::Mincore);
}

/// Two logins learned for real (the second prefetching beside learning, whose own opens must
/// not count), then the model prefetched: every page it holds is cached again; a budget
/// stops the prefetch at the budget, in weight order; a changed file is skipped.
fn learn_two_logins_then_prefetch_within_the_budget(pages: Pages) {
    if !root_or_skip() {
        return;
    }
    // The machine's DAMON reclaim would page out what was just read (testkit::reclaim).
    let _reclaim = testkit::reclaim::PauseReclaim::new();
    // One at a time: both mark the same filesystems and time their quiet windows.
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let files_dir = tmp.path().join("files");
    fs::create_dir(&files_dir).unwrap();
    let state_dir = tmp.path().join("state");
    let f = setup(&files_dir);
    drop_cache(&f);
    let mut cfg = config(&state_dir);
    let opts = options(&files_dir, pages);

    // Login 1, at a greeter: no model yet, so the greeter stage decides to learn (and
    // prefetches nothing), and the session stage learns. f0..f5 whole, 32 KiB of f6, f7
    // never.
    let g = run::greeter(&cfg, &opts).unwrap();
    assert_eq!(g.kind, Some(BootKind::Learn));
    assert!(g.prefetch.is_none());
    let mut child = session(&[&f[0], &f[1], &f[2], &f[3], &f[4], &f[5]], Some(&f[6]));
    let r1 = run::session(&cfg, &opts, false).expect("learning needs fanotify");
    assert!(child.wait().unwrap().success());
    assert_eq!(r1.kind, Some(BootKind::Learn));
    assert!(r1.prefetch.is_none());
    let l1 = r1.learned.as_ref().unwrap();
    eprintln!("login 1 learned: {l1:?}");
    assert_eq!(l1.files, 7, "{l1:?}");
    assert_eq!(l1.stopped_by, "quiet", "{l1:?}");
    let m = Model::load(&cfg.model_path()).unwrap().unwrap();
    assert_eq!(m.files.len(), 7, "{:?}", weights(&m));
    assert!(m.files.iter().all(|x| x.weight == 1.0));
    let f6 = m.files.iter().find(|x| x.entry.path == f[6]).unwrap();
    if l1.page_source == "filemap" {
        // Exact: the 8 pages dd read, nothing the kernel read ahead of it.
        assert_eq!(f6.entry.bytes(), 8 * PAGE, "{:?}", f6.entry.ranges);
        for x in &m.files[..] {
            if x.entry.path != f[6] {
                assert_eq!(x.entry.bytes(), FILE_SIZE, "{:?}", x.entry.path);
            }
        }
    } else {
        // What dd read and what the kernel read ahead of it.
        assert!(f6.entry.bytes() >= 8 * PAGE && f6.entry.bytes() < FILE_SIZE);
    }
    if pages == Pages::Added {
        // The tracepoint is in every kernel with tracefs: this must not fall back.
        assert_eq!(l1.page_source, "added", "{l1:?}");
        for x in &m.files[..] {
            if x.entry.path != f[6] {
                assert_eq!(x.entry.bytes(), FILE_SIZE, "{:?}", x.entry.path);
            }
        }
    }

    // Login 2, at a greeter: a model, so the greeter stage prefetches, and the session
    // stage prefetches again (all 7 files) while it learns a session that reads only
    // f0..f2. Preload's own opens are not learned: f3..f6 fade to 0.5.
    drop_cache(&f);
    let g = run::greeter(&cfg, &opts).unwrap();
    assert_eq!(g.kind, Some(BootKind::Replay));
    // As if the login came before the greeter's prefetch reached f3..f6: the session stage
    // reads them from disk while it learns, and those reads are its own, not the session's.
    drop_cache(&f[3..]);
    let mut child = session(&[&f[0], &f[1], &f[2]], None);
    let r2 = run::session(&cfg, &opts, false).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(r2.kind, Some(BootKind::Replay));
    let pf = r2.prefetch.as_ref().unwrap();
    assert_eq!(pf.files_read, 7, "{pf:?}");
    assert_eq!(pf.bytes_requested, m.bytes(), "{pf:?}");
    assert_eq!(r2.learned.as_ref().unwrap().files, 3);
    if pages == Pages::Added {
        // The prefetch's own reads are not the session's misses, so f0..f2 (prefetched,
        // then opened) are kept with their ranges rather than learned from misses.
        let u = r2.update.unwrap();
        assert_eq!(u.kept + u.refreshed, 3, "{u:?}");
        assert_eq!((u.faded, u.added), (4, 0), "{u:?}");
    }
    let m = Model::load(&cfg.model_path()).unwrap().unwrap();
    let w = weights(&m);
    assert_eq!(
        w,
        [
            ("f0.bin".to_string(), 1.5),
            ("f1.bin".into(), 1.5),
            ("f2.bin".into(), 1.5),
            ("f3.bin".into(), 0.5),
            ("f4.bin".into(), 0.5),
            ("f5.bin".into(), 0.5),
            ("f6.bin".into(), 0.5),
        ]
    );
    let st = State::load_for(&cfg.state_path(), &preload::PRELOAD).unwrap();
    let kinds: Vec<BootKind> = st.boots.iter().map(|b| b.kind).collect();
    assert_eq!(kinds, [BootKind::Learn, BootKind::Replay]);
    assert!(!cfg.pending_path().exists());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(&state_dir).unwrap().permissions().mode() & 0o777,
        0o700,
        "the model names the user's files: its directory is private"
    );

    // The greeter's prefetch (compare_every 0: always prefetch): every page of the model is
    // cached again; f7, never read by a session, is not.
    drop_cache(&f);
    cfg.compare_every = 0;
    let g = run::greeter(&cfg, &opts).unwrap();
    assert_eq!(g.kind, Some(BootKind::Replay));
    let pf = g.prefetch.as_ref().unwrap();
    assert_eq!(pf.bytes_requested, m.bytes(), "{pf:?}");
    for x in &m.files {
        assert_eq!(
            resident(&x.entry.path),
            x.entry.bytes(),
            "{:?}",
            x.entry.path
        );
    }
    assert_eq!(resident(&f[7]), 0);
    assert_eq!(
        fs::read_to_string(cfg.pending_path())
            .unwrap()
            .split(' ')
            .next(),
        Some("prefetch")
    );

    prefetch_stops_at_the_budget_and_skips_changed_files(&m, &f);
    an_autologin_prefetches_and_learns_nothing(&cfg, &opts, &m, &f);
}

/// A budget stops the prefetch in weight order; a file changed since it was learned (its
/// mtime) is skipped, not read.
fn prefetch_stops_at_the_budget_and_skips_changed_files(m: &Model, f: &[PathBuf]) {
    // A budget of 3 MiB + 16 KiB: f0..f2 (the heaviest) whole, the first 4 pages of f3, then
    // it stops.
    drop_cache(f);
    let budget = 3 * FILE_SIZE + 4 * PAGE;
    let pf = run::prefetch(m, budget, Duration::from_secs(20), true, None, true);
    assert_eq!(pf.bytes_requested, budget, "{pf:?}");
    assert_eq!(pf.files_read, 4, "{pf:?}");
    for p in &f[..3] {
        assert_eq!(resident(p), FILE_SIZE, "{p:?}");
    }
    assert_eq!(resident(&f[3]), 4 * PAGE);
    for p in &f[4..] {
        assert_eq!(resident(p), 0, "{p:?} read past the budget");
    }

    // A file changed since it was learned (its mtime) is skipped, not read.
    drop_cache(f);
    File::options()
        .write(true)
        .open(&f[1])
        .unwrap()
        .set_modified(SystemTime::now())
        .unwrap();
    let pf = run::prefetch(m, u64::MAX, Duration::from_secs(20), true, None, true);
    assert_eq!(
        (pf.files_read, pf.skipped_changed, pf.files_skipped),
        (6, 1, 1),
        "{pf:?}"
    );
    assert_eq!(resident(&f[1]), 0);
    assert_eq!(resident(&f[0]), FILE_SIZE);
}

/// An autologin (no greeter ran, so no decision is pending): with a model and a history
/// that would prefetch, the session stage does nothing: no prefetch, no login in the
/// history, the model as it was.
fn an_autologin_prefetches_and_learns_nothing(
    cfg: &Config,
    opts: &RunOptions,
    m: &Model,
    f: &[PathBuf],
) {
    drop_cache(f);
    let history = |cfg: &Config| State::load_for(&cfg.state_path(), &preload::PRELOAD).unwrap();
    assert_eq!(
        run::next_login(cfg, &history(cfg), Some(m)),
        run::NextLogin::Prefetch
    );
    let _ = fs::remove_file(cfg.pending_path());
    let (logins, model) = (
        history(cfg).boots.len(),
        fs::read(cfg.model_path()).unwrap(),
    );
    let mut child = session(&[&f[0]], None);
    let r3 = run::session(cfg, opts, false).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(r3.kind, None);
    assert_eq!(r3.skipped, Some(run::AUTOLOGIN_SKIPPED));
    assert!(r3.prefetch.is_none() && r3.learned.is_none(), "{r3:?}");
    assert_eq!(resident(&f[2]), 0, "nothing prefetched");
    assert_eq!(history(cfg).boots.len(), logins);
    assert_eq!(fs::read(cfg.model_path()).unwrap(), model);
}

/// The window bounds learning when the session never goes quiet for `quiet`: here nothing
/// happens at all and the quiet time is longer than the window.
#[test]
fn learning_stops_at_the_window() {
    if !root_or_skip() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let opts = options(tmp.path(), Pages::Mincore);
    let t0 = std::time::Instant::now();
    let (learned, summary) =
        run::learn_window(&opts.learn, Duration::from_secs(1), Duration::from_secs(30)).unwrap();
    let took = t0.elapsed();
    assert_eq!(summary.stopped_by, "window");
    assert!(learned.files.is_empty());
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(5),
        "{took:?}"
    );
}
