//! Learned stop timeouts (the `timeouts` lever; docs/systemd.md, "Learned stop timeouts"):
//! a service that ran out its `TimeoutStopSec=` in a recorded shutdown makes every shutdown
//! it hangs wait that whole timeout (90 s by default). Where the kept shutdowns also hold
//! stops of it that ended by themselves, its timeout can be what it needed with a wide
//! margin: [`MARGIN`] times its longest recorded stop that ended, never below [`FLOOR_S`],
//! and only where that is shorter than the timeout it ran out. The generator writes the
//! learned value as a drop-in; a unit that never stopped by itself, or whose own timeout is
//! already short, keeps its own.
//!
//! The records come from the shutdowns' `systemd-stops.log` (systemd's journal as the boot
//! after each read it, [`crate::journal`]): a stop is a unit's `unit_stopping` to its
//! `unit_stopped`; one that ran out its timeout has a `unit_failed result=timeout` between.

use std::collections::BTreeMap;
use std::path::Path;

use crate::late::{valid_unit_name, StateError};

/// The learned timeouts the generator reads.
pub const STATE_FILE: &str = "/var/lib/bootprint/stop-timeouts";
/// The drop-in's file name in each unit's `.d` directory.
pub const DROP_IN: &str = "50-bootprint-stop-timeout.conf";
/// The state file's first line.
const STATE_HEADER: &str = "# bootprint stop-timeouts 1";
/// The learned timeout is this many times the longest stop that ended by itself.
pub const MARGIN: f64 = 3.0;
/// And never below this, s.
pub const FLOOR_S: u64 = 10;

/// One unit's stop in one shutdown.
#[derive(Debug, Clone, PartialEq)]
pub struct StopRecord {
    /// The unit.
    pub unit: String,
    /// From "Stopping" to "Stopped" (or to the failure), s.
    pub seconds: f64,
    /// Ended by its stop timeout (`unit_failed result=timeout` during the stop).
    pub timed_out: bool,
}

/// The stops of one shutdown's `systemd-stops.log` (events: `<ns> unit_stopping unit=U`,
/// `unit_stopped unit=U [result=R]`, `unit_failed unit=U result=R`). A stop without its
/// end is left out. Err: the file is not an events file.
pub fn stops_of(text: &str) -> Result<Vec<StopRecord>, String> {
    let events = trace::events::parse(text).map_err(|e| e.to_string())?;
    let mut open: BTreeMap<String, (u64, bool)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in &events {
        let Some(unit) = e.get("unit") else { continue };
        match e.kind.as_str() {
            "unit_stopping" => {
                open.insert(unit.to_string(), (e.t_ns, false));
            }
            "unit_failed" if e.get("result") == Some("timeout") => {
                if let Some(o) = open.get_mut(unit) {
                    o.1 = true;
                }
            }
            "unit_stopped" => {
                if let Some((t0, timed_out)) = open.remove(unit) {
                    out.push(StopRecord {
                        unit: unit.to_string(),
                        seconds: e.t_ns.saturating_sub(t0) as f64 / 1e9,
                        timed_out,
                    });
                }
            }
            _ => {}
        }
    }
    // A stop that failed by its timeout may have no "Stopped" line: it ends at the failure.
    for e in &events {
        if e.kind == "unit_failed" && e.get("result") == Some("timeout") {
            let unit = e.get("unit").unwrap_or_default();
            if let Some((t0, _)) = open.remove(unit) {
                out.push(StopRecord {
                    unit: unit.to_string(),
                    seconds: e.t_ns.saturating_sub(t0) as f64 / 1e9,
                    timed_out: true,
                });
            }
        }
    }
    Ok(out)
}

