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
