//! `bootprint-testbed`: builds a Debian 12 or 13 image, boots it under QEMU (TCG), measures the
//! boot, runs benchmarks and the real-boot smoke test. See docs/testbed.md.
//!
//! This file only parses the command line (defined once in `cli`), hands the verb to the
//! library and turns the outcome into an exit code: 0 ok, 1 failure, 2 usage (clap's, for a
//! wrong command line).

use std::process::ExitCode;

use bootprint_testbed::cli;
use bootprint_testbed::vm::util::Error;

fn main() -> ExitCode {
    // Help and version print and exit 0; a wrong command line prints the error with the
    // verb's usage and exits 2.
    let cli = cli::parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit());
    // The run's release and firmware reach every layer (vm::util::Paths) and the test bed's own child
    // processes through the environment; set before any thread starts.
    if let Some(r) = &cli.release {
        std::env::set_var(bootprint_testbed::vm::image::Release::ENV, r);
    }
    if let Some(f) = &cli.firmware {
        std::env::set_var(bootprint_testbed::vm::qemu::Firmware::ENV, f);
    }
    match bootprint_testbed::run(cli.verb) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Usage(msg)) => {
            eprintln!("bootprint-testbed: {msg} (see `bootprint-testbed --help`)");
            ExitCode::from(2)
        }
        Err(Error::Failed(msg)) => {
            eprintln!("bootprint-testbed: error: {msg}");
            ExitCode::from(1)
        }
    }
}
