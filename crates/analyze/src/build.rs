//! Building the [`BootModel`] from a parsed [`Trace`]. How every figure is computed is
//! described in `docs/report.md`; keep the two in step.

use std::collections::HashMap;
use std::fmt;

use trace::bootchart::{CpuTimes, DiskBlock};
use trace::writer::PsRecord;
use trace::Trace;

use crate::model::*;

/// Idle thresholds and other knobs of the analysis. The defaults are the recorder's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Busy share of all CPUs below which the CPU counts as idle (0.25).
    pub idle_cpu: f64,
    /// Busiest disk's utilisation below which the disks count as idle (0.10).
    pub idle_disk: f64,
    /// How long both must stay idle for the boot to be done, seconds (3).
    pub settle_s: f64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            idle_cpu: 0.25,
            idle_disk: 0.10,
            settle_s: 3.0,
        }
    }
}

/// Why a trace could not be analysed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalyzeError {
    /// The file at fault.
    pub file: String,
    /// 1-based line, when one line is at fault.
    pub line: Option<usize>,
    /// What was expected.
    pub expected: String,
}

impl fmt::Display for AnalyzeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: expected {}", self.file, l, self.expected),
            None => write!(f, "{}: expected {}", self.file, self.expected),
        }
    }
}

impl From<trace::ParseError> for AnalyzeError {
    fn from(e: trace::ParseError) -> AnalyzeError {
        AnalyzeError {
            file: e.file,
            line: e.line,
            expected: e.expected,
        }
    }
}

impl std::error::Error for AnalyzeError {}

/// Process names whose start marks a text login prompt (the recorder's list).
pub const LOGIN_NAMES: [&str; 6] = ["getty", "agetty", "mingetty", "mgetty", "fbgetty", "login"];

/// Process names (as `comm`, at most 15 bytes) whose start marks a graphical login greeter.
pub const GREETER_NAMES: [&str; 7] = [
    "lightdm-gtk-gre",
    "lightdm-greeter",
    "gdm-greeter",
    "sddm-greeter",
    "slick-greeter",
    "unity-greeter",
    "xdm",
];

/// Analyses a trace with the default options.
pub fn analyze(trace: &Trace) -> Result<BootModel, AnalyzeError> {
    analyze_with(trace, &Options::default())
}

/// Analyses a trace.
pub fn analyze_with(trace: &Trace, opts: &Options) -> Result<BootModel, AnalyzeError> {
    if trace.stat.len() < 2 {
        return Err(AnalyzeError {
            file: "proc_stat.log".into(),
            line: None,
            expected: format!("at least 2 sample blocks, found {}", trace.stat.len()),
        });
    }
    let mut notes = Vec::new();
    let system = system_info(trace, &mut notes);
    let source = if trace.header_value("bootprint.format").is_some() {
        TraceKind::Bootprint
    } else {
        TraceKind::Bootchart2
    };
    // A bootchart2 log whose sample clock started late: every sample goes on the kernel's
    // clock. (bootprint's recorder samples uptime, the kernel's own clock, and its traces can
    // be large: no second pass over them.)
    let offset = match source {
        TraceKind::Bootchart2 => clock_offset(trace, &system)?,
        _ => None,
    };
    let shifted;
    let trace = match &offset {
        Some(o) => {
            notes.push(o.note());
            shifted = shift_samples(trace, o.offset_cs);
            &shifted
        }
        None => trace,
    };

    // In time order whatever the log's blocks say, so every window lookup can bisect.
    let mut cpu = cpu_series(&trace.stat);
    cpu.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let mut disk = disk_series(&trace.disk);
    disk.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let memory = memory_series(trace);
    let offset_s = offset.as_ref().map(|o| cs(o.offset_cs));
    let (mut processes, blocked_source, ps_span, started_after_first_sample) =
        processes(trace, &system, offset_s.unwrap_or(0.0), &mut notes)?;
    order_tree(&mut processes);
    let (first_sample_s, last_sample_s) = sample_span(trace, ps_span);

    let (platform, platform_rule) = crate::platform::detect(trace, &processes);
    let (milestones, session_pid) = milestones(
        trace,
        &processes,
        platform,
        first_sample_s,
        last_sample_s,
        &mut notes,
    );
    let top_cpu = ranked(&processes, |p| p.cpu_s);
    let top_blocked = ranked(&processes, |p| p.blocked_s);

    let mut model = BootModel {
        system,
        source,
        platform,
        platform_rule,
        first_sample_s,
        last_sample_s,
        milestones,
        cpu_totals: CpuTotals::default(),
        cpu,
        disk,
        memory,
        processes,
        top_cpu,
        top_blocked,
        blocked_source,
        notes,
        readahead: readahead_hit(trace),
        recorder: recorder_cost(trace),
        self_off: self_off(trace),
        started_after_first_sample,
        clock_offset_s: offset_s,
    };
    if model.milestones.boot_done.source == PENDING {
        model.milestones.boot_done = boot_done_or_last_sample(&mut model, opts, last_sample_s);
    }
    mark_session(
        &mut model.processes,
        session_pid,
        model.milestones.session_start.as_ref(),
    );
    if model
        .milestones
        .desktop_ready
        .as_ref()
        .is_some_and(|m| m.source == PENDING)
    {
        model.milestones.desktop_ready = computed_desktop_ready(&model, opts);
        if model.milestones.desktop_ready.is_none() {
            model.notes.push(
                "CPU and disk never stayed idle after the last process the desktop session \
                 started: no desktop ready"
                    .into(),
            );
        }
    }
    model.cpu_totals = cpu_totals(&trace.stat, first_sample_s, model.milestones.boot_done.t_s);
    Ok(model)
}

/// The first and the last sample of any kind (CPU, disk, processes), seconds.
fn sample_span(trace: &Trace, ps_span: Option<(f64, f64)>) -> (f64, f64) {
    let span = |first: Option<u64>, last: Option<u64>| Some((cs(first?), cs(last?)));
    [
        span(
            trace.stat.first().map(|b| b.t_cs),
            trace.stat.last().map(|b| b.t_cs),
        ),
        span(
            trace.disk.first().map(|b| b.t_cs),
            trace.disk.last().map(|b| b.t_cs),
        ),
        ps_span,
    ]
    .into_iter()
    .flatten()
    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (a, b)| {
        (lo.min(a), hi.max(b))
    })
}

/// The processes with some of `figure`, most first (ties in process order).
fn ranked(processes: &[Process], figure: impl Fn(&Process) -> f64) -> Vec<usize> {
    let mut top: Vec<usize> = (0..processes.len())
        .filter(|&i| figure(&processes[i]) > 0.0)
        .collect();
    top.sort_by(|&a, &b| {
        figure(&processes[b])
            .total_cmp(&figure(&processes[a]))
            .then(a.cmp(&b))
    });
    top
}

/// Boot done when the trace did not say it: computed from when CPU and disk went idle, else
/// the last sample, with a note saying why.
fn boot_done_or_last_sample(
    model: &mut BootModel,
    opts: &Options,
    last_sample_s: f64,
) -> Milestone {
    let login = model.milestones.login().is_some();
    match computed_boot_done(model, opts) {
        Some(m) => m,
        None if model.platform == Platform::Android => {
            model.notes.push(
                "Android: CPU and disk never stayed idle after the boot animation: boot \
                 done taken as the last sample (sys.boot_completed)"
                    .into(),
            );
            Milestone {
                t_s: last_sample_s,
                source: crate::platform::ANDROID_LAST_SAMPLE.into(),
            }
        }
        None => {
            model.notes.push(if login {
                "CPU and disk never stayed idle after the login: boot done taken as the \
                 last sample"
                    .into()
            } else {
                "no login milestone: boot done taken as the last sample".into()
            });
            Milestone {
                t_s: last_sample_s,
                source: "last sample".into(),
            }
        }
    }
}

