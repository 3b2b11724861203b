//! One login: decide what it does (learn, prefetch, or go without to compare), prefetch the
//! model's files at idle I/O priority within the budget, learn what the session's start
//! reads, fold it into the model, and add the login to the history.
//!
//! Two stages, because the best time to prefetch is while the greeter waits for a person and
//! the only time to learn is when the session starts: [`greeter`] decides and prefetches,
//! leaving the decision in `pending`; [`session`] takes it (after an autologin, where no
//! greeter ran, the login only learns), prefetches again on a `prefetch` login (pages the
//! greeter's run already cached cost no I/O; it may have been cut short by the login), and
//! learns while the session starts. Learning and prefetching use readahead's code
//! ([`readahead::learn`], [`readahead::replay`]); preload's own opens are not learned.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use readahead::filemap::PageSource;
use readahead::learn::{self, AddedPages, LearnConfig, Learned, Learner, PackOptions};
use readahead::pack::{Header, Pack};
use readahead::replay::{self, ReplayOptions, ReplayStats, YieldTo};
use readahead::state::{BootKind, BootRecord, State, Verdict};
use readahead::system;

use crate::config::Config;
use crate::model::{self, Model, UpdateStats};
use crate::PRELOAD;

/// A greeter's decision older than this is not the session's: the greeter waited all night,
/// or the machine was shut down at it.
pub const PENDING_MAX_AGE_S: u64 = 3600;

/// What the next login does, from the switch, the verdict, the model and the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextLogin {
    /// Preload is off in bootprint.toml.
    Off,
    /// It switched itself off.
    SwitchedOff,
    /// No model yet: learn only.
    Learn,
    /// Go without prefetch, to compare (and learn).
    Control,
    /// Prefetch the model (and learn).
    Prefetch,
}

impl NextLogin {
    /// The history's kind of such a login (`None`: nothing runs).
    pub fn kind(self) -> Option<BootKind> {
        match self {
            NextLogin::Off | NextLogin::SwitchedOff => None,
            NextLogin::Learn => Some(BootKind::Learn),
            NextLogin::Control => Some(BootKind::Control),
            NextLogin::Prefetch => Some(BootKind::Replay),
        }
    }
}

