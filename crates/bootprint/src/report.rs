//! `bootprint report TRACE [--json] [--svg FILE]`: read a trace, build the boot model once,
//! render it as text or JSON, and optionally as an SVG chart.

use std::io::Write;

use crate::Outcome;

const HELP: &str = "\
usage: bootprint report TRACE [--json] [--svg FILE]

Shows where the time of a recorded boot went: kernel, init, login and boot-done times,
idle and iowait fractions, and the processes that used the most CPU or waited most on I/O.

TRACE       a bootprint trace directory (e.g. /var/log/bootprint/latest) or a bootchart2
            bootchart.tgz
--json      print one JSON object instead of the text report (keys: docs/report.md)
--svg FILE  also write a bootchart-style SVG chart to FILE
-h, --help  this help
";

/// Runs the verb.
pub fn run(args: &[String]) -> Outcome {
    let args =
        match crate::args::parse_input(args, "TRACE", "a TRACE (directory or .tgz) is required") {
            Ok(Some(a)) => a,
            Ok(None) => {
                print!("{HELP}");
                return Outcome::Ok;
            }
            Err(e) => return Outcome::Usage(format!("report: {e}")),
        };
    let trace = match trace::Trace::open(&args.input) {
        Ok(t) => t,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let model = match analyze::analyze(&trace) {
        Ok(m) => m,
        Err(e) => return Outcome::Failed(format!("{}: {e}", trace.origin)),
    };
    if let Some(path) = &args.svg {
        let data = render::chart::ChartData::from_model(&model);
        let written = std::fs::File::create(path).and_then(|f| {
            let mut w = std::io::BufWriter::new(f);
            render::svg::render_svg(&data, &mut w)?;
            w.flush()
        });
        if let Err(e) = written {
            return Outcome::Failed(format!("{}: {e}", path.display()));
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = if args.json {
        render::json::write(&model, &trace.origin, &mut out)
    } else {
        render::text::write(&model, &trace.origin, &mut out)
    };
    match written.and_then(|_| out.flush()) {
        Ok(()) => Outcome::Ok,
        // A closed pipe (`| head`) is not a failure worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Outcome::Ok,
        Err(e) => Outcome::Failed(format!("writing the report: {e}")),
    }
}
