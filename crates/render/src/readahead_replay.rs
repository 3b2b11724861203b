//! `bootprint readahead replay`: what a replay run by hand read and how fast, as text or
//! JSON (the statistics the boot's `readahead_replay` event carries, docs/trace-format.md).

use std::io::{self, Write};
use std::path::Path;

use readahead::replay::ReplayStats;
use serde_json::{json, Map, Value};

use crate::readahead_status::mb;

/// Seconds until what was asked was in the page cache (until the last call returned when
/// that was not waited for).
pub fn seconds(s: &ReplayStats) -> f64 {
    let ns = if s.settled_ns > 0 {
        s.settled_ns
    } else {
        s.duration_ns
    };
    ns as f64 / 1e9
}

/// The pack's bytes per second over [`seconds`] (the figure `bench readahead` calls
/// `replay_mb_s`); `None` for an empty replay.
pub fn bytes_per_second(s: &ReplayStats) -> Option<f64> {
    let t = seconds(s);
    (t > 0.0 && s.bytes_requested > 0).then(|| s.bytes_requested as f64 / t)
}

/// The summary: what was read, in how many requests, and how fast.
pub fn text(out: &mut impl Write, pack: &Path, s: &ReplayStats) -> io::Result<()> {
    writeln!(
        out,
        "{}: {} files, {} in {} requests of up to {} KiB ({} ranges; {} more read in the gaps \
         merged across), {} thread{}",
        pack.display(),
        s.files_read,
        mb(s.bytes_requested),
        s.requests,
        s.request_bytes / 1024,
        s.ranges,
        mb(s.gap_bytes),
        s.threads,
        if s.threads == 1 { "" } else { "s" }
    )?;
    if s.metadata_bytes > 0 {
        writeln!(
            out,
            "metadata first: {} in {} reads ({} with the gaps)",
            mb(s.metadata_bytes),
            s.metadata_requests,
            mb(s.metadata_read_bytes)
        )?;
    }
    let rate = bytes_per_second(s).map_or("-".into(), |b| format!("{:.1} MB/s", b / 1e6));
    writeln!(
        out,
        "{} after {:.2} s: {rate}; {} of it in the page cache{}",
        if s.settled_ns > 0 {
            "in the page cache"
        } else {
            "asked"
        },
        seconds(s),
        mb(s.resident),
        match (s.timed_out, s.capped) {
            (true, _) => "; stopped at the time limit",
            (false, true) => "; stopped at the byte cap",
            _ => "",
        }
    )?;
    if s.files_skipped > 0 || s.files_not_reached > 0 {
        writeln!(
            out,
            "skipped {} files (missing {}, not regular {}, changed {}, failed {}); {} not reached",
            s.files_skipped,
            s.skipped_missing,
            s.skipped_not_regular,
            s.skipped_changed,
            s.skipped_error,
            s.files_not_reached
        )?;
    }
    Ok(())
}

/// One object: `pack`, `seconds`, `mb_s` and every field of the boot's `readahead_replay`
/// event, as numbers.
pub fn json(pack: &Path, s: &ReplayStats) -> Value {
    let mut m = Map::new();
    m.insert("pack".into(), json!(pack.display().to_string()));
    m.insert("seconds".into(), json!(seconds(s)));
    m.insert("mb_s".into(), json!(bytes_per_second(s).map(|b| b / 1e6)));
    for (k, v) in s.fields() {
        let n: u64 = v.parse().unwrap_or_default();
        m.insert(k.into(), json!(n));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats() -> ReplayStats {
        ReplayStats {
            bytes_requested: 45_000_000,
            ranges: 800,
            files_read: 700,
            requests: 103,
            request_bytes: 1 << 20,
            gap_bytes: 1_200_000,
            threads: 1,
            duration_ns: 1_000_000_000,
            settled_ns: 3_000_000_000,
            resident: 44_900_000,
            ..ReplayStats::default()
        }
    }

    #[test]
    fn the_rate_is_over_the_time_until_settled() {
        let s = stats();
        assert_eq!(seconds(&s), 3.0);
        assert_eq!(bytes_per_second(&s), Some(15e6));
        let unsettled = ReplayStats {
            settled_ns: 0,
            ..stats()
        };
        assert_eq!(bytes_per_second(&unsettled), Some(45e6));
        assert_eq!(bytes_per_second(&ReplayStats::default()), None);
    }

    #[test]
    fn text_and_json() {
        let mut out = Vec::new();
        text(&mut out, Path::new("/p"), &stats()).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(
            t.starts_with("/p: 700 files, 45.0 MB in 103 requests of up to 1024 KiB"),
            "{t}"
        );
        assert!(
            t.contains("in the page cache after 3.00 s: 15.0 MB/s"),
            "{t}"
        );
        assert!(!t.contains("metadata") && !t.contains("skipped"), "{t}");
        let j = json(Path::new("/p"), &stats());
        assert_eq!(j["mb_s"], 15.0);
        assert_eq!(j["bytes"], 45_000_000);
        assert_eq!(j["requests"], 103);
        assert_eq!(j["pack"], "/p");
    }
}
