//! The runner's two system calls.

use std::io;
use std::os::unix::io::RawFd;
use std::time::Duration;

/// Waits until `fd` is readable (or closed) for at most `wait`; false on timeout.
pub fn wait_readable(fd: RawFd, wait: Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = wait.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n > 0)
}

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

/// CPU time this thread has used. The time limit is on CPU time, not wall time: on a busy
/// shared machine a child waits for a CPU for seconds, and that is not the parser's doing.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec for the duration of the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Clock ticks a second (`/proc/PID/stat` CPU times are in these).
pub fn clk_tck() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}
