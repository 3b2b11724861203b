//! The boot path's use of readahead: before init is exec'd, replay a valid pack from a child
//! process, boot without it to compare, or plan to learn one; while recording, learn; at boot
//! done, pack what was learned or measure how much of the replay was used, add the boot to
//! readahead's history and let it judge itself (it switches itself off when replay does not
//! make boots faster here). Every failure is a `warning` event and the boot goes on as if
//! readahead were off. The format, learning, replay and the history's rules belong to the
//! `readahead` crate.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use readahead::learn::{self, LearnConfig, LearnThread, PackOptions};
use readahead::pack::Pack;
use readahead::replay::{
    self, RelearnLimits, ReplayChild, ReplayOptions, ReplayOutcome, ReplayStats,
};
use readahead::state::{BootKind, BootRecord, Lever, State, Verdict, READAHEAD};
use readahead::system;
use sys::boottime_ns;
use trace::Event;

use crate::config::{Config, CONFIG_FILE};

/// What the boot path's readahead reads and writes besides its configured files (the pack and
/// the state file): the kernel's and the root's paths, where it meets the initramfs's
/// process, and whose pack it trusts. [`Paths::system`] (the [`Default`]) is the running
/// system's; tests point it at a fake tree.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `/proc` (`self/mountinfo`, `diskstats`, `cmdline`, `PID/stat`), `/sys`,
    /// `/dev/disk/by-uuid` and the root whose file system a pack must have been learned on.
    pub system: system::Paths,
    /// Where the initramfs's readahead process and the recorder meet.
    pub initramfs: InitramfsFiles,
    /// The uid a pack must belong to: 0 (root) at boot.
    pub pack_owner: u32,
}

impl Paths {
    /// The running system's paths, and root's packs only.
    pub fn system() -> Paths {
        Paths {
            system: system::Paths::default(),
            initramfs: InitramfsFiles::default(),
            pack_owner: 0,
        }
    }
}

impl Default for Paths {
    fn default() -> Paths {
        Paths::system()
    }
}

/// A replay under way.
#[derive(Debug)]
pub struct Replaying {
    pack: Box<Pack>,
    source: Source,
    /// The paths it was decided with (boot done reads the same `diskstats`).
    paths: system::Paths,
    started_ns: u64,
    /// The root device and what had been read from it when the replay started, to tell at
    /// boot done how much the boot read that the pack lacked.
    root_dev: Option<(u32, u32)>,
    read_at_start: Option<u64>,
}

/// Who runs the replay and how its figures come back.
#[derive(Debug)]
enum Source {
    /// Our child, started before init was exec'd; it reports through a pipe.
    Child(ReplayChild),
    /// A process the initramfs's /init started on the real root before switching to it
    /// (not our child); it writes its figures to `report`.
    Initramfs { pid: i32, report: PathBuf },
}

/// What the boot decided before exec'ing init.
#[derive(Debug, Default)]
pub enum Plan {
    /// Readahead is off in the configuration.
    #[default]
    Off,
    /// Readahead switched itself off earlier (the reason is in its state file).
    SwitchedOff(String),
    /// No usable pack: learn one during this boot (with why).
    Learn(String),
    /// A pack is being replayed by a child process.
    Replay(Replaying),
    /// A valid pack, not replayed this boot: the comparison boot.
    Control,
}

/// What to do with readahead this boot, before anything is started.
enum Decision {
    Off,
    SwitchedOff(String),
    Learn(String),
    Control,
    Replay {
        pack: Box<Pack>,
        root_dev: Option<(u32, u32)>,
        read_at_start: Option<u64>,
    },
}

/// `path`, an absolute path on the real root, as seen from where that root is mounted now.
fn on_root(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// The root file system's mount, for its identity and its device.
fn root_mount(paths: &system::Paths) -> Option<system::Mount> {
    let mountinfo = std::fs::read_to_string(paths.proc.join("self/mountinfo")).unwrap_or_default();
    let mounts = system::parse_mountinfo(&mountinfo, "/proc/self/mountinfo").unwrap_or_default();
    system::root_mount(&mounts).cloned()
}

/// The pack, if it may be replayed on this root file system (`mount`).
fn load_pack(
    config: &Config,
    paths: &Paths,
    mount: Option<&system::Mount>,
) -> Result<Pack, String> {
    let ours = system::root_id(&paths.system, mount);
    replay::load(&config.readahead_pack, &ours, paths.pack_owner)
        .map_err(|e| e.reason().to_string())
}

/// What the next boot does with readahead (`bootprint readahead status` shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextBoot {
    /// The switch is off.
    Off,
    /// Readahead switched itself off (its verdict, in its state file).
    SwitchedOff,
    /// No usable pack: it learns one.
    Learn,
    /// It boots without replay, to compare.
    Control,
    /// It replays the pack.
    Replay,
}

