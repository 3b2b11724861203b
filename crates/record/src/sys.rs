//! The system calls only the hand-off and the recorder make (fchdir, the termination
//! signals); every `unsafe` block of this crate lives here. fork, mount, reboot and the
//! others the boot path shares are the `sys` crate's.

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

static SAVE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_save(_signal: libc::c_int) {
    SAVE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Makes SIGUSR1 set a flag: the shutdown recorder's "write the trace now", sent before the
/// root file system goes read-only (`bootprint-boot shutdown --save`).
pub fn catch_save() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGUSR1, on_save as *const () as libc::sighandler_t);
    }
}

/// Whether SIGUSR1 arrived since [`catch_save`].
pub fn save_requested() -> bool {
    SAVE.load(std::sync::atomic::Ordering::Relaxed)
}
