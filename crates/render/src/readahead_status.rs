//! `bootprint readahead status`: what readahead knows about a system (its switch, its pack,
//! its history of boots with and without replay, its own verdict, what the next boot does),
//! as text and JSON; and the dates, sizes and times readahead's views share.

use std::io::{self, Write};
use std::path::Path;

use readahead::pack::Pack;
use readahead::replay::ReplayOptions;
use readahead::state::{Judgement, State, Verdict};
use record::readahead::NextBoot;
use serde_json::{json, Value};

/// The pack at the configured place, as `status` found it.
pub type PackFound<'a> = Found<'a, Pack>;

/// A lever's learned file (readahead's pack, preload's model) at its configured place, as a
/// status verb found it.
#[derive(Debug)]
pub enum Found<'a, T> {
    /// There is no file: nothing learned yet.
    None,
    /// There is a file, but it does not parse: why (file, line, what was expected).
    Unusable(&'a str),
    /// The file, read.
    Valid(&'a T),
}

// Derived Clone/Copy would ask `T: Copy`; only references are copied.
impl<T> Clone for Found<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Found<'_, T> {}

impl<'a, T> Found<'a, T> {
    /// The file, if it was read.
    pub fn valid(self) -> Option<&'a T> {
        match self {
            Found::Valid(t) => Some(t),
            _ => None,
        }
    }

    /// Why there is no file to use: "none", or why it does not parse.
    pub fn error(self) -> Option<&'a str> {
        match self {
            Found::None => Some("none"),
            Found::Unusable(e) => Some(e),
            Found::Valid(_) => None,
        }
    }
}

/// A self-judging lever's verdict in words (readahead's and preload's status).
pub(crate) fn verdict_text(v: &Verdict) -> String {
    match v {
        Verdict::Auto => "judging itself (auto)".to_string(),
        Verdict::Off { unix_s, reason } => {
            format!("switched itself off {}: {reason}", utc(*unix_s))
        }
    }
}

/// A self-judging lever's verdict as its status JSON shows it (readahead's and preload's).
pub(crate) fn verdict_json(v: &Verdict) -> Value {
    match v {
        Verdict::Auto => json!({"state": "auto"}),
        Verdict::Off { unix_s, reason } => {
            json!({"state": "off", "since_unix_s": unix_s, "reason": reason})
        }
    }
}

/// What `bootprint readahead status` shows, gathered by the verb from the configuration,
/// the state file and the pack; every figure in it is readahead's or record's.
#[derive(Debug, Clone, Copy)]
pub struct Status<'a> {
    /// The switch (bootprint.toml, and on the running system the kernel command line).
    pub enabled: bool,
    /// bootprint.toml.
    pub config_file: &'a Path,
    /// The `bootprint.readahead` word on the running kernel's command line, if any.
    pub cmdline_switch: Option<&'a str>,
    /// Readahead's state: its verdict and its history.
    pub state: &'a State,
    /// The history judged (`State::judge`).
    pub judgement: &'a Judgement,
    /// Where the pack is.
    pub pack_path: &'a Path,
    /// The pack there.
    pub pack: PackFound<'a>,
    /// Why the next replay boot would learn the pack again (its age, the kernel), if it would.
    pub relearn: Option<&'a str>,
    /// What the next boot does.
    pub next_boot: NextBoot,
    /// `[readahead] metadata`: `Some` set, `None` for `auto` (the pack's flags decide).
    pub metadata: Option<bool>,
    /// Now, seconds since the Unix epoch: the pack's age.
    pub now_unix_s: u64,
}

/// `2026-11-22 12:34 UTC` from seconds since the epoch.
pub fn utc(unix_s: u64) -> String {
    format!(
        "{} UTC",
        crate::utc::minutes(i64::try_from(unix_s).unwrap_or(i64::MAX))
    )
}

/// `12.3 MB` (decimal megabytes) from bytes.
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// `9.95 s`, or `-` when not known.
fn secs(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2} s"))
}

