//! What `systemd-analyze blame` and `critical-chain` print, read back, and compared with
//! bootprint's reading of the same boot's `systemd-units.log` ([`ServicesView::from_units`]).
//! The test bed runs both in the guest after login and checks that they agree
//! (docs/testbed.md, `late`); the unit tests do the same on a recorded boot's fixture.
//!
//! Formats (systemd 252, src/analyze/analyze-blame.c and analyze-critical-chain.c; timespans
//! as its `format_timespan` writes them at millisecond accuracy, e.g. `1min 11.727s`,
//! `573ms`): blame is one `TIME UNIT` line per unit that took time, longest first; the
//! critical chain is a tree of `UNIT @AT +TOOK` lines (`@` since the manager started, `+`
//! only for units that took time), drawn with `└─`, `├─` and `│`, highlighted with ANSI
//! escapes.

use crate::services::ServicesView;

/// A timespan as `systemd-analyze` prints it, in µs: words of a number and a unit (`y`,
/// `month`, `w`, `d`, `h`, `min`, `s`, `ms`, `us`/`µs`), summed.
pub fn timespan_us(text: &str) -> Option<u64> {
    let mut total = 0.0;
    let mut any = false;
    for word in text.split_whitespace() {
        let split = word
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|&i| i > 0)?;
        let (num, unit) = word.split_at(split);
        let n: f64 = num.parse().ok()?;
        let us = match unit {
            "y" => 31_557_600e6,
            "month" => 2_629_800e6,
            "w" => 604_800e6,
            "d" => 86_400e6,
            "h" => 3_600e6,
            "min" => 60e6,
            "s" => 1e6,
            "ms" => 1e3,
            "us" | "µs" => 1.0,
            _ => return None,
        };
        total += n * us;
        any = true;
    }
    any.then_some(total.round() as u64)
}

/// The stages of `systemd-analyze time`'s first line (`Startup finished in 2.1s (kernel) +
/// 4.5s (initrd) + 9.9s (userspace) = 16.6s`; also `(firmware)`, `(loader)`), in µs by their
/// name, the sum as `total`. Empty when the line is not there (the boot not finished).
pub fn parse_time(text: &str) -> Vec<(String, u64)> {
    let Some(line) = text
        .lines()
        .map(plain)
        .find(|l| l.starts_with("Startup finished in "))
    else {
        return Vec::new();
    };
    let rest = &line["Startup finished in ".len()..];
    let (parts, total) = rest.split_once(" = ").unwrap_or((rest, ""));
    let mut out: Vec<(String, u64)> = parts
        .split(" + ")
        .filter_map(|p| {
            let (span, name) = p.trim().rsplit_once(" (")?;
            Some((name.strip_suffix(')')?.to_string(), timespan_us(span)?))
        })
        .collect();
    if let Some(t) = timespan_us(total.trim()) {
        out.push(("total".into(), t));
    }
    out
}

/// Without ANSI escapes (`ESC [ ... m`).
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// `systemd-analyze blame`'s lines: (unit, µs), in its order. Lines that are not
/// `TIME UNIT` are skipped.
pub fn parse_blame(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| {
            let l = plain(l);
            let (time, unit) = l.trim().rsplit_once(' ')?;
            Some((unit.to_string(), timespan_us(time)?))
        })
        .collect()
}

/// One line of a critical chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainLink {
    /// The unit.
    pub unit: String,
    /// `@`: when it became active, or started when it took time (µs since the manager
    /// started).
    pub at_us: Option<u64>,
    /// `+`: how long it took to start (µs).
    pub took_us: Option<u64>,
}

/// `systemd-analyze critical-chain UNIT`'s lines, the named unit first; the explanation
/// at the top and a cycle's `...` are skipped.
pub fn parse_chain(text: &str) -> Vec<ChainLink> {
    let mut out = Vec::new();
    for line in text.lines() {
        let l = plain(line);
        let l = l.trim_start_matches(|c: char| c.is_whitespace() || "└├│─".contains(c));
        if l.is_empty() || l.starts_with("The time") || l.starts_with("...") {
            continue;
        }
        let mut words = l.split(" @").flat_map(|w| w.split(" +"));
        let unit = words.next().unwrap_or_default().trim().to_string();
        let at = l
            .split_once(" @")
            .and_then(|(_, r)| timespan_us(r.split(" +").next().unwrap_or_default()));
        let took = l.split_once(" +").and_then(|(_, r)| timespan_us(r));
        if unit.contains(' ') {
            continue; // not a chain line
        }
        out.push(ChainLink {
            unit,
            at_us: at,
            took_us: took,
        });
    }
    out
}

/// The outcome of one comparison: whether it held and what was compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Whether it held.
    pub ok: bool,
    /// What was compared, with both sides' figures.
    pub what: String,
}

/// Whether `ours` is within `tolerance` (a fraction) of `theirs`, or within a millisecond
/// (systemd-analyze rounds to the millisecond).
fn close(ours: u64, theirs: u64, tolerance: f64) -> bool {
    let d = ours.abs_diff(theirs) as f64;
    d <= 1000.0 || d <= tolerance * theirs as f64
}

