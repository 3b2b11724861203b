//! What processes did inside a time window: CPU seconds and time in state D, from the
//! per-sample activity of the model. Budgets, the boot-done view, advice and diffs all ask
//! "who used the time between t1 and t2", so it is answered once, here.

use serde::Serialize;

use crate::build::RECORDER_NAMES;
use crate::model::{BootModel, Process};

/// One process's use of a window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Use {
    /// Index in `BootModel::processes`.
    #[serde(skip)]
    pub index: usize,
    /// Process id.
    pub pid: u32,
    /// `comm`.
    pub name: String,
    /// Command line, when known.
    pub cmdline: Option<String>,
    /// CPU seconds used inside the window.
    pub cpu_s: f64,
    /// Seconds inside the window covered by samples in state D (waiting for I/O).
    pub blocked_s: f64,
    /// Samples of this process inside the window.
    pub samples: usize,
}

/// The sample intervals of a process as (from, to, cpu share, state): each sample covers the
/// time since the process's previous sample (its first covers at most one sample interval,
/// and not before it started).
pub fn intervals<'a>(
    p: &'a Process,
    interval_s: f64,
) -> impl Iterator<Item = (f64, f64, f64, char)> + 'a {
    let mut prev: Option<f64> = None;
    p.samples.iter().map(move |s| {
        let from = prev.unwrap_or_else(|| (s.t_s - interval_s).max(p.start_s.min(s.t_s)));
        prev = Some(s.t_s);
        (from, s.t_s, s.cpu, s.state)
    })
}

/// CPU and D-state time of one process inside `[from_s, to_s]`.
pub fn use_of(m: &BootModel, index: usize, from_s: f64, to_s: f64) -> Use {
    let p = &m.processes[index];
    let mut u = Use {
        index,
        pid: p.pid,
        name: p.name.clone(),
        cmdline: p.cmdline.clone(),
        cpu_s: 0.0,
        blocked_s: 0.0,
        samples: 0,
    };
    if p.end_s < from_s || p.start_s > to_s || p.samples.is_empty() {
        return u;
    }
    // Samples are in time order: start at the first whose interval can reach into the
    // window, stop at the first that starts after it (windows are asked for often).
    let s = &p.samples;
    let first_from = (s[0].t_s - m.system.sample_interval_s).max(p.start_s.min(s[0].t_s));
    let lo = s.partition_point(|x| x.t_s <= from_s);
    for k in lo..s.len() {
        let a = if k == 0 { first_from } else { s[k - 1].t_s };
        if a >= to_s {
            break;
        }
        let overlap = s[k].t_s.min(to_s) - a.max(from_s);
        if overlap <= 0.0 {
            continue;
        }
        u.samples += 1;
        u.cpu_s += s[k].cpu * overlap;
        if s[k].state == 'D' {
            u.blocked_s += overlap;
        }
    }
    u
}

/// Every process's use of `[from_s, to_s]`, heaviest (CPU + blocked) first, leaving out the
/// boot recorder (its cost is the measurement's, not the boot's) and processes that did
/// nothing there.
pub fn window(m: &BootModel, from_s: f64, to_s: f64) -> Vec<Use> {
    let mut out: Vec<Use> = (0..m.processes.len())
        .filter(|&i| !RECORDER_NAMES.contains(&m.processes[i].name.as_str()))
        .map(|i| use_of(m, i, from_s, to_s))
        .filter(|u| u.cpu_s + u.blocked_s > 0.0)
        .collect();
    out.sort_by(|a, b| (b.cpu_s + b.blocked_s).total_cmp(&(a.cpu_s + a.blocked_s)));
    out
}

/// Mean CPU busy (user + system, share of all CPUs) and mean busiest-disk utilisation over
/// `[from_s, to_s]`, weighting each sample interval by its overlap. `None` without samples.
pub fn load(m: &BootModel, from_s: f64, to_s: f64) -> Option<(f64, f64, f64)> {
    let mut t = 0.0;
    let (mut busy, mut io) = (0.0, 0.0);
    // The series are in time order (analyze::build): only the samples that can overlap.
    for c in &m.cpu[m.cpu.partition_point(|c| c.t_s < from_s)..] {
        if c.t_s - c.dt_s >= to_s {
            break;
        }
        let ov = c.t_s.min(to_s) - (c.t_s - c.dt_s).max(from_s);
        if ov > 0.0 {
            t += ov;
            busy += (c.user + c.sys) * ov;
            io += c.iowait * ov;
        }
    }
    let mut td = 0.0;
    let mut util = 0.0;
    for d in &m.disk[m.disk.partition_point(|d| d.t_s < from_s)..] {
        if d.t_s - d.dt_s >= to_s {
            break;
        }
        let ov = d.t_s.min(to_s) - (d.t_s - d.dt_s).max(from_s);
        if ov > 0.0 {
            td += ov;
            util += d.util * ov;
        }
    }
    (t > 0.0).then(|| (busy / t, io / t, if td > 0.0 { util / td } else { 0.0 }))
}

/// Bytes read from disk in `[from_s, to_s]`.
pub fn bytes_read(m: &BootModel, from_s: f64, to_s: f64) -> f64 {
    m.disk
        .iter()
        .map(|d| {
            let ov = d.t_s.min(to_s) - (d.t_s - d.dt_s).max(from_s);
            if ov > 0.0 {
                d.read_bps * ov
            } else {
                0.0
            }
        })
        .sum()
}
