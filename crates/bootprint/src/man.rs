//! `bootprint man DIR`: the man pages, generated from the command-line definition (cli.rs)
//! like the help: bootprint.1, one page per verb (bootprint-report.1, ...) and one per
//! sub-verb (bootprint-rc-graph.1, ...).

use crate::Outcome;

/// Runs the verb.
pub fn run(args: &cliutil::Man) -> Outcome {
    // The derive's command, without the top-level help's list of command lines.
    let cmd = <crate::cli::Cli as clap::CommandFactory>::command();
    let source = format!("bootprint {}", env!("CARGO_PKG_VERSION"));
    match cliutil::write_man_pages(cmd, &args.dir, &source) {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed(e),
    }
}