/// [`NextBoot`] from the switch, readahead's state and whether there is a usable pack: the
/// rule the boot path follows ([`prepare`]), in the same order.
pub fn next_boot(config: &Config, state: &State, has_pack: bool) -> NextBoot {
    if !config.readahead {
        return NextBoot::Off;
    }
    if let Verdict::Off { .. } = state.verdict {
        return NextBoot::SwitchedOff;
    }
    if !has_pack {
        return NextBoot::Learn;
    }
    match state.next_kind(config.readahead_compare_every) {
        BootKind::Control => NextBoot::Control,
        _ => NextBoot::Replay,
    }
}

/// Decides from the configuration, readahead's history and the pack on the root file system.
fn decide(config: &Config, paths: &Paths) -> Decision {
    if !config.readahead {
        return Decision::Off;
    }
    // An unreadable state is treated as empty; it is rewritten at boot done.
    let state = State::load(&config.readahead_state).unwrap_or_default();
    if let Verdict::Off { reason, .. } = state.verdict {
        return Decision::SwitchedOff(reason);
    }
    let mount = root_mount(&paths.system);
    let pack = match load_pack(config, paths, mount.as_ref()) {
        Ok(p) => p,
        Err(reason) => return Decision::Learn(reason),
    };
    if state.next_kind(config.readahead_compare_every) == BootKind::Control {
        return Decision::Control;
    }
    let root_dev = mount.map(|m| (m.major, m.minor));
    Decision::Replay {
        pack: Box::new(pack),
        root_dev,
        read_at_start: root_dev.and_then(|(ma, mi)| root_bytes_read(&paths.system, ma, mi)),
    }
}

/// The boot's replay settings from the configuration (also `bootprint readahead replay`'s).
pub fn replay_options(config: &Config) -> ReplayOptions {
    ReplayOptions {
        idle_io: config.readahead_io_class == "idle",
        merge_gap: u64::from(config.readahead_merge_gap_kb) * 1024,
        metadata: config.readahead_metadata,
        ..ReplayOptions::default()
    }
}

/// In PID 1, before the exec: load the pack and start its replay, or decide to learn or to
/// boot without it for comparison. When the initramfs's /init already started the replay
/// ([`start_in_initramfs`]), that replay is taken over instead.
pub fn prepare(config: &Config) -> Plan {
    prepare_at(config, &Paths::system())
}

/// [`prepare`], with the system's paths where `paths` says (tests: a fake tree).
pub fn prepare_at(config: &Config, paths: &Paths) -> Plan {
    if !config.readahead {
        return Plan::Off;
    }
    if let Some(plan) = take_over_initramfs_replay(config, paths) {
        return plan;
    }
    match decide(config, paths) {
        Decision::Off => Plan::Off,
        Decision::SwitchedOff(r) => Plan::SwitchedOff(r),
        Decision::Learn(r) => Plan::Learn(r),
        Decision::Control => Plan::Control,
        Decision::Replay {
            pack,
            root_dev,
            read_at_start,
        } => {
            let started_ns = boottime_ns();
            match replay::spawn_child(&pack, &replay_options(config)) {
                Ok(child) => Plan::Replay(Replaying {
                    pack,
                    source: Source::Child(child),
                    paths: paths.system.clone(),
                    started_ns,
                    root_dev,
                    read_at_start,
                }),
                Err(e) => Plan::Learn(format!("replay child: {e}")),
            }
        }
    }
}

/// Where the initramfs's readahead process and the recorder meet (on the tmpfs that becomes
/// the real root's /run).
#[derive(Debug, Clone)]
pub struct InitramfsFiles {
    /// The pid of the process /init forked to decide and replay (written by /init).
    pub pid: PathBuf,
    /// Its note when it replays ([`InitramfsReplay`], written whole by that process).
    pub note: PathBuf,
    /// Its figures when the replay ends.
    pub report: PathBuf,
}

impl Default for InitramfsFiles {
    fn default() -> InitramfsFiles {
        InitramfsFiles {
            pid: "/run/bootprint/readahead-initramfs.pid".into(),
            note: "/run/bootprint/readahead-replay".into(),
            report: "/run/bootprint/readahead-replay.stats".into(),
        }
    }
}

/// How long the recorder waits for the initramfs's readahead process to decide (it
/// normally has, while the real init's binary was read).
const INITRAMFS_DECISION_WAIT_NS: u64 = 3_000_000_000;

