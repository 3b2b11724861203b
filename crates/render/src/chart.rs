//! `ChartData`: the bootchart renderer's own input, and the row policy that turns thousands of
//! processes into a chart a person can read.
//!
//! The SVG writer (`svg.rs`) draws only what is here; `ChartData::from_model` fills it from the
//! boot model, and tests build it by hand. Times are seconds since the kernel started
//! (`CLOCK_BOOTTIME`), the time base of every bootprint trace.
//!
//! Row policy (see `docs/chart.md`), applied by [`layout_rows`]:
//! 1. Rows are in tree order: each process under its parent, siblings by start time.
//! 2. A process that lived at most `min_samples` sample intervals, or never ran and never
//!    blocked, and has no row below it, is folded into its nearest shown ancestor's row: its
//!    CPU and I/O activity is drawn there, and the row is labelled `+N`.
//! 3. Rows with the same name under the same parent are merged into one row (`×N`); their
//!    children become children of that row (and are merged in turn).
//! 4. If more than `max_rows` rows remain, the leaf rows with the least activity (CPU plus
//!    blocked seconds) are folded into their parents until the cap holds.
//!
//! Roots (processes whose parent was never seen) keep their row unless the cap needs it; the
//! first root's row always stays and takes in the roots folded by the cap.

use std::collections::BTreeMap;

/// Seconds since the kernel started.
pub type Secs = f64;

/// Everything the bootchart shows, in the renderer's own terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChartData {
    /// Chart title, e.g. the host name and kernel release.
    pub title: String,
    /// Extra header lines as (label, value), e.g. ("kernel", "6.1.0-26-amd64").
    pub info: Vec<(String, String)>,
    /// First time shown on the axis (usually 0: kernel start); earlier data is clipped.
    pub start: Secs,
    /// Last time shown; the chart also extends to the latest data if that is later.
    pub end: Secs,
    /// Whole-machine CPU use per sample interval.
    pub cpu: Vec<CpuSample>,
    /// Disk throughput and utilisation per sample interval (all disks together).
    pub disk: Vec<DiskSample>,
    /// Every process seen during the boot.
    pub processes: Vec<ChartProcess>,
    /// Boot milestones, drawn as labelled vertical lines.
    pub milestones: Vec<Milestone>,
}

/// CPU use of the whole machine during one interval, as fractions of all CPUs (0..=1).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuSample {
    /// Interval start.
    pub start: Secs,
    /// Interval end.
    pub end: Secs,
    /// Time in user mode (user + nice).
    pub user: f64,
    /// Time in the kernel (system + irq + softirq).
    pub sys: f64,
    /// Idle time with I/O outstanding.
    pub iowait: f64,
}

/// Disk activity during one interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DiskSample {
    /// Interval start.
    pub start: Secs,
    /// Interval end.
    pub end: Secs,
    /// Bytes read per second.
    pub read_bps: f64,
    /// Bytes written per second.
    pub write_bps: f64,
    /// Fraction of the interval the busiest disk had I/O in flight (0..=1).
    pub util: f64,
}

/// What a process was doing in a sample interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProcState {
    /// Runnable or running (`R`).
    Running,
    /// In uninterruptible sleep, usually waiting for I/O (`D`).
    Blocked,
    /// Sleeping or anything else.
    Sleeping,
}

/// One process sample interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcSample {
    /// Interval start.
    pub start: Secs,
    /// Interval end.
    pub end: Secs,
    /// State seen at the sample.
    pub state: ProcState,
    /// CPU used in the interval, as a share of one CPU (0..=1).
    pub cpu: f64,
}

/// One process.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartProcess {
    /// Process id.
    pub pid: u32,
    /// Parent process id (0 for none).
    pub ppid: u32,
    /// Name shown on its row (`comm` or the program's base name).
    pub name: String,
    /// Command line, shown when the pointer rests on the row (browsers), if known.
    pub cmdline: Option<String>,
    /// When it started.
    pub start: Secs,
    /// When it exited, or the last time it was seen.
    pub end: Secs,
    /// Per-interval states, in time order.
    pub samples: Vec<ProcSample>,
    /// Whether it belongs to the user's desktop session (drawn in its own colour, labelled).
    pub session: bool,
}

/// A boot milestone.
#[derive(Debug, Clone, PartialEq)]
pub struct Milestone {
    /// Its name, e.g. `kernel`, `text_login`, `graphical_login`, `boot_done`.
    pub name: String,
    /// When it happened.
    pub time: Secs,
}

