//! `bootprint man DIR`: the man pages, generated from the command-line definition (cli.rs)
//! like the help: bootprint.1, one page per verb (bootprint-report.1, ...) and one per
//! sub-verb (bootprint-rc-graph.1, ...).

use std::path::Path;

use crate::Outcome;

/// Runs the verb.
pub fn run(args: &crate::cli::Man) -> Outcome {
    // The derive's command without the top-level help's list of command lines: roff would
    // run its lines together, and each sub-verb has its own page with its synopsis.
    let mut cmd = <crate::cli::Cli as clap::CommandFactory>::command();
    // Gives every sub-command its full name (`bootprint-rc-graph`), which names its page.
    cmd.build();
    // clap's `help` sub-command is no verb of bootprint's: no page, not listed.
    let cmd = cmd.mut_subcommand("help", |h| h.hide(true));
    match write_pages(&cmd, &args.dir) {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed(e),
    }
}

fn write_pages(cmd: &clap::Command, dir: &Path) -> Result<(), String> {
    // Every page's footer names the program and its version (a sub-command has neither).
    let man = clap_mangen::Man::new(cmd.clone())
        .source(format!("bootprint {}", env!("CARGO_PKG_VERSION")));
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page)
        .and_then(|_| std::fs::write(&path, page))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir)?;
    }
    Ok(())
}
