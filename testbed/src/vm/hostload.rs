//! What the host did while a guest booted, so that a result says whether it is comparable
//! with another: the CPU QEMU used, the CPU this process used (the seekdisk server's
//! threads and the console reader), the CPU everything else on the host used, and the load
//! average when the boot began. Under TCG a boot's time is CPU time: a compile or a second
//! VM beside it makes it slower by as much as it takes (two cores, two vCPUs).
//!
//! Read from the kernel's counters: `/proc/stat`'s cpu line (the host, all CPUs),
//! `/proc/PID/stat` of QEMU (its utime and stime, all its threads), `getrusage(RUSAGE_SELF)`
//! (this process, all its threads), `/proc/loadavg`.
//!
//! Also the host's facts a result names (its CPU, how many, the accelerator) and the CPU
//! slowdown `cpuscale` measured on it, kept in the cache for the time-scaled profiles.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};
use trace::procfs::CpuTimes;

use crate::vm::qemu::round3;

/// The counters at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot {
    at: Instant,
    /// The host's busy jiffies (all CPUs; None: /proc/stat unreadable).
    host_busy: Option<u64>,
    qemu_cpu_s: Option<f64>,
    own_cpu_s: f64,
    load1: Option<f64>,
}

/// What the host's CPUs did between two snapshots, in CPU seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostCpu {
    pub wall_s: f64,
    /// Busy time of all the host's CPUs.
    pub host_busy_s: f64,
    /// QEMU's own (its vCPU threads and its I/O threads).
    pub qemu_s: f64,
    /// This process's: the seekdisk server and the console reader.
    pub testbed_s: f64,
    /// Everything else on the host: what makes two results incomparable.
    pub others_s: f64,
    /// The 1-minute load average at the first snapshot.
    pub load1_start: Option<f64>,
}

/// Clock ticks per second of /proc's CPU counters (USER_HZ).
fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The CPU seconds of process `pid` from its /proc/PID/stat (utime + stime).
fn process_cpu_s(pid: u32) -> Option<f64> {
    let line = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let r = trace::bootchart::parse_ps_line(line.trim_end()).ok()?;
    Some((r.utime + r.stime) as f64 / ticks_per_s())
}

/// This process's CPU seconds, all threads (getrusage).
fn own_cpu_s() -> f64 {
    // SAFETY: an all-zero rusage is a valid value; getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The first field of /proc/loadavg.
pub fn load1() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

impl Snapshot {
    /// The counters now; `qemu` is QEMU's process id.
    pub fn take(qemu: u32) -> Snapshot {
        let host_busy = std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| CpuTimes::of_stat(&t, 0))
            .map(|c| c.busy());
        Snapshot {
            at: Instant::now(),
            host_busy,
            qemu_cpu_s: process_cpu_s(qemu),
            own_cpu_s: own_cpu_s(),
            load1: load1(),
        }
    }

    /// What happened from `self` to `later`; None when a counter could not be read.
    pub fn until(&self, later: &Snapshot) -> Option<HostCpu> {
        let busy = later.host_busy?.checked_sub(self.host_busy?)? as f64 / ticks_per_s();
        let qemu = later.qemu_cpu_s? - self.qemu_cpu_s?;
        let own = later.own_cpu_s - self.own_cpu_s;
        Some(HostCpu {
            wall_s: later.at.duration_since(self.at).as_secs_f64(),
            host_busy_s: busy,
            qemu_s: qemu,
            testbed_s: own,
            others_s: (busy - qemu - own).max(0.0),
            load1_start: self.load1,
        })
    }
}

impl HostCpu {
    pub fn to_json(&self) -> Value {
        json!({
            "wall_s": round3(self.wall_s),
            "host_busy_cpu_s": round3(self.host_busy_s),
            "qemu_cpu_s": round3(self.qemu_s),
            "testbed_cpu_s": round3(self.testbed_s),
            "others_cpu_s": round3(self.others_s),
            "load1_start": self.load1_start,
        })
    }
}

/// The host's CPU model, its count and the accelerator, its load average now, and the CPU
/// slowdown: measured on this host (null if never) and the one the time-scaled profiles
/// slow their drive by (for result files: what makes two results comparable).
pub fn host_facts(cache: &Path) -> Value {
    let measured = measured_slowdown(cache);
    json!({
        "cpu": cpu_model(),
        "ncpus": ncpus(),
        "accel": "tcg",
        "load1": load1(),
        "cpu_slowdown": {
            "measured": measured.as_ref().map(|m| m.0),
            "measured_on": measured.map(|m| m.1),
            "scaled_drives_slowed_by": tcg_slowdown(),
        },
    })
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// The host's CPUs as this process may use them.
pub fn ncpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0)
}

/// The slowdown used when this host has not been measured: the figure of the machines the
/// scaled profiles were first measured on (docs/testbed.md, "Time-scaled profiles").
pub const DEFAULT_TCG_SLOWDOWN: f64 = 13.0;

/// Where `cpuscale` keeps what it measured on this host.
pub fn slowdown_file(cache: &Path) -> PathBuf {
    cache.join("cpuscale.json")
}

/// The slowdown measured on this host (its CPU model and count), if `cpuscale` has run
/// here: (slowdown, the date it was measured).
pub fn measured_slowdown(cache: &Path) -> Option<(f64, String)> {
    let text = std::fs::read_to_string(slowdown_file(cache)).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let same_host = v["cpu"] == json!(cpu_model()) && v["ncpus"] == json!(ncpus());
    let s = v["slowdown"].as_f64().filter(|s| *s >= 1.0 && same_host)?;
    Some((s, v["date"].as_str().unwrap_or("").to_string()))
}

