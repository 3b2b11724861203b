//! The system calls more than one bootprint crate makes, each behind a safe function: the
//! one place that calls libc for them, and every `unsafe` block here carries a `// SAFETY:`
//! note.
//!
//! The boot path (`record`, `rc`, `readahead`, `initramfs`, `sample`, `modules`) and the CLI
//! share it: clocks ([`boottime_ns`], [`thread_cpu_ns`]), processes ([`fork`], [`exit_now`],
//! [`getpid`], [`waitpid`], [`kill`], [`setsid`]), descriptors ([`pipe`],
//! [`poll_readable`]), file systems ([`mount`], [`statfs`], [`statvfs`]), the kernel
//! ([`kernel_release`], [`clk_tck`], [`page_size`], [`reboot`]), the file helper the boot
//! path reads its own files with ([`read_regular`], [`read_capped`]), and files as root must touch them
//! (`files.rs`): paths opened without following any symlink ([`open_nofollow`],
//! [`open_regular`], [`open_dir`], [`open_beneath`]), steps relative to a directory held
//! open ([`Dir`]), and the one hardened atomic write ([`write_atomic`]); and the shape of the
//! boot path's typed errors ([`Error`] over a crate's [`Kind`]).
//!
//! It owns no policy: it does what it is asked once and returns the kernel's answer (an
//! `io::Error` from errno, or a documented fallback). A system call only one crate makes
//! stays in that crate's `sys.rs` (ptys in `rc`, fanotify in `sample`, `mincore` in
//! `readahead`, `finit_module` in `initramfs`); libkmod's binding stays in `modules`.
//! It depends on libc alone, so the boot-path binary stays small.
//!
//! ```
//! let t0 = sys::boottime_ns();
//! assert!(sys::boottime_ns() >= t0);
//! assert!(sys::getpid() > 0);
//! ```
#![deny(missing_docs)]

mod error;
mod files;
pub use error::{Error, Kind};
pub use files::*;

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))
}

fn cstr(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "holds a NUL byte"))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

// ---- clocks ----

fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// `CLOCK_BOOTTIME` in nanoseconds: the clock behind `/proc/uptime` (it counts suspend), and
/// the trace's and `events.log`'s clock. 0 if the clock cannot be read (CLOCK_BOOTTIME
/// exists on every Linux bootprint supports, 2.6.39+).
pub fn boottime_ns() -> u64 {
    clock_ns(libc::CLOCK_BOOTTIME).unwrap_or(0)
}

/// `CLOCK_REALTIME` in nanoseconds since the epoch (the wall clock; NTP and the admin can
/// step it); 0 if it cannot be read.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME).unwrap_or(0)
}

/// `CLOCK_MONOTONIC` in nanoseconds (the kernel's event stamps); 0 if it cannot be read.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) in nanoseconds; 0 if it cannot be
/// read. For costs measured in CPU, not wall, time (a busy machine's wait for a CPU is not
/// the measured code's doing).
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

// ---- the kernel ----

/// Clock ticks a second (`sysconf(_SC_CLK_TCK)`: `/proc/PID/stat` CPU times are in these);
/// 100 if unknown.
pub fn clk_tck() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// The page size of this kernel (`sysconf(_SC_PAGESIZE)`); 4096 if unknown.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// The running kernel's release (`uname -r`); `None` if uname fails.
pub fn kernel_release() -> Option<String> {
    // SAFETY: utsname is plain data; all-zero is a valid value and uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    // Up to the NUL, and never past the array even without one.
    let bytes: Vec<u8> = u
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// sync(2): every file system's dirty data written out.
pub fn sync() {
    // SAFETY: no arguments, no preconditions.
    unsafe { libc::sync() }
}

/// Whether the process's standard output is a terminal (isatty(3) on fd 1).
pub fn stdout_is_tty() -> bool {
    // SAFETY: isatty only looks at the descriptor number.
    unsafe { libc::isatty(1) == 1 }
}

/// reboot(2) with `cmd` (`libc::RB_AUTOBOOT`, `RB_POWER_OFF`, `RB_HALT_SYSTEM`), without a
/// sync; it returns only on failure (not root), with the error.
pub fn reboot(cmd: libc::c_int) -> io::Error {
    // SAFETY: no memory is passed.
    unsafe { libc::reboot(cmd) };
    io::Error::last_os_error()
}

// ---- this process and its children ----

/// Sets `signal`'s disposition back to the default (the CLI's SIGPIPE, which Rust ignores:
/// `bootprint ... | head` then stops quietly, as cat does).
pub fn default_signal(signal: libc::c_int) {
    // SAFETY: setting a signal's disposition to the default has no preconditions.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
    }
}

