//! The runner: each target's inputs run in a child process (this same program, re-executed
//! with `--child`), so that an abort, a stack overflow or running out of the capped address
//! space is caught and counted like a panic.
//!
//! The child caps its address space (`RLIMIT_AS`), then for each input: says its number on
//! stdout, makes it ([`crate::mutate::Generator::input`]), runs the target under
//! `catch_unwind`, and says when it panicked or took longer than the limit. The parent reads
//! those lines; when none comes for twice the limit it kills the child (a loop), and when the
//! child dies without saying it is done, the input it last started is the culprit. Every
//! failing input is made again in the parent from its number, saved under the crash
//! directory and printed with the command that replays it; the child is then started again
//! after that input.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::mutate::{fnv, Generator};
use crate::Target;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Target names; empty means all.
    pub targets: Vec<String>,
    /// Inputs per target, the seeds included.
    pub inputs: u64,
    /// The run's seed: the same seed makes the same inputs.
    pub seed: u64,
    /// Time limit per input.
    pub max_ms: u64,
    /// Address-space cap of a child, MiB.
    pub mem_mb: u64,
    /// Largest generated input, bytes.
    pub max_len: usize,
    /// Children run at once.
    pub jobs: usize,
    /// Where failing inputs are saved.
    pub crash_dir: PathBuf,
    /// A target stops after this many failures (the first ones are what needs fixing).
    pub max_failures: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            targets: Vec::new(),
            inputs: 10_000,
            seed: 1,
            max_ms: 1000,
            mem_mb: 2048,
            max_len: 1 << 20,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            crash_dir: crate::seeds::root().join("fuzz/crashes"),
            max_failures: 20,
        }
    }
}

/// One failing input.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Input number.
    pub index: u64,
    /// `panic`, `crash`, `slow` or `timeout`, and what was said.
    pub what: String,
    /// Where the input was saved.
    pub saved: Option<PathBuf>,
}

/// The outcome of one target.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Inputs that ran to the end (or failed).
    pub inputs: u64,
    /// Wall time of its children added up (one core's time).
    pub busy: Duration,
    /// Its failures.
    pub failures: Vec<Failure>,
}

impl Outcome {
    /// Inputs per second of one core.
    pub fn rate(&self) -> f64 {
        self.inputs as f64 / self.busy.as_secs_f64().max(1e-9)
    }
}

/// Runs the targets and prints one line per target; returns the outcomes by name.
pub fn run(opts: &Options, self_exe: &Path) -> BTreeMap<String, Outcome> {
    let targets: Vec<Target> = if opts.targets.is_empty() {
        crate::all()
    } else {
        crate::all()
            .into_iter()
            .filter(|t| opts.targets.iter().any(|n| n == t.name))
            .collect()
    };
    // Work units: a target's inputs in one child, or split over the jobs when there are
    // fewer targets than jobs.
    let split = if targets.len() < opts.jobs {
        opts.jobs as u64
    } else {
        1
    };
    let mut units = Vec::new();
    for t in &targets {
        let per = opts.inputs.div_ceil(split).max(1);
        let mut from = 0;
        while from < opts.inputs {
            let to = (from + per).min(opts.inputs);
            units.push((t.name, from, to));
            from = to;
        }
    }
    units.reverse();
    let queue = Arc::new(Mutex::new(units));
    let results: Arc<Mutex<BTreeMap<String, Outcome>>> = Arc::new(Mutex::new(BTreeMap::new()));
    let _ = std::fs::create_dir_all(&opts.crash_dir);
    let mut workers = Vec::new();
    for _ in 0..opts.jobs.max(1) {
        let queue = Arc::clone(&queue);
        let results = Arc::clone(&results);
        let opts = opts.clone();
        let exe = self_exe.to_path_buf();
        workers.push(std::thread::spawn(move || loop {
            let unit = queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let Some((name, from, to)) = unit else { break };
            let failures_so_far = results
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(name)
                .map_or(0, |o| o.failures.len() as u64);
            let o = run_unit(&opts, &exe, name, from, to, failures_so_far);
            // As each part ends, so a long run shows its figures as it goes.
            eprintln!(
                "done {name} inputs {from}..{to}: {} run, {:.0} execs/s, {} failures",
                o.inputs,
                o.rate(),
                o.failures.len()
            );
            let mut r = results.lock().unwrap_or_else(|e| e.into_inner());
            let e = r.entry(name.to_string()).or_default();
            e.inputs += o.inputs;
            e.busy += o.busy;
            e.failures.extend(o.failures);
        }));
    }
    for w in workers {
        let _ = w.join();
    }
    Arc::try_unwrap(results)
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .unwrap_or_default()
}

