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

/// `struct rtc_time` of linux/rtc.h (the same layout as libc's `struct tm`'s first nine
/// fields).
#[repr(C)]
#[derive(Default)]
struct RtcTime {
    sec: libc::c_int,
    min: libc::c_int,
    hour: libc::c_int,
    mday: libc::c_int,
    mon: libc::c_int,
    year: libc::c_int,
    wday: libc::c_int,
    yday: libc::c_int,
    isdst: libc::c_int,
}

/// linux/rtc.h: `_IOR('p', 0x09, struct rtc_time)`, `_IO('p', 0x03)`, `_IO('p', 0x04)`.
const RTC_RD_TIME: libc::c_ulong = 0x8024_7009;
const RTC_UIE_ON: libc::c_ulong = 0x7003;
const RTC_UIE_OFF: libc::c_ulong = 0x7004;

fn rtc_read(fd: libc::c_int) -> std::io::Result<RtcTime> {
    let mut t = RtcTime::default();
    // SAFETY: RTC_RD_TIME writes one struct rtc_time, which `t` is.
    if unsafe { libc::ioctl(fd, RTC_RD_TIME as _, &mut t as *mut RtcTime) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(t)
}

/// Seconds since the epoch of a broken-down time read as UTC (the proleptic Gregorian
/// calendar; `mon` 0-11, `year` since 1900, as `struct tm`).
fn epoch_seconds(t: &RtcTime) -> i64 {
    let (y, m) = (t.year as i64 + 1900, t.mon as i64 + 1);
    let (y, m) = if m <= 2 { (y - 1, m + 12) } else { (y, m) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m - 3) + 2) / 5 + t.mday as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * 86_400 + t.hour as i64 * 3600 + t.min as i64 * 60 + t.sec as i64
}

/// The wall clock (`CLOCK_REALTIME`) minus the hardware clock, in ns, measured at the moment
/// the hardware clock's second changes (its update interrupt, or when it does not have one,
/// reading it every 2 ms): the hardware clock counts whole seconds, and only at that edge is
/// its time known to the millisecond. Takes up to a little over a second. The RTC's time is
/// read as UTC; one kept in local time gives an offset with the zone in it, which cancels
/// when two offsets of the same machine are compared.
pub fn rtc_offset_ns(dev: &std::path::Path) -> std::io::Result<i64> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(dev)?;
    let fd = f.as_raw_fd();
    // SAFETY: RTC_UIE_ON takes no argument.
    let uie = unsafe { libc::ioctl(fd, RTC_UIE_ON as _, 0) } == 0;
    let edge = if uie {
        let ready = sys::poll_readable(fd, 1500);
        let mut count = [0u8; std::mem::size_of::<libc::c_ulong>()];
        let got = matches!(ready, Ok(true))
            // SAFETY: reads at most `count.len()` bytes into `count`.
            && unsafe { libc::read(fd, count.as_mut_ptr().cast(), count.len()) } > 0;
        let now = sys::realtime_ns();
        // SAFETY: RTC_UIE_OFF takes no argument.
        unsafe { libc::ioctl(fd, RTC_UIE_OFF as _, 0) };
        if !got {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no update interrupt from the RTC within 1.5 s",
            ));
        }
        (rtc_read(fd)?, now)
    } else {
        let first = rtc_read(fd)?;
        let until = std::time::Instant::now() + std::time::Duration::from_millis(1500);
        loop {
            std::thread::sleep(std::time::Duration::from_millis(2));
            let t = rtc_read(fd)?;
            let now = sys::realtime_ns();
            if t.sec != first.sec {
                break (t, now);
            }
            if std::time::Instant::now() > until {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the RTC's seconds did not change within 1.5 s",
                ));
            }
        }
    };
    let rtc_ns = epoch_seconds(&edge.0) as i128 * 1_000_000_000;
    Ok((edge.1 as i128 - rtc_ns) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_down_utc_to_epoch() {
        let t = |year, mon, mday, hour, min, sec| RtcTime {
            year: year - 1900,
            mon: mon - 1,
            mday,
            hour,
            min,
            sec,
            ..RtcTime::default()
        };
        assert_eq!(epoch_seconds(&t(1970, 1, 1, 0, 0, 0)), 0);
        assert_eq!(epoch_seconds(&t(2000, 3, 1, 0, 0, 0)), 951_868_800);
        assert_eq!(epoch_seconds(&t(2026, 11, 29, 20, 15, 7)), 1_795_983_307);
    }

    #[test]
    fn this_machines_rtc_is_near_its_wall_clock() {
        let dev = std::path::Path::new("/dev/rtc0");
        if !dev.exists() {
            return testkit::not_here("no /dev/rtc0 on this machine");
        }
        let off = rtc_offset_ns(dev).unwrap();
        // A machine's two clocks agree within minutes unless someone set one by hand.
        assert!(off.abs() < 600_000_000_000, "{off}");
    }
}
