//! `bootprint`: the command line for everything after boot. This file only parses the verb,
//! dispatches to one file per verb and turns the outcome into an exit code:
//! 0 ok, 1 failure, 2 usage.

mod advise;
mod args;
mod diff;
mod export;
mod initramfs;
mod kernel;
mod lever;
mod modules;
mod rc;
mod readahead;
mod report;

use std::process::ExitCode;

const USAGE: &str = "\
usage: bootprint <verb> [options]

Verbs:
  report TRACE [--json] [--svg FILE] [--config FILE] [--html FILE] [--perfetto FILE]
                                       where the time of a recorded boot went, against
                                       the phase budgets
  advise TRACE [--json]                what to change, with evidence and estimated gain
  diff A B [--json] [--svg FILE]       two recorded boots side by side
  export --prometheus DIR TRACE        the boot's times for node_exporter's textfile collector
  kernel TRACE|DMESG [--json] [--svg FILE]
                                       the kernel's share: phases, initcalls, findings
  modules plan [--root DIR] [--json]   the modules this machine's boot would load, in order
  modules status|on|off [--root DIR]   the module loader's switch, history and own verdict
  initramfs build|plan|install [--out FILE] [--root DEV]
                                       a host-only initramfs whose /init is bootprint-boot
  rc graph [--root DIR] [--runlevel N] [--json|--dot]
                                       start graph and order of the init scripts
  readahead status|show|relearn|on|off [--root DIR] [--json]
                                       readahead's pack, history and verdict; its switch

Run `bootprint <verb> --help` for a verb's options.
";

/// What a verb can end in.
pub enum Outcome {
    /// Done.
    Ok,
    /// The work failed; the message says why.
    Failed(String),
    /// The command line was wrong; the message says how.
    Usage(String),
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so `bootprint ... | head` would panic on the closed pipe; a
    // command-line tool should just stop, as cat does.
    // SAFETY: setting a signal's disposition to the default has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // A path is bytes, not text: arguments stay as the OS gave them (verbs look at option
    // names as text, and say so when a value that must be text is not).
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let verb = args.first().map(|a| a.to_string_lossy());
    let outcome = match verb.as_deref() {
        None => Outcome::Usage("a verb is required".into()),
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            Outcome::Ok
        }
        Some("-V" | "--version") => {
            println!("bootprint {}", env!("CARGO_PKG_VERSION"));
            Outcome::Ok
        }
        Some("report") => report::run(&args[1..]),
        Some("advise") => advise::run(&args[1..]),
        Some("diff") => diff::run(&args[1..]),
        Some("export") => export::run(&args[1..]),
        Some("kernel") => kernel::run(&args[1..]),
        Some("initramfs") => initramfs::run(&args[1..]),
        Some("modules") => modules::run(&args[1..]),
        Some("rc") => rc::run(&args[1..]),
        Some("readahead") => readahead::run(&args[1..]),
        Some(other) => Outcome::Usage(format!("unknown verb {other:?}")),
    };
    match outcome {
        Outcome::Ok => ExitCode::SUCCESS,
        Outcome::Failed(msg) => {
            eprintln!("bootprint: {msg}");
            ExitCode::from(1)
        }
        Outcome::Usage(msg) => {
            eprintln!("bootprint: {msg}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
