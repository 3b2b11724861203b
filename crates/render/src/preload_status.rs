//! `bootprint preload status` and `show`: what preload knows about a system (its switch, its
//! model, its history of logins with and without prefetch, its own verdict, what the next
//! login does) and the model file by file, as text and JSON. Every figure is preload's.

use std::io::{self, Write};
use std::path::Path;

use preload::model::Model;
use preload::run::{NextLogin, RunReport};
use preload::PRELOAD;
use readahead::state::{Judgement, State};
use serde_json::{json, Value};

use crate::readahead_status::{mb, utc, verdict_json, verdict_text, Found};

/// The model at the configured place, as `status` found it.
pub type ModelFound<'a> = Found<'a, Model>;

/// What `bootprint preload status` shows, gathered by the verb.
#[derive(Debug, Clone, Copy)]
pub struct Status<'a> {
    /// The switch (`[preload] enabled` in bootprint.toml).
    pub enabled: bool,
    /// bootprint.toml.
    pub config_file: &'a Path,
    /// The history and verdict's file.
    pub state_file: &'a Path,
    /// The state: its verdict and its history.
    pub state: &'a State,
    /// The history judged (`State::judge`).
    pub judgement: &'a Judgement,
    /// The model's file.
    pub model_path: &'a Path,
    /// The model there.
    pub model: ModelFound<'a>,
    /// The byte budget a prefetch would have now (the maximum, cut by free memory).
    pub budget_bytes: u64,
    /// What the next login does.
    pub next_login: NextLogin,
}

fn next_login(n: NextLogin) -> &'static str {
    match n {
        NextLogin::Off => "nothing: preload is off",
        NextLogin::SwitchedOff => {
            "nothing: preload switched itself off (`bootprint preload on` to retry)"
        }
        NextLogin::Learn => "learn the session",
        NextLogin::Control => "go without prefetch, to compare (and learn)",
        NextLogin::Prefetch => "prefetch the model (and learn)",
    }
}

fn secs(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2} s"))
}

/// The status as JSON.
pub fn json(s: &Status) -> Value {
    let (model, error) = (s.model.valid(), s.model.error());
    let j = s.judgement;
    json!({
        "enabled": s.enabled,
        "config_file": s.config_file.display().to_string(),
        "state_file": s.state_file.display().to_string(),
        "verdict": verdict_json(&s.state.verdict),
        "model": {
            "path": s.model_path.display().to_string(),
            "valid": model.is_some(),
            "error": error,
            "files": model.map(|m| m.files.len()),
            "bytes": model.map(Model::bytes),
            "logins": model.map(|m| m.logins),
            "updated_unix_s": model.map(|m| m.updated_unix_s),
        },
        "budget_bytes": s.budget_bytes,
        "history": s.state.boots.iter().map(|b| json!({
            "unix_s": b.unix_s, "kind": b.kind.word_for(&PRELOAD), "desktop_s": b.login_s,
        })).collect::<Vec<_>>(),
        "judgement": {
            "prefetch_median_desktop_s": j.replay.map(|x| x.0),
            "prefetch_logins": j.replay.map_or(0, |x| x.1),
            "control_median_desktop_s": j.control.map(|x| x.0),
            "control_logins": j.control.map_or(0, |x| x.1),
            "ratio": j.ratio(),
            "summary": j.describe_for(&PRELOAD),
        },
        "next_login": next_login(s.next_login),
    })
}

/// The status as text: the switch, the verdict, the model, the last ten logins, the
/// judgement and the next login.
pub fn text(out: &mut impl Write, s: &Status) -> io::Result<()> {
    let switch = if s.enabled { "on" } else { "off" };
    writeln!(out, "preload:    {switch} (in {})", s.config_file.display())?;
    writeln!(out, "verdict:    {}", verdict_text(&s.state.verdict))?;
    writeln!(out, "model:      {}", s.model_path.display())?;
    match s.model {
        ModelFound::Valid(m) => {
            writeln!(
                out,
                "            {} files, {}, from {} logins, last {}",
                m.files.len(),
                mb(m.bytes()),
                m.logins,
                utc(m.updated_unix_s)
            )?;
        }
        ModelFound::None => writeln!(out, "            none yet")?,
        ModelFound::Unusable(e) => writeln!(out, "            unusable: {e}")?,
    }
    writeln!(out, "budget now: {}", mb(s.budget_bytes))?;
    writeln!(
        out,
        "history:    {} logins (learn, prefetch, without prefetch to compare) in {}",
        s.state.boots.len(),
        s.state_file.display()
    )?;
    for b in s.state.boots.iter().rev().take(10).rev() {
        writeln!(
            out,
            "            {}  {:<8} desktop {:>9}",
            utc(b.unix_s),
            b.kind.word_for(&PRELOAD),
            secs(b.login_s)
        )?;
    }
    writeln!(out, "judgement:  {}", s.judgement.describe_for(&PRELOAD))?;
    if let Some(r) = s.judgement.ratio() {
        writeln!(out, "            prefetch / without = {r:.3}")?;
    }
    writeln!(out, "next login: {}", next_login(s.next_login))
}