/// Process names of boot recorders, whose own CPU use does not keep a boot from being done.
pub const RECORDER_NAMES: [&str; 3] = ["bootprint-boot", "bootchart-colle", "bootchartd"];

/// Boot done as computed from the samples: the start of the first run of intervals, counted
/// from no earlier than the login milestone (text, else graphical), in which CPU busy (user +
/// system, over all CPUs, with the recorder's own CPU use taken out) stays below
/// `opts.idle_cpu` and the busiest disk's utilisation below `opts.idle_disk` for
/// `opts.settle_s`. `None` without a login milestone or when it never settles. This is the
/// recorder's rule, so it is also a check on a `boot_done` event.
pub fn computed_boot_done(model: &BootModel, opts: &Options) -> Option<Milestone> {
    let from = model.milestones.login()?.t_s;
    idle_after(model, opts, from).map(|t| Milestone {
        t_s: t,
        source: "computed: idle after login".into(),
    })
}

/// Desktop ready as computed from the samples: boot done's rule ([`computed_boot_done`])
/// applied to the session, counted from no earlier than the start of the last process the
/// session started (the session manager or one of its descendants, `Process::session`).
/// `None` without a session or when it never settles. The recorder's rule, so it is also a
/// check on a `desktop_ready` event.
pub fn computed_desktop_ready(model: &BootModel, opts: &Options) -> Option<Milestone> {
    let start = model.milestones.session_start.as_ref()?.t_s;
    let last = model
        .processes
        .iter()
        .filter(|p| p.session)
        .max_by(|a, b| a.start_s.total_cmp(&b.start_s))?;
    idle_after(model, opts, last.start_s.max(start)).map(|t| Milestone {
        t_s: t,
        source: format!(
            "computed: idle after the session's last process {} ({})",
            last.name, last.pid
        ),
    })
}

/// The start of the first settle window from `from` on, with the recorders' own CPU use
/// taken out of the busy share.
fn idle_after(model: &BootModel, opts: &Options, from: f64) -> Option<f64> {
    let ncpus = f64::from(model.system.ncpus.max(1));
    let recorders: Vec<&Process> = model
        .processes
        .iter()
        .filter(|p| RECORDER_NAMES.contains(&p.name.as_str()))
        .collect();
    let busy: Vec<f64> = model
        .cpu
        .iter()
        .map(|c| {
            let own: f64 = recorders
                .iter()
                .filter_map(|p| {
                    let i = p.samples.partition_point(|s| s.t_s < c.t_s - 0.005);
                    p.samples
                        .get(i)
                        .filter(|s| (s.t_s - c.t_s).abs() <= 0.005)
                        .map(|s| s.cpu)
                })
                .sum();
            (c.user + c.sys - own / ncpus).max(0.0)
        })
        .collect();
    settle_point(&model.cpu, &busy, &model.disk, opts, from)
}

/// Marks the session manager (pid `root`, the one started nearest the `session_start` time,
/// as pids are reused) and its descendants as the desktop session. Tree order puts every
/// parent before its children, so one pass finds them all.
fn mark_session(procs: &mut [Process], root: Option<u32>, start: Option<&Milestone>) {
    let (Some(root), Some(start)) = (root, start) else {
        return;
    };
    let Some(r) = (0..procs.len())
        .filter(|&i| procs[i].pid == root)
        .min_by(|&a, &b| {
            let d = |i: usize| (procs[i].start_s - start.t_s).abs();
            d(a).total_cmp(&d(b))
        })
    else {
        return;
    };
    procs[r].session = true;
    for i in r + 1..procs.len() {
        if procs[i].depth <= procs[r].depth {
            break;
        }
        procs[i].session = procs[i].parent.is_some_and(|p| procs[p].session);
    }
}

/// The levers whose `<lever>_off` event says they switched themselves off (`by=itself`).
fn self_off(trace: &Trace) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in trace.events.iter().flatten() {
        let lever = match e.kind.as_str() {
            "readahead_off" => "readahead",
            "modules_off" => "modules",
            "rc_off" => "rc",
            "late_off" => "late",
            _ => continue,
        };
        if e.get("by") == Some("itself") && !out.iter().any(|l| l == lever) {
            out.push(lever.to_string());
        }
    }
    out
}

/// The last `readahead_hit` event: `replayed`, `resident`, `ratio` (computed from the byte
/// counts when `ratio` is missing or unreadable).
fn readahead_hit(trace: &Trace) -> Option<ReadaheadHit> {
    let e = trace
        .events
        .as_ref()?
        .iter()
        .rev()
        .find(|e| e.kind == "readahead_hit")?;
    let replayed_bytes: u64 = e.get("replayed")?.parse().ok()?;
    let resident_bytes: u64 = e.get("resident").and_then(|v| v.parse().ok()).unwrap_or(0);
    let ratio = e
        .get("ratio")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|r| r.is_finite())
        .unwrap_or(if replayed_bytes > 0 {
            resident_bytes as f64 / replayed_bytes as f64
        } else {
            0.0
        });
    Some(ReadaheadHit {
        t_s: e.t_s(),
        replayed_bytes,
        resident_bytes,
        ratio,
    })
}

/// The last `recorder_stats` event: `cpu_s`, and `boot_cpu_s`, `share_pct`, `hz` when the
/// recorder wrote them (older traces have `cpu_s` only). Values that are not finite and
/// non-negative are left out.
fn recorder_cost(trace: &Trace) -> Option<RecorderCost> {
    let e = trace
        .events
        .as_ref()?
        .iter()
        .rev()
        .find(|e| e.kind == "recorder_stats")?;
    let num = |k: &str| {
        e.get(k)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|x| x.is_finite() && *x >= 0.0)
    };
    Some(RecorderCost {
        cpu_s: num("cpu_s")?,
        boot_cpu_s: num("boot_cpu_s"),
        share_pct: num("share_pct"),
        hz: num("hz"),
    })
}

fn cs(t_cs: u64) -> f64 {
    t_cs as f64 / 100.0
}

