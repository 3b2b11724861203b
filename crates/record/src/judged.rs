//! The levers that act after init was exec'd and judge themselves all the same: the init
//! script runner (`bootprint.rc=1`, on sysvinit) and systemd's late units
//! (`bootprint.late=1`). Like readahead and the module loader, each keeps a history of boots
//! with and without it (`readahead::state`, [`RC`] and [`LATE`]) and switches itself off
//! where it does not make the login sooner.
//!
//! The lever runs in another process (the startpar wrapper asks `bootprint-boot rc
//! --enabled`; the late generator runs under systemd), so bootprint-boot decides at PID 1,
//! before init is exec'd ([`prepare`]), and writes what the others must not do this boot to
//! [`MARK`]: one line `LEVER control` (this boot compares without it) or `LEVER off` (it
//! switched itself off). /run is a fresh tmpfs every boot, so the mark never outlives its
//! boot. At boot done the recorder checks what the boot really did (the runner's log, the
//! late log: [`Acted`]) before the boot joins the history ([`Boot::finish`]): a mark the
//! others could not see, or a runner that fell back to startpar, says nothing about the
//! lever, and that boot is left out.

use std::path::Path;

use readahead::state::{BootKind, Lever, State, ThisBoot, MODULES, READAHEAD};
/// The two levers judged here.
pub use readahead::state::{LATE, RC};
use trace::Event;

use crate::config::Config;
use crate::readahead::{history_aside, record_history, Judge, Milestones};

/// What the levers acting after init must not do on this boot.
pub const MARK: &str = "/run/bootprint/levers";

/// What one of these levers does on this boot.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Plan {
    /// Its switch is off, or it does not apply to this init (the runner on systemd, late
    /// units on sysvinit).
    #[default]
    Off,
    /// It switched itself off on an earlier boot: why.
    SwitchedOff(String),
    /// It does not act, so this boot compares.
    Control,
    /// It acts; `learn`: for the first time (nothing learned yet, not judged); `aside`:
    /// another lever compared on this boot, so it is not judged either.
    Run {
        /// The first boot with it.
        learn: bool,
        /// Why this boot stays out of the history.
        aside: Option<String>,
    },
}

/// The lever of this boot (at most one: the init decides which) and its plan.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Boot {
    /// [`RC`] or [`LATE`]; `None`: neither applies.
    pub lever: Option<&'static Lever>,
    /// What it does.
    pub plan: Plan,
    /// The plan needed the mark and it could not be written: why.
    pub unmarked: Option<String>,
}

/// What the boot shows the lever did, read at boot done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acted {
    /// The lever acted: the runner ran the scripts (its log exists), or the generator
    /// deferred units (`late_planned` in the late log).
    pub acted: bool,
    /// The mark is still there for the others to read.
    pub marked: bool,
}

impl Boot {
    /// A comparison boot: the lever does not act.
    pub fn is_control(&self) -> bool {
        self.plan == Plan::Control
    }
}

/// The lever that applies to `init` (the program PID 1 execs) with its switch on: late units
/// when `init` is systemd (a link to it, as Debian's /sbin/init is with systemd-sysv), the
/// runner otherwise.
pub fn lever_for(config: &Config, init: &Path) -> Option<&'static Lever> {
    let real = std::fs::canonicalize(init).unwrap_or_else(|_| init.to_path_buf());
    let systemd = real.file_name().is_some_and(|n| n == "systemd");
    match (systemd, config.rc, config.late) {
        (true, _, true) => Some(&LATE),
        (false, true, _) => Some(&RC),
        _ => None,
    }
}

/// The history file and compare period of a lever that judges itself (readahead, the
/// module loader, the runner, late units), from the configuration; `None` for another.
/// `bootprint status` and `enable` read the same.
pub fn history_of<'a>(config: &'a Config, lever: &Lever) -> Option<(&'a Path, u32)> {
    Some(match lever.name {
        n if n == READAHEAD.name => (&config.readahead_state, config.readahead_compare_every),
        n if n == MODULES.name => (&config.modules_state, config.modules_compare_every),
        n if n == RC.name => (&config.rc_state, config.rc_compare_every),
        n if n == LATE.name => (&config.late_history, config.late_compare_every),
        _ => return None,
    })
}

/// [`history_of`] for the two levers judged here.
fn settings<'a>(config: &'a Config, lever: &Lever) -> (&'a Path, u32) {
    history_of(config, lever).unwrap_or((&config.rc_state, config.rc_compare_every))
}

