//! The boot path's use of readahead: before init is exec'd, replay a valid pack from a child
//! process, boot without it to compare, or plan to learn one; while recording, learn; at boot
//! done, pack what was learned or measure how much of the replay was used, add the boot to
//! readahead's history and let it judge itself (it switches itself off when replay does not
//! make boots faster here). Every failure is a `warning` event and the boot goes on as if
//! readahead were off. The format, learning, replay and the history's rules belong to the
//! `readahead` crate.

use std::time::{SystemTime, UNIX_EPOCH};

use readahead::learn::{self, LearnConfig, LearnThread, PackOptions};
use readahead::pack::Pack;
use readahead::replay::{self, RelearnLimits, ReplayChild, ReplayOptions, ReplayOutcome};
use readahead::state::{BootKind, BootRecord, State, Verdict};
use readahead::system;
use sample::sys::boottime_ns;
use trace::Event;

use crate::config::Config;

/// A replay under way.
#[derive(Debug)]
pub struct Replaying {
    pack: Box<Pack>,
    child: Option<ReplayChild>,
    started_ns: u64,
    /// The root device and what had been read from it when the replay started, to tell at
    /// boot done how much the boot read that the pack lacked.
    root_dev: Option<(u32, u32)>,
    read_at_start: Option<u64>,
}

/// What the boot decided before exec'ing init.
#[derive(Debug, Default)]
pub enum Plan {
    /// Readahead is off in the configuration.
    #[default]
    Off,
    /// Readahead switched itself off earlier (the reason is in its state file).
    SwitchedOff(String),
    /// No usable pack: learn one during this boot (with why).
    Learn(String),
    /// A pack is being replayed by a child process.
    Replay(Replaying),
    /// A valid pack, not replayed this boot: the comparison boot.
    Control,
}

/// In PID 1, before the exec: load the pack and start its replay, or decide to learn or to
/// boot without it for comparison.
pub fn prepare(config: &Config) -> Plan {
    if !config.readahead {
        return Plan::Off;
    }
    // An unreadable state is treated as empty; it is rewritten at boot done.
    let state = State::load(&config.readahead_state).unwrap_or_default();
    if let Verdict::Off { reason, .. } = state.verdict {
        return Plan::SwitchedOff(reason);
    }
    let paths = system::Paths::default();
    let mountinfo = std::fs::read_to_string(paths.proc.join("self/mountinfo")).unwrap_or_default();
    let mounts = system::parse_mountinfo(&mountinfo, "/proc/self/mountinfo").unwrap_or_default();
    let root = system::root_mount(&mounts);
    let ours = system::root_id(&paths, root);
    let pack = match replay::load(&config.readahead_pack, &ours, 0) {
        Ok(p) => p,
        Err(e) => return Plan::Learn(e.reason().to_string()),
    };
    if state.next_kind(config.readahead_compare_every) == BootKind::Control {
        return Plan::Control;
    }
    let root_dev = root.map(|m| (m.major, m.minor));
    let read_at_start = root_dev.and_then(|(ma, mi)| root_bytes_read(&paths, ma, mi));
    let started_ns = boottime_ns();
    let opts = ReplayOptions {
        idle_io: config.readahead_io_class == "idle",
        ..ReplayOptions::default()
    };
    match replay::spawn_child(&pack, &opts) {
        Ok(child) => Plan::Replay(Replaying {
            pack: Box::new(pack),
            child: Some(child),
            started_ns,
            root_dev,
            read_at_start,
        }),
        Err(e) => Plan::Learn(format!("replay child: {e}")),
    }
}

fn root_bytes_read(paths: &system::Paths, major: u32, minor: u32) -> Option<u64> {
    let ds = std::fs::read_to_string(paths.proc.join("diskstats")).ok()?;
    system::bytes_read(&ds, major, minor)
}

/// When this boot reached its milestones, for readahead's history.
#[derive(Debug, Clone, Copy, Default)]
pub struct Milestones {
    /// The text login (ns of CLOCK_BOOTTIME).
    pub login_ns: Option<u64>,
    /// Boot done, when it was judged idle (not on a timeout).
    pub done_ns: Option<u64>,
}

/// Readahead's part of a recording.
pub struct Session {
    plan: Plan,
    learner: Option<LearnThread>,
}

impl Session {
    /// Starts learning if the plan says so; notes the plan in the trace.
    pub fn start(plan: Plan, events: &mut Vec<Event>) -> Session {
        let now = boottime_ns();
        let mut learner = None;
        match &plan {
            Plan::Off => {}
            Plan::SwitchedOff(reason) => events.push(
                Event::new(now, "readahead_off")
                    .with("by", "itself")
                    .with("reason", reason),
            ),
            Plan::Learn(why) => {
                events.push(Event::new(now, "readahead_learn_start").with("why", why));
                match LearnThread::spawn(&LearnConfig::default()) {
                    Ok(l) => learner = Some(l),
                    Err(e) => events.push(warning(now, format!("readahead: cannot learn: {e}"))),
                }
            }
            Plan::Replay(r) => events.push(
                Event::new(r.started_ns, "readahead_replay_start")
                    .with("files", r.pack.entries.len())
                    .with("bytes", r.pack.bytes()),
            ),
            Plan::Control => events.push(Event::new(now, "readahead_control")),
        }
        Session { plan, learner }
    }

