//! [`Runner`]: runs a [`Plan`]'s tasks (scripts or built-ins) on ptys, in parallel, with
//! timeouts, output, spans, and the serial fallback inside the run.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::*;
use crate::builtin::{self};
use crate::durations::Durations;
use crate::fallback::{self, Fault};
use crate::spans::SpanLog;
use crate::sys;
use crate::system::Runlevel;

/// How a script ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0.
    Ok,
    /// LSB exit 5: program not installed.
    NotInstalled,
    /// LSB exit 6: program not configured.
    NotConfigured,
    /// Any other exit status.
    Failed,
    /// Killed by a signal.
    Signal,
    /// Still running at its timeout: the boot went on without it.
    TimedOut,
    /// Could not be started.
    SpawnFailed,
}

impl Outcome {
    /// Name used in the span log.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::NotInstalled => "not_installed",
            Outcome::NotConfigured => "not_configured",
            Outcome::Failed => "failed",
            Outcome::Signal => "signal",
            Outcome::TimedOut => "timed_out",
            Outcome::SpawnFailed => "spawn_failed",
        }
    }

    /// From an exit code (LSB: 0 ok, 5 not installed, 6 not configured).
    pub fn from_exit(code: i32) -> Outcome {
        match code {
            0 => Outcome::Ok,
            5 => Outcome::NotInstalled,
            6 => Outcome::NotConfigured,
            _ => Outcome::Failed,
        }
    }
}

/// One task's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskResult {
    /// Exit code, if it exited.
    pub exit: Option<i32>,
    /// How it ended.
    pub outcome: Outcome,
    /// CLOCK_BOOTTIME at start and end.
    pub start_ns: u64,
    /// See `start_ns`.
    pub end_ns: u64,
}

/// Where the runner looks and what it passes on.
#[derive(Debug, Clone)]
pub struct Options {
    /// The proc file system (default `/proc`).
    pub proc_dir: PathBuf,
    /// CPUs, for the load limit.
    pub cpus: usize,
    /// `PREVLEVEL` for the scripts (`N` at boot).
    pub prevlevel: String,
    /// A failure to force (`bootprint.rc.fault=`): [`Fault::Run`] makes the parallel run
    /// panic once its first script has started. Other faults are not the runner's.
    pub fault: Option<Fault>,
    /// The program that runs built-ins (`bootprint-boot`, as `PROGRAM rc-builtin SCRIPT
    /// ACTION`); None: every task runs as its script.
    pub builtin_program: Option<PathBuf>,
    /// The span log runlevel S's runner writes, read to wait for the S scripts a task
    /// needs ([`Task::boot_preds`]) while S goes on beside this runlevel; None: no waiting.
    pub boot_log: Option<PathBuf>,
    /// The system's root: where S's scripts are, should its worker be lost.
    pub root: PathBuf,
    /// The program that saves the shutdown's trace (`PROGRAM shutdown --save`), run once
    /// before the first of [`ENDS_THE_SYSTEM`] starts; None: no shutdown is being recorded.
    pub save_shutdown: Option<PathBuf>,
    /// `bootprint reboot --kexec` loaded an image and marked this reboot: the runner reboots
    /// into it where the `reboot` script would reboot through the firmware (the script runs
    /// if the kexec fails).
    pub kexec: bool,
    /// The `kexec` lever at the real system's runlevel 6: load the boot loader's next entry
    /// beside the first stops ([`fastpath::prepare_plain_reboot`]), waited for before the
    /// first of [`WAIT_FOR_THE_LOAD`] (nothing unmounts /boot under the load), and reboot
    /// into it as for [`Options::kexec`] when it loaded.
    pub prepare_kexec: bool,
}

/// The stop scripts that wait for the `kexec` lever's load: those that unmount file
/// systems, and the ends of the system.
pub const WAIT_FOR_THE_LOAD: [&str; 5] =
    ["umountnfs.sh", "umountfs", "umountroot", "halt", "reboot"];

/// The stop scripts after which nothing can be written (umountroot remounts the root
/// read-only) or nothing runs (halt, reboot, kexec): the shutdown's trace is saved before
/// the first of them.
pub const ENDS_THE_SYSTEM: [&str; 4] = ["umountroot", "halt", "reboot", "kexec"];

/// How long the runner waits for the shutdown's trace to be written (s).
const SAVE_WAIT_S: &str = "10";

impl Default for Options {
    fn default() -> Self {
        Options {
            proc_dir: PathBuf::from("/proc"),
            cpus: sys::cpu_count(),
            prevlevel: "N".into(),
            fault: None,
            builtin_program: None,
            boot_log: None,
            root: PathBuf::from("/"),
            save_shutdown: None,
            kexec: false,
            prepare_kexec: false,
        }
    }
}

