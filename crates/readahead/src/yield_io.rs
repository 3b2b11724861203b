//! Reading only while a disk is otherwise idle: a prefetch that must not slow anyone.
//!
//! The idle I/O class is the kernel's way to say "only when nobody else reads", but only the
//! BFQ scheduler honours it: under `none` and `mq-deadline` (virtio disks, NVMe, many SD
//! readers) an idle-class read queues beside everyone else's, and readahead(2) returns once
//! its reads are queued, so one call can put a whole request's worth ahead of the reads a
//! person waits for. A [`Gate`] does the scheduler's job from user space, one request at a
//! time: before each piece it waits until the disk has nothing in flight and has done no I/O
//! but this process's for a quiet period.
//!
//! Whose I/O it was: the disk's sectors read and written (`/proc/diskstats`, counted when a
//! request completes) less this process's `read_bytes` (`/proc/self/io`, counted when a read
//! is submitted), compared only when nothing is in flight, so that both counted the same
//! requests. The difference is everyone else's. A process's `read_bytes` covers all of its
//! threads: a gated reader must be the process's only reader of the disk.
//!
//! A gate may watch the CPUs too ([`CpuWatch`]): a prefetch yields the disk, but its
//! page-cache work costs CPU time (under emulation a lot of it), and a boot's last services
//! and a greeter's start are CPU-bound. Others' CPU time is every CPU's busy time
//! (`/proc/stat`'s `cpu` line) less this process's (`/proc/self/stat`, utime + stime).

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

/// One reading of a disk's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskSample {
    /// Bytes read and written by the disk so far (sectors times 512).
    pub bytes: u64,
    /// Requests in flight.
    pub in_flight: u64,
}

/// Device `major:minor`'s counters from the text of `/proc/diskstats` (fields 6 and 10:
/// sectors read and written; field 12: I/Os currently in progress;
/// Documentation/admin-guide/iostats.rst). `None` when the device is not listed.
pub fn parse_disk_sample(diskstats: &str, major: u32, minor: u32) -> Option<DiskSample> {
    let d = trace::procfs::DiskStat::find(diskstats, major, minor)?;
    Some(DiskSample {
        bytes: d.bytes()?,
        in_flight: d.in_flight()?,
    })
}

