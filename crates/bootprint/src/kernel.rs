//! `bootprint kernel TRACE|DMESG [--json] [--svg FILE]`: the kernel's share of the boot, from
//! a trace's `dmesg` file or any kernel log: phases, initcalls by thread, findings.

use crate::output::{print, write_file};
use crate::Outcome;

/// Runs the verb.
pub fn run(args: &crate::cli::Kernel) -> Outcome {
    let report = match ::kernel::read_path(&args.input) {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    if report.boot.counts.kernel_lines == 0 {
        return Outcome::Failed(format!(
            "{}: no kernel log lines (`[seconds.micros] message`) found",
            report.source
        ));
    }
    if let Some(path) = &args.svg {
        if let Err(e) = write_file(path, |w| render::kernel_svg::write(&report, w)) {
            return Outcome::Failed(e);
        }
    }
    print("the report", |out| {
        if args.json {
            render::json::kernel(&report, out)
        } else {
            render::kernel_text::write(&report, out)
        }
    })
}
