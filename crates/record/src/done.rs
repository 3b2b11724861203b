//! When is boot done? After the login milestone, once CPU and disk have both been idle for a
//! settle period ("done booting means CPU and disk idle", seed 001). Pure: fed with
//! counters, it says when.
//!
//! An observer's work is not the boot's: the recorder leaves its own CPU time out, and the
//! disk's busy time is charged to the boot only in the share of the bytes moved that the
//! observers (preload, prefetching while the greeter waits) did not read. Without that, a
//! prefetch that only ever used the disk when the boot did not kept the boot from being
//! done until it ended (1.73x later on the test bed's time-scaled card).

use sample::procfs::DiskCounters;
use std::collections::HashMap;

/// The shortest span over which idleness is judged.
pub const WINDOW_NS: u64 = 500_000_000;

/// Idle thresholds and settle period.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// Busy share of all CPUs below which the CPU counts as idle.
    pub cpu: f64,
    /// Disk busy share (io_ticks per elapsed time, busiest disk, in the boot's share of the
    /// bytes moved) below which it counts idle.
    pub disk: f64,
    /// How long both must stay idle, in ns.
    pub settle_ns: u64,
}

/// Watches successive samples for the idle period that ends the boot.
#[derive(Debug)]
pub struct DoneDetector {
    limits: Thresholds,
    prev: Option<Window>,
    /// Bytes the observers caused to be read that the disks had not yet shown (counted at
    /// submission, the disk counts at completion): carried one window at most.
    observers_credit: u64,
    idle_since: Option<u64>,
    /// No idle run counts before this (see [`DoneDetector::not_before`]).
    floor_ns: u64,
    /// Busy shares seen in the last interval (cpu, disk), for the trace.
    pub last: (f64, f64),
}

impl DoneDetector {
    /// A detector with these limits.
    pub fn new(limits: Thresholds) -> DoneDetector {
        DoneDetector {
            limits,
            prev: None,
            observers_credit: 0,
            idle_since: None,
            floor_ns: 0,
            last: (0.0, 0.0),
        }
    }

    /// Idle time before `t_ns` does not count: work the counters do not show is still going
    /// on (bootprint's service runner has services left to start).
    pub fn not_before(&mut self, t_ns: u64) {
        self.floor_ns = self.floor_ns.max(t_ns);
    }

    /// Feeds one sample: time, CPU (busy, total) jiffies (the observers' own CPU time taken
    /// out), each disk's counters, and the bytes the observers have caused to be read so far
    /// (`read_bytes` of `/proc/PID/io`, a count that only grows). Samples are judged over
    /// windows of at least [`WINDOW_NS`]: CPU counters tick at USER_HZ (100 Hz), so over one
    /// 20 ms sample a single tick of anything would read as 25% busy. Returns whether the
    /// window just closed was idle (false while a window is still open).
    pub fn feed(
        &mut self,
        t_ns: u64,
        cpu_busy: u64,
        cpu_total: u64,
        disks: &[(String, DiskCounters)],
        observers_read: u64,
    ) -> bool {
        if let Some(prev) = &self.prev {
            if t_ns.saturating_sub(prev.t_ns) < WINDOW_NS {
                return false;
            }
        }
        let now = Window {
            t_ns,
            cpu_busy,
            cpu_total,
            disks: disks.iter().cloned().collect(),
            observers_read,
        };
        let Some(prev) = self.prev.replace(now) else {
            return false;
        };
        let dt_ms = (t_ns.saturating_sub(prev.t_ns)) as f64 / 1e6;
        let dtotal = cpu_total.saturating_sub(prev.cpu_total);
        let cpu = if dtotal == 0 {
            0.0
        } else {
            cpu_busy.saturating_sub(prev.cpu_busy) as f64 / dtotal as f64
        };
        let moved = |name: &String, c: &DiskCounters| {
            let p = prev.disks.get(name)?;
            Some((
                c.io_ms.saturating_sub(p.io_ms),
                c.bytes.saturating_sub(p.bytes),
            ))
        };
        let deltas: Vec<(u64, u64)> = disks.iter().filter_map(|(n, c)| moved(n, c)).collect();
        let boot_share = self.boot_share(
            deltas.iter().map(|d| d.1).sum(),
            observers_read.saturating_sub(prev.observers_read),
        );
        let disk = deltas
            .iter()
            .map(|&(ms, _)| ms as f64 / dt_ms.max(1.0) * boot_share)
            .fold(0.0, f64::max);
        self.last = (cpu, disk);
        let idle = cpu < self.limits.cpu && disk < self.limits.disk;
        if idle {
            self.idle_since.get_or_insert(prev.t_ns);
        } else {
            self.idle_since = None;
        }
        idle
    }

