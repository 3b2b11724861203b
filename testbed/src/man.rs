//! `bootprint-testbed man DIR`: the man pages, generated from the command-line definition
//! (cli.rs) like the help: bootprint-testbed.1 and one page per verb
//! (bootprint-testbed-boot.1, ...).

use std::path::Path;

use clap::CommandFactory;

use crate::cli;
use crate::util::{io_err, Result};

/// Writes the pages into `dir` (which must exist).
pub fn run(args: &cli::Man) -> Result<()> {
    // The derive's command without the top-level help's list of command lines (roff would
    // run its lines together; each verb has its own page with its synopsis).
    let mut cmd = cli::Cli::command();
    // Gives every verb its full name (`bootprint-testbed-boot`), which names its page.
    cmd.build();
    // clap's `help` is no verb of the test bed's: no page, not listed.
    let cmd = cmd.mut_subcommand("help", |h| h.hide(true));
    write_pages(&cmd, &args.dir)
}

fn write_pages(cmd: &clap::Command, dir: &Path) -> Result<()> {
    // Every page's footer names the program and its version (a verb has neither).
    let man = clap_mangen::Man::new(cmd.clone())
        .source(format!("bootprint-testbed {}", env!("CARGO_PKG_VERSION")));
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page)
        .and_then(|()| std::fs::write(&path, page))
        .map_err(|e| io_err("cannot write", &path, e))?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_for_the_program_and_each_verb() {
        let dir = tempfile::tempdir().unwrap();
        run(&cli::Man {
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
        assert!(run(&cli::Man {
            dir: dir.path().join("missing")
        })
        .is_err());
    }
}
