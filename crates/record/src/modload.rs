//! Parallel module loading on the boot path (`bootprint.modules=1`): before init is exec'd,
//! `bootprint modules load` runs as a child (it links libkmod; the boot-path binary does not,
//! so a system without libkmod still boots), loads the planned modules in parallel and prints
//! a `modules_plan` line, one `module` event per module and, once it has folded the measured
//! times into the durations state file (waiting for a writable root), `modules_learned`; the
//! recorder puts those events into the trace at boot done. udev's own coldplug still runs: a
//! module it finds loaded counts as done for both.
//!
//! Like readahead, the loader proves itself on each machine ([`prepare`], [`Boot::finish`]):
//! its first boot learns (the modules' durations), then every `modules_compare_every`th boot
//! (alternately until there are three of each) it does not run, leaving coldplug to udev
//! alone; its history of both kinds of boot
//! (`/var/lib/bootprint/modules.state`, the format of `readahead::state` with `load` for a
//! boot with the loader) decides, and where the loader does not make the login come sooner
//! it switches itself off (`modules_off by=itself`) until `bootprint modules on`.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use readahead::state::{BootKind, State, ThisBoot, Verdict, MODULES};
use trace::Event;

use crate::config::Config;
use crate::readahead::{history_aside, record_history, Judge, Milestones};

/// The program that loads (the CLI; it has the libkmod binding).
pub const LOADER: &str = "/usr/bin/bootprint";

/// The loader running in the background.
#[derive(Debug)]
pub struct Loader {
    child: Child,
    started_ns: u64,
}

/// Starts the loader, or says why it could not.
pub fn start(program: &str) -> Result<Loader, String> {
    let started_ns = sys::boottime_ns();
    Command::new(program)
        .args(["modules", "load"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map(|child| Loader { child, started_ns })
        .map_err(|e| format!("{program}: {e}"))
}

impl Loader {
    /// The loader's events, read until it closes its output or `limit` passes (a module
    /// whose init hangs must not hold the trace back). The loader is the real init's child
    /// by then, so init reaps it.
    pub fn events(mut self, limit: Duration) -> Vec<Event> {
        let mut out = vec![Event::new(self.started_ns, "modules_start").with("loader", LOADER)];
        let Some(mut pipe) = self.child.stdout.take() else {
            return out;
        };
        let deadline = Instant::now() + limit;
        let mut text = Vec::new();
        let mut buf = [0u8; 8192];
        let complete = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break false;
            }
            let ready = sys::poll_readable(pipe.as_raw_fd(), left.as_millis().min(1000) as i32)
                .unwrap_or(false);
            if !ready {
                continue;
            }
            match pipe.read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => text.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break false,
            }
        };
        let text = String::from_utf8_lossy(&text);
        match trace::events::parse(&text) {
            Ok(events) => out.extend(events.into_iter().map(|mut e| {
                if e.kind == "warning" && e.t_ns == 0 {
                    e.t_ns = self.started_ns;
                }
                e
            })),
            Err(e) => out.push(warning(format!("modules: loader output: {e}"))),
        }
        if !complete {
            out.push(warning(format!(
                "modules: loader not done after {} s",
                limit.as_secs()
            )));
        }
        out
    }
}

/// What the module loader does on this boot, from its switch and its own history.
#[derive(Debug, Default)]
pub enum Boot {
    /// Its switch is off.
    #[default]
    Off,
    /// It switched itself off on an earlier boot: why.
    SwitchedOff(String),
    /// It does not run, so this boot compares (udev's coldplug alone).
    Control,
    /// It runs; `learn`: for the first time (no module durations learned yet, so its plan
    /// is not yet the one it will use: like readahead's learning boot, not judged).
    Load {
        /// The running loader.
        loader: Loader,
        /// The first boot with the loader.
        learn: bool,
        /// Why this boot stays out of the history: another lever (readahead) learned or
        /// compared on it, so its figures say nothing about the loader.
        aside: Option<String>,
    },
}

impl Boot {
    /// A comparison boot: the loader does not run.
    pub fn is_control(&self) -> bool {
        matches!(self, Boot::Control)
    }

    /// Another lever compares on this boot (decided after the loader's plan): the boot is
    /// left out of the loader's history.
    pub fn set_aside(&mut self, why: &str) {
        if let Boot::Load { aside, .. } = self {
            aside.get_or_insert_with(|| why.to_string());
        }
    }
}

/// What the next boot does with the module loader (`bootprint modules status` shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextBoot {
    /// The switch is off.
    Off,
    /// The loader switched itself off (its verdict, in its state file).
    SwitchedOff,
    /// It does not run, to compare.
    Control,
    /// It runs.
    Load,
}

