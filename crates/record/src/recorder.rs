//! The recording loop: sample at the configured rate on absolute deadlines (so the rate does
//! not drift), take exec events as they come, mark milestones, stop when boot is done or at
//! the time limit, then write the trace.
//!
//! [`run`] is the loop. A `Recorder` keeps what lives from one sample to the next and has a
//! method per step of a sample, which `run` calls in order; `Recorder::finish` assembles and
//! writes the trace.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use sample::procfs::{self, CachedFile, Listing, ProcFs, ProcessTable};
use sys::boottime_ns;
use trace::writer::PsRecord;
use trace::Event;

use crate::config::Config;
use crate::done::{DoneDetector, Thresholds};
use crate::execs::ExecSource;
use crate::observers::{self, Observers};
use crate::readahead::Milestones;
use crate::store::{Access, Store};
use crate::{kmsg, sysinfo};
use preload::run::Timed;
use sample::knob::KnobGuard;

/// Exec events are taken at most this often (ns), besides at every sample.
const EXEC_COALESCE_NS: u64 = 50_000_000;
/// With the connector's process events, /proc is still listed at one sample in this many.
const RESCAN_EVERY: u64 = 50;
/// /proc/meminfo is read at one sample in this many: memory moves slowly and the file is
/// costly to produce.
const MEMINFO_EVERY: u64 = 5;

/// Where the recorder looks and writes; every path a parameter so tests use their own.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The /proc to sample.
    pub proc: ProcFs,
    /// The kernel log device.
    pub kmsg: PathBuf,
    /// A path on the file system to watch for execs (the root).
    pub exec_root: PathBuf,
    /// The delay-accounting switch: read for `recorder_stats`, and with `delayacct = true`
    /// turned on while recording (per-task I/O wait) and put back afterwards.
    pub delayacct: PathBuf,
    /// Where to write if `log_dir` cannot be written.
    pub fallback_dir: PathBuf,
    /// The sysfs root (firmware times are copied from it).
    pub sys: PathBuf,
    /// The service runner's span log (`bootprint-boot rc`), copied into the trace as
    /// `rc.log` when it exists.
    pub rc_log: PathBuf,
    /// The systemd late-unit waiter's log (`systemd::waiter`), copied as `late.log`.
    pub late_log: PathBuf,
    /// Where the learned systemd late units are kept (`systemd::late`).
    pub late_state: PathBuf,
    /// Where the learned stop timeouts are kept (`systemd::timeouts`).
    pub timeouts_state: PathBuf,
    /// The group file: the trace is readable by group `adm` when it lists one.
    pub etc_group: PathBuf,
    /// bootprint.toml, for preload's settings: at `desktop_ready` the recorder gives preload
    /// the login's desktop time (`preload::run::desktop_time`).
    pub config_file: PathBuf,
}

impl Default for Paths {
    fn default() -> Self {
        Paths {
            proc: ProcFs::default(),
            kmsg: PathBuf::from("/dev/kmsg"),
            exec_root: PathBuf::from("/"),
            delayacct: PathBuf::from("/proc/sys/kernel/task_delayacct"),
            fallback_dir: PathBuf::from("/run/bootprint"),
            sys: PathBuf::from("/sys"),
            rc_log: PathBuf::from("/run/bootprint/rc.log"),
            late_log: PathBuf::from(systemd::generator::LATE_LOG),
            late_state: PathBuf::from(systemd::generator::STATE_FILE),
            timeouts_state: PathBuf::from(systemd::timeouts::STATE_FILE),
            etc_group: PathBuf::from("/etc/group"),
            config_file: PathBuf::from(crate::config::CONFIG_FILE),
        }
    }
}

/// What the boot path knows before the recorder starts.
#[derive(Debug, Default)]
pub struct Start {
    /// When the real init was exec'd and which, if bootprint-boot did it.
    pub init_exec: Option<(u64, String)>,
    /// Stop after this long even before the configured time limit (used outside boot).
    pub stop_after_ns: Option<u64>,
    /// Configuration problems to record as warnings.
    pub warnings: Vec<String>,
    /// What readahead does this boot (decided before init was exec'd).
    pub readahead: crate::readahead::Plan,
    /// The module loader started before init, if any.
    pub modules: crate::modload::Boot,
    /// The lever acting after init (the runner or late units): its plan for this boot.
    pub judged: crate::judged::Boot,
    /// Records a shutdown instead of a boot: how it was asked for (`runlevel 6`,
    /// `systemd`). It ends when asked to save or terminated, never at idle, and is written
    /// into the trace of the boot it ends ([`crate::shutdown`]).
    pub shutdown: Option<String>,
    /// With `shutdown`: the process that asked for it, if still there (its start, ns, and
    /// command line: `shutdown::requester`).
    pub shutdown_request: Option<(u64, String)>,
}

/// Records until boot is done (on a machine with a greeter, until a user's desktop is ready
/// after it: [`End`]) and writes the trace; returns its directory.
pub fn run(config: &Config, paths: &Paths, start: Start) -> io::Result<PathBuf> {
    let (mut recorder, levers) = Recorder::start(config, paths, start);
    let mut levers = Some(levers);
    // Kept apart from the recorder: the steps below borrow what was read from them.
    let mut files = SystemFiles::new(&paths.proc);
    let end = loop {
        let now = recorder.wait_for_sample();
        let system = files.read(recorder.meminfo_due());
        let forked = recorder.store_system(now, &system);
        recorder.sample_processes(now, forked);
        recorder.read_new_processes();
        recorder.store_processes(now);
        recorder.feed_done_detector(now, &system);
        recorder.note_root_writable(now);
        if let Some(l) = levers.as_mut() {
            l.readahead.on_sample(now, &mut recorder.store.events);
        }
        if let Some(end) = recorder.end(now) {
            break end;
        }
        // Boot done with a session still to come: the levers' part of the boot is over
        // (readahead stops learning there, not at the end of the session).
        if let (Some(done), true) = (recorder.boot_done_before_desktop(), levers.is_some()) {
            recorder.levers_at_boot_done(levers.take().expect("checked"), &done);
        }
    };
    recorder.finish(end, levers)
}

/// Why recording stopped: the `boot_done` event and, on a machine with a greeter, the
/// `desktop_ready` event that ended the recording of the user's session after it.
struct End {
    boot_done: Event,
    desktop: Option<Event>,
}

/// What the recorder is waiting for.
enum Phase {
    /// Boot done.
    Boot,
    /// Boot was done (this event, at this time) with a greeter up: now a user's session and
    /// its desktop ready (docs/recorder.md, "Desktop ready").
    Desktop { boot_done: Event, since_ns: u64 },
}

/// The system-wide /proc files read at every sample, each kept open.
struct SystemFiles {
    stat: CachedFile,
    diskstats: CachedFile,
    meminfo: CachedFile,
}

/// One sample's system-wide files as read.
struct SystemSample<'a> {
    stat: &'a [u8],
    diskstats: &'a [u8],
    /// Only at the samples it is due.
    meminfo: Option<&'a [u8]>,
}

impl SystemFiles {
    fn new(proc: &ProcFs) -> SystemFiles {
        SystemFiles {
            stat: CachedFile::new(proc.path("stat")),
            diskstats: CachedFile::new(proc.path("diskstats")),
            meminfo: CachedFile::new(proc.path("meminfo")),
        }
    }

    /// Reads /proc/stat, /proc/diskstats and, with `meminfo`, /proc/meminfo, in that order.
    fn read(&mut self, meminfo: bool) -> SystemSample<'_> {
        SystemSample {
            stat: self.stat.read(),
            diskstats: self.diskstats.read(),
            meminfo: meminfo.then(|| self.meminfo.read()),
        }
    }
}

/// The levers started before the recorder (readahead, the module loader). They run on their
/// own while it samples; at boot done they are told what the boot reached, for their history
/// and verdict.
struct Levers {
    readahead: crate::readahead::Session,
    modules: crate::modload::Boot,
    judged: crate::judged::Boot,
}

impl Levers {
    /// Hands them the milestones; their events go into `store`, whose header must be filled
    /// (readahead's relearn check needs the kernel release).
    fn finish(self, store: &mut Store, config: &Config, paths: &Paths, seen: Milestones) {
        let release = store
            .header
            .iter()
            .find(|(k, _)| k == "bootprint.kernel_release")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        self.readahead
            .finish(&mut store.events, config, &release, seen);
        self.modules.finish(&mut store.events, config, seen);
        if let Some(lever) = self.judged.lever {
            let mark = std::path::Path::new(crate::judged::MARK);
            let acted = crate::judged::acted(lever, &paths.rc_log, &paths.late_log, mark);
            self.judged.finish(&mut store.events, config, acted, seen);
        }
        // A relocation killed while a running program's copy had a name of its own left a
        // file (a copy of a set-uid program, perhaps): the root is writable now, remove it.
        let pending = readahead::relocate::pending_path(&config.readahead_pack);
        if let Some(left) = readahead::relocate::clean_leftover(&pending) {
            store.events.push(
                Event::new(boottime_ns(), "relocate_leftover_removed")
                    .with("path", left.display().to_string().replace(' ', "_")),
            );
        }
    }
}

