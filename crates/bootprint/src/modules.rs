//! `bootprint modules plan [--root DIR] [--kernel RELEASE] [--json]`: the kernel modules the
//! present hardware needs and the order the parallel loader would use, without loading any.

use std::io::Write;
use std::path::PathBuf;

use ::modules::kmod::{self, Paths};
use ::modules::plan::{EdgeKind, Plan, SkipReason};

use crate::Outcome;

const HELP: &str = "\
usage: bootprint modules plan [--root DIR] [--kernel RELEASE] [--state FILE] [--json]

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
    it: &mut impl Iterator<Item = &'a String>,
    a: &str,
    what: &str,
) -> Result<String, String> {
    it.next()
        .cloned()
        .ok_or_else(|| format!("{a} needs {what}"))
}

fn parse(args: &[String]) -> Result<Option<Args>, String> {
    let mut it = args.iter();
    match it.next().map(String::as_str) {
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
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        match flag {
            "-h" | "--help" => return Ok(None),
            "--json" => out.json = true,
            "--root" => {
                out.root = inline
                    .map_or_else(|| value(&mut it, a, "a DIR"), Ok)?
                    .into()
            }
            "--kernel" => {
                out.kernel = Some(inline.map_or_else(|| value(&mut it, a, "a RELEASE"), Ok)?)
            }
            "--state" => {
                out.state = Some(
                    inline
                        .map_or_else(|| value(&mut it, a, "a FILE"), Ok)?
                        .into(),
                )
            }
            _ => return Err(format!("unknown argument {a:?}")),
        }
    }
    Ok(Some(out))
}

/// Runs the verb.
pub fn run(args: &[String]) -> Outcome {
    if args.first().map(String::as_str) == Some("load") {
        return load(&args[1..]);
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
usage: bootprint modules load [--workers N]

Loads the modules `plan` shows, for real, with N worker threads (default: CPUs + 1, at most 4)
in dependency order, and prints one `events.log` line per module (kind `module`: name, end_ns,
worker, outcome, detail). The boot path runs this early in boot (`bootprint.modules=1`) and
puts the lines into the trace. Needs root.
";

/// `bootprint modules load`: what the boot path runs in a child before init starts.
fn load(args: &[String]) -> Outcome {
    let mut workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get() + 1)
        .min(4);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => {
                print!("{LOAD_HELP}");
                return Outcome::Ok;
            }
            "--workers" => match it.next().and_then(|v| v.parse::<usize>().ok()) {
                Some(n) if (1..=64).contains(&n) => workers = n,
                _ => {
                    return Outcome::Usage(
                        "modules load: --workers needs a number from 1 to 64".into(),
                    )
                }
            },
            other => return Outcome::Usage(format!("modules load: unknown option {other:?}")),
        }
    }
    let root = PathBuf::from("/");
    let release = match kmod::detect_release(&root, &kmod::running_release()) {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let paths = Paths::new(&root, &release);
    let plan = match kmod::plan_system(&paths) {
        Ok(p) => p,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let report = kmod::load_system(&plan, &paths, workers);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for t in &report.modules {
        let (outcome, detail) = match &t.outcome {
            ::modules::load::Outcome::Loaded => ("loaded", String::new()),
            ::modules::load::Outcome::AlreadyLoaded => ("already_loaded", String::new()),
            ::modules::load::Outcome::Failed(d) => ("failed", d.clone()),
            ::modules::load::Outcome::Blocked(d) => ("blocked", d.clone()),
            ::modules::load::Outcome::NotRun => ("not_run", String::new()),
        };
        let e = trace::Event::new(t.start_ns, "module")
            .with("name", &t.name)
            .with("end_ns", t.end_ns)
            .with("worker", t.worker)
            .with("outcome", outcome)
            .with("detail", detail);
        if writeln!(out, "{}", e.to_line()).is_err() {
            break;
        }
    }
    for w in &report.worker_errors {
        let _ = writeln!(
            out,
            "{}",
            trace::Event::new(0, "warning")
                .with("what", format!("modules: {w}"))
                .to_line()
        );
    }
    let _ = out.flush();
    Outcome::Ok
}