impl ChartData {
    /// The time span to draw: from `start` (what lies before it is clipped) to `end` widened
    /// to cover every finite time in the data.
    pub fn span(&self) -> (Secs, Secs) {
        let lo = finite_or(self.start, 0.0);
        let mut hi = finite_or(self.end, lo);
        let mut see = |t: f64| {
            if t.is_finite() {
                hi = hi.max(t);
            }
        };
        for s in &self.cpu {
            see(s.start);
            see(s.end);
        }
        for s in &self.disk {
            see(s.start);
            see(s.end);
        }
        for p in &self.processes {
            see(p.start);
            see(p.end);
        }
        for m in &self.milestones {
            see(m.time);
        }
        if hi <= lo {
            hi = lo + 1.0;
        }
        (lo, hi)
    }

    /// The typical sample interval: the median interval length over CPU and process samples
    /// (0.02 s when there are none).
    pub fn sample_period(&self) -> Secs {
        let mut lens: Vec<f64> = self
            .cpu
            .iter()
            .map(|s| s.end - s.start)
            .chain(
                self.processes
                    .iter()
                    .flat_map(|p| p.samples.iter().map(|s| s.end - s.start)),
            )
            .filter(|d| d.is_finite() && *d > 0.0)
            .collect();
        if lens.is_empty() {
            return 0.02;
        }
        lens.sort_by(f64::total_cmp);
        lens[lens.len() / 2]
    }
}

impl ChartData {
    /// The chart of an analysed boot. The chart shows the model as it is; it adds no
    /// analysis of its own.
    pub fn from_model(m: &analyze::BootModel) -> ChartData {
        let mut info = info_lines(m);
        // A boot recorded from the start begins at the kernel's start. A recording that began
        // long after (a late start, a test on a running host) begins at its first sample, or
        // the chart would be mostly empty time.
        let start = if m.first_sample_s > LATE_START_S {
            info.push((
                "note".to_string(),
                format!(
                    "recording began {:.1} s after the kernel started; the chart starts there",
                    m.first_sample_s
                ),
            ));
            m.first_sample_s.floor()
        } else {
            0.0
        };
        let period = if m.system.sample_interval_s > 0.0 {
            m.system.sample_interval_s
        } else {
            0.02
        };
        ChartData {
            title: title(&m.system),
            info,
            start,
            end: m.last_sample_s.max(m.milestones.boot_done.t_s),
            cpu: m.cpu.iter().map(CpuSample::from_model).collect(),
            disk: m.disk.iter().map(DiskSample::from_model).collect(),
            processes: m
                .processes
                .iter()
                .map(|p| ChartProcess::from_model(p, period))
                .collect(),
            milestones: milestones(&m.milestones),
        }
    }
}

/// The interval a model sample closes: the `dt_s` seconds up to its `t_s`.
fn closed_interval(t_s: f64, dt_s: f64) -> (Secs, Secs) {
    (t_s - dt_s, t_s)
}

impl CpuSample {
    fn from_model(s: &analyze::CpuSample) -> CpuSample {
        let (start, end) = closed_interval(s.t_s, s.dt_s);
        CpuSample {
            start,
            end,
            user: s.user,
            sys: s.sys,
            iowait: s.iowait,
        }
    }
}

impl DiskSample {
    fn from_model(s: &analyze::DiskSample) -> DiskSample {
        let (start, end) = closed_interval(s.t_s, s.dt_s);
        DiskSample {
            start,
            end,
            read_bps: s.read_bps,
            write_bps: s.write_bps,
            util: s.util,
        }
    }
}

/// The chart's title: the configured one, else the release's, else a default.
fn title(sys: &analyze::SystemInfo) -> String {
    match (&sys.title, &sys.release) {
        (Some(t), _) if !t.trim().is_empty() => t.clone(),
        (_, Some(r)) if !r.trim().is_empty() => format!("Boot of {r}"),
        _ => "bootprint boot chart".to_string(),
    }
}

/// The header lines: kernel, CPU and sampling rate, command line, and the first notes.
fn info_lines(m: &analyze::BootModel) -> Vec<(String, String)> {
    let sys = &m.system;
    let mut info = Vec::new();
    if let Some(u) = &sys.uname {
        info.push(("kernel".to_string(), u.clone()));
    }
    let mut cpu_line = sys.cpu_model.clone().unwrap_or_default();
    if sys.ncpus > 0 {
        cpu_line = format!("{cpu_line} ({} CPUs)", sys.ncpus)
            .trim()
            .to_string();
    }
    if let Some(hz) = sys.hz {
        cpu_line = format!("{cpu_line}; sampled at {hz} Hz")
            .trim_start_matches("; ")
            .to_string();
    }
    if !cpu_line.is_empty() {
        info.push(("cpu".to_string(), cpu_line));
    }
    if let Some(o) = &sys.kernel_options {
        info.push(("command line".to_string(), truncate_chars(o, 160)));
    }
    // The notes say what the figures cannot be trusted for; a few, not a wall of text.
    for note in m.notes.iter().take(3) {
        info.push(("note".to_string(), truncate_chars(note, 160)));
    }
    info
}