struct Running {
    task: usize,
    /// The task runs as its built-in (a [`builtin::DECLINED`] exit runs the script).
    builtin: bool,
    /// It has the console and runs alone.
    alone: bool,
    child: Child,
    master: Option<OwnedFd>,
    buf: Vec<u8>,
    start_ns: u64,
    started: Instant,
    last_flush: Instant,
}

/// Runs a [`Plan`]. Never panics out of [`Runner::run_phase`]: a failure inside falls
/// back to running what is left serially.
pub struct Runner<'a> {
    /// The plan.
    pub plan: &'a Plan,
    cfg: &'a Config,
    opts: Options,
    log: &'a mut SpanLog,
    out: &'a mut dyn Write,
    prio: Vec<u64>,
    /// Per task: its result once it ended (or timed out).
    pub results: Vec<Option<TaskResult>>,
    started: Vec<bool>,
    waited_for: Vec<Option<usize>>,
    running: Vec<Running>,
    /// Per task: its built-in declined or failed, so it runs as the script.
    builtin_failed: Vec<bool>,
    /// Timed-out scripts, sent SIGTERM, whose process group may still be alive.
    orphans: Vec<Orphan>,
    /// [`Fault::Run`] has fired (once per runner).
    fault_fired: bool,
    /// Runlevel S as its span log shows it, while a task waits for S scripts.
    boot: BootWatch,
    /// The `kexec` lever's load, running beside the stops ([`Options::prepare_kexec`]).
    kexec_load: Option<std::thread::JoinHandle<fastpath::Prepared>>,
}

/// How long a task waits for runlevel S's scripts past the per-script timeout before it is
/// let go anyway (S's worker alive but stuck): every wait has a bound.
pub const BOOT_WAIT_SLACK: Duration = Duration::from_secs(15);

/// What a runner after an early-ending S knows of it.
#[derive(Default)]
struct BootWatch {
    state: Option<crate::boot::BootState>,
    read_at: Option<Instant>,
    /// When a task first waited for S.
    since: Option<Instant>,
    /// No more waiting: S is done, its log unreadable, its lost worker's scripts run, or
    /// the wait outlasted its bound.
    over: bool,
}

/// How long a timed-out script's process group has between SIGTERM and SIGKILL.
pub const KILL_DELAY: Duration = Duration::from_secs(5);

/// A timed-out script: its process group (its own session) and, until reaped, the script.
struct Orphan {
    pgid: u32,
    child: Option<Child>,
    termed: Instant,
}

