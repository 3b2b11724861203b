//! The boot model: everything the renderers (text, JSON, SVG) need, computed once from a trace.
//!
//! Times are seconds since the kernel started (`CLOCK_BOOTTIME`), as `f64`. Fractions are in
//! 0..=1. These types are a contract with the renderers: fields are only ever added.

use serde::Serialize;

/// One analysed boot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BootModel {
    /// Facts about the recorded system, from the trace's `header`.
    pub system: SystemInfo,
    /// What kind of trace this came from.
    pub source: TraceKind,
    /// What kind of system was recorded; it decides which rules find the milestones.
    pub platform: Platform,
    /// How the platform was recognised, e.g. `header: version = Android init 0.8`.
    pub platform_rule: String,
    /// Time of the first sample block (any log), seconds.
    pub first_sample_s: f64,
    /// Time of the last sample block (any log), seconds.
    pub last_sample_s: f64,
    /// The boot milestones.
    pub milestones: Milestones,
    /// CPU time split over the boot (first sample to boot done).
    pub cpu_totals: CpuTotals,
    /// CPU use per sample interval, in time order.
    pub cpu: Vec<CpuSample>,
    /// Disk throughput and utilisation per sample interval, in time order (summed over the
    /// whole disks in the trace; partitions are left out so bytes are not counted twice).
    pub disk: Vec<DiskSample>,
    /// Memory per sample, in time order (empty without `proc_meminfo.log`).
    pub memory: Vec<MemSample>,
    /// Every process seen, in tree order: depth-first from the roots, children by start time.
    pub processes: Vec<Process>,
    /// Indices into `processes`, most CPU time first (processes with none are left out).
    pub top_cpu: Vec<usize>,
    /// Indices into `processes`, most time blocked on I/O first (none-blocked left out).
    pub top_blocked: Vec<usize>,
    /// How `Process::blocked_s` was measured.
    pub blocked_source: BlockedSource,
    /// Things the analysis could not do or had to guess, for the reader of the report.
    pub notes: Vec<String>,
    /// The readahead replay's hit rate (`readahead_hit` event), when this boot replayed a pack.
    pub readahead: Option<ReadaheadHit>,
    /// What recording cost (`recorder_stats` event), when the recorder said.
    pub recorder: Option<RecorderCost>,
    /// The levers that switched themselves off by their own verdict, as this boot's trace
    /// says (`readahead_off`, `modules_off`, `rc_off`, `late_off` events with `by=itself`):
    /// `readahead`, `modules`, `rc`, `late`.
    pub self_off: Vec<String>,
    /// Processes whose `starttime` was later than the first sample that saw them (the log's
    /// sample clock and the kernel's start times disagree); their start is that sighting.
    pub started_after_first_sample: usize,
    /// Seconds added to every sample time because the log's sample clock started that long
    /// after the kernel's (see `build::clock_offset`); `None` when the clocks agree.
    pub clock_offset_s: Option<f64>,
}

/// How much of what readahead replayed was still in the page cache at boot done.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct ReadaheadHit {
    /// When it was measured (boot done), seconds.
    pub t_s: f64,
    /// Bytes the replay read.
    pub replayed_bytes: u64,
    /// Of those, bytes resident at boot done.
    pub resident_bytes: u64,
    /// `resident / replayed` (0..=1).
    pub ratio: f64,
}

/// What the recorder cost the boot (its `recorder_stats`; docs/recorder.md, "Cost").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct RecorderCost {
    /// Its own CPU time, seconds.
    pub cpu_s: f64,
    /// CPU time the whole machine was busy up to the last sample (all CPUs), when recorded.
    pub boot_cpu_s: Option<f64>,
    /// `cpu_s / boot_cpu_s`, percent, when known.
    pub share_pct: Option<f64>,
    /// Its sampling rate, when recorded.
    pub hz: Option<f64>,
}

/// Where the trace came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceKind {
    /// A bootprint trace (its header has `bootprint.format`).
    Bootprint,
    /// A bootchart2 log (no bootprint keys in the header).
    Bootchart2,
}

/// The kind of system a trace was recorded on (docs/report.md, "Platforms and their
/// milestones").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Platform {
    /// A Linux distribution with a getty or a display manager (Debian, Yocto, ...).
    #[default]
    Linux,
    /// Android: init, zygote, system_server, the boot animation and the launcher.
    Android,
}

