//! The system calls only rc makes, each unsafe block with its SAFETY note: ptys, the
//! detach from startpar's caller, a script's new session at exec, the built-ins' `touch`,
//! `umask` and `sethostname`; and, over the `sys` crate's (clock, fork, kill, setsid), the
//! process groups and the fork that leaves late services behind.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A new pty: (master, slave). The master is non-blocking; output post-processing is
/// off on the slave so lines end in `\n`, not `\r\n`.
pub fn open_pty() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut master: RawFd = -1;
    let mut slave: RawFd = -1;
    // SAFETY: both out-pointers are valid; name, termios and winsize may be null.
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openpty succeeded, so both are open descriptors we now own.
    let (m, s) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // SAFETY: plain fcntl/tcgetattr/tcsetattr on descriptors owned above; t is initialised
    // by tcgetattr before use.
    unsafe {
        let fl = libc::fcntl(m.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(m.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
        libc::fcntl(m.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(s.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(s.as_raw_fd(), &mut t) == 0 {
            t.c_oflag &= !libc::OPOST;
            libc::tcsetattr(s.as_raw_fd(), libc::TCSANOW, &t);
        }
    }
    Ok((m, s))
}

/// Reads what is available on a non-blocking fd into `buf`. Returns false once the other
/// side is gone (EOF or EIO, which a pty master reports when no slave is open).
pub fn read_available(fd: RawFd, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 4096];
    loop {
        // SAFETY: chunk is a valid writable buffer of the given length.
        let n = unsafe { libc::read(fd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n > 0 {
            buf.extend_from_slice(&chunk[..n as usize]);
            continue;
        }
        if n == 0 {
            return false;
        }
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) => true,
            Some(libc::EINTR) => continue,
            _ => false,
        };
    }
}

/// Waits up to `ms` for any of `fds` to become readable (or hung up).
pub fn poll_read(fds: &[RawFd], ms: i32) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    if p.is_empty() {
        std::thread::sleep(std::time::Duration::from_millis(ms.max(0) as u64));
        return;
    }
    // SAFETY: p is a valid array of p.len() pollfd structs.
    unsafe {
        libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms);
    }
}

/// The command, once forked, leads a new session before it execs: the script and whatever
/// it leaves running are one process group we can signal, and the runner's terminal signals
/// do not reach them. The pty is deliberately not made the controlling terminal: a
/// script's background children would get SIGHUP when the script exits.
pub fn new_session_on_exec(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only calls setsid (async-signal-safe, no allocation) between fork
    // and exec.
    unsafe {
        cmd.pre_exec(::sys::setsid);
    }
}

/// Sends `sig` to the process group `pgid`.
pub fn kill_group(pgid: u32, sig: i32) {
    // A stale group only gives ESRCH.
    let _ = ::sys::kill(-(pgid as i32), sig);
}

/// Whether the process group `pgid` has a member (a zombie counts until reaped).
pub fn group_alive(pgid: u32) -> bool {
    exists(-(pgid as i32))
}

/// kill with signal 0: the target exists (EPERM: it does, but is not ours to signal).
fn exists(pid: i32) -> bool {
    match ::sys::kill(pid, 0) {
        Ok(()) => true,
        Err(e) => e.raw_os_error() == Some(libc::EPERM),
    }
}

/// SIGTERM and SIGKILL, for callers that do not want libc.
pub const SIGTERM: i32 = libc::SIGTERM;
/// See [`SIGTERM`].
pub const SIGKILL: i32 = libc::SIGKILL;

/// Forks; in the child, [`detach_from_caller`]. Returns true in the child, false in the
/// parent.
pub fn fork_detached() -> io::Result<bool> {
    // The runner is single-threaded when it forks (it uses no threads), so the child may run
    // ordinary Rust code.
    if ::sys::fork()? > 0 {
        return Ok(false);
    }
    detach_from_caller();
    Ok(true)
}