impl ChartProcess {
    /// A model process, its samples as intervals of about `period` seconds.
    fn from_model(p: &analyze::Process, period: Secs) -> ChartProcess {
        // A sample closes the interval since the previous one; the first covers at most one
        // period back, and never before the process started.
        let mut prev: Option<f64> = None;
        let samples = p
            .samples
            .iter()
            .map(|s| {
                let start = prev.unwrap_or((s.t_s - period).max(p.start_s.min(s.t_s)));
                prev = Some(s.t_s);
                ProcSample {
                    start,
                    end: s.t_s,
                    state: match s.state {
                        'R' => ProcState::Running,
                        'D' => ProcState::Blocked,
                        _ => ProcState::Sleeping,
                    },
                    cpu: s.cpu,
                }
            })
            .collect();
        ChartProcess {
            pid: p.pid,
            ppid: p.ppid,
            name: p.name.clone(),
            cmdline: p.cmdline.clone(),
            start: p.start_s,
            end: p.end_s.max(p.start_s),
            samples,
            session: p.session,
        }
    }
}

/// The milestones the model has, in boot order (the platform's among them by time); boot
/// done always, last.
fn milestones(ms: &analyze::Milestones) -> Vec<Milestone> {
    let mut milestones = Vec::new();
    for (name, ms) in [
        ("kernel", &ms.kernel),
        ("init_exec", &ms.init_exec),
        ("text_login", &ms.text_login),
        ("graphical_login", &ms.graphical_login),
    ] {
        if let Some(x) = ms {
            milestones.push(Milestone {
                name: name.to_string(),
                time: x.t_s,
            });
        }
    }
    if !ms.platform.is_empty() {
        for p in &ms.platform {
            milestones.push(Milestone {
                name: p.name.clone(),
                time: p.t_s,
            });
        }
        // Only then: Linux charts keep the order they always had.
        milestones.sort_by(|a, b| a.time.total_cmp(&b.time));
    }
    milestones.push(Milestone {
        name: "boot_done".to_string(),
        time: ms.boot_done.t_s,
    });
    // The desktop's, after boot done.
    for (name, x) in [
        ("session_start", &ms.session_start),
        ("desktop_ready", &ms.desktop_ready),
    ] {
        if let Some(x) = x {
            milestones.push(Milestone {
                name: name.to_string(),
                time: x.t_s,
            });
        }
    }
    milestones
}

/// A recording whose first sample is later than this (seconds after kernel start) did not
/// record the boot from its start; two minutes is far beyond any kernel phase we have seen
/// (7 s under QEMU emulation).
const LATE_START_S: f64 = 120.0;

/// `s` cut to at most `max` characters, with an ellipsis when cut.
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('\u{2026}');
        t
    }
}

/// Replaces NaN and infinities, which bad input may carry, with a default.
pub(crate) fn finite_or(x: f64, default: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        default
    }
}

/// Limits for [`layout_rows`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowPolicy {
    /// Processes that lived at most this many sample intervals are folded into their parent.
    pub min_samples: u32,
    /// At most this many process rows.
    pub max_rows: usize,
}

impl Default for RowPolicy {
    fn default() -> Self {
        // Two samples is bootchart2's own cut for short-lived processes; 150 rows of 13 px
        // keep the Gantt under 2,000 px, about two screens.
        RowPolicy {
            min_samples: 2,
            max_rows: 150,
        }
    }
}

/// One row of the process Gantt.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Index into `ChartData::processes` of the process that names the row.
    pub owner: usize,
    /// Depth in the shown tree (roots are 0).
    pub depth: usize,
    /// Row index of the parent row, if any.
    pub parent_row: Option<usize>,
    /// Processes whose lifetimes are drawn as bars on this row: the owner and merged siblings.
    pub bars: Vec<usize>,
    /// Processes whose activity is drawn on this row: `bars` plus everything folded into it.
    pub members: Vec<usize>,
    /// How many processes were folded into this row (short-lived, idle or over the cap).
    pub folded: usize,
}