/// Decides the next login: off, switched off, learn (no model, or an empty one), or, with a
/// model, prefetch or compare as the history says ([`State::next_kind`], readahead's rule).
pub fn next_login(config: &Config, state: &State, model: Option<&Model>) -> NextLogin {
    if !config.enabled {
        return NextLogin::Off;
    }
    if let Verdict::Off { .. } = state.verdict {
        return NextLogin::SwitchedOff;
    }
    if model.is_none_or(|m| m.files.is_empty()) {
        return NextLogin::Learn;
    }
    match state.next_kind(config.compare_every) {
        BootKind::Control => NextLogin::Control,
        _ => NextLogin::Prefetch,
    }
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct RunReport {
    /// What the login was (`None`: preload is off or switched itself off; nothing ran).
    pub kind: Option<BootKind>,
    /// The byte budget (the configured maximum, cut by free memory).
    pub budget_bytes: u64,
    /// The prefetch's statistics, when it prefetched.
    pub prefetch: Option<ReplayStats>,
    /// What learning saw (files, events, where the pages came from), when it learned.
    pub learned: Option<LearnSummary>,
    /// How the model changed.
    pub update: Option<UpdateStats>,
    /// Why nothing ran though preload is on (an autologin: [`AUTOLOGIN_SKIPPED`]).
    pub skipped: Option<&'static str>,
    /// The model on disk was refused (too large, or not a model): why. It is learned anew.
    pub model_refused: Option<String>,
    /// Files and bytes in the model afterwards.
    pub model_files: usize,
    /// Bytes of the model's ranges afterwards.
    pub model_bytes: u64,
}

/// What learning one login saw.
#[derive(Debug, Clone, Default)]
pub struct LearnSummary {
    /// Files the session opened.
    pub files: usize,
    /// Of those, files with pages to keep.
    pub entries: usize,
    /// Bytes of their pages: what the login used (`filemap`, `mincore`) or read from disk
    /// (`added`).
    pub bytes: u64,
    /// fanotify events.
    pub events: u64,
    /// `filemap` or `mincore`.
    pub page_source: &'static str,
    /// Whether fanotify's queue overflowed (some files missed).
    pub overflowed: bool,
    /// How long it learned.
    pub duration: Duration,
    /// Why it stopped: `quiet` (no new file for `quiet_s`) or `window` (`window_s`).
    pub stopped_by: &'static str,
}

/// How a run learns and prefetches beyond the configuration (tests narrow it).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How to learn (readahead's learner). Its `ignore_pids` gets this process added.
    pub learn: LearnConfig,
    /// Wait until what the prefetch asked for is in the page cache (the statistics then say
    /// when it was, `settled_ns`).
    pub wait_settled: bool,
    /// `MemAvailable` to budget with; `None`: from `/proc/meminfo`.
    pub mem_available: Option<u64>,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            learn: LearnConfig {
                // A person's login is being timed: the root disk's readahead window is left
                // as it is (mincore then also keeps what the kernel read ahead of the
                // session's reads, which the next login would read too).
                read_ahead_kb: None,
                // Without the access tracepoints (before 6.10), the session's cache misses,
                // not mincore of every file it opened: mincore also counts what the boot or
                // the greeter had cached, which is cached at every login anyway.
                added_pages: AddedPages::WithoutAccessEvents,
                ..LearnConfig::default()
            },
            wait_settled: false,
            mem_available: None,
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn load_state(config: &Config) -> io::Result<State> {
    State::load_for(&config.state_path(), &PRELOAD)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
}

/// The model, or `None` with the reason when the file on disk is refused: a refused model
/// never stops the learning that replaces it.
fn load_model(config: &Config) -> (Option<Model>, Option<String>) {
    match Model::load(&config.model_path()) {
        Ok(m) => (m, None),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// The budget now: `budget_bytes`, at most `mem_share` of `MemAvailable`.
pub fn budget_now(config: &Config, mem_available: Option<u64>) -> u64 {
    let avail = mem_available.or_else(|| {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| model::mem_available(&t))
    });
    model::budget(config.budget_bytes, config.mem_share, avail)
}

/// Whether the root device rotates (one reading thread then, as readahead does).
fn root_rotational() -> bool {
    let paths = system::Paths::default();
    let mi = paths.proc.join("self/mountinfo");
    let mounts = std::fs::read_to_string(&mi)
        .ok()
        .and_then(|t| system::parse_mountinfo(&t, &mi.to_string_lossy()).ok())
        .unwrap_or_default();
    system::root_mount(&mounts)
        .and_then(|r| {
            std::fs::read_to_string(system::queue_file(
                &paths.sys,
                r.major,
                r.minor,
                "rotational",
            ))
            .ok()
            .and_then(|t| system::parse_rotational(&t))
        })
        .unwrap_or(false)
}

/// Prefetches the model's files, highest weight first, within `budget` bytes and `limit`
/// time, with readahead's replay (readahead(2) at idle I/O priority when `idle_io`; files
/// whose inode, size or mtime changed since they were learned are skipped and counted).
/// With `yield_to`, a piece is read only once the disk did no one else's I/O for a quiet
/// period, and the CPUs were not busy with others' work over it ([`readahead::yield_io`]):
/// the idle class alone does nothing under the `none` and `mq-deadline` schedulers, and a
/// prefetch that reads beside a login delays it, for the disk and for the CPU.
pub fn prefetch(
    m: &Model,
    budget: u64,
    limit: Duration,
    idle_io: bool,
    yield_to: Option<YieldTo>,
    wait_settled: bool,
) -> ReplayStats {
    let page = ::sys::page_size();
    let pack = Pack {
        header: Header {
            created_unix_s: m.updated_unix_s,
            rotational: root_rotational(),
            relocated: false,
            disk_bound: false,
            budget_bytes: budget,
            ..Header::default()
        },
        entries: m.prefetch_list(budget, page),
    };
    replay::replay(
        &pack,
        &ReplayOptions {
            threads: 2,
            time_limit: limit,
            idle_io,
            wait_settled,
            // The list is already cut at the budget; this is the replay's own guard.
            max_bytes: budget,
            yield_to_others: yield_to,
            // The model lists no metadata, and the login's paths are already cached.
            metadata: Some(false),
            // Merged across small gaps, in the device's request size, as readahead replays.
            ..ReplayOptions::default()
        },
    )
}

/// Learns until the session is quiet (no new file for `quiet`) or `window` is over.
pub fn learn_window(
    cfg: &LearnConfig,
    window: Duration,
    quiet: Duration,
) -> io::Result<(Learned, LearnSummary)> {
    let mut learner = Learner::start(cfg)?;
    let start = Instant::now();
    let mut last_new = start;
    let mut seen = 0;
    let stopped_by = loop {
        learner.poll(100)?;
        let now = Instant::now();
        if learner.files().len() != seen {
            seen = learner.files().len();
            last_new = now;
        }
        if now.duration_since(start) >= window {
            break "window";
        }
        if now.duration_since(last_new) >= quiet {
            break "quiet";
        }
    };
    let learned = learner.finish();
    let summary = LearnSummary {
        files: learned.files.len(),
        entries: 0,
        bytes: 0,
        events: learned.events,
        page_source: learned.page_source(),
        overflowed: learned.overflowed,
        duration: start.elapsed(),
        stopped_by,
    };
    Ok((learned, summary))
}

/// Creates preload's directory mode 0700 (and makes an existing one so): the model names the
/// files the user's session read, home directory included, which other users must not list.
fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// The greeter's stage: decide this login and prefetch on a `prefetch` login; the decision
/// is left in `pending` for [`session`].
pub fn greeter(config: &Config, opts: &RunOptions) -> io::Result<RunReport> {
    let state = load_state(config)?;
    let (model, model_refused) = load_model(config);
    let next = next_login(config, &state, model.as_ref());
    let mut report = RunReport {
        kind: next.kind(),
        budget_bytes: budget_now(config, opts.mem_available),
        model_refused,
        ..RunReport::default()
    };
    let Some(kind) = next.kind() else {
        return Ok(report);
    };
    private_dir(&config.dir)?;
    // This process's id too: the session's learning must not take what the greeter's
    // prefetch still reads (or opens) for the session's own.
    sys::write_atomic(
        &config.pending_path(),
        format!(
            "{} {} {}\n",
            kind.word_for(&PRELOAD),
            unix_now(),
            std::process::id()
        )
        .as_bytes(),
    )?;
    if let (NextLogin::Prefetch, Some(m)) = (next, &model) {
        report.prefetch = Some(prefetch(
            m,
            report.budget_bytes,
            config.window,
            config.idle_io,
            config.yield_to(),
            opts.wait_settled,
        ));
    }
    if let Some(m) = &model {
        report.model_files = m.files.len();
        report.model_bytes = m.bytes();
    }
    Ok(report)
}

/// The greeter's decision, left less than [`PENDING_MAX_AGE_S`] ago (removed): the kind of
/// login and the greeter stage's process id, when it gave one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pending {
    kind: BootKind,
    pid: Option<i32>,
}

/// The greeter's decision, if one was left less than [`PENDING_MAX_AGE_S`] ago; removed.
fn take_pending(config: &Config) -> Option<Pending> {
    let path = config.pending_path();
    let text = sys::read_regular_text(&path, 4096).ok();
    let _ = std::fs::remove_file(&path);
    let text = text?;
    let mut w = text.split_whitespace();
    let kind = match w.next()? {
        "learn" => BootKind::Learn,
        "control" => BootKind::Control,
        k if k == PRELOAD.on => BootKind::Replay,
        _ => return None,
    };
    let at: u64 = w.next()?.parse().ok()?;
    // Written by an older bootprint: no process id.
    let pid = w
        .next()
        .and_then(|p| p.parse().ok())
        .filter(|&p: &i32| p > 0);
    (unix_now().saturating_sub(at) <= PENDING_MAX_AGE_S).then_some(Pending { kind, pid })
}

/// Whether process `pid` runs the same executable as this one.
fn same_program(pid: i32) -> bool {
    let exe = |p: &str| std::fs::read_link(format!("/proc/{p}/exe")).ok();
    exe(&pid.to_string()).is_some_and(|e| Some(e) == exe("self"))
}

/// Why the session's stage does nothing after an autologin.
pub const AUTOLOGIN_SKIPPED: &str =
    "an autologin: no greeter waited, so there was no idle time to prefetch in";

/// The session's stage: this login's kind (the greeter's decision) added to the history at
/// once, without a desktop time (the recorder gives it at `desktop_ready`, which may come
/// before the learning window ends: [`desktop_time`]); a prefetch on a `prefetch` login
/// beside learning; the model updated and saved. `learn_only`: no prefetch, and the login
/// counts as `learn`. After an autologin (no greeter decision pending) it does nothing
/// unless `learn_only`: see [`AUTOLOGIN_SKIPPED`] and docs/preload.md, "Who starts it".
pub fn session(config: &Config, opts: &RunOptions, learn_only: bool) -> io::Result<RunReport> {
    let mut state = load_state(config)?;
    let (model, model_refused) = load_model(config);
    let pending = take_pending(config);
    let next = next_login(config, &state, model.as_ref());
    let mut report = RunReport {
        budget_bytes: budget_now(config, opts.mem_available),
        model_refused,
        ..RunReport::default()
    };
    let kind = match (next, pending) {
        (NextLogin::Off | NextLogin::SwitchedOff, _) => return Ok(report),
        _ if learn_only => BootKind::Learn,
        // No greeter ran (an autologin): there was no idle time, and a prefetch now reads
        // beside the session it is for (measured on the time-scaled card: later even when
        // it yields the disk); learning alone costs the session CPU time (1.03x there) for
        // a model only a greeter's wait can use, and greeter logins learn it themselves.
        (_, None) => {
            report.skipped = Some(AUTOLOGIN_SKIPPED);
            return Ok(report);
        }
        // Without a model there is nothing to prefetch, whatever the greeter said.
        (NextLogin::Learn, _) => BootKind::Learn,
        (_, Some(p)) => p.kind,
    };
    report.kind = Some(kind);
    private_dir(&config.dir)?;
    state.push(BootRecord {
        unix_s: unix_now(),
        kind,
        login_s: None,
        done_s: None,
    });
    state.save_for(&config.state_path(), &PRELOAD)?;
    let mut lcfg = opts.learn.clone();
    lcfg.ignore_pids.push(std::process::id() as i32);
    // Only while it is still this program: a process id is reused.
    lcfg.ignore_pids
        .extend(pending.and_then(|p| p.pid).filter(|&p| same_program(p)));
    let (learned, mut summary, prefetched) = std::thread::scope(|s| {
        let pf = match (&model, kind) {
            (Some(m), BootKind::Replay) => Some(s.spawn(|| {
                prefetch(
                    m,
                    report.budget_bytes,
                    config.window,
                    config.idle_io,
                    config.yield_to(),
                    opts.wait_settled,
                )
            })),
            _ => None,
        };
        let learned = learn_window(&lcfg, config.window, config.quiet);
        let prefetched = pf.and_then(|h| h.join().ok());
        learned.map(|(l, s)| (l, s, prefetched))
    })?;
    report.prefetch = prefetched;
    let (pack, _) = learn::build_pack(
        &learned,
        &PackOptions {
            paths: lcfg.paths.clone(),
            rotational: Some(false),
            // Every page the session read: the budget applies when prefetching.
            budget_bytes: Some(u64::MAX / 4),
            disk_order: Some(false),
            ..PackOptions::default()
        },
    );
    summary.entries = pack.entries.len();
    summary.bytes = pack.entries.iter().map(|e| e.bytes()).sum();
    let mut m = model.unwrap_or_default();
    let mut update = if summary.page_source == PageSource::Added.word() {
        let opened = learned.files.iter().map(|f| (f.dev, f.ino)).collect();
        m.update_misses(&pack.entries, &opened, &config.decay, unix_now())
    } else {
        m.update(&pack.entries, &config.decay, unix_now())
    };
    // Never written larger than it is read back.
    update.capped = m.fit(model::MAX_MODEL_BYTES);
    report.update = Some(update);
    m.save(&config.model_path())?;
    report.model_files = m.files.len();
    report.model_bytes = m.bytes();
    report.learned = Some(summary);
    Ok(report)
}

/// What came of a desktop time given to preload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Timed {
    /// The latest login has it.
    Recorded,
    /// The latest login has it, and the history says prefetch does not pay: preload
    /// switched itself off, for this reason.
    SwitchedOff(String),
    /// No login was recorded since the time given (this boot's start), or none at all: the
    /// session stage did nothing (an autologin) or did not run. The time is no login's.
    NoLogin,
}