/// What the next boot does, in words.
fn next_boot(n: NextBoot) -> &'static str {
    match n {
        NextBoot::Off => "nothing: readahead is off",
        NextBoot::SwitchedOff => {
            "nothing: readahead switched itself off (`bootprint readahead on` to retry)"
        }
        NextBoot::Learn => "learn a pack",
        NextBoot::Control => "boot without replay, to compare",
        NextBoot::Replay => "replay the pack",
    }
}

/// The status as JSON.
pub fn json(s: &Status) -> Value {
    let (pack, error) = (s.pack.valid(), s.pack.error());
    let judged = s.judgement;
    json!({
        "enabled": s.enabled,
        "config_file": s.config_file.display().to_string(),
        "kernel_cmdline": s.cmdline_switch,
        "verdict": verdict_json(&s.state.verdict),
        "pack": {
            "path": s.pack_path.display().to_string(),
            "valid": pack.is_some(),
            "error": error,
            "files": pack.map(|p| p.entries.len()),
            "bytes": pack.map(Pack::bytes),
            "ranges": pack.map(|p| p.entries.iter().map(|e| e.ranges.len()).sum::<usize>()),
            "budget_bytes": pack.map(|p| p.header.budget_bytes),
            "created_unix_s": pack.map(|p| p.header.created_unix_s),
            "kernel_release": pack.map(|p| p.header.kernel_release.clone()),
            "rotational": pack.map(|p| p.header.rotational),
            "disk_bound": pack.map(|p| p.header.disk_bound),
            "reads_metadata": pack.map(|p| reads_metadata(s, p)),
            "relocated": pack.map(|p| p.header.relocated),
            "relearn_reason": s.relearn,
        },
        "history": s.state.boots.iter().map(|b| json!({
            "unix_s": b.unix_s, "kind": b.kind.word(), "login_s": b.login_s, "done_s": b.done_s,
        })).collect::<Vec<_>>(),
        "judgement": {
            "replay_median_login_s": judged.replay.map(|x| x.0),
            "replay_boots": judged.replay.map_or(0, |x| x.1),
            "control_median_login_s": judged.control.map(|x| x.0),
            "control_boots": judged.control.map_or(0, |x| x.1),
            "ratio": judged.ratio(),
            "summary": judged.describe(),
        },
        "next_boot": next_boot(s.next_boot),
    })
}

/// The status as text: the switch, the verdict, the pack, the last ten boots, the
/// judgement and the next boot.
pub fn text(out: &mut impl Write, s: &Status) -> io::Result<()> {
    let switch = if s.enabled { "on" } else { "off" };
    write!(out, "readahead: {switch} (in {}", s.config_file.display())?;
    match s.cmdline_switch {
        Some(w) => writeln!(out, "; kernel command line {w})")?,
        None => writeln!(out, ")")?,
    }
    writeln!(out, "verdict:   {}", verdict_text(&s.state.verdict))?;
    writeln!(out, "pack:      {}", s.pack_path.display())?;
    match s.pack {
        PackFound::Valid(p) => {
            let ranges: usize = p.entries.iter().map(|e| e.ranges.len()).sum();
            let age_days = s.now_unix_s.saturating_sub(p.header.created_unix_s) as f64 / 86400.0;
            writeln!(
                out,
                "           {} files, {} in {ranges} ranges (budget {}), {} order",
                p.entries.len(),
                mb(p.bytes()),
                mb(p.header.budget_bytes),
                match (p.header.rotational, p.header.relocated) {
                    (true, false) => "disk (rotating device)",
                    (true, true) => "disk (rotating device) order, relocated: read as one stream",
                    (false, false) => "first-access",
                    (false, true) => "first-access order, relocated: read as one stream",
                }
            )?;
            writeln!(
                out,
                "           learned {} ({age_days:.1} days ago) on kernel {}",
                utc(p.header.created_unix_s),
                p.header.kernel_release
            )?;
            let reads = reads_metadata(s, p);
            writeln!(
                out,
                "           the metadata read first: {} ({})",
                if reads { "yes" } else { "no" },
                match s.metadata {
                    Some(_) => "set in the configuration",
                    None if !p.header.rotational => "auto: the device does not rotate",
                    None if !p.header.disk_bound => {
                        "auto: the learning boot did not wait on its disk"
                    }
                    None => "auto: a rotating disk the learning boot waited on",
                }
            )?;
            if let Some(r) = s.relearn {
                writeln!(out, "           the next replay boot learns it again: {r}")?;
            }
        }
        PackFound::None => writeln!(out, "           none yet")?,
        PackFound::Unusable(e) => writeln!(out, "           unusable: {e}")?,
    }
    writeln!(
        out,
        "history:   {} boots (learn, replay, without replay to compare)",
        s.state.boots.len()
    )?;
    for b in s.state.boots.iter().rev().take(10).rev() {
        writeln!(
            out,
            "           {}  {:<8} login {:>9}  done {:>9}",
            utc(b.unix_s),
            b.kind.word(),
            secs(b.login_s),
            secs(b.done_s)
        )?;
    }
    writeln!(out, "judgement: {}", s.judgement.describe())?;
    if let Some(r) = s.judgement.ratio() {
        writeln!(out, "           replay / without = {r:.3}")?;
    }
    writeln!(out, "next boot: {}", next_boot(s.next_boot))
}