/// Prints the outcomes as a table; returns the number of failures.
pub fn report(results: &BTreeMap<String, Outcome>, out: &mut dyn Write) -> u64 {
    let mut total = 0;
    let _ = writeln!(
        out,
        "{:<28} {:>10} {:>10} {:>8}",
        "target", "inputs", "execs/s", "failures"
    );
    for (name, o) in results {
        let _ = writeln!(
            out,
            "{:<28} {:>10} {:>10.0} {:>8}",
            name,
            o.inputs,
            o.rate(),
            o.failures.len()
        );
        total += o.failures.len() as u64;
    }
    let inputs: u64 = results.values().map(|o| o.inputs).sum();
    let _ = writeln!(
        out,
        "{} targets, {inputs} inputs, {total} failures",
        results.len()
    );
    total
}

/// Runs inputs `from..to` of one target in children, restarting after each crash.
fn run_unit(
    opts: &Options,
    exe: &Path,
    name: &str,
    from: u64,
    to: u64,
    failures_before: u64,
) -> Outcome {
    let mut outcome = Outcome::default();
    let mut next = from;
    let mut generator: Option<Generator> = None;
    while next < to && failures_before + (outcome.failures.len() as u64) < opts.max_failures {
        let started = Instant::now();
        let r = run_child(opts, exe, name, next, to);
        outcome.busy += started.elapsed();
        outcome.inputs += r.done - next;
        for (index, what) in r.failures {
            let g = generator.get_or_insert_with(|| {
                let t = crate::target(name).expect("a known target");
                Generator::new(&t, opts.seed, opts.max_len)
            });
            let saved = save(&opts.crash_dir, name, &g.input(index));
            let shown = what.lines().next().unwrap_or("").to_string();
            match &saved {
                Some(p) => eprintln!(
                    "FAIL {name} input {index}: {shown}\n  saved {}\n  reproduce: cargo run --profile fuzz -p bootprint-fuzz -- --target {name} --input {}",
                    p.display(),
                    p.display()
                ),
                None => eprintln!("FAIL {name} input {index}: {shown} (could not save it)"),
            }
            outcome.failures.push(Failure { index, what, saved });
        }
        if !r.started && !r.finished {
            // The child could not even start: count the unit as failed rather than spin.
            outcome.failures.push(Failure {
                index: next,
                what: "child did not start".into(),
                saved: None,
            });
            break;
        }
        next = r.done.max(next + 1).min(to);
        if r.finished {
            break;
        }
    }
    outcome
}

struct ChildRun {
    /// One past the last input that ran to its end (or failed and is accounted).
    done: u64,
    failures: Vec<(u64, String)>,
    /// The child said it finished its range.
    finished: bool,
    /// The child started at least one input.
    started: bool,
}