/// [`NextBoot`] from the switch and the loader's state: the rule of [`prepare`] when no
/// other lever learns or compares on the same boot.
pub fn next_boot(config: &Config, state: &State) -> NextBoot {
    if !config.modules {
        return NextBoot::Off;
    }
    if let Verdict::Off { .. } = state.verdict {
        return NextBoot::SwitchedOff;
    }
    // `prepare` also loads on a first boot (`learn`); `next_kind` never compares before a
    // boot with the loader either.
    match state.next_kind(config.modules_compare_every) {
        BootKind::Control => NextBoot::Control,
        _ => NextBoot::Load,
    }
}

/// Decides from the switch and the loader's history, and starts the loader when it runs
/// (`program`: [`LOADER`]). A loader that cannot start is a warning for the trace.
/// `others_compare`: another lever (readahead) learns or compares on this boot; one lever
/// at a time leaves its usual way, so the loader then runs and the boot is not judged.
pub fn prepare(
    config: &Config,
    program: &str,
    warnings: &mut Vec<String>,
    others_compare: Option<&str>,
) -> Boot {
    if !config.modules {
        return Boot::Off;
    }
    // An unreadable state is treated as empty; it is rewritten at boot done.
    let state = State::load_for(&config.modules_state, &MODULES).unwrap_or_default();
    let learn = match state.this_boot(config.modules_compare_every, others_compare.is_some()) {
        ThisBoot::SwitchedOff(reason) => return Boot::SwitchedOff(reason),
        ThisBoot::Control => return Boot::Control,
        ThisBoot::Run { learn } => learn,
    };
    match start(program) {
        Ok(loader) => Boot::Load {
            loader,
            learn,
            aside: others_compare.map(String::from),
        },
        Err(e) => {
            warnings.push(format!("modules: cannot start the loader: {e}"));
            Boot::Off
        }
    }
}

impl Boot {
    /// At boot done (the recorder): the loader's events, then this boot in its history and
    /// its verdict (`readahead::record_history`).
    pub fn finish(self, events: &mut Vec<Event>, config: &Config, seen: Milestones) {
        let now = sys::boottime_ns();
        let kind = match self {
            Boot::Off => return,
            Boot::SwitchedOff(reason) => {
                events.push(
                    Event::new(now, "modules_off")
                        .with("by", "itself")
                        .with("reason", reason),
                );
                return;
            }
            Boot::Control => {
                events.push(Event::new(now, "modules_control"));
                BootKind::Control
            }
            Boot::Load {
                loader,
                learn,
                aside,
            } => {
                events.extend(loader.events(Duration::from_secs(10)));
                let kind = if learn {
                    BootKind::Learn
                } else {
                    BootKind::Replay
                };
                // A learning boot is not judged anyway: it is recorded, aside or not.
                if let Some(why) = aside.filter(|_| !learn) {
                    history_aside(events, now, &MODULES, kind, &why);
                    return;
                }
                kind
            }
        };
        let judge = Judge {
            lever: &MODULES,
            path: &config.modules_state,
            compare_every: config.modules_compare_every,
        };
        record_history(events, &judge, kind, seen);
    }
}

