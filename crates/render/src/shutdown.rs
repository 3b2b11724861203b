//! A recorded shutdown (`analyze::shutdown::ShutdownView`) as text and JSON: `bootprint
//! services --shutdown`.

use std::fmt::Write as _;

use analyze::shutdown::{ShutdownView, Stop, StopSource, Storage};
use serde_json::{json, Value};

/// Blame rows shown in the text.
const BLAME_ROWS: usize = 10;

fn shown_end(s: &Stop) -> String {
    s.end_s
        .map_or_else(|| "running".to_string(), |e| format!("{e:.2}"))
}

/// The shutdown as text: how and how long, blame (longest first), the chain that held it.
pub fn text(v: &ShutdownView) -> String {
    let mut s = String::new();
    let by = v
        .requested_by
        .as_ref()
        .map_or(String::new(), |b| format!(" by `{b}`"));
    let _ = writeln!(
        s,
        "shutdown ({}) asked for{by} at {:.2} s of uptime; trace saved {:.2} s later ({})",
        v.how, v.start_uptime_s, v.saved_s, v.end_reason
    );
    let what = match v.source {
        StopSource::Runner => "stops (bootprint's runner)",
        StopSource::Systemd => "unit stops (systemd's journal)",
        StopSource::Processes => "what ran (from the process samples)",
    };
    if v.stops.is_empty() {
        let _ = writeln!(s, "no stops recorded");
        write_storage(&mut s, &v.storage);
        return s;
    }
    let _ = writeln!(s, "blame, {what}, longest first:");
    let _ = writeln!(s, "  {:>8}  {:>8}  {:>8}  name", "seconds", "start", "end");
    for st in v.blame().into_iter().take(BLAME_ROWS) {
        let _ = writeln!(
            s,
            "  {:>8.2}  {:>8.2}  {:>8}  {}{}",
            st.duration_s(v.saved_s),
            st.start_s,
            shown_end(st),
            st.name,
            if st.outcome.is_empty() || st.outcome == "ok" {
                String::new()
            } else {
                format!(" ({})", st.outcome)
            }
        );
    }
    let chain = v.chain();
    if v.source == StopSource::Runner && !chain.is_empty() {
        let _ = writeln!(s, "the chain that held the shutdown (first first):");
        for st in chain {
            let _ = writeln!(
                s,
                "  {} @{:.2} s +{:.2} s",
                st.name,
                st.start_s,
                st.duration_s(v.saved_s)
            );
        }
    }
    if !v.sigterm_survivors.is_empty() {
        let _ = writeln!(
            s,
            "outlived sendsigs' SIGTERM (ignoring it or slow to exit; sendsigs waits up to 10 s, \
             then SIGKILL):"
        );
        for p in &v.sigterm_survivors {
            let _ = writeln!(s, "  {:>8.2} s  pid {}  {}", p.outlived_s, p.pid, p.name);
        }
    }
    write_storage(&mut s, &v.storage);
    s
}

/// A size in KiB as KiB under 1 MiB, else MiB.
pub fn size(kib: u64) -> String {
    if kib < 1024 {
        format!("{kib} KiB")
    } else {
        format!("{:.1} MiB", kib as f64 / 1024.0)
    }
}