/// What the recording keeps from one sample to the next.
struct Recorder<'a> {
    config: &'a Config,
    paths: &'a Paths,
    /// Everything recorded so far.
    store: Store,
    /// Clock ticks per second (process start times) and page size (the header).
    clk_tck: u64,
    page_size: u64,
    /// The recorder's own pid: its CPU time is not the boot's.
    own_pid: u32,
    /// Preload's processes: their CPU time and reads are not the boot's either.
    observers: Observers,
    /// Where exec events come from (and, from the connector, forks and exits).
    exec_source: ExecSource,
    /// Exec events wait until this time (ns) to be taken: see [`EXEC_COALESCE_NS`].
    exec_quiet_until_ns: u64,
    /// Time between samples (ns).
    period_ns: u64,
    /// When the next sample is due (ns, CLOCK_BOOTTIME).
    next_sample_ns: u64,
    /// Samples begun so far, the current one included.
    samples: u64,
    /// Samples that came late because the boot had the CPU (missed deadlines skipped).
    late_samples: u64,
    /// /proc/stat's fork counter at the last sample: unchanged, nothing was forked.
    forks: Option<u64>,
    /// Processes forked and ended since the last sample, from the connector (buffers kept).
    born: Vec<u32>,
    gone: Vec<u32>,
    /// Every process's /proc/PID/stat, kept open between samples.
    table: ProcessTable,
    /// The processes of the current sample.
    processes: Vec<PsRecord>,
    /// Processes whose command line read empty, read again at the next samples.
    cmdline_retry: CmdlineRetry,
    /// The login milestones seen so far.
    logins: Logins,
    /// When recording stops, and why.
    done: DoneCheck,
    /// Boot done, or after it a user's session.
    phase: Phase,
    /// All CPUs' busy time at the last sample (clock ticks): the boot's CPU, for the
    /// recorder's share of it.
    boot_busy_ticks: u64,
    /// Whether the root file system has been seen writable (an event says when).
    root_writable: bool,
    /// When to look again while it is not.
    next_root_check_ns: u64,
    /// Whether delay accounting was on, for `recorder_stats`.
    delayacct_on: bool,
    /// The recorder's own CPU time, for `recorder_stats`.
    cost: LoopCost,
    /// Delay accounting switched on for the recording. Last, so that it is put back after
    /// everything else, once the trace is written.
    _delayacct: Option<KnobGuard>,
}

impl<'a> Recorder<'a> {
    /// Notes the start in a new store, starts readahead's part, opens the exec source and
    /// switches delay accounting on when asked. What the boot path started before (readahead,
    /// the module loader) comes back apart: the loop does not touch it.
    fn start(config: &'a Config, paths: &'a Paths, start: Start) -> (Recorder<'a>, Levers) {
        let t_start = boottime_ns();
        crate::sys::catch_termination();
        crate::fault::arm(&config.fault);
        let mut store = Store::default();
        let (clk_tck, page_size) = (sys::clk_tck(), sys::page_size());
        store.events.push(
            Event::new(t_start, "recorder_start")
                .with("pid", std::process::id())
                .with("hz", config.hz)
                .with("version", env!("CARGO_PKG_VERSION")),
        );
        if let Some(how) = &start.shutdown {
            if let Some((t, by)) = &start.shutdown_request {
                store.events.push(
                    Event::new(*t, crate::shutdown::REQUEST_EVENT).with("by", by.replace(' ', "_")),
                );
            }
            store
                .events
                .push(Event::new(t_start, crate::shutdown::START_EVENT).with("how", how));
        }
        if let Some((t, path)) = &start.init_exec {
            store
                .events
                .push(Event::new(*t, "init_exec").with("path", path));
        }
        for w in &start.warnings {
            store
                .events
                .push(Event::new(t_start, "warning").with("what", w));
        }

        let mut readahead =
            crate::readahead::Session::start(start.readahead, config, &mut store.events);
        readahead.watch_metadata(config);
        if start.modules.is_control() {
            readahead.set_aside("the module loader compared on this boot");
        }
        if let Some(lever) = start.judged.lever.filter(|_| start.judged.is_control()) {
            readahead.set_aside(&format!("{} compared on this boot", lever.name));
        }
        let exec_source =
            ExecSource::open(&config.exec_events, &paths.exec_root, t_start, &mut store);
        // Per-task I/O delay needs delay accounting, off by default since Linux 5.14. Switched
        // on here only when asked: the switch patches the kernel's code (a static key) while
        // init forks, which wedges QEMU's TCG for good (docs/testbed.md "Kernel stalls").
        let delayacct = config
            .delayacct
            .then(|| KnobGuard::set(&paths.delayacct, "1"));
        let delayacct_on = fs::read_to_string(&paths.delayacct).is_ok_and(|v| v.trim() == "1");

        let period_ns = (1_000_000_000 / config.hz.max(1) as u64).max(1);
        let mut done = DoneCheck::new(config, t_start, start.stop_after_ns);
        done.shutdown = start.shutdown.is_some();
        let mut table = ProcessTable::new(paths.proc.clone());
        table.time_listing = config.cost_detail;
        let own_pid = std::process::id();
        store.observer_pid = Some(own_pid);
        let cost = LoopCost::start(config.cost_detail);
        let recorder = Recorder {
            config,
            paths,
            store,
            clk_tck,
            page_size,
            own_pid,
            observers: Observers::default(),
            exec_source,
            exec_quiet_until_ns: 0,
            period_ns,
            next_sample_ns: t_start,
            samples: 0,
            late_samples: 0,
            forks: None,
            born: Vec::new(),
            gone: Vec::new(),
            table,
            processes: Vec::new(),
            cmdline_retry: CmdlineRetry::default(),
            logins: Logins::default(),
            done,
            phase: Phase::Boot,
            boot_busy_ticks: 0,
            root_writable: false,
            next_root_check_ns: t_start,
            delayacct_on,
            cost,
            _delayacct: delayacct,
        };
        let levers = Levers {
            readahead,
            modules: start.modules,
            judged: start.judged,
        };
        (recorder, levers)
    }

    /// Sleeps until the next sample's deadline and returns the time (ns). Exec events are
    /// taken as they arrive, but at most once per [`EXEC_COALESCE_NS`]: a boot of shell
    /// scripts execs thousands of times, and a wake-up per exec was the recorder's largest
    /// cost after the process table (docs/recorder.md, "Cost").
    fn wait_for_sample(&mut self) -> u64 {
        // The last sample's steps after its new processes.
        self.cost.lap(Part::Rest);
        let now = loop {
            let now = boottime_ns();
            if now >= self.next_sample_ns {
                break now;
            }
            let watch_fd = self
                .exec_source
                .wake_fd()
                .filter(|_| now >= self.exec_quiet_until_ns);
            let until = if self.exec_source.wake_fd().is_some() && watch_fd.is_none() {
                self.next_sample_ns.min(self.exec_quiet_until_ns)
            } else {
                self.next_sample_ns
            };
            let wait_ms = (until - now).div_ceil(1_000_000) as i32;
            if sample::sys::wait_readable(watch_fd, wait_ms).unwrap_or(false) {
                let taken = boottime_ns();
                self.exec_quiet_until_ns = taken + EXEC_COALESCE_NS;
                self.exec_source
                    .drain(taken, &self.paths.proc, &mut self.store.events);
            }
        };
        if now - self.next_sample_ns > self.period_ns {
            // Starved (the boot had the CPU): skip the missed deadlines instead of bursting.
            self.late_samples += 1;
            self.next_sample_ns = now;
        }
        self.next_sample_ns += self.period_ns;
        self.samples += 1;
        self.cost.lap(Part::ExecEvents);
        now
    }

    /// Whether this sample reads /proc/meminfo (the first, then one in [`MEMINFO_EVERY`]).
    fn meminfo_due(&self) -> bool {
        self.samples % MEMINFO_EVERY == 1
    }

    /// Stores the system-wide files; says whether processes may have been forked since the
    /// last sample (the fork counter moved, or cannot be read).
    fn store_system(&mut self, now: u64, system: &SystemSample) -> bool {
        let meminfo = system.meminfo.map(procfs::filter_meminfo);
        self.store.push_system(
            uptime_cs(now),
            &procfs::filter_stat(system.stat),
            &procfs::filter_diskstats(system.diskstats),
            meminfo.as_deref(),
        );
        let forks = procfs::forks(system.stat);
        let forked = forks.is_none() || forks != self.forks;
        self.forks = forks;
        self.cost.lap(Part::SystemFiles);
        forked
    }

    /// Reads every process's /proc/PID/stat. With the connector, its fork and exit events
    /// say which processes came and went: no listing of /proc. Listed anyway at the first
    /// sample (what ran before the recorder), after lost events, and every [`RESCAN_EVERY`]
    /// samples (a pid reused between two samples would otherwise be missed).
    fn sample_processes(&mut self, now: u64, forked: bool) {
        if matches!(self.exec_source, ExecSource::Connector(_)) {
            self.exec_source
                .drain(now, &self.paths.proc, &mut self.store.events);
        }
        let complete = self
            .exec_source
            .take_lifecycle(&mut self.born, &mut self.gone);
        let listing = if complete && self.samples % RESCAN_EVERY != 1 {
            Listing::Events {
                born: &self.born,
                gone: &self.gone,
            }
        } else if forked {
            Listing::Rescan
        } else {
            Listing::Known
        };
        self.cost.lap(Part::ExecEvents);
        self.table.sample(listing, &mut self.processes);
        self.cost.lap(Part::ProcessTable);
    }

