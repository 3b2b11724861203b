//! `bootprint export --prometheus DIR TRACE [--config FILE]`: the boot's figures for
//! node_exporter's textfile collector, written atomically as DIR/bootprint.prom.

use crate::output::{budgets, report};
use crate::Outcome;

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
    let path = dir.join(render::prometheus::FILE_NAME);
    sys::write_atomic(&path, render::prometheus::report(&r).as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
        .into()
}
