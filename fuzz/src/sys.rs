//! The system call only the fuzz runner makes (the shared ones, poll and the clocks, are
//! the `sys` crate's).

use std::io;

/// Caps this process's address space (`RLIMIT_AS`) at `bytes`.
pub fn cap_address_space(bytes: u64) -> io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: a valid rlimit for the duration of the call; it only lowers our own limit.
    if unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
