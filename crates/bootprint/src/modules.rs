//! `bootprint modules plan [--root DIR] [--kernel RELEASE] [--json]`: the kernel modules the
//! present hardware needs and the order the parallel loader would use, without loading any.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::PathBuf;

use ::modules::kmod::{self, Paths};
use ::modules::plan::{EdgeKind, Plan, SkipReason};

use crate::Outcome;

const HELP: &str = "\
usage: bootprint modules plan [--root DIR] [--kernel RELEASE] [--state FILE] [--json]
       bootprint modules load ...       (at boot: see `bootprint modules load --help`)
       bootprint modules status|on|off [--root DIR] [--json]
                                        the loader's switch, history and own verdict

Shows the modules the boot would load in parallel: every device modalias under sysfs and
every module in /etc/modules and modules-load.d, resolved through libkmod with modprobe.d
(aliases, blacklist, options, softdeps), builtin and already-loaded modules left out, in the
order one worker would load them (the slowest chains first). Nothing is loaded.

--root DIR        the system's root (default /): DIR/sys/devices, DIR/etc, DIR/proc/modules,
                  DIR/lib/modules/RELEASE
--kernel RELEASE  the kernel release under DIR/lib/modules (default: the running kernel's,
                  or the only one there)
--state FILE      learned durations (default DIR/var/lib/bootprint/modules.durations)
--json            print one JSON object instead of text (keys: docs/modules.md)
-h, --help        this help
";

struct Args {
    root: PathBuf,
    kernel: Option<String>,
    state: Option<PathBuf>,
    json: bool,
}

fn value<'a>(
    it: &mut impl Iterator<Item = &'a OsString>,
    a: &str,
    what: &str,
) -> Result<&'a OsStr, String> {
    it.next()
        .map(OsString::as_os_str)
        .ok_or_else(|| format!("{a} needs {what}"))
}

fn parse(args: &[OsString]) -> Result<Option<Args>, String> {
    let mut it = args.iter();
    match it.next().map(|a| crate::args::lossy(a)).as_deref() {
        Some("-h" | "--help") => return Ok(None),
        None => return Err("a subcommand is required: plan".into()),
        Some("plan") => {}
        Some(other) => return Err(format!("unknown subcommand {other:?} (expected `plan`)")),
    }
    let mut out = Args {
        root: PathBuf::from("/"),
        kernel: None,
        state: None,
        json: false,
    };
    while let Some(a) = it.next() {
        let (flag, inline) = crate::args::split_flag(a);
        let flag = flag.as_ref();
        match flag {
            "-h" | "--help" => return Ok(None),
            "--json" => out.json = true,
            "--root" => {
                out.root = inline
                    .map_or_else(|| value(&mut it, flag, "a DIR"), Ok)?
                    .into()
            }
            "--kernel" => {
                let v = inline.map_or_else(|| value(&mut it, flag, "a RELEASE"), Ok)?;
                out.kernel = Some(crate::args::text(v, flag)?.to_string())
            }
            "--state" => {
                out.state = Some(
                    inline
                        .map_or_else(|| value(&mut it, flag, "a FILE"), Ok)?
                        .into(),
                )
            }
            _ => return Err(format!("unknown argument {:?}", crate::args::lossy(a))),
        }
    }
    Ok(Some(out))
}

