//! The findings of `analyze::advise` (`bootprint advise`) as text and JSON (their serde form).

use std::io::{self, Write};

use analyze::advise::Finding;
use analyze::report::Report;

/// The report's findings for people ([`write_text`]).
pub fn report(out: &mut impl Write, r: &Report) -> io::Result<()> {
    write_text(out, &r.origin, &r.findings)
}

/// The report's findings as JSON: `{"trace": ..., "findings": [...]}`.
pub fn json(r: &Report) -> serde_json::Value {
    serde_json::json!({"trace": r.origin, "findings": r.findings})
}

/// Writes the findings for people: title, gain, evidence lines, fix.
pub fn write_text(out: &mut impl Write, origin: &str, findings: &[Finding]) -> io::Result<()> {
    writeln!(out, "bootprint advise: {origin}")?;
    if findings.is_empty() {
        return writeln!(out, "No findings: no rule found evidence of a known cost.");
    }
    let total: f64 = findings.iter().filter_map(|f| f.gain_s).sum();
    writeln!(
        out,
        "{} findings, estimated gains summing to {total:.2} s (they can overlap)",
        findings.len()
    )?;
    for (n, f) in findings.iter().enumerate() {
        writeln!(out)?;
        let gain = f.gain_s.map_or("gain not estimated".to_string(), |g| {
            format!("gain ~{g:.2} s")
        });
        writeln!(out, "{}. [{}] {} ({gain})", n + 1, f.id, f.title)?;
        for e in &f.evidence {
            let pid = e.pid.map_or(String::new(), |p| format!("pid {p} "));
            if e.samples > 0 || e.to_s > e.from_s {
                writeln!(
                    out,
                    "   evidence: {pid}{} {:.2}-{:.2} s, {} samples: {}",
                    e.what, e.from_s, e.to_s, e.samples, e.detail
                )?;
            } else {
                writeln!(out, "   evidence: {}: {}", e.what, e.detail)?;
            }
        }
        writeln!(out, "   gain basis: {}", f.gain_basis)?;
        writeln!(out, "   fix: {}", f.fix)?;
    }
    Ok(())
}