/// What was learned for one service.
#[derive(Debug, Clone, PartialEq)]
pub struct Learned {
    /// The unit.
    pub unit: String,
    /// The timeout for its drop-in, whole seconds.
    pub timeout_s: u64,
    /// Its longest stop that ended by itself, s.
    pub longest_s: f64,
    /// Its stops that ended by themselves.
    pub stops: usize,
    /// Its stops its timeout ended, and the shortest of them (about its timeout), s.
    pub timeouts: usize,
    /// The shortest stop its timeout ended, s.
    pub ran_out_s: f64,
}

/// The services to give a learned timeout, by name: those that ran out their timeout at
/// least once and stopped by themselves at least once, where the learned value is shorter
/// than the timeout they ran out by a second or more.
pub fn learn(records: &[StopRecord]) -> Vec<Learned> {
    let mut by_unit: BTreeMap<&str, Vec<&StopRecord>> = BTreeMap::new();
    for r in records {
        by_unit.entry(r.unit.as_str()).or_default().push(r);
    }
    let mut out = Vec::new();
    for (unit, stops) in by_unit {
        if !valid_unit_name(unit) {
            continue;
        }
        let ended: Vec<f64> = stops
            .iter()
            .filter(|s| !s.timed_out)
            .map(|s| s.seconds)
            .collect();
        let ran_out: Vec<f64> = stops
            .iter()
            .filter(|s| s.timed_out)
            .map(|s| s.seconds)
            .collect();
        if ended.is_empty() || ran_out.is_empty() {
            continue;
        }
        let longest = ended.iter().cloned().fold(0.0, f64::max);
        let shortest_out = ran_out.iter().cloned().fold(f64::INFINITY, f64::min);
        let timeout_s = ((longest * MARGIN).ceil() as u64).max(FLOOR_S);
        if (timeout_s as f64) + 1.0 > shortest_out {
            continue;
        }
        out.push(Learned {
            unit: unit.to_string(),
            timeout_s,
            longest_s: longest,
            stops: ended.len(),
            timeouts: ran_out.len(),
            ran_out_s: shortest_out,
        });
    }
    out
}

/// The learned timeouts as the state file: the header, then `UNIT SECONDS` per line, each
/// with a comment saying what it came from.
pub fn to_state(learned: &[Learned]) -> String {
    let mut s = format!("{STATE_HEADER}\n");
    for l in learned {
        s.push_str(&format!(
            "# {}: longest of {} stops that ended {:.2} s; ran out its timeout {} time(s), \
             the shortest after {:.2} s\n{} {}\n",
            l.unit, l.stops, l.longest_s, l.timeouts, l.ran_out_s, l.unit, l.timeout_s
        ));
    }
    s
}

/// Reads the state file's text: (unit, seconds) per line. Anything wrong is an error naming
/// the line (the generator then writes nothing).
pub fn from_state(text: &str) -> Result<Vec<(String, u64)>, StateError> {
    let mut lines = text.lines().enumerate();
    if lines.next().map(|(_, l)| l) != Some(STATE_HEADER) {
        return Err(StateError {
            line: 1,
            expected: format!("{STATE_HEADER:?}"),
        });
    }
    let mut out = Vec::new();
    for (i, l) in lines {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let mut w = l.split_whitespace();
        let parsed = match (w.next(), w.next(), w.next()) {
            (Some(u), Some(s), None) if valid_unit_name(u) => s
                .parse::<u64>()
                .ok()
                .filter(|s| (FLOOR_S..=86_400).contains(s))
                .map(|s| (u.to_string(), s)),
            _ => None,
        };
        out.push(parsed.ok_or_else(|| StateError {
            line: i + 1,
            expected: format!("`UNIT.service SECONDS` ({FLOOR_S} to 86400), found {l:?}"),
        })?);
    }
    Ok(out)
}

/// The learned timeouts on the system under `root`: `Ok(empty)` when nothing was learned;
/// Err why none is applied. The state file is trusted only when it is a regular file of
/// root's (or this user's) that no one else can write, as the late units' is.
pub fn plan(root: &Path) -> Result<Vec<(String, u64)>, String> {
    let Some(text) = crate::generator::read_trusted_state(root, STATE_FILE)? else {
        return Ok(Vec::new());
    };
    from_state(&text).map_err(|e| format!("{STATE_FILE}:{}: expected {}", e.line, e.expected))
}

