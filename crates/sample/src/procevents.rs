//! Process events from the kernel's process events connector (`CONFIG_PROC_EVENTS`, a
//! netlink multicast group; root only): one small message per fork, exec and exit, stamped
//! by the kernel, read in batches of up to [`BATCH`] per system call. It replaces fanotify's
//! exec events where the kernel has it: fanotify opens a descriptor in the reader for every
//! exec, which the reader must resolve and close, three costly calls per exec under
//! emulation (docs/recorder.md, "Cost"); here an exec costs a share of one `recvmmsg` and,
//! for its path, one `readlink` of `/proc/PID/exe`.
//!
//! Message layout (include/uapi/linux/netlink.h, connector.h, cn_proc.h): a 16-byte
//! `nlmsghdr`, a 20-byte `cn_msg` (`idx`, `val`, `seq`, `ack`, `len`, `flags`), then the
//! `proc_event`: `what` (u32), `cpu` (u32), `timestamp_ns` (u64, CLOCK_MONOTONIC), and the
//! event's data (fork: parent pid, parent tgid, child pid, child tgid; exec and exit: pid,
//! tgid, ...).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::sys;

/// The connector's multicast group and value for process events (`CN_IDX_PROC`,
/// `CN_VAL_PROC`).
const CN_IDX_PROC: u32 = 1;
const CN_VAL_PROC: u32 = 1;
/// `enum proc_cn_mcast_op`.
const MCAST_LISTEN: u32 = 1;
const MCAST_IGNORE: u32 = 2;
/// `proc_event.what`.
const WHAT_FORK: u32 = 0x1;
const WHAT_EXEC: u32 = 0x2;
const WHAT_EXIT: u32 = 0x8000_0000;
/// Where the `proc_event` starts in a datagram: after `nlmsghdr` and `cn_msg`.
const EVENT_AT: usize = 16 + 20;
/// Datagrams taken per system call.
pub const BATCH: usize = 64;
/// The socket's receive buffer: a boot's burst of forks and exits while the recorder waits
/// its turn must not overflow it (each queued datagram costs about 1 KiB of it).
const RCVBUF: usize = 4 << 20;

/// One process event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcEvent {
    /// A task was created: a process when `child_pid == child_tgid`, else a thread.
    Fork {
        /// When, CLOCK_MONOTONIC ns.
        t_ns: u64,
        /// The creating process.
        parent_tgid: u32,
        /// The new task.
        child_pid: u32,
        /// The new task's process.
        child_tgid: u32,
    },
    /// A process executed a program.
    Exec {
        /// When, CLOCK_MONOTONIC ns.
        t_ns: u64,
        /// The process.
        tgid: u32,
    },
    /// A task ended: the process when `pid == tgid`.
    Exit {
        /// When, CLOCK_MONOTONIC ns.
        t_ns: u64,
        /// The task.
        pid: u32,
        /// Its process.
        tgid: u32,
    },
}

/// A listening connection to the process events connector. Dropping it tells the kernel to
/// stop: the kernel counts listeners globally and builds every event while the count is
/// above zero, so a listener that just closed its socket would cost every later fork.
pub struct ProcEvents {
    fd: OwnedFd,
    bufs: Vec<[u8; 256]>,
    lens: Vec<usize>,
    /// Times the kernel dropped events because the socket's buffer was full.
    pub overflows: u64,
}

impl ProcEvents {
    /// Opens the connector and starts listening. Fails without root (CAP_NET_ADMIN) or
    /// without `CONFIG_PROC_EVENTS`; the caller then uses fanotify or goes without.
    pub fn open() -> io::Result<ProcEvents> {
        let fd = sys::connector_socket(CN_IDX_PROC, RCVBUF)?;
        sys::netlink_send(&fd, &control_message(MCAST_LISTEN))?;
        Ok(ProcEvents {
            fd,
            bufs: vec![[0; 256]; BATCH],
            lens: Vec::with_capacity(BATCH),
            overflows: 0,
        })
    }

