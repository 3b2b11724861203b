//! "Done booting means CPU and disk idle" (seed 001): when that held, and what was still
//! running between the login milestone and then.

use serde::Serialize;

use crate::build::{computed_boot_done, Options, RECORDER_NAMES};
use crate::model::BootModel;
use crate::usage::{self, Use};

/// The boot-done view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settle {
    /// The login milestone (text, else graphical), seconds; `None` without one.
    pub login_s: Option<f64>,
    /// When CPU and disk became idle and stayed so for the settle time: the samples' own
    /// answer (`computed_boot_done`), else the boot-done milestone.
    pub idle_from_s: f64,
    /// How `idle_from_s` was found.
    pub idle_source: String,
    /// Whether the samples show CPU and disk idle for the settle time after the login at
    /// all; when not, `idle_from_s` is only the boot-done milestone (often the last sample).
    pub idle_found: bool,
    /// The idle thresholds used.
    pub idle_cpu: f64,
    /// Busiest-disk utilisation threshold.
    pub idle_disk: f64,
    /// The end of the idle stretch: the first half second after it that was busy again, or
    /// the last sample when it stayed idle to the end of the trace.
    pub idle_until_s: f64,
    /// Whether it stayed idle until the last sample.
    pub idle_to_end: bool,
    /// `idle_from_s - login_s`: how long the boot kept working after the login was up.
    pub tail_s: Option<f64>,
    /// What ran between the login and `idle_from_s`, heaviest first (at most ten).
    pub busy: Vec<Use>,
    /// Processes started in that span (pid, name, start), by start (at most twenty).
    pub started: Vec<(u32, String, f64)>,
}

/// Builds the view with the recorder's default thresholds.
pub fn settle(m: &BootModel) -> Settle {
    let opts = Options::default();
    let (idle_from_s, idle_source, idle_found) = match computed_boot_done(m, &opts) {
        Some(c) => (c.t_s, c.source, true),
        None => (
            m.milestones.boot_done.t_s,
            m.milestones.boot_done.source.clone(),
            false,
        ),
    };
    let login_s = m.milestones.login().map(|l| l.t_s);
    let (busy, started) = match login_s {
        Some(l) if idle_from_s > l => {
            let busy = usage::window(m, l, idle_from_s)
                .into_iter()
                .take(10)
                .collect();
            let mut started: Vec<(u32, String, f64)> = m
                .processes
                .iter()
                .filter(|p| p.start_s > l && p.start_s < idle_from_s)
                .filter(|p| !RECORDER_NAMES.contains(&p.name.as_str()))
                .map(|p| (p.pid, p.name.clone(), p.start_s))
                .collect();
            started.sort_by(|a, b| a.2.total_cmp(&b.2));
            started.truncate(20);
            (busy, started)
        }
        _ => (Vec::new(), Vec::new()),
    };
    // Walk half-second pieces after the idle start until one is busy.
    let end = m.last_sample_s;
    let mut t = idle_from_s;
    let mut idle_until_s = end;
    let mut idle_to_end = true;
    while t + 1e-9 < end {
        let u = (t + 0.5).min(end);
        if let Some((busy, _, disk)) = usage::load(m, t, u) {
            let own: f64 = recorder_cpu(m, t, u) / f64::from(m.system.ncpus.max(1));
            if busy - own >= opts.idle_cpu || disk >= opts.idle_disk {
                idle_until_s = t;
                idle_to_end = false;
                break;
            }
        }
        // Pieces inside the same CPU and disk sample intervals read the same (the recorder's
        // own samples are taken with the CPU's): a long interval (a gap, or a bad time in the
        // trace) is crossed in one step, on the same half-second grid.
        let same_until = same_samples_until(m, t);
        let skip = ((same_until - u) / 0.5).floor().max(0.0);
        t = (u + skip * 0.5).min(end);
    }
    Settle {
        login_s,
        idle_from_s,
        idle_source,
        idle_found,
        idle_cpu: opts.idle_cpu,
        idle_disk: opts.idle_disk,
        idle_until_s,
        idle_to_end,
        tail_s: login_s.map(|l| (idle_from_s - l).max(0.0)),
        busy,
        started,
    }
}

/// The end of the CPU and of the disk sample interval holding `t`, whichever comes first.
fn same_samples_until(m: &BootModel, t: f64) -> f64 {
    let cpu = m
        .cpu
        .get(m.cpu.partition_point(|c| c.t_s <= t))
        .map(|c| c.t_s);
    let disk = m
        .disk
        .get(m.disk.partition_point(|d| d.t_s <= t))
        .map(|d| d.t_s);
    [cpu, disk]
        .into_iter()
        .flatten()
        .fold(f64::INFINITY, f64::min)
}

/// The recorder's mean CPU (share of one CPU) over a span.
fn recorder_cpu(m: &BootModel, from: f64, to: f64) -> f64 {
    let span = to - from;
    if span <= 0.0 {
        return 0.0;
    }
    (0..m.processes.len())
        .filter(|&i| RECORDER_NAMES.contains(&m.processes[i].name.as_str()))
        .map(|i| usage::use_of(m, i, from, to).cpu_s / span)
        .sum()
}
