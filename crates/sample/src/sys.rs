//! The raw system calls only the sampler makes (`pread` of /proc, `getdents64`, fanotify,
//! the process events connector, `getrusage`); every `unsafe` block of this crate lives here.
//! Those other crates make too (clocks, fork, poll...) are the `sys` crate's.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// Reads from the start of `fd` into `buf` without moving a file offset (`pread`), so one
/// open `/proc/PID/stat` can be read at every sample. Returns the number of bytes read.
pub fn pread_start(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` writable bytes and `fd` is open.
    let n = unsafe { libc::pread(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Opens the directory `path` (read-only, `O_DIRECTORY | O_CLOEXEC`) for [`numeric_entries`].
pub fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let c = cstring(path)?;
    // SAFETY: `c` is a valid NUL-terminated path.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The names of the directory open at `dir` that are decimal numbers (the processes of a
/// /proc), read from its start again with `getdents64` into `buf`: no open, no allocation
/// per entry, which is what listing /proc at every sample cost. Appends to `out`.
pub fn numeric_entries(dir: &OwnedFd, buf: &mut [u8], out: &mut Vec<u32>) -> io::Result<()> {
    // SAFETY: lseek on an open descriptor has no memory-safety preconditions.
    if unsafe { libc::lseek(dir.as_raw_fd(), 0, libc::SEEK_SET) } < 0 {
        return Err(io::Error::last_os_error());
    }
    loop {
        // SAFETY: `buf` is valid for `buf.len()` writable bytes; the kernel writes at most
        // that many.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir.as_raw_fd(),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Ok(());
        }
        let filled = &buf[..n as usize];
        // struct linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name NUL-terminated.
        let mut at = 0usize;
        while at + 19 <= filled.len() {
            let reclen = u16::from_ne_bytes([filled[at + 16], filled[at + 17]]) as usize;
            if reclen < 19 || at + reclen > filled.len() {
                break;
            }
            let name = &filled[at + 19..at + reclen];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            if !name.is_empty() && name.len() <= 10 && name.iter().all(u8::is_ascii_digit) {
                let v = name.iter().fold(0u64, |a, &b| a * 10 + u64::from(b - b'0'));
                if let Ok(pid) = u32::try_from(v) {
                    out.push(pid);
                }
            }
            at += reclen;
        }
    }
}

/// Opens `path` read-only with `O_CLOEXEC`.
pub fn open_read(path: &Path) -> io::Result<OwnedFd> {
    let c = cstring(path)?;
    // SAFETY: `c` is a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn cstring(path: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))
}

/// Waits up to `timeout_ms` for `fd` to become readable (or hung up), as
/// [`sys::poll_readable`](::sys::poll_readable) does; with no `fd` to watch, sleeps that
/// long. `Ok(true)` when it is readable.
pub fn wait_readable(fd: Option<RawFd>, timeout_ms: i32) -> io::Result<bool> {
    match fd {
        Some(fd) => ::sys::poll_readable(fd, timeout_ms),
        None => {
            std::thread::sleep(std::time::Duration::from_millis(timeout_ms.max(0) as u64));
            Ok(false)
        }
    }
}

/// fanotify_init(2): a notification group, non-blocking, whose event fds are read-only.
/// The queue is unlimited where allowed (root), so a busy boot does not overflow it and lose
/// files; the learner drains it continuously.
pub fn fanotify_init() -> io::Result<OwnedFd> {
    let init = |extra: libc::c_uint| {
        // SAFETY: plain syscall with constant flags; no pointers.
        check(unsafe {
            libc::fanotify_init(
                libc::FAN_CLASS_NOTIF | libc::FAN_CLOEXEC | libc::FAN_NONBLOCK | extra,
                (libc::O_RDONLY | libc::O_LARGEFILE | libc::O_CLOEXEC) as u32,
            )
        })
    };
    let fd = init(libc::FAN_UNLIMITED_QUEUE).or_else(|_| init(0))?;
    // SAFETY: `fd` was just returned by the kernel and nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// fanotify_mark(2) adding `mask` on the whole filesystem holding `path` (Linux 4.20+), or
/// on its mount when the kernel has no filesystem marks.
pub fn fanotify_mark(fd: &OwnedFd, mask: u64, path: &Path) -> io::Result<()> {
    let c = cstring(path)?;
    let mark = |how: libc::c_uint| {
        // SAFETY: `fd` is an open fanotify group and `c` a NUL-terminated path that
        // outlives the call.
        check(unsafe {
            libc::fanotify_mark(
                fd.as_raw_fd(),
                libc::FAN_MARK_ADD | how,
                mask,
                libc::AT_FDCWD,
                c.as_ptr(),
            )
        })
    };
    match mark(libc::FAN_MARK_FILESYSTEM) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => mark(libc::FAN_MARK_MOUNT).map(|_| ()),
        Err(e) => Err(e),
    }
}

/// One raw fanotify event: the process that caused it and an fd of the file (owned).
pub struct RawFanEvent {
    /// Process id.
    pub pid: i32,
    /// Event mask.
    pub mask: u64,
    /// The file, opened by the kernel for us; `None` on queue overflow.
    pub file: Option<OwnedFd>,
}

/// Reads the fanotify events now queued (non-blocking); empty when none.
pub fn fanotify_read(fd: &OwnedFd, out: &mut Vec<RawFanEvent>) -> io::Result<()> {
    const META: usize = std::mem::size_of::<libc::fanotify_event_metadata>();
    let mut buf = [0u8; 16 * 1024];
    loop {
        // SAFETY: buf is valid for its length.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(()),
                io::ErrorKind::Interrupted => continue,
                _ => Err(e),
            };
        }
        let n = n as usize;
        if n == 0 {
            return Ok(());
        }
        let mut off = 0;
        while off + META <= n {
            // SAFETY: at least META bytes remain at `off`; read_unaligned copes with any
            // alignment of the byte buffer.
            let meta: libc::fanotify_event_metadata =
                unsafe { std::ptr::read_unaligned(buf[off..].as_ptr().cast()) };
            let len = meta.event_len as usize;
            if len < META || off + len > n {
                break;
            }
            let file = if meta.fd >= 0 {
                // SAFETY: the kernel opened this fd for us; we own and will close it.
                Some(unsafe { OwnedFd::from_raw_fd(meta.fd) })
            } else {
                None
            };
            out.push(RawFanEvent {
                pid: meta.pid,
                mask: meta.mask,
                file,
            });
            off += len;
        }
    }
}

/// A netlink socket of the kernel connector (`NETLINK_CONNECTOR`), bound to multicast
/// `group`, non-blocking, with a receive buffer of `rcvbuf` bytes where allowed (the forced
/// size needs CAP_NET_ADMIN; otherwise the normal limit applies).
pub fn connector_socket(group: u32, rcvbuf: usize) -> io::Result<OwnedFd> {
    const NETLINK_CONNECTOR: libc::c_int = 11;
    // SAFETY: plain syscall with constant arguments.
    let fd = check(unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            NETLINK_CONNECTOR,
        )
    })?;
    // SAFETY: `fd` was just returned by the kernel and nobody else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let size = rcvbuf.min(i32::MAX as usize) as libc::c_int;
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: `size` is a c_int that outlives the call; its length is passed.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            break;
        }
    }
    // SAFETY: zeroed sockaddr_nl is valid; family and groups set below.
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    addr.nl_groups = group;
    // SAFETY: `addr` is a valid sockaddr_nl for its length.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    })?;
    Ok(fd)
}

/// Sends one datagram to the kernel (netlink port 0).
pub fn netlink_send(fd: &OwnedFd, msg: &[u8]) -> io::Result<()> {
    // SAFETY: zeroed sockaddr_nl is the kernel's address.
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    // SAFETY: `msg` and `addr` are valid for their lengths.
    let n = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&addr as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// recvmmsg(2), non-blocking: receives up to `bufs.len()` datagrams in one system call, each
/// into its buffer, and sets `lens` to their lengths. Returns how many arrived (0: none
/// queued). ENOBUFS (the socket's buffer overflowed and datagrams were dropped) is returned
/// as an error so the caller can count the loss and read on.
pub fn recv_batch(
    fd: &OwnedFd,
    bufs: &mut [[u8; 256]],
    lens: &mut Vec<usize>,
) -> io::Result<usize> {
    lens.clear();
    let mut iovs: Vec<libc::iovec> = bufs
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = iovs
        .iter_mut()
        .map(|iov| {
            // SAFETY: zeroed msghdr is valid; the iovec pointer is set below.
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = iov;
            h.msg_hdr.msg_iovlen = 1;
            h
        })
        .collect();
    loop {
        // SAFETY: every mmsghdr points at one iovec over a live buffer of its length.
        let n = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                msgs.len() as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(0),
                io::ErrorKind::Interrupted => continue,
                _ => Err(e),
            };
        }
        let n = n as usize;
        lens.extend(msgs[..n].iter().map(|m| m.msg_len as usize));
        return Ok(n);
    }
}

/// CLOCK_BOOTTIME minus CLOCK_MONOTONIC, ns: how long the machine was suspended so far (0
/// during a boot). Converts the kernel's monotonic event stamps to the recorder's clock.
pub fn suspended_ns() -> u64 {
    let mono = ::sys::monotonic_ns();
    if mono == 0 {
        return 0;
    }
    ::sys::boottime_ns().saturating_sub(mono)
}

/// Own CPU time (user + system) in seconds and peak resident size in KiB.
pub fn own_usage() -> (f64, u64) {
    // SAFETY: zeroed rusage is a valid out-parameter.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0.0, 0);
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime) + secs(ru.ru_stime), ru.ru_maxrss as u64)
}

/// Lowers this process's CPU and I/O priority so the recorder yields to the boot:
/// nice 19 and the idle I/O class ([`sys::ioprio_idle`](::sys::ioprio_idle)). Failures
/// only leave the priority as it is.
pub fn become_background() {
    // SAFETY: plain syscall on our own process; no pointers.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
    let _ = ::sys::ioprio_idle();
}
