//! The system calls the initramfs's /init makes, each behind a safe function; the only
//! `unsafe` of the crate.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

fn cstr(p: &str) -> io::Result<CString> {
    CString::new(p).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// This process's pid.
pub fn getpid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::getpid() }
}

/// CLOCK_BOOTTIME in nanoseconds: the clock the trace uses.
pub fn boottime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// mount(2). `fstype` and `data` may be empty.
pub fn mount(
    src: &str,
    target: &str,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> io::Result<()> {
    let (s, t, f, d) = (cstr(src)?, cstr(target)?, cstr(fstype)?, cstr(data)?);
    let fp = if fstype.is_empty() {
        std::ptr::null()
    } else {
        f.as_ptr()
    };
    let dp = if data.is_empty() {
        std::ptr::null()
    } else {
        d.as_ptr() as *const libc::c_void
    };
    // SAFETY: valid NUL-terminated strings or null where the kernel allows it.
    check(unsafe { libc::mount(s.as_ptr(), t.as_ptr(), fp, flags, dp) })
}

/// Moves the mount at `from` to `to` (`mount --move`).
pub fn move_mount(from: &str, to: &str) -> io::Result<()> {
    mount(from, to, "", libc::MS_MOVE, "")
}

/// finit_module(2) of the file at `path` with `options`.
pub fn finit_module(path: &Path, options: &str) -> io::Result<()> {
    let f = std::fs::File::open(path)?;
    let o = cstr(options)?;
    // SAFETY: a valid open fd and a NUL-terminated options string; flags 0.
    let r = unsafe {
        libc::syscall(
            libc::SYS_finit_module,
            f.as_raw_fd(),
            o.as_ptr(),
            0 as libc::c_int,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// chroot(2).
pub fn chroot(path: &str) -> io::Result<()> {
    let p = cstr(path)?;
    // SAFETY: a valid NUL-terminated path.
    check(unsafe { libc::chroot(p.as_ptr()) })
}

/// sync(2).
pub fn sync() {
    // SAFETY: no preconditions.
    unsafe { libc::sync() }
}

/// reboot(2) with `cmd` (`libc::RB_AUTOBOOT`, `RB_POWER_OFF`, `RB_HALT_SYSTEM`); returns
/// only on failure.
pub fn reboot(cmd: libc::c_int) -> io::Error {
    // SAFETY: no memory is passed.
    unsafe { libc::reboot(cmd) };
    io::Error::last_os_error()
}

/// The device number (`st_dev`) of the file system holding `path`, without following a
/// final symlink.
pub fn st_dev(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).ok().map(|m| m.dev())
}

/// Makes a block device node (for a root named by device number whose node devtmpfs named
/// otherwise).
pub fn mknod_block(path: &Path, major: u32, minor: u32) -> io::Result<()> {
    let p = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: a valid NUL-terminated path.
    check(unsafe {
        libc::mknod(
            p.as_ptr(),
            libc::S_IFBLK | 0o600,
            libc::makedev(major, minor),
        )
    })
}

/// A pipe (read end, write end), both close-on-exec.
pub fn pipe() -> io::Result<(std::fs::File, std::fs::File)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Ok(unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    })
}

/// fork(2): 0 in the child, the child's pid in the parent. The caller must be
/// single-threaded (or call only async-signal-safe code in the child until it execs).
pub fn fork() -> io::Result<i32> {
    // SAFETY: /init is single-threaded where it forks; the child runs our own code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(pid)
    }
}

/// _exit(2): ends a forked child without running the parent's exit handlers.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and has no preconditions.
    unsafe { libc::_exit(code) }
}

/// Waits up to `timeout_ms` for `file` to be readable or hung up.
pub fn poll_readable(file: &std::fs::File, timeout_ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    rc > 0 && pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0
}

/// waitpid(2) for a child that has ended or is ending; how it ended, in words.
pub fn waitpid(pid: i32) -> String {
    let mut status = 0;
    loop {
        // SAFETY: `status` is writable.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc >= 0 {
            break;
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return "not waited for".into();
        }
    }
    if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("exit status {}", libc::WEXITSTATUS(status))
    }
}

/// The file system type (`statfs` f_type magic) holding `path`.
pub fn fs_type(path: &Path) -> io::Result<i64> {
    let p = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: zeroed statfs is a valid out-parameter.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid path and out-pointer.
    check(unsafe { libc::statfs(p.as_ptr(), &mut st) })?;
    Ok(st.f_type as i64)
}

/// Writes `text` to the console (where the user sees it at boot), else to stderr.
pub fn console(text: &str) {
    use std::io::Write;
    let told = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/console")
        .and_then(|mut c| c.write_all(text.as_bytes()))
        .is_ok();
    if !told {
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
}
