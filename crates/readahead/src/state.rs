//! Readahead's memory across boots: a short history of boot times by kind (learning, with
//! replay, without replay to compare) and its own verdict, so it can find out on each
//! machine whether replay makes boots faster and switch itself off when it does not.
//!
//! The file (`/var/lib/bootprint/readahead.state`) is text, one record per line, so an
//! admin can read it:
//!
//! ```text
//! # bootprint readahead state
//! version 1
//! verdict auto
//! boot 1795000000 learn 31.204 35.880
//! boot 1795000100 replay 29.950 33.120
//! boot 1795000200 control 31.010 -
//! ```
//!
//! `verdict off <unix seconds> <reason...>` when it switched itself off. A `boot` line is
//! `unix seconds`, kind, seconds to the text login and to boot done (`-`: not seen).
//!
//! Every lever that judges itself keeps this history ([`Lever`]): readahead
//! ([`READAHEAD`], the kind `replay`), the module loader ([`MODULES`],
//! `/var/lib/bootprint/modules.state`, the kind `load`), the init script runner ([`RC`],
//! `rc.state`, `run`) and systemd's late units ([`LATE`], `late.state`, `defer`); only the
//! word for "the lever ran" and the header differ.

use std::fmt;
use std::io;
use std::path::Path;

use crate::{Error, ErrorKind};

/// How many boots the history keeps (oldest dropped first).
pub const HISTORY_MAX: usize = 40;
/// The largest state file read: [`HISTORY_MAX`] boots take a few KiB.
pub const MAX_STATE_BYTES: u64 = 1 << 20;
/// Boots of each kind needed before replay is judged.
pub const MIN_EACH: usize = 3;
/// The most recent boots of each kind that are judged.
pub const WINDOW: usize = 5;

/// A lever that judges itself by its history: the words of its state file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lever {
    /// Its name (`readahead`, `modules`), in the file's first line.
    pub name: &'static str,
    /// The kind of a boot on which it ran (`replay`, `load`).
    pub on: &'static str,
    /// How the verdict's sentence names it running (`replay`, `the loader`).
    pub running: &'static str,
    /// Where it is documented.
    pub doc: &'static str,
    /// What one record is (`boot`; preload's: `login`): the word starting a record's line
    /// and, with an `s`, how the verdict's sentence counts them.
    pub record: &'static str,
    /// The milestone whose time is judged (`login`; preload's: `desktop`).
    pub what: &'static str,
}

/// Readahead: a boot replays the pack, learns one, or boots without it to compare.
pub const READAHEAD: Lever = Lever {
    name: "readahead",
    on: "replay",
    running: "replay",
    doc: "docs/readahead.md",
    record: "boot",
    what: "login",
};

/// The module loader (`bootprint.modules=1`): a boot runs it, or leaves coldplug to udev
/// alone to compare.
pub const MODULES: Lever = Lever {
    name: "modules",
    on: "load",
    running: "the loader",
    doc: "docs/modules.md",
    record: "boot",
    what: "login",
};

/// The init script runner (`bootprint.rc=1`): a boot runs its scripts through it, or
/// through Debian's startpar to compare.
pub const RC: Lever = Lever {
    name: "rc",
    on: "run",
    running: "the runner",
    doc: "docs/rc.md",
    record: "boot",
    what: "login",
};

/// systemd's late units (`bootprint.late=1`): a boot defers the learned units, or starts
/// every unit as systemd orders it to compare.
pub const LATE: Lever = Lever {
    name: "late",
    on: "defer",
    running: "deferring units",
    doc: "docs/systemd.md",
    record: "boot",
    what: "login",
};

/// What the lever did on one boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootKind {
    /// Readahead: no valid pack, learned one.
    Learn,
    /// The lever ran (readahead replayed its pack; the module loader loaded).
    Replay,
    /// It could have run but did not, to compare.
    Control,
}

impl BootKind {
    /// Readahead's word in the state file and the trace.
    pub fn word(self) -> &'static str {
        self.word_for(&READAHEAD)
    }

    /// The word in `lever`'s state file.
    pub fn word_for(self, lever: &Lever) -> &'static str {
        match self {
            BootKind::Learn => "learn",
            BootKind::Replay => lever.on,
            BootKind::Control => "control",
        }
    }

    fn parse(w: &str, lever: &Lever) -> Option<BootKind> {
        match w {
            "learn" => Some(BootKind::Learn),
            "control" => Some(BootKind::Control),
            w if w == lever.on => Some(BootKind::Replay),
            _ => None,
        }
    }
}

