//! When is boot done? After the login milestone, once CPU and disk have both been idle for a
//! settle period ("done booting means CPU and disk idle", seed 001). Pure: fed with
//! counters, it says when.

use std::collections::HashMap;

/// The shortest span over which idleness is judged.
pub const WINDOW_NS: u64 = 500_000_000;

/// Idle thresholds and settle period.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    /// Busy share of all CPUs below which the CPU counts as idle.
    pub cpu: f64,
    /// Disk busy share (io_ticks per elapsed time, busiest disk) below which it counts idle.
    pub disk: f64,
    /// How long both must stay idle, in ns.
    pub settle_ns: u64,
}

/// Watches successive samples for the idle period that ends the boot.
#[derive(Debug)]
pub struct DoneDetector {
    limits: Thresholds,
    prev: Option<(u64, u64, u64, HashMap<String, u64>)>,
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

    /// Feeds one sample: time, CPU (busy, total) jiffies, io_ms per disk. Samples are judged
    /// over windows of at least [`WINDOW_NS`]: CPU counters tick at USER_HZ (100 Hz), so over
    /// one 20 ms sample a single tick of anything would read as 25% busy. Returns whether
    /// the window just closed was idle (false while a window is still open).
    pub fn feed(
        &mut self,
        t_ns: u64,
        cpu_busy: u64,
        cpu_total: u64,
        disks: &[(String, u64)],
    ) -> bool {
        if let Some((pt, ..)) = &self.prev {
            if t_ns.saturating_sub(*pt) < WINDOW_NS {
                return false;
            }
        }
        let disks: HashMap<String, u64> = disks.iter().cloned().collect();
        let Some((pt, pbusy, ptotal, pdisks)) =
            self.prev
                .replace((t_ns, cpu_busy, cpu_total, disks.clone()))
        else {
            return false;
        };
        let dt_ms = (t_ns.saturating_sub(pt)) as f64 / 1e6;
        let dtotal = cpu_total.saturating_sub(ptotal);
        let cpu = if dtotal == 0 {
            0.0
        } else {
            cpu_busy.saturating_sub(pbusy) as f64 / dtotal as f64
        };
        let disk = disks
            .iter()
            .filter_map(|(name, ms)| {
                Some(ms.saturating_sub(*pdisks.get(name)?) as f64 / dt_ms.max(1.0))
            })
            .fold(0.0, f64::max);
        self.last = (cpu, disk);
        let idle = cpu < self.limits.cpu && disk < self.limits.disk;
        if idle {
            self.idle_since.get_or_insert(pt);
        } else {
            self.idle_since = None;
        }
        idle
    }

    /// The time boot was done, if it is: the start of an idle run that began no earlier than
    /// `milestone_ns` (idle before the login does not count) and has lasted the settle period.
    pub fn done_at(&self, now_ns: u64, milestone_ns: Option<u64>) -> Option<u64> {
        let milestone = milestone_ns?;
        let since = self.idle_since?.max(milestone).max(self.floor_ns);
        (now_ns >= since && now_ns - since >= self.limits.settle_ns).then_some(since)
    }
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
        d.feed(0, 0, 0, &disk(0));
        for i in 1..=10u64 {
            d.feed(i * 500_000_000, 0, i * 100, &disk(0));
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

    fn disk(ms: u64) -> Vec<(String, u64)> {
        vec![("vda".into(), ms)]
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
            d.feed(s * S, busy, total, &disk(0));
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
            d.feed(i * 20_000_000, busy, total, &disk(0));
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
            d.feed(s * S, s, s * 100, &disk(io));
        }
        assert!(d.last.1 < 0.1);
        assert_eq!(d.done_at(10 * S, Some(0)), Some(6 * S));
        assert_eq!(d.done_at(8 * S, Some(0)), None);
    }
}