fn system_info(trace: &Trace, notes: &mut Vec<String>) -> SystemInfo {
    let get = |k: &str| trace.header_value(k).map(str::to_string);
    let cpu_raw = trace.header_value("system.cpu").unwrap_or("");
    // bootchart2 writes `model name\t: NAME` and then `model name : NAME (N)`; keep NAME.
    let cpu_model = cpu_raw
        .rsplit(':')
        .next()
        .map(|s| {
            let s = s.trim();
            let s = match (s.rfind(" ("), s.ends_with(')')) {
                (Some(i), true) if s[i + 2..s.len() - 1].bytes().all(|b| b.is_ascii_digit()) => {
                    &s[..i]
                }
                _ => s,
            };
            s.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .filter(|s| !s.is_empty());
    let ncpus = trace
        .header_value("bootprint.ncpus")
        .and_then(|v| v.trim().parse::<u32>().ok())
        .or_else(|| {
            let n = crate::bootchart::num_cpus(&trace.header);
            (cpu_raw.trim_end().ends_with(')') || trace.header_value("system.cpu.num").is_some())
                .then_some(n)
        })
        .or_else(|| trace.stat.iter().map(|s| s.ncpus).max().filter(|&n| n > 0))
        .unwrap_or(1)
        .max(1);
    let clk_tck = match trace
        .header_value("bootprint.clk_tck")
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|&v| v > 0)
    {
        Some(v) => v,
        None => {
            notes.push("header has no bootprint.clk_tck: clock ticks taken as 1/100 s".into());
            100
        }
    };
    let mut intervals: Vec<f64> = trace
        .stat
        .windows(2)
        .map(|w| cs(w[1].t_cs.saturating_sub(w[0].t_cs)))
        .collect();
    intervals.sort_by(f64::total_cmp);
    let sample_interval_s = intervals.get(intervals.len() / 2).copied().unwrap_or(0.0);
    SystemInfo {
        title: get("title"),
        uname: get("system.uname"),
        release: get("system.release"),
        cpu_model,
        kernel_options: get("system.kernel.options"),
        ncpus,
        clk_tck,
        hz: trace
            .header_value("bootprint.hz")
            .and_then(|v| v.trim().parse().ok()),
        sample_interval_s,
        recorder_version: get("version"),
        kernel_release: crate::summary::kernel_release(&trace.header),
        dmi_vendor: get("bootprint.dmi_vendor"),
        dmi_product: get("bootprint.dmi_product"),
        boot_id: get("bootprint.boot_id"),
        boot_unix_s: get("bootprint.boot_unix_s").and_then(|v| v.trim().parse().ok()),
    }
}

fn total(c: &CpuTimes) -> u64 {
    // Saturating: the counters are whatever proc_stat.log holds.
    [
        c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal,
    ]
    .iter()
    .fold(c.user, |a, &x| a.saturating_add(x))
}

/// The CPU series: per interval, shares of all CPU time (steal counts in the total only).
fn cpu_series(stat: &[trace::bootchart::StatSample]) -> Vec<CpuSample> {
    stat.windows(2)
        .map(|w| {
            let (a, b) = (&w[0].cpu, &w[1].cpu);
            let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
            let tot = d(total(a), total(b));
            let frac = |x: f64| if tot > 0.0 { x / tot } else { 0.0 };
            CpuSample {
                t_s: cs(w[1].t_cs),
                dt_s: cs(w[1].t_cs.saturating_sub(w[0].t_cs)),
                // Counters a file gives can be anything: no sum may overflow.
                user: frac(d(
                    a.user.saturating_add(a.nice),
                    b.user.saturating_add(b.nice),
                )),
                sys: frac(d(
                    a.system.saturating_add(a.irq).saturating_add(a.softirq),
                    b.system.saturating_add(b.irq).saturating_add(b.softirq),
                )),
                iowait: frac(d(a.iowait, b.iowait)),
            }
        })
        .collect()
}

/// Not a disk a boot waits on: what the recorder leaves out already
/// ([`trace::procfs::is_virtual_disk`]; older traces may have them), optical and floppy
/// drives, network block devices.
fn is_virtual_disk(name: &str) -> bool {
    trace::procfs::is_virtual_disk(name) || ["sr", "fd", "nbd"].iter().any(|p| name.starts_with(p))
}

fn whole_disks(block: &DiskBlock) -> Vec<(&str, u64, u64, u64)> {
    let names: Vec<&str> = block.disks.iter().map(|d| d.name.as_str()).collect();
    block
        .disks
        .iter()
        .filter(|d| !is_virtual_disk(&d.name) && !trace::procfs::is_partition(&d.name, &names))
        .map(|d| {
            (
                d.name.as_str(),
                d.read_sectors,
                d.write_sectors,
                d.io_ticks_ms,
            )
        })
        .collect()
}

fn disk_series(blocks: &[DiskBlock]) -> Vec<DiskSample> {
    let disks: Vec<Vec<(&str, u64, u64, u64)>> = blocks.iter().map(whole_disks).collect();
    let mut out = Vec::with_capacity(blocks.len());
    for i in 1..blocks.len() {
        let dt = cs(blocks[i].t_cs.saturating_sub(blocks[i - 1].t_cs));
        let (mut rd, mut wr, mut util) = (0u64, 0u64, 0.0f64);
        for &(name, r, w, io) in &disks[i] {
            // A disk that appears between two samples has no previous figure: skip it once.
            if let Some(&(_, pr, pw, pio)) = disks[i - 1].iter().find(|d| d.0 == name) {
                rd += r.saturating_sub(pr);
                wr += w.saturating_sub(pw);
                if dt > 0.0 {
                    util = util.max(io.saturating_sub(pio) as f64 / 1000.0 / dt);
                }
            }
        }
        let per_s = |sectors: u64| {
            if dt > 0.0 {
                sectors as f64 * 512.0 / dt
            } else {
                0.0
            }
        };
        out.push(DiskSample {
            t_s: cs(blocks[i].t_cs),
            dt_s: dt,
            read_bps: per_s(rd),
            write_bps: per_s(wr),
            util: util.clamp(0.0, 1.0),
        });
    }
    out
}

fn memory_series(trace: &Trace) -> Vec<MemSample> {
    let Some(mem) = &trace.meminfo else {
        return Vec::new();
    };
    mem.iter()
        .filter_map(|m| {
            Some(MemSample {
                t_s: cs(m.t_cs),
                total_kb: m.total?,
                free_kb: m.free?,
                buffers_kb: m.buffers.unwrap_or(0),
                cached_kb: m.cached.unwrap_or(0),
                swap_used_kb: m
                    .swap_total
                    .unwrap_or(0)
                    .saturating_sub(m.swap_free.unwrap_or(0)),
            })
        })
        .collect()
}

/// The processes, how blocked time was measured, the first and last block times, and how
/// many processes started (by their `starttime`) after the first block that saw them.
type ProcessScan = (Vec<Process>, BlockedSource, Option<(f64, f64)>, usize);

/// At least this many processes born while sampling must agree before a constant offset
/// between the sample clock and the kernel's is taken.
pub const CLOCK_OFFSET_MIN_BIRTHS: usize = 3;

/// A constant offset between a log's sample clock and the kernel's (the processes'
/// `starttime`): the sample clock started `offset_cs` later.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockOffset {
    /// How much later the sample clock started, in centiseconds.
    pub offset_cs: u64,
    /// How many processes born while sampling showed it.
    pub births: usize,
    /// How far apart their offsets were (at most two sample intervals).
    pub spread_s: f64,
}

impl ClockOffset {
    fn note(&self) -> String {
        format!(
            "sample clock offset: each of the {} processes born while sampling started {:.2} s \
             (within {:.2} s) after the sample that first saw it, so the samples' clock started \
             that much after the kernel's; every sample was moved {:.2} s later, onto the \
             kernel's clock",
            self.births,
            cs(self.offset_cs),
            self.spread_s,
            cs(self.offset_cs)
        )
    }
}

/// Finds a constant offset between the sample clock and the kernel's. A process born between
/// two samples has its `starttime` within one sample interval before the sample that first
/// sees it; if instead every process born while sampling (not those in the first sample) has
/// it well after that sample, by the same amount within two intervals, the sample clock
/// started late by that amount (the largest of them: the others were born earlier within
/// their interval). A few late starts that disagree are left to the per-process rule.
fn clock_offset(trace: &Trace, system: &SystemInfo) -> Result<Option<ClockOffset>, AnalyzeError> {
    let hz = system.clk_tck as f64;
    let mut seen: std::collections::HashSet<(u32, u64)> = std::collections::HashSet::new();
    let mut first_block = true;
    let mut late: Vec<f64> = Vec::new();
    trace.for_each_ps_block(|t_cs, records| {
        for r in records {
            if seen.insert((r.pid, r.starttime)) && !first_block {
                late.push(r.starttime as f64 / hz - cs(t_cs));
            }
        }
        first_block = false;
    })?;
    if late.len() < CLOCK_OFFSET_MIN_BIRTHS {
        return Ok(None);
    }
    let lo = late.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = late.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let step = system.sample_interval_s.max(1.0 / hz);
    if lo <= 2.0 * step || hi - lo > 2.0 * step {
        return Ok(None);
    }
    Ok(Some(ClockOffset {
        offset_cs: (hi * 100.0).round() as u64,
        births: late.len(),
        spread_s: hi - lo,
    }))
}