/// `bootprint preload show`: the model at `path`, a summary line, then every file in
/// prefetch order with its weight, bytes and ranges; `budget` marks where a prefetch now
/// would stop.
pub fn model_text(out: &mut impl Write, path: &Path, m: &Model, budget: u64) -> io::Result<()> {
    writeln!(
        out,
        "{}: {} files, {}, from {} logins, last {}",
        path.display(),
        m.files.len(),
        mb(m.bytes()),
        m.logins,
        utc(m.updated_unix_s)
    )?;
    writeln!(
        out,
        "{:>5} {:>7} {:>10} {:>7}  path",
        "#", "weight", "bytes", "ranges"
    )?;
    let mut total = 0u64;
    let mut marked = false;
    for (i, f) in m.files.iter().enumerate() {
        total = total.saturating_add(f.entry.bytes());
        if total > budget && !marked {
            writeln!(
                out,
                "      --- the budget now ({}) ends here ---",
                mb(budget)
            )?;
            marked = true;
        }
        writeln!(
            out,
            "{:>5} {:>7.3} {:>10} {:>7}  {}",
            i + 1,
            f.weight,
            f.entry.bytes(),
            f.entry.ranges.len(),
            f.entry.path.display()
        )?;
    }
    Ok(())
}

/// What `bootprint preload run` did, as JSON.
pub fn run_json(r: &RunReport) -> Value {
    json!({
        "kind": r.kind.map(|k| k.word_for(&PRELOAD)),
        "budget_bytes": r.budget_bytes,
        "prefetch": r.prefetch.as_ref().map(|p| {
            let mut o = serde_json::Map::new();
            for (k, v) in p.fields() {
                o.insert(k.to_string(), json!(v.parse::<u64>().unwrap_or(0)));
            }
            Value::Object(o)
        }),
        "learned": r.learned.as_ref().map(|l| json!({
            "files": l.files,
            "entries": l.entries,
            "bytes": l.bytes,
            "events": l.events,
            "page_source": l.page_source,
            "overflowed": l.overflowed,
            "duration_s": l.duration.as_secs_f64(),
            "stopped_by": l.stopped_by,
        })),
        "update": r.update.map(|u| json!({
            "added": u.added, "refreshed": u.refreshed, "kept": u.kept, "faded": u.faded,
            "dropped": u.dropped, "unrepresentable": u.unrepresentable, "capped": u.capped,
        })),
        "model_refused": r.model_refused,
        "skipped": r.skipped,
        "model_files": r.model_files,
        "model_bytes": r.model_bytes,
    })
}

