//! `bootprint advise TRACE [--json]`: what to change in a recorded boot, each finding with its
//! evidence, estimated gain and fix (rules: `analyze::advise`, docs/advise.md).

use std::io::Write;

use crate::Outcome;

const HELP: &str = "\
usage: bootprint advise TRACE [--json]

Findings from a recorded boot, largest estimated gain first: network waits before the login,
storms of one program, sleeps and udev settle waits, services that could start after the
login, CPU-and-disk idle gaps, disk-bound stretches readahead would cover, and the kernel's
own findings (from the trace's dmesg). Each finding names its evidence (process, pid, time
span, samples), the estimated gain and how it was estimated, and the fix.

TRACE       a bootprint trace directory or a bootchart2 bootchart.tgz
--json      print one JSON object {trace, findings: [...]} (keys: docs/advise.md)
-h, --help  this help
";

/// Runs the verb.
pub fn run(args: &[std::ffi::OsString]) -> Outcome {
    let args =
        match crate::args::parse_input(args, "TRACE", "a TRACE (directory or .tgz) is required") {
            Ok(Some(a)) if a.svg.is_none() => a,
            Ok(Some(_)) => {
                return Outcome::Usage("advise: --svg is not an option of advise".into())
            }
            Ok(None) => {
                print!("{HELP}");
                return Outcome::Ok;
            }
            Err(e) => return Outcome::Usage(format!("advise: {e}")),
        };
    let trace = match trace::Trace::open(&args.input) {
        Ok(t) => t,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let model = match analyze::analyze(&trace) {
        Ok(m) => m,
        Err(e) => return Outcome::Failed(format!("{}: {e}", trace.origin)),
    };
    let kernel = crate::report::kernel_of(&trace);
    let findings = analyze::advise::advise(&model, kernel.as_ref());
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = if args.json {
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({"trace": trace.origin, "findings": findings}),
        )
        .map_err(std::io::Error::from)
        .and_then(|_| writeln!(out))
    } else {
        render::advice::write_text(&mut out, &trace.origin, &findings)
    };
    match written.and_then(|_| out.flush()) {
        Ok(()) => Outcome::Ok,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Outcome::Ok,
        Err(e) => Outcome::Failed(format!("writing the advice: {e}")),
    }
}