/// The generator's files for the learned timeouts: one drop-in per unit.
pub fn files(learned: &[(String, u64)]) -> Vec<(String, String)> {
    learned
        .iter()
        .map(|(unit, s)| {
            (
                format!("{unit}.d/{DROP_IN}"),
                format!(
                    "# bootprint: a stop timeout learned from this machine's shutdowns\n\
                     # ({STATE_FILE}; `bootprint disable` takes it back)\n\
                     [Service]\nTimeoutStopSec={s}s\n"
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STOPS: &str = "# bootprint events 1\n\
        1000000000 unit_stopping unit=hang.service\n\
        1000000000 unit_stopping unit=quick.service\n\
        1500000000 unit_stopped unit=quick.service result=done\n\
        31000000000 unit_failed unit=hang.service result=timeout\n\
        31100000000 unit_stopped unit=hang.service result=done\n";

    #[test]
    fn stops_and_timeouts_from_the_journals_events() {
        let s = stops_of(STOPS).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].unit, "quick.service");
        assert!(!s[0].timed_out && (s[0].seconds - 0.5).abs() < 1e-9);
        assert_eq!(s[1].unit, "hang.service");
        assert!(s[1].timed_out && (s[1].seconds - 30.1).abs() < 1e-9);
        // A timeout with no "Stopped" after it ends the stop at the failure.
        let no_stopped = "# bootprint events 1\n1000000000 unit_stopping unit=h.service\n\
                          21000000000 unit_failed unit=h.service result=timeout\n";
        let s = stops_of(no_stopped).unwrap();
        assert!(s[0].timed_out && (s[0].seconds - 20.0).abs() < 1e-9);
        assert!(stops_of("not events").is_err());
    }

    #[test]
    fn a_timeout_is_learned_only_from_a_hang_and_a_stop_that_ended() {
        let rec = |unit: &str, seconds: f64, timed_out: bool| StopRecord {
            unit: unit.into(),
            seconds,
            timed_out,
        };
        let learned = learn(&[
            // Hung once for its 30 s, stopped in 0.5 s and 4.2 s: 3 x 4.2 = 12.6 -> 13 s.
            rec("hang.service", 30.1, true),
            rec("hang.service", 0.5, false),
            rec("hang.service", 4.2, false),
            // Never hung: its own timeout stays.
            rec("quick.service", 0.4, false),
            // Only hung: nothing to learn from.
            rec("stuck.service", 90.0, true),
            // Its own timeout (12 s) is already about what would be learned (10 s floor).
            rec("short.service", 10.5, true),
            rec("short.service", 1.0, false),
            // Not a service.
            rec("home.mount", 90.0, true),
            rec("home.mount", 1.0, false),
        ]);
        assert_eq!(learned.len(), 1, "{learned:?}");
        assert_eq!(learned[0].unit, "hang.service");
        assert_eq!(learned[0].timeout_s, 13);
        let state = to_state(&learned);
        assert_eq!(from_state(&state).unwrap(), [("hang.service".into(), 13)]);
        let files = files(&from_state(&state).unwrap());
        assert_eq!(files[0].0, format!("hang.service.d/{DROP_IN}"));
        assert!(
            files[0].1.ends_with("[Service]\nTimeoutStopSec=13s\n"),
            "{}",
            files[0].1
        );
    }

    #[test]
    fn a_bad_state_line_is_named() {
        let e = from_state(&format!("{STATE_HEADER}\nhang.service 3\n")).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.expected.contains("10 to 86400"), "{}", e.expected);
        assert_eq!(from_state("other\n").unwrap_err().line, 1);
        let e = from_state(&format!("{STATE_HEADER}\n# c\nx.mount 20\n")).unwrap_err();
        assert_eq!(e.line, 3);
    }
}