/// Gives the latest login its desktop time (seconds from the login to `desktop_ready`, as
/// the caller measured it) and judges the history (readahead's rule,
/// [`State::push_and_judge`]). With `since_unix_s`, only a login recorded at or after it
/// (this boot's start) takes it. Fails when the latest login already has a time or there is
/// none.
pub fn desktop_time(
    config: &Config,
    secs: f64,
    since_unix_s: Option<u64>,
) -> Result<Timed, String> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("a desktop time is seconds, 0 or more, not {secs}"));
    }
    let path = config.state_path();
    let mut state = State::load_for(&path, &PRELOAD).map_err(|e| e.to_string())?;
    let last = match state.boots.pop() {
        Some(b) if since_unix_s.is_some_and(|t| b.unix_s < t) => return Ok(Timed::NoLogin),
        None if since_unix_s.is_some() => return Ok(Timed::NoLogin),
        Some(b) if b.login_s.is_none() => b,
        Some(_) => {
            return Err(format!(
                "{}: the latest login already has a desktop time; `bootprint preload run` adds the next",
                path.display()
            ))
        }
        None => return Err(format!("{}: no login recorded yet", path.display())),
    };
    let off = state.push_and_judge(
        BootRecord {
            login_s: Some((secs * 1000.0).round() / 1000.0),
            ..last
        },
        &PRELOAD,
        config.compare_every,
        unix_now(),
    );
    state
        .save_for(&path, &PRELOAD)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(off.map_or(Timed::Recorded, Timed::SwitchedOff))
}

