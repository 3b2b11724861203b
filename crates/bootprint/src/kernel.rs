//! `bootprint kernel TRACE|DMESG [--json] [--svg FILE]`: the kernel's share of the boot, from
//! a trace's `dmesg` file or any kernel log: phases, initcalls by thread, findings.

use std::io::Write;

use crate::Outcome;

const HELP: &str = "\
usage: bootprint kernel TRACE|DMESG [--json] [--svg FILE]

Shows what happened before init ran: how long the kernel took to its first program and how
long the initramfs ran, the slowest initcalls and module inits with their share of the time
and the thread that ran them, the slowest driver probes, and findings (what to change, the
log lines that show it, and the expected gain). Initcalls need a boot with initcall_debug.

TRACE       a bootprint trace directory (its dmesg file is read)
DMESG       a kernel log: `dmesg` output (also -r, -x) or a serial console capture
--json      print one JSON object instead of the text report (keys: docs/kernel.md)
--svg FILE  also write an SVG timeline of the initcalls, one row per thread, to FILE
-h, --help  this help
";

/// Runs the verb.
pub fn run(args: &[std::ffi::OsString]) -> Outcome {
    let args = match crate::args::parse_input(
        args,
        "TRACE or DMESG",
        "a TRACE directory or a DMESG file is required",
    ) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{HELP}");
            return Outcome::Ok;
        }
        Err(e) => return Outcome::Usage(format!("kernel: {e}")),
    };
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
        let written = std::fs::File::create(path).and_then(|f| {
            let mut w = std::io::BufWriter::new(f);
            ::kernel::svg::write(&report, &mut w)?;
            w.flush()
        });
        if let Err(e) = written {
            return Outcome::Failed(format!("{}: {e}", path.display()));
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = if args.json {
        report.write_json(&mut out)
    } else {
        ::kernel::text::write(&report, &mut out)
    };
    match written.and_then(|_| out.flush()) {
        Ok(()) => Outcome::Ok,
        // A closed pipe (`| head`) is not a failure worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Outcome::Ok,
        Err(e) => Outcome::Failed(format!("writing the report: {e}")),
    }
}