impl<'a> Runner<'a> {
    /// A runner writing spans to `log` and script output to `out` (the console).
    pub fn new(
        plan: &'a Plan,
        cfg: &'a Config,
        opts: Options,
        log: &'a mut SpanLog,
        out: &'a mut dyn Write,
    ) -> Runner<'a> {
        let n = plan.tasks.len();
        let prio = plan.priorities();
        Runner {
            plan,
            cfg,
            opts,
            log,
            out,
            prio,
            results: vec![None; n],
            started: vec![false; n],
            waited_for: vec![None; n],
            running: Vec::new(),
            builtin_failed: vec![false; n],
            orphans: Vec::new(),
            fault_fired: false,
            boot: BootWatch::default(),
            kexec_load: None,
        }
    }

    fn rl_kv(&self) -> Vec<(&'static str, String)> {
        vec![
            ("runlevel", self.plan.runlevel.clone()),
            ("action", self.plan.action.clone()),
        ]
    }

    /// Logs the beginning of the run (task counts).
    pub fn begin(&mut self) {
        let late = self.plan.tasks.iter().filter(|t| t.late).count();
        let mut kv = self.rl_kv();
        kv.push(("tasks", self.plan.tasks.len().to_string()));
        kv.push(("late", late.to_string()));
        // How many priorities rest on durations from earlier boots rather than the default.
        let learned = self.plan.tasks.iter().filter(|t| t.learned).count();
        kv.push(("learned", learned.to_string()));
        self.log.event(::sys::boottime_ns(), "rc_begin", &kv);
        if self.opts.prepare_kexec && !self.opts.kexec {
            // Beside the stops: under emulation the read of the kernel and initramfs took
            // 1.2-1.6 s, a shutdown's length again if it came first.
            let root = self.opts.root.clone();
            let asked_ns = ::sys::boottime_ns();
            self.kexec_load = Some(std::thread::spawn(move || {
                fastpath::prepare_plain_reboot(&root, asked_ns)
            }));
        }
    }

    /// Waits for the `kexec` lever's load, if one runs, then says on the console and in the
    /// span log what the reboot will be (`rc_kexec_prepared`).
    fn finish_kexec_load(&mut self) {
        let Some(handle) = self.kexec_load.take() else {
            return;
        };
        let prepared = handle
            .join()
            .unwrap_or_else(|_| fastpath::Prepared::Failed("the load's thread panicked".into()));
        let detail = prepared.describe();
        self.log.event(
            ::sys::boottime_ns(),
            "rc_kexec_prepared",
            &[
                ("outcome", prepared.word().to_string()),
                ("detail", detail.clone()),
            ],
        );
        let _ = writeln!(self.out, "bootprint rc: {detail}");
        self.opts.kexec = prepared.by_kexec();
    }

    /// Where script output goes (the console).
    pub fn out(&mut self) -> &mut dyn Write {
        self.out
    }

    /// Logs one event now.
    pub fn log_event(&mut self, kind: &str, kv: &[(&str, String)]) {
        self.log.event(::sys::boottime_ns(), kind, kv);
    }

    /// Whether there are late tasks.
    pub fn has_late(&self) -> bool {
        self.plan.tasks.iter().any(|t| t.late)
    }

    /// Runs every task whose `late` flag equals `late`, in parallel; returns when they have
    /// all ended (or timed out). On an internal failure, runs the rest serially.
    pub fn run_phase(&mut self, late: bool) {
        self.guarded_phase(late, false);
        if !late {
            let kv = self.rl_kv();
            self.log.event(::sys::boottime_ns(), "rc_reached", &kv);
        }
    }

    /// Runs the tasks that are not late until those on the path are done (logged as
    /// `rc_reached`); tasks [`Task::beside`] the path may still run: [`Runner::run_beside`]
    /// sees them to their end.
    pub fn run_path(&mut self) {
        self.guarded_phase(false, true);
        let kv = self.rl_kv();
        self.log.event(::sys::boottime_ns(), "rc_reached", &kv);
    }

    /// After [`Runner::run_path`]: runs the tasks beside the path to their end.
    pub fn run_beside(&mut self) {
        self.guarded_phase(false, false);
    }

    /// Whether some task is beside the path.
    pub fn has_beside(&self) -> bool {
        self.plan.tasks.iter().any(|t| t.beside)
    }

    fn guarded_phase(&mut self, late: bool, until_path: bool) {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.phase(late, until_path)
        }));
        if let Err(p) = r {
            let msg = panic_message(p.as_ref());
            let _ = writeln!(
                self.out,
                "bootprint rc: runlevel {}: the parallel run failed ({msg}): running the rest serially",
                self.plan.runlevel
            );
            let mut kv = self.rl_kv();
            kv.push(("reason", "run".into()));
            kv.push(("error", msg));
            self.log.event(::sys::boottime_ns(), "rc_fallback", &kv);
            self.serial_rest(Some(late));
            self.settle_orphans();
        }
    }

    /// Whether runlevel S's scripts that task `t` needs have ended (or the wait is over).
    fn boot_ready(&self, t: usize) -> bool {
        let need = &self.plan.tasks[t].boot_preds;
        if need.is_empty() || self.boot.over {
            return true;
        }
        match &self.boot.state {
            None => false, // not read yet: refresh_boot reads it first
            Some(s) => need.iter().all(|n| s.has_ended(n)),
        }
    }

    /// Re-reads runlevel S's state (at most every 50 ms) while `waiting` tasks wait for it;
    /// ends the wait when S is done, has no log, its worker was lost (its scripts not
    /// started yet are run here first, serially) or the wait outlasted its bound.
    fn refresh_boot(&mut self, waiting: bool) {
        if self.boot.over || !waiting {
            return;
        }
        let Some(log) = self.opts.boot_log.clone() else {
            self.boot.over = true;
            return;
        };
        let now = Instant::now();
        let since = *self.boot.since.get_or_insert(now);
        if self
            .boot
            .read_at
            .is_some_and(|t| now.duration_since(t) < Duration::from_millis(50))
        {
            return;
        }
        self.boot.read_at = Some(now);
        let Some(state) = crate::boot::BootState::read(&log) else {
            self.boot.over = true;
            return;
        };
        let lost = state.worker_lost();
        let done = state.done;
        self.boot.state = Some(state);
        if done {
            self.boot.over = true;
        } else if lost {
            self.boot.over = true;
            self.rescue_boot();
        } else if now.duration_since(since) > self.cfg.timeout + BOOT_WAIT_SLACK {
            self.boot.over = true;
            let _ = writeln!(
                self.out,
                "bootprint rc: runlevel {}: runlevel S not done after {:.0} s: going on without it",
                self.plan.runlevel,
                now.duration_since(since).as_secs_f64()
            );
            let mut kv = self.rl_kv();
            kv.push(("reason", "max_wait".into()));
            self.log.event(::sys::boottime_ns(), "rc_boot_wait", &kv);
        }
    }

    /// S's worker is gone with scripts not started: they run here, serially in link
    /// order, before anything that may need them (the fallback's rule: every script runs).
    fn rescue_boot(&mut self) {
        let started = self
            .boot
            .state
            .as_ref()
            .map(|s| s.started.clone())
            .unwrap_or_default();
        let root = self.opts.root.clone();
        let todo: Vec<fallback::Link> = fallback::links(&root, Runlevel::S, "start", None)
            .unwrap_or_default()
            .into_iter()
            .filter(|l| !started.contains(&l.name))
            .collect();
        let names: Vec<&str> = todo.iter().map(|l| l.name.as_str()).collect();
        let _ = writeln!(
            self.out,
            "bootprint rc: runlevel S's runner is gone before S was done: running serially in link order: {}",
            names.join(" ")
        );
        let how = fallback::Serial {
            root: &root,
            runlevel: Runlevel::S,
            action: "start",
            prevlevel: "N",
            timeout: self.cfg.timeout,
        };
        fallback::run_links_spanned(&todo, &how, ("worker", "worker lost"), self.log, self.out);
    }

    /// Waits (bounded as a task's wait is) until all of runlevel S has ended: late
    /// services start only after the whole of S, as they would after Debian's rcS.
    pub fn wait_boot_done(&mut self) {
        if self.opts.boot_log.is_none() {
            return;
        }
        loop {
            self.refresh_boot(true);
            if self.boot.over {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn pred_done(&self, t: usize) -> bool {
        self.plan.tasks[t]
            .preds
            .iter()
            .all(|&p| self.results[p].is_some())
    }

    /// Whether a task of `mine` is ready but for runlevel S's scripts.
    fn boot_waits(&self, mine: &[usize]) -> bool {
        mine.iter()
            .any(|&i| !self.started[i] && self.pred_done(i) && !self.boot_ready(i))
    }

    /// `until_path`: return once the tasks not [`Task::beside`] the path have ended.
    fn phase(&mut self, late: bool, until_path: bool) {
        let mine: Vec<usize> = (0..self.plan.tasks.len())
            .filter(|&i| self.plan.tasks[i].late == late)
            .collect();
        loop {
            self.reap();
            let ended = |i: &usize| self.results[*i].is_some();
            if mine
                .iter()
                .filter(|&&i| !(until_path && self.plan.tasks[i].beside))
                .all(ended)
            {
                break;
            }
            let waiting = self.boot_waits(&mine);
            self.refresh_boot(waiting);
            // Start what is ready, best first, while the load allows.
            let interactive_running = self.running.iter().any(|r| r.alone);
            if !interactive_running {
                let mut ready: Vec<usize> = mine
                    .iter()
                    .copied()
                    .filter(|&i| !self.started[i] && self.pred_done(i) && self.boot_ready(i))
                    .collect();
                // The path first; beside it, what rcS need not wait for.
                ready.sort_by_key(|&i| {
                    (
                        self.plan.tasks[i].beside,
                        std::cmp::Reverse(self.prio[i]),
                        i,
                    )
                });
                // Nothing ready, nothing running, work left, and not waiting for runlevel
                // S (that wait has its own bound).
                if ready.is_empty() && self.running.is_empty() && !self.boot_waits(&mine) {
                    // A dependency that can never end (a cycle in a stop plan): release the
                    // best waiting task.
                    if let Some(&i) = mine
                        .iter()
                        .filter(|&&i| !self.started[i])
                        .max_by_key(|&&i| (self.prio[i], std::cmp::Reverse(i)))
                    {
                        ready.push(i);
                    }
                }
                for i in ready {
                    let t = &self.plan.tasks[i];
                    if t.interactive {
                        if self.running.is_empty() {
                            self.spawn(i);
                        }
                        break; // alone: nothing else starts with or after it this round
                    }
                    let room = if self.plan.action == "stop" {
                        may_start_stop(self.running.len(), self.cfg, self.opts.cpus)
                    } else {
                        let stat = ProcStat::read(&self.opts.proc_dir);
                        may_start(self.running.len(), &stat, self.cfg, self.opts.cpus)
                    };
                    if !room {
                        break;
                    }
                    self.spawn(i);
                    if self.opts.fault == Some(Fault::Run) && !self.fault_fired {
                        self.fault_fired = true;
                        panic!("{}", Fault::Run.message());
                    }
                }
            }
            // Wait for output or a short tick (child exits are polled).
            let fds: Vec<i32> = self
                .running
                .iter()
                .filter_map(|r| r.master.as_ref().map(|m| m.as_raw_fd()))
                .collect();
            sys::poll_read(&fds, 20);
            for k in 0..self.running.len() {
                let r = &mut self.running[k];
                if let Some(m) = &r.master {
                    if !sys::read_available(m.as_raw_fd(), &mut r.buf) {
                        r.master = None;
                    }
                }
            }
            self.flush_long();
            self.timeouts();
        }
        // Nothing that timed out outlives the phase: the rest of the kill delay, then SIGKILL.
        self.settle_orphans();
    }

    fn spawn(&mut self, i: usize) {
        self.started[i] = true;
        if WAIT_FOR_THE_LOAD.contains(&self.plan.tasks[i].name.as_str()) {
            self.finish_kexec_load();
        }
        if ENDS_THE_SYSTEM.contains(&self.plan.tasks[i].name.as_str()) {
            self.save_shutdown();
        }
        if self.opts.kexec && self.plan.tasks[i].name == "reboot" {
            self.kexec_instead_of_reboot();
        }
        let t = &self.plan.tasks[i];
        // The dependency whose end made this task ready: the one that ended last.
        let waited = t
            .preds
            .iter()
            .copied()
            .filter(|&p| self.results[p].is_some())
            .max_by_key(|&p| self.results[p].as_ref().map(|r| r.end_ns));
        self.waited_for[i] = waited;
        let as_builtin = match (&t.builtin, &self.opts.builtin_program) {
            (Some(_), Some(p)) if !self.builtin_failed[i] => Some(p.clone()),
            _ => None,
        };
        let mut cmd = match &as_builtin {
            Some(program) => {
                let mut c = Command::new(program);
                c.arg("rc-builtin").arg(&t.name).arg(&t.action);
                if self.opts.fault == Some(Fault::Builtin) {
                    c.env(builtin::FAULT_ENV, "1");
                }
                c
            }
            None => fallback::command(&t.path, &t.name, &t.action),
        };
        cmd.env("RUNLEVEL", &self.plan.runlevel)
            .env("PREVLEVEL", &self.opts.prevlevel);
        let mut master = None;
        // A script whose built-in failed needs the console if the script itself does
        // (checkroot.sh's maintenance shell), even with others running.
        let alone = t.interactive || (self.builtin_failed[i] && t.interactive_script);
        if !alone {
            if let Ok((m, s)) = sys::open_pty() {
                if let (Ok(a), Ok(b)) = (s.try_clone(), s.try_clone()) {
                    cmd.stdin(Stdio::from(a))
                        .stdout(Stdio::from(b))
                        .stderr(Stdio::from(s));
                    master = Some(m);
                }
            }
            sys::new_session_on_exec(&mut cmd);
        } else {
            console_stdout(&mut cmd);
        }
        let start_ns = ::sys::boottime_ns();
        let spawned = cmd.spawn();
        drop(cmd); // closes our copies of the pty slave
        let mut kv = self.task_kv(i);
        kv.push((
            "waited_for",
            waited
                .map(|p| self.plan.tasks[p].name.clone())
                .unwrap_or_default(),
        ));
        if as_builtin.is_some() {
            kv.push(("builtin", "1".into()));
        }
        if t.name == "sendsigs" && self.plan.action == "stop" {
            let spared = super::request::sendsigs_spares(&self.opts.root);
            let list: Vec<String> = spared.iter().map(u32::to_string).collect();
            kv.push(("spared", list.join(",")));
        }
        match spawned {
            Ok(child) => {
                kv.push(("pid", child.id().to_string()));
                self.log.event(start_ns, "rc_start", &kv);
                let now = Instant::now();
                self.running.push(Running {
                    task: i,
                    builtin: as_builtin.is_some(),
                    alone,
                    child,
                    master,
                    buf: Vec::new(),
                    start_ns,
                    started: now,
                    last_flush: now,
                });
            }
            Err(e) => {
                self.log.event(start_ns, "rc_start", &kv);
                let _ = writeln!(self.out, "{}: cannot start: {e}", t.name);
                self.finish(i, None, Outcome::SpawnFailed, start_ns);
            }
        }
    }

    /// Has the shutdown recorder write its trace (once), and logs how long that took: the
    /// root is about to go read-only.
    fn save_shutdown(&mut self) {
        let Some(program) = self.opts.save_shutdown.take() else {
            return;
        };
        let start_ns = ::sys::boottime_ns();
        let status = Command::new(&program)
            .args(["shutdown", "--save", "--wait", SAVE_WAIT_S])
            .stdin(Stdio::null())
            .status();
        let kv = vec![
            ("runlevel", self.plan.runlevel.clone()),
            ("start_ns", start_ns.to_string()),
            (
                "ok",
                if status.is_ok_and(|s| s.success()) {
                    "1"
                } else {
                    "0"
                }
                .into(),
            ),
        ];
        self.log
            .event(::sys::boottime_ns(), "rc_shutdown_saved", &kv);
    }

    /// Reboots into the loaded kexec image (the file systems are read-only or unmounted by
    /// now: umountroot ran); returns only if the kernel refused, after logging why, so the
    /// `reboot` script reboots through the firmware as it would have.
    fn kexec_instead_of_reboot(&mut self) {
        let kv = vec![("runlevel", self.plan.runlevel.clone())];
        self.log.event(::sys::boottime_ns(), "rc_kexec", &kv);
        let _ = writeln!(self.out, "bootprint rc: rebooting by kexec");
        let e = fastpath::kexec::exec();
        let mut kv = kv;
        kv.push(("error", e.to_string()));
        self.log.event(::sys::boottime_ns(), "rc_kexec_failed", &kv);
        let _ = writeln!(
            self.out,
            "bootprint rc: the kexec failed ({e}); rebooting through the firmware"
        );
    }

    fn task_kv(&self, i: usize) -> Vec<(&'static str, String)> {
        let t = &self.plan.tasks[i];
        let mut kv = vec![
            ("script", t.name.clone()),
            ("action", t.action.clone()),
            ("runlevel", self.plan.runlevel.clone()),
            ("late", if t.late { "1" } else { "0" }.into()),
        ];
        if t.beside {
            kv.push(("beside", "1".into()));
        }
        kv
    }

    fn finish(&mut self, i: usize, exit: Option<i32>, outcome: Outcome, start_ns: u64) {
        let end_ns = ::sys::boottime_ns();
        let mut kv = self.task_kv(i);
        kv.extend(end_fields(exit, outcome));
        self.log.event(end_ns, "rc_end", &kv);
        self.results[i] = Some(TaskResult {
            exit,
            outcome,
            start_ns,
            end_ns,
        });
    }

    fn print_lines(&mut self, name: &str, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let mut s = String::new();
        for line in text.split('\n') {
            let line = line.trim_end_matches('\r');
            if line.is_empty() {
                continue;
            }
            s.push_str(name);
            s.push_str(": ");
            s.push_str(line);
            s.push('\n');
        }
        if !s.is_empty() {
            let _ = self.out.write_all(s.as_bytes());
            let _ = self.out.flush();
        }
    }

    fn reap(&mut self) {
        let mut k = 0;
        while k < self.running.len() {
            let status = match self.running[k].child.try_wait() {
                Ok(Some(st)) => Some(st),
                Ok(None) => None,
                Err(_) => None,
            };
            let Some(st) = status else {
                k += 1;
                continue;
            };
            let (r, _) = self.retire(k);
            if r.builtin && st.code() != Some(0) {
                // The built-in declined or failed (or crashed): the script does the work,
                // and being idempotent, mends whatever the built-in left half done.
                let mut kv = self.task_kv(r.task);
                kv.push(("exit", st.code().map(|c| c.to_string()).unwrap_or_default()));
                self.log
                    .event(::sys::boottime_ns(), "rc_builtin_failed", &kv);
                self.builtin_failed[r.task] = true;
                self.spawn(r.task);
                continue;
            }
            let (exit, outcome) = match (st.code(), st.signal()) {
                (Some(c), _) => (Some(c), Outcome::from_exit(c)),
                _ => (None, Outcome::Signal),
            };
            let start_ns = r.start_ns;
            self.finish(r.task, exit, outcome, start_ns);
        }
    }

    /// Takes a script that ended (or is being given up on) out of the running set and prints
    /// what is left of its output; returns it and its name.
    fn retire(&mut self, k: usize) -> (Running, String) {
        let mut r = self.running.swap_remove(k);
        if let Some(m) = r.master.take() {
            sys::read_available(m.as_raw_fd(), &mut r.buf);
        }
        let name = self.plan.tasks[r.task].name.clone();
        let buf = std::mem::take(&mut r.buf);
        self.print_lines(&name, &buf);
        (r, name)
    }

    fn flush_long(&mut self) {
        let after = self.cfg.flush_after;
        for k in 0..self.running.len() {
            let r = &mut self.running[k];
            if r.last_flush.elapsed() < after {
                continue;
            }
            r.last_flush = Instant::now();
            let Some(cut) = memchr::memrchr(b'\n', &r.buf) else {
                continue;
            };
            let head: Vec<u8> = r.buf.drain(..=cut).collect();
            let name = self.plan.tasks[r.task].name.clone();
            self.print_lines(&name, &head);
        }
    }

    fn timeouts(&mut self) {
        let limit = self.cfg.timeout;
        let mut k = 0;
        while k < self.running.len() {
            // An interactive script may be waiting for someone at the console (a passphrase,
            // fsck's question): it is not timed out.
            let interactive = self.plan.tasks[self.running[k].task].interactive;
            if interactive || self.running[k].started.elapsed() < limit {
                k += 1;
                continue;
            }
            let (r, name) = self.retire(k);
            let _ = writeln!(
                self.out,
                "{name}: timed out after {:.0} s; the boot goes on without it",
                limit.as_secs_f64()
            );
            // Its own session, so its process group is the script and what it started.
            sys::kill_group(r.child.id(), sys::SIGTERM);
            let start_ns = r.start_ns;
            self.finish(r.task, None, Outcome::TimedOut, start_ns);
            self.orphans.push(Orphan {
                pgid: r.child.id(),
                child: Some(r.child),
                termed: Instant::now(),
            });
        }
        self.tend_orphans(false);
    }

    /// Reaps timed-out scripts and forgets a group once it is empty; a group still alive
    /// [`KILL_DELAY`] after its SIGTERM (or at once when `kill_now`) gets SIGKILL and is
    /// forgotten. The group, not only the script: what it started and left behind in its
    /// session may ignore SIGTERM too.
    fn tend_orphans(&mut self, kill_now: bool) {
        self.orphans.retain_mut(|o| {
            if let Some(c) = &mut o.child {
                // Exited (reaped now) or not our child: either way its pid is done with.
                if !matches!(c.try_wait(), Ok(None)) {
                    o.child = None;
                }
            }
            // A group id stays reserved while the group has members, so this cannot hit a
            // stranger: with the leader reaped and the group empty, kill says ESRCH.
            if !sys::group_alive(o.pgid) {
                return false;
            }
            if kill_now || o.termed.elapsed() >= KILL_DELAY {
                sys::kill_group(o.pgid, sys::SIGKILL);
                if let Some(c) = &mut o.child {
                    let _ = c.try_wait();
                }
                return false;
            }
            true
        });
    }

    /// Waits (at most [`KILL_DELAY`]) until every timed-out group has ended or been
    /// SIGKILLed: the runner never returns, nor forks its late child, with one alive.
    fn settle_orphans(&mut self) {
        loop {
            self.tend_orphans(false);
            if self.orphans.is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the machine is idle (per the configuration) or the maximum wait passed;
    /// logs `rc_late` and returns the reason (`idle` or `max_wait`).
    pub fn wait_idle(&mut self) -> &'static str {
        let t0 = Instant::now();
        let mut prev = ProcStat::read(&self.opts.proc_dir);
        let reason = loop {
            let left = self.cfg.late_max_wait.saturating_sub(t0.elapsed());
            if left.is_zero() {
                break "max_wait";
            }
            // One measurement never outlasts the maximum wait.
            std::thread::sleep(self.cfg.idle_window.min(left));
            let cur = ProcStat::read(&self.opts.proc_dir);
            if was_idle(&prev, &cur, self.cfg) {
                break "idle";
            }
            prev = cur;
        };
        let mut kv = self.rl_kv();
        kv.push(("reason", reason.into()));
        kv.push(("waited_ms", t0.elapsed().as_millis().to_string()));
        self.log.event(::sys::boottime_ns(), "rc_late", &kv);
        reason
    }

    /// Logs the end of the run.
    pub fn done(&mut self) {
        self.settle_orphans();
        let kv = self.rl_kv();
        self.log.event(::sys::boottime_ns(), "rc_done", &kv);
    }

    /// The fallback: waits for what runs (bounded by its timeout), then runs every task not
    /// yet started, one at a time with the console, in plan priority order (dependencies
    /// first where known).
    pub fn serial_rest(&mut self, late: Option<bool>) {
        // Nothing unmounts under the lever's load; the serial run reboots through the
        // firmware whatever it loaded.
        self.finish_kexec_load();
        self.opts.kexec = false;
        while !self.running.is_empty() {
            let mut r = self.running.swap_remove(0);
            let interactive = self.plan.tasks[r.task].interactive;
            let deadline = (!interactive).then(|| r.started + self.cfg.timeout);
            // Keep draining its pty: a script blocked on a full pty would never end.
            let (child, master, buf) = (&mut r.child, &r.master, &mut r.buf);
            let (exit, outcome) =
                fallback::wait_foreground(child, deadline, !interactive, &mut || {
                    if let Some(m) = master {
                        sys::read_available(m.as_raw_fd(), buf);
                    }
                });
            let start = r.start_ns;
            let task = r.task;
            self.running.push(r);
            let last = self.running.len() - 1;
            self.retire(last);
            self.finish(task, exit, outcome, start);
        }
        let mut order: Vec<usize> = (0..self.plan.tasks.len())
            .filter(|&i| !self.started[i] && late.is_none_or(|l| self.plan.tasks[i].late == l))
            .collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(self.prio[i]), i));
        // Dependencies first: repeatedly take the first whose predecessors are done.
        while !order.is_empty() {
            let pos = order.iter().position(|&i| self.pred_done(i)).unwrap_or(0);
            let i = order.remove(pos);
            self.started[i] = true;
            let t = &self.plan.tasks[i];
            let interactive = t.interactive;
            let mut cmd = fallback::command(&t.path, &t.name, &t.action);
            cmd.env("RUNLEVEL", &self.plan.runlevel)
                .env("PREVLEVEL", &self.opts.prevlevel);
            console_stdout(&mut cmd);
            if !interactive {
                sys::new_session_on_exec(&mut cmd);
            }
            let start_ns = ::sys::boottime_ns();
            let mut kv = self.task_kv(i);
            kv.push(("waited_for", String::new()));
            let (exit, outcome) = match cmd.spawn() {
                Ok(mut child) => {
                    kv.push(("pid", child.id().to_string()));
                    self.log.event(start_ns, "rc_start", &kv);
                    let deadline = (!interactive).then(|| Instant::now() + self.cfg.timeout);
                    fallback::wait_foreground(&mut child, deadline, !interactive, &mut || {})
                }
                Err(e) => {
                    self.log.event(start_ns, "rc_start", &kv);
                    let _ = writeln!(self.out, "{}: cannot start: {e}", self.plan.tasks[i].name);
                    (None, Outcome::SpawnFailed)
                }
            };
            if outcome == Outcome::TimedOut {
                let _ = writeln!(
                    self.out,
                    "{}: timed out after {:.0} s; the boot goes on without it",
                    self.plan.tasks[i].name,
                    self.cfg.timeout.as_secs_f64()
                );
            }
            self.finish(i, exit, outcome, start_ns);
        }
    }

    /// startpar's answer for `/lib/init/rc` (`eval "$(startpar ...)"`): the failed,
    /// not-installed and not-configured scripts of the tasks that ended so far.
    pub fn startpar_summary(&self) -> String {
        startpar_answer(self.results.iter().enumerate().filter_map(|(i, r)| {
            r.as_ref()
                .map(|r| (self.plan.tasks[i].name.as_str(), r.outcome.name()))
        }))
    }

    /// Feeds the measured durations into `d`.
    pub fn learn(&self, d: &mut Durations) {
        for (i, r) in self.results.iter().enumerate() {
            let Some(r) = r else { continue };
            if r.outcome == Outcome::SpawnFailed {
                continue;
            }
            let t = &self.plan.tasks[i];
            let ms = r.end_ns.saturating_sub(r.start_ns) / 1_000_000;
            d.record(&t.name, &t.action, ms);
        }
    }
}

impl Drop for Runner<'_> {
    /// However the runner ends (a panic unwinding included), no timed-out group outlives it.
    fn drop(&mut self) {
        self.tend_orphans(true);
    }
}