    /// Reads the command line of each new process (and again of those that read empty), and
    /// notes the login milestones they mark.
    fn read_new_processes(&mut self) {
        let proc = &self.paths.proc;
        for pid in self.cmdline_retry.due() {
            let argv = proc.cmdline(pid);
            if !argv.is_empty() {
                self.store.push_cmdline(pid, &proc.exe(pid), &argv);
                self.cmdline_retry.done(pid);
                if let Some(r) = self.processes.iter().find(|r| r.pid == pid) {
                    self.observers.set(proc, r, observers::is_preload(&argv));
                }
            }
        }
        for &i in self.table.fresh() {
            let r = &self.processes[i];
            // New process, or its comm changed (it exec'd): read its command line.
            let argv = proc.cmdline(r.pid);
            let exe = proc.exe(r.pid);
            self.store.push_cmdline(r.pid, &exe, &argv);
            self.observers.set(proc, r, observers::is_preload(&argv));
            if argv.is_empty() && r.ppid != 2 && r.pid != 2 {
                self.cmdline_retry.add(r.pid);
            }
            let started_ns = r.starttime * 1_000_000_000 / self.clk_tck;
            self.logins
                .note(self.config, r, started_ns, &mut self.store.events);
        }
        self.cost.lap(Part::NewProcesses);
    }

    /// Stores the processes of this sample.
    fn store_processes(&mut self, now: u64) {
        self.store.push_processes(uptime_cs(now), &self.processes);
    }

    /// Feeds the done detector the boot's CPU and disk time.
    fn feed_done_detector(&mut self, now: u64, system: &SystemSample) {
        let Some((busy, _idle, _iowait, total)) = procfs::cpu_totals(system.stat) else {
            return;
        };
        self.boot_busy_ticks = busy;
        // The observers' CPU time and reads are not the boot's: without this, the recorder
        // alone can keep an emulated machine "busy", and preload's prefetch while the
        // greeter waits kept the disk busy until it ended. (The recorder's own reads are
        // not looked at: it reads /proc, and writes its trace to /run.)
        let own = self
            .processes
            .iter()
            .find(|r| r.pid == self.own_pid)
            .map_or(0, |r| r.utime + r.stime);
        self.observers.update(self.table.procfs(), &self.processes);
        self.done.detector.feed(
            now,
            busy.saturating_sub(own + self.observers.cpu_ticks),
            total,
            &procfs::disk_counters(system.diskstats),
            self.observers.read_bytes,
        );
    }

    /// Notes when the root file system becomes writable (looked at once a second).
    fn note_root_writable(&mut self, now: u64) {
        if !self.root_writable && now >= self.next_root_check_ns {
            self.next_root_check_ns = now + 1_000_000_000;
            if sys::statvfs(Path::new("/")).ok().map(|s| s.read_only) == Some(false) {
                self.root_writable = true;
                self.store.events.push(Event::new(now, "root_writable"));
            }
        }
    }

    /// The `boot_done` event if recording stops at `now`. Idle counters do not end the boot
    /// while bootprint's runner or systemd's late units still have services to start.
    fn boot_done(&mut self, now: u64) -> Option<Event> {
        let paths = self.paths;
        self.done.check(now, self.logins.text_ns, || {
            services_pending(&paths.rc_log) || late_units_pending(&paths.late_log)
        })
    }

    /// How recording ends at `now`, if it does: at boot done; or, when a greeter is up then
    /// or a session has started (autologin) and `session_wait_s` is not 0, once a user's session has started and its desktop is
    /// ready (CPU and disk idle for the settle period after the last process the session
    /// started), or no session came within `session_wait_s`, or the desktop was not ready
    /// within `desktop_timeout_s` of the session's start.
    fn end(&mut self, now: u64) -> Option<End> {
        if let Phase::Boot = self.phase {
            let boot_done = self.boot_done(now)?;
            let idle = boot_done
                .fields
                .iter()
                .any(|(k, v)| k == "reason" && v == "idle");
            let desktop = self.logins.greeter_seen || self.logins.session.is_some();
            if !(idle && desktop && self.config.session_wait_s > 0.0) {
                return Some(End {
                    boot_done,
                    desktop: None,
                });
            }
            self.phase = Phase::Desktop {
                boot_done,
                since_ns: now,
            };
        }
        let Phase::Desktop { since_ns, .. } = self.phase else {
            return None;
        };
        let desktop = self.desktop_ready(now, since_ns)?;
        let Phase::Desktop { boot_done, .. } = std::mem::replace(&mut self.phase, Phase::Boot)
        else {
            unreachable!("the phase was Desktop just above");
        };
        Some(End {
            boot_done,
            desktop: Some(desktop),
        })
    }

    /// The `desktop_ready` event if recording of the session stops at `now` (boot done at
    /// `boot_done_ns`).
    fn desktop_ready(&self, now: u64, boot_done_ns: u64) -> Option<Event> {
        if crate::sys::terminated() {
            return Some(desktop_event(now, "terminated", self.config.settle_s));
        }
        desktop_ready(
            self.config,
            &self.done.detector,
            self.logins.session.as_ref(),
            now,
            boot_done_ns,
        )
    }

    /// The `boot_done` event while the recorder goes on for a user's session.
    fn boot_done_before_desktop(&self) -> Option<Event> {
        match &self.phase {
            Phase::Desktop { boot_done, .. } => Some(boot_done.clone()),
            Phase::Boot => None,
        }
    }

    /// Hands the levers (readahead, the module loader) the milestones, at boot done.
    fn levers_at_boot_done(&mut self, levers: Levers, boot_done: &Event) {
        let idle = boot_done
            .fields
            .iter()
            .any(|(k, v)| k == "reason" && v == "idle");
        // The header holds the kernel release readahead's relearn check needs.
        self.store.header = sysinfo::header(
            &self.paths.proc,
            &self.paths.sys,
            self.config.hz,
            self.clk_tck,
            self.page_size,
        );
        let seen = Milestones {
            login_ns: self.logins.text_ns,
            done_ns: idle.then_some(boot_done.t_ns),
        };
        levers.finish(&mut self.store, self.config, self.paths, seen);
    }

    /// When recording ends: the levers' verdicts (unless given at boot done already), the last
    /// exec events, the files the boot left elsewhere and the recorder's own statistics go
    /// into the store, which is then written as the trace.
    fn finish(mut self, end: End, levers: Option<Levers>) -> io::Result<PathBuf> {
        let loop_cpu_s = sample::sys::own_usage().0;
        if let Some(levers) = levers {
            self.levers_at_boot_done(levers, &end.boot_done);
        }
        if self.done.shutdown {
            return self.finish_shutdown(end.boot_done, loop_cpu_s);
        }
        self.store.events.push(end.boot_done);
        login_at_exec(&mut self.store.events);
        if let Some(desktop) = &end.desktop {
            let session_start = self.logins.session.as_ref().map(|s| s.start_ns);
            self.store.events.extend(preload_desktop_time(
                &self.paths.config_file,
                desktop,
                session_start,
                boot_unix_s(),
            ));
        }
        self.store.events.extend(end.desktop);
        let exec_source = self.close_exec_source();
        self.copy_boot_files();
        let stats = self.stats(loop_cpu_s, exec_source);
        self.store.events.push(stats);
        if let Ok(log) = std::fs::read(&self.paths.late_log) {
            self.store.extra_files.push(("late.log".into(), log));
        }
        ask_systemd(self.config, self.paths, &mut self.store);
        let boot_id = sysinfo::boot_id(&self.paths.proc);
        // For the reboot cycle (docs/recorder.md, "Shutdown"): the wall and hardware clocks
        // now, and the boot before this one, whose shutdown led here.
        let rtc = crate::sys::rtc_offset_ns(Path::new(sysinfo::RTC_DEV)).ok();
        self.store.events.push(sysinfo::clock_event(rtc));
        let prev = previous_boot(&self.config.log_dir, &boot_id);
        if let Some(prev) = &prev {
            let cleaned = crate::shutdown::clean_incomplete(&self.config.log_dir, prev);
            self.store.events.extend(cleaned);
        }
        if let (Some(prev), true) = (&prev, is_systemd(&self.paths.proc)) {
            let journalctl = Path::new("/usr/bin/journalctl");
            let added = crate::shutdown::add_journal_stops(&self.config.log_dir, prev, journalctl);
            self.store.events.extend(added);
        }
        // After the shutdown that led here joined the others: learn from all of them.
        if self.config.timeouts && is_systemd(&self.paths.proc) {
            learn_stop_timeouts(
                &self.config.log_dir,
                &self.paths.timeouts_state,
                &mut self.store,
            );
        }
        if let Some(prev) = prev {
            self.store
                .events
                .push(Event::new(boottime_ns(), "previous_boot").with("id", prev));
        }
        let access = Access::from_group_file(&self.paths.etc_group);
        let dir = write_trace(
            &self.store,
            &self.config.log_dir,
            &self.paths.fallback_dir,
            &boot_id,
            access,
        )?;
        // With the trace and `latest` in place: the oldest traces go (docs/recorder.md,
        // "Retention"); it fails open, into the trace's retention.log.
        let limits = crate::retain::Limits::new(self.config.keep_traces, self.config.keep_mb);
        crate::retain::at_boot_done(&dir, limits, &boot_id);
        Ok(dir)
    }