/// What the initramfs's /init hands the recorder about the replay it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitramfsReplay {
    /// The replaying process.
    pub pid: i32,
    /// When it was started (CLOCK_BOOTTIME ns).
    pub started_ns: u64,
    /// The root device (major, minor).
    pub root_dev: Option<(u32, u32)>,
    /// Bytes read from the root device when the replay started.
    pub read_at_start: Option<u64>,
    /// Where it writes its figures when it ends.
    pub report: PathBuf,
}

impl InitramfsReplay {
    const MAGIC: &'static str = "bootprint-initramfs-replay 1";

    /// The file's text: the magic line, then `KEY VALUE` lines.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "{}\npid {}\nstarted_ns {}\nreport {}\n",
            Self::MAGIC,
            self.pid,
            self.started_ns,
            self.report.display()
        );
        if let Some((ma, mi)) = self.root_dev {
            s.push_str(&format!("root_dev {ma}:{mi}\n"));
        }
        if let Some(n) = self.read_at_start {
            s.push_str(&format!("read_at_start {n}\n"));
        }
        s
    }

    /// Parses [`InitramfsReplay::to_text`]; an error names the file, the line and what was
    /// expected.
    pub fn parse(text: &str, path: &Path) -> Result<InitramfsReplay, String> {
        let at = |n: usize, what: &str| format!("{}:{n}: {what}", path.display());
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        match lines.next() {
            Some((_, l)) if l.trim() == Self::MAGIC => {}
            _ => return Err(at(1, &format!("expected {:?}", Self::MAGIC))),
        }
        let (mut pid, mut started_ns) = (None, None);
        let mut r = InitramfsReplay {
            pid: 0,
            started_ns: 0,
            root_dev: None,
            read_at_start: None,
            report: PathBuf::new(),
        };
        for (n, line) in lines {
            let Some((key, value)) = line.trim().split_once(' ') else {
                return Err(at(n, &format!("expected KEY VALUE, found {line:?}")));
            };
            let number = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| at(n, &format!("expected a number after {key}, found {v:?}")))
            };
            match key {
                "pid" => pid = Some(number(value)?),
                "started_ns" => started_ns = Some(number(value)?),
                "read_at_start" => r.read_at_start = Some(number(value)?),
                "report" => r.report = PathBuf::from(value),
                "root_dev" => {
                    let dev = value
                        .split_once(':')
                        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
                    r.root_dev = Some(dev.ok_or_else(|| {
                        at(
                            n,
                            &format!("expected MAJOR:MINOR after root_dev, found {value:?}"),
                        )
                    })?);
                }
                _ => {} // a later version's key
            }
        }
        let end = text.lines().count();
        r.pid = match pid {
            Some(p) if p > 1 && p <= i32::MAX as u64 => p as i32,
            Some(p) => {
                return Err(at(
                    end,
                    &format!("expected a process id above 1, found {p}"),
                ))
            }
            None => return Err(at(end, "expected a pid line")),
        };
        r.started_ns = started_ns.ok_or_else(|| at(end, "expected a started_ns line"))?;
        if !r.report.is_absolute() {
            return Err(at(end, "expected a report line with an absolute path"));
        }
        Ok(r)
    }
}

/// In the initramfs's /init, once the real root is mounted at `new_root`: read bootprint's
/// configuration there and the kernel command line as the recorder would; with readahead on,
/// fork the process that enters the new root, waits there for /init to move /dev, /proc,
/// /sys and /run onto it and makes the recorder's decision from the same files; when it is
/// to replay, it leaves a note for the recorder and replays ([`initramfs_process`]). The
/// pack's reading and checking happen in that process, beside the switch to the real root,
/// not before it. Returns what /init did, for its step log. Never fails the boot: a failure
/// is its answer.
///
/// Measured under QEMU TCG (docs/readahead.md): 5 ms with readahead off; the fork adds
/// roughly 5-12 ms. A process exec'd instead of forked would not survive: its dynamic loader
/// opens libraries from the initramfs after /init has deleted them.
pub fn start_in_initramfs(new_root: &Path) -> String {
    let paths = Paths::system();
    let cmdline = std::fs::read_to_string(paths.system.proc.join("cmdline")).unwrap_or_default();
    let (config, _errors) = Config::load(&on_root(new_root, Path::new(CONFIG_FILE)), &cmdline);
    if !config.readahead {
        return "off".into();
    }
    let (said, moves_done) = fork_initramfs_process(new_root, &paths, || config);
    // Its write end closes when /init execs the real init (close-on-exec): only then, the
    // moves and the switch done, does the process go on.
    if let Some(m) = moves_done {
        std::mem::forget(m);
    }
    said
}

