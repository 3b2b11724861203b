//! One graph for the boot (issue 15, part 1): runlevel S planned with the runlevel that
//! follows it, so rcS returns once the S part of the path to the login is done, and the
//! rest of S goes on beside runlevel 2 (docs/rc.md, "One graph for the boot").
//!
//! - [`next_runlevel`]: the runlevel init enters after S (`/etc/inittab`'s `initdefault`,
//!   or one the kernel command line gives init); none, and S runs whole as before.
//! - [`BootState`]: what the runner of runlevel S has started and ended so far, read back
//!   from the span log by the runners that come after it, which wait there for the S
//!   scripts they need.

use std::collections::BTreeSet;
use std::path::Path;

use crate::system::Runlevel;
use crate::{Error, ErrorKind};

/// The runlevel init enters once runlevel S is done, when S may end early; Err says why
/// not. sysvinit takes it from a lone `0`-`9`, `s`, `S`, `single`, `-s`, `emergency` or
/// `-b` on its command line (the kernel passes words it does not know to init), else from
/// `/etc/inittab`'s `initdefault` line. Only 2-5 have a login to plan for: single user and
/// the emergency shell run S whole, and without `initdefault` init asks at the console.
pub fn next_runlevel(root: &Path, cmdline: &str) -> Result<Runlevel, Error> {
    for w in cmdline.split_whitespace() {
        match w {
            "2" | "3" | "4" | "5" => {
                return Runlevel::parse(w)
                    .ok_or_else(|| Error::new(ErrorKind::Parse, format!("runlevel {w}")));
            }
            "0" | "1" | "6" | "7" | "8" | "9" | "s" | "S" | "single" | "-s" | "emergency"
            | "-b" => {
                return Err(Error::new(
                    ErrorKind::Refused,
                    format!("the kernel command line asks init for {w:?}: runlevel S runs whole"),
                ))
            }
            _ => {}
        }
    }
    let inittab = root.join("etc/inittab");
    let text = crate::sys::read_small(&inittab).map_err(|e| {
        let message = format!(
            "{}: {e}: expected an initdefault line; runlevel S runs whole",
            inittab.display()
        );
        Error::io(&inittab, message, e)
    })?;
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.trim().split(':').collect();
        if line.trim_start().starts_with('#') || f.len() < 3 || f[2] != "initdefault" {
            continue;
        }
        return match f[1].trim() {
            l @ ("2" | "3" | "4" | "5") => Runlevel::parse(l)
                .ok_or_else(|| Error::new(ErrorKind::Parse, l).at(&inittab).on_line(n + 1)),
            l => Err(Error::new(
                ErrorKind::Parse,
                format!(
                    "{}:{}: initdefault {l:?}: expected 2, 3, 4 or 5 for a login; runlevel S runs whole",
                    inittab.display(),
                    n + 1
                ),
            )
            .at(&inittab)
            .on_line(n + 1)),
        };
    }
    Err(Error::new(
        ErrorKind::Parse,
        format!(
            "{}: no initdefault line (init asks at the console): runlevel S runs whole",
            inittab.display()
        ),
    )
    .at(&inittab))
}

/// Runlevel S as its runner left it in the span log: since its last `rc_begin`, the
/// scripts started and ended, whether it is done, and the worker that went on after rcS
/// returned (`rc_handoff`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BootState {
    /// Scripts with an `rc_start` for runlevel S.
    pub started: BTreeSet<String>,
    /// Scripts with an `rc_end` for runlevel S.
    pub ended: BTreeSet<String>,
    /// `rc_done` for runlevel S: everything of S has ended.
    pub done: bool,
    /// The pid of the worker that runs the rest of S after rcS returned.
    pub worker: Option<u32>,
}

impl BootState {
    /// Reads the span log. None: no log, or no runlevel S in it (Debian's startpar ran S,
    /// or the runner could not write its log): there is nothing to wait for.
    pub fn read(log: &Path) -> Option<BootState> {
        let text = crate::sys::read_small(log).ok()?;
        Self::parse(&text, log)
    }