impl Platform {
    /// The name used in JSON and the text report.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Linux => "linux",
            Platform::Android => "android",
        }
    }
}

/// Facts about the recorded system.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct SystemInfo {
    /// `title` from the header.
    pub title: Option<String>,
    /// `system.uname`.
    pub uname: Option<String>,
    /// `system.release` (the distribution).
    pub release: Option<String>,
    /// CPU model name, from `system.cpu`.
    pub cpu_model: Option<String>,
    /// Kernel command line, `system.kernel.options`.
    pub kernel_options: Option<String>,
    /// Online CPUs (`bootprint.ncpus`, else the count in `system.cpu`, else the `cpuN` lines
    /// of `proc_stat.log`).
    pub ncpus: u32,
    /// Clock ticks per second of the recorded kernel (`bootprint.clk_tck`, else 100).
    pub clk_tck: u32,
    /// Requested sample rate (`bootprint.hz`), if known.
    pub hz: Option<f64>,
    /// Median interval between samples, seconds.
    pub sample_interval_s: f64,
    /// The recorder's version (`version`, e.g. `bootprint 0.1.0`; bootchart2's own there).
    pub recorder_version: Option<String>,
    /// `uname -r` (`summary::kernel_release`).
    pub kernel_release: Option<String>,
    /// The machine's maker (`bootprint.dmi_vendor`), where the firmware says.
    pub dmi_vendor: Option<String>,
    /// The machine's model (`bootprint.dmi_product`), where the firmware says.
    pub dmi_product: Option<String>,
    /// The boot's id (`bootprint.boot_id`).
    pub boot_id: Option<String>,
    /// When the kernel started, seconds since the epoch (`bootprint.boot_unix_s`).
    pub boot_unix_s: Option<u64>,
}

/// A time and how it was found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Milestone {
    /// Seconds since the kernel started.
    pub t_s: f64,
    /// How it was found, e.g. `dmesg`, `event`, `process agetty`, `computed idle`.
    pub source: String,
}

/// A milestone only some platforms have (Android's `zygote`, `system_server`, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlatformMilestone {
    /// Its key, e.g. `zygote`, `launcher` (JSON, SVG ids).
    pub name: String,
    /// What it means in words, e.g. `zygote started`.
    pub label: String,
    /// Seconds since the kernel started.
    pub t_s: f64,
    /// The rule that found it, e.g. `process zygote64 (pid 360) started`.
    pub source: String,
}

/// The boot milestones. `None` when the trace does not show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Milestones {
    /// Kernel done: init started.
    pub kernel: Option<Milestone>,
    /// bootprint-boot exec'd the real init (`init_exec` event).
    pub init_exec: Option<Milestone>,
    /// A text login prompt was up.
    pub text_login: Option<Milestone>,
    /// A graphical login (display manager greeter) was up.
    pub graphical_login: Option<Milestone>,
    /// Boot done: CPU and disk idle after the login (always set; at worst the last sample).
    /// See also [`crate::build::computed_boot_done`].
    pub boot_done: Milestone,
    /// A user's desktop session started: its session manager (`xfce4-session`, ...) after the
    /// greeter (`session_start` event, else the first process named in
    /// `trace::config::SESSION_NAMES` started after the graphical login).
    pub session_start: Option<Milestone>,
    /// The desktop is ready: CPU and disk idle after the last process the session started
    /// (`desktop_ready` event with `reason=idle`, else computed by boot done's settle rule).
    /// `None` without a session or when it never settled; a note then says why.
    pub desktop_ready: Option<Milestone>,
    /// The platform's own milestones, in time order (empty on [`Platform::Linux`]).
    pub platform: Vec<PlatformMilestone>,
}

/// CPU time over the boot as fractions of all CPU time (all CPUs) from the first sample to
/// boot done. `idle + iowait + user + sys (+ other)` is 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct CpuTotals {
    /// Start of the span, seconds.
    pub from_s: f64,
    /// End of the span, seconds.
    pub to_s: f64,
    /// Idle (not counting iowait).
    pub idle_fraction: f64,
    /// Idle while some task waited for I/O.
    pub iowait_fraction: f64,
    /// User (with nice).
    pub user_fraction: f64,
    /// System (with irq and softirq).
    pub sys_fraction: f64,
}