    /// A shutdown's end: its last events, the kernel log and the runner's spans so far,
    /// written into the trace of the boot being shut down.
    fn finish_shutdown(mut self, end: Event, loop_cpu_s: f64) -> io::Result<PathBuf> {
        let sync_deadline_ns = end.t_ns + crate::shutdown::SYNC_DEADLINE_S * 1_000_000_000;
        self.store.events.push(end);
        self.store.events.push(crate::shutdown::clock_event());
        let exec_source = self.close_exec_source();
        self.store.dmesg = kmsg::read_all(&self.paths.kmsg);
        if let Ok(spans) = std::fs::read(&self.paths.rc_log) {
            self.store.extra_files.push(("rc.log".into(), spans));
        }
        let stats = self.stats(loop_cpu_s, exec_source);
        self.store.events.push(stats);
        let boot_id = sysinfo::boot_id(&self.paths.proc);
        let dir = crate::shutdown::write(&self.store, &self.config.log_dir, &boot_id)?;
        // The trace stands without it: a failure here is only a figure missing.
        let _ = crate::shutdown::sync_after(&dir, &self.paths.proc, sync_deadline_ns);
        Ok(dir)
    }

    /// Takes the exec events still queued and closes their source. Returns its name and how
    /// many times it lost events, for `recorder_stats`.
    fn close_exec_source(&mut self) -> (&'static str, u64) {
        self.exec_source
            .drain(boottime_ns(), &self.paths.proc, &mut self.store.events);
        let said = (self.exec_source.name(), self.exec_source.overflows());
        self.exec_source = ExecSource::Off;
        said
    }

    /// Copies into the trace what the boot left elsewhere: the kernel log, firmware times,
    /// the modules loaded, the runner's and the initramfs's logs.
    fn copy_boot_files(&mut self) {
        let (paths, store) = (self.paths, &mut self.store);
        store.dmesg = kmsg::read_all(&paths.kmsg);
        store.extra_files = sysinfo::firmware_files(&paths.sys);
        // The modules live at boot done: what udev's coldplug (and our loader) left loaded.
        if let Ok(modules) = paths.proc.read("modules") {
            store.extra_files.push(("proc_modules".into(), modules));
        }
        // The runner's spans so far (its late-service child may still be appending; the copy
        // in /var/lib/bootprint/rc-last.log is complete once it ends).
        if let Ok(spans) = std::fs::read(&paths.rc_log) {
            store.extra_files.push(("rc.log".into(), spans));
        }
        // bootprint's initramfs leaves its steps' times beside it (docs/initramfs.md).
        if let Ok(steps) = std::fs::read(paths.rc_log.with_file_name("initramfs.log")) {
            store.extra_files.push(("initramfs.log".into(), steps));
        }
    }

    /// The `recorder_stats` event: what the recording cost and what it held. `loop_cpu_s`:
    /// the CPU time used when boot was done; `(exec_source, exec_overflows)`: from
    /// [`Recorder::close_exec_source`].
    fn stats(&self, loop_cpu_s: f64, (exec_source, exec_overflows): (&str, u64)) -> Event {
        let (cpu_s, maxrss_kb) = sample::sys::own_usage();
        // Its share of all the CPU time the boot used (docs/recorder.md, "Cost").
        let boot_cpu_s = self.boot_busy_ticks as f64 / self.clk_tck.max(1) as f64;
        let share_pct = if boot_cpu_s > 0.0 {
            100.0 * cpu_s / boot_cpu_s
        } else {
            0.0
        };
        let setup_cpu_s = self.cost.setup_cpu_s;
        let mut stats = Event::new(boottime_ns(), "recorder_stats")
            .with("samples", self.store.ps_sample_count())
            .with("hz", self.config.hz)
            .with("boot_cpu_s", format!("{boot_cpu_s:.3}"))
            .with("share_pct", format!("{share_pct:.2}"))
            .with("setup_cpu_s", format!("{setup_cpu_s:.3}"))
            .with("at_done_cpu_s", format!("{loop_cpu_s:.3}"))
            .with("late_samples", self.late_samples)
            .with("cpu_s", format!("{cpu_s:.3}"))
            .with("maxrss_kb", maxrss_kb)
            .with("ps_lines", self.store.ps_line_count())
            .with("stat_reads", self.table.reads)
            .with("store_bytes", self.store.memory_bytes())
            .with("delayacct", u8::from(self.delayacct_on))
            .with("exec_source", exec_source)
            .with("exec_overflows", exec_overflows);
        // What the done rule did not count as the boot's (docs/recorder.md, "When boot is
        // done"), when preload ran.
        let o = &self.observers;
        if o.seen {
            let cpu = o.cpu_ticks as f64 / self.clk_tck.max(1) as f64;
            stats = stats.with("preload_cpu_s", format!("{cpu:.3}")).with(
                "preload_read_mb",
                format!("{:.3}", o.read_bytes as f64 / 1e6),
            );
        }
        if self.config.cost_detail {
            let ms = self.cost.parts.map(|ns| (ns / 1_000_000).to_string());
            stats = stats
                .with("parts_ms", ms.join(","))
                .with("list_ms", self.table.list_ns / 1_000_000);
        }
        stats
    }
}

/// A sample's time in the bootchart2 logs: centiseconds of uptime.
fn uptime_cs(now_ns: u64) -> u64 {
    now_ns / 10_000_000
}

/// The parts of a sample whose CPU time `cost_detail` reports, in `parts_ms`'s order.
#[derive(Debug, Clone, Copy)]
enum Part {
    ExecEvents,
    SystemFiles,
    ProcessTable,
    NewProcesses,
    Rest,
}

/// The recorder's own CPU time: before its loop, and with `cost_detail` by part of a sample,
/// for `recorder_stats`: where the recorder's cost goes. Only with `cost_detail` by part: the
/// clock reads are system calls, a cost of their own.
struct LoopCost {
    /// CPU time (s) used before the loop began.
    setup_cpu_s: f64,
    detail: bool,
    /// Thread CPU time (ns) by [`Part`].
    parts: [u64; 5],
    /// The thread CPU clock at the last lap.
    mark: u64,
}

impl LoopCost {
    fn start(detail: bool) -> LoopCost {
        let setup_cpu_s = sample::sys::own_usage().0;
        let mark = if detail { sys::thread_cpu_ns() } else { 0 };
        LoopCost {
            setup_cpu_s,
            detail,
            parts: [0; 5],
            mark,
        }
    }

    /// Charges the CPU time since the last lap to `part`.
    fn lap(&mut self, part: Part) {
        if !self.detail {
            return;
        }
        let t = sys::thread_cpu_ns();
        self.parts[part as usize] += t.saturating_sub(self.mark);
        self.mark = t;
    }
}

/// The login milestones: the first process with one of `login_names` marks the text login,
/// the first with one of `greeter_names` the graphical one, each at the process's start.
#[derive(Debug, Default)]
struct Logins {
    /// When the text login's process started (ns): boot done is not before it.
    text_ns: Option<u64>,
    /// Whether the graphical login's process has been seen.
    greeter_seen: bool,
    /// A user's desktop session, once its session manager started.
    session: Option<Session>,
}

/// A user's desktop session: its session manager and the processes it started.
#[derive(Debug)]
struct Session {
    pid: u32,
    /// When the session manager started (ns).
    start_ns: u64,
    /// The session manager and every process seen starting under it.
    pids: std::collections::HashSet<u32>,
    /// When the last of them started (ns): desktop ready is not before it.
    last_start_ns: u64,
}

impl Logins {
    /// Notes the milestones that the new process `r`, started at `started_ns`, marks.
    fn note(&mut self, config: &Config, r: &PsRecord, started_ns: u64, events: &mut Vec<Event>) {
        if self.text_ns.is_none() && config.login_names.contains(&r.comm) {
            self.text_ns = Some(started_ns);
            events.push(milestone(started_ns, "text_login", r.pid, &r.comm));
        }
        if !self.greeter_seen && config.greeter_names.contains(&r.comm) {
            self.greeter_seen = true;
            events.push(milestone(started_ns, "graphical_login", r.pid, &r.comm));
        }
        match &mut self.session {
            // With autologin there is no greeter: the session manager alone says it.
            None if config.session_names.contains(&r.comm) => {
                self.session = Some(Session {
                    pid: r.pid,
                    start_ns: started_ns,
                    pids: [r.pid].into(),
                    last_start_ns: started_ns,
                });
                events.push(milestone(started_ns, "session_start", r.pid, &r.comm));
            }
            // A new process under the session (or one of its processes that exec'd).
            Some(s) if s.pids.contains(&r.ppid) || s.pids.contains(&r.pid) => {
                s.pids.insert(r.pid);
                s.last_start_ns = s.last_start_ns.max(started_ns);
            }
            _ => {}
        }
    }
}

