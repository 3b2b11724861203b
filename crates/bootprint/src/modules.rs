//! `bootprint modules plan`: the kernel modules the present hardware needs and the order the
//! parallel loader would use, without loading any; `bootprint modules load`: the loader
//! itself, as the boot runs it. `status`, `on` and `off` are in lever.rs.

use std::io::Write;
use std::path::PathBuf;

use ::modules::kmod::{self, Paths};
use render::modules_plan;

use crate::cli;
use crate::output::{print, write_json};
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
    print("the plan", |out| {
        if args.json {
            write_json(out, &modules_plan::json(&plan, &paths))
        } else {
            modules_plan::text(out, &plan, &paths)
        }
    })
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
