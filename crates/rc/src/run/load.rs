//! The machine's load and idleness from `/proc/stat`: when another script may start, and
//! when late services may.

use std::path::Path;

use super::*;
use trace::procfs::{stat_value, CpuTimes};

/// `/proc/stat` as the runner uses it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// Sum of all `cpu` jiffies.
    pub total: u64,
    /// All but idle and iowait (user, nice, system, irq, softirq, steal).
    pub busy: u64,
    /// iowait.
    pub iowait: u64,
    /// `procs_running`.
    pub running: u64,
    /// `procs_blocked`.
    pub blocked: u64,
}

impl ProcStat {
    /// Parses `/proc/stat` text (`trace::procfs`: the `cpu` line, `procs_running`,
    /// `procs_blocked`; what is missing counts as 0). Pure.
    pub fn parse(text: &str) -> ProcStat {
        let cpu = CpuTimes::of_stat(text, 0).unwrap_or_default();
        ProcStat {
            total: cpu.total(),
            busy: cpu.busy(),
            iowait: cpu.iowait,
            running: stat_value(text, "procs_running").unwrap_or(0),
            blocked: stat_value(text, "procs_blocked").unwrap_or(0),
        }
    }

    /// Reads `<proc>/stat`; unreadable counts as an empty (idle) machine.
    pub fn read(proc_dir: &Path) -> ProcStat {
        std::fs::read_to_string(proc_dir.join("stat"))
            .map(|t| ProcStat::parse(&t))
            .unwrap_or_default()
    }
}

/// Whether one more script may start: always when none runs; never at `max_parallel`;
/// otherwise while the machine's load (runnable and blocked tasks, the runner itself not
/// counted) is below `load_per_cpu * cpus`. Pure.
pub fn may_start(running: usize, stat: &ProcStat, cfg: &Config, cpus: usize) -> bool {
    if running == 0 {
        return true;
    }
    if !below_max_parallel(running, cfg, cpus) {
        return false;
    }
    let load = stat.running.saturating_sub(1).saturating_add(stat.blocked);
    (load as f64) < cfg.load_per_cpu * cpus.max(1) as f64
}

/// Whether one more script of a **stop** plan may start: while fewer than `max_parallel`
/// run, whatever the load. A stop mostly waits for a daemon to exit; holding it back for
/// the load of the others only lengthens the shutdown (a held `udev` stop once held
/// `umountfs` behind it), and a shutdown has no login to keep responsive. Pure.
pub fn may_start_stop(running: usize, cfg: &Config, cpus: usize) -> bool {
    running == 0 || below_max_parallel(running, cfg, cpus)
}

/// `running < max_parallel` (0: 4 per CPU).
fn below_max_parallel(running: usize, cfg: &Config, cpus: usize) -> bool {
    let max = if cfg.max_parallel == 0 {
        4 * cpus.max(1)
    } else {
        cfg.max_parallel
    };
    running < max
}

/// Whether the interval between two samples was idle under `cfg`'s thresholds. Pure.
pub fn was_idle(a: &ProcStat, b: &ProcStat, cfg: &Config) -> bool {
    let total = b.total.saturating_sub(a.total);
    if total == 0 {
        return false;
    }
    let busy = b.busy.saturating_sub(a.busy) as f64 * 100.0 / total as f64;
    let io = b.iowait.saturating_sub(a.iowait) as f64 * 100.0 / total as f64;
    busy < cfg.idle_busy_pct && io < cfg.idle_iowait_pct && b.blocked == 0
}
