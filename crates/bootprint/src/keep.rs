//! `bootprint keep ID [--unpin] [--dir DIR]`: pins a kept trace so pruning never removes it
//! (`record::retain::pin`: a `pinned` file in the trace directory), or unpins it.

use crate::Outcome;

/// Runs the verb.
pub fn run(args: &crate::cli::Keep) -> Outcome {
    let dir = crate::list::log_dir(args.dir.as_deref());
    let scan = match record::retain::scan(&dir, &crate::list::this_boot()) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(format!("{}: {e}", dir.display())),
    };
    let trace = match scan.find(&args.id) {
        Ok(t) => t,
        Err(e) => return Outcome::Failed(format!("{}: {e}", dir.display())),
    };
    match record::retain::pin(&trace.path, !args.unpin) {
        Ok(()) => {
            let what = if args.unpin { "unpinned" } else { "pinned" };
            println!("{what} {}", trace.path.display());
            Outcome::Ok
        }
        Err(e) => Outcome::Failed(format!(
            "{}: {e}",
            trace.path.join(record::retain::PIN_FILE).display()
        )),
    }
}