/// Runs the verb.
pub fn run(args: &[OsString]) -> Outcome {
    if args.first().is_some_and(|a| a == "load") {
        return load(&args[1..]);
    }
    for verb in ["status", "on", "off"] {
        if args.first().is_some_and(|a| a == verb) {
            return crate::lever::run(verb, &args[1..]);
        }
    }
    let args = match parse(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{HELP}");
            return Outcome::Ok;
        }
        Err(e) => return Outcome::Usage(format!("modules: {e}")),
    };
    let release = match &args.kernel {
        Some(k) => k.clone(),
        None => match kmod::detect_release(&args.root, &kmod::running_release()) {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(e.to_string()),
        },
    };
    let mut paths = Paths::new(&args.root, &release);
    if let Some(state) = &args.state {
        paths.durations = state.clone();
    }
    let plan = match kmod::plan_system(&paths) {
        Ok(p) => p,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    for w in &plan.warnings {
        eprintln!("bootprint: modules: warning: {w}");
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = if args.json {
        write_json(&plan, &paths, &mut out)
    } else {
        write_text(&plan, &paths, &mut out)
    };
    match written.and_then(|_| out.flush()) {
        Ok(()) => Outcome::Ok,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Outcome::Ok,
        Err(e) => Outcome::Failed(format!("writing the plan: {e}")),
    }
}

fn write_json(plan: &Plan, paths: &Paths, out: &mut impl Write) -> std::io::Result<()> {
    let order: Vec<&str> = plan
        .order()
        .into_iter()
        .map(|i| plan.modules[i].name.as_str())
        .collect();
    let v = serde_json::json!({
        "root": paths.root,
        "kernel": paths.release,
        "order": order,
        "plan": plan,
    });
    serde_json::to_writer_pretty(&mut *out, &v)?;
    writeln!(out)
}

fn ms(us: u64) -> String {
    format!("{:.1}", us as f64 / 1000.0)
}

/// Shortens a long `wanted by` (CPU modaliases list every feature) to its start and the
/// file in parentheses.
fn short(w: &str) -> String {
    const KEEP: usize = 60;
    if w.chars().count() <= 100 {
        return w.to_string();
    }
    let head: String = w.chars().take(KEEP).collect();
    match w.rfind(" (") {
        Some(p) if p >= KEEP => format!("{head}...{}", &w[p..]),
        _ => format!("{head}..."),
    }
}

fn write_text(plan: &Plan, paths: &Paths, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "module plan for {} (kernel {}): {} to load, {} skipped, {} modaliases without a module",
        paths.root.display(),
        paths.release,
        plan.modules.len(),
        plan.skipped.len(),
        plan.unmatched.len()
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{:>4}  {:<24} {:>9} {:>9}  waits for / wanted by",
        "#", "module", "exp ms", "prio ms"
    )?;
    for (n, i) in plan.order().into_iter().enumerate() {
        let m = &plan.modules[i];
        // `~name` marks a soft dependency: the module loads even if that one fails.
        let after: Vec<String> = m
            .after
            .iter()
            .map(|e| {
                let name = &plan.modules[e.module].name;
                if e.kind == EdgeKind::Dep {
                    name.clone()
                } else {
                    format!("~{name}")
                }
            })
            .collect();
        let why = if after.is_empty() {
            m.wanted_by
                .iter()
                .map(|w| short(w))
                .collect::<Vec<_>>()
                .join("; ")
        } else {
            format!("after {}", after.join(" "))
        };
        writeln!(
            out,
            "{:>4}  {:<24} {:>9} {:>9}  {why}",
            n + 1,
            m.name,
            ms(m.expected_us),
            ms(m.priority_us)
        )?;
        if !m.options.is_empty() {
            writeln!(out, "{:>4}  {:<24} options: {}", "", "", m.options)?;
        }
    }
    if !plan.skipped.is_empty() {
        writeln!(out, "\nskipped:")?;
        for s in &plan.skipped {
            let reason = match &s.reason {
                SkipReason::Builtin => "builtin".to_string(),
                SkipReason::Loaded => "already loaded".to_string(),
                SkipReason::Blacklisted => "blacklisted".to_string(),
                SkipReason::InstallCommand(c) => format!("install command ({c}): left to modprobe"),
                SkipReason::NotFound => "no such module".to_string(),
            };
            let by = short(&s.wanted_by);
            writeln!(out, "  {:<24} {reason}; wanted by {by}", s.name)?;
        }
    }
    if !plan.dropped.is_empty() {
        writeln!(out, "\nsoftdeps dropped to break a cycle:")?;
        for d in &plan.dropped {
            writeln!(out, "  {} after {}", d.module, d.after)?;
        }
    }
    if !plan.unmatched.is_empty() {
        writeln!(out, "\nmodaliases no module matches:")?;
        for a in &plan.unmatched {
            writeln!(out, "  {a}")?;
        }
    }
    Ok(())
}