/// Whether the boot's replay of `p` reads the metadata first, with the configured switch.
fn reads_metadata(s: &Status, p: &Pack) -> bool {
    ReplayOptions {
        metadata: s.metadata,
        ..ReplayOptions::default()
    }
    .reads_metadata(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use readahead::pack::{Entry, Header, Range};
    use readahead::state::{BootKind, BootRecord};
    use std::path::PathBuf;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_795_350_000), "2026-11-22 12:20 UTC");
    }

    fn pack() -> Pack {
        Pack {
            header: Header {
                created_unix_s: 1_795_000_000,
                kernel_release: "6.1.0-56-amd64".into(),
                rotational: true,
                relocated: false,
                disk_bound: false,
                budget_bytes: 200_000_000,
                ..Header::default()
            },
            entries: vec![Entry {
                path: PathBuf::from("/usr/bin/bash"),
                ranges: vec![
                    Range {
                        offset: 0,
                        len: 1_000_000,
                    },
                    Range {
                        offset: 2_000_000,
                        len: 500_000,
                    },
                ],
                ..Entry::default()
            }],
        }
    }

    fn state() -> State {
        let mut st = State {
            verdict: Verdict::Off {
                unix_s: 1_795_350_000,
                reason: "not faster".into(),
            },
            ..State::default()
        };
        for i in 0..12 {
            st.boots.push(BootRecord {
                unix_s: 1_795_000_000 + i * 3600,
                kind: if i % 2 == 0 {
                    BootKind::Replay
                } else {
                    BootKind::Control
                },
                login_s: Some(10.0 + i as f64 / 100.0),
                done_s: None,
            });
        }
        st
    }

    fn status<'a>(st: &'a State, j: &'a Judgement, pack: PackFound<'a>) -> Status<'a> {
        Status {
            enabled: true,
            config_file: Path::new("/etc/bootprint.toml"),
            cmdline_switch: Some("bootprint.readahead=1"),
            state: st,
            judgement: j,
            pack_path: Path::new("/var/lib/bootprint/readahead.pack"),
            pack,
            relearn: Some("old"),
            next_boot: NextBoot::SwitchedOff,
            metadata: None,
            now_unix_s: 1_795_000_000 + 2 * 86400,
        }
    }

    #[test]
    fn text_shows_switch_verdict_pack_last_ten_boots_and_next_boot() {
        let (st, p) = (state(), pack());
        let j = st.judge();
        let mut out = Vec::new();
        text(&mut out, &status(&st, &j, PackFound::Valid(&p))).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with(
            "readahead: on (in /etc/bootprint.toml; kernel command line bootprint.readahead=1)\n\
             verdict:   switched itself off 2026-11-22 12:20 UTC: not faster\n\
             pack:      /var/lib/bootprint/readahead.pack\n\
             \x20          1 files, 1.5 MB in 2 ranges (budget 200.0 MB), disk (rotating device) order\n\
             \x20          learned 2026-11-18 11:06 UTC (2.0 days ago) on kernel 6.1.0-56-amd64\n\
             \x20          the metadata read first: no (auto: the learning boot did not wait on its disk)\n\
             \x20          the next replay boot learns it again: old\n\
             history:   12 boots (learn, replay, without replay to compare)\n"
        ), "{s}");
        let boots = s
            .lines()
            .filter(|l| l.contains(" login ") && l.contains(" done "));
        assert_eq!(boots.count(), 10, "the last ten boots: {s}");
        assert!(
            s.contains("  replay   login   10.02 s  done         -\n"),
            "{s}"
        );
        assert!(s.contains("           replay / without = "), "{s}");
        assert!(s.ends_with(
            "next boot: nothing: readahead switched itself off (`bootprint readahead on` to retry)\n"
        ));
    }

    #[test]
    fn whether_the_metadata_is_read_first() {
        let st = State::default();
        let j = st.judge();
        let line = |p: &Pack, metadata: Option<bool>| {
            let mut out = Vec::new();
            let s = Status {
                metadata,
                ..status(&st, &j, PackFound::Valid(p))
            };
            text(&mut out, &s).unwrap();
            let t = String::from_utf8(out).unwrap();
            let l = t
                .lines()
                .find(|l| l.contains("the metadata read first"))
                .unwrap();
            (
                l.trim().to_string(),
                json(&s)["pack"]["reads_metadata"].clone(),
            )
        };
        let mut p = pack();
        p.header.rotational = true;
        p.header.disk_bound = true;
        assert_eq!(
            line(&p, None),
            (
                "the metadata read first: yes (auto: a rotating disk the learning boot waited on)"
                    .into(),
                json!(true)
            )
        );
        assert_eq!(
            line(&p, Some(false)),
            (
                "the metadata read first: no (set in the configuration)".into(),
                json!(false)
            )
        );
        p.header.rotational = false;
        assert_eq!(
            line(&p, None).0,
            "the metadata read first: no (auto: the device does not rotate)"
        );
    }

    #[test]
    fn a_missing_pack_and_an_unusable_one() {
        let st = State::default();
        let j = st.judge();
        let mut out = Vec::new();
        text(&mut out, &status(&st, &j, PackFound::None)).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("\n           none yet\n"));
        let v = json(&status(&st, &j, PackFound::None));
        assert_eq!(v["pack"]["valid"], false);
        assert_eq!(v["pack"]["error"], "none");
        let v = json(&status(&st, &j, PackFound::Unusable("bad magic")));
        assert_eq!(v["pack"]["error"], "bad magic");
        assert_eq!(v["pack"]["files"], Value::Null);
    }

    #[test]
    fn json_has_pack_history_judgement_and_next_boot() {
        let (st, p) = (state(), pack());
        let j = st.judge();
        let v = json(&status(&st, &j, PackFound::Valid(&p)));
        assert_eq!(v["pack"]["valid"], true);
        assert_eq!(v["pack"]["error"], Value::Null);
        assert_eq!(v["pack"]["files"], 1);
        assert_eq!(v["pack"]["ranges"], 2);
        assert_eq!(v["pack"]["bytes"], 1_500_000);
        assert_eq!(v["pack"]["relearn_reason"], "old");
        assert_eq!(v["verdict"]["since_unix_s"], 1_795_350_000u64);
        assert_eq!(v["history"].as_array().unwrap().len(), 12);
        assert_eq!(v["judgement"]["replay_boots"], 5);
        assert_eq!(v["kernel_cmdline"], "bootprint.readahead=1");
        assert!(v["next_boot"]
            .as_str()
            .unwrap()
            .starts_with("nothing: readahead switched itself off"));
    }
}