/// One boot in the history.
#[derive(Debug, Clone, PartialEq)]
pub struct BootRecord {
    /// When it was recorded (seconds since the Unix epoch, at boot done).
    pub unix_s: u64,
    /// What readahead did.
    pub kind: BootKind,
    /// Seconds from power-on (the kernel's clock) to the text login.
    pub login_s: Option<f64>,
    /// Seconds to boot done.
    pub done_s: Option<f64>,
}

/// Whether readahead may run, by its own judgement (the admin's switch is the config file).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Verdict {
    /// It runs and keeps judging itself.
    #[default]
    Auto,
    /// It switched itself off: when and why.
    Off {
        /// Seconds since the Unix epoch.
        unix_s: u64,
        /// The figures that decided it.
        reason: String,
    },
}

/// What a lever that learns on its first boot does on this boot, by its own verdict and
/// history ([`State::this_boot`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ThisBoot {
    /// It switched itself off: why.
    SwitchedOff(String),
    /// It does not act, so this boot compares.
    Control,
    /// It acts; `learn`: for the first time (no boot of its history learned or ran it).
    Run {
        /// The first boot with it.
        learn: bool,
    },
}

/// The whole state file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct State {
    /// Its own verdict.
    pub verdict: Verdict,
    /// Oldest first.
    pub boots: Vec<BootRecord>,
}

/// A state file that does not parse: where, and what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct StateError {
    /// The file.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// What was expected there.
    pub expected: String,
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: expected {}", self.file, self.line, self.expected)
    }
}

impl std::error::Error for StateError {}

/// Replay judged against boots without it.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// Median seconds to login of the last [`WINDOW`] replay boots, with how many there were.
    pub replay: Option<(f64, usize)>,
    /// The same for the boots without replay (control boots).
    pub control: Option<(f64, usize)>,
}

impl Judgement {
    /// Enough boots of both kinds to judge.
    pub fn ready(&self) -> bool {
        matches!((self.replay, self.control), (Some((_, r)), Some((_, c))) if r >= MIN_EACH && c >= MIN_EACH)
    }

    /// Replay over control (below 1: replay is faster), when ready.
    pub fn ratio(&self) -> Option<f64> {
        match (self.ready(), self.replay, self.control) {
            (true, Some((r, _)), Some((c, _))) if c > 0.0 => Some(r / c),
            _ => None,
        }
    }

    /// Replay does not make boots faster here: its median time to login is no shorter than
    /// without it.
    pub fn not_faster(&self) -> bool {
        self.ratio().is_some_and(|r| r >= 1.0)
    }

    /// The sentence the trace and `bootprint readahead status` show.
    pub fn describe(&self) -> String {
        self.describe_for(&READAHEAD)
    }

