//! `bootprint prune [--dry-run] [--dir DIR] [--config FILE]`: what boot done does to the log
//! directory (`record::retain`), by hand, with the configured limits.

use std::path::Path;

use record::retain::{self, Limits};

use crate::output::print;
use crate::Outcome;

/// Runs the verb.
pub fn run(args: &crate::cli::Prune) -> Outcome {
    let file = args
        .config
        .as_deref()
        .unwrap_or(Path::new(record::config::CONFIG_FILE));
    if args.config.is_some() && !file.is_file() {
        return Outcome::Failed(format!("{}: no such file", file.display()));
    }
    // Removing by other limits than the boot's would surprise: a bad file stops here.
    let (config, errors) = record::Config::load(file, "");
    if let Some(e) = errors.first() {
        return Outcome::Failed(format!("{e}; nothing removed"));
    }
    let dir = args.dir.clone().unwrap_or(config.log_dir.clone());
    let scan = match retain::scan(&dir, &crate::list::this_boot()) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(format!("{}: {e}", dir.display())),
    };
    let plan = retain::plan(&scan, Limits::new(config.keep_traces, config.keep_mb), None);
    let failed = if args.dry_run {
        Vec::new()
    } else {
        retain::remove(&plan)
    };
    let printed = print("what was pruned", |out| {
        render::history::prune(out, &dir, &plan, &failed, args.dry_run)
    });
    if failed.is_empty() {
        printed
    } else {
        Outcome::Failed(format!("{} of {} not removed", failed.len(), plan.len()))
    }
}