/// What [`layout_rows`] did, for the chart to say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Collapsed {
    /// Processes in the data.
    pub processes: usize,
    /// Rows drawn.
    pub rows: usize,
    /// Folded because they lived at most `min_samples` intervals.
    pub short_lived: usize,
    /// Folded because they never ran and never blocked.
    pub idle: usize,
    /// Merged into a same-name sibling's row.
    pub same_name: usize,
    /// Folded because there were more than `max_rows` rows.
    pub over_cap: usize,
}

/// The process rows in drawing order, and what was collapsed to get them.
#[derive(Debug, Clone, PartialEq)]
pub struct RowLayout {
    /// Rows, top to bottom.
    pub rows: Vec<Row>,
    /// Counts for the chart's note.
    pub collapsed: Collapsed,
}

/// Per-process figures the policy looks at.
struct Stat {
    life: f64,
    activity: f64,
    idle: bool,
}

impl Stat {
    fn of(p: &ChartProcess) -> Stat {
        let mut cpu_s = 0.0;
        let mut blocked_s = 0.0;
        for s in &p.samples {
            let d = finite_or(s.end - s.start, 0.0).max(0.0);
            cpu_s += d * finite_or(s.cpu, 0.0).clamp(0.0, 1.0);
            if s.state == ProcState::Blocked {
                blocked_s += d;
            }
        }
        Stat {
            life: finite_or(p.end - p.start, 0.0),
            activity: cpu_s + blocked_s,
            idle: cpu_s == 0.0 && blocked_s == 0.0,
        }
    }
}

/// The processes as a forest, by index into `ChartData::processes`.
struct Forest {
    /// Tree order needs a total order on processes: by start, then pid, then position.
    order: Vec<usize>,
    /// Each process's place in `order`.
    rank: Vec<usize>,
    parent: Vec<Option<usize>>,
    /// Each process's children, in `order`.
    children: Vec<Vec<usize>>,
}

impl Forest {
    fn of(procs: &[ChartProcess]) -> Forest {
        let n = procs.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| {
            let (pa, pb) = (&procs[a], &procs[b]);
            finite_or(pa.start, 0.0)
                .total_cmp(&finite_or(pb.start, 0.0))
                .then(pa.pid.cmp(&pb.pid))
                .then(a.cmp(&b))
        });
        let mut rank = vec![0usize; n];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r;
        }

        // Parent: the latest process with that pid that started before the child (pids can be
        // reused). Requiring an earlier rank keeps the graph a forest even on bad input.
        let mut by_pid: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for &i in &order {
            by_pid.entry(procs[i].pid).or_default().push(i);
        }
        let parent: Vec<Option<usize>> = (0..n)
            .map(|i| {
                let cands = by_pid.get(&procs[i].ppid)?;
                cands
                    .iter()
                    .rev()
                    .copied()
                    .find(|&c| c != i && rank[c] < rank[i])
            })
            .collect();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &i in &order {
            if let Some(p) = parent[i] {
                children[p].push(i);
            }
        }
        Forest {
            order,
            rank,
            parent,
            children,
        }
    }

    /// The first root: its row always stays, and takes in the roots the cap folds.
    fn sink(&self) -> Option<usize> {
        self.order.first().copied()
    }
}

/// Applies the row policy (module docs) to `data.processes`. Deterministic: ties are broken
/// by start time, then pid, then input position.
pub fn layout_rows(data: &ChartData, policy: &RowPolicy) -> RowLayout {
    let procs = &data.processes;
    let mut forest = Forest::of(procs);
    let stats: Vec<Stat> = procs.iter().map(Stat::of).collect();
    let mut c = Collapsed {
        processes: procs.len(),
        ..Collapsed::default()
    };
    let min_life = f64::from(policy.min_samples) * data.sample_period() * 1.001;
    let mut shown = fold_short_and_idle(&forest, &stats, min_life, &mut c);
    let mut merged_into = merge_same_names(&mut forest, procs, &mut shown, &mut c);
    fold_over_cap(
        &forest,
        &stats,
        policy.max_rows,
        &mut shown,
        &mut merged_into,
        &mut c,
    );
    let rows = build_rows(&forest, &shown, &merged_into);
    c.rows = rows.len();
    RowLayout { rows, collapsed: c }
}