    /// [`Judgement::describe`] for `lever`.
    pub fn describe_for(&self, lever: &Lever) -> String {
        let mut s = String::new();
        if let (Some((r, nr)), Some((c, nc))) = (self.replay, self.control) {
            let (what, n) = (lever.what, lever.record);
            s = format!(
                "median time to {what} with {} {r:.3} s ({nr} {n}s), without {c:.3} s ({nc} {n}s)",
                lever.running
            );
        }
        if !self.ready() {
            if !s.is_empty() {
                s.push_str("; ");
            }
            s.push_str(&format!(
                "not judged yet: {} {} and {} comparison {}s with a {} time, {MIN_EACH} of each needed",
                self.replay.map_or(0, |x| x.1),
                lever.on,
                self.control.map_or(0, |x| x.1),
                lever.record,
                lever.what,
            ));
        }
        s
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

impl State {
    /// Parses readahead's state file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<State, StateError> {
        State::parse_for(text, file, &READAHEAD)
    }

    /// Parses `lever`'s state file's text; `file` names it in errors.
    pub fn parse_for(text: &str, file: &str, lever: &Lever) -> Result<State, StateError> {
        let mut st = State::default();
        let mut seen_version = false;
        for (i, raw) in text.lines().enumerate() {
            let err = |expected: &str| StateError {
                file: file.to_string(),
                line: i + 1,
                expected: expected.to_string(),
            };
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut w = line.split_whitespace();
            match w.next() {
                Some("version") => {
                    if w.next() != Some("1") {
                        return Err(err("`version 1`"));
                    }
                    seen_version = true;
                }
                Some("verdict") => {
                    st.verdict = match w.next() {
                        Some("auto") => Verdict::Auto,
                        Some("off") => {
                            let unix_s = w
                                .next()
                                .and_then(|s| s.parse().ok())
                                .ok_or_else(|| err("`verdict off <unix seconds> <reason>`"))?;
                            Verdict::Off {
                                unix_s,
                                reason: w.collect::<Vec<_>>().join(" "),
                            }
                        }
                        _ => return Err(err("`verdict auto` or `verdict off ...`")),
                    }
                }
                Some(word) if word == lever.record => {
                    let bad = format!(
                        "`{} <unix seconds> learn|{}|control <{} s|-> <done s|->`",
                        lever.record, lever.on, lever.what
                    );
                    let bad = bad.as_str();
                    let unix_s = w
                        .next()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| err(bad))?;
                    let kind = w
                        .next()
                        .and_then(|k| BootKind::parse(k, lever))
                        .ok_or_else(|| err(bad))?;
                    let mut secs = || -> Result<Option<f64>, StateError> {
                        match w.next() {
                            Some("-") => Ok(None),
                            Some(s) => match s.parse::<f64>() {
                                Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
                                _ => Err(err(bad)),
                            },
                            None => Err(err(bad)),
                        }
                    };
                    let login_s = secs()?;
                    let done_s = secs()?;
                    st.boots.push(BootRecord {
                        unix_s,
                        kind,
                        login_s,
                        done_s,
                    });
                }
                _ => {
                    return Err(err(&format!(
                        "`version`, `verdict` or `{}` at the start of the line",
                        lever.record
                    )))
                }
            }
        }
        if !seen_version && !st.boots.is_empty() {
            return Err(StateError {
                file: file.to_string(),
                line: 1,
                expected: "a `version 1` line".into(),
            });
        }
        Ok(st)
    }

    /// Readahead's file's text.
    pub fn to_text(&self) -> String {
        self.to_text_for(&READAHEAD)
    }

    /// `lever`'s file's text.
    pub fn to_text_for(&self, lever: &Lever) -> String {
        let mut s = format!(
            "# bootprint {} state ({})\nversion 1\n",
            lever.name, lever.doc
        );
        match &self.verdict {
            Verdict::Auto => s.push_str("verdict auto\n"),
            Verdict::Off { unix_s, reason } => {
                s.push_str(&format!("verdict off {unix_s} {}\n", one_line(reason)))
            }
        }
        let secs = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
        for b in &self.boots {
            s.push_str(&format!(
                "{} {} {} {} {}\n",
                lever.record,
                b.unix_s,
                b.kind.word_for(lever),
                secs(b.login_s),
                secs(b.done_s)
            ));
        }
        s
    }

    /// Reads readahead's state file; a missing file is the empty state. Only a regular file
    /// of at most [`MAX_STATE_BYTES`] is read. The error's [`ErrorKind`]: a bad file (it does
    /// not parse, or is too big), unsafe (not a regular file) or I/O.
    pub fn load(path: &Path) -> Result<State, Error> {
        State::load_for(path, &READAHEAD)
    }

    /// [`State::load`] for `lever`'s state file.
    pub fn load_for(path: &Path, lever: &Lever) -> Result<State, Error> {
        // Read at boot by PID 1: a FIFO must not block it, a huge file must not be loaded.
        match sys::read_regular_text(path, MAX_STATE_BYTES) {
            Ok(text) => Ok(State::parse_for(&text, &path.display().to_string(), lever)?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(State::default()),
            Err(e) => {
                let kind = match e.kind() {
                    // Too big, or not text.
                    io::ErrorKind::InvalidData => ErrorKind::BadFile,
                    // Not a regular file: a FIFO or a device planted there.
                    io::ErrorKind::InvalidInput => ErrorKind::Unsafe,
                    _ => ErrorKind::Io,
                };
                let unreadable = StateError {
                    file: path.display().to_string(),
                    line: 0,
                    expected: format!("a readable file ({e})"),
                };
                Err(Error::from(unreadable).of_kind(kind))
            }
        }
    }

    /// Writes readahead's state file atomically (temporary file, fsync, rename), mode 0644.
    /// The error's text is the I/O error's alone.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        self.save_for(path, &READAHEAD)
    }

    /// [`State::save`] for `lever`'s state file.
    pub fn save_for(&self, path: &Path, lever: &Lever) -> Result<(), Error> {
        sys::write_atomic(path, self.to_text_for(lever).as_bytes()).map_err(|e| Error::io(path, e))
    }

