//! `bootprint export --prometheus DIR TRACE [--config FILE]`: the boot's figures for
//! node_exporter's textfile collector, written atomically as DIR/bootprint.prom.

use std::path::Path;

use analyze::summary::Summary;

use crate::output::{budgets, report};
use crate::Outcome;

/// The milestones given a baseline, with their figure in a boot's line.
type Figure = fn(&Summary) -> Option<f64>;
const MILESTONES: [(&str, Figure); 3] = [
    ("text_login", |s| s.text_login_s),
    ("graphical_login", |s| s.graphical_login_s),
    ("boot_done", |s| s.boot_done_s),
];

/// The lines of the boots in TRACE's directory (its machine's kept traces, oldest first, as
/// `bootprint list` reads them) up to TRACE itself; only TRACE's where it is not in such a
/// directory (a copied trace, a bootchart2 archive) or a trace before it cannot be read (it
/// is left out).
fn history(trace: &Path) -> Vec<Summary> {
    let own = || {
        crate::list::boot_summary(trace)
            .map(|(s, _)| s)
            .into_iter()
            .collect()
    };
    let Ok(trace) = std::fs::canonicalize(trace) else {
        return own();
    };
    let Some(dir) = trace.parent() else {
        return own();
    };
    let Ok(scan) = record::retain::scan(dir, &crate::list::this_boot()) else {
        return own();
    };
    let Some(at) = scan.traces.iter().position(|k| k.path == trace) else {
        return own();
    };
    scan.traces[..=at]
        .iter()
        .filter_map(|k| crate::list::boot_summary(&k.path).ok().map(|(s, _)| s))
        .collect()
}

/// Runs the verb.
pub fn run(args: &crate::cli::Export) -> Outcome {
    let dir = &args.prometheus;
    let budgets = match budgets(args.config.as_deref()) {
        Ok(b) => b,
        Err(e) => return Outcome::Failed(e),
    };
    if !dir.is_dir() {
        return Outcome::Failed(format!("{}: not a directory", dir.display()));
    }
    let r = match report(&args.trace, &budgets, "export") {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e),
    };
    let history = history(&args.trace);
    let baselines: Vec<(&str, analyze::baseline::Baseline)> = MILESTONES
        .iter()
        .filter_map(|(name, figure)| {
            let values: Vec<Option<f64>> = history.iter().map(figure).collect();
            analyze::baseline::of(&values).map(|b| (*name, b))
        })
        .collect();
    let options: Vec<&str> = r
        .model
        .system
        .kernel_options
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    // Every lever with a parameter of its own (the initramfs lever has none).
    let levers_on = enablement::manifest::Lever::ALL
        .into_iter()
        .filter_map(|l| Some((l.word(), options.contains(&l.param()?.as_str()))))
        .collect();
    let machine = render::prometheus::Machine {
        levers_on,
        baselines,
    };
    let path = dir.join(render::prometheus::FILE_NAME);
    sys::write_atomic(
        &path,
        render::prometheus::report_with(&r, &machine).as_bytes(),
    )
    .map_err(|e| format!("{}: {e}", path.display()))
    .into()
}
