//! The machine's load and idleness from `/proc/stat`: when another script may start, and
//! when late services may.

use std::path::Path;

use super::*;

/// `/proc/stat` as the runner uses it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// Sum of all `cpu` jiffies.
    pub total: u64,
    /// user + nice + system + irq + softirq + steal.
    pub busy: u64,
    /// iowait.
    pub iowait: u64,
    /// `procs_running`.
    pub running: u64,
    /// `procs_blocked`.
    pub blocked: u64,
}

impl ProcStat {
    /// Parses `/proc/stat` text. Pure.
    pub fn parse(text: &str) -> ProcStat {
        let mut s = ProcStat::default();
        for line in text.lines() {
            let mut w = line.split_whitespace();
            match w.next() {
                Some("cpu") => {
                    let v: Vec<u64> = w.filter_map(|x| x.parse().ok()).collect();
                    let at = |i: usize| v.get(i).copied().unwrap_or(0);
                    // user nice system idle iowait irq softirq steal (guest is in user);
                    // saturating, so absurd counters cannot overflow the sums.
                    let sum = |fields: &[usize]| {
                        fields
                            .iter()
                            .fold(0u64, |acc, &i| acc.saturating_add(at(i)))
                    };
                    s.total = sum(&[0, 1, 2, 3, 4, 5, 6, 7]);
                    s.busy = sum(&[0, 1, 2, 5, 6, 7]);
                    s.iowait = at(4);
                }
                Some("procs_running") => {
                    s.running = w.next().and_then(|x| x.parse().ok()).unwrap_or(0)
                }
                Some("procs_blocked") => {
                    s.blocked = w.next().and_then(|x| x.parse().ok()).unwrap_or(0)
                }
                _ => {}
            }
        }
        s
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
    let max = if cfg.max_parallel == 0 {
        4 * cpus.max(1)
    } else {
        cfg.max_parallel
    };
    if running == 0 {
        return true;
    }
    if running >= max {
        return false;
    }
    let load = stat.running.saturating_sub(1).saturating_add(stat.blocked);
    (load as f64) < cfg.load_per_cpu * cpus.max(1) as f64
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
