//! `bootprint export [--prometheus DIR] [--otlp URL|FILE] TRACE`: the boot's figures for
//! node_exporter's textfile collector, written atomically as DIR/bootprint.prom, and its
//! timeline as an OpenTelemetry trace (`crate::otlp`); `export --systemd --prometheus DIR`:
//! the figures of a boot without a trace (`crate::systemd_boot`).

use std::path::Path;

use analyze::summary::Summary;

use crate::output::{budgets, report};
use crate::Outcome;

/// The milestones given a baseline, with their figure in a boot's line.
type Figure = fn(&Summary) -> Option<f64>;
const MILESTONES: [(&str, Figure); 3] = [
    ("text_login", |s| s.text_login_s),
    ("graphical_login", |s| s.graphical_login_s),
    ("boot_done", |s| s.boot_done_s),
];

/// The lines of the boots in TRACE's directory (its machine's kept traces, oldest first, as
/// `bootprint list` reads them) up to TRACE itself; only TRACE's where it is not in such a
/// directory (a copied trace, a bootchart2 archive) or a trace before it cannot be read (it
/// is left out).
fn history(trace: &Path) -> Vec<Summary> {
    let own = || {
        crate::list::boot_summary(trace)
            .map(|(s, _)| s)
            .into_iter()
            .collect()
    };
    let Ok(trace) = std::fs::canonicalize(trace) else {
        return own();
    };
    let Some(dir) = trace.parent() else {
        return own();
    };
    let Ok(scan) = record::retain::scan(dir, &crate::list::this_boot()) else {
        return own();
    };
    let Some(at) = scan.traces.iter().position(|k| k.path == trace) else {
        return own();
    };
    scan.traces[..=at]
        .iter()
        .filter_map(|k| crate::list::boot_summary(&k.path).ok().map(|(s, _)| s))
        .collect()
}

/// Runs the verb.
pub fn run(args: &crate::cli::Export) -> Outcome {
    if args.flush {
        return otlp(args, None).into();
    }
    if args.systemd || args.journal.is_some() {
        return systemd_prometheus(args).into();
    }
    let Some(trace) = args.trace.as_deref() else {
        return Outcome::Failed("export: no TRACE".into());
    };
    let budgets = match budgets(args.config.as_deref()) {
        Ok(b) => b,
        Err(e) => return Outcome::Failed(e),
    };
    if let Some(dir) = &args.prometheus {
        if !dir.is_dir() {
            return Outcome::Failed(format!("{}: not a directory", dir.display()));
        }
    }
    let r = match report(trace, &budgets, "export") {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e),
    };
    if let Some(dir) = &args.prometheus {
        if let Err(e) = prometheus(dir, trace, &r) {
            return Outcome::Failed(e);
        }
    }
    if args.otlp.is_some() {
        return otlp(args, Some((trace, &r))).into();
    }
    Outcome::Ok
}

