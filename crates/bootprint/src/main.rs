//! `bootprint`: the command line for everything after boot. This file only parses the
//! command line (defined once in `cli`), dispatches to one file per verb and turns the
//! outcome into an exit code: 0 ok, 1 failure, 2 usage (clap's, for a wrong command line).

mod advise;
mod cli;
mod completions;
mod config_edit;
mod diff;
mod enable;
mod export;
mod fleet;
mod initramfs;
mod keep;
mod kernel;
mod lever;
mod list;
mod man;
mod modules;
mod otlp;
mod output;
mod preload;
mod prune;
mod rc;
mod readahead;
mod reboot;
mod report;
mod services;
mod systemd_boot;

use std::process::ExitCode;

use cli::Verb;

/// What a verb can end in.
pub enum Outcome {
    /// Done.
    Ok,
    /// The work failed; the message says why.
    Failed(String),
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so `bootprint ... | head` would panic on the closed pipe; a
    // command-line tool should just stop, as cat does.
    sys::default_signal(libc::SIGPIPE);
    // Help and version print and exit 0; a wrong command line prints the error with the
    // verb's usage and exits 2.
    let cli = cli::parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit());
    let outcome = match &cli.verb {
        Verb::Report(a) => report::run(a),
        Verb::Advise(a) => advise::run(a),
        Verb::Diff(a) => diff::run(a),
        Verb::Export(a) => export::run(a),
        Verb::Fleet(a) => fleet::run(a),
        Verb::List(a) => list::run(a),
        Verb::Keep(a) => keep::run(a),
        Verb::Prune(a) => prune::run(a),
        Verb::Kernel(a) => kernel::run(a),
        Verb::Initramfs(a) => initramfs::run(a),
        Verb::Modules(a) => modules::run(a),
        Verb::Services(a) => services::run(a),
        Verb::Rc(a) => rc::run(a),
        Verb::Readahead(a) => readahead::run(a),
        Verb::Preload(a) => preload::run(a),
        Verb::Reboot(a) => reboot::run(a),
        Verb::Enable(a) => enable::enable(a),
        Verb::Disable(a) => enable::disable(a),
        Verb::Status(a) => enable::status(a),
        Verb::Completions(a) => completions::run(a),
        Verb::Man(a) => man::run(a),
    };
    match outcome {
        Outcome::Ok => ExitCode::SUCCESS,
        Outcome::Failed(msg) => {
            eprintln!("bootprint: {msg}");
            ExitCode::from(1)
        }
    }
}