/// The plan from the lever's history (an unreadable state counts as empty; it is rewritten
/// at boot done) by the rule the module loader follows too ([`State::this_boot`]).
/// `others_compare`: another lever learns or compares on this boot, so this one acts and the
/// boot is not judged.
pub fn plan(config: &Config, lever: &Lever, others_compare: Option<&str>) -> Plan {
    let (path, compare_every) = settings(config, lever);
    let state = State::load_for(path, lever).unwrap_or_default();
    match state.this_boot(compare_every, others_compare.is_some()) {
        ThisBoot::SwitchedOff(reason) => Plan::SwitchedOff(reason),
        ThisBoot::Control => Plan::Control,
        ThisBoot::Run { learn } => Plan::Run {
            learn,
            aside: others_compare.map(String::from),
        },
    }
}

/// Whether /run is a file system of this boot (a tmpfs or ramfs an initramfs mounted), so a
/// mark written there now is seen by this boot only. Without an initramfs /run is the root's
/// own directory until init mounts a tmpfs over it: a mark there would hide from the late
/// readers, or outlive its boot.
pub fn run_is_fresh() -> bool {
    use sys::fs_magic::{RAMFS, TMPFS};
    sys::statfs(Path::new("/run")).is_ok_and(|s| s.fs_type == TMPFS || s.fs_type == RAMFS)
}

/// At PID 1, before init: which lever applies, its plan, and the mark at `mark` ([`MARK`];
/// `None`: no fresh /run to write it in, [`run_is_fresh`]) when it must not act. A mark
/// that cannot be written turns a comparison into a boot with the lever, not judged (the
/// others would not know to hold back).
pub fn prepare(
    config: &Config,
    init: &Path,
    others_compare: Option<&str>,
    mark: Option<&Path>,
) -> Boot {
    let Some(lever) = lever_for(config, init) else {
        return Boot::default();
    };
    let mut plan = plan(config, lever, others_compare);
    let word = match plan {
        Plan::Control => "control",
        Plan::SwitchedOff(_) => "off",
        _ => {
            return Boot {
                lever: Some(lever),
                plan,
                unmarked: None,
            }
        }
    };
    let line = format!("{} {word}\n", lever.name);
    let unmarked = match mark {
        None => Some("/run is not a tmpfs of this boot (no initramfs mounted one)".to_string()),
        Some(mark) => mark
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| sys::write_atomic(mark, line.as_bytes()))
            .err()
            .map(|e| format!("cannot write {}: {e}", mark.display())),
    };
    if unmarked.is_some() && plan == Plan::Control {
        plan = Plan::Run {
            learn: false,
            aside: Some("its comparison could not be marked".into()),
        };
    }
    Boot {
        lever: Some(lever),
        plan,
        unmarked,
    }
}

/// Whether `lever` must not act on this boot, by the mark at `mark`: `Some("control")` or
/// `Some("off")`; `None` (act as configured) when the mark says nothing about it or cannot
/// be read. What the startpar wrapper and the late generator ask.
pub fn held_back(mark: &Path, lever: &Lever) -> Option<&'static str> {
    let text = std::fs::read_to_string(mark).ok()?;
    text.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        if w.next() != Some(lever.name) {
            return None;
        }
        match w.next() {
            Some("control") => Some("control"),
            Some("off") => Some("off"),
            _ => None,
        }
    })
}

impl Boot {
    /// At boot done (the recorder): this boot in the lever's history, judged, unless what the
    /// boot did (`acted`) says the plan did not hold; events say which.
    pub fn finish(self, events: &mut Vec<Event>, config: &Config, acted: Acted, seen: Milestones) {
        let Some(lever) = self.lever else {
            return;
        };
        let now = sys::boottime_ns();
        let name = lever.name;
        if let Some(why) = &self.unmarked {
            events.push(Event::new(now, "warning").with("what", format!("{name}: {why}")));
        }
        let aside =
            |events: &mut Vec<Event>, kind, why: &str| history_aside(events, now, lever, kind, why);
        let kind = match self.plan {
            Plan::Off => return,
            Plan::SwitchedOff(reason) => {
                events.push(
                    Event::new(now, &format!("{name}_off"))
                        .with("by", "itself")
                        .with("reason", reason),
                );
                if acted.acted {
                    events.push(Event::new(now, "warning").with(
                        "what",
                        format!("{name}: switched itself off, yet it acted on this boot"),
                    ));
                }
                return;
            }
            Plan::Control => {
                events.push(Event::new(now, &format!("{name}_control")));
                if !acted.marked || acted.acted {
                    let why = if acted.marked {
                        "it acted on its comparison boot"
                    } else {
                        "the comparison's mark was gone at boot done"
                    };
                    aside(events, BootKind::Control, why);
                    return;
                }
                BootKind::Control
            }
            Plan::Run { learn, aside: why } => {
                let kind = if learn {
                    BootKind::Learn
                } else {
                    BootKind::Replay
                };
                // A learning boot is not judged anyway: it is recorded whatever it did.
                if !learn {
                    if let Some(why) = why {
                        aside(events, kind, &why);
                        return;
                    }
                    if !acted.acted {
                        aside(events, kind, not_acted(lever));
                        return;
                    }
                }
                kind
            }
        };
        let (path, compare_every) = settings(config, lever);
        let judge = Judge {
            lever,
            path,
            compare_every,
        };
        record_history(events, &judge, kind, seen);
    }
}

