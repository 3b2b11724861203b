//! The thin layer over raw system calls the sampler needs; every `unsafe` block of this
//! crate lives here.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) in nanoseconds: what the recorder
/// spends per part of a sample.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_BOOTTIME` in nanoseconds: the clock behind `/proc/uptime`, counting suspend.
pub fn boottime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_BOOTTIME exists on every Linux
    // the recorder supports (2.6.39+).
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

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

/// Waits up to `timeout_ms` for `fd` to become readable (or hung up). `Ok(true)` when it is.
pub fn poll_readable(fd: Option<RawFd>, timeout_ms: i32) -> io::Result<bool> {
    let Some(fd) = fd else {
        std::thread::sleep(std::time::Duration::from_millis(timeout_ms.max(0) as u64));
        return Ok(false);
    };
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    // A hang-up or error counts too: the read that follows reports it (EOF on a closed pipe
    // comes as POLLHUP without POLLIN).
    Ok(rc > 0 && pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0)
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
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } != 0 {
        return 0;
    }
    let mono = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
    boottime_ns().saturating_sub(mono)
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

/// `sysconf(_SC_CLK_TCK)` and the page size of this kernel.
pub fn clk_tck_and_page_size() -> (u64, u64) {
    // SAFETY: sysconf has no memory-safety preconditions.
    let (tck, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (
        if tck > 0 { tck as u64 } else { 100 },
        if page > 0 { page as u64 } else { 4096 },
    )
}

/// Lowers this process's CPU and I/O priority so the recorder yields to the boot:
/// nice 19 and the idle I/O class.
pub fn become_background() {
    const IOPRIO_WHO_PROCESS: libc::c_int = 1;
    const IOPRIO_CLASS_IDLE: libc::c_int = 3;
    const IOPRIO_CLASS_SHIFT: libc::c_int = 13;
    // SAFETY: plain syscalls on our own process; failures only leave the priority as is.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0,
            IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT,
        );
    }
}

/// Whether the file system holding `path` is mounted read-only (`None` if unknown).
pub fn is_read_only(path: &Path) -> Option<bool> {
    let c = cstring(path).ok()?;
    // SAFETY: zeroed statvfs is a valid out-parameter.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid path and out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_flag & libc::ST_RDONLY != 0)
}

/// fork(2): `Ok(0)` in the child, the child's pid in the parent. The caller must be
/// single-threaded (the boot path is when it forks), so the child's copy of the address space
/// holds no lock a vanished thread owned.
pub fn fork() -> io::Result<i32> {
    // SAFETY: see above; callers end their child with `exit_now` or an exec.
    check(unsafe { libc::fork() })
}

/// Ends the process at once, without destructors or atexit handlers (a forked child must not
/// run its parent's).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and has no preconditions.
    unsafe { libc::_exit(code) }
}

/// Reads a file the boot path trusts only so far (configuration, state, notes): it must be a
/// regular file (a FIFO or a device would block or have effects: it is opened non-blocking
/// and checked before any read) of at most `max_bytes` (no allocation sized by what the file
/// claims). Symlinks are followed; the target must be regular too.
pub fn read_regular(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let md = f.metadata()?;
    if !md.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let too_big = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {max_bytes} bytes"),
        )
    };
    if md.len() > max_bytes {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    // The size can change under us: read at most one byte past the cap to tell.
    f.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_big());
    }
    Ok(bytes)
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_text(path: &Path, max_bytes: u64) -> io::Result<String> {
    String::from_utf8(read_regular(path, max_bytes)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}