    /// The share of a window's disk traffic (`moved` bytes, all disks) that was the boot's:
    /// what the observers did not read (`observed` bytes in this window, plus what they
    /// submitted in the last one that the disks counted only now). 1 when nothing moved.
    fn boot_share(&mut self, moved: u64, observed: u64) -> f64 {
        let theirs_at_most = observed.saturating_add(self.observers_credit);
        let theirs = theirs_at_most.min(moved);
        self.observers_credit = (theirs_at_most - theirs).min(observed);
        if moved == 0 {
            1.0
        } else {
            (moved - theirs) as f64 / moved as f64
        }
    }

    /// The time boot was done, if it is: the start of an idle run that began no earlier than
    /// `milestone_ns` (idle before the login does not count) and has lasted the settle period.
    pub fn done_at(&self, now_ns: u64, milestone_ns: Option<u64>) -> Option<u64> {
        let milestone = milestone_ns?;
        let since = self.idle_since?.max(milestone).max(self.floor_ns);
        (now_ns >= since && now_ns - since >= self.limits.settle_ns).then_some(since)
    }
}

/// The counters at the end of the last window.
#[derive(Debug)]
struct Window {
    t_ns: u64,
    cpu_busy: u64,
    cpu_total: u64,
    disks: HashMap<String, DiskCounters>,
    observers_read: u64,
}

