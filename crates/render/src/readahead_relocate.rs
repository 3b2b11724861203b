//! `bootprint readahead relocate`: what relocation (`readahead::relocate`) did or would do,
//! as text (a line per file as it is done, then a summary) or JSON.

use std::io::{self, Write};

use readahead::relocate::{FileReport, Outcome, Report};
use serde_json::{json, Value};

use crate::readahead_status::mb;

fn outcome(o: &Outcome) -> String {
    match o {
        Outcome::Planned => "would move".into(),
        Outcome::Moved { extents_after } => format!("moved, {extents_after} extents now"),
        Outcome::Replaced { extents_after, .. } => format!(
            "moved as a copy that took the running program's name, {extents_after} extents now"
        ),
        Outcome::Skipped(why) => format!("skipped: {why}"),
    }
}

/// One file, the `i`th of `n`: `[  3/120] 0.1 MB in 7 extents: moved, 1 extents now
/// /usr/bin/bash`.
pub fn progress_line(out: &mut impl Write, i: usize, n: usize, f: &FileReport) -> io::Result<()> {
    let w = n.to_string().len();
    writeln!(
        out,
        "[{i:>w$}/{n}] {} in {} extents: {}  {}",
        mb(f.bytes),
        f.extents_before,
        outcome(&f.outcome),
        f.path.display()
    )
}

/// The totals: where, how much, and the requests replay needs before and after.
pub fn summary(out: &mut impl Write, r: &Report) -> io::Result<()> {
    let count = |pred: fn(&Outcome) -> bool| r.files.iter().filter(|f| pred(&f.outcome)).count();
    let replaced = count(|o| matches!(o, Outcome::Replaced { .. }));
    let moved = count(|o| matches!(o, Outcome::Moved { .. })) + replaced;
    let planned = count(|o| matches!(o, Outcome::Planned));
    let skipped = count(|o| matches!(o, Outcome::Skipped(_)));
    writeln!(
        out,
        "{}: {} device {}, requests of {} KiB",
        r.mount.display(),
        r.media.name(),
        r.device,
        r.request_bytes / 1024
    )?;
    if r.dry_run {
        writeln!(
            out,
            "dry run: would move {planned} files ({}) into one region; {skipped} skipped",
            mb(r.region_bytes)
        )?;
        writeln!(
            out,
            "replay's requests: {} now, {} expected after (the region in one run)",
            r.requests_before, r.requests_after
        )
    } else {
        writeln!(
            out,
            "moved {moved} files ({}) into a region of {} run{}; {skipped} skipped{}",
            mb(r.region_bytes),
            r.region_runs,
            if r.region_runs == 1 { "" } else { "s" },
            if replaced > 0 {
                format!("; {replaced} of the moved were running programs, each replaced by its moved copy")
            } else {
                String::new()
            }
        )?;
        writeln!(
            out,
            "the region: the longest runs of {} allocated in {} run{}",
            mb(r.allocated_bytes),
            r.allocated_runs,
            if r.allocated_runs == 1 { "" } else { "s" }
        )?;
        writeln!(
            out,
            "replay's requests: {} before, {} after",
            r.requests_before, r.requests_after
        )
    }
}

/// The report as one JSON object.
pub fn json(r: &Report) -> Value {
    json!({
        "dry_run": r.dry_run,
        "mount": r.mount.display().to_string(),
        "device": r.device,
        "media": r.media.name(),
        "request_bytes": r.request_bytes,
        "region_bytes": r.region_bytes,
        "region_runs": r.region_runs,
        "allocated_bytes": r.allocated_bytes,
        "allocated_runs": r.allocated_runs,
        "requests_before": r.requests_before,
        "requests_after": r.requests_after,
        "files": r.files.iter().map(|f| {
            let (state, extents_after, why, ino) = match &f.outcome {
                Outcome::Planned => ("planned", None, None, None),
                Outcome::Moved { extents_after } => ("moved", Some(*extents_after), None, None),
                Outcome::Replaced { extents_after, ino } => {
                    ("replaced", Some(*extents_after), None, Some(*ino))
                }
                Outcome::Skipped(w) => ("skipped", None, Some(w.clone()), None),
            };
            json!({
                "path": f.path.display().to_string(),
                "bytes": f.bytes,
                "extents_before": f.extents_before,
                "extents_after": extents_after,
                "outcome": state,
                "why": why,
                "new_ino": ino,
            })
        }).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use readahead::relocate::Media;

    fn report(dry_run: bool) -> Report {
        Report {
            dry_run,
            mount: "/".into(),
            device: "sda".into(),
            media: Media::Rotating,
            request_bytes: 1280 * 1024,
            files: vec![
                FileReport {
                    path: "/usr/bin/bash".into(),
                    bytes: 1_400_000,
                    extents_before: 9,
                    outcome: if dry_run {
                        Outcome::Planned
                    } else {
                        Outcome::Moved { extents_after: 1 }
                    },
                },
                FileReport {
                    path: "/etc/gone".into(),
                    bytes: 0,
                    extents_before: 0,
                    outcome: Outcome::Skipped("gone".into()),
                },
            ],
            region_bytes: 1_400_000,
            requests_before: 40,
            requests_after: 2,
            region_runs: 1,
            allocated_bytes: 5_600_000,
            allocated_runs: 3,
        }
    }

    #[test]
    fn lines_and_summary() {
        let r = report(false);
        let mut out = Vec::new();
        for (i, f) in r.files.iter().enumerate() {
            progress_line(&mut out, i + 1, 2, f).unwrap();
        }
        summary(&mut out, &r).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "[1/2] 1.4 MB in 9 extents: moved, 1 extents now  /usr/bin/bash\n\
             [2/2] 0.0 MB in 0 extents: skipped: gone  /etc/gone\n\
             /: rotating device sda, requests of 1280 KiB\n\
             moved 1 files (1.4 MB) into a region of 1 run; 1 skipped\n\
             the region: the longest runs of 5.6 MB allocated in 3 runs\n\
             replay's requests: 40 before, 2 after\n"
        );
        let mut out = Vec::new();
        summary(&mut out, &report(true)).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(t.contains("dry run: would move 1 files (1.4 MB)"), "{t}");
        assert!(t.contains("40 now, 2 expected after"), "{t}");
    }

    #[test]
    fn a_replaced_program_is_counted_as_moved_and_named() {
        let mut r = report(false);
        r.files[0].outcome = Outcome::Replaced {
            extents_after: 1,
            ino: 77,
        };
        let mut out = Vec::new();
        progress_line(&mut out, 1, 2, &r.files[0]).unwrap();
        summary(&mut out, &r).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(
            t.contains("moved as a copy that took the running program's name, 1 extents now"),
            "{t}"
        );
        assert!(
            t.contains("moved 1 files (1.4 MB) into a region of 1 run; 1 skipped; 1 of the moved were running programs"),
            "{t}"
        );
        let v = json(&r);
        assert_eq!(v["files"][0]["outcome"], "replaced");
        assert_eq!(v["files"][0]["new_ino"], 77);
    }

    #[test]
    fn json_names_each_outcome() {
        let v = json(&report(false));
        assert_eq!(v["requests_before"], 40);
        assert_eq!(v["allocated_runs"], 3);
        assert_eq!(v["files"][0]["outcome"], "moved");
        assert_eq!(v["files"][0]["extents_after"], 1);
        assert_eq!(v["files"][1]["why"], "gone");
    }
}