/// One child over `from..to`, until it finishes or dies.
fn run_child(opts: &Options, exe: &Path, name: &str, from: u64, to: u64) -> ChildRun {
    let stderr_path = std::env::temp_dir().join(format!(
        "bootprint-fuzz-{}-{name}-{from}.stderr",
        std::process::id()
    ));
    let stderr_file = std::fs::File::create(&stderr_path).ok();
    let mut cmd = Command::new(exe);
    cmd.arg("--child")
        .arg(name)
        .args(["--seed", &opts.seed.to_string()])
        .args(["--from", &from.to_string()])
        .args(["--to", &to.to_string()])
        .args(["--max-ms", &opts.max_ms.to_string()])
        .args(["--mem-mb", &opts.mem_mb.to_string()])
        .args(["--max-len", &opts.max_len.to_string()])
        .args(["--max-failures", &opts.max_failures.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(match stderr_file {
            Some(f) => Stdio::from(f),
            None => Stdio::null(),
        });
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return ChildRun {
                done: from,
                failures: vec![(from, format!("crash: cannot start the child: {e}"))],
                finished: true,
                started: false,
            }
        }
    };
    let mut out = child.stdout.take().expect("piped");
    let fd = out.as_raw_fd();
    let mut buf = Vec::new();
    let mut current: Option<u64> = None;
    let mut failures = Vec::new();
    let mut finished = false;
    let mut said_end: Option<u64> = None;
    let mut killed = false;
    // The child measures each input's CPU time itself. The parent only watches for an
    // input that never ends: no line while the child burned twice the limit in CPU time
    // (a loop), or no line for a minute's worth of limits at all (blocked).
    let limit = Duration::from_millis(opts.max_ms.max(50));
    let tick = Duration::from_secs(1) / sys::clk_tck() as u32;
    let child_cpu = |pid: u32| -> Option<Duration> {
        let raw = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
        let r = sample::procfs::parse_stat_line(&raw)?;
        Some(tick * r.utime.saturating_add(r.stime).min(u64::from(u32::MAX)) as u32)
    };
    let pid = child.id();
    let mut last_line = Instant::now();
    // The child's CPU time when the current silence was first noticed.
    let mut cpu_mark: Option<Duration> = None;
    let mut chunk = [0u8; 4096];
    loop {
        match sys::poll_readable(fd, limit.as_millis().min(i32::MAX as u128) as i32) {
            Ok(true) => {}
            Ok(false) => {
                let now = child_cpu(pid).unwrap_or_default();
                let burned = now.saturating_sub(*cpu_mark.get_or_insert(now));
                let waited = last_line.elapsed();
                if burned < limit * 2 && waited < limit * 60 {
                    continue;
                }
                let _ = child.kill();
                killed = true;
                if let Some(i) = current {
                    failures.push((
                        i,
                        format!(
                            "timeout: no result after {} ms of CPU time ({} ms wall)",
                            burned.as_millis(),
                            waited.as_millis()
                        ),
                    ));
                }
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => {
                let _ = child.kill();
                killed = true;
                break;
            }
        }
        let got = match out.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(g) => g,
        };
        buf.extend_from_slice(&chunk[..got]);
        while let Some(p) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=p).collect();
            let line = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
            last_line = Instant::now();
            cpu_mark = None;
            let (tag, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
            match tag {
                "s" => current = rest.parse().ok(),
                "p" | "t" => {
                    let (i, msg) = rest.split_once(' ').unwrap_or((rest, ""));
                    if let Ok(i) = i.parse() {
                        let kind = if tag == "p" { "panic" } else { "slow" };
                        failures.push((i, format!("{kind}: {msg}")));
                    }
                }
                "d" => {
                    finished = true;
                    said_end = rest.parse().ok();
                }
                _ => {}
            }
        }
    }
    let status = child.wait();
    let stderr = std::fs::read(&stderr_path).unwrap_or_default();
    let _ = std::fs::remove_file(&stderr_path);
    let clean = matches!(&status, Ok(s) if s.success()) && finished;
    let mut done = said_end.unwrap_or(to).clamp(from, to);
    if !clean {
        // The child died (or was killed) on the input it last started.
        let at = current.unwrap_or(from);
        done = at + 1;
        if !killed {
            let tail = String::from_utf8_lossy(&stderr);
            let said = tail
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .to_string();
            let how = match &status {
                Ok(s) => describe_status(s),
                Err(e) => format!("wait failed: {e}"),
            };
            failures.push((at, format!("crash: {how}: {said}")));
        }
        finished = done >= to;
    }
    failures.sort_by_key(|f| f.0);
    failures.dedup_by_key(|f| f.0);
    ChildRun {
        done,
        failures,
        finished,
        started: current.is_some(),
    }
}

