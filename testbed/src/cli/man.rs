//! `bootprint-testbed man DIR`: the man pages, generated from the command-line definition
//! (cli.rs) like the help: bootprint-testbed.1 and one page per verb
//! (bootprint-testbed-boot.1, ...).

use clap::CommandFactory;

use crate::cli;
use crate::vm::util::{Error, Result};

/// Writes the pages into `dir` (which must exist).
pub fn run(args: &cliutil::Man) -> Result<()> {
    // The derive's command, without the top-level help's list of command lines.
    let source = format!("bootprint-testbed {}", env!("CARGO_PKG_VERSION"));
    cliutil::write_man_pages(cli::Cli::command(), &args.dir, &source).map_err(Error::fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_for_the_program_and_each_verb() {
        let dir = tempfile::tempdir().unwrap();
        run(&cliutil::Man {
            dir: dir.path().to_path_buf(),
        })
        .unwrap();
        let mut pages: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        pages.sort();
        let mut want: Vec<String> = cli::command()
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .map(|s| format!("bootprint-testbed-{}.1", s.get_name()))
            .chain(["bootprint-testbed.1".to_string()])
            .collect();
        want.sort();
        assert_eq!(pages, want);
        let boot = std::fs::read_to_string(dir.path().join("bootprint-testbed-boot.1")).unwrap();
        assert!(boot.contains("guest\\-script"), "{boot}");
        assert!(run(&cliutil::Man {
            dir: dir.path().join("missing")
        })
        .is_err());
    }
}