/// The `desktop_ready` event if the recording of a user's session stops at `now`, boot done
/// having been at `boot_done_ns`: idle after the last process the session started (`idle`),
/// no session within `session_wait_s` (`no_session`), or not idle within
/// `desktop_timeout_s` of the session's start (`timeout`).
fn desktop_ready(
    config: &Config,
    detector: &DoneDetector,
    session: Option<&Session>,
    now: u64,
    boot_done_ns: u64,
) -> Option<Event> {
    let s_to_ns = |s: f64| (s * 1e9) as u64;
    let event = |t: u64, reason: &str| desktop_event(t, reason, config.settle_s);
    let Some(session) = session else {
        let waited = now.saturating_sub(boot_done_ns);
        return (waited >= s_to_ns(config.session_wait_s)).then(|| {
            event(now, "no_session").with("waited_s", format!("{:.1}", waited as f64 / 1e9))
        });
    };
    if let Some(at) = detector.done_at(now, Some(session.last_start_ns)) {
        return Some(event(at, "idle").with("session_pid", session.pid));
    }
    (now.saturating_sub(session.start_ns) >= s_to_ns(config.desktop_timeout_s))
        .then(|| event(now, "timeout").with("session_pid", session.pid))
}

/// Gives preload (when it is enabled) this login's desktop time, from the session's start to
/// `desktop` when the desktop became ready by the idle rule: preload's A/B history is judged
/// on it (docs/preload.md, "Proving itself"). The `preload_login` event says what came of
/// it; none when preload is off or the desktop was not found ready. Only a login preload
/// recorded since the boot began (`boot_unix_s`) takes it: after an autologin preload
/// records none. A login after this boot's recording gets no time (nothing measures it).
fn preload_desktop_time(
    config_file: &Path,
    desktop: &Event,
    session_start_ns: Option<u64>,
    boot_unix_s: u64,
) -> Option<Event> {
    let start = session_start_ns?;
    if desktop.get("reason") != Some("idle") {
        return None;
    }
    let config = preload::config::Config::load(config_file).ok()?;
    if !config.enabled {
        return None;
    }
    let secs = desktop.t_ns.saturating_sub(start) as f64 / 1e9;
    let event = Event::new(desktop.t_ns, "preload_login").with("desktop_s", format!("{secs:.3}"));
    Some(
        match preload::run::desktop_time(&config, secs, Some(boot_unix_s)) {
            Ok(Timed::Recorded) => event.with("result", "recorded"),
            Ok(Timed::SwitchedOff(why)) => event.with("result", "switched_off").with("why", why),
            Ok(Timed::NoLogin) => event.with("result", "no_login"),
            Err(e) => event.with("result", "error").with("error", e),
        },
    )
}

/// When the machine booted, in seconds since the epoch (a second early rather than late:
/// a login recorded in the boot's first second is the boot's).
fn boot_unix_s() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    now.saturating_sub(boottime_ns() / 1_000_000_000 + 1)
}

fn desktop_event(t_ns: u64, reason: &str, settle_s: f64) -> Event {
    Event::new(t_ns, "desktop_ready")
        .with("reason", reason)
        .with("settle_s", settle_s)
}

/// When recording stops, as its `boot_done` event: boot done (CPU and disk idle for the
/// settle period after the login, with no services left to start), a termination signal, the
/// uptime limit (`timeout_s`) or, outside boot, the run's length.
struct DoneCheck {
    detector: DoneDetector,
    /// Boot done was put off because services were still starting; the event says so.
    waited_for_services: bool,
    /// The settle period (s), for the event.
    settle_s: f64,
    /// The uptime limit (ns).
    timeout_ns: u64,
    /// When recording began (ns) and how long it may last.
    started_ns: u64,
    stop_after_ns: Option<u64>,
    /// A shutdown: idle does not end it (a stop that sleeps leaves the machine idle), a
    /// request to save does, and the event is `shutdown_end`.
    shutdown: bool,
}

impl DoneCheck {
    fn new(config: &Config, started_ns: u64, stop_after_ns: Option<u64>) -> DoneCheck {
        DoneCheck {
            detector: DoneDetector::new(Thresholds {
                cpu: config.idle_cpu,
                disk: config.idle_disk,
                settle_ns: (config.settle_s * 1e9) as u64,
            }),
            waited_for_services: false,
            settle_s: config.settle_s,
            timeout_ns: (config.timeout_s * 1e9) as u64,
            started_ns,
            stop_after_ns,
            shutdown: false,
        }
    }

    /// The `boot_done` event if recording stops at `now`, the text login having started at
    /// `login_ns`. `services_pending` is asked only once the counters say idle; while it says
    /// yes, idle time before `now` does not count.
    fn check(
        &mut self,
        now: u64,
        login_ns: Option<u64>,
        services_pending: impl FnOnce() -> bool,
    ) -> Option<Event> {
        if self.shutdown {
            if crate::sys::save_requested() {
                return Some(self.event(now, "saved"));
            }
        } else if self.detector.done_at(now, login_ns).is_some() && services_pending() {
            self.detector.not_before(now);
            self.waited_for_services = true;
        }
        if let Some(at) = self
            .detector
            .done_at(now, login_ns)
            .filter(|_| !self.shutdown)
        {
            let done = self.event(at, "idle");
            return Some(if self.waited_for_services {
                done.with("waited_for", "services")
            } else {
                done
            });
        }
        if crate::sys::terminated() {
            return Some(self.event(now, "terminated"));
        }
        let over_time = now >= self.timeout_ns;
        let over_run = self
            .stop_after_ns
            .is_some_and(|d| now - self.started_ns >= d);
        (over_time || over_run)
            .then(|| self.event(now, if over_time { "timeout" } else { "limit" }))
    }

    fn event(&self, t_ns: u64, reason: &str) -> Event {
        let kind = if self.shutdown {
            crate::shutdown::END_EVENT
        } else {
            "boot_done"
        };
        Event::new(t_ns, kind)
            .with("reason", reason)
            .with("settle_s", self.settle_s)
    }
}

/// Processes whose command line read empty though they are no kernel threads: caught in
/// the middle of an exec (the kernel sets the new name before the new arguments; under
/// emulation the window is wide), they are read again at the next few samples. A later
/// `cmdline2.log` entry for a pid replaces the earlier one. Seen in `make test`: `sleep 4`
/// recorded as `sleep` with no arguments, and `bootprint advise` could not name it.
#[derive(Debug, Default)]
struct CmdlineRetry {
    /// (pid, samples left).
    pending: Vec<(u32, u8)>,
}

impl CmdlineRetry {
    /// Samples a process is read again at most.
    const TRIES: u8 = 5;

    fn add(&mut self, pid: u32) {
        self.pending.retain(|&(p, _)| p != pid);
        self.pending.push((pid, Self::TRIES));
    }

    /// The pids to read again this sample (each counts one try; out of tries, dropped).
    fn due(&mut self) -> Vec<u32> {
        self.pending.retain(|&(_, left)| left > 0);
        for (_, left) in &mut self.pending {
            *left -= 1;
        }
        self.pending.iter().map(|&(p, _)| p).collect()
    }

    fn done(&mut self, pid: u32) {
        self.pending.retain(|&(p, _)| p != pid);
    }
}

/// A login milestone's process may run its program well after it was forked: systemd's
/// gettys are `Type=idle`, forked at once and exec'd only when the job queue is empty (up
/// to 5 s later, more under load). The milestone is when the login program began: the exec
/// of that pid into a program of the milestone's name, when the exec events say so
/// (`source=exec`); else the process's start.
fn login_at_exec(events: &mut [Event]) {
    let execs: Vec<(u64, String, String)> = events
        .iter()
        .filter(|e| e.kind == "exec")
        .filter_map(|e| {
            let program = e.get("path")?.rsplit('/').next()?.to_string();
            Some((e.t_ns, e.get("pid")?.to_string(), program))
        })
        .collect();
    for m in events.iter_mut().filter(|e| {
        e.kind == "milestone" && matches!(e.get("name"), Some("text_login" | "graphical_login"))
    }) {
        let (Some(pid), Some(comm)) = (m.get("pid"), m.get("comm")) else {
            continue;
        };
        // comm is the program's name cut to 15 bytes.
        let exec = execs
            .iter()
            .filter(|(t, p, prog)| *t >= m.t_ns && p == pid && prog.starts_with(comm))
            .map(|(t, _, _)| *t)
            .max();
        if let Some(t) = exec {
            m.t_ns = t;
            for (k, v) in m.fields.iter_mut() {
                if k == "source" {
                    *v = "exec".to_string();
                }
            }
        }
    }
}

fn milestone(t_ns: u64, name: &str, pid: u32, comm: &str) -> Event {
    Event::new(t_ns, "milestone")
        .with("name", name)
        .with("pid", pid)
        .with("comm", comm)
        .with("source", "process_start")
}

