//! `bootprint-testbed completions SHELL`: the shell's completion script for the test bed, on
//! stdout, generated from the command-line definition (cli.rs) like the help.

use std::io::Write;

use crate::cli;
use crate::vm::util::{Error, Result};

pub fn run(args: &cliutil::Completions) -> Result<()> {
    let script = script(args.shell);
    let mut out = std::io::stdout().lock();
    match out.write_all(&script).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::fail(format!("writing the completions: {e}")))
        }
        _ => Ok(()),
    }
}

fn script(shell: cliutil::Shell) -> Vec<u8> {
    cliutil::completions(cli::command(), "bootprint-testbed", shell)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verbs, the options and the choices the modules define (a fault case) are completed.
    #[test]
    fn scripts_name_the_verbs_and_choices() {
        for shell in [
            cliutil::Shell::Bash,
            cliutil::Shell::Zsh,
            cliutil::Shell::Fish,
        ] {
            let s = String::from_utf8(script(shell)).unwrap();
            for want in ["stall-repro", "guest-script", "recorder-killed"] {
                assert!(s.contains(want), "{shell}: {want} missing");
            }
        }
    }
}
