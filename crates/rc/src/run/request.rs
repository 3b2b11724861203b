//! [`run_runlevel`]: the whole of `bootprint-boot rc` for one [`Request`], under the guard
//! that ends any failure in [`crate::fallback`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::durations::Durations;
use crate::fallback::{self, Fault};
use crate::spans::SpanLog;
use crate::sys;
use crate::system::{Runlevel, System};
use crate::{Error, ErrorKind};

/// One invocation of the runner, as `bootprint-boot rc` builds it from its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The system's root (default `/`).
    pub root: PathBuf,
    /// The proc file system (`stat`: the load; `cmdline`: the fault switch, [`Fault`]).
    pub proc_dir: PathBuf,
    /// The span log.
    pub spans: PathBuf,
    /// The learned durations.
    pub durations: PathBuf,
    /// The configuration file (`[rc]` of bootprint.toml); under `root`.
    pub config: PathBuf,
    /// The deprecated rc.conf, read when `config` has no `[rc]`; under `root`.
    pub rc_conf: PathBuf,
    /// Where the span log is copied when a runlevel is done (so it outlives /run on a
    /// system without the recorder); under `root`.
    pub keep: PathBuf,
    /// The runlevel to enter.
    pub runlevel: Runlevel,
    /// The runlevel the system comes from (None: boot, `N`).
    pub previous: Option<Runlevel>,
    /// `start` or `stop` (default: `stop` for 0 and 6, else `start`).
    pub action: String,
    /// Answer like startpar on stdout (for `/lib/init/rc`'s `eval`).
    pub startpar: bool,
    /// Return to the caller once the login path is done and leave late services to a
    /// detached child (default on; off to wait for everything).
    pub detach: bool,
    /// Print the plan and run nothing.
    pub dry_run: bool,
    /// The program that runs built-ins ([`Options::builtin_program`]); None: none run.
    pub builtin_program: Option<PathBuf>,
    /// The program that records the shutdown (`PROGRAM shutdown`, record's
    /// `shutdown`): started before runlevel 0 or 6 stops anything, and asked to save before
    /// the root goes read-only ([`Options::save_shutdown`]); None: not recorded.
    pub shutdown_program: Option<PathBuf>,
    /// The `kexec` lever (`record::Config::kexec`, which the caller reads): runlevel 6 of
    /// the real system loads the boot loader's next entry and ends by kexec where
    /// `fastpath` finds it safe ([`fastpath::prepare_plain_reboot`]).
    pub kexec_on_reboot: bool,
}

impl Request {
    /// Runlevel 0 or 6 being stopped: the system ends after it (sendsigs, the shutdown's
    /// recording).
    pub fn ends_the_system(&self) -> bool {
        matches!(self.runlevel, Runlevel::Num(0) | Runlevel::Num(6)) && self.action == "stop"
    }

    /// Defaults for a runlevel: real paths, start (stop for 0 and 6), detach.
    pub fn new(runlevel: Runlevel) -> Request {
        Request {
            root: PathBuf::from("/"),
            proc_dir: PathBuf::from("/proc"),
            spans: PathBuf::from(crate::spans::DEFAULT_PATH),
            durations: PathBuf::from(crate::durations::DEFAULT_PATH),
            config: PathBuf::from(DEFAULT_CONFIG),
            rc_conf: PathBuf::from(DEPRECATED_RC_CONF),
            keep: PathBuf::from(KEEP_PATH),
            runlevel,
            previous: None,
            action: match runlevel {
                Runlevel::Num(0) | Runlevel::Num(6) => "stop".into(),
                _ => "start".into(),
            },
            startpar: false,
            detach: true,
            dry_run: false,
            builtin_program: None,
            shutdown_program: None,
            kexec_on_reboot: false,
        }
    }

