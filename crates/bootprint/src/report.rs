//! `bootprint report TRACE [--json] [--svg FILE] [--config FILE] [--html FILE] [--perfetto
//! FILE]`: the boot analysed once (`analyze::Report`, judged against the phase budgets),
//! rendered as text or JSON, and optionally as an SVG chart, an HTML page, Perfetto JSON;
//! or, with `--systemd`, the running boot as systemd's manager timed it (no trace).

use std::io::Write as _;

use crate::output::{budgets, print, report, write_file, write_json};
use crate::Outcome;

/// Runs the verb.
pub fn run(args: &crate::cli::Report) -> Outcome {
    let Some(trace) = args.trace.as_deref().filter(|_| !args.systemd) else {
        return running_systemd(args.json);
    };
    let r = match budgets(args.config.as_deref()).and_then(|b| report(trace, &b, "report")) {
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

/// `--systemd`: asks the running manager (`systemctl`, as the recorder does at boot done)
/// for its stages and every unit, read as a trace's `systemd-units.log` would be.
fn running_systemd(json: bool) -> Outcome {
    let systemctl = std::path::Path::new("systemctl");
    let limit = systemd::learn::QUERY_LIMIT;
    let stages = match systemd::learn::stages(systemctl, limit) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(format!("report --systemd: {e} (is systemd the init?)")),
    };
    let graph = match systemd::learn::query(systemctl, limit) {
        Ok(g) => g,
        Err(e) => return Outcome::Failed(format!("report --systemd: {e}")),
    };
    // CLOCK_BOOTTIME less CLOCK_MONOTONIC, read back to back: the trace's time base.
    let offset = sys::boottime_ns().saturating_sub(sys::monotonic_ns());
    let units = systemd::learn::units_log(Ok(&graph), offset);
    let view = analyze::services::ServicesView::from_units(&units);
    let secs = stages.seconds();
    print("the report", |out| {
        if json {
            let stages: serde_json::Map<String, serde_json::Value> = secs
                .iter()
                .map(|(k, v)| (format!("{k}_s"), serde_json::json!(v)))
                .collect();
            write_json(
                out,
                &serde_json::json!({
                    "source": "systemd",
                    "stages": stages,
                    "services": render::services::json(&view),
                }),
            )
        } else {
            writeln!(out, "The running boot as systemd timed it (no trace):")?;
            for (k, v) in &secs {
                match v {
                    Some(v) => writeln!(out, "  {k:<10} {v:>8.3} s")?,
                    None => writeln!(out, "  {k:<10} {:>8}", "-")?,
                }
            }
            writeln!(out)?;
            write!(out, "{}", render::services::text(&view))
        }
    })
}
