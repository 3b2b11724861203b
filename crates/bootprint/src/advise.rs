//! `bootprint advise TRACE [--json]`: what to change in a recorded boot, each finding with its
//! evidence, estimated gain and fix (rules: `analyze::advise`, docs/advise.md).

use std::io::Write;

use crate::Outcome;

/// Runs the verb.
pub fn run(args: &crate::cli::Advise) -> Outcome {
    let trace = match trace::Trace::open(&args.trace) {
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