/// Whether bootprint's service runner still has services to start, from its span log
/// (`/run/bootprint/rc.log`, docs/trace-format.md): a runlevel begun (`rc_begin`) that is
/// not done (`rc_done`; after an `rc_fallback` the serial run ends with one too). A service that
/// starts slowly can leave CPU and disk idle for seconds (postgresql's init script waiting
/// for its server on the test bed): without this, boot done came before it and before exim4,
/// which waits for it.
pub fn services_pending(rc_log: &str) -> bool {
    let mut open: Vec<&str> = Vec::new();
    for line in rc_log.lines().filter(|l| !l.starts_with('#')) {
        let mut words = line.split_whitespace();
        let (Some(_ns), Some(kind)) = (words.next(), words.next()) else {
            continue;
        };
        let Some(runlevel) = words.find_map(|w| w.strip_prefix("runlevel=")) else {
            continue;
        };
        match kind {
            "rc_begin" => open.push(runlevel),
            // Not `rc_fallback`: the runner then runs the rest serially, and its `rc_done`
            // comes when that is over (docs/trace-format.md).
            "rc_done" => open.retain(|r| *r != runlevel),
            _ => {}
        }
    }
    !open.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_pending_until_every_begun_runlevel_is_done() {
        let s = "# bootprint rc 1\n1 rc_begin runlevel=S action=start tasks=2 late=0\n";
        assert!(services_pending(s));
        let s =
            format!("{s}2 rc_reached runlevel=S action=start\n3 rc_done runlevel=S action=start\n");
        assert!(!services_pending(&s));
        let s = format!("{s}4 rc_begin runlevel=2 action=start tasks=9 late=7\n5 rc_reached runlevel=2 action=start\n6 rc_late runlevel=2 action=start reason=idle waited_ms=1000\n");
        assert!(services_pending(&s));
        assert!(!services_pending(&format!(
            "{s}7 rc_done runlevel=2 action=start\n"
        )));
        // A fallback runs the rest serially: pending until its rc_done.
        let f = format!("{s}7 rc_fallback runlevel=2 reason=run error=x\n");
        assert!(services_pending(&f));
        let f = format!("{f}8 rc_begin runlevel=2 action=start tasks=3 late=0\n");
        assert!(services_pending(&f));
        assert!(!services_pending(&format!(
            "{f}9 rc_done runlevel=2 action=start\n"
        )));
        assert!(!services_pending(""));
    }

    #[test]
    fn no_idle_run_counts_before_the_floor() {
        let mut d = detector();
        d.feed(0, 0, 0, &disk(0), 0);
        for i in 1..=10u64 {
            d.feed(i * 500_000_000, 0, i * 100, &disk(0), 0);
        }
        assert_eq!(d.done_at(5_000_000_000, Some(0)), Some(0));
        d.not_before(3_000_000_000);
        assert_eq!(d.done_at(5_000_000_000, Some(0)), None);
        assert_eq!(d.done_at(6_000_000_000, Some(0)), Some(3_000_000_000));
    }

    const S: u64 = 1_000_000_000;

    fn detector() -> DoneDetector {
        DoneDetector::new(Thresholds {
            cpu: 0.25,
            disk: 0.10,
            settle_ns: 3 * S,
        })
    }

    fn disk(ms: u64) -> Vec<(String, DiskCounters)> {
        disk_moved(ms, 0)
    }

    fn disk_moved(io_ms: u64, bytes: u64) -> Vec<(String, DiskCounters)> {
        vec![("vda".into(), DiskCounters { io_ms, bytes })]
    }

    #[test]
    fn done_only_after_login_and_settle() {
        let mut d = detector();
        // t=0..10 s: busy CPU (50%); t=10..20: idle; milestone at 12 s.
        let mut busy = 0;
        let mut total = 0;
        for s in 0..=20u64 {
            let b = if s <= 10 { 100 } else { 10 };
            busy += b;
            total += 200;
            d.feed(s * S, busy, total, &disk(0), 0);
            if s == 11 {
                assert_eq!(d.done_at(s * S, None), None, "no milestone yet");
            }
            if s == 14 {
                assert_eq!(d.done_at(s * S, Some(12 * S)), None, "settle not over");
            }
        }
        assert_eq!(d.done_at(20 * S, Some(12 * S)), Some(12 * S));
        // Without the milestone's constraint the run started at 10 s.
        assert_eq!(d.done_at(20 * S, Some(5 * S)), Some(10 * S));
    }

    #[test]
    fn one_tick_in_a_short_sample_is_not_busy() {
        // 20 ms samples on 2 CPUs at USER_HZ 100: 4 jiffies each; one busy jiffy every
        // 10 samples is 2.5% busy, idle, though it is 25% of its own sample.
        let mut d = detector();
        let (mut busy, mut total) = (0, 0);
        for i in 0..=250u64 {
            total += 4;
            busy += (i % 10 == 0) as u64;
            d.feed(i * 20_000_000, busy, total, &disk(0), 0);
        }
        assert!(d.last.0 < 0.05, "{:?}", d.last);
        assert_eq!(d.done_at(5 * S, Some(0)), Some(0));
    }

    #[test]
    fn busy_disk_breaks_the_idle_run() {
        let mut d = detector();
        let mut io = 0;
        for s in 0..=10u64 {
            // disk busy 50% at t=6.
            if s == 6 {
                io += 500;
            }
            d.feed(s * S, s, s * 100, &disk(io), 0);
        }
        assert!(d.last.1 < 0.1);
        assert_eq!(d.done_at(10 * S, Some(0)), Some(6 * S));
        assert_eq!(d.done_at(8 * S, Some(0)), None);
    }

    #[test]
    fn an_observers_reads_do_not_keep_the_disk_busy() {
        // The disk is busy all the time from 2 s on; from 2 s to 8 s only preload reads
        // (4 MB a second, its read_bytes counted a window ahead of the disk's at 5 s), then
        // the boot reads too (1 MB of 5 a second): busy again.
        let mut d = detector();
        let (mut io, mut moved, mut observed) = (0, 0, 0);
        for s in 0..=12u64 {
            if s >= 2 {
                io += 1000;
                moved += if s > 8 { 5_000_000 } else { 4_000_000 };
                observed += match s {
                    5 => 6_000_000,
                    6 => 2_000_000,
                    _ => 4_000_000,
                };
            }
            let idle = d.feed(s * S, s, s * 100, &disk_moved(io, moved), observed);
            assert_eq!(idle, s > 0 && s <= 8, "at {s} s: {:?}", d.last);
            if s == 8 {
                assert_eq!(d.done_at(8 * S, Some(0)), Some(0));
            }
        }
        assert_eq!(d.done_at(12 * S, Some(0)), None);
        // The boot's fifth of the bytes, charged its fifth of the busy time.
        assert!((d.last.1 - 0.2).abs() < 1e-9, "{:?}", d.last);
    }

    #[test]
    fn an_observers_credit_lasts_one_window() {
        // Preload's read_bytes says 8 MB at 1 s that the disk never shows (a read the
        // device merged away, another disk): at 3 s the boot's own 4 MB count in full.
        let mut d = detector();
        d.feed(0, 0, 0, &disk_moved(0, 0), 0);
        assert!(d.feed(S, 1, 100, &disk_moved(0, 0), 8_000_000));
        assert!(d.feed(2 * S, 2, 200, &disk_moved(0, 0), 8_000_000));
        assert!(!d.feed(3 * S, 3, 300, &disk_moved(800, 4_000_000), 8_000_000));
        assert!((d.last.1 - 0.8).abs() < 1e-9, "{:?}", d.last);
    }
}