/// The trace with every CPU, disk and memory sample `offset_cs` later (`proc_ps.log` is
/// moved as it is read: see [`processes`]).
fn shift_samples(trace: &Trace, offset_cs: u64) -> Trace {
    let mut t = trace.clone();
    for s in &mut t.stat {
        s.t_cs += offset_cs;
    }
    for d in &mut t.disk {
        d.t_cs += offset_cs;
    }
    for m in t.meminfo.iter_mut().flatten() {
        m.t_cs += offset_cs;
    }
    t
}

/// One process per (pid, starttime): a reused pid is a new process. `offset_s` is added to
/// every block's time ([`clock_offset`]).
fn processes(
    trace: &Trace,
    system: &SystemInfo,
    offset_s: f64,
    notes: &mut Vec<String>,
) -> Result<ProcessScan, AnalyzeError> {
    if trace.proc_ps == trace::reader::PsSource::Missing {
        notes.push(
            "proc_ps.log is missing: no processes, so no milestones from processes (real \
             init, login), no top processes and no process rows; CPU and disk come from \
             proc_stat.log and proc_diskstats.log"
                .into(),
        );
        return Ok((Vec::new(), BlockedSource::DStateSamples, None, 0));
    }
    let mut scan = PsScan::new(system.clk_tck as f64);
    let nblocks =
        trace.for_each_ps_block(|t_cs, records| scan.block(cs(t_cs) + offset_s, records))?;
    let (Some(first_t), Some(last_t)) = (scan.first_t, scan.prev_t) else {
        return Err(AnalyzeError {
            file: "proc_ps.log".into(),
            line: None,
            expected: "at least 1 sample block".into(),
        });
    };
    scan.note_quirks(notes);
    let source = if scan.any_blkio {
        BlockedSource::DelayAcct
    } else {
        notes.push(
            "delayacct_blkio_ticks is zero throughout: time blocked on I/O is estimated from \
             samples in state D times the sample interval"
                .into(),
        );
        BlockedSource::DStateSamples
    };
    let started_late = scan.started_late;
    let procs = scan.finish(trace, system, source, nblocks);
    Ok((procs, source, Some((first_t, last_t)), started_late))
}

/// A process as `proc_ps.log` has shown it so far, and the counters its figures come from.
struct Acc {
    p: Process,
    /// With the pid, what tells this process from another that reused its pid.
    starttime: u64,
    /// utime + stime at its last sample.
    ticks: u64,
    /// delayacct_blkio_ticks at its last sample.
    blkio: u64,
    /// Time blocked so far, impossible growth cut.
    blocked_s: f64,
    /// Samples in state D.
    d_samples: u32,
    /// The last block that saw it.
    last_block: usize,
}

/// One pass over `proc_ps.log`, block by block.
struct PsScan {
    /// Clock ticks per second.
    hz: f64,
    /// pid -> index into accs of the process now holding it.
    current: PidIndex,
    accs: Vec<Acc>,
    /// Whether any delayacct_blkio_ticks was not zero (delay accounting was on).
    any_blkio: bool,
    /// Processes whose delayacct_blkio_ticks grew faster than time passed (seen on a 6.18
    /// kernel: a task in D state reporting its start time); such jumps are clamped.
    impossible_blkio: usize,
    /// Times of the first and the latest block.
    first_t: Option<f64>,
    prev_t: Option<f64>,
    /// The index of the block being read.
    block: usize,
    /// Processes that started after the first block that saw them.
    started_late: usize,
}

impl PsScan {
    fn new(hz: f64) -> PsScan {
        PsScan {
            hz,
            current: PidIndex::default(),
            accs: Vec::new(),
            any_blkio: false,
            impossible_blkio: 0,
            first_t: None,
            prev_t: None,
            block: 0,
            started_late: 0,
        }
    }

    /// The block at `t` seconds.
    fn block(&mut self, t: f64, records: &[PsRecord]) {
        self.first_t.get_or_insert(t);
        let dt = self.prev_t.map(|p| t - p);
        for r in records {
            self.any_blkio |= r.blkio_ticks > 0;
            // Saturating: the counters are whatever the log holds.
            let ticks = r.utime.saturating_add(r.stime);
            let existing = self
                .current
                .get(r.pid)
                .filter(|&i| self.accs[i].starttime == r.starttime);
            match existing {
                Some(i) => self.seen_again(i, r, ticks, t, dt),
                None => self.seen_first(r, ticks, t, dt),
            }
        }
        self.prev_t = Some(t);
        self.block += 1;
    }

    /// Process `i` in the block at `t`, `dt` seconds after the block before.
    fn seen_again(&mut self, i: usize, r: &PsRecord, ticks: u64, t: f64, dt: Option<f64>) {
        let hz = self.hz;
        let a = &mut self.accs[i];
        let cpu = match dt {
            Some(dt) if dt > 0.0 => ticks.saturating_sub(a.ticks) as f64 / hz / dt,
            _ => 0.0,
        };
        a.p.samples.push(ProcSample {
            t_s: t,
            cpu,
            state: r.state,
        });
        if a.p.name != r.comm {
            a.p.name.clone_from(&r.comm);
        }
        a.ticks = ticks;
        // The leader's blocked time cannot grow faster than the clock.
        let grew = r.blkio_ticks.saturating_sub(a.blkio) as f64 / hz;
        let limit = dt.unwrap_or(0.0).max(0.0) + 1.0 / hz;
        if grew > limit {
            self.impossible_blkio += 1;
        }
        a.blocked_s += grew.min(limit);
        a.blkio = r.blkio_ticks;
        a.last_block = self.block;
        a.p.end_s = t;
        a.d_samples += u32::from(r.state == 'D');
    }

    /// A process seen for the first time, in the block at `t`.
    fn seen_first(&mut self, r: &PsRecord, ticks: u64, t: f64, dt: Option<f64>) {
        let hz = self.hz;
        // A process cannot start after the first sample that saw it, but where the sample
        // clock and the kernel's start times disagree (old bootchart collectors) its
        // starttime says so: the sighting is its start, as bootchart2 takes it
        // (docs/report.md).
        let mut start_s = r.starttime as f64 / hz;
        if start_s > t + 1e-9 {
            self.started_late += 1;
            start_s = t;
        }
        // Its CPU share is only known if it started within the interval.
        let cpu = match (self.prev_t, dt) {
            (Some(p), Some(dt)) if start_s > p && dt > 0.0 => ticks as f64 / hz / dt,
            _ => 0.0,
        };
        let blocked_s = r.blkio_ticks as f64 / hz;
        let limit = (t - start_s).max(0.0) + 1.0 / hz;
        if blocked_s > limit {
            self.impossible_blkio += 1;
        }
        self.accs.push(Acc {
            p: Process {
                pid: r.pid,
                ppid: r.ppid,
                name: r.comm.clone(),
                start_s,
                end_s: t,
                kernel_thread: r.pid == 2 || r.ppid == 2,
                samples: vec![ProcSample {
                    t_s: t,
                    cpu,
                    state: r.state,
                }],
                ..Process::default()
            },
            starttime: r.starttime,
            ticks,
            blkio: r.blkio_ticks,
            blocked_s: blocked_s.min(limit),
            d_samples: u32::from(r.state == 'D'),
            last_block: self.block,
        });
        self.current.set(r.pid, self.accs.len() - 1);
    }