/// Compares bootprint's blame with `systemd-analyze blame`'s: its `top` first units are
/// bootprint's `top` first (as a set: units that took the same to the millisecond may swap
/// places), each with its time within `tolerance`. systemd-analyze runs later than the
/// recorder asked systemd: a unit still activating at boot done (no end in the trace) has
/// no blame in the trace yet, and is left out of systemd-analyze's list too.
pub fn check_blame(v: &ServicesView, blame_text: &str, top: usize, tolerance: f64) -> Vec<Check> {
    let running: Vec<&str> = v
        .spans
        .iter()
        .filter(|s| s.end_ns.is_none())
        .map(|s| s.script.as_str())
        .collect();
    let theirs: Vec<(String, u64)> = parse_blame(blame_text)
        .into_iter()
        .filter(|(u, _)| !running.contains(&u.as_str()))
        .collect();
    let ours: Vec<(String, u64)> = v
        .blame()
        .iter()
        .map(|s| (s.script.clone(), s.duration_ns() / 1000))
        .collect();
    let mut checks = Vec::new();
    let n = top.min(theirs.len());
    let (their_top, our_top) = (&theirs[..n], &ours[..top.min(ours.len())]);
    checks.push(Check {
        ok: n == top
            && their_top
                .iter()
                .all(|(u, _)| our_top.iter().any(|(o, _)| o == u)),
        what: format!(
            "blame: systemd-analyze's top {top} {:?} are bootprint's top {top} {:?}",
            their_top.iter().map(|x| &x.0).collect::<Vec<_>>(),
            our_top.iter().map(|x| &x.0).collect::<Vec<_>>()
        ),
    });
    for (unit, us) in their_top {
        let mine = ours.iter().find(|(o, _)| o == unit).map(|x| x.1);
        checks.push(Check {
            ok: mine.is_some_and(|m| close(m, *us, tolerance)),
            what: format!(
                "blame: {unit} took {:.3} s by systemd-analyze, {} by bootprint",
                *us as f64 / 1e6,
                mine.map_or("nothing".into(), |m| format!("{:.3} s", m as f64 / 1e6))
            ),
        });
    }
    checks
}

/// Compares bootprint's critical chain to its login unit with `systemd-analyze
/// critical-chain LOGIN_UNIT`'s: the same units in the same order, each `@` within
/// `tolerance` (bootprint's times taken from the manager's start, as systemd-analyze's).
pub fn check_chain(v: &ServicesView, chain_text: &str, tolerance: f64) -> Vec<Check> {
    let theirs = parse_chain(chain_text);
    let mut ours: Vec<_> = v.critical_chain();
    ours.reverse(); // the login unit first, as systemd-analyze prints it
    let names = |x: &[&str]| x.join(" <- ");
    let their_names: Vec<&str> = theirs.iter().map(|c| c.unit.as_str()).collect();
    let our_names: Vec<&str> = ours.iter().map(|s| s.script.as_str()).collect();
    let mut checks = vec![Check {
        ok: !theirs.is_empty() && their_names == our_names,
        what: format!(
            "critical chain: systemd-analyze {} , bootprint {}",
            names(&their_names),
            names(&our_names)
        ),
    }];
    for (c, s) in theirs.iter().zip(&ours) {
        let Some(at) = c.at_us else { continue };
        // `@` is when it started if it took time, else when it became active.
        let ns = if c.took_us.is_some() {
            s.start_ns
        } else {
            s.end_ns.unwrap_or(s.start_ns)
        };
        let mine = (ns.saturating_sub(v.userspace_ns)) / 1000;
        checks.push(Check {
            ok: c.unit == s.script && close(mine, at, tolerance),
            what: format!(
                "critical chain: {} @{:.3} s by systemd-analyze, {} @{:.3} s by bootprint",
                c.unit,
                at as f64 / 1e6,
                s.script,
                mine as f64 / 1e6
            ),
        });
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_reads_every_stage_and_the_sum() {
        let t = "Startup finished in 3.012s (firmware) + 1.2s (loader) + 2.345s (kernel) + \
                 1min 4.5s (initrd) + 573ms (userspace) = 1min 11.630s\n\
                 multi-user.target reached after 570ms in userspace.\n";
        assert_eq!(
            parse_time(t),
            [
                ("firmware".to_string(), 3_012_000),
                ("loader".to_string(), 1_200_000),
                ("kernel".to_string(), 2_345_000),
                ("initrd".to_string(), 64_500_000),
                ("userspace".to_string(), 573_000),
                ("total".to_string(), 71_630_000),
            ]
        );
        assert!(parse_time("Bootup is not yet finished.\n").is_empty());
    }

    #[test]
    fn timespans_as_systemd_prints_them() {
        assert_eq!(timespan_us("1min 11.727s"), Some(71_727_000));
        assert_eq!(timespan_us("573ms"), Some(573_000));
        assert_eq!(timespan_us("2min 13.206s"), Some(133_206_000));
        assert_eq!(timespan_us("1h 2min"), Some(3_720_000_000));
        assert_eq!(timespan_us("soon"), None);
        assert_eq!(timespan_us(""), None);
    }

    #[test]
    fn chain_lines_lose_glyphs_and_colours() {
        let text =
            "The time when unit became active or started is printed after the \"@\" character.\n\n\
getty@tty1.service @57.990s\n\
└─\u{1b}[0;1;31msystemd-user-sessions.service @44.168s +9.383s\u{1b}[0m\n\
  └─basic.target @34.249s\n";
        let c = parse_chain(text);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].unit, "getty@tty1.service");
        assert_eq!(c[1].at_us, Some(44_168_000));
        assert_eq!(c[1].took_us, Some(9_383_000));
        assert_eq!(c[2].took_us, None);
        let b = parse_blame(
            " 1min 11.727s postgresql@15-main.service\n  573ms sys-kernel-config.mount\n",
        );
        assert_eq!(b[0], ("postgresql@15-main.service".into(), 71_727_000));
        assert_eq!(b[1].1, 573_000);
    }
}