/// Steps 1 and 2, bottom-up (children come after parents in `order`): which processes keep
/// a row.
fn fold_short_and_idle(
    forest: &Forest,
    stats: &[Stat],
    min_life: f64,
    c: &mut Collapsed,
) -> Vec<bool> {
    let mut shown = vec![false; stats.len()];
    for &i in forest.order.iter().rev() {
        let has_shown_child = forest.children[i].iter().any(|&ch| shown[ch]);
        let short = stats[i].life <= min_life;
        shown[i] = forest.parent[i].is_none() || has_shown_child || !(short || stats[i].idle);
        if !shown[i] {
            if short {
                c.short_lived += 1;
            } else {
                c.idle += 1;
            }
        }
    }
    shown
}

/// Step 3: same-name siblings share the first one's row, and their children become that
/// row's children, so a udevd worker and its modprobe, repeated 40 times, are two rows.
/// Top-down, so the gathered children are merged in turn. Returns the row each merged
/// process went to.
fn merge_same_names(
    forest: &mut Forest,
    procs: &[ChartProcess],
    shown: &mut [bool],
    c: &mut Collapsed,
) -> Vec<Option<usize>> {
    let Forest {
        order,
        rank,
        parent,
        children,
    } = forest;
    let mut merged_into: Vec<Option<usize>> = vec![None; procs.len()];
    for &p in order.iter() {
        if !shown[p] {
            continue;
        }
        let mut first_by_name: BTreeMap<&str, usize> = BTreeMap::new();
        for ch in children[p].clone() {
            if !shown[ch] {
                continue;
            }
            match first_by_name.get(procs[ch].name.as_str()) {
                Some(&first) => {
                    merged_into[ch] = Some(first);
                    shown[ch] = false;
                    c.same_name += 1;
                    let moved = std::mem::take(&mut children[ch]);
                    for &g in &moved {
                        parent[g] = Some(first);
                    }
                    children[first].extend(moved);
                    children[first].sort_by_key(|&g| rank[g]);
                }
                None => {
                    first_by_name.insert(procs[ch].name.as_str(), ch);
                }
            }
        }
    }
    merged_into
}

/// Step 4: fold the least active leaves until at most `max_rows` rows remain. Batches keep
/// this near-linear even for tens of thousands of processes.
fn fold_over_cap(
    forest: &Forest,
    stats: &[Stat],
    max_rows: usize,
    shown: &mut [bool],
    merged_into: &mut [Option<usize>],
    c: &mut Collapsed,
) {
    let (order, rank, children) = (&forest.order, &forest.rank, &forest.children);
    let mut rows_now = shown.iter().filter(|&&s| s).count();
    let mut extra_activity = vec![0.0; stats.len()];
    for (i, merged) in merged_into.iter().enumerate() {
        if let Some(first) = *merged {
            extra_activity[first] += stats[i].activity;
        }
    }
    // Even roots are folded if need be (bad or partial traces can have thousands), into the
    // first root's row, which always stays.
    let sink = forest.sink();
    while rows_now > max_rows.max(1) {
        let mut leaves: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| shown[i] && Some(i) != sink && !children[i].iter().any(|&ch| shown[ch]))
            .collect();
        if leaves.is_empty() {
            break;
        }
        leaves.sort_by(|&a, &b| {
            (stats[a].activity + extra_activity[a])
                .total_cmp(&(stats[b].activity + extra_activity[b]))
                .then(rank[b].cmp(&rank[a]))
        });
        let excess = rows_now - max_rows.max(1);
        for &i in leaves.iter().take(excess) {
            shown[i] = false;
            c.over_cap += 1;
            rows_now -= 1;
        }
    }
    // Siblings merged into a row that was then capped go with it.
    for m in merged_into.iter_mut() {
        if let Some(first) = *m {
            if !shown[first] {
                *m = None;
                c.same_name -= 1;
                c.over_cap += 1;
            }
        }
    }
}

