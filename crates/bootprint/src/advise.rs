//! `bootprint advise TRACE [--json]`: what to change in a recorded boot, each finding with its
//! evidence, estimated gain and fix (rules: `analyze::advise`, docs/advise.md).

use crate::output::{print, report, write_json};
use crate::Outcome;

/// Runs the verb.
pub fn run(args: &crate::cli::Advise) -> Outcome {
    // The findings do not depend on the budgets: no config file is read.
    let defaults = (analyze::budget::Budgets::default(), "defaults".to_string());
    let r = match report(&args.trace, &defaults, "advise") {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e),
    };
    print("the advice", |out| {
        if args.json {
            write_json(out, &render::advice::json(&r))
        } else {
            render::advice::report(out, &r)
        }
    })
}