const LOAD_HELP: &str = "\
usage: bootprint modules load [--workers N] [--only NAMES] [--state FILE] [--no-learn]
                              [--learn-wait SECONDS]

Loads the modules `plan` shows, for real, with N worker threads (default: CPUs + 1, at most 4)
in dependency order, and prints one `events.log` line per module (kind `module`: name, end_ns,
worker, outcome, detail), after a `modules_plan` line (planned, the modules loaded before,
skipped). The boot path runs this early in boot (`bootprint.modules=1`) and puts the lines
into the trace. Then each module's measured load time is folded into the durations state
file, so the next plan puts the slow ones first (`modules_learned` line); at boot the root is
still read-only, so this waits until it is writable. Needs root.

--workers N           worker threads (1 to 64)
--only NAMES          load these modules or aliases (comma-separated) and what they need,
                      instead of what sysfs and the module lists ask for (the bench)
--state FILE          learned durations (default /var/lib/bootprint/modules.durations)
--no-learn            do not write the durations
--learn-wait SECONDS  how long to wait for a writable state file (default 120)
";

struct LoadArgs {
    workers: usize,
    only: Option<Vec<String>>,
    state: Option<PathBuf>,
    learn: bool,
    learn_wait_s: u64,
}

fn parse_load(args: &[OsString]) -> Result<Option<LoadArgs>, String> {
    let mut out = LoadArgs {
        workers: std::thread::available_parallelism()
            .map_or(2, |n| n.get() + 1)
            .min(4),
        only: None,
        state: None,
        learn: true,
        learn_wait_s: 120,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let a = crate::args::lossy(a);
        let a = a.as_ref();
        match a {
            "-h" | "--help" => return Ok(None),
            "--workers" => match it.next().and_then(|v| v.to_str()?.parse::<usize>().ok()) {
                Some(n) if (1..=64).contains(&n) => out.workers = n,
                _ => return Err("--workers needs a number from 1 to 64".into()),
            },
            "--only" => {
                let v = crate::args::text(value(&mut it, a, "NAMES (comma-separated)")?, a)?;
                let names: Vec<String> = v
                    .split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(String::from)
                    .collect();
                if names.is_empty() {
                    return Err("--only needs at least one module name".into());
                }
                out.only.get_or_insert_with(Vec::new).extend(names);
            }
            "--state" => out.state = Some(value(&mut it, a, "a FILE")?.into()),
            "--no-learn" => out.learn = false,
            "--learn-wait" => match it.next().and_then(|v| v.to_str()?.parse::<u64>().ok()) {
                Some(n) if n <= 3600 => out.learn_wait_s = n,
                _ => return Err("--learn-wait needs a number of seconds up to 3600".into()),
            },
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(Some(out))
}

/// `bootprint modules load`: what the boot path runs in a child before init starts.
fn load(args: &[OsString]) -> Outcome {
    let args = match parse_load(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{LOAD_HELP}");
            return Outcome::Ok;
        }
        Err(e) => return Outcome::Usage(format!("modules load: {e}")),
    };
    let started_ns = ::modules::boottime_ns();
    let root = PathBuf::from("/");
    let release = match kmod::detect_release(&root, &kmod::running_release()) {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let mut paths = Paths::new(&root, &release);
    if let Some(state) = &args.state {
        paths.durations = state.clone();
    }
    let inputs = match &args.only {
        Some(names) => kmod::gather_only(&paths, names, std::path::Path::new("--only")),
        None => kmod::gather(&paths),
    };
    let plan = match inputs.and_then(|i| kmod::plan_inputs(&paths, &i).map(|p| (i, p))) {
        Ok(p) => p,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let (inputs, plan) = plan;
    let report = kmod::load_system(&plan, &paths, args.workers);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    // The modules there before: at boot, what the initramfs loaded (the udev comparison
    // needs it); sorted so the line is the same for the same set.
    let mut before: Vec<&str> = inputs.loaded.iter().map(String::as_str).collect();
    before.sort_unstable();
    let mut lines = vec![trace::Event::new(started_ns, "modules_plan")
        .with("planned", plan.modules.len())
        .with("skipped", plan.skipped.len())
        .with("workers", args.workers)
        .with("loaded_before", before.join(","))];
    for (t, m) in report.modules.iter().zip(&plan.modules) {
        let (outcome, detail) = match &t.outcome {
            ::modules::load::Outcome::Loaded => ("loaded", String::new()),
            ::modules::load::Outcome::AlreadyLoaded => ("already_loaded", String::new()),
            ::modules::load::Outcome::Failed(d) => ("failed", d.clone()),
            ::modules::load::Outcome::Blocked(d) => ("blocked", d.clone()),
            ::modules::load::Outcome::NotRun => ("not_run", String::new()),
        };
        lines.push(
            trace::Event::new(t.start_ns, "module")
                .with("name", &t.name)
                .with("end_ns", t.end_ns)
                .with("worker", t.worker)
                .with("outcome", outcome)
                .with("detail", detail)
                // What the plan expected (learned on earlier boots, else a default).
                .with("expected_us", m.expected_us),
        );
    }
    for w in &report.worker_errors {
        lines.push(warning(format!("modules: {w}")));
    }
    for e in &lines {
        if writeln!(out, "{}", e.to_line()).is_err() {
            break;
        }
    }
    // The module lines go out now: the durations may wait for a writable root.
    let _ = out.flush();
    if args.learn {
        let wait = std::time::Duration::from_millis(500);
        let attempts = (args.learn_wait_s * 2).max(1) as usize;
        let e = match ::modules::durations::save_learned(&paths.durations, &report, attempts, wait)
        {
            Ok(n) => trace::Event::new(::modules::boottime_ns(), "modules_learned")
                .with("modules", n)
                .with("file", paths.durations.display()),
            Err(e) => warning(format!("modules: durations not saved: {e}")),
        };
        let _ = writeln!(out, "{}", e.to_line());
        let _ = out.flush();
    }
    Outcome::Ok
}

fn warning(what: String) -> trace::Event {
    trace::Event::new(::modules::boottime_ns(), "warning").with("what", what)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<OsString> {
        crate::args::os(a)
    }

    #[test]
    fn load_options() {
        let a = parse_load(&args(&[
            "--only",
            "kvm_amd, evdev,",
            "--only",
            "button",
            "--no-learn",
            "--workers",
            "2",
            "--state",
            "/tmp/d",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            a.only,
            Some(vec!["kvm_amd".into(), "evdev".into(), "button".into()])
        );
        assert!(!a.learn);
        assert_eq!((a.workers, a.learn_wait_s), (2, 120));
        assert_eq!(a.state, Some(PathBuf::from("/tmp/d")));
        let d = parse_load(&[]).unwrap().unwrap();
        assert!(d.learn && d.only.is_none() && (1..=4).contains(&d.workers));
        assert!(parse_load(&args(&["--help"])).unwrap().is_none());
        for (bad, msg) in [
            (vec!["--only", ","], "--only needs at least one module name"),
            (vec!["--only"], "--only needs NAMES (comma-separated)"),
            (
                vec!["--workers", "0"],
                "--workers needs a number from 1 to 64",
            ),
            (
                vec!["--learn-wait", "x"],
                "--learn-wait needs a number of seconds up to 3600",
            ),
            (vec!["--frob"], "unknown option \"--frob\""),
        ] {
            assert_eq!(parse_load(&args(&bad)).err().as_deref(), Some(msg));
        }
    }
}
