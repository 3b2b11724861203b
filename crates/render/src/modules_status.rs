//! `bootprint modules status`: the module loader's switch, its own verdict, its judgement,
//! what the next boot does and its history of boots with and without it, as text and JSON.

use std::io::{self, Write};
use std::path::Path;

use readahead::state::{Judgement, State, Verdict, MODULES};
use record::modload::NextBoot;
use serde_json::{json, Value};

/// What `bootprint modules status` shows, gathered by the verb from the configuration and
/// the loader's state file.
#[derive(Debug, Clone, Copy)]
pub struct Status<'a> {
    /// The switch (`[record] modules`).
    pub enabled: bool,
    /// bootprint.toml.
    pub config_file: &'a Path,
    /// The loader's state file.
    pub state_file: &'a Path,
    /// Its state: its verdict and its history.
    pub state: &'a State,
    /// The history judged (`State::judge`).
    pub judgement: &'a Judgement,
    /// What the next boot does.
    pub next_boot: NextBoot,
}

/// What the next boot does, in words.
fn next_boot(n: NextBoot) -> &'static str {
    match n {
        NextBoot::Off => "off (the switch)",
        NextBoot::SwitchedOff => "off (its own verdict)",
        NextBoot::Control => "without the loader, to compare",
        NextBoot::Load => "with the loader",
    }
}

/// The status as JSON.
pub fn json(s: &Status) -> Value {
    json!({
        "enabled": s.enabled,
        "config_file": s.config_file.display().to_string(),
        "state_file": s.state_file.display().to_string(),
        "verdict": match &s.state.verdict {
            Verdict::Auto => json!({"state": "auto"}),
            Verdict::Off { unix_s, reason } => json!({"state": "off", "unix_s": unix_s, "reason": reason}),
        },
        "judgement": s.judgement.describe_for(&MODULES),
        "ratio": s.judgement.ratio(),
        "next_boot": next_boot(s.next_boot),
        "boots": s.state.boots.iter().map(|b| json!({
            "unix_s": b.unix_s, "kind": b.kind.word_for(&MODULES),
            "login_s": b.login_s, "done_s": b.done_s,
        })).collect::<Vec<_>>(),
    })
}

/// The status as text: the switch, the verdict, the judgement, the next boot, then every
/// boot of the history.
pub fn text(out: &mut impl Write, s: &Status) -> io::Result<()> {
    writeln!(
        out,
        "module loader: {} ({})",
        if s.enabled { "on" } else { "off" },
        s.config_file.display()
    )?;
    match &s.state.verdict {
        Verdict::Auto => writeln!(out, "verdict: auto (it judges itself)")?,
        Verdict::Off { reason, .. } => writeln!(out, "verdict: off by itself: {reason}")?,
    }
    writeln!(out, "judgement: {}", s.judgement.describe_for(&MODULES))?;
    writeln!(out, "next boot: {}", next_boot(s.next_boot))?;
    writeln!(out, "history ({}):", s.state_file.display())?;
    let secs = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
    for b in &s.state.boots {
        writeln!(
            out,
            "  {:>12}  {:<8} login {:>8} s  done {:>8} s",
            b.unix_s,
            b.kind.word_for(&MODULES),
            secs(b.login_s),
            secs(b.done_s)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use readahead::state::{BootKind, BootRecord};

    fn state() -> State {
        State {
            verdict: Verdict::Off {
                unix_s: 1_795_350_000,
                reason: "not faster".into(),
            },
            boots: vec![
                BootRecord {
                    unix_s: 1_795_000_000,
                    kind: BootKind::Replay,
                    login_s: Some(9.5),
                    done_s: None,
                },
                BootRecord {
                    unix_s: 1_795_003_600,
                    kind: BootKind::Control,
                    login_s: None,
                    done_s: Some(20.25),
                },
            ],
        }
    }

    fn status<'a>(st: &'a State, j: &'a Judgement) -> Status<'a> {
        Status {
            enabled: false,
            config_file: Path::new("/etc/bootprint.toml"),
            state_file: Path::new("/var/lib/bootprint/modules.state"),
            state: st,
            judgement: j,
            next_boot: NextBoot::Off,
        }
    }

    #[test]
    fn text_shows_switch_verdict_next_boot_and_history() {
        let st = state();
        let j = st.judge();
        let mut out = Vec::new();
        text(&mut out, &status(&st, &j)).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with(
            "module loader: off (/etc/bootprint.toml)\nverdict: off by itself: not faster\n"
        ));
        assert!(
            s.ends_with(
                "next boot: off (the switch)\n\
             history (/var/lib/bootprint/modules.state):\n\
             \x20   1795000000  load     login    9.500 s  done        - s\n\
             \x20   1795003600  control  login        - s  done   20.250 s\n"
            ),
            "{s}"
        );
    }

    #[test]
    fn json_uses_the_loaders_words() {
        let st = state();
        let j = st.judge();
        let v = json(&status(&st, &j));
        assert_eq!(v["enabled"], false);
        assert_eq!(v["verdict"]["state"], "off");
        assert_eq!(v["verdict"]["unix_s"], 1_795_350_000u64);
        assert_eq!(v["boots"][0]["kind"], "load");
        assert_eq!(v["next_boot"], "off (the switch)");
        assert_eq!(v["state_file"], "/var/lib/bootprint/modules.state");
    }
}