fn warning(what: String) -> Event {
    Event::new(sys::boottime_ns(), "warning").with("what", what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_from_the_loader_output() {
        // A stand-in loader: prints two module events and a line that is not one.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let fake = dir.join("fake-loader");
        std::fs::write(
            &fake,
            "#!/bin/sh\necho '100 module name=virtio_blk end_ns=200 worker=1 outcome=loaded detail='\n\
             echo '150 module name=floppy end_ns=900 worker=2 outcome=failed detail=No%20such%20device'\n",
        )
        .unwrap();
        Command::new("chmod")
            .arg("755")
            .arg(&fake)
            .status()
            .unwrap();
        let events = start(fake.to_str().unwrap())
            .unwrap()
            .events(Duration::from_secs(10));
        let modules: Vec<&Event> = events.iter().filter(|e| e.kind == "module").collect();
        assert_eq!(modules.len(), 2);
        assert_eq!(modules[1].get("detail"), Some("No such device"));
        assert_eq!(events[0].kind, "modules_start");

        // A loader that hangs is given up on.
        std::fs::write(&fake, "#!/bin/sh\necho '1 module name=a end_ns=2 worker=1 outcome=loaded detail='\nexec sleep 30\n").unwrap();
        let t = Instant::now();
        let events = start(fake.to_str().unwrap())
            .unwrap()
            .events(Duration::from_secs(1));
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(events.iter().any(|e| e.kind == "warning"), "{events:?}");
        assert!(start("/nonexistent/loader").is_err());
    }

    /// The loader proves itself: boots alternate with and without it until there are three
    /// of each; where the login comes no sooner with it, it switches itself off, says why
    /// in the trace, and the next boot does not run it.
    #[test]
    fn the_loader_judges_itself_and_switches_itself_off() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let fake = dir.join("fake-loader");
        std::fs::write(
            &fake,
            "#!/bin/sh
echo '1 module name=a end_ns=2 worker=1 outcome=loaded detail='\n",
        )
        .unwrap();
        Command::new("chmod")
            .arg("755")
            .arg(&fake)
            .status()
            .unwrap();
        let config = Config {
            modules: true,
            modules_state: dir.join("modules.state"),
            ..Config::default()
        };
        let mut warnings = Vec::new();
        let mut kinds = Vec::new();
        for _ in 0..7 {
            let boot = prepare(&config, fake.to_str().unwrap(), &mut warnings, None);
            let (kind, login_s) = match &boot {
                Boot::Load { learn: true, .. } => ("learn", 12.0),
                Boot::Load { .. } => ("load", 10.0),
                Boot::Control => ("control", 9.0),
                other => panic!("{other:?}"),
            };
            kinds.push(kind);
            let mut events = Vec::new();
            let seen = Milestones {
                login_ns: Some((login_s * 1e9) as u64),
                done_ns: None,
            };
            boot.finish(&mut events, &config, seen);
            if kind != "control" {
                assert!(events.iter().any(|e| e.kind == "module"), "{events:?}");
            } else {
                assert!(
                    events.iter().any(|e| e.kind == "modules_control"),
                    "{events:?}"
                );
            }
            if kinds.len() == 7 {
                let off = events
                    .iter()
                    .find(|e| e.kind == "modules_off")
                    .expect("verdict");
                assert_eq!(off.get("by"), Some("itself"));
                assert!(
                    off.get("reason").unwrap().contains("the loader 10.000 s"),
                    "{off:?}"
                );
            }
        }
        assert_eq!(
            kinds,
            ["learn", "load", "control", "load", "control", "load", "control"]
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let text = std::fs::read_to_string(&config.modules_state).unwrap();
        assert!(
            text.contains("verdict off ") && text.contains(" load 10.000 "),
            "{text}"
        );
        assert!(text.contains(" learn 12.000 "), "{text}");
        match prepare(&config, fake.to_str().unwrap(), &mut warnings, None) {
            Boot::SwitchedOff(reason) => assert!(reason.contains("does not make boots faster")),
            other => panic!("{other:?}"),
        }
        // Faster with the loader: it stays on.
        std::fs::remove_file(&config.modules_state).unwrap();
        for i in 0..7 {
            let boot = prepare(&config, fake.to_str().unwrap(), &mut warnings, None);
            let login_s = if matches!(boot, Boot::Load { .. }) {
                8.0
            } else {
                9.0
            };
            let mut events = Vec::new();
            let seen = Milestones {
                login_ns: Some((login_s * 1e9) as u64),
                done_ns: None,
            };
            boot.finish(&mut events, &config, seen);
            assert!(
                !events.iter().any(|e| e.kind == "modules_off"),
                "boot {i}: {events:?}"
            );
        }
        assert!(matches!(
            prepare(&config, fake.to_str().unwrap(), &mut warnings, None),
            Boot::Load { learn: false, .. }
        ));
        // The switch off: nothing runs, nothing is recorded.
        // Readahead compares on this boot: the loader runs, and the boot is not judged.
        let n = std::fs::read_to_string(&config.modules_state)
            .unwrap()
            .lines()
            .count();
        let boot = prepare(
            &config,
            fake.to_str().unwrap(),
            &mut warnings,
            Some("readahead compared"),
        );
        let mut events = Vec::new();
        let seen = Milestones {
            login_ns: Some(1),
            done_ns: None,
        };
        boot.finish(&mut events, &config, seen);
        let h = events.iter().find(|e| e.kind == "modules_history").unwrap();
        assert_eq!(h.get("counted"), Some("0"));
        assert_eq!(
            std::fs::read_to_string(&config.modules_state)
                .unwrap()
                .lines()
                .count(),
            n
        );
        let off = Config {
            modules: false,
            ..config.clone()
        };
        assert!(matches!(
            prepare(&off, fake.to_str().unwrap(), &mut warnings, None),
            Boot::Off
        ));
    }
}
