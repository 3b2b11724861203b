//! `bootprint report TRACE [--json] [--svg FILE] [--config FILE] [--html FILE] [--perfetto
//! FILE]`: the boot analysed once (`analyze::Report`, judged against the phase budgets),
//! rendered as text or JSON, and optionally as an SVG chart, an HTML page, Perfetto JSON.

use crate::output::{budgets, print, report, write_file, write_json};
use crate::Outcome;

/// Runs the verb.
pub fn run(args: &crate::cli::Report) -> Outcome {
    let r = match budgets(args.config.as_deref()).and_then(|b| report(&args.trace, &b, "report")) {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e),
    };
    let files = [
        (&args.svg, render::svg::report as Renderer),
        (&args.perfetto, render::perfetto::report),
        (&args.html, render::html::report),
    ];
    for (path, render) in files {
        if let Some(path) = path {
            if let Err(e) = write_file(path, |w| render(w, &r)) {
                return Outcome::Failed(e);
            }
        }
    }
    print("the report", |out| {
        if args.json {
            write_json(out, &render::json::report(&r))
        } else {
            render::text::report(out, &r)
        }
    })
}

type Renderer = fn(&mut std::io::BufWriter<std::fs::File>, &analyze::Report) -> std::io::Result<()>;
