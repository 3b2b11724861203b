//! The system calls only the initramfs's /init makes (finit_module, chroot, sync, mknod),
//! each behind a safe function; the only `unsafe` of the crate. Those other crates make too
//! (mount, fork, pipe, poll, waitpid, statfs, reboot, the clock) are the `sys` crate's.

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

/// Moves the mount at `from` to `to` (`mount --move`).
pub fn move_mount(from: &str, to: &str) -> io::Result<()> {
    ::sys::mount(from, Path::new(to), None, libc::MS_MOVE, None)
}

/// finit_module(2) of the file at `path` with `options`; `compressed`: the file is
/// compressed and the kernel unpacks it (`MODULE_INIT_COMPRESSED_FILE`, Linux 5.17).
pub fn finit_module(path: &Path, options: &str, compressed: bool) -> io::Result<()> {
    const MODULE_INIT_COMPRESSED_FILE: libc::c_int = 4;
    let f = std::fs::File::open(path)?;
    let o = cstr(options)?;
    let flags = if compressed {
        MODULE_INIT_COMPRESSED_FILE
    } else {
        0
    };
    // SAFETY: a valid open fd, a NUL-terminated options string and a flags word.
    let r = unsafe { libc::syscall(libc::SYS_finit_module, f.as_raw_fd(), o.as_ptr(), flags) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

pub use ::sys::sync;

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

/// Waits for a child that has ended or is ending ([`sys::waitpid`](::sys::waitpid)); how
/// it ended, in words.
pub fn wait_status(pid: i32) -> String {
    let Ok(status) = ::sys::waitpid(pid) else {
        return "not waited for".into();
    };
    if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("exit status {}", libc::WEXITSTATUS(status))
    }
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
