//! Raw system calls of the hand-off; every `unsafe` block of this crate lives here.

use std::ffi::CString;

/// Result of [`fork`].
pub enum Fork {
    /// In the child.
    Child,
    /// In the parent, with the child's pid.
    Parent(i32),
    /// fork failed.
    Failed,
}

/// fork(2) (see `sample::sys::fork`), as a [`Fork`].
pub fn fork() -> Fork {
    match sample::sys::fork() {
        Ok(0) => Fork::Child,
        Ok(pid) => Fork::Parent(pid),
        Err(_) => Fork::Failed,
    }
}

/// Detaches the child from PID 1's session so it never holds the console.
pub fn setsid() {
    // SAFETY: no preconditions; failure (already a leader) is harmless.
    unsafe {
        libc::setsid();
    }
}

pub use sample::sys::exit_now;

/// mount(2) of a pseudo file system with no data.
pub fn mount_fs(source: &str, target: &str, fstype: &str) -> bool {
    let (Ok(s), Ok(t), Ok(f)) = (
        CString::new(source),
        CString::new(target),
        CString::new(fstype),
    ) else {
        return false;
    };
    // SAFETY: valid NUL-terminated strings; null data is allowed.
    unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), 0, std::ptr::null()) == 0 }
}

/// fchdir(2): makes the directory `dir` (an open descriptor) the working directory.
pub fn fchdir(dir: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid open descriptor; no memory is passed.
    if unsafe { libc::fchdir(dir.as_raw_fd()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// reboot(2) with RB_POWER_OFF and no sync: what a power failure does (fault injection).
pub fn power_off_now() {
    // SAFETY: no memory is passed; it returns only on failure (not root).
    unsafe {
        libc::reboot(libc::RB_POWER_OFF);
    }
}

/// This process's pid.
pub fn getpid() -> i32 {
    // SAFETY: no preconditions.
    unsafe { libc::getpid() }
}

static TERMINATED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_terminate(_signal: libc::c_int) {
    TERMINATED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Makes SIGTERM and SIGINT set a flag instead of ending the process, so the recorder can
/// write what it has when the system shuts down before boot was done.
pub fn catch_termination() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGTERM,
            on_terminate as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGINT,
            on_terminate as *const () as libc::sighandler_t,
        );
    }
}

/// Whether SIGTERM or SIGINT arrived since [`catch_termination`].
pub fn terminated() -> bool {
    TERMINATED.load(std::sync::atomic::Ordering::Relaxed)
}