/// Writes the trace into `<log_dir>/<boot_id>/` (via a temporary name, so a directory with
/// that name is always complete) and points `latest` at it. Waits up to two minutes for a
/// read-only root to become writable; after that writes under `fallback`. The trace, and
/// `log_dir` when this creates it, get `access` (docs/recorder.md).
pub fn write_trace(
    store: &Store,
    log_dir: &Path,
    fallback: &Path,
    boot_id: &str,
    access: Access,
) -> io::Result<PathBuf> {
    for _ in 0..120 {
        if sys::statvfs(existing_ancestor(log_dir))
            .ok()
            .map(|s| s.read_only)
            != Some(true)
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    match write_into(store, log_dir, boot_id, access) {
        Ok(dir) => Ok(dir),
        Err(_) => write_into(store, fallback, boot_id, access),
    }
}

fn write_into(store: &Store, base: &Path, boot_id: &str, access: Access) -> io::Result<PathBuf> {
    if !base.is_dir() {
        fs::create_dir_all(base)?;
        access.set_dir(base)?;
        if let Some(parent) = base.parent() {
            let _ = crate::store::sync_dir(parent);
        }
    }
    // The trace's files are written by their paths under `base`: only where no one else
    // can rename or replace what root creates there (root's own directory, or a sticky one
    // such as /tmp).
    let st = sys::open_dir(base)
        .or_else(|_| sys::Dir::open_following(base))
        .and_then(|d| d.stat())?;
    let others_write = st.mode & 0o022 != 0 && st.mode & libc::S_ISVTX == 0;
    if (st.uid != 0 && st.uid != sys::euid()) || others_write {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is owned by uid {} with mode {:o}: traces are written only where no one \
                 else can replace what root writes",
                base.display(),
                st.uid,
                st.mode & 0o7777
            ),
        ));
    }
    let tmp = base.join(format!(".{boot_id}.tmp"));
    let dir = base.join(boot_id);
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir(&tmp)?;
    // Before anything is written into it: no moment where the kernel log is readable.
    access.set_dir(&tmp)?;
    // The trace must survive a power cut right after boot: its files (write_to) and their
    // directory entries are on disk before the rename makes it appear, and the rename and
    // `latest` after.
    store.write_to(&tmp, access)?;
    crate::fault::at("poweroff-in-trace");
    crate::store::sync_dir(&tmp)?;
    if dir.exists() {
        fs::remove_dir_all(&dir)?;
    }
    fs::rename(&tmp, &dir)?;
    let link_tmp = base.join(".latest.tmp");
    let _ = fs::remove_file(&link_tmp);
    std::os::unix::fs::symlink(boot_id, &link_tmp)?;
    fs::rename(&link_tmp, base.join("latest"))?;
    // The trace is in place whatever this says; writing it again elsewhere would not help.
    let _ = crate::store::sync_dir(base);
    Ok(dir)
}

/// The boot `latest` names, before this boot's trace replaces it: the one before, when it
/// is another boot's and a plain name.
fn previous_boot(log_dir: &Path, boot_id: &str) -> Option<String> {
    let target = fs::read_link(log_dir.join("latest")).ok()?;
    let name = target.to_str()?;
    let plain = !name.is_empty() && !name.contains('/') && !name.starts_with('.');
    (plain && name != boot_id).then(|| name.to_string())
}

fn existing_ancestor(path: &Path) -> &Path {
    let mut p = path;
    while !p.exists() {
        match p.parent() {
            Some(parent) => p = parent,
            None => break,
        }
    }
    p
}

/// Whether systemd's late units are still being started (`systemd::waiter::pending`), with
/// the same staleness rule as the runner's log.
fn late_units_pending(late_log: &Path) -> bool {
    let fresh = std::fs::metadata(late_log)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age.as_secs() < 130);
    fresh
        && std::fs::read_to_string(late_log)
            .map(|t| systemd::waiter::pending(&t))
            .unwrap_or(false)
}

/// Whether PID 1 is systemd.
fn is_systemd(proc: &ProcFs) -> bool {
    let pid1 = proc.read("1/comm").unwrap_or_default();
    String::from_utf8_lossy(&pid1).trim() == "systemd"
}

/// On systemd (PID 1's name says so), asks the manager once for every loaded unit
/// (`systemd::learn::query`): their timing and dependencies go into the trace as
/// `systemd-units.log` (`trace::units`), and when the late switch is on, the units that can
/// start late next boot are chosen from the same answer and kept (`systemd::late`; the
/// choice, with the reason for each unit kept early, goes into the trace as
/// `systemd-late.txt`). Runs after boot done, so it costs the boot nothing; any failure (no
/// systemctl, a timeout, garbage) is a note in the file and a warning event, and the trace
/// is written all the same, the last late state left as it was.
fn ask_systemd(config: &Config, paths: &Paths, store: &mut Store) {
    if !is_systemd(&paths.proc) {
        return;
    }
    let t0 = boottime_ns();
    let systemctl = ["/usr/bin/systemctl", "/bin/systemctl"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists())
        .unwrap_or(Path::new("systemctl"));
    let asked = systemd::learn::query(systemctl, systemd::learn::QUERY_LIMIT);
    // Both clocks read back to back: their difference is the time spent suspended, which
    // CLOCK_MONOTONIC leaves out (docs/trace-format.md, systemd-units.log).
    let offset = boottime_ns().saturating_sub(sys::monotonic_ns());
    let units = systemd::learn::units_log(asked.as_ref(), offset);
    store.events.push(
        Event::new(boottime_ns(), "systemd_units")
            .with("units", units.units.len())
            .with("ms", (boottime_ns().saturating_sub(t0)) / 1_000_000),
    );
    store.extra_files.push((
        trace::units::FILE_NAME.into(),
        trace::units::write(&units).into_bytes(),
    ));
    let graph = match asked {
        Ok(g) => g,
        Err(err) => {
            store.events.push(
                Event::new(boottime_ns(), "warning")
                    .with("what", format!("systemd units not read: {err}")),
            );
            return;
        }
    };
    if !config.late {
        return;
    }
    let pins = systemd::late::Pins {
        late: config.late_units.clone(),
        never_late: config.never_late.clone(),
    };
    let choice = systemd::late::choose(&graph.units, &pins);
    // The unit files the manager's graph came from: the generator defers nothing once
    // they differ (a unit installed since may need a late one) until this learns again.
    let units = systemd::late::fingerprint(Path::new("/"));
    let text = systemd::late::to_state(&choice, units, &pins);
    let saved = sys::write_atomic(&paths.late_state, text.as_bytes());
    let mut e = Event::new(boottime_ns(), "late_learned")
        .with("late", choice.late.len())
        .with("kept", choice.kept.len())
        .with("ms", (boottime_ns().saturating_sub(t0)) / 1_000_000);
    if let Err(err) = saved {
        e = e.with(
            "error",
            format!("{}: {err}", paths.late_state.display()).replace(' ', "_"),
        );
    }
    store.events.push(e);
    store
        .extra_files
        .push(("systemd-late.txt".into(), text.into_bytes()));
}