/// Keeps `slowdown` as this host's (written whole: a temporary file renamed over).
pub fn record_slowdown(cache: &Path, slowdown: f64, date: &str) -> std::io::Result<()> {
    let doc = json!({"cpu": cpu_model(), "ncpus": ncpus(), "slowdown": slowdown, "date": date});
    let path = slowdown_file(cache);
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, doc.to_string() + "\n")?;
    std::fs::rename(&tmp, &path)
}

/// How many times slower the guest's CPU is under TCG than this host's: what the
/// `*-scaled` profiles slow their drive by. This host's figure when `cpuscale` has measured
/// it (the cache), else [`DEFAULT_TCG_SLOWDOWN`]. Read at every use, not once per process:
/// the command line's own checks ask before a benchmark has had it measured.
pub fn tcg_slowdown() -> f64 {
    slowdown_in(
        crate::vm::util::Paths::from_env()
            .ok()
            .map(|p| p.cache)
            .as_deref(),
    )
}

/// [`tcg_slowdown`] with the cache directory given.
pub fn slowdown_in(cache: Option<&Path>) -> f64 {
    cache
        .and_then(measured_slowdown)
        .map_or(DEFAULT_TCG_SLOWDOWN, |(s, _)| s)
}

/// Everything else's share of the host's CPUs over a boot (0..1; 0 is a quiet host), from a
/// boot's `host_cpu` as [`HostCpu::to_json`] wrote it (None: not recorded, or no time).
pub fn others_share(host_cpu: &Value, ncpus: usize) -> Option<f64> {
    let others = host_cpu["others_cpu_s"].as_f64()?;
    let capacity = host_cpu["wall_s"].as_f64()? * ncpus.max(1) as f64;
    (capacity > 0.0).then(|| others / capacity)
}

/// Whether other work took more than [`OTHERS_SHARE_LIMIT`] of this host's CPUs during the
/// boot whose `host_cpu` this is.
pub fn shared_the_host(host_cpu: &Value) -> bool {
    others_share(host_cpu, ncpus()).is_some_and(|share| share > OTHERS_SHARE_LIMIT)
}

/// A share of the host's CPU taken by other work above which a boot's time is not
/// comparable (5 %: under TCG a boot's time grows with the CPU taken from it).
pub const OTHERS_SHARE_LIMIT: f64 = 0.05;

#[cfg(test)]
mod tests {
    use super::*;

    /// For real: this process burns CPU between two snapshots; the host's busy time and
    /// this process's grow by about as much, and nothing is charged to the others twice.
    #[test]
    fn own_cpu_is_counted_as_the_testbed_s() {
        let me = std::process::id();
        let a = Snapshot::take(me);
        // Until this process has used 0.2 s more CPU (by its own clock, so a busy machine
        // only makes it take longer), at most 20 s.
        let t = Instant::now();
        let mut x = 0u64;
        while own_cpu_s() - a.own_cpu_s < 0.2 && t.elapsed().as_secs() < 20 {
            for _ in 0..100_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        let b = Snapshot::take(me);
        let h = a.until(&b).expect("counters readable");
        assert!(h.testbed_s >= 0.2, "{h:?}");
        // QEMU's pid is this process here: the same CPU seen twice, so "others" is what is
        // left after taking it out twice, never negative.
        assert!(h.qemu_s >= 0.15 && h.others_s >= 0.0, "{h:?}");
        assert!(h.wall_s > 0.0 && h.host_busy_s >= 0.15, "{h:?}");
    }

    #[test]
    fn others_share_of_the_capacity() {
        let h = HostCpu {
            wall_s: 10.0,
            host_busy_s: 15.0,
            qemu_s: 12.0,
            testbed_s: 1.0,
            others_s: 2.0,
            load1_start: Some(0.5),
        };
        let j = h.to_json();
        assert!((others_share(&j, 2).unwrap() - 0.1).abs() < 1e-9);
        assert_eq!(others_share(&j, 0), Some(0.2));
        assert_eq!(others_share(&json!(null), 2), None);
        assert!(Snapshot::take(u32::MAX).qemu_cpu_s.is_none());
    }

    /// The measured slowdown is this host's only: another CPU's record is not used.
    #[test]
    fn a_measured_slowdown_is_kept_for_this_host_only() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(measured_slowdown(dir.path()), None);
        assert_eq!(slowdown_in(Some(dir.path())), DEFAULT_TCG_SLOWDOWN);
        record_slowdown(dir.path(), 9.8, "2026-11-28").unwrap();
        // Asked before and after the measurement in one process (as the command line's
        // checks and then a benchmark do): the drive follows the measurement.
        assert_eq!(slowdown_in(Some(dir.path())), 9.8);
        assert_eq!(
            measured_slowdown(dir.path()),
            Some((9.8, "2026-11-28".to_string()))
        );
        let other = json!({"cpu": "another CPU", "ncpus": ncpus(), "slowdown": 9.8, "date": "x"});
        std::fs::write(slowdown_file(dir.path()), other.to_string()).unwrap();
        assert_eq!(measured_slowdown(dir.path()), None);
        std::fs::write(slowdown_file(dir.path()), "{not json").unwrap();
        assert_eq!(measured_slowdown(dir.path()), None);
    }
}