/// The whole disk holding device `major:minor` (a partition's parent, from
/// `/sys/dev/block/MAJ:MIN/../dev`; anything else is its own).
pub fn whole_disk(sys: &Path, major: u32, minor: u32) -> (u32, u32) {
    let dev = sys.join(format!("dev/block/{major}:{minor}"));
    if !dev.join("partition").exists() {
        return (major, minor);
    }
    std::fs::read_to_string(dev.join("../dev"))
        .ok()
        .and_then(|t| {
            let (a, b) = t.trim().split_once(':')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .unwrap_or((major, minor))
}

/// What a gate saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GateStats {
    /// Times the gate held a piece back because someone else used the disk.
    pub waits: u64,
    /// Time spent held back (nanoseconds), the first quiet period included.
    pub waited_ns: u64,
    /// Bytes the disk moved for others while the gate watched.
    pub others_bytes: u64,
    /// Of `waits`, the times the CPUs were busy with others' work ([`CpuWatch`]).
    pub cpu_waits: u64,
}

/// One reading of the CPU counters: (others' busy time, all CPUs' time), in clock ticks.
pub type CpuSampler = Box<dyn FnMut() -> Option<(u64, u64)> + Send>;

/// Others' busy share of all CPUs over the last quiet period, judged at every look (a
/// sliding window: the readings of the last quiet period are kept).
pub struct CpuWatch {
    sample: CpuSampler,
    /// Busy when others used more than this share of all CPUs' time (0..1).
    max_share: f64,
    /// (when, others' busy ticks, all ticks), oldest first; the first is the newest reading
    /// at least a quiet period old once there is one.
    looks: VecDeque<(Instant, u64, u64)>,
}

impl CpuWatch {
    /// Watches `sample`, calling the CPUs busy above `max_share` of their time.
    pub fn new(sample: CpuSampler, max_share: f64) -> CpuWatch {
        CpuWatch {
            sample,
            max_share,
            looks: VecDeque::new(),
        }
    }

    /// Watches the machine's CPUs from `proc`'s `stat` and `self/stat`.
    pub fn for_machine(proc: &Path, max_share: f64) -> CpuWatch {
        let stat = proc.join("stat");
        let own = proc.join("self/stat");
        let sample = move || {
            let (busy, _, _, total) = sample::procfs::cpu_totals(&std::fs::read(&stat).ok()?)?;
            let me = sample::procfs::parse_stat_line(&std::fs::read(&own).ok()?)?;
            Some((busy.saturating_sub(me.utime + me.stime), total))
        };
        CpuWatch::new(Box::new(sample), max_share)
    }

    /// Takes a reading at `now`: `Some(true)` when others used more than the share over
    /// the last `window` (judged once a reading that old exists, `Some(false)` before),
    /// `None` when the counters cannot be read.
    fn busy(&mut self, now: Instant, window: Duration) -> Option<bool> {
        let (others, total) = (self.sample)()?;
        self.looks.push_back((now, others, total));
        while self.looks.len() > 2 && now.duration_since(self.looks[1].0) >= window {
            self.looks.pop_front();
        }
        let (t0, o0, a0) = self.looks[0];
        if now.duration_since(t0) < window {
            return Some(false);
        }
        let all = total.saturating_sub(a0);
        Some(all > 0 && others.saturating_sub(o0) as f64 > self.max_share * all as f64)
    }

    /// Whether a whole window has been watched.
    fn watched(&self, now: Instant, window: Duration) -> bool {
        self.looks
            .front()
            .is_some_and(|&(t0, _, _)| now.duration_since(t0) >= window)
    }
}

/// Reads a disk's counters and this process's `read_bytes`; `None` when they cannot be read.
pub type Sampler = Box<dyn FnMut() -> Option<(DiskSample, u64)> + Send>;

/// Lets a reader through only while its disk is otherwise idle (the module's doc).
pub struct Gate {
    sample: Sampler,
    quiet: Duration,
    poll: Duration,
    /// The counters when the disk was last seen with nothing in flight: (disk bytes, own).
    last: Option<(u64, u64)>,
    /// When others' I/O was last seen (at first: the gate's start, so the first piece also
    /// waits one quiet period).
    busy_at: Instant,
    /// The CPUs, when the gate waits for them too.
    cpu: Option<CpuWatch>,
    /// What it saw.
    pub stats: GateStats,
}

impl Gate {
    /// A gate reading `sample`, letting a reader through after `quiet` without others' I/O,
    /// looking every `poll`.
    pub fn new(sample: Sampler, quiet: Duration, poll: Duration) -> Gate {
        Gate {
            sample,
            quiet,
            poll,
            last: None,
            busy_at: Instant::now(),
            cpu: None,
            stats: GateStats::default(),
        }
    }

    /// The same gate, also waiting until others used at most their share of the CPUs over
    /// the quiet period.
    pub fn with_cpu(mut self, cpu: CpuWatch) -> Gate {
        self.cpu = Some(cpu);
        self
    }

    /// A gate on disk `major:minor` from `/proc/diskstats` and `/proc/self/io`; `None` when
    /// the disk is not in diskstats (a btrfs volume's anonymous device, no procfs): then
    /// there is nothing to watch.
    pub fn for_disk(proc: &Path, major: u32, minor: u32, quiet: Duration) -> Option<Gate> {
        let stats = proc.join("diskstats");
        let io = proc.join("self/io");
        let sample = move || {
            let d = parse_disk_sample(&std::fs::read_to_string(&stats).ok()?, major, minor)?;
            let own = sample::procfs::parse_read_bytes(&std::fs::read_to_string(&io).ok()?)?;
            Some((d, own))
        };
        sample()?;
        // A tenth of the quiet period, within 5-50 ms: often enough to see a gap, rarely
        // enough to cost nothing.
        let poll = (quiet / 10).clamp(Duration::from_millis(5), Duration::from_millis(50));
        Some(Gate::new(Box::new(sample), quiet, poll))
    }

    /// Waits until the disk has had nothing in flight and no one else's I/O for the quiet
    /// period (and, with a [`CpuWatch`], the CPUs were not busy with others' work over it);
    /// false when `deadline` came first (or the counters became unreadable, which ends the
    /// reading as a deadline does: the gate cannot promise anything then).
    pub fn wait_turn(&mut self, deadline: Instant) -> bool {
        let start = Instant::now();
        let (mut held, mut held_for_cpu) = (false, false);
        let ok = loop {
            let now = Instant::now();
            let Some((disk, own)) = (self.sample)() else {
                break false;
            };
            let (mut cpu_quiet, mut cpu_busy) = (true, false);
            if let Some(cpu) = &mut self.cpu {
                match cpu.busy(now, self.quiet) {
                    None => break false,
                    Some(true) => {
                        self.busy_at = now;
                        (held, held_for_cpu, cpu_busy) = (true, true, true);
                    }
                    Some(false) => {}
                }
                cpu_quiet = cpu.watched(now, self.quiet);
            }
            if disk.in_flight == 0 {
                if let Some((d0, o0)) = self.last {
                    let others = disk
                        .bytes
                        .saturating_sub(d0)
                        .saturating_sub(own.saturating_sub(o0));
                    if others > 0 {
                        self.stats.others_bytes += others;
                        self.busy_at = now;
                        held = true;
                    }
                }
                self.last = Some((disk.bytes, own));
                if cpu_quiet && now.duration_since(self.busy_at) >= self.quiet {
                    break true;
                }
            }
            if now >= deadline {
                break false;
            }
            // Busy CPUs keep the gate shut for a quiet period at least: looking less often
            // meanwhile costs them less (a boot's last seconds can hold it for tens of them).
            let nap = if cpu_busy {
                (self.quiet / 4).max(self.poll)
            } else {
                self.poll
            };
            std::thread::sleep(nap.min(deadline.saturating_duration_since(now)));
        };
        self.stats.waits += u64::from(held);
        self.stats.cpu_waits += u64::from(held_for_cpu);
        self.stats.waited_ns += start.elapsed().as_nanos() as u64;
        ok
    }
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("quiet", &self.quiet)
            .field("stats", &self.stats)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    // Two lines of a real /proc/diskstats (Linux 6.1, a virtio disk and its partition).
    const DISKSTATS: &str = "\
 254       0 vda 10846 3312 1125362 5724 2331 2019 94626 3120 2 10204 9207 0 0 0 0 172 362
 254       1 vda1 10700 3312 1119722 5689 2331 2019 94626 3120 0 10160 8809 0 0 0 0 0 0
";

    #[test]
    fn disk_counters_parse() {
        assert_eq!(
            parse_disk_sample(DISKSTATS, 254, 0),
            Some(DiskSample {
                bytes: (1125362 + 94626) * 512,
                in_flight: 2
            })
        );
        assert_eq!(parse_disk_sample(DISKSTATS, 254, 1).unwrap().in_flight, 0);
        assert_eq!(parse_disk_sample(DISKSTATS, 8, 0), None);
        assert_eq!(parse_disk_sample("254 0 vda 1 2 3\n", 254, 0), None);
    }

    #[test]
    fn a_partition_is_watched_on_its_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let disk = tmp.path().join("devices/vda");
        std::fs::create_dir_all(disk.join("vda1")).unwrap();
        std::fs::write(disk.join("dev"), "254:0\n").unwrap();
        std::fs::write(disk.join("vda1/partition"), "1\n").unwrap();
        std::fs::create_dir_all(tmp.path().join("dev/block")).unwrap();
        std::os::unix::fs::symlink(disk.join("vda1"), tmp.path().join("dev/block/254:1")).unwrap();
        std::os::unix::fs::symlink(&disk, tmp.path().join("dev/block/254:0")).unwrap();
        assert_eq!(whole_disk(tmp.path(), 254, 1), (254, 0));
        assert_eq!(whole_disk(tmp.path(), 254, 0), (254, 0));
        assert_eq!(whole_disk(tmp.path(), 0, 42), (0, 42));
    }

    /// A gate over scripted counters: (disk bytes, in flight, own bytes) per look; the last
    /// one repeats.
    fn scripted(script: Vec<(u64, u64, u64)>) -> (Gate, Arc<Mutex<usize>>) {
        let looks = Arc::new(Mutex::new(0));
        let n = looks.clone();
        let sample = move || {
            let mut i = n.lock().unwrap();
            let (bytes, in_flight, own) = script[(*i).min(script.len() - 1)];
            *i += 1;
            Some((DiskSample { bytes, in_flight }, own))
        };
        let gate = Gate::new(
            Box::new(sample),
            Duration::from_millis(40),
            Duration::from_millis(5),
        );
        (gate, looks)
    }

    #[test]
    fn the_gate_opens_after_a_quiet_period_of_only_its_own_io() {
        // Only this process's reads move the counters: the gate opens once the quiet period
        // since it started is over, and at once for the next piece.
        let (mut g, _) = scripted(vec![(0, 0, 0), (4096, 1, 4096), (8192, 0, 8192)]);
        let far = Instant::now() + Duration::from_secs(10);
        let t = Instant::now();
        assert!(g.wait_turn(far));
        assert!(t.elapsed() >= Duration::from_millis(40));
        let t = Instant::now();
        assert!(g.wait_turn(far));
        assert!(t.elapsed() < Duration::from_millis(40), "{:?}", t.elapsed());
        assert_eq!((g.stats.waits, g.stats.others_bytes), (0, 0));
    }

    #[test]
    fn others_io_holds_the_gate_until_it_has_been_quiet_again() {
        // Someone else reads 1 MiB in steps while this process reads nothing; then quiet.
        let mut script: Vec<_> = (0..8).map(|i| (i * (128 << 10), 0, 0)).collect();
        script.push((1 << 20, 0, 0));
        let (mut g, looks) = scripted(script);
        let far = Instant::now() + Duration::from_secs(10);
        assert!(g.wait_turn(far));
        assert_eq!(g.stats.others_bytes, 1 << 20);
        assert_eq!(g.stats.waits, 1);
        // The last of others' I/O was at look 8; the gate waited 40 ms of looks after it.
        assert!(*looks.lock().unwrap() >= 8 + 8, "{}", looks.lock().unwrap());
    }

    #[test]
    fn a_request_in_flight_is_waited_for_and_a_deadline_ends_the_wait() {
        let (mut g, _) = scripted(vec![(0, 3, 0)]);
        let t = Instant::now();
        assert!(!g.wait_turn(Instant::now() + Duration::from_millis(60)));
        assert!(t.elapsed() >= Duration::from_millis(60));
        let mut gone = Gate::new(Box::new(|| None), Duration::ZERO, Duration::ZERO);
        assert!(!gone.wait_turn(Instant::now() + Duration::from_secs(10)));
    }

    /// A CPU watch over scripted readings of (others' busy ticks, all ticks): each look adds
    /// 100 ticks of all CPUs' time, and for the first `busy_looks` looks `share` of them to
    /// others'. The line is at 15 %.
    fn cpu_script(busy_looks: usize, share: f64) -> CpuWatch {
        let mut i = 0usize;
        let (mut others, mut all) = (0u64, 0u64);
        CpuWatch::new(
            Box::new(move || {
                all += 100;
                if i < busy_looks {
                    others += (100.0 * share) as u64;
                }
                i += 1;
                Some((others, all))
            }),
            0.15,
        )
    }

    #[test]
    fn busy_cpus_hold_the_gate_until_a_quiet_period_of_idle_cpus() {
        // The disk is idle throughout; others keep the CPUs half busy for 20 looks (100 ms).
        let (g, looks) = scripted(vec![(0, 0, 0)]);
        let mut g = g.with_cpu(cpu_script(20, 0.5));
        let t = Instant::now();
        assert!(g.wait_turn(Instant::now() + Duration::from_secs(10)));
        // Busy until the last busy look's window has slid past, then a quiet period more.
        assert!(
            *looks.lock().unwrap() >= 20 + 8,
            "{}",
            looks.lock().unwrap()
        );
        assert!(
            t.elapsed() >= Duration::from_millis(100 + 40),
            "{:?}",
            t.elapsed()
        );
        assert_eq!((g.stats.waits, g.stats.cpu_waits), (1, 1));
        // Idle now: the next piece goes at once.
        let t = Instant::now();
        assert!(g.wait_turn(Instant::now() + Duration::from_secs(10)));
        assert!(t.elapsed() < Duration::from_millis(40), "{:?}", t.elapsed());
        assert_eq!(g.stats.cpu_waits, 1);
    }

    #[test]
    fn cpus_used_below_the_share_do_not_hold_the_gate() {
        let (g, _) = scripted(vec![(0, 0, 0)]);
        let mut g = g.with_cpu(cpu_script(usize::MAX, 0.10));
        let t = Instant::now();
        assert!(g.wait_turn(Instant::now() + Duration::from_secs(10)));
        assert!(
            t.elapsed() < Duration::from_millis(200),
            "{:?}",
            t.elapsed()
        );
        assert_eq!((g.stats.waits, g.stats.cpu_waits), (0, 0));
        // Always busy: only the deadline ends the wait.
        let (g, _) = scripted(vec![(0, 0, 0)]);
        let mut g = g.with_cpu(cpu_script(usize::MAX, 0.9));
        assert!(!g.wait_turn(Instant::now() + Duration::from_millis(150)));
        assert_eq!(g.stats.cpu_waits, 1);
    }

    #[test]
    fn the_machines_cpus_are_read_from_proc() {
        // This process burns CPU: others' share stays what the rest of the machine does, and
        // the counters are readable.
        let mut w = CpuWatch::for_machine(Path::new("/proc"), 0.15);
        let (o0, a0) = (w.sample)().expect("/proc/stat and /proc/self/stat");
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(300) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let (o1, a1) = (w.sample)().unwrap();
        assert!(a1 > a0, "the machine's ticks did not grow: {a0} then {a1}");
        // Own burning is not others': others' ticks grew by less than all the burning took.
        // (Others can even shrink: /proc/stat and /proc/self/stat are read at two instants
        // and count differently, and the harness runs other tests on this process's threads,
        // so when this process is nearly all the machine does, busy minus own can fall.)
        let others = o1.saturating_sub(o0);
        assert!(others < a1 - a0, "others {others} of {}", a1 - a0);
    }

    #[test]
    fn no_gate_for_a_disk_not_in_diskstats() {
        assert!(Gate::for_disk(Path::new("/proc"), 4095, 4095, Duration::ZERO).is_none());
    }
}