/// This process's pid.
pub fn getpid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::getpid() }
}

/// This process's effective uid (0: root).
pub fn euid() -> u32 {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() }
}

/// fork(2): `Ok(0)` in the child, the child's pid in the parent. The caller must be
/// single-threaded when it forks (the boot path, rc's runner and the initramfs's /init are),
/// so the child's copy of the address space holds no lock a vanished thread owned; a child
/// ends with [`exit_now`] or an exec.
pub fn fork() -> io::Result<i32> {
    // SAFETY: see above.
    check(unsafe { libc::fork() })
}

/// Ends the process at once, without destructors or atexit handlers (a forked child must not
/// run its parent's).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and has no preconditions.
    unsafe { libc::_exit(code) }
}

/// setsid(2): this process leads a new session and process group (it loses its controlling
/// terminal). Async-signal-safe, so it may run between fork and exec. Fails (EPERM) when it
/// already leads a process group.
pub fn setsid() -> io::Result<()> {
    // SAFETY: no preconditions; it takes no pointers.
    check(unsafe { libc::setsid() }).map(|_| ())
}

/// kill(2): sends `signal` to `pid` (a negative pid: to that process group; signal 0 only
/// checks that the target exists and may be signalled).
pub fn kill(pid: i32, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: a plain signal; no memory is passed.
    check(unsafe { libc::kill(pid, signal) }).map(|_| ())
}

/// waitpid(2) for `pid`, blocking (EINTR is retried); returns the raw status
/// (`libc::WIFEXITED` and friends read it).
pub fn waitpid(pid: i32) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is writable.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc >= 0 {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Whether the child `pid` has ended (reaping it when it has), without blocking.
pub fn try_wait(pid: i32) -> io::Result<bool> {
    let mut status = 0;
    // SAFETY: `status` is writable.
    let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc == pid)
}

