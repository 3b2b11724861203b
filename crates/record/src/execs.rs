//! Where the recorder's `exec` events come from: the kernel's process events connector
//! (exact kernel stamps, batched, no descriptor per exec), else fanotify's `FAN_OPEN_EXEC`
//! (stamped when taken), else none. `exec_events` in the configuration picks; a source that
//! cannot open falls to the next with a warning in the trace (docs/recorder.md, "Cost").

use std::path::Path;

use sample::execwatch::{Exec, ExecWatch};
use sample::procevents::{ProcEvent, ProcEvents};
use sample::procfs::ProcFs;
use sample::sys;
use trace::Event;

use crate::store::Store;

/// The values `exec_events` takes, best first.
pub const SOURCES: [&str; 3] = ["connector", "fanotify", "off"];

/// An open source of exec events.
pub enum ExecSource {
    /// The process events connector, and CLOCK_BOOTTIME minus CLOCK_MONOTONIC (its stamps
    /// are monotonic).
    Connector(ProcEvents, u64, Vec<ProcEvent>),
    /// fanotify on the root file system.
    Fanotify(ExecWatch, Vec<Exec>),
    /// No exec events.
    Off,
}

impl ExecSource {
    /// Opens `wanted` (one of [`SOURCES`]) or the first that opens after it; says in the
    /// trace what failed and what is used.
    pub fn open(wanted: &str, root: &Path, t: u64, store: &mut Store) -> ExecSource {
        let from = SOURCES.iter().position(|s| *s == wanted).unwrap_or(0);
        for source in &SOURCES[from..] {
            let opened = match *source {
                "connector" => ProcEvents::open()
                    .map(|p| ExecSource::Connector(p, sys::suspended_ns(), Vec::new())),
                "fanotify" => ExecWatch::open(root).map(|w| ExecSource::Fanotify(w, Vec::new())),
                _ => Ok(ExecSource::Off),
            };
            match opened {
                Ok(s) => return s,
                Err(e) => store.events.push(
                    Event::new(t, "warning")
                        .with("what", format!("no exec events from the {source}: {e}")),
                ),
            }
        }
        ExecSource::Off
    }

    /// Its name in [`SOURCES`].
    pub fn name(&self) -> &'static str {
        match self {
            ExecSource::Connector(..) => SOURCES[0],
            ExecSource::Fanotify(..) => SOURCES[1],
            ExecSource::Off => SOURCES[2],
        }
    }

    /// The descriptor to poll, if any.
    pub fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        match self {
            ExecSource::Connector(p, ..) => Some(p.raw_fd()),
            ExecSource::Fanotify(w, _) => Some(w.raw_fd()),
            ExecSource::Off => None,
        }
    }

    /// Times events were lost to a full queue.
    pub fn overflows(&self) -> u64 {
        match self {
            ExecSource::Connector(p, ..) => p.overflows,
            ExecSource::Fanotify(w, _) => w.overflows,
            ExecSource::Off => 0,
        }
    }

    /// Takes the queued events into `events` as `exec` events. `taken` (CLOCK_BOOTTIME) stamps
    /// fanotify's, which carry no time; the connector's carry the kernel's.
    pub fn drain(&mut self, taken: u64, proc: &ProcFs, events: &mut Vec<Event>) {
        match self {
            ExecSource::Connector(p, suspended, buf) => {
                let _ = p.drain(buf);
                for ev in buf.drain(..) {
                    if let ProcEvent::Exec { t_ns, tgid } = ev {
                        // The program's path while the process still runs it; a process
                        // that already ended (or exec'd again) keeps its pid and time only.
                        let path = proc.exe(tgid);
                        let e = Event::new(t_ns + *suspended, "exec").with("pid", tgid);
                        events.push(if path.is_empty() {
                            e
                        } else {
                            e.with("path", path)
                        });
                    }
                }
            }
            ExecSource::Fanotify(w, buf) => {
                let _ = w.drain(buf);
                for e in buf.drain(..) {
                    events.push(
                        Event::new(taken, "exec")
                            .with("pid", e.pid)
                            .with("path", e.path),
                    );
                }
            }
            ExecSource::Off => {}
        }
    }
}