/// Removes the model (the next login learns a new one); returns whether there was one.
pub fn relearn(config: &Config) -> io::Result<bool> {
    match std::fs::remove_file(config.model_path()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// `path` under `root` (`--root DIR` looks at another system's files).
pub fn under(root: &Path, p: &Path) -> PathBuf {
    root.join(p.strip_prefix("/").unwrap_or(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use readahead::pack::{Entry, Range};

    fn config(dir: &Path) -> Config {
        Config {
            enabled: true,
            dir: dir.to_path_buf(),
            ..Config::default()
        }
    }

    /// Defect 9 of the security issue: a model over the size limit was refused when loaded,
    /// and the refusal stopped the greeter's and the session's stages, so preload was off
    /// for good. A refused model is now learned anew, and says why.
    #[test]
    fn defect9_a_refused_model_does_not_stop_learning() {
        let tmp = tempfile::tempdir().unwrap();
        let c = config(tmp.path());
        private_dir(&c.dir).unwrap();
        let f = std::fs::File::create(c.model_path()).unwrap();
        f.set_len(model::MAX_MODEL_BYTES + 1).unwrap();
        let opts = RunOptions {
            mem_available: Some(1 << 30),
            ..RunOptions::default()
        };
        let r = greeter(&c, &opts).unwrap();
        assert_eq!(r.kind, Some(BootKind::Learn));
        let why = r.model_refused.unwrap();
        assert!(why.contains("at most 16777216 bytes"), "{why}");
        assert!(take_pending(&c).is_some_and(|p| p.kind == BootKind::Learn));
    }

    fn model() -> Model {
        let mut m = Model::default();
        m.update(
            &[Entry {
                path: "/a".into(),
                ranges: vec![Range {
                    offset: 0,
                    len: 4096,
                }],
                ..Entry::default()
            }],
            &Default::default(),
            1,
        );
        m
    }

    #[test]
    fn next_login_follows_switch_verdict_model_and_history() {
        let c = config(Path::new("/x"));
        let mut st = State::default();
        let m = model();
        assert_eq!(next_login(&c, &st, None), NextLogin::Learn);
        assert_eq!(
            next_login(&c, &st, Some(&Model::default())),
            NextLogin::Learn
        );
        assert_eq!(next_login(&c, &st, Some(&m)), NextLogin::Prefetch);
        st.push(BootRecord {
            unix_s: 1,
            kind: BootKind::Replay,
            login_s: Some(5.0),
            done_s: None,
        });
        assert_eq!(next_login(&c, &st, Some(&m)), NextLogin::Control);
        let off = Config {
            enabled: false,
            ..c.clone()
        };
        assert_eq!(next_login(&off, &st, Some(&m)), NextLogin::Off);
        st.verdict = Verdict::Off {
            unix_s: 1,
            reason: "slower".into(),
        };
        assert_eq!(next_login(&c, &st, Some(&m)), NextLogin::SwitchedOff);
    }

    /// Logins alternate prefetch and control until three of each have a desktop time; a
    /// prefetch no faster than going without switches preload off, as readahead does.
    #[test]
    fn desktop_times_judge_and_switch_off() {
        let tmp = tempfile::tempdir().unwrap();
        let c = config(tmp.path());
        assert!(desktop_time(&c, 3.0, None)
            .unwrap_err()
            .contains("no login recorded"));
        // No history at all (an autologin on a machine that never had a greeter login):
        // no one's time either, when the boot's start is given.
        assert_eq!(desktop_time(&c, 3.0, Some(1)), Ok(Timed::NoLogin));
        assert!(!c.state_path().exists());
        let mut st = State::default();
        for (i, kind) in [BootKind::Replay, BootKind::Control]
            .repeat(3)
            .into_iter()
            .enumerate()
        {
            st.push(BootRecord {
                unix_s: i as u64,
                kind,
                login_s: None,
                done_s: None,
            });
            st.save_for(&c.state_path(), &PRELOAD).unwrap();
            // Prefetch logins 6.0 s, control 5.0 s: prefetch does not pay.
            let t = if kind == BootKind::Replay { 6.0 } else { 5.0 };
            let off = desktop_time(&c, t, None).unwrap();
            assert_eq!(off != Timed::Recorded, i == 5, "login {i}: {off:?}");
            st = State::load_for(&c.state_path(), &PRELOAD).unwrap();
        }
        let text = std::fs::read_to_string(c.state_path()).unwrap();
        assert!(text.contains("\nlogin 5 control 5.000 -\n"), "{text}");
        assert!(
            text.contains("verdict off ") && text.contains("prefetch does not make logins faster here: median time to desktop with prefetch 6.000 s (3 logins), without 5.000 s (3 logins)"),
            "{text}"
        );
        assert!(desktop_time(&c, 1.0, None)
            .unwrap_err()
            .contains("already has a desktop time"));
        assert!(desktop_time(&c, -1.0, None).is_err());
        // The latest login (at 5) is older than this boot (begun at 6): the time is no one's.
        let before = std::fs::read_to_string(c.state_path()).unwrap();
        assert_eq!(desktop_time(&c, 1.0, Some(6)), Ok(Timed::NoLogin));
        assert_eq!(std::fs::read_to_string(c.state_path()).unwrap(), before);
        assert!(
            desktop_time(&c, 1.0, Some(5)).is_err(),
            "this boot's, timed already"
        );
    }

    #[test]
    fn a_stale_or_foreign_pending_decision_is_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        let c = config(tmp.path());
        std::fs::write(c.pending_path(), format!("control {}\n", unix_now())).unwrap();
        assert_eq!(
            take_pending(&c),
            Some(Pending {
                kind: BootKind::Control,
                pid: None
            })
        );
        assert!(!c.pending_path().exists(), "taken once");
        // The greeter stage's process: left out of learning while it is this program.
        let me = std::process::id() as i32;
        std::fs::write(c.pending_path(), format!("prefetch {} {me}\n", unix_now())).unwrap();
        let p = take_pending(&c).unwrap();
        assert_eq!((p.kind, p.pid), (BootKind::Replay, Some(me)));
        assert!(same_program(me));
        assert!(!same_program(1), "pid 1 is not this test");
        std::fs::write(
            c.pending_path(),
            format!("prefetch {}\n", unix_now() - 7200),
        )
        .unwrap();
        assert_eq!(take_pending(&c), None);
        std::fs::write(c.pending_path(), "replay 5\n").unwrap();
        assert_eq!(take_pending(&c), None);
    }
}