    /// At boot done: pack what was learned, or record the replay and its hit rate; decide
    /// whether the next boot learns again; add this boot to the history and judge replay.
    pub fn finish(
        self,
        events: &mut Vec<Event>,
        config: &Config,
        kernel_release: &str,
        seen: Milestones,
    ) {
        let now = boottime_ns();
        let pack_path = &config.readahead_pack;
        let kind = match &self.plan {
            Plan::Off | Plan::SwitchedOff(_) => None,
            Plan::Learn(_) => Some(BootKind::Learn),
            Plan::Replay(_) => Some(BootKind::Replay),
            Plan::Control => Some(BootKind::Control),
        };
        if let Some(learner) = self.learner {
            let learned = learner.stop();
            let opts = PackOptions {
                budget_bytes: (config.readahead_budget_mb > 0.0)
                    .then_some((config.readahead_budget_mb * 1048576.0) as u64),
                disk_order: match config.readahead_order.as_str() {
                    "disk" => Some(true),
                    "access" => Some(false),
                    _ => None,
                },
                ..PackOptions::default()
            };
            let (pack, stats) = learn::build_pack(&learned, &opts);
            let written = pack.write_file(pack_path);
            let mut e = Event::new(now, "readahead_learn")
                .with("files", stats.files_learned)
                .with("entries", pack.entries.len())
                .with("bytes", pack.bytes())
                .with("budget", pack.header.budget_bytes)
                .with("events", learned.events)
                .with("overflowed", u8::from(learned.overflowed))
                .with("pages_from", learned.page_source())
                .with("trace_lost", learned.trace_stats.lost);
            if let Err(err) = &written {
                e = e.with("error", err);
            }
            events.push(e);
        }
        if let Plan::Replay(r) = self.plan {
            finish_replay(r, events, config, kernel_release);
        }
        if let Some(kind) = kind {
            record_history(events, config, kind, seen);
        }
    }
}

fn finish_replay(r: Replaying, events: &mut Vec<Event>, config: &Config, kernel_release: &str) {
    let now = boottime_ns();
    let stats = r.child.and_then(ReplayChild::wait);
    // What the boot read from the root disk beyond what the replay asked for.
    let missed = match (r.root_dev, r.read_at_start) {
        (Some((ma, mi)), Some(before)) => {
            root_bytes_read(&system::Paths::default(), ma, mi).map(|after| {
                let asked = stats.as_ref().map_or(0, |s| s.bytes_requested);
                after.saturating_sub(before).saturating_sub(asked)
            })
        }
        _ => None,
    };
    match &stats {
        Some(st) => {
            let mut e = Event::new(now, "readahead_replay");
            for (k, v) in st.fields() {
                e = e.with(k, v);
            }
            if let Some(m) = missed {
                e = e.with("missed_bytes", m);
            }
            events.push(e);
        }
        None => events.push(warning(
            now,
            "readahead: replay child reported nothing".into(),
        )),
    }
    let hit = replay::hit_rate(&r.pack);
    events.push(
        Event::new(boottime_ns(), "readahead_hit")
            .with("replayed", hit.bytes_replayed)
            .with("resident", hit.bytes_resident)
            .with("ratio", format!("{:.3}", hit.ratio())),
    );
    let limits = RelearnLimits {
        max_age_s: (config.readahead_max_age_days * 86400.0) as u64,
        stale_share: config.readahead_stale_share,
        missed_share: config.readahead_missed_share,
    };
    let outcome = ReplayOutcome {
        stats: stats.as_ref(),
        missed_bytes: missed,
        kernel_release,
        now_unix_s: unix_now(),
    };
    if let Some(reason) = replay::relearn_reason(&r.pack, &outcome, &limits) {
        // Without a pack the next boot learns a new one.
        let removed = std::fs::remove_file(&config.readahead_pack).is_ok();
        events.push(
            Event::new(boottime_ns(), "readahead_relearn")
                .with("reason", reason)
                .with("pack_removed", u8::from(removed)),
        );
    }
}

/// Adds this boot to the history; when replay has been judged not to make boots faster,
/// switches readahead off (until `bootprint readahead on`).
fn record_history(events: &mut Vec<Event>, config: &Config, kind: BootKind, seen: Milestones) {
    let path = &config.readahead_state;
    let mut state = match State::load(path) {
        Ok(s) => s,
        Err(e) => {
            events.push(warning(
                boottime_ns(),
                format!("readahead: {e}; starting a new history"),
            ));
            State::default()
        }
    };
    let secs = |ns: Option<u64>| ns.map(|n| (n as f64 / 1e6).round() / 1e3);
    state.push(BootRecord {
        unix_s: unix_now(),
        kind,
        login_s: secs(seen.login_ns),
        done_s: secs(seen.done_ns),
    });
    let judged = state.judge();
    if state.verdict == Verdict::Auto && config.readahead_compare_every > 0 && judged.not_faster() {
        let reason = format!(
            "replay does not make boots faster here: {}",
            judged.describe()
        );
        events.push(
            Event::new(boottime_ns(), "readahead_off")
                .with("by", "itself")
                .with("reason", &reason),
        );
        state.verdict = Verdict::Off {
            unix_s: unix_now(),
            reason,
        };
    }
    if let Err(e) = state.save(path) {
        events.push(warning(
            boottime_ns(),
            format!("readahead: cannot write {}: {e}", path.display()),
        ));
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn warning(t: u64, what: String) -> Event {
    Event::new(t, "warning").with("what", what)
}