/// CPU use in one sample interval, as fractions of all CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct CpuSample {
    /// End of the interval (the sample's time), seconds.
    pub t_s: f64,
    /// Length of the interval, seconds.
    pub dt_s: f64,
    /// User + nice.
    pub user: f64,
    /// System + irq + softirq.
    pub sys: f64,
    /// I/O wait.
    pub iowait: f64,
}

/// Disk activity in one sample interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct DiskSample {
    /// End of the interval (the sample's time), seconds.
    pub t_s: f64,
    /// Length of the interval, seconds.
    pub dt_s: f64,
    /// Bytes read per second.
    pub read_bps: f64,
    /// Bytes written per second.
    pub write_bps: f64,
    /// Fraction of the interval the busiest disk had I/O in flight (0..=1).
    pub util: f64,
}

/// Memory at one sample, in KiB as `/proc/meminfo` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct MemSample {
    /// Sample time, seconds.
    pub t_s: f64,
    /// MemTotal.
    pub total_kb: u64,
    /// MemFree.
    pub free_kb: u64,
    /// Buffers.
    pub buffers_kb: u64,
    /// Cached.
    pub cached_kb: u64,
    /// SwapTotal - SwapFree.
    pub swap_used_kb: u64,
}

/// One process (one pid; a pid that execs keeps one entry).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Process {
    /// Process id.
    pub pid: u32,
    /// Parent process id as the kernel reported it.
    pub ppid: u32,
    /// `comm` (the last one seen).
    pub name: String,
    /// Command line from `cmdline2.log`, arguments joined by spaces.
    pub cmdline: Option<String>,
    /// Executable path from `cmdline2.log`.
    pub exe: Option<String>,
    /// Start time (from `starttime`, but never after the first sample that saw it), seconds.
    pub start_s: f64,
    /// When it was last seen running or exited, seconds.
    pub end_s: f64,
    /// Whether it was still alive in the last sample.
    pub alive_at_end: bool,
    /// Whether it is a kernel thread (a child of kthreadd, pid 2, or pid 2 itself).
    pub kernel_thread: bool,
    /// CPU time (user + system) it had used by its last sighting, seconds (for a process
    /// started before the recording, this includes its time before the first sample).
    pub cpu_s: f64,
    /// Time blocked on I/O, seconds (see `BootModel::blocked_source`).
    pub blocked_s: f64,
    /// Index of the parent in `BootModel::processes`, if the parent was seen.
    pub parent: Option<usize>,
    /// Depth in the tree (0 for roots).
    pub depth: u32,
    /// Whether it belongs to the user's desktop session: the session manager that marks
    /// `session_start` and its descendants (by parent pid).
    pub session: bool,
    /// Per-sample activity, in time order, one per block it was seen in. The first sample's
    /// CPU figure is 0 unless the process started within that sample's interval.
    pub samples: Vec<ProcSample>,
}

/// What one process did in one sample interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct ProcSample {
    /// Sample time (end of the interval), seconds.
    pub t_s: f64,
    /// CPU used in the interval as a fraction of one CPU (user + system).
    pub cpu: f64,
    /// State letter at the sample (R, S, D, Z, ...).
    pub state: char,
}

/// How time blocked on I/O was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum BlockedSource {
    /// From `delayacct_blkio_ticks` deltas (the kernel's delay accounting).
    #[default]
    DelayAcct,
    /// From samples in state D times the sample interval (delay accounting was off).
    DStateSamples,
}

impl Milestones {
    /// The login milestone boot done is counted from: text login, else graphical login.
    pub fn login(&self) -> Option<&Milestone> {
        self.text_login.as_ref().or(self.graphical_login.as_ref())
    }

    /// The desktop start time, `desktop_ready - session_start`, seconds, when both are known
    /// (the third boot time: from logging in to a desktop in use).
    pub fn desktop_start_s(&self) -> Option<f64> {
        Some(self.desktop_ready.as_ref()?.t_s - self.session_start.as_ref()?.t_s)
    }
}

impl BootModel {
    /// The process with this pid, if any (the first in tree order).
    pub fn process(&self, pid: u32) -> Option<&Process> {
        self.processes.iter().find(|p| p.pid == pid)
    }
}