    /// Reads startpar's command line as `/lib/init/rc` passes it:
    /// `-p N -t N -T N -M boot|start|stop -P PREV -R RUNLEVEL` (other options ignored).
    pub fn from_startpar(args: &[String]) -> Result<Request, Error> {
        let mut mode = None;
        let mut prev = None;
        let mut rl = None;
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "-M" => mode = it.next().cloned(),
                "-P" => prev = it.next().cloned(),
                "-R" => rl = it.next().cloned(),
                "-p" | "-t" | "-T" | "-a" | "-i" | "-e" => {
                    it.next();
                }
                _ => {}
            }
        }
        let bad = |message: String| Error::new(ErrorKind::Arguments, message);
        let rl = rl.ok_or_else(|| bad("startpar arguments: expected -R RUNLEVEL".into()))?;
        let runlevel = Runlevel::parse(&rl).ok_or_else(|| {
            bad(format!(
                "startpar arguments: -R {rl:?} is not a runlevel (S, 0-6)"
            ))
        })?;
        let mut r = Request::new(runlevel);
        r.previous = prev.as_deref().and_then(Runlevel::parse);
        r.action = match mode.as_deref() {
            Some("stop") => "stop".into(),
            Some("boot") | Some("start") => "start".into(),
            Some(m) => {
                return Err(bad(format!(
                    "startpar arguments: -M {m:?}: expected boot, start or stop"
                )))
            }
            None => return Err(bad("startpar arguments: expected -M boot|start|stop".into())),
        };
        r.startpar = true;
        Ok(r)
    }
}

/// The exit code of a runner that could not run the runlevel at all (not even serially:
/// its link directory cannot be read, or the fallback itself failed). The startpar wrapper
/// runs Debian's startpar on any exit but 0.
pub const EXIT_NOT_RUN: i32 = 1;

/// How far the runner got: what its fallback needs when it fails.
struct Progress {
    /// The phase under way: `config`, `load`, `plan`, `run`, `worker` (runlevel S's
    /// worker was lost before it released this process), `answer`, `beside`, `late`, `save`.
    /// It is the `reason` of `rc_fallback` when the runner fails in it.
    phase: &'static str,
    /// startpar's answer was printed (or stdout is no longer the caller's pipe).
    answered: bool,
    /// The configured per-script timeout, once read.
    timeout: Duration,
    /// In runlevel S's worker ([`sys::fork_worker`]): the parent waiting until it may
    /// return; released once startpar's answer is printed, by the fallback too.
    handoff: Option<sys::Handoff>,
    /// In the parent of a worker that ended before releasing it: the span log, not this
    /// process, says which scripts were started.
    worker_lost: bool,
}

/// Runs a runlevel as [`Request`] says: plan, login path in parallel, the startpar answer,
/// then (in a detached child when `detach`) the late services once idle; learned durations
/// saved at the end.
///
/// Never fails the boot: any failure, an error or a panic, in any phase, ends in
/// [`fallback::run_links`]: every script of the runlevel not yet started is run serially
/// in link order with the right action, and startpar's answer is still printed. Returns
/// the exit code for this process: 0 when every script was run (in parallel or by the
/// fallback), [`EXIT_NOT_RUN`] when not even the fallback could run them (or on a failed
/// `dry_run`, which runs nothing).
pub fn run_runlevel(req: &Request, out: &mut dyn Write) -> i32 {
    // The test bed's fault switch (docs/rc.md); /proc/cmdline is a few hundred bytes.
    let (fault, fdiag) = Fault::read(&req.proc_dir.join("cmdline"));
    if let Some(d) = fdiag {
        let _ = writeln!(out, "bootprint rc: {d}");
    }
    if fault == Some(Fault::Abort) {
        abort_for(Fault::Abort, out);
    }
    // Before anything can fail: the serial fallback runs sendsigs too.
    if !req.dry_run {
        spare_from_sendsigs(req);
    }
    let mut log = if req.dry_run {
        SpanLog::none()
    } else {
        SpanLog::open(&req.spans)
    };
    let mut progress = Progress {
        phase: "config",
        answered: false,
        timeout: Config::default().timeout,
        handoff: None,
        worker_lost: false,
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_guarded(req, fault, &mut log, out, &mut progress)
    }));
    let why = match r {
        Ok(Ok(code)) => return code,
        Ok(Err(msg)) => msg,
        Err(p) => format!("panic: {}", panic_message(p.as_ref())),
    };
    // The last resort must not die either: if it does, the wrapper runs Debian's startpar.
    let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_fallback(req, &why, &mut log, out, &progress)
    }))
    .unwrap_or(EXIT_NOT_RUN);
    release_after_fallback(&mut progress);
    code
}