/// `--systemd` or `--journal`: a boot without a trace to DIR/bootprint.prom
/// (`render::prometheus::systemd`).
fn systemd_prometheus(args: &crate::cli::Export) -> Result<(), String> {
    let dir = args
        .prometheus
        .as_deref()
        .expect("clap: --systemd and --journal require --prometheus");
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    let journal_dir = args.journal_dir.as_deref();
    let boot = crate::systemd_boot::read(args.journal.as_deref(), journal_dir)
        .map_err(|e| format!("export --systemd: {e}"))?;
    let header = record::sysinfo::this_machine();
    let get = |k: &str| {
        header
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    // The running kernel is the boot's only when the boot is the running one.
    let running = boot.source == "systemd";
    let info = render::prometheus::Info {
        version: env!("CARGO_PKG_VERSION").to_string(),
        kernel_release: if running {
            get("bootprint.kernel_release")
        } else {
            String::new()
        },
        os: get("system.release"),
        vendor: get("bootprint.dmi_vendor"),
        product: get("bootprint.dmi_product"),
    };
    let b = render::prometheus::SystemdBoot {
        info,
        stages: boot.stages.seconds(),
        text_login_s: boot.text_login_s,
        services: boot.view().start_times(),
        baseline: crate::systemd_boot::baseline(&boot, journal_dir),
    };
    let path = dir.join(render::prometheus::FILE_NAME);
    sys::write_atomic(&path, render::prometheus::systemd(&b).as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn prometheus(dir: &Path, trace: &Path, r: &analyze::report::Report) -> Result<(), String> {
    let history = history(trace);
    let baselines: Vec<(&str, analyze::baseline::Baseline)> = MILESTONES
        .iter()
        .filter_map(|(name, figure)| {
            let values: Vec<Option<f64>> = history.iter().map(figure).collect();
            analyze::baseline::of(&values).map(|b| (*name, b))
        })
        .collect();
    let options: Vec<&str> = r
        .model
        .system
        .kernel_options
        .as_deref()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    // Every lever with a parameter of its own (the initramfs lever has none).
    let levers_on = enablement::manifest::Lever::ALL
        .into_iter()
        .filter_map(|l| Some((l.word(), options.contains(&l.param()?.as_str()))))
        .collect();
    let machine = render::prometheus::Machine {
        levers_on,
        baselines,
    };
    let path = dir.join(render::prometheus::FILE_NAME);
    sys::write_atomic(
        &path,
        render::prometheus::report_with(r, &machine).as_bytes(),
    )
    .map_err(|e| format!("{}: {e}", path.display()))
}

/// When the kernel started, Unix nanoseconds: the trace's `bootprint.boot_unix_s`; for a
/// trace without it (older, bootchart2), its header's modification time less the last sample
/// (the header is written as recording begins, so this errs late by the recorder's start).
fn boot_unix_ns(trace: &Path, r: &analyze::report::Report) -> u64 {
    if let Some(s) = r.model.system.boot_unix_s {
        return s.saturating_mul(1_000_000_000);
    }
    let written = std::fs::metadata(trace.join("header"))
        .or_else(|_| std::fs::metadata(trace))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    written.saturating_sub((r.model.last_sample_s.max(0.0) * 1e9) as u64)
}

/// Sends (or writes) the boot's OTLP trace; `None`: only what the queue holds.
fn otlp(
    args: &crate::cli::Export,
    boot: Option<(&Path, &analyze::report::Report)>,
) -> Result<(), String> {
    let target = args.otlp.as_deref().unwrap_or_default();
    let request = boot.map(|(trace, r)| {
        let body = render::otlp::request(r, boot_unix_ns(trace, r), env!("CARGO_PKG_VERSION"));
        let id = render::otlp::hex(&render::otlp::trace_id(r));
        (id, body.to_string())
    });
    if !crate::otlp::is_url(target) {
        let Some((_, body)) = request else {
            return Err(format!(
                "--flush: {target:?} is not an http:// or https:// URL"
            ));
        };
        let path = Path::new(target);
        return sys::write_atomic_mode(path, format!("{body}\n").as_bytes(), 0o600)
            .map_err(|e| format!("{}: {e}", path.display()));
    }
    let mut headers = Vec::new();
    for h in &args.otlp_headers {
        headers.push(crate::otlp::parse_header(h)?);
    }
    if let Some(f) = &args.otlp_headers_file {
        headers.extend(crate::otlp::headers_file(f)?);
    }
    let endpoint = crate::otlp::Endpoint {
        url: target.to_string(),
        headers,
        ca: args.otlp_ca.clone(),
        tries: args.otlp_tries,
        timeout: std::time::Duration::from_secs(10),
    };
    let queue = &args.otlp_queue;
    let mut dropped = 0;
    if let Some((id, body)) = &request {
        dropped = crate::otlp::enqueue(queue, id, body.as_bytes(), args.otlp_queue_max)?;
    }
    let f = crate::otlp::flush(queue, &endpoint)?;
    println!(
        "otlp: {} sent, {} refused, {} queued in {}, {} dropped (over {})",
        f.sent,
        f.refused,
        f.queued,
        queue.display(),
        dropped,
        args.otlp_queue_max
    );
    match f.error {
        Some(e) => Err(format!("otlp: not sent, kept for the next export: {e}")),
        None => Ok(()),
    }
}