/// What `bootprint preload run` did, as text: one line per stage.
pub fn run_text(out: &mut impl Write, r: &RunReport) -> io::Result<()> {
    let Some(kind) = r.kind else {
        let why = r.skipped.unwrap_or("off or switched itself off");
        return writeln!(out, "preload: {why}; nothing done");
    };
    writeln!(
        out,
        "login:    {} (budget {})",
        kind.word_for(&PRELOAD),
        mb(r.budget_bytes)
    )?;
    if let Some(p) = &r.prefetch {
        writeln!(
            out,
            "prefetch: {} from {} files in {:.2} s; skipped {} (changed {}, missing {}, not regular {}, error {}); not reached {}{}",
            mb(p.bytes_requested),
            p.files_read,
            p.duration_ns as f64 / 1e9,
            p.files_skipped,
            p.skipped_changed,
            p.skipped_missing,
            p.skipped_not_regular,
            p.skipped_error,
            p.files_not_reached,
            if p.timed_out { "; timed out" } else { "" }
        )?;
        if p.yielded_ns > 0 || p.others_bytes > 0 {
            writeln!(
                out,
                "yielded:  {:.2} s waiting for idle time, held back {} times ({} for busy CPUs); others moved {} on the disk",
                p.yielded_ns as f64 / 1e9,
                p.yield_waits,
                p.yield_cpu_waits,
                mb(p.others_bytes)
            )?;
        }
    }
    if let Some(l) = &r.learned {
        writeln!(
            out,
            "learned:  {} files opened, {} with pages ({}, {}), {:.1} s, stopped by {}{}",
            l.files,
            l.entries,
            mb(l.bytes),
            l.page_source,
            l.duration.as_secs_f64(),
            l.stopped_by,
            if l.overflowed {
                "; fanotify queue overflowed"
            } else {
                ""
            }
        )?;
    }
    if let Some(why) = &r.model_refused {
        writeln!(
            out,
            "refused:  the model on disk ({why}); learning a new one"
        )?;
    }
    if let Some(u) = &r.update {
        writeln!(
            out,
            "model:    {} files, {}: {} added, {} refreshed, {} kept, {} faded, {} dropped{}",
            r.model_files,
            mb(r.model_bytes),
            u.added,
            u.refreshed,
            u.kept,
            u.faded,
            u.dropped,
            if u.capped > 0 {
                format!(
                    "; {} of least weight left out (the model's limit, {})",
                    u.capped,
                    mb(preload::model::MAX_MODEL_BYTES)
                )
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use preload::model::Decay;
    use readahead::pack::{Entry, Range};
    use readahead::state::{BootKind, BootRecord};
    use std::path::PathBuf;

    fn model() -> Model {
        let e = |p: &str, len: u64| Entry {
            path: PathBuf::from(p),
            ranges: vec![Range { offset: 0, len }],
            ..Entry::default()
        };
        let mut m = Model::default();
        let d = Decay::default();
        m.update(
            &[
                e("/usr/bin/xfce4-panel", 3_000_000),
                e("/usr/lib/libgtk.so", 2_000_000),
            ],
            &d,
            1_795_000_000,
        );
        m.update(&[e("/usr/lib/libgtk.so", 2_000_000)], &d, 1_795_350_000);
        m
    }

    #[test]
    fn status_text_and_json() {
        let m = model();
        let mut st = State::default();
        for (k, t) in [(BootKind::Learn, None), (BootKind::Replay, Some(4.25))] {
            st.push(BootRecord {
                unix_s: 1_795_350_000,
                kind: k,
                login_s: t,
                done_s: None,
            });
        }
        let judged = st.judge();
        let s = Status {
            enabled: true,
            config_file: Path::new("/etc/bootprint/bootprint.toml"),
            state_file: Path::new("/var/lib/bootprint/preload/state"),
            state: &st,
            judgement: &judged,
            model_path: Path::new("/var/lib/bootprint/preload/model"),
            model: ModelFound::Valid(&m),
            budget_bytes: 200_000_000,
            next_login: NextLogin::Control,
        };
        let mut out = Vec::new();
        text(&mut out, &s).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(t.starts_with("preload:    on (in /etc/bootprint/bootprint.toml)\nverdict:    judging itself (auto)\n"), "{t}");
        assert!(
            t.contains("            2 files, 5.0 MB, from 2 logins, last 2026-11-22 12:20 UTC\n"),
            "{t}"
        );
        assert!(t.contains("  prefetch desktop    4.25 s\n"), "{t}");
        assert!(t.contains("  learn    desktop         -\n"), "{t}");
        assert!(t.contains("judgement:  not judged yet: 1 prefetch and 0 comparison logins with a desktop time, 3 of each needed\n"), "{t}");
        assert!(
            t.ends_with("next login: go without prefetch, to compare (and learn)\n"),
            "{t}"
        );
        let j = json(&s);
        assert_eq!(j["model"]["files"], 2);
        assert_eq!(j["history"][1]["kind"], "prefetch");
        assert_eq!(j["history"][1]["desktop_s"], 4.25);
        assert_eq!(j["judgement"]["prefetch_logins"], 1);
        let s = Status {
            model: ModelFound::Unusable("m:3: expected a weight"),
            ..s
        };
        let j = json(&s);
        assert_eq!(j["model"]["valid"], false);
        assert_eq!(j["model"]["error"], "m:3: expected a weight");
    }

    #[test]
    fn model_text_marks_the_budget() {
        let m = model();
        let mut out = Vec::new();
        model_text(&mut out, Path::new("/m"), &m, 2_500_000).unwrap();
        let t = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "/m: 2 files, 5.0 MB, from 2 logins, last 2026-11-22 12:20 UTC"
        );
        assert_eq!(
            lines[2],
            "    1   1.500    2000000       1  /usr/lib/libgtk.so"
        );
        assert!(
            lines[3].contains("the budget now (2.5 MB) ends here"),
            "{t}"
        );
        assert_eq!(
            lines[4],
            "    2   0.500    3000000       1  /usr/bin/xfce4-panel"
        );
    }

    #[test]
    fn a_run_says_how_long_its_prefetch_yielded_the_disk() {
        let mut r = RunReport {
            kind: Some(BootKind::Replay),
            budget_bytes: 100_000_000,
            prefetch: Some(readahead::replay::ReplayStats {
                bytes_requested: 12_300_000,
                files_read: 40,
                duration_ns: 1_200_000_000,
                ..Default::default()
            }),
            ..RunReport::default()
        };
        let text = |r: &RunReport| {
            let mut out = Vec::new();
            run_text(&mut out, r).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert!(!text(&r).contains("yielded"), "{}", text(&r));
        let p = r.prefetch.as_mut().unwrap();
        (p.yielded_ns, p.yield_waits, p.others_bytes) = (3_500_000_000, 7, 45_000_000);
        p.yield_cpu_waits = 2;
        let t = text(&r);
        assert!(
            t.contains("prefetch: 12.3 MB from 40 files in 1.20 s;"),
            "{t}"
        );
        assert!(
            t.contains("yielded:  3.50 s waiting for idle time, held back 7 times (2 for busy CPUs); others moved 45.0 MB on the disk"),
            "{t}"
        );
    }
}