/// The text of a panic's payload (`panic!` with a message gives a `String` or a `&str`).
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into())
}

/// startpar's answer from (script, outcome name) pairs: `failed_service='...'`,
/// `skipped_service_not_installed='...'`, `skipped_service_not_configured='...'`.
pub fn startpar_answer<'s>(ended: impl Iterator<Item = (&'s str, &'s str)>) -> String {
    let mut failed = Vec::new();
    let mut ni = Vec::new();
    let mut nc = Vec::new();
    for (name, outcome) in ended {
        match outcome {
            "ok" => {}
            "not_installed" => ni.push(name),
            "not_configured" => nc.push(name),
            _ => failed.push(name),
        }
    }
    let q = |v: &[&str]| v.join(" ").replace('\'', "");
    format!(
        "failed_service='{}'\nskipped_service_not_installed='{}'\nskipped_service_not_configured='{}'\n",
        q(&failed),
        q(&ni),
        q(&nc)
    )
}

/// A script's stdout goes to the console (our stderr), never to our stdout: that is the
/// pipe `/lib/init/rc` evaluates (`eval "$(startpar ...)"`).
pub(crate) fn console_stdout(cmd: &mut Command) {
    use std::os::fd::AsFd;
    if let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() {
        cmd.stdout(Stdio::from(fd));
    }
}