/// The signal of "/init has moved /dev, /proc, /sys and /run onto the new root and
/// switched": the write end of a pipe whose read end the initramfs's process waits on.
/// Dropping it (or the exec that closes it) is the signal.
#[derive(Debug)]
pub struct MovesDone {
    _write_end: std::fs::File,
}

/// Forks the initramfs's readahead process ([`initramfs_process`]) for the root mounted at
/// `new_root`, writes its pid to `paths.initramfs.pid`, and returns what happened (for /init's step
/// log) and the [`MovesDone`] signal to give once the moves are done. The new root is opened
/// before the fork and the process enters it by that descriptor: by the time it runs, /init
/// may have moved the mount away from `new_root` already.
pub fn fork_initramfs_process(
    new_root: &Path,
    paths: &Paths,
    config: impl FnOnce() -> Config,
) -> (String, Option<MovesDone>) {
    let files = &paths.initramfs;
    let root = match std::fs::File::open(new_root) {
        Ok(f) => f,
        Err(e) => {
            return (
                format!("not started: cannot open {}: {e}", new_root.display()),
                None,
            )
        }
    };
    let (moves_read, moves_write) = match sys::pipe() {
        Ok(p) => p,
        Err(e) => return (format!("not started: pipe: {e}"), None),
    };
    match sys::fork() {
        Ok(0) => {
            drop(moves_write);
            // Forked from /init it would be called "init" in the bootchart; it is
            // bootprint-boot's replay, like the one the recorder starts.
            sys::set_process_name("bootprint-boot");
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                initramfs_process(&root, moves_read, paths, config)
            }));
            sys::exit_now(0)
        }
        Ok(pid) => {
            drop(moves_read);
            match std::fs::write(&files.pid, format!("{pid}\n")) {
                Ok(()) => (
                    format!("deciding in pid {pid}"),
                    Some(MovesDone {
                        _write_end: moves_write,
                    }),
                ),
                Err(e) => {
                    let _ = sys::kill(pid, libc::SIGKILL);
                    (
                        format!("not started: cannot write {}: {e}", files.pid.display()),
                        None,
                    )
                }
            }
        }
        Err(e) => (format!("not started: {e}"), None),
    }
}

/// How long the initramfs's process waits for /init's moves before it gives up.
const INITRAMFS_MOVES_WAIT_MS: i32 = 5_000;

/// The initramfs's readahead process: enter the new root (`root`, a descriptor of its
/// top directory), wait until `moves_done` reaches end of file (/init closed it: the
/// moves are done), decide with the configuration `config` gives (and `paths`, as seen from
/// the new root); when it is to replay, note it and replay. Only in a process of its own: it
/// changes its root for good.
pub fn initramfs_process(
    root: &std::fs::File,
    moves_done: std::fs::File,
    paths: &Paths,
    config: impl FnOnce() -> Config,
) {
    let files = &paths.initramfs;
    // Its root becomes the new root's mount, which stays valid when /init moves that mount
    // onto `/`; from then on it sees what the real init will see.
    let entered = crate::sys::fchdir(root)
        .and_then(|()| std::os::unix::fs::chroot("."))
        .and_then(|()| std::env::set_current_dir("/"));
    if entered.is_err() {
        return;
    }
    // No polling: one bounded wait for the end of the pipe.
    match sys::poll_readable(moves_done.as_raw_fd(), INITRAMFS_MOVES_WAIT_MS) {
        Ok(true) => {}
        _ => return,
    }
    drop(moves_done);
    let config = config();
    let Decision::Replay {
        pack,
        root_dev,
        read_at_start,
    } = decide(&config, paths)
    else {
        // Learn, compare, off: the recorder decides the same from the same files.
        return;
    };
    let Ok(mut report) = std::fs::File::create(&files.report) else {
        return;
    };
    let note = InitramfsReplay {
        pid: sys::getpid(),
        started_ns: boottime_ns(),
        root_dev,
        read_at_start,
        report: files.report.clone(),
    };
    if sys::write_atomic(&files.note, note.to_text().as_bytes()).is_err() {
        return;
    }
    let st = replay::replay(&pack, &replay_options(&config));
    use std::io::Write;
    let _ = writeln!(report, "{}", st.to_line());
}

