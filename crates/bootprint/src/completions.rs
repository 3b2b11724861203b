//! `bootprint completions SHELL`: the shell's completion script for bootprint, on stdout,
//! generated from the command-line definition (cli.rs) like the help.

use std::io::Write;

use crate::Outcome;

/// Runs the verb.
pub fn run(args: &cliutil::Completions) -> Outcome {
    let script = cliutil::completions(crate::cli::command(), "bootprint", args.shell);
    let mut out = std::io::stdout().lock();
    match out.write_all(&script).and_then(|_| out.flush()) {
        Ok(()) => Outcome::Ok,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Outcome::Ok,
        Err(e) => Outcome::Failed(format!("writing the completions: {e}")),
    }
}
