//! Where the recorder's `exec` events come from: the kernel's process events connector
//! (exact kernel stamps, batched, no descriptor per exec), else fanotify's `FAN_OPEN_EXEC`
//! (stamped when taken), else none. `exec_events` in the configuration picks; a source that
//! cannot open falls to the next with a warning in the trace (docs/recorder.md, "Cost").

use std::path::Path;

use sample::execwatch::{Exec, ExecWatch};
use sample::procevents::{ProcEvent, ProcEvents};
use sample::procfs::ProcFs;
use sample::sys::suspended_ns;
use trace::Event;

use crate::store::Store;

/// The values `exec_events` takes, best first.
pub const SOURCES: [&str; 3] = ["connector", "fanotify", "off"];

/// The process events connector and what its events said since they were last taken.
pub struct Connector {
    events: ProcEvents,
    /// CLOCK_BOOTTIME minus CLOCK_MONOTONIC (the kernel's stamps are monotonic).
    suspended_ns: u64,
    buf: Vec<ProcEvent>,
    /// Processes forked and ended since [`ExecSource::take_lifecycle`].
    born: Vec<u32>,
    gone: Vec<u32>,
    /// Whether events were lost since then (the socket's buffer overflowed).
    lost: bool,
}

/// An open source of exec events.
pub enum ExecSource {
    /// The process events connector.
    Connector(Connector),
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
                "connector" => ProcEvents::open().map(|events| {
                    ExecSource::Connector(Connector {
                        events,
                        suspended_ns: suspended_ns(),
                        buf: Vec::new(),
                        born: Vec::new(),
                        gone: Vec::new(),
                        lost: false,
                    })
                }),
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

    /// The descriptor the recorder wakes for between samples (at most every 50 ms), if any.
    /// fanotify's events carry no time, so they are stamped when taken; the connector's
    /// carry the kernel's stamp, and are taken early only so that the path of a short-lived
    /// process can still be read (waiting for the sample lost it for about half of a
    /// systemd boot's execs at 5 Hz, while the wake-ups did not show in the recorder's
    /// cost: docs/recorder.md, "Cost").
    pub fn wake_fd(&self) -> Option<std::os::fd::RawFd> {
        match self {
            ExecSource::Fanotify(w, _) => Some(w.raw_fd()),
            ExecSource::Connector(c) => Some(c.events.raw_fd()),
            ExecSource::Off => None,
        }
    }

    /// Times events were lost to a full queue.
    pub fn overflows(&self) -> u64 {
        match self {
            ExecSource::Connector(c) => c.events.overflows,
            ExecSource::Fanotify(w, _) => w.overflows,
            ExecSource::Off => 0,
        }
    }

    /// Takes the queued events into `events` as `exec` events. `taken` (CLOCK_BOOTTIME) stamps
    /// fanotify's, which carry no time; the connector's carry the kernel's.
    pub fn drain(&mut self, taken: u64, proc: &ProcFs, events: &mut Vec<Event>) {
        match self {
            ExecSource::Connector(c) => {
                let before = c.events.overflows;
                if c.events.drain(&mut c.buf).is_err() || c.events.overflows != before {
                    c.lost = true;
                }
                let final_exec = last_execs(&c.buf);
                for (ev, resolvable) in c.buf.drain(..).zip(final_exec) {
                    match ev {
                        ProcEvent::Exec { t_ns, tgid } => {
                            let path = if resolvable {
                                proc.exe(tgid)
                            } else {
                                String::new()
                            };
                            let e = Event::new(t_ns + c.suspended_ns, "exec").with("pid", tgid);
                            events.push(if path.is_empty() {
                                e
                            } else {
                                e.with("path", path)
                            });
                        }
                        ProcEvent::Fork {
                            child_pid,
                            child_tgid,
                            ..
                        } if child_pid == child_tgid => c.born.push(child_tgid),
                        ProcEvent::Exit { pid, tgid, .. } if pid == tgid => c.gone.push(tgid),
                        _ => {} // threads
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

    /// Puts in `born` and `gone` the processes forked and ended since the last call, and
    /// says whether they are complete: only the connector sees them, and only when nothing
    /// was lost since the last call; otherwise the caller lists /proc instead. Call
    /// [`ExecSource::drain`] just before.
    pub fn take_lifecycle(&mut self, born: &mut Vec<u32>, gone: &mut Vec<u32>) -> bool {
        born.clear();
        gone.clear();
        let ExecSource::Connector(c) = self else {
            return false;
        };
        std::mem::swap(born, &mut c.born);
        std::mem::swap(gone, &mut c.gone);
        !std::mem::take(&mut c.lost)
    }
}

/// For each event, whether it is an exec whose path can be read at the end of the batch:
/// the process's last exec in it, with no exit of the process after it. The path is read
/// from /proc/PID/exe, so an earlier exec would get the later program's path, and an ended
/// process none.
fn last_execs(batch: &[ProcEvent]) -> Vec<bool> {
    let mut later: Vec<u32> = Vec::new();
    let mut out = vec![false; batch.len()];
    for (i, ev) in batch.iter().enumerate().rev() {
        let tgid = match *ev {
            ProcEvent::Exec { tgid, .. } => tgid,
            ProcEvent::Exit { pid, tgid, .. } if pid == tgid => tgid,
            _ => continue,
        };
        if !later.contains(&tgid) {
            out[i] = matches!(ev, ProcEvent::Exec { .. });
            later.push(tgid);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_process_last_exec_before_its_end_is_resolved() {
        let exec = |tgid| ProcEvent::Exec { t_ns: 1, tgid };
        let exit = |pid, tgid| ProcEvent::Exit { t_ns: 2, pid, tgid };
        let batch = [
            exec(10),     // sh, then exec'd again: not its path
            exec(11),     // ended below: none
            exit(12, 10), // a thread of 10 ended: 10 goes on
            exec(10),     // 10's last: read
            exit(11, 11),
            exec(13), // runs on: read
        ];
        assert_eq!(
            last_execs(&batch),
            vec![false, false, false, true, false, true]
        );
    }
}