/// The rows of the shown processes in tree order (depth-first, children by start); then
/// every hidden process draws on the row of its merge target or nearest shown ancestor.
fn build_rows(forest: &Forest, shown: &[bool], merged_into: &[Option<usize>]) -> Vec<Row> {
    let mut row_of: Vec<Option<usize>> = vec![None; shown.len()];
    let mut rows: Vec<Row> = Vec::new();
    let mut stack: Vec<(usize, usize, Option<usize>)> = Vec::new();
    for &root in forest.order.iter().rev() {
        if forest.parent[root].is_none() {
            stack.push((root, 0, None));
        }
    }
    while let Some((i, depth, parent_row)) = stack.pop() {
        let mut next_parent_row = parent_row;
        let mut next_depth = depth;
        if shown[i] {
            row_of[i] = Some(rows.len());
            rows.push(Row {
                owner: i,
                depth,
                parent_row,
                bars: vec![i],
                members: vec![i],
                folded: 0,
            });
            next_parent_row = Some(rows.len() - 1);
            next_depth = depth + 1;
        }
        for &ch in forest.children[i].iter().rev() {
            stack.push((ch, next_depth, next_parent_row));
        }
    }
    for &i in &forest.order {
        if shown[i] {
            continue;
        }
        let target = match merged_into[i] {
            Some(first) => row_of[first],
            None => match forest.parent[i] {
                Some(p) => row_of[p],
                None => forest.sink().and_then(|r| row_of[r]),
            },
        };
        row_of[i] = target;
        if let Some(r) = target {
            rows[r].members.push(i);
            if merged_into[i].is_some() {
                rows[r].bars.push(i);
            } else {
                rows[r].folded += 1;
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(pid: u32, ppid: u32, name: &str, start: f64, end: f64, cpu: f64) -> ChartProcess {
        let mut samples = Vec::new();
        let mut t = start;
        while t + 0.01 < end {
            samples.push(ProcSample {
                start: t,
                end: t + 0.1,
                state: ProcState::Sleeping,
                cpu,
            });
            t += 0.1;
        }
        ChartProcess {
            pid,
            ppid,
            name: name.to_string(),
            cmdline: None,
            start,
            end,
            samples,
            session: false,
        }
    }

    fn names(data: &ChartData, l: &RowLayout) -> Vec<String> {
        l.rows
            .iter()
            .map(|r| format!("{}{}", " ".repeat(r.depth), data.processes[r.owner].name))
            .collect()
    }

    #[test]
    fn tree_order_and_folding() {
        let data = ChartData {
            processes: vec![
                proc(1, 0, "init", 0.0, 10.0, 0.1),
                proc(30, 1, "rc", 2.0, 8.0, 0.2),
                proc(31, 30, "sed", 2.5, 2.6, 0.5), // short-lived: folds into rc
                proc(20, 1, "udevd", 1.0, 10.0, 0.3),
                proc(40, 30, "daemon", 3.0, 10.0, 0.0), // idle: folds into rc
                proc(41, 30, "sshd", 4.0, 10.0, 0.1),
            ],
            ..ChartData::default()
        };
        let l = layout_rows(&data, &RowPolicy::default());
        assert_eq!(names(&data, &l), vec!["init", " udevd", " rc", "  sshd"]);
        let rc = &l.rows[2];
        assert_eq!(rc.folded, 2);
        assert_eq!(rc.parent_row, Some(0));
        assert_eq!(l.collapsed.short_lived, 1);
        assert_eq!(l.collapsed.idle, 1);
        assert_eq!(l.collapsed.rows, 4);
    }

    #[test]
    fn same_name_leaves_share_a_row() {
        let mut ps = vec![proc(1, 0, "init", 0.0, 10.0, 0.1)];
        for k in 0..5 {
            let s = 1.0 + k as f64;
            ps.push(proc(10 + k, 1, "worker", s, s + 0.8, 0.5));
        }
        let data = ChartData {
            processes: ps,
            ..ChartData::default()
        };
        let l = layout_rows(&data, &RowPolicy::default());
        assert_eq!(l.rows.len(), 2);
        assert_eq!(l.rows[1].bars.len(), 5);
        assert_eq!(l.collapsed.same_name, 4);
    }

    #[test]
    fn same_name_subtrees_merge_level_by_level() {
        // udevd forks a worker per device; each worker runs modprobe for a while.
        let mut ps = vec![proc(1, 0, "udevd", 0.0, 10.0, 0.1)];
        for k in 0..5u32 {
            let s = 1.0 + f64::from(k);
            ps.push(proc(10 + 2 * k, 1, "udevd", s, s + 0.9, 0.2));
            ps.push(proc(
                11 + 2 * k,
                10 + 2 * k,
                "modprobe",
                s + 0.1,
                s + 0.8,
                0.5,
            ));
        }
        let data = ChartData {
            processes: ps,
            ..ChartData::default()
        };
        let l = layout_rows(&data, &RowPolicy::default());
        assert_eq!(names(&data, &l), vec!["udevd", " udevd", "  modprobe"]);
        assert_eq!((l.rows[1].bars.len(), l.rows[2].bars.len()), (5, 5));
        assert_eq!(l.rows[2].parent_row, Some(1));
        assert_eq!(l.collapsed.same_name, 8);
    }

    #[test]
    fn cap_folds_least_active_leaves() {
        let mut ps = vec![proc(1, 0, "init", 0.0, 10.0, 0.1)];
        for k in 0..20u32 {
            ps.push(proc(
                10 + k,
                1,
                &format!("p{k}"),
                1.0,
                9.0,
                0.01 * f64::from(k + 1),
            ));
        }
        let data = ChartData {
            processes: ps,
            ..ChartData::default()
        };
        let l = layout_rows(
            &data,
            &RowPolicy {
                min_samples: 2,
                max_rows: 6,
            },
        );
        assert_eq!(l.rows.len(), 6);
        // The five busiest survive.
        let kept: Vec<&str> = l.rows[1..]
            .iter()
            .map(|r| data.processes[r.owner].name.as_str())
            .collect();
        assert_eq!(kept, vec!["p15", "p16", "p17", "p18", "p19"]);
        assert_eq!(l.collapsed.over_cap, 15);
        assert_eq!(l.rows[0].folded, 15);
    }

    #[test]
    fn a_reused_pid_is_the_parent_only_of_processes_started_after_it() {
        let procs = vec![
            proc(1, 0, "init", 0.0, 10.0, 0.1),
            proc(10, 1, "sh", 1.0, 2.0, 0.1),
            proc(11, 10, "sed", 1.5, 1.8, 0.1),
            proc(10, 1, "udevd", 4.0, 10.0, 0.1), // pid 10 again
            proc(12, 10, "worker", 5.0, 6.0, 0.1),
        ];
        let forest = Forest::of(&procs);
        assert_eq!(forest.order, vec![0, 1, 2, 3, 4]);
        assert_eq!(
            forest.parent,
            vec![None, Some(0), Some(1), Some(0), Some(3)]
        );
        assert_eq!(forest.children[0], vec![1, 3]);
        assert_eq!(forest.sink(), Some(0));
    }

    #[test]
    fn siblings_merged_into_a_row_the_cap_folds_go_with_it() {
        // Three rows of one "worker" each (2 merged in) and one busy "db": capped at 2 rows,
        // the worker row goes, and its merged siblings count as over the cap.
        let mut ps = vec![proc(1, 0, "init", 0.0, 10.0, 0.1)];
        for k in 0..3u32 {
            let s = 1.0 + f64::from(k);
            ps.push(proc(10 + k, 1, "worker", s, s + 0.8, 0.01));
        }
        ps.push(proc(20, 1, "db", 1.0, 9.0, 0.9));
        let data = ChartData {
            processes: ps,
            ..ChartData::default()
        };
        let policy = RowPolicy {
            min_samples: 2,
            max_rows: 2,
        };
        let l = layout_rows(&data, &policy);
        assert_eq!(names(&data, &l), vec!["init", " db"]);
        assert_eq!(l.collapsed.same_name, 0);
        assert_eq!(l.collapsed.over_cap, 3);
        assert_eq!(l.rows[0].folded, 3);
    }

    #[test]
    fn cycles_and_missing_parents_do_not_hang() {
        let data = ChartData {
            processes: vec![
                proc(5, 6, "a", 1.0, 5.0, 0.1),
                proc(6, 5, "b", 1.0, 5.0, 0.1),
                proc(7, 99, "orphan", 2.0, 5.0, 0.1),
            ],
            ..ChartData::default()
        };
        let l = layout_rows(&data, &RowPolicy::default());
        assert_eq!(names(&data, &l), vec!["a", " b", "orphan"]);
    }

    fn model() -> analyze::BootModel {
        use analyze::*;
        let ms = |t: f64| Milestone {
            t_s: t,
            source: "test".into(),
        };
        let proc =
            |pid, ppid, name: &str, start_s, end_s, samples: Vec<(f64, f64, char)>| Process {
                pid,
                ppid,
                name: name.into(),
                start_s,
                end_s,
                samples: samples
                    .into_iter()
                    .map(|(t_s, cpu, state)| analyze::ProcSample { t_s, cpu, state })
                    .collect(),
                ..Process::default()
            };
        BootModel {
            system: SystemInfo {
                title: None,
                release: Some("Debian GNU/Linux 12".into()),
                uname: Some("Linux 6.1.0-26-amd64".into()),
                cpu_model: Some("QEMU Virtual CPU".into()),
                ncpus: 2,
                sample_interval_s: 0.5,
                ..SystemInfo::default()
            },
            source: TraceKind::Bootprint,
            platform: analyze::Platform::Linux,
            platform_rule: String::new(),
            first_sample_s: 2.0,
            last_sample_s: 9.0,
            milestones: Milestones {
                kernel: Some(ms(1.25)),
                init_exec: None,
                text_login: Some(ms(7.5)),
                graphical_login: None,
                session_start: None,
                desktop_ready: None,
                boot_done: ms(8.0),
                platform: Vec::new(),
            },
            cpu_totals: CpuTotals::default(),
            cpu: vec![analyze::CpuSample {
                t_s: 2.5,
                dt_s: 0.5,
                user: 0.25,
                sys: 0.125,
                iowait: 0.5,
            }],
            disk: vec![analyze::DiskSample {
                t_s: 2.5,
                dt_s: 0.5,
                read_bps: 1e6,
                write_bps: 0.0,
                util: 0.75,
            }],
            memory: vec![],
            readahead: None,
            recorder: None,
            self_off: Vec::new(),
            started_after_first_sample: 0,
            clock_offset_s: None,
            processes: vec![
                proc(
                    1,
                    0,
                    "init",
                    1.25,
                    9.0,
                    vec![(2.0, 0.0, 'S'), (2.5, 0.5, 'R'), (3.0, 0.0, 'D')],
                ),
                proc(
                    40,
                    1,
                    "udevd",
                    2.8,
                    9.0,
                    vec![(3.0, 0.0, 'S'), (3.5, 0.2, 'Z')],
                ),
            ],
            top_cpu: vec![],
            top_blocked: vec![],
            blocked_source: BlockedSource::DelayAcct,
            notes: vec!["delay accounting was off".into()],
        }
    }

    #[test]
    fn from_model_maps_intervals_states_and_milestones() {
        let c = ChartData::from_model(&model());
        assert_eq!(c.title, "Boot of Debian GNU/Linux 12");
        assert!(c
            .info
            .contains(&("cpu".into(), "QEMU Virtual CPU (2 CPUs)".into())));
        assert!(c
            .info
            .contains(&("note".into(), "delay accounting was off".into())));
        assert_eq!((c.start, c.end), (0.0, 9.0));
        assert_eq!(
            (c.cpu[0].start, c.cpu[0].end, c.cpu[0].iowait),
            (2.0, 2.5, 0.5)
        );
        assert_eq!((c.disk[0].start, c.disk[0].util), (2.0, 0.75));
        let init = &c.processes[0];
        let got: Vec<(f64, f64, ProcState)> = init
            .samples
            .iter()
            .map(|s| (s.start, s.end, s.state))
            .collect();
        assert_eq!(
            got,
            vec![
                (1.5, 2.0, ProcState::Sleeping),
                (2.0, 2.5, ProcState::Running),
                (2.5, 3.0, ProcState::Blocked),
            ]
        );
        // The first interval never reaches back before the process started.
        assert_eq!(c.processes[1].samples[0].start, 2.8);
        let names: Vec<(&str, f64)> = c
            .milestones
            .iter()
            .map(|m| (m.name.as_str(), m.time))
            .collect();
        assert_eq!(
            names,
            vec![("kernel", 1.25), ("text_login", 7.5), ("boot_done", 8.0)]
        );
        let l = layout_rows(&c, &RowPolicy::default());
        assert_eq!(l.rows.len(), 2);
        assert_eq!(l.rows[1].parent_row, Some(0));
    }

    #[test]
    fn a_late_recording_starts_at_its_first_sample() {
        let mut m = model();
        m.first_sample_s = 567.7;
        m.last_sample_s = 572.7;
        m.milestones.boot_done.t_s = 572.7;
        let c = ChartData::from_model(&m);
        assert_eq!(c.span(), (567.0, 572.7));
        assert!(c
            .info
            .iter()
            .any(|(k, v)| k == "note" && v.contains("567.7 s after")));
        // Near the start, a boot recording starts at the kernel's start.
        assert_eq!(ChartData::from_model(&model()).start, 0.0);
    }

    #[test]
    fn span_covers_data_and_ignores_nan() {
        let data = ChartData {
            end: 3.0,
            milestones: vec![
                Milestone {
                    name: "x".into(),
                    time: 7.5,
                },
                Milestone {
                    name: "nan".into(),
                    time: f64::NAN,
                },
            ],
            ..ChartData::default()
        };
        assert_eq!(data.span(), (0.0, 7.5));
        let late = ChartData {
            start: 5.0,
            ..data.clone()
        };
        assert_eq!(late.span(), (5.0, 7.5), "the start is not widened back");
        assert_eq!(ChartData::default().span(), (0.0, 1.0));
    }
}
