//! `bootprint modules plan`: the kernel modules the present hardware needs and the order the
//! parallel loader would use, without loading any; `bootprint modules load`: the loader
//! itself, as the boot runs it. `status`, `on` and `off` are in lever.rs.

use std::io::Write;
use std::path::PathBuf;

use ::modules::kmod::{self, Paths};
use ::modules::plan::{EdgeKind, Plan, SkipReason};

use crate::cli;
use crate::Outcome;

/// Runs `bootprint modules ...`.
pub fn run(cmd: &cli::Modules) -> Outcome {
    match cmd {
        cli::Modules::Plan(a) => plan(a),
        cli::Modules::Load(a) => load(a),
        cli::Modules::Status(a) => crate::lever::status(&a.root, a.json),
        cli::Modules::On(a) => crate::lever::switch(&a.root, true),
        cli::Modules::Off(a) => crate::lever::switch(&a.root, false),
    }
}

/// `bootprint modules plan`.
fn plan(args: &cli::ModulesPlan) -> Outcome {
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

/// `bootprint modules load`: what the boot path runs in a child before init starts.
fn load(args: &cli::ModulesLoad) -> Outcome {
    let workers = args.workers.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get() + 1)
            .min(4)
    });
    let only: Vec<String> = args.only.iter().flat_map(|n| n.0.clone()).collect();
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
    let inputs = if only.is_empty() {
        kmod::gather(&paths)
    } else {
        kmod::gather_only(&paths, &only, std::path::Path::new("--only"))
    };
    let plan = match inputs.and_then(|i| kmod::plan_inputs(&paths, &i).map(|p| (i, p))) {
        Ok(p) => p,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let (inputs, plan) = plan;
    let report = kmod::load_system(&plan, &paths, workers);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    // The modules there before: at boot, what the initramfs loaded (the udev comparison
    // needs it); sorted so the line is the same for the same set.
    let mut before: Vec<&str> = inputs.loaded.iter().map(String::as_str).collect();
    before.sort_unstable();
    let mut lines = vec![trace::Event::new(started_ns, "modules_plan")
        .with("planned", plan.modules.len())
        .with("skipped", plan.skipped.len())
        .with("workers", workers)
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
    if !args.no_learn {
        let wait = std::time::Duration::from_millis(500);
        let attempts = (args.learn_wait * 2).max(1) as usize;
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