/// Everything [`run_runlevel`] does when nothing fails. An error is the message for the
/// console; `progress` says where it happened.
fn run_guarded(
    req: &Request,
    fault: Option<Fault>,
    log: &mut SpanLog,
    out: &mut dyn Write,
    progress: &mut Progress,
) -> Result<i32, String> {
    progress.phase = "config";
    let (cfg, cmdline) = configure(req, fault, out)?;
    progress.timeout = cfg.timeout;
    let dpath = req
        .root
        .join(req.durations.strip_prefix("/").unwrap_or(&req.durations));
    let (durations, _) = Durations::load(&dpath);
    progress.phase = "load";
    if fault == Some(Fault::Load) {
        return Err(Fault::Load.message());
    }
    let sys = System::load(&req.root).map_err(|e| e.to_string())?;
    progress.phase = "plan";
    if fault == Some(Fault::Plan) {
        panic!("{}", Fault::Plan.message());
    }
    let plan = plan_for(req, &sys, &cfg, &durations, &cmdline);
    if fault == Some(Fault::Slow) && req.runlevel == Runlevel::S && !req.dry_run {
        let _ = writeln!(out, "bootprint rc: {}", Fault::Slow.message());
        std::thread::sleep(crate::fallback::SLOW_WAIT);
    }
    if req.dry_run {
        let _ = out.write_all(plan.describe().as_bytes());
        return Ok(0);
    }
    // A broken cycle changes the order the headers ask for: say so where the boot shows.
    for d in &plan.cycles {
        let _ = writeln!(out, "bootprint rc: {d}");
    }
    progress.phase = "run";
    if let Some(code) = hand_to_worker(req, &plan, log, progress)? {
        return Ok(code);
    }
    let mut options = runner_options(req, fault);
    options.save_shutdown = start_shutdown_recorder(req);
    // `bootprint reboot --kexec` loaded an image for it (the marker and the kernel agree),
    // or the lever loads one.
    options.kexec = real_reboot(req) && fastpath::kexec::kexec_in_force();
    options.prepare_kexec = real_reboot(req) && req.kexec_on_reboot;
    let runner = Runner::new(&plan, &cfg, options, log, out);
    Ok(run_plan(req, fault, runner, progress, &dpath))
}

/// The configuration with the command line's switches applied, and the command line.
/// Diagnostics go to the console; Err is the config fault.
fn configure(
    req: &Request,
    fault: Option<Fault>,
    out: &mut dyn Write,
) -> Result<(Config, String), String> {
    let under = |p: &std::path::Path| req.root.join(p.strip_prefix("/").unwrap_or(p));
    let (mut cfg, cdiags) = Config::load(&under(&req.config), &under(&req.rc_conf));
    let cmdline = std::fs::read_to_string(req.proc_dir.join("cmdline")).unwrap_or_default();
    if let Some(on) = cmdline_switch(&cmdline, "bootprint.rc.builtins") {
        cfg.builtins = on;
    }
    if let Some(on) = cmdline_switch(&cmdline, "bootprint.rc.udev-off-path") {
        cfg.udev_off_path = on;
    }
    if let Some(on) = cmdline_switch(&cmdline, "bootprint.rc.one-graph") {
        cfg.one_graph = on;
    }
    for d in &cdiags {
        let _ = writeln!(out, "bootprint rc: {d}");
    }
    if fault == Some(Fault::Config) {
        return Err(Fault::Config.message());
    }
    Ok((cfg, cmdline))
}