    /// Says in the notes where the log's clocks or counters could not be taken as they are.
    fn note_quirks(&self, notes: &mut Vec<String>) {
        let started_late = self.started_late;
        if started_late > 0 {
            notes.push(format!(
                "clocks disagree: {started_late} process{} started after {} first sampled; \
                 start taken as first sighting",
                if started_late == 1 { "" } else { "es" },
                if started_late == 1 {
                    "it was"
                } else {
                    "they were"
                },
            ));
        }
        let impossible_blkio = self.impossible_blkio;
        if impossible_blkio > 0 {
            notes.push(format!(
                "delayacct_blkio_ticks grew faster than the clock {impossible_blkio} times (a \
                 kernel reporting quirk); each such jump was cut to the time that passed"
            ));
        }
    }

    /// The processes with their totals (blocked time from `source`) and command lines;
    /// `nblocks`: how many blocks the log had.
    fn finish(
        self,
        trace: &Trace,
        system: &SystemInfo,
        source: BlockedSource,
        nblocks: usize,
    ) -> Vec<Process> {
        let hz = self.hz;
        let cmdlines: HashMap<u32, &trace::bootchart::CmdlineEntry> = trace
            .cmdlines
            .iter()
            .flatten()
            .map(|c| (c.pid, c))
            .collect();
        self.accs
            .into_iter()
            .map(|a| {
                let mut p = a.p;
                p.alive_at_end = a.last_block + 1 == nblocks;
                p.cpu_s = a.ticks as f64 / hz;
                p.blocked_s = match source {
                    BlockedSource::DelayAcct => a.blocked_s,
                    BlockedSource::DStateSamples => a.d_samples as f64 * system.sample_interval_s,
                };
                if let Some(c) = cmdlines.get(&p.pid) {
                    if !c.exe.is_empty() {
                        p.exe = Some(c.exe.clone());
                    }
                    if !c.args.is_empty() {
                        p.cmdline = Some(c.args.join(" "));
                    }
                }
                p
            })
            .collect()
    }
}

/// pid -> index, looked up once per `proc_ps.log` line: a Vec for the pids a boot mostly
/// has, a map above them, so that no allocation is sized by a pid read from the file (a pid of
/// 4294967295 once asked for 32 GiB).
#[derive(Default)]
struct PidIndex {
    low: Vec<usize>,
    high: HashMap<u32, usize>,
}

impl PidIndex {
    /// Pids below this are in `low` (at most 512 KiB).
    const LOW: u32 = 1 << 16;
    const NONE: usize = usize::MAX;

    fn get(&self, pid: u32) -> Option<usize> {
        if pid < Self::LOW {
            self.low
                .get(pid as usize)
                .copied()
                .filter(|&i| i != Self::NONE)
        } else {
            self.high.get(&pid).copied()
        }
    }

    fn set(&mut self, pid: u32, index: usize) {
        if pid < Self::LOW {
            let pid = pid as usize;
            if self.low.len() <= pid {
                self.low.resize(pid + 1, Self::NONE);
            }
            self.low[pid] = index;
        } else {
            self.high.insert(pid, index);
        }
    }
}

/// Puts processes in tree order and fills `parent` and `depth`. A parent is the process with
/// the child's ppid that started last at or before the child (pids are reused).
fn order_tree(procs: &mut Vec<Process>) {
    let n = procs.len();
    let mut by_pid: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, p) in procs.iter().enumerate() {
        by_pid.entry(p.pid).or_default().push(i);
    }
    let parent_of = |i: usize| -> Option<usize> {
        let c = &procs[i];
        let cands = by_pid.get(&c.ppid)?;
        cands
            .iter()
            .copied()
            .filter(|&j| j != i && procs[j].start_s <= c.start_s)
            .max_by(|&a, &b| procs[a].start_s.total_cmp(&procs[b].start_s))
            .or_else(|| cands.iter().copied().find(|&j| j != i))
    };
    let mut parents: Vec<Option<usize>> = (0..n).map(parent_of).collect();
    cut_parent_cycles(&mut parents, |a, b| {
        let (pa, pb) = (&procs[a], &procs[b]);
        pa.start_s.total_cmp(&pb.start_s).then(pa.pid.cmp(&pb.pid))
    });
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for (i, par) in parents.iter().enumerate() {
        match par {
            Some(p) => children[*p].push(i),
            None => roots.push(i),
        }
    }
    let key = |i: &usize| (procs[*i].start_s, procs[*i].pid);
    let cmp = |a: &usize, b: &usize| {
        let (ka, kb) = (key(a), key(b));
        ka.0.total_cmp(&kb.0).then(ka.1.cmp(&kb.1))
    };
    roots.sort_by(cmp);
    for c in &mut children {
        c.sort_by(cmp);
    }
    // Depth-first, each node once (the parents are a forest now; this stays robust anyway).
    let mut order = Vec::with_capacity(n);
    let mut depth = vec![0u32; n];
    let mut seen = vec![false; n];
    let mut stack: Vec<usize> = roots.iter().rev().copied().collect();
    loop {
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            order.push(i);
            for &c in children[i].iter().rev() {
                depth[c] = depth[i] + 1;
                stack.push(c);
            }
        }
        match (0..n).find(|&i| !seen[i]) {
            Some(i) => stack.push(i),
            None => break,
        }
    }
    let mut new_index = vec![0usize; n];
    for (k, &i) in order.iter().enumerate() {
        new_index[i] = k;
    }
    let mut old: Vec<Option<Process>> = std::mem::take(procs).into_iter().map(Some).collect();
    for &i in &order {
        let mut p = old[i].take().expect("each process once");
        p.depth = depth[i];
        p.parent = parents[i].map(|q| new_index[q]);
        procs.push(p);
    }
}

/// Cuts every cycle of `parents` (pid reuse can make two processes each other's parent, or a
/// process its own ancestor) at its first member by `order`, which becomes a root: then every
/// walk up the tree ends, within `parents.len()` steps.
pub(crate) fn cut_parent_cycles(
    parents: &mut [Option<usize>],
    order: impl Fn(usize, usize) -> std::cmp::Ordering,
) {
    const NEW: u8 = 0;
    const ON_PATH: u8 = 1;
    const ENDS: u8 = 2;
    let mut state = vec![NEW; parents.len()];
    let mut path = Vec::new();
    for s in 0..parents.len() {
        path.clear();
        let mut cur = Some(s);
        while let Some(i) = cur {
            match state[i] {
                ENDS => break,
                ON_PATH => {
                    let at = path.iter().position(|&x| x == i).unwrap_or(0);
                    if let Some(first) = path[at..].iter().copied().min_by(|&a, &b| order(a, b)) {
                        parents[first] = None;
                    }
                    break;
                }
                _ => {
                    state[i] = ON_PATH;
                    path.push(i);
                    cur = parents[i];
                }
            }
        }
        for &i in &path {
            state[i] = ENDS;
        }
    }
}