    /// Adds a boot, dropping the oldest beyond [`HISTORY_MAX`].
    pub fn push(&mut self, rec: BootRecord) {
        self.boots.push(rec);
        if self.boots.len() > HISTORY_MAX {
            let extra = self.boots.len() - HISTORY_MAX;
            self.boots.drain(..extra);
        }
    }

    /// With a valid pack, whether this boot replays it or boots without it to compare.
    /// Until there are [`MIN_EACH`] comparison boots, replay and comparison alternate (so a
    /// verdict comes after a few boots); after that every `compare_every`th boot compares
    /// (0: never compare).
    pub fn next_kind(&self, compare_every: u32) -> BootKind {
        if compare_every == 0 {
            return BootKind::Replay;
        }
        let controls = self
            .boots
            .iter()
            .filter(|b| b.kind == BootKind::Control)
            .count();
        let trailing_replays = self
            .boots
            .iter()
            .rev()
            .take_while(|b| b.kind == BootKind::Replay)
            .count();
        if trailing_replays == 0 {
            return BootKind::Replay;
        }
        if controls < MIN_EACH || trailing_replays + 1 >= compare_every as usize {
            BootKind::Control
        } else {
            BootKind::Replay
        }
    }

    /// The rule of the levers that decide before they act (the module loader, the runner,
    /// late units): off by its own verdict; its first boot learns; then a boot compares when
    /// [`State::next_kind`] says so, unless `others_compare` (another lever learns or
    /// compares on this boot: one at a time leaves its usual way).
    pub fn this_boot(&self, compare_every: u32, others_compare: bool) -> ThisBoot {
        if let Verdict::Off { reason, .. } = &self.verdict {
            return ThisBoot::SwitchedOff(reason.clone());
        }
        let learn = !self
            .boots
            .iter()
            .any(|b| matches!(b.kind, BootKind::Learn | BootKind::Replay));
        if !learn && !others_compare && self.next_kind(compare_every) == BootKind::Control {
            return ThisBoot::Control;
        }
        ThisBoot::Run { learn }
    }

    /// Adds a record and judges the history again: when the lever has been judged not to make
    /// its records faster (and it compares at all: `compare_every` > 0), switches it off and
    /// returns the reason. The rule every self-judging lever follows (the recorder's for
    /// readahead and the module loader, preload's for itself).
    pub fn push_and_judge(
        &mut self,
        rec: BootRecord,
        lever: &Lever,
        compare_every: u32,
        now_unix_s: u64,
    ) -> Option<String> {
        self.push(rec);
        let judged = self.judge();
        if self.verdict != Verdict::Auto || compare_every == 0 || !judged.not_faster() {
            return None;
        }
        let reason = format!(
            "{} does not make {}s faster here: {}",
            lever.running,
            lever.record,
            judged.describe_for(lever)
        );
        self.verdict = Verdict::Off {
            unix_s: now_unix_s,
            reason: reason.clone(),
        };
        Some(reason)
    }

