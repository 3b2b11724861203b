//! The boot path's use of readahead: before init is exec'd, replay a valid pack from a child
//! process, or plan to learn one; while recording, learn; at boot done, pack what was learned
//! or measure how much of the replay was used. Every failure is a `warning` event and the
//! boot goes on as if readahead were off. The format, learning and replay themselves belong
//! to the `readahead` crate.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use readahead::learn::{self, LearnConfig, LearnThread, PackOptions};
use readahead::pack::Pack;
use readahead::replay::{self, ReplayChild, ReplayOptions};
use readahead::system;
use sample::sys::boottime_ns;
use trace::Event;

use crate::config::Config;

/// A pack older than this is learned again.
const MAX_AGE_S: u64 = 30 * 24 * 3600;

/// What the boot decided before exec'ing init.
#[derive(Debug, Default)]
pub enum Plan {
    /// Readahead is off.
    #[default]
    Off,
    /// No usable pack: learn one during this boot (with why).
    Learn(String),
    /// A pack is being replayed by a child process.
    Replay(Box<Pack>, Option<ReplayChild>, u64),
}

/// In PID 1, before the exec: load the pack and start its replay, or decide to learn.
pub fn prepare(config: &Config) -> Plan {
    if !config.readahead {
        return Plan::Off;
    }
    let paths = system::Paths::default();
    let mountinfo = std::fs::read_to_string(paths.proc.join("self/mountinfo")).unwrap_or_default();
    let mounts = system::parse_mountinfo(&mountinfo, "/proc/self/mountinfo").unwrap_or_default();
    let ours = system::root_id(&paths, system::root_mount(&mounts));
    match replay::load(&config.readahead_pack, &ours, 0) {
        Ok(pack) => {
            let started = boottime_ns();
            match replay::spawn_child(&pack, &ReplayOptions::default()) {
                Ok(child) => Plan::Replay(Box::new(pack), Some(child), started),
                Err(e) => Plan::Learn(format!("replay child: {e}")),
            }
        }
        Err(e) => Plan::Learn(e.reason().to_string()),
    }
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
            Plan::Learn(why) => {
                events.push(Event::new(now, "readahead_learn_start").with("why", why));
                match LearnThread::spawn(&LearnConfig::default()) {
                    Ok(l) => learner = Some(l),
                    Err(e) => events.push(warning(now, format!("readahead: cannot learn: {e}"))),
                }
            }
            Plan::Replay(pack, _, started) => events.push(
                Event::new(*started, "readahead_replay_start")
                    .with("files", pack.entries.len())
                    .with("bytes", pack.bytes()),
            ),
        }
        Session { plan, learner }
    }

    /// At boot done: pack what was learned, or record the replay and its hit rate; decide
    /// whether the next boot learns again.
    pub fn finish(self, events: &mut Vec<Event>, pack_path: &Path, kernel_release: &str) {
        let now = boottime_ns();
        if let Some(learner) = self.learner {
            let learned = learner.stop();
            let (pack, stats) = learn::build_pack(&learned, &PackOptions::default());
            let written = pack.write_file(pack_path);
            let mut e = Event::new(now, "readahead_learn")
                .with("files", stats.files_learned)
                .with("entries", pack.entries.len())
                .with("bytes", pack.bytes())
                .with("events", learned.events)
                .with("overflowed", u8::from(learned.overflowed));
            if let Err(err) = &written {
                e = e.with("error", err);
            }
            events.push(e);
        }
        if let Plan::Replay(pack, child, _) = self.plan {
            let stats = child.and_then(ReplayChild::wait);
            match &stats {
                Some(st) => {
                    let mut e = Event::new(now, "readahead_replay");
                    for (k, v) in st.fields() {
                        e = e.with(k, v);
                    }
                    events.push(e);
                }
                None => events.push(warning(
                    now,
                    "readahead: replay child reported nothing".into(),
                )),
            }
            let hit = replay::hit_rate(&pack);
            events.push(
                Event::new(boottime_ns(), "readahead_hit")
                    .with("replayed", hit.bytes_replayed)
                    .with("resident", hit.bytes_resident)
                    .with("ratio", format!("{:.3}", hit.ratio())),
            );
            let unix_now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let relearn = replay::relearn_reason(
                &pack.header,
                pack.entries.len(),
                stats.as_ref(),
                kernel_release,
                unix_now,
                MAX_AGE_S,
            );
            if let Some(reason) = relearn {
                // Without a pack the next boot learns a new one.
                let removed = std::fs::remove_file(pack_path).is_ok();
                events.push(
                    Event::new(boottime_ns(), "readahead_relearn")
                        .with("reason", reason)
                        .with("pack_removed", u8::from(removed)),
                );
            }
        }
    }
}

fn warning(t: u64, what: String) -> Event {
    Event::new(t, "warning").with("what", what)
}