/// The plan the request asks for: stop, runlevel S with the next runlevel (one graph for
/// the boot, when init's next runlevel is known), or a start.
fn plan_for(
    req: &Request,
    sys: &System,
    cfg: &Config,
    durations: &Durations,
    cmdline: &str,
) -> Plan {
    if req.action == "stop" {
        Plan::stop(sys, req.runlevel, cfg, durations, req.previous)
    } else if req.runlevel == Runlevel::S && cfg.one_graph {
        match crate::boot::next_runlevel(&req.root, cmdline) {
            Ok(next) => Plan::start_boot(sys, cfg, durations, next),
            Err(why) => {
                let mut p = Plan::start(sys, req.runlevel, cfg, durations, req.previous);
                p.diagnostics.push(crate::Diagnostic::new(
                    std::path::Path::new("etc/inittab"),
                    None,
                    why.into(),
                ));
                p
            }
        }
    } else {
        Plan::start(sys, req.runlevel, cfg, durations, req.previous)
    }
}

/// Runlevel S with scripts beside the path: a worker runs the runlevel (its scripts are
/// its children, so it can see them end), and this process returns to rcS once the worker
/// says the path is done: Some(exit code) then. No log to tell the next runlevel what is
/// still running, or no fork: None, and S runs whole here.
fn hand_to_worker(
    req: &Request,
    plan: &Plan,
    log: &SpanLog,
    progress: &mut Progress,
) -> Result<Option<i32>, String> {
    if plan.tasks.iter().any(|t| t.beside) && req.detach && log.is_writing() {
        match sys::fork_worker() {
            Ok(sys::Forked::Parent { released: true, .. }) => return Ok(Some(0)),
            Ok(sys::Forked::Parent {
                released: false,
                worker,
            }) => {
                progress.worker_lost = true;
                progress.phase = "worker";
                return Err(format!(
                    "its worker (pid {worker}) ended before the path to the login was done"
                ));
            }
            Ok(sys::Forked::Worker(h)) => progress.handoff = Some(h),
            Err(_) => {}
        }
    }
    Ok(None)
}

/// Where sendsigs (Debian's runlevels 0 and 6) reads pids it must not kill, one file per
/// package; under the request's root.
pub const SENDSIGS_OMIT: &str = "run/sendsigs.omit.d/bootprint-rc";