/// The `timeouts` lever's learning at boot done (`systemd::timeouts`): every kept
/// shutdown's stops (`*/shutdown/systemd-stops.log` under `log_dir`, the one that led to
/// this boot just added), the services to give a learned stop timeout, kept in `state`
/// when they changed, and then `systemctl daemon-reload`, so that the generator's drop-ins
/// hold for this boot's own shutdown. Into the trace: `stop-timeouts.txt` (what was
/// learned, with the evidence) and a `timeouts_learned` event. Fails open: the state stays
/// as it was.
fn learn_stop_timeouts(log_dir: &Path, state: &Path, store: &mut Store) {
    let t0 = boottime_ns();
    let mut records = Vec::new();
    let mut unread = 0;
    // Each trace once: `latest` (a link to one) is not followed.
    for entry in fs::read_dir(log_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
    {
        let file = entry
            .path()
            .join("shutdown")
            .join(systemd::journal::FILE_NAME);
        let Ok(bytes) = sys::read_regular(&file, 4 << 20) else {
            continue;
        };
        match systemd::timeouts::stops_of(&String::from_utf8_lossy(&bytes)) {
            Ok(r) => records.extend(r),
            Err(_) => unread += 1,
        }
    }
    let learned = systemd::timeouts::learn(&records);
    let text = systemd::timeouts::to_state(&learned);
    let changed = fs::read_to_string(state).ok().as_deref() != Some(text.as_str());
    let mut e = Event::new(boottime_ns(), "timeouts_learned")
        .with("units", learned.len())
        .with("stops", records.len())
        .with("changed", u8::from(changed));
    if unread > 0 {
        e = e.with("unread", unread);
    }
    if changed {
        match sys::write_atomic(state, text.as_bytes()) {
            Err(err) => {
                e = e.with(
                    "error",
                    format!("{}: {err}", state.display()).replace(' ', "_"),
                )
            }
            Ok(()) => {
                let mut reload = Command::new("systemctl");
                reload.arg("daemon-reload");
                let limit = std::time::Duration::from_secs(30);
                e = e.with(
                    "reload",
                    match systemd::learn::output_bytes_within(&mut reload, limit) {
                        Ok(_) => "ok".to_string(),
                        Err(err) => err.replace(char::is_whitespace, "_"),
                    },
                );
            }
        }
    }
    store
        .events
        .push(e.with("ms", boottime_ns().saturating_sub(t0) / 1_000_000));
    store
        .extra_files
        .push(("stop-timeouts.txt".into(), text.into_bytes()));
}

/// Whether bootprint's service runner still has services to start ([`done::services_pending`]
/// on its span log). A log untouched for longer than the runner's default per-script timeout
/// (120 s) and a margin belongs to a runner that died: it holds nothing back.
fn services_pending(rc_log: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(rc_log) else {
        return false;
    };
    let fresh = meta
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_none_or(|age| age.as_secs() < 130);
    fresh
        && std::fs::read_to_string(rc_log)
            .map(|t| crate::done::services_pending(&t))
            .unwrap_or(false)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_login_exec_d_after_its_fork_counts_from_the_exec() {
        use super::{login_at_exec, milestone, Event};
        let mut ev = vec![
            milestone(23_040_000_000, "text_login", 381, "agetty"),
            Event::new(23_059_811_764, "exec")
                .with("pid", 381)
                .with("path", "/usr/lib/systemd/systemd-executor"),
            Event::new(29_315_670_151, "exec")
                .with("pid", 381)
                .with("path", "/usr/sbin/agetty"),
            Event::new(30_000_000_000, "exec")
                .with("pid", 999)
                .with("path", "/usr/sbin/agetty"),
            milestone(40_000_000_000, "graphical_login", 500, "lightdm-gtk-gre"),
        ];
        login_at_exec(&mut ev);
        assert_eq!(ev[0].t_ns, 29_315_670_151);
        assert_eq!(ev[0].get("source"), Some("exec"));
        // No exec of that pid recorded: the process's start stands.
        assert_eq!(ev[4].t_ns, 40_000_000_000);
        assert_eq!(ev[4].get("source"), Some("process_start"));
    }

    #[test]
    fn an_empty_command_line_is_read_again_a_few_times() {
        let mut r = CmdlineRetry::default();
        r.add(891);
        r.add(892);
        assert_eq!(r.due(), vec![891, 892]);
        r.done(891);
        for _ in 1..CmdlineRetry::TRIES {
            assert_eq!(r.due(), vec![892]);
        }
        assert!(r.due().is_empty(), "out of tries");
        // A pid exec'ing again starts over.
        r.add(7);
        r.add(7);
        assert_eq!(r.due(), vec![7]);
    }

    use super::*;
    use std::os::unix::fs::MetadataExt;

    const S: u64 = 1_000_000_000;

    /// A check with the default thresholds (CPU 25%, disk 10%, settle 3 s, limit 240 s).
    fn done_check(stop_after_ns: Option<u64>) -> DoneCheck {
        DoneCheck::new(&Config::default(), S, stop_after_ns)
    }

    /// Feeds `check` one sample a second from `from` to `to` seconds: `busy` jiffies of 100
    /// per second, the disk idle.
    fn feed(check: &mut DoneCheck, from: u64, to: u64, busy: u64) {
        for s in from..=to {
            let disks = [("vda".to_string(), procfs::DiskCounters::default())];
            check.detector.feed(s * S, s * busy, s * 100, &disks, 0);
        }
    }

    #[test]
    fn boot_done_waits_for_the_login_and_for_services_still_starting() {
        let mut check = done_check(None);
        feed(&mut check, 0, 6, 1);
        assert!(check.check(6 * S, None, || false).is_none(), "no login yet");
        // The login at 2 s; idle since, but the runner has services to start at 6 s.
        assert!(check.check(6 * S, Some(2 * S), || true).is_none());
        feed(&mut check, 7, 8, 1);
        assert!(
            check.check(8 * S, Some(2 * S), || false).is_none(),
            "the settle period counts from 6 s"
        );
        feed(&mut check, 9, 9, 1);
        let done = check.check(9 * S, Some(2 * S), || false).unwrap();
        assert_eq!(
            done.to_line(),
            "6000000000 boot_done reason=idle settle_s=3 waited_for=services"
        );
    }

    #[test]
    fn services_are_asked_about_only_once_the_counters_say_idle() {
        let mut check = done_check(None);
        feed(&mut check, 0, 6, 50);
        let asked = std::cell::Cell::new(0);
        let pending = || {
            asked.set(asked.get() + 1);
            true
        };
        assert!(check.check(6 * S, Some(0), pending).is_none());
        assert_eq!(asked.get(), 0, "busy: the runner's log is not read");
        let mut check = done_check(None);
        feed(&mut check, 0, 6, 1);
        assert!(check.check(6 * S, Some(0), pending).is_none());
        assert_eq!(asked.get(), 1);
        let mut check = done_check(None);
        feed(&mut check, 0, 6, 1);
        let done = check.check(6 * S, Some(0), || false).unwrap();
        assert_eq!(done.to_line(), "0 boot_done reason=idle settle_s=3");
    }

    #[test]
    fn recording_stops_at_the_uptime_limit_or_after_the_run_length() {
        // Busy throughout: only a limit ends it.
        let mut check = done_check(None);
        feed(&mut check, 0, 5, 50);
        assert!(check.check(239 * S, Some(0), || false).is_none());
        let done = check.check(240 * S, Some(0), || false).unwrap();
        assert_eq!(
            done.to_line(),
            "240000000000 boot_done reason=timeout settle_s=3"
        );
        // Started at 1 s, for 3 s.
        let mut check = done_check(Some(3 * S));
        feed(&mut check, 0, 5, 50);
        assert!(check.check(3 * S, None, || false).is_none());
        let done = check.check(4 * S, None, || false).unwrap();
        assert_eq!(
            done.to_line(),
            "4000000000 boot_done reason=limit settle_s=3"
        );
    }

    #[test]
    fn the_first_login_and_the_first_greeter_are_milestones() {
        let config = Config::default();
        let mut logins = Logins::default();
        let mut events = Vec::new();
        let process = |pid, comm: &str| PsRecord {
            pid,
            comm: comm.into(),
            ..PsRecord::default()
        };
        logins.note(&config, &process(200, "sshd"), 5, &mut events);
        logins.note(&config, &process(300, "agetty"), 12 * S, &mut events);
        logins.note(&config, &process(301, "agetty"), 13 * S, &mut events);
        logins.note(
            &config,
            &process(400, "lightdm-greeter"),
            20 * S,
            &mut events,
        );
        logins.note(
            &config,
            &process(401, "lightdm-greeter"),
            21 * S,
            &mut events,
        );
        assert_eq!(logins.text_ns, Some(12 * S));
        let lines: Vec<String> = events.iter().map(Event::to_line).collect();
        assert_eq!(
            lines,
            vec![
                "12000000000 milestone name=text_login pid=300 comm=agetty source=process_start",
                "20000000000 milestone name=graphical_login pid=400 comm=lightdm-greeter \
                 source=process_start",
            ]
        );
    }

    fn process(pid: u32, ppid: u32, comm: &str) -> PsRecord {
        PsRecord {
            pid,
            ppid,
            comm: comm.into(),
            ..PsRecord::default()
        }
    }

    #[test]
    fn a_session_manager_starts_the_session_and_its_processes_join_it() {
        let config = Config::default();
        let mut events = Vec::new();
        // LightDM's autologin starts no greeter: the session manager alone starts a session.
        let mut autologin = Logins::default();
        autologin.note(
            &config,
            &process(500, 1, "xfce4-session"),
            30 * S,
            &mut events,
        );
        assert_eq!(autologin.session.as_ref().map(|s| s.pid), Some(500));
        events.clear();

        let mut logins = Logins::default();
        logins.note(
            &config,
            &process(400, 1, "lightdm-gtk-gre"),
            20 * S,
            &mut events,
        );
        logins.note(
            &config,
            &process(500, 450, "xfce4-session"),
            30 * S,
            &mut events,
        );
        logins.note(&config, &process(501, 500, "xfwm4"), 32 * S, &mut events);
        logins.note(&config, &process(600, 1, "cron"), 40 * S, &mut events);
        logins.note(
            &config,
            &process(502, 501, "firefox-esr"),
            35 * S,
            &mut events,
        );
        // A second session manager outside it is neither a second session nor part of it.
        logins.note(
            &config,
            &process(700, 1, "xfce4-session"),
            36 * S,
            &mut events,
        );
        let s = logins.session.as_ref().unwrap();
        assert_eq!((s.pid, s.start_ns, s.last_start_ns), (500, 30 * S, 35 * S));
        assert!(s.pids.contains(&502) && !s.pids.contains(&600));
        let lines: Vec<String> = events.iter().map(Event::to_line).collect();
        assert_eq!(
            lines[1],
            "30000000000 milestone name=session_start pid=500 comm=xfce4-session \
             source=process_start"
        );
        assert_eq!(lines.len(), 2, "{lines:?}");
    }

    /// A detector fed one sample a second from 0 to `to` s: the CPU 90 % busy before `idle_from`
    /// s, idle after.
    fn detector(to: u64, idle_from: u64) -> DoneDetector {
        let mut d = DoneCheck::new(&Config::default(), 0, None).detector;
        let mut busy = 0;
        for t in 0..=to {
            if t <= idle_from {
                busy += 90;
            }
            let disks = [("vda".to_string(), procfs::DiskCounters::default())];
            d.feed(t * S, busy, t * 100, &disks, 0);
        }
        d
    }

    #[test]
    fn desktop_ready_is_the_idle_after_the_last_process_the_session_started() {
        let config = Config::default();
        let session = Session {
            pid: 500,
            start_ns: 30 * S,
            pids: [500].into(),
            last_start_ns: 35 * S,
        };
        let ready = |now: u64, idle_from: u64, session: Option<&Session>| {
            desktop_ready(&config, &detector(now, idle_from), session, now * S, 25 * S)
                .map(|e| e.to_line())
        };
        // Idle from 40 s: ready at 40 s once the 3 s settle period has passed.
        assert_eq!(ready(42, 40, Some(&session)), None);
        assert_eq!(
            ready(43, 40, Some(&session)).as_deref(),
            Some("40000000000 desktop_ready reason=idle settle_s=3 session_pid=500")
        );
        // Idle since 20 s, before the session's last process: counted from that one.
        assert_eq!(
            ready(38, 20, Some(&session)).as_deref(),
            Some("35000000000 desktop_ready reason=idle settle_s=3 session_pid=500")
        );
        // Never idle: the session's limit (300 s after its start).
        assert_eq!(ready(329, 400, Some(&session)), None);
        assert_eq!(
            ready(330, 400, Some(&session)).as_deref(),
            Some("330000000000 desktop_ready reason=timeout settle_s=3 session_pid=500")
        );
        // No session: 120 s after boot done (25 s), recording stops.
        assert_eq!(ready(144, 0, None), None);
        assert_eq!(
            ready(145, 0, None).as_deref(),
            Some("145000000000 desktop_ready reason=no_session settle_s=3 waited_s=120.0")
        );
    }

    #[test]
    fn preload_gets_the_desktop_time_of_a_login_it_recorded() {
        let tmp = tempfile::tempdir().unwrap();
        let conf = tmp.path().join("bootprint.toml");
        let dir = tmp.path().join("preload");
        std::fs::create_dir(&dir).unwrap();
        let state = dir.join("state");
        std::fs::write(
            &state,
            "# bootprint preload state (docs/preload.md)\nversion 1\nverdict auto\n\
             login 1795000000 learn - -\n",
        )
        .unwrap();
        let ready =
            |reason: &str| Event::new(41_500_000_000, "desktop_ready").with("reason", reason);
        let give = |reason: &str, start: Option<u64>| {
            preload_desktop_time(&conf, &ready(reason), start, 1_794_999_000).map(|e| e.to_line())
        };
        // Preload off (no configuration file: the default): nothing given, the state as it was.
        assert_eq!(give("idle", Some(30 * S)), None);
        std::fs::write(
            &conf,
            format!("[preload]\nenabled = true\ndir = \"{}\"\n", dir.display()),
        )
        .unwrap();
        // Not found ready, or no session: no time.
        assert_eq!(give("timeout", Some(30 * S)), None);
        assert_eq!(give("idle", None), None);
        assert!(!std::fs::read_to_string(&state).unwrap().contains("11.500"));
        assert_eq!(
            give("idle", Some(30 * S)).as_deref(),
            Some("41500000000 preload_login desktop_s=11.500 result=recorded")
        );
        assert!(std::fs::read_to_string(&state)
            .unwrap()
            .contains("login 1795000000 learn 11.500 -"));
        // The login has its time: a second one is an error, said in the event.
        let again = give("idle", Some(30 * S)).unwrap();
        assert!(again.contains("result=error"), "{again}");
        // A boot after that login (an autologin: preload recorded none): no one's time.
        let later = preload_desktop_time(&conf, &ready("idle"), Some(30 * S), 1_795_000_100);
        assert_eq!(
            later.map(|e| e.to_line()).as_deref(),
            Some("41500000000 preload_login desktop_s=11.500 result=no_login")
        );
    }

    /// Every directory and file under `dir` (itself included) with its mode and group.
    fn modes(dir: &Path) -> Vec<(PathBuf, bool, u32, u32)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(p) = stack.pop() {
            let m = fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                continue; // `latest`: a link's own mode means nothing
            }
            out.push((p.clone(), m.is_dir(), m.mode() & 0o7777, m.gid()));
            if m.is_dir() {
                for e in fs::read_dir(&p).unwrap() {
                    stack.push(e.unwrap().path());
                }
            }
        }
        out
    }

    /// Each file of the trace is on disk before the rename that makes the trace appear, and
    /// the rename itself (and `latest`) is on disk after: fsync each file, the temporary
    /// directory, then the log directory.
    #[test]
    fn trace_files_are_synced_before_the_rename_and_the_directory_after() {
        let d = std::env::temp_dir().join(format!("bp-sync-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        let mut store = Store::default();
        store.push_system(100, b"cpu 1 2 3 4 5 6 7\n", b"", None);
        store.extra_files.push((
            "firmware/fpdt/boot/firmware_start_ns".into(),
            b"1\n".to_vec(),
        ));
        let base = d.join("log");
        crate::store::SYNCED.with(|s| s.borrow_mut().clear());
        let dir = write_trace(&store, &base, &d.join("fb"), "b00t", Access { gid: None }).unwrap();
        let synced = crate::store::SYNCED.with(|s| s.take());
        let tmp = base.join(".b00t.tmp");
        let mut files = Vec::new();
        let mut stack = vec![dir.clone()];
        while let Some(p) = stack.pop() {
            for e in fs::read_dir(&p).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    stack.push(path.clone());
                }
                files.push(path.strip_prefix(&dir).unwrap().to_path_buf());
            }
        }
        assert!(files.len() >= 10, "{files:?}");
        let at = |p: &Path| synced.iter().position(|s| s == p);
        let tmp_synced = at(&tmp).unwrap_or_else(|| panic!("{tmp:?} not synced: {synced:?}"));
        for f in &files {
            let i = at(&tmp.join(f)).unwrap_or_else(|| panic!("{f:?} not synced: {synced:?}"));
            assert!(
                i < tmp_synced,
                "{f:?} synced after its directory: {synced:?}"
            );
        }
        let base_synced = at(&base).unwrap_or_else(|| panic!("{base:?} not synced: {synced:?}"));
        assert!(base_synced > tmp_synced, "{synced:?}");
        fs::remove_dir_all(&d).unwrap();
    }

    /// The trace's files are written by their paths: never into a directory where someone
    /// else could rename or replace what root creates (another user's, or one others can
    /// write that is not sticky); the fallback takes the trace instead. A sticky one (/tmp)
    /// is fine.
    #[test]
    fn a_log_directory_others_can_change_gets_no_trace() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let mut store = Store::default();
        store.push_system(100, b"cpu 1 2 3 4 5 6 7\n", b"", None);
        let base = d.join("log");
        fs::create_dir(&base).unwrap();
        fs::set_permissions(&base, fs::Permissions::from_mode(0o777)).unwrap();
        let fb = d.join("fallback");
        let dir = write_trace(&store, &base, &fb, "b00t", Access { gid: None }).unwrap();
        assert!(dir.starts_with(&fb), "{}", dir.display());
        assert_eq!(fs::read_dir(&base).unwrap().count(), 0);
        fs::set_permissions(&base, fs::Permissions::from_mode(0o1777)).unwrap();
        let dir = write_trace(&store, &base, &fb, "b00t", Access { gid: None }).unwrap();
        assert!(dir.starts_with(&base), "{}", dir.display());
    }

    /// Defect 9: a trace holds the whole kernel log and every command line; it was
    /// world-readable. Only root and group adm may read it.
    #[test]
    fn defect9_trace_is_for_root_and_adm_only() {
        let d = std::env::temp_dir().join(format!("bp-perms-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        let mut store = Store::default();
        store.push_system(100, b"cpu 1 2 3 4 5 6 7\n", b"", None);
        store.dmesg = b"[    0.000000] secret\n".to_vec();
        store.extra_files.push((
            "firmware/fpdt/boot/firmware_start_ns".into(),
            b"1\n".to_vec(),
        ));
        // A group file with adm (gid 4, as on Debian), and one without.
        fs::create_dir_all(&d).unwrap();
        let with_adm = d.join("group");
        fs::write(&with_adm, "root:x:0:\nadmins:x:9:\nadm:x:4:syslog,me\n").unwrap();
        let without = d.join("group2");
        fs::write(&without, "root:x:0:\nadmins:x:9:\n").unwrap();
        for (group, dmode, fmode, gid) in [
            (&with_adm, 0o750, 0o640, Some(4)),
            (&without, 0o700, 0o600, None),
        ] {
            let base = d.join("log");
            let _ = fs::remove_dir_all(&base);
            let access = Access::from_group_file(group);
            assert_eq!(access.gid, gid);
            let dir = write_trace(&store, &base, &d.join("fallback"), "b00t", access).unwrap();
            assert_eq!(dir, base.join("b00t"));
            let found = modes(&base);
            assert!(found.len() > 10, "{found:?}");
            for (p, is_dir, mode, g) in found {
                assert_eq!(mode, if is_dir { dmode } else { fmode }, "{}", p.display());
                if let Some(gid) = gid {
                    assert_eq!(g, gid, "{}", p.display());
                }
            }
            assert_eq!(Access::of_dir(&dir).unwrap(), access);
        }
        fs::remove_dir_all(&d).unwrap();
    }
}