/// The replay the initramfs started, when there is one and its pack loads here too (for the
/// hit rate and the relearning rules at boot done). Waits (at most
/// [`INITRAMFS_DECISION_WAIT_NS`]) for the initramfs's process to decide.
fn take_over_initramfs_replay(config: &Config, paths: &Paths) -> Option<Plan> {
    let files = &paths.initramfs;
    let pid: i32 = read_note(&files.pid).ok()?.trim().parse().ok()?;
    let until = boottime_ns() + INITRAMFS_DECISION_WAIT_NS;
    let text = loop {
        // Written whole (renamed into place): present means complete.
        if let Ok(t) = read_note(&files.note) {
            break t;
        }
        // It decided not to replay (or died): decide here, from the same files.
        if !process_alive(&paths.system.proc, pid) {
            return read_note(&files.note)
                .ok()
                .and_then(|t| take_over(config, &t, paths));
        }
        if boottime_ns() >= until {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    take_over(config, &text, paths)
}

fn take_over(config: &Config, note: &str, paths: &Paths) -> Option<Plan> {
    // A damaged note: replay again from here rather than lose the replay.
    let handoff = InitramfsReplay::parse(note, &paths.initramfs.note).ok()?;
    let pack = match load_pack(config, paths, root_mount(&paths.system).as_ref()) {
        Ok(p) => p,
        Err(reason) => return Some(Plan::Learn(reason)),
    };
    Some(Plan::Replay(Replaying {
        pack: Box::new(pack),
        source: Source::Initramfs {
            pid: handoff.pid,
            report: handoff.report,
        },
        paths: paths.system.clone(),
        started_ns: handoff.started_ns,
        root_dev: handoff.root_dev,
        read_at_start: handoff.read_at_start,
    }))
}

/// One of the small files the initramfs's process and the recorder leave each other in
/// /run: a regular file of a few lines (nothing else is read, and nothing blocks).
fn read_note(path: &Path) -> std::io::Result<String> {
    sys::read_regular_text(path, 64 * 1024)
}

/// Waits for the initramfs's replay to write its figures: until the report holds a whole
/// line, the process is gone, or `until_ns` (CLOCK_BOOTTIME).
fn wait_for_report(proc: &Path, report: &Path, pid: i32, until_ns: u64) -> Option<ReplayStats> {
    loop {
        let alive = process_alive(proc, pid);
        if let Ok(text) = read_note(report) {
            if text.ends_with('\n') {
                return ReplayStats::from_line(text.trim());
            }
        }
        if !alive || boottime_ns() >= until_ns {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Whether `pid` runs (exists and is not a zombie), from `proc`.
fn process_alive(proc: &Path, pid: i32) -> bool {
    std::fs::read(proc.join(format!("{pid}/stat")))
        .is_ok_and(|raw| sample::procfs::parse_stat_line(&raw).is_some_and(|r| r.state != 'Z'))
}

fn root_bytes_read(paths: &system::Paths, major: u32, minor: u32) -> Option<u64> {
    let ds = std::fs::read_to_string(paths.proc.join("diskstats")).ok()?;
    system::bytes_read(&ds, major, minor)
}

/// When this boot reached its milestones, for readahead's history.
#[derive(Debug, Clone, Copy, Default)]
pub struct Milestones {
    /// The text login (ns of CLOCK_BOOTTIME).
    pub login_ns: Option<u64>,
    /// Boot done, when it was judged idle (not on a timeout).
    pub done_ns: Option<u64>,
}

/// Readahead's part of a recording.
pub struct Session {
    plan: Plan,
    learner: Option<LearnThread>,
    /// Why this boot stays out of the history: another lever compared on it.
    aside: Option<String>,
    /// While replaying: the metadata read first, read again if the boot drops it.
    metadata: Option<MetadataWatch>,
}

/// [`Session::watch_metadata`]'s state.
struct MetadataWatch {
    watch: readahead::metadata::Watch,
    gap: u64,
    request: u64,
    next_check_ns: u64,
}

/// How often the replayed metadata is looked at (32 pages' mincore each time).
const METADATA_CHECK_NS: u64 = 250_000_000;

impl Session {
    /// Another lever did not run on this boot, to compare (the module loader): its figures
    /// say nothing about replay, so it stays out of readahead's history.
    pub fn set_aside(&mut self, why: &str) {
        self.aside = Some(why.to_string());
    }

    /// Starts learning if the plan says so (the pages used found as `config`'s
    /// `readahead_pages` says); notes the plan in the trace.
    pub fn start(plan: Plan, config: &Config, events: &mut Vec<Event>) -> Session {
        let now = boottime_ns();
        let mut learner = None;
        match &plan {
            Plan::Off => {}
            Plan::SwitchedOff(reason) => events.push(
                Event::new(now, "readahead_off")
                    .with("by", "itself")
                    .with("reason", reason),
            ),
            Plan::Learn(why) => {
                events.push(Event::new(now, "readahead_learn_start").with("why", why));
                let mut learn = LearnConfig::default();
                if config.readahead_pages == "mincore" {
                    learn.tracefs = None;
                }
                match LearnThread::spawn(&learn) {
                    Ok(l) => learner = Some(l),
                    Err(e) => events.push(warning(now, format!("readahead: cannot learn: {e}"))),
                }
            }
            Plan::Replay(r) => {
                let mut e = Event::new(r.started_ns, "readahead_replay_start")
                    .with("files", r.pack.entries.len())
                    .with("bytes", r.pack.bytes());
                if let Source::Initramfs { pid, .. } = &r.source {
                    e = e.with("from", "initramfs").with("pid", pid);
                }
                events.push(e);
            }
            Plan::Control => events.push(Event::new(now, "readahead_control")),
        }
        Session {
            plan,
            learner,
            aside: None,
            metadata: None,
        }
    }

    /// While a replay runs that read the root's metadata first, watches that metadata (in
    /// the recorder, which lives until boot done; not in PID 1, where an open block device
    /// would pass to init): [`Session::on_sample`] reads it again if it leaves the cache.
    pub fn watch_metadata(&mut self, config: &Config) {
        let Plan::Replay(r) = &self.plan else { return };
        let opts = replay_options(config);
        if !opts.reads_metadata(&r.pack) {
            return;
        }
        if let Some((dev, ranges, request)) = replay::metadata_source(&r.pack, &opts) {
            self.metadata =
                readahead::metadata::Watch::new(dev, ranges).map(|watch| MetadataWatch {
                    watch,
                    gap: opts.merge_gap,
                    request,
                    next_check_ns: 0,
                });
        }
    }

    /// At every sample: every [`METADATA_CHECK_NS`], whether the replayed metadata is still
    /// cached; when it was dropped (Debian's `checkroot.sh` remounting the root read-only
    /// for its fsck drops the root device's cache), it is read again, and an event says so.
    pub fn on_sample(&mut self, now: u64, events: &mut Vec<Event>) {
        let Some(m) = self.metadata.as_mut() else {
            return;
        };
        if now < m.next_check_ns {
            return;
        }
        m.next_check_ns = now + METADATA_CHECK_NS;
        if let Some((read, share)) = m.watch.check(m.gap, m.request) {
            events.push(
                Event::new(now, "readahead_metadata_again")
                    .with("resident_share", format!("{share:.2}"))
                    .with("bytes", read.bytes)
                    .with("requests", read.requests)
                    .with("read_bytes", read.read_bytes)
                    .with("times", m.watch.rereads),
            );
        }
    }

    /// At boot done: pack what was learned, or record the replay and its hit rate; decide
    /// whether the next boot learns again; add this boot to the history and judge replay.
    pub fn finish(
        self,
        events: &mut Vec<Event>,
        config: &Config,
        kernel_release: &str,
        seen: Milestones,
    ) {
        let now = boottime_ns();
        let pack_path = &config.readahead_pack;
        let kind = match &self.plan {
            Plan::Off | Plan::SwitchedOff(_) => None,
            Plan::Learn(_) => Some(BootKind::Learn),
            Plan::Replay(_) => Some(BootKind::Replay),
            Plan::Control => Some(BootKind::Control),
        };
        if let Some(learner) = self.learner {
            let learned = learner.stop();
            let opts = PackOptions {
                budget_bytes: (config.readahead_budget_mb > 0.0)
                    .then_some((config.readahead_budget_mb * 1048576.0) as u64),
                rotational: readahead::relocate::Media::setting_rotates(&config.readahead_media),
                disk_order: match config.readahead_order.as_str() {
                    "disk" => Some(true),
                    "access" => Some(false),
                    _ => None,
                },
                // Listed whatever the switch: it costs a few ms and KB, and a pack learned
                // with the switch off still serves once it is turned on.
                ..PackOptions::default()
            };
            let (pack, stats) = learn::build_pack(&learned, &opts);
            let written = pack.write_file(pack_path);
            let mut e = Event::new(now, "readahead_learn")
                .with("files", stats.files_learned)
                .with("entries", pack.entries.len())
                .with("bytes", pack.bytes())
                .with("metadata_bytes", pack.header.metadata_bytes())
                .with("rotational", u8::from(pack.header.rotational))
                .with("disk_bound", u8::from(pack.header.disk_bound))
                .with("budget", pack.header.budget_bytes)
                .with("events", learned.events)
                .with("overflowed", u8::from(learned.overflowed))
                .with("pages_from", learned.page_source())
                .with("trace_lost", learned.trace_stats.lost);
            if stats.entries_capped > 0 {
                // Left out so the pack stays within what replay loads.
                e = e.with("capped", stats.entries_capped);
            }
            if let Err(err) = &written {
                e = e.with("error", err);
            }
            events.push(e);
        }
        if let Plan::Replay(r) = self.plan {
            finish_replay(r, events, config, kernel_release);
        }
        if let (Some(kind), Some(why)) = (kind, &self.aside) {
            history_aside(events, now, &READAHEAD, kind, why);
        } else if let Some(kind) = kind {
            let judge = Judge {
                lever: &READAHEAD,
                path: &config.readahead_state,
                compare_every: config.readahead_compare_every,
            };
            record_history(events, &judge, kind, seen);
        }
    }
}

fn finish_replay(r: Replaying, events: &mut Vec<Event>, config: &Config, kernel_release: &str) {
    let now = boottime_ns();
    let stats = match r.source {
        // Its time limit counts from its start; a little more to report.
        Source::Child(child) => {
            let limit = ReplayOptions::default().time_limit + std::time::Duration::from_secs(5);
            let elapsed = std::time::Duration::from_nanos(now.saturating_sub(r.started_ns));
            child.wait(limit.saturating_sub(elapsed))
        }
        Source::Initramfs { pid, report } => {
            // Its time limit, counted from its start, and a little to write.
            let limit = ReplayOptions::default().time_limit.as_nanos() as u64;
            wait_for_report(
                &r.paths.proc,
                &report,
                pid,
                r.started_ns + limit + 5_000_000_000,
            )
        }
    };
    // What the boot read from the root disk beyond what the replay read (the pack's bytes,
    // the gaps merged with them, the metadata).
    let missed = match (r.root_dev, r.read_at_start) {
        (Some((ma, mi)), Some(before)) => root_bytes_read(&r.paths, ma, mi).map(|after| {
            let asked = stats.as_ref().map_or(0, |s| {
                s.bytes_requested + s.gap_bytes + s.metadata_read_bytes
            });
            after.saturating_sub(before).saturating_sub(asked)
        }),
        _ => None,
    };
    match &stats {
        Some(st) => {
            let mut e = Event::new(now, "readahead_replay");
            for (k, v) in st.fields() {
                e = e.with(k, v);
            }
            if let Some(m) = missed {
                e = e.with("missed_bytes", m);
            }
            events.push(e);
        }
        None => events.push(warning(
            now,
            "readahead: replay child reported nothing".into(),
        )),
    }
    let hit = replay::hit_rate(&r.pack);
    events.push(
        Event::new(boottime_ns(), "readahead_hit")
            .with("replayed", hit.bytes_replayed)
            .with("resident", hit.bytes_resident)
            .with("ratio", format!("{:.3}", hit.ratio())),
    );
    let limits = RelearnLimits {
        max_age_s: (config.readahead_max_age_days * 86400.0) as u64,
        stale_share: config.readahead_stale_share,
        missed_share: config.readahead_missed_share,
    };
    let outcome = ReplayOutcome {
        stats: stats.as_ref(),
        missed_bytes: missed,
        kernel_release,
        now_unix_s: unix_now(),
    };
    if let Some(reason) = replay::relearn_reason(&r.pack, &outcome, &limits) {
        // Without a pack the next boot learns a new one.
        let removed = std::fs::remove_file(&config.readahead_pack).is_ok();
        events.push(
            Event::new(boottime_ns(), "readahead_relearn")
                .with("reason", reason)
                .with("pack_removed", u8::from(removed)),
        );
    }
}

/// A lever that keeps a history and judges itself (readahead, the module loader).
pub(crate) struct Judge<'a> {
    pub lever: &'a Lever,
    /// Its state file.
    pub path: &'a std::path::Path,
    /// Every this many boots one compares (0: never, so no verdict either).
    pub compare_every: u32,
}

/// This boot stays out of the lever's history (another lever left its usual way on it, or
/// it did not do what was planned): `<lever>_history counted=0 why=...`.
pub(crate) fn history_aside(
    events: &mut Vec<Event>,
    t_ns: u64,
    lever: &Lever,
    kind: BootKind,
    why: &str,
) {
    events.push(
        Event::new(t_ns, &format!("{}_history", lever.name))
            .with("kind", kind.word_for(lever))
            .with("counted", 0)
            .with("why", why),
    );
}

/// Adds this boot to the lever's history; when the lever has been judged not to make
/// boots faster, switches it off (until `bootprint readahead on` / `bootprint modules on`),
/// with a `<lever>_off by=itself` event.
pub(crate) fn record_history(events: &mut Vec<Event>, j: &Judge, kind: BootKind, seen: Milestones) {
    let name = j.lever.name;
    let mut state = match State::load_for(j.path, j.lever) {
        Ok(s) => s,
        Err(e) => {
            events.push(warning(
                boottime_ns(),
                format!("{name}: {e}; starting a new history"),
            ));
            State::default()
        }
    };
    let secs = |ns: Option<u64>| ns.map(|n| (n as f64 / 1e6).round() / 1e3);
    let switched_off = state.push_and_judge(
        BootRecord {
            unix_s: unix_now(),
            kind,
            login_s: secs(seen.login_ns),
            done_s: secs(seen.done_ns),
        },
        j.lever,
        j.compare_every,
        unix_now(),
    );
    let judged = state.judge();
    events.push(
        Event::new(boottime_ns(), &format!("{name}_history"))
            .with("kind", kind.word_for(j.lever))
            .with("boots", state.boots.len())
            .with("judged", judged.describe_for(j.lever)),
    );
    if let Some(reason) = switched_off {
        events.push(
            Event::new(boottime_ns(), &format!("{name}_off"))
                .with("by", "itself")
                .with("reason", &reason),
        );
    }
    if let Err(e) = state.save_for(j.path, j.lever) {
        events.push(warning(
            boottime_ns(),
            format!("{name}: cannot write {}: {e}", j.path.display()),
        ));
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn warning(t: u64, what: String) -> Event {
    Event::new(t, "warning").with("what", what)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[readahead] merge_gap_kb` reaches the replay: its default is replay's own gap, and 0
    /// (the kernel command line here) reads every range alone.
    #[test]
    fn the_merge_gap_key_sets_the_replays_gap() {
        let mut c = Config::default();
        assert_eq!(replay_options(&c).merge_gap, readahead::plan::MERGE_GAP);
        assert!(c
            .apply_cmdline("bootprint.readahead_merge_gap_kb=0")
            .is_empty());
        assert_eq!(replay_options(&c).merge_gap, 0);
        assert!(c
            .apply_cmdline("bootprint.readahead_merge_gap_kb=128")
            .is_empty());
        assert_eq!(replay_options(&c).merge_gap, 128 * 1024);
    }

    fn history(kinds: &[BootKind]) -> State {
        State {
            boots: kinds
                .iter()
                .map(|&kind| BootRecord {
                    unix_s: 1,
                    kind,
                    login_s: Some(10.0),
                    done_s: None,
                })
                .collect(),
            ..State::default()
        }
    }

    #[test]
    fn next_boot_follows_switch_verdict_pack_and_history() {
        let mut config = Config {
            readahead: true,
            readahead_compare_every: 2,
            ..Config::default()
        };
        let replayed = history(&[BootKind::Learn, BootKind::Replay]);
        assert_eq!(next_boot(&config, &replayed, true), NextBoot::Control);
        assert_eq!(next_boot(&config, &replayed, false), NextBoot::Learn);
        assert_eq!(next_boot(&config, &history(&[]), true), NextBoot::Replay);
        let off = State {
            verdict: Verdict::Off {
                unix_s: 1,
                reason: "not faster".into(),
            },
            ..replayed.clone()
        };
        assert_eq!(next_boot(&config, &off, true), NextBoot::SwitchedOff);
        config.readahead = false;
        assert_eq!(next_boot(&config, &off, true), NextBoot::Off);
    }

    #[test]
    fn the_loaders_next_boot() {
        use crate::modload::{next_boot, NextBoot};
        let mut config = Config {
            modules: true,
            modules_compare_every: 2,
            ..Config::default()
        };
        assert_eq!(next_boot(&config, &history(&[])), NextBoot::Load);
        let loaded = history(&[BootKind::Replay]);
        assert_eq!(next_boot(&config, &loaded), NextBoot::Control);
        config.modules_compare_every = 0;
        assert_eq!(next_boot(&config, &loaded), NextBoot::Load);
        let off = State {
            verdict: Verdict::Off {
                unix_s: 1,
                reason: "not faster".into(),
            },
            ..loaded
        };
        assert_eq!(next_boot(&config, &off), NextBoot::SwitchedOff);
        config.modules = false;
        assert_eq!(next_boot(&config, &off), NextBoot::Off);
    }
}