fn describe_status(s: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (_, Some(sig)) => format!("killed by signal {sig}"),
        (Some(c), _) => format!("exit code {c}"),
        _ => "ended".into(),
    }
}

/// Saves a failing input as `<dir>/<target>-<hash>`.
fn save(dir: &Path, name: &str, input: &[u8]) -> Option<PathBuf> {
    let path = dir.join(format!("{name}-{:016x}", fnv(input)));
    std::fs::create_dir_all(dir).ok()?;
    std::fs::write(&path, input).ok()?;
    Some(path)
}

/// What a child was asked to run.
#[derive(Debug, Clone)]
pub struct ChildArgs {
    /// The target.
    pub target: String,
    /// The run's seed.
    pub seed: u64,
    /// First input number.
    pub from: u64,
    /// One past the last.
    pub to: u64,
    /// Time limit per input.
    pub max_ms: u64,
    /// Address-space cap, MiB.
    pub mem_mb: u64,
    /// Largest generated input.
    pub max_len: usize,
    /// The child stops after this many failing inputs.
    pub max_failures: u64,
}

thread_local! {
    static PANIC_MSG: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// The child's side: runs the inputs and reports on stdout. Returns the exit code.
pub fn child(args: &ChildArgs) -> i32 {
    let Some(target) = crate::target(&args.target) else {
        eprintln!("bootprint-fuzz: unknown target {}", args.target);
        return 2;
    };
    cap_memory(args.mem_mb);
    // Panics are reported as lines, not printed: the parent saves the input.
    std::panic::set_hook(Box::new(|info| {
        let msg = match info.location() {
            Some(l) => format!("{} at {}:{}", payload(info.payload()), l.file(), l.line()),
            None => payload(info.payload()),
        };
        PANIC_MSG.with(|m| *m.borrow_mut() = msg);
    }));
    let g = Generator::new(&target, args.seed, args.max_len);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let limit = Duration::from_millis(args.max_ms);
    let mut failed = 0;
    let mut end = args.to;
    for i in args.from..args.to {
        if failed >= args.max_failures {
            end = i;
            break;
        }
        if writeln!(out, "s {i}").and_then(|_| out.flush()).is_err() {
            return 1;
        }
        let input = g.input(i);
        let t0 = Duration::from_nanos(sys::thread_cpu_ns());
        let r = std::panic::catch_unwind(|| (target.run)(&input));
        let took = Duration::from_nanos(sys::thread_cpu_ns()).saturating_sub(t0);
        if r.is_err() {
            let msg = PANIC_MSG.with(|m| m.borrow().replace('\n', " "));
            let _ = writeln!(out, "p {i} {msg}");
            failed += 1;
        } else if took > limit {
            let _ = writeln!(out, "t {i} took {} ms of CPU time", took.as_millis());
            failed += 1;
        }
    }
    let _ = writeln!(out, "d {end}").and_then(|_| out.flush());
    0
}

/// Runs one saved input in this process (no child, no cap): a panic shows with its
/// backtrace when `RUST_BACKTRACE=1`. Returns the time it took.
pub fn replay(target: &Target, input: &[u8]) -> Duration {
    let t0 = Instant::now();
    (target.run)(input);
    t0.elapsed()
}

fn payload(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic)".into()
    }
}

/// Caps this process's address space, so an unbounded allocation fails (and aborts) here
/// rather than taking the machine's memory.
fn cap_memory(mb: u64) {
    if mb == 0 {
        return;
    }
    if let Err(e) = crate::sys::cap_address_space(mb.saturating_mul(1 << 20)) {
        eprintln!("bootprint-fuzz: setrlimit(RLIMIT_AS): {e}");
    }
}