/// The storage figures in one line, for the cycle; None where nothing was recorded.
pub fn storage_summary(st: &Storage) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(w) = st.written_kib {
        parts.push(format!("{} written", size(w)));
    }
    if let Some(u) = st.unmount_s {
        parts.push(format!("unmounting {u:.2} s"));
    }
    if let Some(y) = &st.sync {
        let dirty = y
            .dirty_kib
            .map_or(String::new(), |d| format!(" of {}", size(d)));
        parts.push(format!("sync after the save {:.2} s{dirty}", y.took_s));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// The storage lines of the text (none where nothing was recorded).
fn write_storage(s: &mut String, st: &Storage) {
    let opt = |v: Option<u64>| v.map_or("-".to_string(), size);
    let mut lines = Vec::new();
    if st.dirty_first_kib.is_some() {
        lines.push(format!(
            "dirty (not yet on disk): {} at the first sample, {} at most, {} at the last",
            opt(st.dirty_first_kib),
            opt(st.dirty_peak_kib),
            opt(st.dirty_last_kib)
        ));
    }
    if let Some(w) = st.written_kib {
        lines.push(format!(
            "written to the disks: {} from the first sample to the last",
            size(w)
        ));
    }
    if let Some(u) = st.unmount_s {
        lines.push(format!("unmounting: {u:.2} s ({})", st.unmounts.join(", ")));
    }
    if let Some(y) = &st.sync {
        lines.push(format!(
            "sync after the save: {:.2} s at {:.2} s, {} dirty before, {} after, {} written",
            y.took_s,
            y.start_s,
            opt(y.dirty_kib),
            opt(y.after_dirty_kib),
            opt(y.written_kib)
        ));
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(s, "storage:");
    for l in lines {
        let _ = writeln!(s, "  {l}");
    }
}

fn stop_json(v: &ShutdownView, s: &Stop) -> Value {
    json!({
        "name": s.name,
        "start_s": s.start_s,
        "end_s": s.end_s,
        "duration_s": s.duration_s(v.saved_s),
        "outcome": s.outcome,
        "waited_for": s.waited_for,
    })
}

/// The shutdown as one JSON object: the view's fields, `blame` and `chain` (names).
pub fn json(v: &ShutdownView) -> Value {
    json!({
        "how": v.how,
        "requested_by": v.requested_by,
        "start_uptime_s": v.start_uptime_s,
        "saved_s": v.saved_s,
        "end_reason": v.end_reason,
        "realtime_end_ns": v.end_clock.map(|c| c.realtime_ns as u64),
        "source": v.source,
        "stops": v.stops.iter().map(|s| stop_json(v, s)).collect::<Vec<_>>(),
        "blame": v.blame().iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
        "chain": v.chain().iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
        "sigterm_survivors": v.sigterm_survivors,
        "storage": v.storage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop(name: &str, start: f64, end: Option<f64>, waited: &str) -> Stop {
        Stop {
            name: name.into(),
            start_s: start,
            end_s: end,
            outcome: "ok".into(),
            waited_for: waited.into(),
        }
    }

    #[test]
    fn blame_is_longest_first_and_the_chain_follows_what_waited() {
        let v = ShutdownView {
            how: "runlevel 6".into(),
            requested_by: Some("reboot".into()),
            start_uptime_s: 100.0,
            saved_s: 6.0,
            end_reason: "saved".into(),
            end_clock: Some(analyze::cycle::ClockMark {
                boottime_ns: 106_000_000_000,
                realtime_ns: 1,
                rtc_offset_ns: None,
            }),
            source: StopSource::Runner,
            stops: vec![
                stop("slow", 0.1, Some(4.1), ""),
                stop("cron", 0.1, Some(0.3), ""),
                stop("sendsigs", 4.1, Some(5.0), "slow"),
                stop("umountfs", 5.0, Some(5.5), "sendsigs"),
                stop("left", 5.2, None, ""),
            ],
            sigterm_survivors: vec![analyze::shutdown::TermSurvivor {
                pid: 42,
                name: "bp-noterm 600".into(),
                sigterm_s: 4.3,
                outlived_s: 0.8,
            }],
            storage: Storage {
                dirty_first_kib: Some(112),
                dirty_peak_kib: Some(3072),
                dirty_last_kib: Some(32),
                written_kib: Some(2048),
                unmounts: vec!["umountfs".into()],
                unmount_s: Some(0.5),
                sync: Some(analyze::shutdown::SyncFigures {
                    start_s: 6.1,
                    took_s: 0.25,
                    dirty_kib: Some(32),
                    after_dirty_kib: Some(0),
                    written_kib: None,
                }),
            },
        };
        let t = text(&v);
        let first = t.lines().nth(3).unwrap();
        assert!(first.trim_end().ends_with("slow"), "{t}");
        assert!(
            t.contains("running"),
            "an unfinished one is shown as such: {t}"
        );
        let j = json(&v);
        assert_eq!(j["chain"], json!(["slow", "sendsigs", "umountfs"]));
        assert_eq!(j["blame"][0], "slow");
        // Unfinished: counted to the save.
        assert_eq!(j["stops"][4]["duration_s"].as_f64().unwrap(), 6.0 - 5.2);
        assert!(t.contains("0.80 s  pid 42  bp-noterm 600"), "{t}");
        assert_eq!(j["sigterm_survivors"][0]["pid"], 42);
        assert!(
            t.contains("dirty (not yet on disk): 112 KiB at the first sample, 3.0 MiB at most, 32 KiB at the last"),
            "{t}"
        );
        assert!(t.contains("written to the disks: 2.0 MiB"), "{t}");
        assert!(t.contains("unmounting: 0.50 s (umountfs)"), "{t}");
        assert!(
            t.contains("sync after the save: 0.25 s at 6.10 s, 32 KiB dirty before, 0 KiB after, - written"),
            "{t}"
        );
        assert_eq!(j["storage"]["unmount_s"], 0.5);
        assert_eq!(j["storage"]["sync"]["took_s"], 0.25);
        assert_eq!(j["storage"]["written_kib"], 2048);
        // Nothing recorded: no storage lines.
        let bare = ShutdownView {
            storage: Storage::default(),
            ..v.clone()
        };
        assert!(!text(&bare).contains("storage:"));
        assert_eq!(storage_summary(&bare.storage), None);
        assert_eq!(
            storage_summary(&v.storage).unwrap(),
            "2.0 MiB written, unmounting 0.50 s, sync after the save 0.25 s of 32 KiB"
        );
    }
}