/// The pids sendsigs spares, read as Debian's sendsigs reads them as it starts:
/// `/run/sendsigs.omit`, then every file in `/run/sendsigs.omit.d`, whitespace-separated
/// pids (regular files of at most 64 KiB; anything else is skipped). For the shutdown's
/// trace: what outlives sendsigs because it was spared is not what it waited for.
pub fn sendsigs_spares(root: &Path) -> Vec<u32> {
    let mut files = vec![root.join("run/sendsigs.omit")];
    if let Ok(dir) = std::fs::read_dir(root.join("run/sendsigs.omit.d")) {
        let mut names: Vec<PathBuf> = dir.flatten().map(|e| e.path()).collect();
        names.sort();
        files.extend(names);
    }
    let mut pids: Vec<u32> = files
        .iter()
        .filter_map(|f| ::sys::read_regular(f, 64 << 10).ok())
        .flat_map(|d| {
            String::from_utf8_lossy(&d)
                .split_whitespace()
                .filter_map(|w| w.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Runlevel 0 or 6: the runner and the processes that started it (`/etc/init.d/rc 6`, the
/// startpar wrapper) are listed for sendsigs to spare. It kills every process outside its
/// own session, and the runner starts each script in a session of its own: without this,
/// sendsigs would kill the runner and nothing would run umountroot or reboot. Only where
/// initscripts made the directory.
fn spare_from_sendsigs(req: &Request) {
    let file = req.root.join(SENDSIGS_OMIT);
    if !req.ends_the_system() || !file.parent().is_some_and(|d| d.is_dir()) {
        return;
    }
    let mut pids = Vec::new();
    let mut pid = std::process::id();
    // Up the parents to init (bounded: a parent chain is short).
    while pid > 1 && pids.len() < 16 {
        pids.push(pid.to_string());
        let status = req.proc_dir.join(pid.to_string()).join("status");
        let ppid = std::fs::read_to_string(status).ok().and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("PPid:"))
                .and_then(|v| v.trim().parse::<u32>().ok())
        });
        match ppid {
            Some(p) => pid = p,
            None => break,
        }
    }
    let _ = ::sys::write_atomic(&file, format!("{}\n", pids.join("\n")).as_bytes());
}

/// Runlevel 0 or 6 with a shutdown program: starts it (`PROGRAM shutdown --how "runlevel
/// N"`, in a session of its own, its output to the console) and returns the program, which
/// the runner asks to save later. It decides itself whether there is anything to record.
fn start_shutdown_recorder(req: &Request) -> Option<PathBuf> {
    let program = req.shutdown_program.as_ref()?;
    if !req.ends_the_system() {
        return None;
    }
    let mut cmd = std::process::Command::new(program);
    cmd.args([
        "shutdown",
        "--how",
        &format!("runlevel {}", req.runlevel.label()),
    ])
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null());
    sys::new_session_on_exec(&mut cmd);
    cmd.spawn().ok()?;
    Some(program.clone())
}

/// Whether this is the real system's runlevel 6, the one a kexec may end.
fn real_reboot(req: &Request) -> bool {
    req.shutdown_program.is_some() && req.runlevel == Runlevel::Num(6) && req.ends_the_system()
}

fn runner_options(req: &Request, fault: Option<Fault>) -> Options {
    Options {
        proc_dir: req.proc_dir.clone(),
        builtin_program: req.builtin_program.clone(),
        prevlevel: req.previous.map_or("N".into(), |p| p.label()),
        fault,
        // A runlevel after S waits for the S scripts it needs that may still run.
        boot_log: (req.runlevel != Runlevel::S && req.action == "start").then(|| req.spans.clone()),
        root: req.root.clone(),
        ..Options::default()
    }
}

/// Runs the plan: the path (or the whole runlevel), the answer to startpar, what is beside
/// the path, the late services, then saves what the boot taught. The exit code.
fn run_plan(
    req: &Request,
    fault: Option<Fault>,
    mut runner: Runner,
    progress: &mut Progress,
    dpath: &std::path::Path,
) -> i32 {
    runner.begin();
    if progress.handoff.is_some() {
        runner.run_path();
        if fault == Some(Fault::Worker) {
            abort_for(Fault::Worker, runner.out());
        }
    } else {
        runner.run_phase(false);
    }
    progress.phase = "answer";
    if fault == Some(Fault::Panic) {
        panic!("{}", Fault::Panic.message());
    }
    if req.startpar {
        let mut o = std::io::stdout();
        let _ = o.write_all(runner.startpar_summary().as_bytes());
        let _ = o.flush();
    }
    progress.answered = true;
    if let Some(h) = progress.handoff.take() {
        let plan = runner.plan;
        let kv = vec![
            ("runlevel", plan.runlevel.clone()),
            ("action", plan.action.clone()),
            ("pid", std::process::id().to_string()),
        ];
        runner.log_event("rc_handoff", &kv);
        h.release();
        if fault == Some(Fault::Beside) {
            abort_for(Fault::Beside, runner.out());
        }
        progress.phase = "beside";
        runner.run_beside();
    }
    if runner.has_late() {
        progress.phase = "late";
        if req.detach {
            match sys::fork_detached() {
                Ok(false) => return 0, // the parent: init may go on to the gettys
                Ok(true) => {}
                Err(_) => {} // no fork: finish the late ones here
            }
        }
        runner.wait_idle();
        runner.wait_boot_done();
        runner.run_phase(true);
    }
    runner.done();
    progress.phase = "save";
    // Read again first: another runner saved since this one planned (runlevel S's worker
    // ends while runlevel 2 runs), and its figures must not be written over.
    let _ = Durations::update(dpath, |d| runner.learn(d));
    drop(runner);
    keep_span_log(req);
    0
}

/// A fault that kills the runner the way a crash would (`bootprint.rc.fault=`): says so on
/// the console, then SIGABRT.
fn abort_for(fault: Fault, out: &mut dyn Write) -> ! {
    let _ = writeln!(out, "bootprint rc: {}: aborting", fault.message());
    std::process::abort();
}

/// Copies the span log to `rc-last.log` (replaced whole), so it outlives /run.
fn keep_span_log(req: &Request) {
    let keep = req
        .root
        .join(req.keep.strip_prefix("/").unwrap_or(&req.keep));
    if keep != req.spans {
        // Replaced whole, never written in place: a crash leaves the last copy intact.
        if let Ok(bytes) = std::fs::read(&req.spans) {
            let _ = ::sys::write_atomic(&keep, &bytes);
        }
    }
}

/// The fallback of [`run_runlevel`]: every script of the runlevel this process has not
/// started yet, serially in link order ([`fallback::run_links`]), then startpar's answer
/// if it is still owed.
fn run_fallback(
    req: &Request,
    why: &str,
    log: &mut SpanLog,
    out: &mut dyn Write,
    progress: &Progress,
) -> i32 {
    let rl = req.runlevel.label();
    let _ = writeln!(
        out,
        "bootprint rc: runlevel {rl}: the runner failed (phase {}): {why}",
        progress.phase
    );
    let dir = req.root.join(req.runlevel.dir());
    let links = match fallback::links(&req.root, req.runlevel, &req.action, req.previous) {
        Ok(v) => v,
        Err(e) => {
            let _ = writeln!(
                out,
                "bootprint rc: {}: {e}: expected the runlevel's links; nothing run",
                dir.display()
            );
            return EXIT_NOT_RUN;
        }
    };
    // A lost worker's starts are in the span log, not in this process.
    let lost_worker_started = progress
        .worker_lost
        .then(|| crate::boot::BootState::read(&req.spans))
        .flatten()
        .map(|s| s.started)
        .unwrap_or_default();
    let todo: Vec<fallback::Link> = links
        .into_iter()
        .filter(|l| !log.started().contains(&l.name) && !lost_worker_started.contains(&l.name))
        .collect();
    let names: Vec<&str> = todo.iter().map(|l| l.name.as_str()).collect();
    if req.dry_run {
        let _ = writeln!(
            out,
            "bootprint rc: would run serially in link order: {}",
            names.join(" ")
        );
        return EXIT_NOT_RUN;
    }
    let _ = writeln!(
        out,
        "bootprint rc: running serially in link order ({} {}): {}",
        todo.len(),
        req.action,
        names.join(" ")
    );
    let prevlevel = req.previous.map_or("N".into(), |p| p.label());
    let how = fallback::Serial {
        root: &req.root,
        runlevel: req.runlevel,
        action: &req.action,
        prevlevel: &prevlevel,
        timeout: progress.timeout,
    };
    fallback::run_links_spanned(&todo, &how, (progress.phase, why), log, out);
    if req.startpar && !progress.answered {
        let answer = startpar_answer(log.ended().iter().map(|(n, o)| (n.as_str(), o.as_str())));
        let mut o = std::io::stdout();
        let _ = o.write_all(answer.as_bytes());
        let _ = o.flush();
    }
    keep_span_log(req);
    0
}

/// A worker whose run failed still releases its parent once its fallback is done
/// (`progress` lent mutably only for that).
fn release_after_fallback(progress: &mut Progress) {
    if let Some(h) = progress.handoff.take() {
        h.release();
    }
}

/// The fields of an `rc_end` line after the script's own: `exit`, `outcome`, `timed_out`.
pub(crate) fn end_fields(exit: Option<i32>, outcome: Outcome) -> [(&'static str, String); 3] {
    [
        ("exit", exit.map(|c| c.to_string()).unwrap_or_default()),
        ("outcome", outcome.name().into()),
        (
            "timed_out",
            u8::from(outcome == Outcome::TimedOut).to_string(),
        ),
    ]
}