    /// [`BootState::read`] on the log's text.
    pub fn parse(text: &str, log: &Path) -> Option<BootState> {
        let (events, _) = trace::rclog::parse(text, &log.display().to_string());
        let mut state: Option<BootState> = None;
        for e in &events {
            if e.get("runlevel") != Some("S") {
                continue;
            }
            let script = e.get("script").map(String::from);
            match e.kind.as_str() {
                // A fallback's own rc_begin follows its rc_fallback: what was started
                // before it still counts as started.
                "rc_begin" => {
                    let s = state.get_or_insert_with(BootState::default);
                    s.done = false;
                }
                "rc_start" => {
                    if let (Some(s), Some(n)) = (state.as_mut(), script) {
                        s.started.insert(n);
                    }
                }
                "rc_end" => {
                    if let (Some(s), Some(n)) = (state.as_mut(), script) {
                        s.ended.insert(n);
                    }
                }
                "rc_handoff" => {
                    if let Some(s) = state.as_mut() {
                        s.worker = e.get("pid").and_then(|p| p.parse().ok());
                    }
                }
                "rc_done" => {
                    if let Some(s) = state.as_mut() {
                        s.done = true;
                    }
                }
                _ => {}
            }
        }
        state
    }

    /// Whether `script` of runlevel S has ended (or S is done).
    pub fn has_ended(&self, script: &str) -> bool {
        self.done || self.ended.contains(script)
    }

    /// The worker that runs the rest of S has gone without finishing it: its scripts not
    /// started yet are someone else's to run.
    pub fn worker_lost(&self) -> bool {
        !self.done && self.worker.is_some_and(|p| !crate::sys::process_alive(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root_with(inittab: &str) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::create_dir_all(d.join("etc")).unwrap();
        std::fs::write(d.join("etc/inittab"), inittab).unwrap();
        tmp
    }

    #[test]
    fn the_next_runlevel_from_inittab_and_the_command_line() {
        let r_tmp = root_with("# x\nid:2:initdefault:\nsi::sysinit:/etc/init.d/rcS\n");
        let r = r_tmp.path();
        assert_eq!(next_runlevel(r, "quiet ro"), Ok(Runlevel::Num(2)));
        assert_eq!(next_runlevel(r, "quiet 3"), Ok(Runlevel::Num(3)));
        for w in ["single", "1", "S", "emergency", "-b"] {
            let e = next_runlevel(r, &format!("quiet {w}")).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Refused, "{w}");
            assert!(e.to_string().contains("runs whole"), "{w}: {e}");
        }
        let r1_tmp = root_with("id:1:initdefault:\n");
        let r1 = r1_tmp.path();
        let e = next_runlevel(r1, "").unwrap_err();
        assert!(
            e.to_string().contains("inittab:1: initdefault \"1\""),
            "{e}"
        );
        assert_eq!((e.kind(), e.line()), (ErrorKind::Parse, Some(1)));
        assert_eq!(e.path(), Some(r1.join("etc/inittab").as_path()));
        let none_tmp = root_with("si::sysinit:/etc/init.d/rcS\n# id:2:initdefault:\n");
        let none = none_tmp.path();
        assert!(next_runlevel(none, "")
            .unwrap_err()
            .to_string()
            .contains("no initdefault"));
        let missing = none.join("no-such-root");
        let e = next_runlevel(&missing, "").unwrap_err();
        assert!(
            e.to_string().contains("expected an initdefault line"),
            "{e}"
        );
        // A missing inittab is the I/O kind, naming the file, with the OS error beneath.
        assert_eq!(e.kind(), ErrorKind::Io);
        assert_eq!(e.path(), Some(missing.join("etc/inittab").as_path()));
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn boot_state_from_the_span_log() {
        let p = Path::new("/run/bootprint/rc.log");
        let head = "# bootprint rc 1\n";
        assert_eq!(BootState::parse(head, p), None);
        let two = format!("{head}1 rc_begin runlevel=2 action=start\n");
        assert_eq!(BootState::parse(&two, p), None, "only runlevel S counts");
        let s = format!(
            "{head}1 rc_begin runlevel=S action=start\n2 rc_start script=udev runlevel=S\n\
             3 rc_start script=hostname.sh runlevel=S\n4 rc_end script=hostname.sh runlevel=S\n\
             5 rc_reached runlevel=S\n6 rc_handoff runlevel=S pid=4242\n"
        );
        let st = BootState::parse(&s, p).unwrap();
        assert!(st.has_ended("hostname.sh") && !st.has_ended("udev") && !st.done);
        assert_eq!(st.worker, Some(4242));
        assert_eq!(st.started.len(), 2);
        let done = format!("{s}7 rc_end script=udev runlevel=S\n8 rc_done runlevel=S\n");
        let st = BootState::parse(&done, p).unwrap();
        assert!(st.done && st.has_ended("anything") && !st.worker_lost());
        // A fallback after a lost worker: what the worker started stays started.
        let fb = format!("{s}7 rc_fallback runlevel=S reason=worker\n8 rc_begin runlevel=S\n");
        let st = BootState::parse(&fb, p).unwrap();
        assert!(st.started.contains("udev") && !st.done);
    }
}