/// Sets this process's name (`comm`; the kernel keeps 15 bytes). A name with a NUL byte is
/// ignored.
pub fn set_process_name(name: &str) {
    let Ok(c) = CString::new(name) else {
        return;
    };
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of which the kernel keeps 15 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// Puts the calling thread in the idle I/O class (ioprio_set(2)), so its reads are served
/// only when no one else waits for the disk (on schedulers that honour classes: BFQ, CFQ).
pub fn ioprio_idle() -> io::Result<()> {
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    const IOPRIO_CLASS_IDLE: libc::c_long = 3;
    const IOPRIO_CLASS_SHIFT: libc::c_long = 13;
    // SAFETY: plain syscall on the calling thread (who = 0); no pointers.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0 as libc::c_long,
            IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// ioprio_get(2) of the calling thread, raw (class << 13 | data); for tests of
/// [`ioprio_idle`].
pub fn ioprio_get() -> io::Result<i64> {
    // SAFETY: plain syscall on the calling thread; no pointers.
    let rc = unsafe { libc::syscall(libc::SYS_ioprio_get, 1 as libc::c_long, 0 as libc::c_long) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}

// ---- descriptors ----

/// A pipe with both ends close-on-exec: (read end, write end).
pub fn pipe() -> io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` holds room for the two descriptors.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// Waits up to `timeout_ms` (negative: without limit) for `fd` to become readable, hung up
/// (EOF on a pipe whose writers are gone comes as POLLHUP without POLLIN) or in error:
/// `Ok(true)` when it is, `Ok(false)` on timeout or when a signal interrupted the wait.
pub fn poll_readable(fd: RawFd, timeout_ms: i32) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(rc > 0 && pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0)
}

// ---- file systems ----

/// mount(2) of `source` on `target`. `fstype` and `data` are passed as NULL when `None`
/// (a move or bind needs no type; most pseudo file systems no data).
pub fn mount(
    source: &str,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let s = cstr(source)?;
    let t = cstring(target)?;
    let f = fstype.map(cstr).transpose()?;
    let d = data.map(cstr).transpose()?;
    let fp = f.as_ref().map_or(std::ptr::null(), |f| f.as_ptr());
    let dp = d
        .as_ref()
        .map_or(std::ptr::null(), |d| d.as_ptr() as *const libc::c_void);
    // SAFETY: NUL-terminated strings that outlive the call, or null where the kernel
    // allows it (type and data).
    check(unsafe { libc::mount(s.as_ptr(), t.as_ptr(), fp, flags, dp) }).map(|_| ())
}

/// What statfs(2) says of a file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsStat {
    /// `f_type`: the file system's magic number (`TMPFS_MAGIC`, `EXT4_SUPER_MAGIC`...).
    pub fs_type: i64,
    /// `f_fsid`, both 32-bit halves as one number (high: the second).
    pub fsid: u64,
}

/// statfs(2) `f_type` magic numbers (linux/magic.h) bootprint tells apart.
pub mod fs_magic {
    /// ext2, ext3 and ext4 (`EXT4_SUPER_MAGIC`).
    pub const EXT4: i64 = 0xEF53;
    /// btrfs.
    pub const BTRFS: i64 = 0x9123_683E;
    /// XFS (`XFSB`).
    pub const XFS: i64 = 0x5846_5342;
    /// F2FS.
    pub const F2FS: i64 = 0xF2F5_2010;
    /// tmpfs, an initramfs's file system when the kernel unpacks it into one.
    pub const TMPFS: i64 = 0x0102_1994;
    /// ramfs, the other one.
    pub const RAMFS: i64 = 0x8584_58f6;
    /// overlayfs.
    pub const OVERLAY: i64 = 0x794C_7630;
    /// SquashFS.
    pub const SQUASHFS: i64 = 0x7371_7368;
    /// FAT (`MSDOS_SUPER_MAGIC`).
    pub const VFAT: i64 = 0x4D44;
    /// NFS.
    pub const NFS: i64 = 0x6969;

    /// The name of a file system by its magic, for those a root or /usr is commonly on
    /// (btrfs files have a device number of their own, not the mount's, so mountinfo does
    /// not name their type).
    pub fn name(magic: i64) -> Option<&'static str> {
        Some(match magic {
            EXT4 => "ext4",
            BTRFS => "btrfs",
            XFS => "xfs",
            F2FS => "f2fs",
            TMPFS => "tmpfs",
            RAMFS => "ramfs",
            OVERLAY => "overlay",
            SQUASHFS => "squashfs",
            VFAT => "vfat",
            NFS => "nfs",
            _ => return None,
        })
    }
}

/// statfs(2) of the file system holding `path`.
pub fn statfs(path: &Path) -> io::Result<FsStat> {
    let c = cstring(path)?;
    // SAFETY: an all-zero statfs is a valid out-parameter.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `s` writable.
    check(unsafe { libc::statfs(c.as_ptr(), &mut s) })?;
    // SAFETY: fsid_t is two c_ints (its field is private in the libc crate); reading it as
    // such is what the C definition says it is.
    let v: [i32; 2] = unsafe { std::mem::transmute_copy(&s.f_fsid) };
    Ok(FsStat {
        fs_type: s.f_type as i64,
        fsid: ((v[1] as u32 as u64) << 32) | v[0] as u32 as u64,
    })
}

/// What statvfs(3) says of a file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VfsStat {
    /// Mounted read-only (`ST_RDONLY`).
    pub read_only: bool,
    /// Bytes free to unprivileged users (`f_bavail * f_frsize`), as `df` reports them.
    pub avail_bytes: u64,
    /// The file system's size in bytes (`f_blocks * f_frsize`).
    pub total_bytes: u64,
}

/// statvfs(3) of the file system holding `path`.
pub fn statvfs(path: &Path) -> io::Result<VfsStat> {
    let c = cstring(path)?;
    // SAFETY: an all-zero statvfs is a valid out-parameter.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` writable.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(VfsStat {
        read_only: st.f_flag & libc::ST_RDONLY != 0,
        avail_bytes: (st.f_bavail as u64).saturating_mul(st.f_frsize as u64),
        total_bytes: (st.f_blocks as u64).saturating_mul(st.f_frsize as u64),
    })
}

// ---- the boot path's own files ----

/// Reads a file the boot path trusts only so far (configuration, state, notes): it must be a
/// regular file (a FIFO or a device would block or have effects: it is opened non-blocking
/// and checked before any read) of at most `max_bytes` (no allocation sized by what the file
/// claims). Symlinks are followed; the target must be regular too.
pub fn read_regular(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    if !f.metadata()?.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    read_capped(f, max_bytes)
}

/// Reads an open file whole, if it holds at most `max_bytes` (InvalidData "larger than N
/// bytes" otherwise): no allocation sized by what the file claims, and a file that grows
/// while read is caught (at most one byte past the cap is read).
pub fn read_capped(f: File, max_bytes: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let too_big = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {max_bytes} bytes"),
        )
    };
    if f.metadata()?.len() > max_bytes {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_and_kernel_facts() {
        let a = boottime_ns();
        assert!(a > 0 && boottime_ns() >= a);
        assert!(monotonic_ns() > 0 && monotonic_ns() <= boottime_ns());
        assert!(thread_cpu_ns() > 0);
        assert!(clk_tck() > 0 && page_size().is_power_of_two());
        let r = kernel_release().expect("uname");
        assert!(!r.is_empty() && !r.contains('\0'), "{r:?}");
        assert_eq!(getpid() as u32, std::process::id());
    }

    #[test]
    fn a_pipe_polls_readable_once_written_or_closed() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let (r, mut w) = pipe().unwrap();
        assert!(!poll_readable(r.as_raw_fd(), 0).unwrap());
        w.write_all(b"x").unwrap();
        assert!(poll_readable(r.as_raw_fd(), 0).unwrap());
        let (r, w) = pipe().unwrap();
        drop(w);
        assert!(
            poll_readable(r.as_raw_fd(), 1000).unwrap(),
            "hang-up counts"
        );
    }

    #[test]
    fn a_forked_child_is_waited_for_and_signals_reach_it() {
        let pid = fork().unwrap();
        if pid == 0 {
            exit_now(7);
        }
        assert!(kill(pid, 0).is_ok(), "exists until reaped");
        let status = waitpid(pid).unwrap();
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 7);
        assert!(kill(pid, 0).is_err(), "gone once reaped");
        assert!(waitpid(pid).is_err(), "not our child any more");
    }

    #[test]
    fn file_system_facts_of_a_temp_dir() {
        let d = std::env::temp_dir();
        let s = statfs(&d).unwrap();
        assert_ne!(s.fs_type, 0);
        assert!(statfs(Path::new("/no/such/dir")).is_err());
        let v = statvfs(&d).unwrap();
        assert!(!v.read_only, "the temp dir is writable");
        assert!(statvfs(Path::new("/proc")).is_ok());
        assert!(statvfs(Path::new("a\0b")).is_err());
    }
}
