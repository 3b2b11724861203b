//! What the two clap command lines (`bootprint` and `bootprint-testbed`) share, so each is
//! defined once and everything else is generated from it: the one-line synopsis of every
//! command line for the top-level help ([`synopses`]), the man pages ([`write_man_pages`])
//! and the shell completions ([`completions`]), with the arguments of the `man` and
//! `completions` verbs ([`Man`], [`Completions`]). Not linked into the boot path.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};

use clap::{Arg, Args, Command};

/// The shells [`completions`] writes for.
pub use clap_complete::Shell;

/// `completions SHELL`.
#[derive(Debug, Args)]
pub struct Completions {
    /// The shell
    #[arg(value_name = "SHELL", value_enum)]
    pub shell: clap_complete::Shell,
}

/// `man DIR`.
#[derive(Debug, Args)]
pub struct Man {
    /// The directory to write into (it must exist)
    #[arg(value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub dir: PathBuf,
}

/// Every command that takes no sub-verb, with the verbs leading to it (`["rc", "graph"]`),
/// in definition order; clap's own `help` left out.
pub fn leaves(cmd: &Command, path: Vec<String>) -> Vec<(Vec<String>, &Command)> {
    let subs: Vec<&Command> = cmd
        .get_subcommands()
        .filter(|s| s.get_name() != "help")
        .collect();
    if subs.is_empty() {
        return vec![(path, cmd)];
    }
    let mut out = Vec::new();
    for s in subs {
        let mut p = path.clone();
        p.push(s.get_name().to_string());
        out.extend(leaves(s, p));
    }
    out
}

/// The synopsis of every command line of `cmd` (`program` names it), one per leaf command.
pub fn synopses(program: &str, cmd: &Command) -> String {
    leaves(cmd, Vec::new())
        .into_iter()
        .map(|(path, sub)| synopsis(program, &path, sub))
        .collect()
}

/// `  bootprint rc graph [--root DIR] [--runlevel N] [--json] [--dot]`, wrapped under its
/// verbs at 100 columns, in the order the docs write them: required options, positionals,
/// the rest; hidden options left out.
pub fn synopsis(program: &str, path: &[String], cmd: &Command) -> String {
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    let value = |a: &Arg| a.get_value_names().map_or("VALUE".into(), |v| v.join(" "));
    let option = |a: &Arg| {
        let mut w = format!("--{}", a.get_long().unwrap_or_default());
        if a.get_action().takes_values() {
            w = format!("{w} {}", value(a));
        }
        w
    };
    let mut words: Vec<String> = Vec::new();
    for a in &args {
        if !a.is_positional() && a.is_required_set() {
            words.push(option(a));
        }
    }
    for a in &args {
        if a.is_positional() {
            words.push(if a.is_required_set() {
                value(a)
            } else {
                format!("[{}]", value(a))
            });
        }
    }
    for a in &args {
        if !a.is_positional() && !a.is_required_set() {
            let repeats = matches!(a.get_action(), clap::ArgAction::Append);
            words.push(format!(
                "[{}]{}",
                option(a),
                if repeats { "..." } else { "" }
            ));
        }
    }
    let head = format!("  {program} {}", path.join(" "));
    let mut out = head.clone();
    let mut width = out.len();
    for w in words {
        if width + 1 + w.len() > 100 {
            out.push('\n');
            out.push_str(&" ".repeat(head.len()));
            width = head.len();
        }
        out.push(' ');
        out.push_str(&w);
        width += 1 + w.len();
    }
    out.push('\n');
    out
}

/// Writes the man pages of `cmd` (the derive's command, without a top-level list of command
/// lines: roff would run its lines together) into `dir`: `PROGRAM.1` and one page per verb
/// and sub-verb (`bootprint-rc-graph.1`). `source` is every page's footer (program and
/// version). A failure names the file.
pub fn write_man_pages(mut cmd: Command, dir: &Path, source: &str) -> Result<(), String> {
    // Gives every sub-command its full name (`bootprint-rc-graph`), which names its page.
    cmd.build();
    // clap's `help` sub-command is no verb: no page, not listed.
    let cmd = cmd.mut_subcommand("help", |h| h.hide(true));
    write_pages(&cmd, dir, source)
}

fn write_pages(cmd: &Command, dir: &Path, source: &str) -> Result<(), String> {
    let man = clap_mangen::Man::new(cmd.clone()).source(source.to_string());
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page)
        .and_then(|()| std::fs::write(&path, page))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, source)?;
    }
    Ok(())
}

/// The completion script of `cmd` (named `program`) for `shell`.
pub fn completions(mut cmd: Command, program: &str, shell: clap_complete::Shell) -> Vec<u8> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, program, &mut script);
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Command {
        Command::new("demo")
            .subcommand(
                Command::new("run")
                    .arg(Arg::new("trace").value_name("TRACE").required(true))
                    .arg(
                        Arg::new("json")
                            .long("json")
                            .action(clap::ArgAction::SetTrue),
                    )
                    .arg(Arg::new("out").long("out").value_name("DIR").required(true)),
            )
            .subcommand(
                Command::new("rc")
                    .disable_help_subcommand(true)
                    .subcommand(Command::new("graph")),
            )
    }

    #[test]
    fn synopses_put_required_options_first_and_name_every_leaf() {
        let s = synopses("demo", &demo());
        assert_eq!(s, "  demo run --out DIR TRACE [--json]\n  demo rc graph\n");
    }

    #[test]
    fn a_man_page_per_command_and_completions_name_the_verbs() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        write_man_pages(demo(), dir, "demo 1").unwrap();
        let mut pages: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        pages.sort();
        assert_eq!(
            pages,
            ["demo-rc-graph.1", "demo-rc.1", "demo-run.1", "demo.1"]
        );
        assert!(write_man_pages(demo(), &dir.join("missing"), "demo 1")
            .unwrap_err()
            .contains("missing"));
        let bash =
            String::from_utf8(completions(demo(), "demo", clap_complete::Shell::Bash)).unwrap();
        assert!(bash.contains("run") && bash.contains("--json"), "{bash}");
    }
}
