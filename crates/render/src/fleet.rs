//! `bootprint fleet`: many machines' boots (`analyze::fleet`) as text or JSON, and one
//! boot's record as the line `bootprint fleet --export` writes (docs/fleet.md).

use std::io::{self, Write};

use analyze::fleet::{BootRecord, FleetView, Moved, Shift};
use serde_json::{json, Map, Value};

/// One input left out: its path (with `:LINE` for a line of a records file) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The file or directory (and line).
    pub path: String,
    /// What was wrong and what was expected.
    pub problem: String,
}

/// A boot's record as one line of JSON (no newline): `boot_id`, `seq`, `kernel_release`,
/// `vendor`, `product`, `text_login_s`, `boot_done_s`, `services` {name: seconds}.
pub fn record_line(r: &BootRecord) -> String {
    let services: Map<String, Value> = r
        .services
        .iter()
        .map(|(n, t)| (n.clone(), json!(ms(*t))))
        .collect();
    json!({
        "boot_id": r.boot_id,
        "seq": r.seq,
        "kernel_release": r.kernel_release,
        "vendor": r.vendor,
        "product": r.product,
        "text_login_s": r.text_login_s.map(ms),
        "boot_done_s": r.boot_done_s.map(ms),
        "services": services,
    })
    .to_string()
}

/// Seconds kept to the millisecond, as the Prometheus export does.
fn ms(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The view as one JSON object: `boots`, `machines` (each with its baselines, `regressed` and
/// `moved`), `by_kernel_release`, `by_model`, `between_releases`, `between_halves`, and
/// `skipped` [{path, problem}].
pub fn json(view: &FleetView, skipped: &[Skipped]) -> Value {
    let mut v = serde_json::to_value(view).unwrap_or(Value::Null);
    v["regressed"] = json!(view.machines.iter().filter(|m| m.regressed).count());
    v["skipped"] = skipped
        .iter()
        .map(|s| json!({"path": s.path, "problem": s.problem}))
        .collect();
    v
}

fn secs(x: Option<f64>) -> String {
    x.map_or("-".to_string(), |x| format!("{x:.2}"))
}

fn moved_text(m: &[Moved]) -> String {
    m.iter()
        .map(|m| {
            format!(
                "{} +{:.2} s ({:.2} -> {:.2})",
                m.service, m.grew_s, m.before_s, m.after_s
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn shift(out: &mut impl Write, s: &Shift) -> io::Result<()> {
    let moved = if s.moved.is_empty() {
        "no service grew".to_string()
    } else {
        moved_text(&s.moved)
    };
    writeln!(
        out,
        "  {} ({} boots) -> {} ({} boots): {moved}",
        s.from, s.boots_from, s.to, s.boots_to
    )
}

/// The view as text: the counts, the regressed machines with the services that moved, every
/// machine's newest boot against its baseline, the quantiles, the fleet-wide shifts, and the
/// inputs left out.
pub fn text(out: &mut impl Write, view: &FleetView, skipped: &[Skipped]) -> io::Result<()> {
    let regressed: Vec<_> = view.machines.iter().filter(|m| m.regressed).collect();
    writeln!(
        out,
        "{} machines, {} boots, {} regressed, {} inputs skipped",
        view.machines.len(),
        view.boots,
        regressed.len(),
        skipped.len()
    )?;
    if !regressed.is_empty() {
        writeln!(out, "\nRegressed (services that grew most on them):")?;
        for m in &regressed {
            writeln!(out, "  {}: {}", m.machine, moved_text(&m.moved))?;
        }
    }
    writeln!(
        out,
        "\n{:<24} {:>5} {:>8} {:>8} {:>4} {:>8} {:>8} {:>4}  kernel, model",
        "machine", "boots", "login s", "base s", "over", "done s", "base s", "over"
    )?;
    for m in &view.machines {
        let b = |b: &Option<analyze::baseline::Baseline>| match b {
            Some(b) => (format!("{:.2}", b.baseline_s), b.over_boots.to_string()),
            None => ("-".to_string(), "-".to_string()),
        };
        let (lb, lo) = b(&m.text_login_baseline);
        let (db, dov) = b(&m.boot_done_baseline);
        writeln!(
            out,
            "{:<24} {:>5} {:>8} {:>8} {:>4} {:>8} {:>8} {:>4}  {}, {}{}",
            m.machine,
            m.boots,
            secs(m.text_login_s),
            lb,
            lo,
            secs(m.boot_done_s),
            db,
            dov,
            m.kernel_release.as_deref().unwrap_or("-"),
            m.model.as_deref().unwrap_or("-"),
            if m.regressed { "  REGRESSED" } else { "" }
        )?;
    }
    for (title, groups) in [
        ("kernel release", &view.by_kernel_release),
        ("model", &view.by_model),
    ] {
        writeln!(
            out,
            "\nText login of each machine's newest boot by {title}:"
        )?;
        for g in groups {
            writeln!(
                out,
                "  {:<40} {:>5} machines  p50 {:>7.2} s  p95 {:>7.2} s",
                g.key, g.machines, g.p50_s, g.p95_s
            )?;
        }
    }
    if !view.between_releases.is_empty() || view.between_halves.is_some() {
        writeln!(out, "\nServices that grew most (mean start time):")?;
        for s in view.between_releases.iter().chain(&view.between_halves) {
            shift(out, s)?;
        }
    }
    if !skipped.is_empty() {
        writeln!(out, "\nSkipped:")?;
        for s in skipped {
            writeln!(out, "  {}: {}", s.path, s.problem)?;
        }
    }
    Ok(())
}