/// Starts a new session and points stdin/stdout at /dev/null, so a parent reading our
/// stdout, like `eval "$(startpar ...)"`, sees EOF once the process it started has exited,
/// and the console's hangup when rcS's shell exits does not reach us. Stderr (the console)
/// is kept.
pub fn detach_from_caller() {
    let _ = ::sys::setsid();
    // SAFETY: open and dup2 on our own descriptors; the path is a valid C string.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null >= 0 {
            // dup2 clears O_CLOEXEC on the copies: the scripts inherit /dev/null.
            libc::dup2(null, 0);
            libc::dup2(null, 1);
            if null > 2 {
                libc::close(null);
            }
        }
    }
}

/// The worker's side of [`fork_worker`]: [`Handoff::release`] lets the waiting parent exit.
#[derive(Debug)]
pub struct Handoff {
    fd: File,
}

impl Handoff {
    /// Detaches from the caller ([`detach_from_caller`]), then tells the parent it may exit:
    /// call it once whatever the caller must read (startpar's answer) is written.
    pub fn release(self) {
        detach_from_caller();
        // One byte to our own pipe; a failure (the parent gone) changes nothing for us.
        let _ = (&self.fd).write(b"1");
    }
}

/// What [`fork_worker`] returns in each process.
#[derive(Debug)]
pub enum Forked {
    /// In the worker, which goes on with the work.
    Worker(Handoff),
    /// In the parent, once the worker released it (`true`) or ended without doing so
    /// (`false`: it died, and the parent must see to the work itself).
    Parent {
        /// The worker called [`Handoff::release`].
        released: bool,
        /// The worker's pid.
        worker: u32,
    },
}

/// Forks a worker that can outlive this process: the parent blocks until the worker
/// releases it or ends. A pipe, not a signal or a poll: the worker's end is closed by the
/// kernel however the worker ends, so the wait is bounded by the worker's life, and the
/// write end is close-on-exec, so no script the worker starts holds it open.
pub fn fork_worker() -> io::Result<Forked> {
    let (rd, wr) = ::sys::pipe()?;
    // The runner is single-threaded when it forks (it uses no threads), so the child may run
    // ordinary Rust code.
    let pid = ::sys::fork()?;
    if pid == 0 {
        drop(rd);
        return Ok(Forked::Worker(Handoff { fd: wr }));
    }
    drop(wr);
    let mut b = [0u8; 1];
    let released = loop {
        match (&rd).read(&mut b) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            n => break matches!(n, Ok(1)),
        }
    };
    Ok(Forked::Parent {
        released,
        worker: pid as u32,
    })
}

/// Whether process `pid` exists (a zombie counts).
pub fn process_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    exists(pid as i32)
}

/// Number of online CPUs (at least 1).
pub fn cpu_count() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// A regular file's text (a FIFO or device is an error, never a block; at most 4 MiB), for
/// files read on the boot path: `/etc/inittab`, the span log.
pub fn read_small(path: &std::path::Path) -> io::Result<String> {
    ::sys::read_regular(path, 4 << 20).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// `touch`'s time update: sets both times of the open `file` to now (futimens(2)).
pub fn touch_now(file: &File) -> io::Result<()> {
    // SAFETY: a valid descriptor; a null times pointer means "now" for both.
    if unsafe { libc::futimens(file.as_raw_fd(), std::ptr::null()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// umask(2): sets this process's file mode creation mask; returns the previous one.
pub fn umask(mask: libc::mode_t) -> libc::mode_t {
    // SAFETY: umask only changes this process's mask; it takes no pointers.
    unsafe { libc::umask(mask) }
}

/// sethostname(2).
pub fn sethostname(name: &str) -> io::Result<()> {
    // SAFETY: a valid buffer of the given length (no NUL needed).
    if unsafe { libc::sethostname(name.as_ptr() as *const libc::c_char, name.len()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
