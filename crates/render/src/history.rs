//! `bootprint list` and `bootprint prune`: the kept traces of a log directory, newest first
//! (id, when written, kernel, the three milestones, size, pinned and latest), and what a prune
//! removed or would remove, as text and JSON.

use std::io::{self, Write};
use std::path::Path;

use analyze::summary::Summary;
use record::retain::{Kept, Removal};
use serde_json::{json, Value};

use crate::utc::minutes as utc;

/// One kept trace with its line of figures (or why there is none).
#[derive(Debug, Clone)]
pub struct Row {
    /// The trace as the log directory has it.
    pub kept: Kept,
    /// Its figures, or what went wrong reading it.
    pub summary: Result<Summary, String>,
}

/// Characters of the boot id shown in the text table (as `git log --oneline`'s short ids).
const SHORT_ID: usize = 8;

fn unix(k: &Kept) -> Option<i64> {
    let t = k.written?;
    Some(match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    })
}

fn secs(t: Option<f64>) -> String {
    t.map_or("-".into(), |t| format!("{t:.1} s"))
}

fn size(bytes: u64) -> String {
    if bytes >= 10 << 20 {
        format!("{:.0} MiB", bytes as f64 / 1048576.0)
    } else if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / 1048576.0)
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

/// The table, newest first (`rows` as `retain::scan` gives them: oldest first).
pub fn text(out: &mut impl Write, dir: &Path, rows: &[Row]) -> io::Result<()> {
    if rows.is_empty() {
        return writeln!(out, "no traces in {}", dir.display());
    }
    let mut table = vec![[
        "ID".to_string(),
        "WRITTEN (UTC)".into(),
        "KERNEL".into(),
        "TEXT LOGIN".into(),
        "GRAPHICAL".into(),
        "BOOT DONE".into(),
        "DESKTOP".into(),
        "SHUTDOWN".into(),
        "REBOOT".into(),
        "SIZE".into(),
        String::new(),
    ]];
    for r in rows.iter().rev() {
        let k = &r.kept;
        let (release, text_login, graphical, done, desktop, shutdown, reboot) = match &r.summary {
            Ok(s) => (
                s.kernel_release.clone().unwrap_or("-".into()),
                secs(s.text_login_s),
                secs(s.graphical_login_s),
                secs(s.boot_done_s),
                secs(s.desktop_ready_s),
                secs(s.shutdown_s),
                secs(s.reboot_s),
            ),
            Err(_) => {
                let q = || "?".to_string();
                (q(), q(), q(), q(), q(), q(), q())
            }
        };
        let mut marks: Vec<String> = Vec::new();
        if k.latest {
            marks.push("latest".into());
        }
        if k.pinned {
            marks.push("pinned".into());
        }
        if let Err(e) = &r.summary {
            marks.push(format!("unreadable: {e}"));
        }
        table.push([
            k.name.chars().take(SHORT_ID).collect(),
            unix(k).map_or("-".into(), utc),
            release,
            text_login,
            graphical,
            done,
            desktop,
            shutdown,
            reboot,
            size(k.bytes),
            marks.join(", "),
        ]);
    }
    let widths: Vec<usize> = (0..11)
        .map(|c| {
            table
                .iter()
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &table {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            // Text left, figures right.
            if (3..=9).contains(&c) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
            line.push_str("  ");
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    let total: u64 = rows.iter().map(|r| r.kept.bytes).sum();
    writeln!(
        out,
        "{} traces, {} in {} (times: seconds since the kernel started; SHUTDOWN: the \
         shutdown that ended the boot, its request to its trace's save; REBOOT: the reboot \
         that led to the boot, its request to this login)",
        rows.len(),
        size(total),
        dir.display()
    )
}

/// The same as one JSON object `{dir, traces: [...]}`, newest first.
pub fn json(dir: &Path, rows: &[Row]) -> Value {
    let traces: Vec<Value> = rows
        .iter()
        .rev()
        .map(|r| {
            let k = &r.kept;
            let mut v = json!({
                "id": k.name,
                "seq": k.seq,
                "written": unix(k).map(|s| format!("{}Z", utc(s).replace(' ', "T"))),
                "written_unix": unix(k),
                "bytes": k.bytes,
                "pinned": k.pinned,
                "latest": k.latest,
            });
            match &r.summary {
                Ok(s) => {
                    v["kernel_release"] = json!(s.kernel_release);
                    v["text_login_s"] = json!(s.text_login_s);
                    v["graphical_login_s"] = json!(s.graphical_login_s);
                    v["boot_done_s"] = json!(s.boot_done_s);
                    v["boot_done_reason"] = json!(s.boot_done_reason);
                    v["session_start_s"] = json!(s.session_start_s);
                    v["desktop_ready_s"] = json!(s.desktop_ready_s);
                    v["desktop_start_s"] = json!(s.desktop_start_s());
                    v["shutdown_s"] = json!(s.shutdown_s);
                    v["reboot_s"] = json!(s.reboot_s);
                    v["figures_from"] = json!(s.source);
                }
                Err(e) => v["error"] = json!(e),
            }
            v
        })
        .collect();
    json!({ "dir": dir.display().to_string(), "traces": traces })
}

/// What a prune removed (or, `dry_run`, would remove), one line each, and the failures.
pub fn prune(
    out: &mut impl Write,
    dir: &Path,
    removals: &[Removal],
    failed: &[(std::path::PathBuf, io::Error)],
    dry_run: bool,
) -> io::Result<()> {
    let verb = if dry_run { "would remove" } else { "removed" };
    for r in removals {
        let name = r.path.file_name().unwrap_or_default().to_string_lossy();
        match failed.iter().find(|(p, _)| *p == r.path) {
            Some((_, e)) => writeln!(out, "cannot remove {name}: {e}")?,
            None => writeln!(out, "{verb} {name} ({}, {})", r.why.word(), size(r.bytes))?,
        }
    }
    let freed: u64 = removals
        .iter()
        .filter(|r| !failed.iter().any(|(p, _)| *p == r.path))
        .map(|r| r.bytes)
        .sum();
    writeln!(
        out,
        "{}: {verb} {} of {}, {}",
        dir.display(),
        removals.len() - failed.len(),
        removals.len(),
        size(freed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::{Duration, UNIX_EPOCH};

    fn kept(name: &str, secs: u64, latest: bool, pinned: bool) -> Kept {
        Kept {
            name: name.into(),
            path: PathBuf::from("/l").join(name),
            bytes: 300 * 1024,
            seq: Some(secs),
            written: Some(UNIX_EPOCH + Duration::from_secs(secs)),
            pinned,
            latest,
        }
    }

    #[test]
    fn dates_are_utc_civil_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00");
        assert_eq!(utc(1_795_702_680), "2026-11-26 14:18");
        assert_eq!(utc(-60), "1969-12-31 23:59");
    }

    #[test]
    fn newest_first_with_markers_and_errors() {
        let summary = Summary {
            kernel_release: Some("6.1.0-27-amd64".into()),
            text_login_s: Some(12.04),
            graphical_login_s: None,
            boot_done_s: Some(14.0),
            boot_done_reason: Some("idle".into()),
            session_start_s: Some(20.0),
            desktop_ready_s: Some(26.5),
            shutdown_s: Some(4.25),
            reboot_s: Some(41.5),
            source: "events",
        };
        let rows = vec![
            Row {
                kept: kept("0123456789abcdef", 60, false, true),
                summary: Ok(summary.clone()),
            },
            Row {
                kept: kept("fedcba9876543210", 1_795_702_680, true, false),
                summary: Err("events.log:3: bad line".into()),
            },
        ];
        let mut out = Vec::new();
        text(&mut out, Path::new("/l"), &rows).unwrap();
        let t = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("ID        WRITTEN (UTC)"), "{t}");
        assert!(lines[1].starts_with("fedcba98  2026-11-26 14:18  ?"), "{t}");
        assert!(
            lines[1].ends_with("latest, unreadable: events.log:3: bad line"),
            "{t}"
        );
        assert!(
            lines[2].starts_with("01234567  1970-01-01 00:01  6.1.0-27-amd64"),
            "{t}"
        );
        assert!(
            lines[2].contains("12.0 s")
                && lines[2].contains("14.0 s   26.5 s     4.2 s  41.5 s")
                && lines[2].ends_with("300 KiB  pinned"),
            "{t}"
        );
        assert!(
            lines[3]
                .starts_with("2 traces, 600 KiB in /l (times: seconds since the kernel started;"),
            "{t}"
        );
        let j = json(Path::new("/l"), &rows);
        assert_eq!(j["traces"][0]["id"], "fedcba9876543210");
        assert_eq!(j["traces"][0]["written"], "2026-11-26T14:18Z");
        assert_eq!(j["traces"][0]["error"], "events.log:3: bad line");
        assert_eq!(j["traces"][1]["text_login_s"], 12.04);
        assert_eq!(j["traces"][1]["pinned"], true);
        assert_eq!(j["traces"][1]["desktop_ready_s"], 26.5);
        assert_eq!(j["traces"][1]["desktop_start_s"], 6.5);
        assert_eq!(j["traces"][1]["shutdown_s"], 4.25);
        assert_eq!(j["traces"][1]["reboot_s"], 41.5);
        let mut out = Vec::new();
        text(&mut out, Path::new("/l"), &[]).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "no traces in /l\n");
    }
}