/// The time of the kernel's "Run /init as init process" (or /sbin/init, ...) line.
pub fn kernel_done_from_dmesg(dmesg: &str) -> Option<f64> {
    dmesg.lines().find_map(|line| {
        let open = line.find('[')?;
        let close = open + line[open..].find(']')?;
        let msg = line[close + 1..].trim();
        let is_run = msg.starts_with("Run ") && msg.ends_with(" as init process");
        is_run.then(|| line[open + 1..close].trim().parse::<f64>().ok())?
    })
}

#[allow(clippy::too_many_arguments)]
const PENDING: &str = "pending";

fn milestones(
    trace: &Trace,
    procs: &[Process],
    platform: Platform,
    first_s: f64,
    last_s: f64,
    notes: &mut Vec<String>,
) -> (Milestones, Option<u32>) {
    let events = trace.events.as_deref().unwrap_or(&[]);
    let event = |kind: &str, name: Option<&str>| {
        events
            .iter()
            .find(|e| e.kind == kind && (name.is_none() || e.get("name") == name))
    };
    let ms = |t_s: f64, source: String| Milestone { t_s, source };
    let android = match platform {
        Platform::Android => Some(crate::platform::android(procs, notes)),
        Platform::Linux => None,
    };

    let kernel = match trace.dmesg.as_deref().and_then(kernel_done_from_dmesg) {
        Some(t) => Some(ms(t, "dmesg".into())),
        None if android.as_ref().is_some_and(|a| a.kernel.is_some()) => {
            android.as_ref().and_then(|a| a.kernel.clone())
        }
        None => {
            notes.push(
                "no `Run ... as init process` line in dmesg: kernel time taken as the first \
                 sample"
                    .into(),
            );
            Some(ms(first_s, "first sample".into()))
        }
    };
    let init_exec = event("init_exec", None).map(|e| ms(e.t_s(), "event".into()));

    let first_named = |names: &[&str]| {
        procs
            .iter()
            .filter(|p| names.iter().any(|n| *n == p.name))
            .min_by(|a, b| a.start_s.total_cmp(&b.start_s))
            .map(|p| ms(p.start_s, format!("process {} ({})", p.name, p.pid)))
    };
    let text_login = match event("milestone", Some("text_login")) {
        Some(e) => Some(ms(e.t_s(), "event".into())),
        None => first_named(&LOGIN_NAMES),
    };
    let graphical_login = match (event("milestone", Some("graphical_login")), &android) {
        (Some(e), _) => Some(ms(e.t_s(), "event".into())),
        // On a phone the boot animation's exit is when its user can use it.
        (None, Some(a)) => a.animation_exit.clone(),
        (None, None) => first_named(&GREETER_NAMES),
    };

    // The session: its manager, after the greeter when there is one (an autologin starts no
    // greeter; docs/recorder.md "Desktop ready").
    let (session_start, session_pid) = match event("milestone", Some("session_start")) {
        Some(e) => (
            Some(ms(e.t_s(), "event".into())),
            e.get("pid").and_then(|p| p.parse().ok()),
        ),
        None if android.is_none() => {
            let after = graphical_login
                .as_ref()
                .map_or(f64::NEG_INFINITY, |g| g.t_s);
            procs
                .iter()
                .filter(|p| {
                    p.start_s >= after && trace::config::SESSION_NAMES.contains(&p.name.as_str())
                })
                .min_by(|a, b| a.start_s.total_cmp(&b.start_s))
                .map_or((None, None), |p| {
                    let source = match &graphical_login {
                        Some(_) => format!("process {} ({}) after the greeter", p.name, p.pid),
                        None => format!("process {} ({})", p.name, p.pid),
                    };
                    (Some(ms(p.start_s, source)), Some(p.pid))
                })
        }
        None => (None, None),
    };
    let desktop_ready = match event("desktop_ready", None) {
        Some(e) => match e.get("reason").unwrap_or("unknown") {
            "idle" => Some(ms(e.t_s(), "event (idle)".into())),
            reason => {
                notes.push(match reason {
                    "no_session" => format!(
                        "no desktop session started within {} s of boot done: no desktop ready",
                        e.get("waited_s").unwrap_or("?")
                    ),
                    "timeout" => "the desktop was not idle within the recorder's limit \
                                  (desktop_timeout_s) of the session's start: no desktop ready"
                        .into(),
                    "terminated" => "the recording was stopped (SIGTERM) before the desktop was \
                                     idle: no desktop ready"
                        .into(),
                    other => format!("desktop_ready event with reason `{other}`: no desktop ready"),
                });
                None
            }
        },
        // Without an event, computed once the model exists, like boot done.
        None => session_start.as_ref().map(|_| ms(last_s, PENDING.into())),
    };

    // Without an event, boot done is computed once the model exists (`settle`).
    let boot_done = match event("boot_done", None) {
        Some(e) => ms(
            e.t_s(),
            format!("event ({})", e.get("reason").unwrap_or("unknown")),
        ),
        None => ms(last_s, PENDING.into()),
    };
    let milestones = Milestones {
        kernel,
        init_exec,
        text_login,
        graphical_login,
        boot_done,
        session_start,
        desktop_ready,
        platform: android.map(|a| a.platform).unwrap_or_default(),
    };
    (milestones, session_pid)
}

/// Length of the pieces the settle window is judged in, seconds. At 50 Hz one interval holds
/// only a few clock ticks, so a single busy tick would make it "busy": judging half-second
/// pieces keeps the test about load, not about tick rounding.
const SETTLE_PIECE_S: f64 = 0.5;

/// The start of the first settle window, beginning no earlier than `from_s`, in which every
/// piece of at least [`SETTLE_PIECE_S`] (or one sample interval, if longer) has mean CPU busy
/// below `opts.idle_cpu` and mean busiest-disk utilisation below `opts.idle_disk`.
fn settle_point(
    cpu: &[CpuSample],
    busy: &[f64],
    disk: &[DiskSample],
    opts: &Options,
    from_s: f64,
) -> Option<f64> {
    const EPS: f64 = 1e-9;
    let disk_util_at = |t: f64| {
        // The disk interval covering time t (disk and CPU samples need not align).
        let i = disk.partition_point(|d| d.t_s < t - 1e-6);
        disk.get(i).map_or(0.0, |d| d.util)
    };
    let n = cpu.len();
    // Prefix sums of dt, busy x dt and disk x dt over the intervals.
    let mut p_t = vec![0.0; n + 1];
    let mut p_b = vec![0.0; n + 1];
    let mut p_d = vec![0.0; n + 1];
    for (k, c) in cpu.iter().enumerate() {
        p_t[k + 1] = p_t[k] + c.dt_s;
        p_b[k + 1] = p_b[k] + busy[k] * c.dt_s;
        p_d[k + 1] = p_d[k] + disk_util_at(c.t_s) * c.dt_s;
    }
    let mut dts: Vec<f64> = cpu.iter().map(|c| c.dt_s).collect();
    dts.sort_by(f64::total_cmp);
    let piece = SETTLE_PIECE_S.max(dts.get(n / 2).copied().unwrap_or(0.0));
    let last_end = cpu.last()?.t_s;
    // Intervals ending in (x, y], at least one.
    let idle = |x: f64, y: f64| {
        let a = cpu.partition_point(|c| c.t_s <= x + EPS);
        let b = cpu.partition_point(|c| c.t_s <= y + EPS).max(a + 1).min(n);
        let t = p_t[b] - p_t[a];
        t > 0.0 && (p_b[b] - p_b[a]) / t < opts.idle_cpu && (p_d[b] - p_d[a]) / t < opts.idle_disk
    };
    for c in cpu.iter().filter(|c| c.t_s > from_s + EPS) {
        let start = (c.t_s - c.dt_s).max(from_s);
        let end = start + opts.settle_s;
        if end > last_end + EPS {
            return None;
        }
        let mut x = start;
        let mut all_idle = true;
        while x < end - EPS {
            let y = (x + piece).min(end);
            if !idle(x, y) {
                all_idle = false;
                break;
            }
            x = y;
        }
        if all_idle {
            return Some(start);
        }
    }
    None
}