    /// The descriptor to poll for readiness.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Takes every event queued now, in the kernel's order.
    pub fn drain(&mut self, out: &mut Vec<ProcEvent>) -> io::Result<()> {
        loop {
            let n = match sys::recv_batch(&self.fd, &mut self.bufs, &mut self.lens) {
                Ok(n) => n,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.overflows += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            for (buf, &len) in self.bufs.iter().zip(&self.lens) {
                if let Some(ev) = parse(&buf[..len.min(buf.len())]) {
                    out.push(ev);
                }
            }
            if n < BATCH {
                return Ok(());
            }
        }
    }
}

impl Drop for ProcEvents {
    fn drop(&mut self) {
        let _ = sys::netlink_send(&self.fd, &control_message(MCAST_IGNORE));
    }
}

/// The datagram that starts (`MCAST_LISTEN`) or stops (`MCAST_IGNORE`) the events.
fn control_message(op: u32) -> Vec<u8> {
    let len = (EVENT_AT + 4) as u32;
    let mut m = Vec::with_capacity(len as usize);
    m.extend_from_slice(&len.to_ne_bytes()); // nlmsg_len
    m.extend_from_slice(&(libc::NLMSG_DONE as u16).to_ne_bytes()); // nlmsg_type
    m.extend_from_slice(&0u16.to_ne_bytes()); // nlmsg_flags
    m.extend_from_slice(&0u32.to_ne_bytes()); // nlmsg_seq
    m.extend_from_slice(&std::process::id().to_ne_bytes()); // nlmsg_pid
    m.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
    m.extend_from_slice(&CN_VAL_PROC.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes()); // seq
    m.extend_from_slice(&0u32.to_ne_bytes()); // ack
    m.extend_from_slice(&4u16.to_ne_bytes()); // len of the data
    m.extend_from_slice(&0u16.to_ne_bytes()); // flags
    m.extend_from_slice(&op.to_ne_bytes());
    m
}

/// One datagram from the connector, or `None` for anything but a process fork, exec or exit
/// (the kernel's acknowledgement, uid and comm changes, a short or foreign message).
pub fn parse(msg: &[u8]) -> Option<ProcEvent> {
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(msg.get(at..at + 4)?.try_into().ok()?))
    };
    let nl_len = u32_at(0)? as usize;
    if nl_len > msg.len() || u32_at(16)? != CN_IDX_PROC || u32_at(20)? != CN_VAL_PROC {
        return None;
    }
    let what = u32_at(EVENT_AT)?;
    let t_ns = u64::from_ne_bytes(msg.get(EVENT_AT + 8..EVENT_AT + 16)?.try_into().ok()?);
    let data = EVENT_AT + 16;
    match what {
        WHAT_FORK => Some(ProcEvent::Fork {
            t_ns,
            parent_tgid: u32_at(data + 4)?,
            child_pid: u32_at(data + 8)?,
            child_tgid: u32_at(data + 12)?,
        }),
        WHAT_EXEC => Some(ProcEvent::Exec {
            t_ns,
            tgid: u32_at(data + 4)?,
        }),
        WHAT_EXIT => Some(ProcEvent::Exit {
            t_ns,
            pid: u32_at(data)?,
            tgid: u32_at(data + 4)?,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A datagram as the kernel writes it (cn_proc.c, `send_msg`), for the parser tests.
    fn datagram(what: u32, t_ns: u64, data: [u32; 4]) -> Vec<u8> {
        let mut m = control_message(0);
        m.truncate(EVENT_AT);
        m.extend_from_slice(&what.to_ne_bytes());
        m.extend_from_slice(&1u32.to_ne_bytes()); // cpu
        m.extend_from_slice(&t_ns.to_ne_bytes());
        for d in data {
            m.extend_from_slice(&d.to_ne_bytes());
        }
        let len = m.len() as u32;
        m[..4].copy_from_slice(&len.to_ne_bytes());
        m
    }

    #[test]
    fn parses_fork_exec_and_exit() {
        assert_eq!(
            parse(&datagram(WHAT_FORK, 7, [10, 10, 11, 11])),
            Some(ProcEvent::Fork {
                t_ns: 7,
                parent_tgid: 10,
                child_pid: 11,
                child_tgid: 11
            })
        );
        assert_eq!(
            parse(&datagram(WHAT_EXEC, 8, [12, 11, 0, 0])),
            Some(ProcEvent::Exec { t_ns: 8, tgid: 11 })
        );
        assert_eq!(
            parse(&datagram(WHAT_EXIT, 9, [12, 11, 0, 0])),
            Some(ProcEvent::Exit {
                t_ns: 9,
                pid: 12,
                tgid: 11
            })
        );
    }

    #[test]
    fn other_and_broken_datagrams_are_skipped() {
        // The acknowledgement of MCAST_LISTEN (PROC_EVENT_NONE) and a comm change.
        assert_eq!(parse(&datagram(0, 1, [0; 4])), None);
        assert_eq!(parse(&datagram(0x200, 1, [1, 1, 0, 0])), None);
        let full = datagram(WHAT_EXEC, 8, [12, 11, 0, 0]);
        for cut in [0, 10, EVENT_AT, EVENT_AT + 17] {
            assert_eq!(parse(&full[..cut]), None, "cut at {cut}");
        }
        let mut foreign = full.clone();
        foreign[16] = 9; // another connector index
        assert_eq!(parse(&foreign), None);
    }

    /// The real connector on the machine running the tests: needs root.
    #[test]
    fn sees_a_real_fork_exec_and_exit_when_root() {
        if ::sys::euid() != 0 {
            testkit::skip("the process events connector needs root");
            return;
        }
        let mut events = match ProcEvents::open() {
            Ok(e) => e,
            Err(e) => panic!("process events connector: {e} (kernel without CONFIG_PROC_EVENTS?)"),
        };
        let child = std::process::Command::new("/bin/true").spawn().unwrap();
        let pid = child.id();
        let status = child.wait_with_output().unwrap().status;
        assert!(status.success());
        let mut seen = Vec::new();
        let has_all = |seen: &[ProcEvent]| {
            let fork = seen
                .iter()
                .any(|e| matches!(e, ProcEvent::Fork { child_tgid, .. } if *child_tgid == pid));
            let exec = seen
                .iter()
                .any(|e| matches!(e, ProcEvent::Exec { tgid, .. } if *tgid == pid));
            let exit = seen
                .iter()
                .any(|e| matches!(e, ProcEvent::Exit { tgid, .. } if *tgid == pid));
            fork && exec && exit
        };
        for _ in 0..50 {
            ::sys::poll_readable(events.raw_fd(), 20).unwrap();
            events.drain(&mut seen).unwrap();
            if has_all(&seen) {
                break;
            }
        }
        assert!(
            has_all(&seen),
            "no fork, exec and exit of {pid} in {seen:?}"
        );
        let stamps: Vec<u64> = seen
            .iter()
            .filter_map(|e| match e {
                ProcEvent::Exec { t_ns, tgid } if *tgid == pid => Some(*t_ns),
                _ => None,
            })
            .collect();
        let mono_now = ::sys::boottime_ns() - sys::suspended_ns();
        assert!(
            stamps.iter().all(|&t| t > 0 && t <= mono_now),
            "exec stamps {stamps:?} not on the monotonic clock (now {mono_now})"
        );
    }
}
