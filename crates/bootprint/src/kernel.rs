//! `bootprint kernel TRACE|DMESG [--json] [--svg FILE]`: the kernel's share of the boot, from
//! a trace's `dmesg` file or any kernel log: phases, initcalls by thread, findings.

use std::io::Write;

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