/// Why a boot meant to use the lever says nothing about it.
fn not_acted(lever: &Lever) -> &'static str {
    if lever.name == RC.name {
        "the runner did not run the scripts (startpar did)"
    } else {
        "no unit was deferred"
    }
}

/// What the boot shows the lever did: the runner's log exists (`rc_log`), or the late log
/// (`late_log`) says units were deferred; and whether the mark is still there.
pub fn acted(lever: &Lever, rc_log: &Path, late_log: &Path, mark: &Path) -> Acted {
    let acted = if lever.name == RC.name {
        rc_log.exists()
    } else {
        std::fs::read_to_string(late_log).is_ok_and(|t| {
            t.lines()
                .any(|l| l.split_whitespace().nth(1) == Some("late_planned"))
        })
    };
    Acted {
        acted,
        marked: held_back(mark, lever).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use readahead::state::{BootRecord, Verdict};

    fn config(dir: &Path) -> Config {
        Config {
            rc: true,
            rc_state: dir.join("rc.state"),
            late_history: dir.join("late.state"),
            ..Config::default()
        }
    }

    /// The lever acts on this boot, which is not judged.
    fn runs_aside(b: &Boot) -> bool {
        matches!(
            b.plan,
            Plan::Run {
                learn: false,
                aside: Some(_)
            }
        )
    }

    #[test]
    fn the_init_decides_the_lever() {
        let dir = tempfile::tempdir().unwrap();
        let systemd = dir.path().join("systemd");
        std::fs::write(&systemd, "").unwrap();
        let init = dir.path().join("init");
        std::os::unix::fs::symlink(&systemd, &init).unwrap();
        let sysv = dir.path().join("sysvinit");
        std::fs::write(&sysv, "").unwrap();
        let mut c = config(dir.path());
        assert_eq!(lever_for(&c, &sysv), Some(&RC));
        // rc on, late off: nothing on systemd.
        assert_eq!(lever_for(&c, &init), None);
        c.late = true;
        assert_eq!(lever_for(&c, &init), Some(&LATE));
        c.rc = false;
        assert_eq!(lever_for(&c, &sysv), None);
    }

    #[test]
    fn a_comparison_is_marked_for_the_others_and_a_mark_not_written_is_no_comparison() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path());
        let sysv = dir.path().join("sbin-init");
        std::fs::write(&sysv, "").unwrap();
        let mut st = State::default();
        for kind in [BootKind::Learn, BootKind::Replay] {
            st.push(BootRecord {
                unix_s: 1,
                kind,
                login_s: Some(10.0),
                done_s: None,
            });
        }
        st.save_for(&c.rc_state, &RC).unwrap();
        let mark = dir.path().join("run/bootprint/levers");
        let b = prepare(&c, &sysv, None, Some(&mark));
        assert_eq!(b.plan, Plan::Control);
        assert_eq!(held_back(&mark, &RC), Some("control"));
        assert_eq!(held_back(&mark, &LATE), None);
        // Another lever compares: this one runs, aside.
        std::fs::remove_file(&mark).unwrap();
        let b = prepare(
            &c,
            &sysv,
            Some("readahead compared on this boot"),
            Some(&mark),
        );
        assert!(runs_aside(&b), "{b:?}");
        assert!(!mark.exists());
        // A mark that cannot be written (its directory is a file).
        let blocked = dir.path().join("file");
        std::fs::write(&blocked, "").unwrap();
        let b = prepare(&c, &sysv, None, Some(&blocked.join("levers")));
        assert!(runs_aside(&b), "{b:?}");
        assert!(b.unmarked.is_some());
        // No fresh /run: no comparison either.
        let b = prepare(&c, &sysv, None, None);
        assert!(runs_aside(&b), "{b:?}");
        assert!(b.unmarked.unwrap().contains("not a tmpfs"));
    }

    /// The whole cycle with the boot's own evidence: the runner made slow switches itself
    /// off once it has three boots of each kind, and a boot whose runner fell back to
    /// startpar, or whose mark vanished, is not counted.
    #[test]
    fn a_slow_runner_judges_itself_off() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path());
        let sysv = dir.path().join("sbin-init");
        std::fs::write(&sysv, "").unwrap();
        let mark = dir.path().join("levers");
        let mut kinds = Vec::new();
        for boot in 0..12 {
            let _ = std::fs::remove_file(&mark);
            let b = prepare(&c, &sysv, None, Some(&mark));
            let mut events = Vec::new();
            let (acted, login) = match &b.plan {
                Plan::Control => (false, 10.0),
                Plan::Run { .. } => (true, 14.0),
                Plan::SwitchedOff(_) => (false, 10.0),
                Plan::Off => unreachable!(),
            };
            // Boot 3 (a run): the runner fell back to startpar.
            let acted = acted && boot != 3;
            let seen = Milestones {
                login_ns: Some((login * 1e9) as u64),
                done_ns: None,
            };
            let switched = matches!(b.plan, Plan::SwitchedOff(_));
            let a = Acted {
                acted,
                marked: held_back(&mark, &RC).is_some(),
            };
            b.finish(&mut events, &c, a, seen);
            if switched {
                assert!(events.iter().any(|e| e.kind == "rc_off"), "{events:?}");
                break;
            }
            if boot == 3 {
                assert!(events.iter().any(|e| e.kind == "rc_history"
                    && e.fields.iter().any(|(k, v)| k == "counted" && v == "0")));
            }
            for e in events.iter().filter(|e| e.kind == "rc_history") {
                let get = |key: &str| {
                    e.fields
                        .iter()
                        .find(|(k, _)| k == key)
                        .map(|(_, v)| v.clone())
                };
                let aside = if get("counted").is_some() { "*" } else { "" };
                kinds.push(format!("{}{aside}", get("kind").unwrap()));
            }
        }
        let st = State::load_for(&c.rc_state, &RC).unwrap();
        assert!(matches!(st.verdict, Verdict::Off { .. }), "{st:?}");
        assert_eq!(
            kinds,
            ["learn", "run", "control", "run*", "run", "control", "run", "control"],
            "the learning boot, then alternating until three of each; boot 3's run not counted"
        );
    }

    /// A verdict off is marked every boot, so the wrapper keeps the runner out, and each
    /// boot's trace says why.
    #[test]
    fn a_verdict_off_is_marked_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(dir.path());
        let sysv = dir.path().join("sbin-init");
        std::fs::write(&sysv, "").unwrap();
        State {
            verdict: Verdict::Off {
                unix_s: 1,
                reason: "the runner does not make boots faster here".into(),
            },
            boots: Vec::new(),
        }
        .save_for(&c.rc_state, &RC)
        .unwrap();
        let mark = dir.path().join("levers");
        let b = prepare(&c, &sysv, None, Some(&mark));
        assert!(matches!(b.plan, Plan::SwitchedOff(_)), "{b:?}");
        assert_eq!(held_back(&mark, &RC), Some("off"));
        let mut events = Vec::new();
        let acted = Acted {
            acted: false,
            marked: true,
        };
        b.finish(&mut events, &c, acted, Milestones::default());
        let off = events.iter().find(|e| e.kind == "rc_off").expect("rc_off");
        assert_eq!(off.get("by"), Some("itself"));
        assert!(!events.iter().any(|e| e.kind == "rc_history"));
    }

    #[test]
    fn late_acts_when_its_log_says_units_were_deferred() {
        let dir = tempfile::tempdir().unwrap();
        let late = dir.path().join("late.log");
        let mark = dir.path().join("levers");
        let rc_log = dir.path().join("rc.log");
        std::fs::write(&late, "12 late_skipped error=x\n").unwrap();
        assert!(!acted(&LATE, &rc_log, &late, &mark).acted);
        std::fs::write(&late, "12 late_planned units=4\n").unwrap();
        assert!(acted(&LATE, &rc_log, &late, &mark).acted);
        std::fs::write(&mark, "late control\n").unwrap();
        assert!(acted(&LATE, &rc_log, &late, &mark).marked);
        assert!(!acted(&RC, &rc_log, &late, &mark).marked);
    }
}
