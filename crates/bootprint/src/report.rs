//! `bootprint report TRACE [--json] [--svg FILE] [--config FILE] [--html FILE] [--perfetto
//! FILE]`: the boot analysed once (`analyze::Report`, judged against the phase budgets),
//! rendered as text or JSON, and optionally as an SVG chart, an HTML page, Perfetto JSON;
//! or, with `--systemd`, a boot as systemd timed it, without a trace: the running one, or
//! with `--journal BOOT` one the journal holds.

use std::io::Write as _;

use crate::output::{budgets, print, report, write_file, write_json};
use crate::Outcome;

/// Runs the verb.
pub fn run(args: &crate::cli::Report) -> Outcome {
    let Some(trace) = args
        .trace
        .as_deref()
        .filter(|_| !args.systemd && args.journal.is_none())
    else {
        return systemd_boot(args);
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

/// `--systemd`: the running boot as its manager timed it (`systemctl`, as the recorder asks
/// at boot done), or with `--journal BOOT` an earlier one from the journal; with its text
/// login against the journal's boots before it.
fn systemd_boot(args: &crate::cli::Report) -> Outcome {
    let dir = args.journal_dir.as_deref();
    let boot = match crate::systemd_boot::read(args.journal.as_deref(), dir) {
        Ok(b) => b,
        Err(e) => return Outcome::Failed(format!("report --systemd: {e}")),
    };
    let baseline = crate::systemd_boot::baseline(&boot, dir);
    let view = boot.view();
    let secs = boot.stages.seconds();
    print("the report", |out| {
        if args.json {
            let stages: serde_json::Map<String, serde_json::Value> = secs
                .iter()
                .map(|(k, v)| (format!("{k}_s"), serde_json::json!(v)))
                .collect();
            write_json(
                out,
                &serde_json::json!({
                    "source": boot.source,
                    "boot_id": boot.boot_id,
                    "stages": stages,
                    "text_login_s": boot.text_login_s,
                    "baseline": baseline,
                    "services": render::services::json(&view),
                }),
            )
        } else {
            match boot.source {
                "journal" => writeln!(
                    out,
                    "Boot {} as the journal recorded it (no trace):",
                    boot.boot_id
                )?,
                _ => writeln!(out, "The running boot as systemd timed it (no trace):")?,
            }
            for (k, v) in &secs {
                match v {
                    Some(v) => writeln!(out, "  {k:<10} {v:>8.3} s")?,
                    None => writeln!(out, "  {k:<10} {:>8}", "-")?,
                }
            }
            if let Some(t) = boot.text_login_s {
                write!(out, "  text login {t:>8.3} s")?;
                match &baseline {
                    Some(b) => writeln!(
                        out,
                        " (the median of the {} boots before it in the journal: {:.3} s{})",
                        b.boots,
                        b.baseline_s,
                        match b.over_boots {
                            0 => String::new(),
                            n => format!(
                                "; over it by more than {}x for {n} boots in a row",
                                analyze::baseline::REGRESSION_RATIO
                            ),
                        }
                    )?,
                    None => writeln!(out)?,
                }
            }
            writeln!(out)?;
            write!(out, "{}", render::services::text(&view))
        }
    })
}
