//! Where the time to a systemd boot's login went, every second of it: consecutive
//! segments from the kernel's start to the login prompt, each bounded by a mark the trace
//! itself holds, so they add up to the login's time; the login's critical chain unit by
//! unit inside the units' segment; and who used the CPU before the login.
//!
//! The marks, in order (a missing one merges its segment into the next):
//! - the kernel runs its first program (`Run /init`, the kernel log; else the `kernel`
//!   milestone);
//! - the root is mounted or switched to (the kernel log's `switch_root`, else
//!   `root_mounted`): the initramfs's work;
//! - bootprint-boot execs systemd (`init_exec`);
//! - the first generator starts (a process from a `system-generators` directory): systemd's
//!   own start before it;
//! - the first unit starts (`systemd-units.log`): the generators, and the unit loading that
//!   waits for them;
//! - the login unit is active (the getty, the display manager): the units, the critical
//!   chain among them;
//! - the login prompt (the `text_login` or `graphical_login` milestone): a getty is
//!   `Type=idle`, so systemd holds its exec until the job queue is empty (at most 5 s).

use serde::Serialize;

use crate::model::BootModel;
use crate::services::{ServicesView, Source};

/// One stretch of the time to the login.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Segment {
    /// `kernel`, `initramfs`, `to_init`, `systemd_start`, `generators`, `units`,
    /// `login_wait`.
    pub name: String,
    /// Its start, s since the kernel started.
    pub from_s: f64,
    /// Its end, s.
    pub to_s: f64,
}

impl Segment {
    /// Its length, s.
    pub fn seconds(&self) -> f64 {
        self.to_s - self.from_s
    }
}

/// One unit of the login's critical chain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChainStep {
    /// The unit.
    pub unit: String,
    /// From the previous step's end (or the units' segment's start) to its start, s: the
    /// time nothing on the chain ran.
    pub waited_s: f64,
    /// Its start to its end (active), s.
    pub took_s: f64,
    /// Its end, s since the kernel started.
    pub end_s: f64,
}

/// One process's CPU before the login.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuUse {
    /// `comm`.
    pub name: String,
    /// Process id.
    pub pid: u32,
    /// CPU seconds from the kernel's start to the login.
    pub cpu_s: f64,
}

/// Where the time to the login went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoginAccount {
    /// `text_login` or `graphical_login`.
    pub login: String,
    /// Its time, s since the kernel started; the segments end there.
    pub login_s: f64,
    /// Consecutive, from 0 to `login_s`.
    pub segments: Vec<Segment>,
    /// The critical chain to the login unit, as systemd-analyze critical-chain has it.
    pub chain: Vec<ChainStep>,
    /// CPU seconds before the login, all processes but the recorder.
    pub cpu_s: f64,
    /// Of it, systemd's own (PID 1).
    pub systemd_cpu_s: f64,
    /// Of it, the generators'.
    pub generators_cpu_s: f64,
    /// The other processes that used most, heaviest first (at most [`TOP_CPU`]).
    pub top_cpu: Vec<CpuUse>,
}

/// How many processes `top_cpu` names.
pub const TOP_CPU: usize = 8;

/// Whether a process ran from a systemd generator directory.
fn is_generator(p: &crate::model::Process) -> bool {
    [p.exe.as_deref(), p.cmdline.as_deref()]
        .into_iter()
        .flatten()
        .any(|s| s.contains("system-generators/"))
}

/// The account of a systemd boot (`view` from its `systemd-units.log`); None on other
/// boots, or without a login.
pub fn of(
    model: &BootModel,
    view: Option<&ServicesView>,
    kernel: Option<&kernel::Report>,
) -> Option<LoginAccount> {
    let view = view.filter(|v| v.source == Source::Systemd)?;
    let ms = &model.milestones;
    let (login, login_s) = match (&ms.text_login, &ms.graphical_login) {
        (Some(t), _) => ("text_login", t.t_s),
        (None, Some(g)) => ("graphical_login", g.t_s),
        (None, None) => return None,
    };
    let secs = |ns: u64| ns as f64 / 1e9;
    let landmarks = kernel.map(|k| &k.boot.landmarks);
    let run_init = landmarks
        .and_then(|l| l.run_init.as_ref())
        .map(|m| m.us as f64 / 1e6)
        .or(ms.kernel.as_ref().map(|k| k.t_s));
    let root = landmarks
        .and_then(|l| l.switch_root.as_ref().or(l.root_mounted.as_ref()))
        .map(|m| m.us as f64 / 1e6);
    let init_exec = ms.init_exec.as_ref().map(|m| m.t_s);
    let after_init = init_exec.unwrap_or(0.0);
    let first_generator = model
        .processes
        .iter()
        .filter(|p| is_generator(p) && p.start_s >= after_init)
        .map(|p| p.start_s)
        .min_by(f64::total_cmp);
    let first_unit = view
        .spans
        .iter()
        .map(|s| secs(s.start_ns))
        .filter(|t| *t >= after_init)
        .min_by(f64::total_cmp);
    let chain_spans = view.critical_chain();
    let login_unit_active = chain_spans.last().and_then(|s| s.end_ns).map(secs);
    let marks = [
        ("kernel", run_init),
        ("initramfs", root),
        ("to_init", init_exec),
        ("systemd_start", first_generator),
        ("generators", first_unit),
        ("units", login_unit_active),
        ("login_wait", Some(login_s)),
    ];
    let mut segments = Vec::new();
    let mut from = 0.0;
    for (name, end) in marks {
        // A mark out of order (clocks, a unit started before the generator was seen) is
        // left out rather than made a negative segment.
        let Some(end) = end.filter(|e| *e >= from && *e <= login_s) else {
            continue;
        };
        segments.push(Segment {
            name: name.to_string(),
            from_s: from,
            to_s: end,
        });
        from = end;
    }
    let units_from = segments
        .iter()
        .find(|s| s.name == "units")
        .map(|s| s.from_s);
    let mut prev_end = units_from.unwrap_or(0.0);
    let chain = chain_spans
        .iter()
        .map(|s| {
            let (start, end) = (
                secs(s.start_ns),
                s.end_ns.map(secs).unwrap_or(secs(s.start_ns)),
            );
            let step = ChainStep {
                unit: s.script.clone(),
                waited_s: (start - prev_end).max(0.0),
                took_s: end - start,
                end_s: end,
            };
            prev_end = prev_end.max(end);
            step
        })
        .collect();
    let uses = crate::usage::window(model, 0.0, login_s);
    let cpu_s: f64 = uses.iter().map(|u| u.cpu_s).sum();
    let systemd_cpu_s: f64 = uses.iter().filter(|u| u.pid == 1).map(|u| u.cpu_s).sum();
    let generators_cpu_s: f64 = uses
        .iter()
        .filter(|u| is_generator(&model.processes[u.index]))
        .map(|u| u.cpu_s)
        .sum();
    let mut others: Vec<CpuUse> = uses
        .iter()
        .filter(|u| u.pid != 1 && !is_generator(&model.processes[u.index]) && u.cpu_s > 0.0)
        .map(|u| CpuUse {
            name: u.name.clone(),
            pid: u.pid,
            cpu_s: u.cpu_s,
        })
        .collect();
    others.sort_by(|a, b| b.cpu_s.total_cmp(&a.cpu_s));
    others.truncate(TOP_CPU);
    Some(LoginAccount {
        login: login.to_string(),
        login_s,
        segments,
        chain,
        cpu_s,
        systemd_cpu_s,
        generators_cpu_s,
        top_cpu: others,
    })
}