fn cpu_totals(stat: &[trace::bootchart::StatSample], from_s: f64, to_s: f64) -> CpuTotals {
    let first = &stat[0];
    // The last block at or before `to_s` (at least the second, so there is a span).
    let last_i = stat
        .iter()
        .rposition(|s| cs(s.t_cs) <= to_s + 1e-9)
        .unwrap_or(0)
        .max(1);
    let last = &stat[last_i];
    let (a, b) = (&first.cpu, &last.cpu);
    let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
    let tot = d(total(a), total(b));
    let frac = |x: f64| if tot > 0.0 { x / tot } else { 0.0 };
    CpuTotals {
        from_s: from_s.min(cs(first.t_cs)),
        to_s: cs(last.t_cs),
        idle_fraction: frac(d(a.idle, b.idle)),
        iowait_fraction: frac(d(a.iowait, b.iowait)),
        user_fraction: frac(d(
            a.user.saturating_add(a.nice),
            b.user.saturating_add(b.nice),
        )),
        sys_fraction: frac(d(
            a.system.saturating_add(a.irq).saturating_add(a.softirq),
            b.system.saturating_add(b.irq).saturating_add(b.softirq),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ps_text(blocks: &[(u64, Vec<trace::writer::PsRecord>)]) -> String {
        let mut out = Vec::new();
        for (t, recs) in blocks {
            let mut body = Vec::new();
            for r in recs {
                r.write_line(&mut body).unwrap();
            }
            trace::writer::write_block(&mut out, *t, &body).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    /// A minimal trace: one CPU at 100 ticks/s, `blocks` of `proc_ps.log`.
    fn small_trace(blocks: &[(u64, Vec<trace::writer::PsRecord>)]) -> Trace {
        let stat = blocks
            .iter()
            .map(|(t, _)| trace::bootchart::StatSample {
                t_cs: *t,
                cpu: CpuTimes {
                    idle: *t,
                    ..CpuTimes::default()
                },
                ncpus: 1,
                procs_blocked: None,
            })
            .collect();
        Trace {
            header: vec![("bootprint.clk_tck".into(), "100".into())],
            stat,
            proc_ps: ps_text(blocks).into(),
            ..Trace::default()
        }
    }

    fn ps(pid: u32, ppid: u32, comm: &str, starttime: u64) -> trace::writer::PsRecord {
        trace::writer::PsRecord {
            pid,
            comm: comm.into(),
            state: 'S',
            ppid,
            starttime,
            ..Default::default()
        }
    }

    /// Defect 3: pid reuse can make two processes each other's parent; the model's parent
    /// links must still end at a root, or every walk up the tree loops.
    #[test]
    fn a_reused_pid_is_a_new_process_and_cpu_comes_from_counter_growth() {
        let rec = |starttime: u64, utime: u64| trace::writer::PsRecord {
            utime,
            ..ps(10, 1, "sh", starttime)
        };
        let mut scan = PsScan::new(100.0);
        scan.block(1.0, &[rec(50, 10)]);
        scan.block(2.0, &[rec(50, 60)]);
        // pid 10 again, started at 2.5 s: within the last interval, so its 20 ticks count.
        scan.block(3.0, &[rec(250, 20)]);
        assert_eq!(scan.accs.len(), 2);
        let (old, new) = (&scan.accs[0], &scan.accs[1]);
        let cpu = |a: &Acc| a.p.samples.iter().map(|s| s.cpu).collect::<Vec<_>>();
        assert_eq!(cpu(old), vec![0.0, 0.5]);
        assert_eq!((old.p.start_s, old.p.end_s, old.last_block), (0.5, 2.0, 1));
        assert_eq!(cpu(new), vec![0.2]);
        assert_eq!((new.p.start_s, new.last_block), (2.5, 2));
        assert_eq!((scan.first_t, scan.prev_t), (Some(1.0), Some(3.0)));
    }

    #[test]
    fn defect3_parent_cycle_is_cut_in_the_model() {
        let recs = vec![
            ps(1, 0, "init", 10),
            ps(10, 11, "a", 100),
            ps(11, 10, "b", 100),
            ps(12, 10, "c", 100),
        ];
        let t = small_trace(&[(100, recs.clone()), (102, recs)]);
        let m = analyze(&t).unwrap();
        let n = m.processes.len();
        for (i, p) in m.processes.iter().enumerate() {
            let mut cur = p.parent;
            let mut hops = 0;
            while let Some(j) = cur {
                hops += 1;
                assert!(hops <= n, "process {i} ({}) is in a parent cycle", p.pid);
                cur = m.processes[j].parent;
            }
            assert_eq!(p.depth as usize, hops, "depth of {}", p.pid);
        }
        // The cut keeps every process, and the child of the cycle keeps its parent.
        assert_eq!(n, 4);
        let c = m.processes.iter().position(|p| p.pid == 12).unwrap();
        let parent = m.processes[c].parent.map(|j| m.processes[j].pid);
        assert_eq!(parent, Some(10));
    }

    /// Defect 4: a pid read from the file sizes no allocation.
    #[test]
    fn defect4_largest_pid_is_read_without_a_pid_sized_allocation() {
        let recs = vec![
            ps(1, 0, "init", 10),
            ps(u32::MAX, 1, "big", 100),
            ps(u32::MAX - 1, u32::MAX, "bigger", 100),
        ];
        let t = small_trace(&[(100, recs.clone()), (102, recs)]);
        let m = analyze(&t).unwrap();
        let big = m.process(u32::MAX).unwrap();
        assert_eq!((big.name.as_str(), big.samples.len()), ("big", 2));
        let child = m.process(u32::MAX - 1).unwrap();
        assert_eq!(child.parent.map(|j| m.processes[j].pid), Some(u32::MAX));
    }

    /// Defect 8: in old bootchart logs the sample clock and the kernel's start times
    /// disagree: a process "starts" after the first sample that saw it. It cannot; its start
    /// is that sighting, no duration is negative, and the report says how many.
    #[test]
    fn defect8_a_process_starts_no_later_than_its_first_sighting() {
        let init = ps(1, 0, "init", 10);
        let t = small_trace(&[
            (100, vec![init.clone()]),
            (120, vec![init.clone(), ps(300, 1, "late", 125)]),
            (140, vec![init.clone(), ps(301, 1, "later", 142)]),
            (160, vec![init.clone(), ps(301, 1, "later", 142)]),
        ]);
        let m = analyze(&t).unwrap();
        let late = m.process(300).unwrap();
        assert_eq!((late.start_s, late.end_s), (1.2, 1.2));
        let later = m.process(301).unwrap();
        assert_eq!((later.start_s, later.end_s), (1.4, 1.6));
        assert_eq!(m.process(1).unwrap().start_s, 0.1);
        for p in &m.processes {
            assert!(p.end_s >= p.start_s, "{} {} {}", p.pid, p.start_s, p.end_s);
        }
        assert_eq!(m.started_after_first_sample, 2);
        let note = "clocks disagree: 2 processes started after they were first sampled; \
                    start taken as first sighting";
        assert!(m.notes.iter().any(|n| n == note), "{:?}", m.notes);
        // Clocks that agree: no note.
        let t = small_trace(&[(100, vec![init.clone()]), (120, vec![init])]);
        let m = analyze(&t).unwrap();
        assert_eq!(m.started_after_first_sample, 0);
        assert!(!m.notes.iter().any(|n| n.contains("clocks disagree")));
    }

    #[test]
    fn impossible_blkio_jumps_are_clamped_and_noted() {
        let rec = |state: char, blkio: u64| trace::writer::PsRecord {
            pid: 7,
            comm: "ldconfig".into(),
            state,
            ppid: 1,
            starttime: 99,
            blkio_ticks: blkio,
            ..Default::default()
        };
        let stat = |t: u64, idle: u64| trace::bootchart::StatSample {
            t_cs: t,
            cpu: CpuTimes {
                idle,
                ..CpuTimes::default()
            },
            ncpus: 1,
            procs_blocked: None,
        };
        let t = Trace {
            header: vec![("bootprint.clk_tck".into(), "100".into())],
            stat: vec![stat(100, 0), stat(102, 2), stat(104, 4)],
            // 0 ticks, then a jump to its start time (99 ticks) within 0.02 s, then +1.
            proc_ps: ps_text(&[
                (100, vec![rec('R', 0)]),
                (102, vec![rec('D', 99)]),
                (104, vec![rec('D', 100)]),
            ])
            .into(),
            ..Trace::default()
        };
        let m = analyze(&t).unwrap();
        let p = m.process(7).unwrap();
        assert!(
            (p.blocked_s - (0.03 + 0.01)).abs() < 1e-9,
            "{}",
            p.blocked_s
        );
        assert!(
            m.notes
                .iter()
                .any(|n| n.contains("faster than the clock 1 times")),
            "{:?}",
            m.notes
        );
    }

    /// 2 CPUs 30% busy throughout, two thirds of that the recorder's own sampling.
    fn recorder_trace(recorder_name: &str) -> Trace {
        let times: Vec<u64> = (0..11).map(|i| 100 + 50 * i).collect();
        let stat = times
            .iter()
            .enumerate()
            .map(|(i, &t)| trace::bootchart::StatSample {
                t_cs: t,
                cpu: CpuTimes {
                    user: 30 * i as u64,
                    idle: 70 * i as u64,
                    ..CpuTimes::default()
                },
                ncpus: 2,
                procs_blocked: None,
            })
            .collect();
        let blocks: Vec<(u64, Vec<trace::writer::PsRecord>)> = times
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let rec = trace::writer::PsRecord {
                    pid: 150,
                    comm: recorder_name.into(),
                    state: 'R',
                    ppid: 1,
                    utime: 20 * i as u64,
                    starttime: 90,
                    ..Default::default()
                };
                let getty = trace::writer::PsRecord {
                    pid: 300,
                    comm: "agetty".into(),
                    state: 'S',
                    ppid: 1,
                    starttime: 100,
                    ..Default::default()
                };
                (t, vec![rec, getty])
            })
            .collect();
        Trace {
            header: vec![
                ("bootprint.clk_tck".into(), "100".into()),
                ("bootprint.ncpus".into(), "2".into()),
            ],
            stat,
            proc_ps: ps_text(&blocks).into(),
            ..Trace::default()
        }
    }

    #[test]
    fn the_recorders_own_cpu_does_not_delay_boot_done() {
        let m = analyze(&recorder_trace("bootprint-boot")).unwrap();
        assert_eq!(m.milestones.boot_done.t_s, 1.0);
        assert_eq!(m.milestones.boot_done.source, "computed: idle after login");
        // The same load from another process keeps the machine busy.
        let m = analyze(&recorder_trace("busybody")).unwrap();
        assert_eq!(m.milestones.boot_done.t_s, 6.0);
        assert_eq!(m.milestones.boot_done.source, "last sample");
        assert!(computed_boot_done(&m, &Options::default()).is_none());
        let relaxed = Options {
            idle_cpu: 0.35,
            ..Options::default()
        };
        assert_eq!(computed_boot_done(&m, &relaxed).unwrap().t_s, 1.0);
    }

    #[test]
    fn dmesg_run_init_line() {
        let d = "[    0.000000] Linux version 6.1\n[    7.012345] Run /init as init process\n\
                 [   20.5] Run /sbin/init as init process\n";
        assert_eq!(kernel_done_from_dmesg(d), Some(7.012345));
        assert_eq!(
            kernel_done_from_dmesg("[ 1.0] Freeing unused kernel memory\n"),
            None
        );
    }

    #[test]
    fn virtual_devices_are_not_disks() {
        assert!(is_virtual_disk("sr0") && is_virtual_disk("nbd1") && is_virtual_disk("fd0"));
        assert!(is_virtual_disk("loop3") && is_virtual_disk("dm-0") && !is_virtual_disk("vda"));
    }

    fn sample(t: f64, busy: f64) -> (CpuSample, f64) {
        (
            CpuSample {
                t_s: t,
                dt_s: 1.0,
                user: busy,
                ..CpuSample::default()
            },
            busy,
        )
    }

    #[test]
    fn settle_is_judged_in_half_seconds_not_single_ticks() {
        // 50 Hz on 2 CPUs at 100 ticks/s: 4 ticks per interval, so one busy tick in every
        // other interval reads as 25% busy there, 12.5% on average.
        let (cpu, busy): (Vec<_>, Vec<_>) = (1..=500)
            .map(|i| {
                let (mut c, b) = sample(i as f64 * 0.02, if i % 2 == 0 { 0.25 } else { 0.0 });
                c.dt_s = 0.02;
                (c, b)
            })
            .unzip();
        let opts = Options::default();
        let t = settle_point(&cpu, &busy, &[], &opts, 2.0).unwrap();
        assert!((t - 2.0).abs() < 1e-9, "{t}");
        // Half a second at 40% is not idle: the window starts in it at the earliest where
        // the piece holding the rest of it averages below 25%.
        let busy2: Vec<f64> = cpu
            .iter()
            .zip(&busy)
            .map(|(c, &b)| if c.t_s > 3.0 && c.t_s <= 3.5 { 0.4 } else { b })
            .collect();
        let t = settle_point(&cpu, &busy2, &[], &opts, 2.0).unwrap();
        assert!(t > 3.0 && t <= 3.5, "{t}");
    }

    #[test]
    fn settle_needs_the_full_period_after_login() {
        let (cpu, busy): (Vec<_>, Vec<_>) = [0.9, 0.9, 0.1, 0.1, 0.9, 0.1, 0.1, 0.1, 0.1, 0.1]
            .iter()
            .enumerate()
            .map(|(i, &b)| sample(i as f64 + 1.0, b))
            .unzip();
        let opts = Options::default();
        // Idle from t=5 (interval 5..6) on; the 2..4 idle run is too short.
        assert_eq!(settle_point(&cpu, &busy, &[], &opts, 0.0), Some(5.0));
        // Login at 6.5: idle counted from there.
        assert_eq!(settle_point(&cpu, &busy, &[], &opts, 6.5), Some(6.5));
        // Too late to settle within the samples.
        assert_eq!(settle_point(&cpu, &busy, &[], &opts, 8.0), None);
        // A busy disk keeps it from settling.
        let disk: Vec<DiskSample> = (1..=10)
            .map(|i| DiskSample {
                t_s: i as f64,
                dt_s: 1.0,
                util: if i == 8 { 0.5 } else { 0.0 },
                ..DiskSample::default()
            })
            .collect();
        assert_eq!(settle_point(&cpu, &busy, &disk, &opts, 0.0), None);
    }
}