    /// Replay boots against comparison boots: medians of the last [`WINDOW`] of each that
    /// reached the login.
    pub fn judge(&self) -> Judgement {
        let last = |kind: BootKind| -> Option<(f64, usize)> {
            let v: Vec<f64> = self
                .boots
                .iter()
                .rev()
                .filter(|b| b.kind == kind)
                .filter_map(|b| b.login_s)
                .take(WINDOW)
                .collect();
            let n = v.len();
            median(v).map(|m| (m, n))
        };
        Judgement {
            replay: last(BootKind::Replay),
            control: last(BootKind::Control),
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: BootKind, login: f64) -> BootRecord {
        BootRecord {
            unix_s: 1_795_000_000,
            kind,
            login_s: Some(login),
            done_s: None,
        }
    }

    #[test]
    fn round_trip() {
        let mut st = State::default();
        st.push(rec(BootKind::Learn, 31.2));
        st.push(BootRecord {
            unix_s: 7,
            kind: BootKind::Replay,
            login_s: None,
            done_s: Some(40.5),
        });
        st.verdict = Verdict::Off {
            unix_s: 9,
            reason: "slower\nby far".into(),
        };
        let text = st.to_text();
        let back = State::parse(&text, "s").unwrap();
        assert_eq!(back.boots, st.boots);
        assert_eq!(
            back.verdict,
            Verdict::Off {
                unix_s: 9,
                reason: "slower by far".into()
            }
        );
        assert_eq!(back.to_text(), text);
    }

    /// The module loader's history: `load` where readahead says `replay`; neither reads
    /// the other's word.
    #[test]
    fn another_lever_has_its_own_words() {
        let mut st = State::default();
        st.push(rec(BootKind::Replay, 9.1));
        st.push(rec(BootKind::Control, 8.7));
        let text = st.to_text_for(&MODULES);
        assert!(
            text.starts_with("# bootprint modules state (docs/modules.md)\n"),
            "{text}"
        );
        assert!(
            text.contains(" load 9.100 ") && !text.contains("replay"),
            "{text}"
        );
        assert_eq!(
            State::parse_for(&text, "m", &MODULES).unwrap().boots,
            st.boots
        );
        let e = State::parse(&text, "m").unwrap_err();
        assert!(e.expected.contains("learn|replay|control"), "{e}");
        let j = st.judge();
        assert!(
            j.describe_for(&MODULES).contains("1 load and 1 comparison"),
            "{}",
            j.describe_for(&MODULES)
        );
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = State::parse("version 1\nboot 5 replay 1.0\n", "/var/lib/x").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.to_string().starts_with("/var/lib/x:2: expected `boot"),
            "{e}"
        );
        let e = State::parse("version 2\n", "f").unwrap_err();
        assert_eq!((e.line, e.expected.as_str()), (1, "`version 1`"));
        let e = State::parse("version 1\nboot 5 sometimes 1 2\n", "f").unwrap_err();
        assert_eq!(e.line, 2);
        let e = State::parse("version 1\nboot 5 replay -3 2\n", "f").unwrap_err();
        assert_eq!(e.line, 2);
        let e = State::parse("boot 5 replay 1 2\n", "f").unwrap_err();
        assert!(e.expected.contains("version"), "{e}");
        let e = State::parse("version 1\nverdict maybe\n", "f").unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(State::parse("", "f").unwrap(), State::default());
    }

    #[test]
    fn history_is_bounded() {
        let mut st = State::default();
        for i in 0..HISTORY_MAX + 7 {
            st.push(rec(BootKind::Replay, i as f64));
        }
        assert_eq!(st.boots.len(), HISTORY_MAX);
        assert_eq!(st.boots[0].login_s, Some(7.0), "the oldest went first");
    }

    #[test]
    fn alternates_until_enough_comparisons_then_every_nth() {
        let mut st = State::default();
        st.push(rec(BootKind::Learn, 30.0));
        let mut kinds = vec![];
        for _ in 0..16 {
            let k = st.next_kind(5);
            kinds.push(k.word());
            st.push(rec(k, 30.0));
        }
        assert_eq!(
            kinds,
            [
                "replay", "control", "replay", "control", "replay", "control", // alternate
                "replay", "replay", "replay", "replay", "control", // every 5th
                "replay", "replay", "replay", "replay", "control",
            ]
        );
        assert_eq!(st.next_kind(0), BootKind::Replay, "0: never compare");
    }

    #[test]
    fn judges_medians_of_the_last_boots() {
        let mut st = State::default();
        for (k, t) in [
            (BootKind::Replay, 20.0),
            (BootKind::Control, 30.0),
            (BootKind::Replay, 21.0),
        ] {
            st.push(rec(k, t));
        }
        let j = st.judge();
        assert!(!j.ready());
        assert!(!j.not_faster());
        assert!(
            j.describe().contains("2 replay and 1 comparison"),
            "{}",
            j.describe()
        );
        for (k, t) in [
            (BootKind::Control, 31.0),
            (BootKind::Replay, 50.0),
            (BootKind::Control, 29.0),
        ] {
            st.push(rec(k, t));
        }
        let j = st.judge();
        assert!(j.ready());
        assert_eq!(j.replay, Some((21.0, 3)));
        assert_eq!(j.control, Some((30.0, 3)));
        assert!((j.ratio().unwrap() - 0.7).abs() < 1e-9);
        assert!(!j.not_faster());
        // Later replay boots get slower: only the last WINDOW count.
        for _ in 0..WINDOW {
            st.push(rec(BootKind::Replay, 33.0));
        }
        let j = st.judge();
        assert_eq!(j.replay, Some((33.0, WINDOW)));
        assert!(j.not_faster());
        // A boot that never reached the login is not counted.
        st.push(BootRecord {
            login_s: None,
            ..rec(BootKind::Control, 0.0)
        });
        assert_eq!(st.judge().control, Some((30.0, 3)));
    }
}
