//! Exec events from fanotify `FAN_OPEN_EXEC` (Linux 5.0+): which program ran, when, by whom.
//! Where the kernel lacks it (or we lack the privilege) [`ExecWatch::open`] fails and the
//! recorder goes on without exec events.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;

use crate::sys;

/// One program execution seen by fanotify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    /// The process that executed the file.
    pub pid: u32,
    /// The executed file (resolved from the event's descriptor).
    pub path: String,
}

/// A fanotify group watching executions on one file system.
pub struct ExecWatch {
    fd: OwnedFd,
    raw: Vec<sys::RawFanEvent>,
    /// Events the kernel dropped because our queue overflowed.
    pub overflows: u64,
}

impl ExecWatch {
    /// Watches executions on the file system that holds `mount_point`.
    pub fn open(mount_point: &Path) -> io::Result<ExecWatch> {
        let fd = sys::fanotify_init()?;
        sys::fanotify_mark(&fd, libc::FAN_OPEN_EXEC, mount_point)?;
        Ok(ExecWatch {
            fd,
            raw: Vec::new(),
            overflows: 0,
        })
    }

    /// The descriptor to poll for readiness.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Drains the queued events.
    pub fn drain(&mut self, out: &mut Vec<Exec>) -> io::Result<()> {
        self.raw.clear();
        sys::fanotify_read(&self.fd, &mut self.raw)?;
        for ev in self.raw.drain(..) {
            if ev.mask & libc::FAN_Q_OVERFLOW != 0 {
                self.overflows += 1;
                continue;
            }
            let Some(file) = ev.file else { continue };
            let link = format!("/proc/self/fd/{}", file.as_raw_fd());
            let path = std::fs::read_link(&link)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push(Exec {
                pid: ev.pid.max(0) as u32,
                path,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real fanotify on the machine running the tests: needs root (CAP_SYS_ADMIN).
    #[test]
    fn sees_a_real_exec_when_root() {
        if ::sys::euid() != 0 {
            testkit::skip("fanotify needs root");
            return;
        }
        let mut watch = ExecWatch::open(Path::new("/")).expect("fanotify on /");
        let child = std::process::Command::new("/bin/true").status().unwrap();
        assert!(child.success());
        let mut seen = Vec::new();
        for _ in 0..50 {
            ::sys::poll_readable(watch.raw_fd(), 20).unwrap();
            watch.drain(&mut seen).unwrap();
            if seen.iter().any(|e| e.path.ends_with("/true")) {
                break;
            }
        }
        assert!(
            seen.iter().any(|e| e.path.ends_with("/true") && e.pid > 0),
            "no exec event for /bin/true in {seen:?}"
        );
    }
}
