//! From a parsed log to the kernel's share of the boot: landmarks, phases, initcalls (paired
//! `calling`/`returned` lines, one thread per pid), driver probes, and the facts the findings
//! need (command line, memory size, initramfs unpack, usb-storage settle).

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;

use crate::dmesg::{BadLine, Caller, Line, Log};

/// A moment found in the log, with the line that shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mark {
    /// Kernel time in microseconds. For a console line without a timestamp, the time of the
    /// last timestamped line before it (a lower bound; `approximate` says so).
    pub us: u64,
    /// True when `us` was taken from an earlier line.
    pub approximate: bool,
    /// 1-based line number of the evidence.
    pub lineno: usize,
    /// The evidence line's message.
    pub text: String,
}

/// The boot landmarks. Each is the first line that shows it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Landmarks {
    /// `Trying to unpack rootfs image as initramfs...` (or `Unpacking initramfs...`).
    pub initramfs_unpack_start: Option<Mark>,
    /// `Freeing initrd memory: NK`: unpacking is over.
    pub initramfs_unpack_end: Option<Mark>,
    /// First `Freeing unused kernel ...`: the built-in initcalls are done.
    pub initcalls_done: Option<Mark>,
    /// `Run /init as init process` (or whichever program the kernel runs first).
    pub run_init: Option<Mark>,
    /// The program from `Run PROGRAM as init process`.
    pub run_init_program: Option<String>,
    /// The root file system mounted (`VFS: Mounted root` or the first filesystem mount line
    /// after the kernel ran its first program).
    pub root_mounted: Option<Mark>,
    /// The real init started: the first line from it or about it after the initramfs
    /// (`Not activating Mandatory Access Control ...`, `systemd[1]: ...`, `INIT: version`).
    pub real_init: Option<Mark>,
    /// The initramfs handing over to the real root: `systemd[1]: Switching root.` (a systemd
    /// initramfs: dracut, mkinitcpio's systemd hook), `dracut: Switching root`, bootprint's
    /// own `/init`, or, when systemd in the initramfs had handed its messages to journald
    /// (which keeps them out of the kernel log), the SIGTERM that PID 1 sends to every process
    /// just before it switches (`systemd-journald[N]: Received SIGTERM from PID 1`).
    pub switch_root: Option<Mark>,
    /// `systemd[1]: Running in initrd.`: systemd ran in the initramfs, so its lines until the
    /// switch root are the initramfs's, not the real init's.
    pub initrd_init: Option<Mark>,
}

/// The kernel's phases, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Phases {
    /// Kernel start to the first program it runs (`Run /init`): firmware and loader excluded.
    pub kernel_us: Option<u64>,
    /// In the initramfs: from its `/init` to the switch root (or, when the log shows no
    /// switch, to the real init).
    pub initramfs_us: Option<u64>,
    /// Kernel start to the real init.
    pub to_real_init_us: Option<u64>,
}

/// One initcall: a built-in or module init function, or (old kernels) an async function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Initcall {
    /// The function name without offset (`crypto_kdf108_init`).
    pub func: String,
    /// The symbol as printed (`crypto_kdf108_init+0x0/0x156`).
    pub symbol: String,
    /// The module for a module's init (`[e1000]`), `None` when built in.
    pub module: Option<String>,
    /// The pid of the thread that ran it (`@ PID`); 1 is `kernel_init`.
    pub pid: Option<u32>,
    /// The async cookie for `calling  12_fn @ pid` lines of old kernels.
    pub async_cookie: Option<u64>,
    /// The initcall level when the log says so (`entering initcall level: device`).
    pub level: Option<String>,
    /// Time of the `calling` line.
    pub start_us: Option<u64>,
    /// Time of the `returned` line.
    pub end_us: Option<u64>,
    /// The duration the kernel measured (`after N usecs`).
    pub duration_us: Option<u64>,
    /// The return value (`returned -19`): negative is an error, -19 no such device.
    pub ret: Option<i64>,
    /// Another initcall started on another thread while this one ran. The kernel keeps one
    /// start time for all threads (`initcall_calltime` in init/main.c), so its `after N usecs`
    /// then counts from the other one's start and is too small; the cost is taken from the
    /// timestamps instead.
    pub overlapped: bool,
    /// Line number of the `calling` line.
    pub call_line: Option<usize>,
    /// Line number of the `returned` line.
    pub return_line: Option<usize>,
}

impl Initcall {
    /// The cost: the kernel's own measure, unless another initcall started while this one
    /// ran (then the span between its two lines), or when the measure is missing.
    pub fn cost_us(&self) -> u64 {
        let span = || Some(self.end_us?.saturating_sub(self.start_us?));
        if self.overlapped {
            if let Some(s) = span() {
                return s;
            }
        }
        self.duration_us.or_else(span).unwrap_or(0)
    }

    /// Start on the timeline: the `calling` line, else the return time less the duration.
    pub fn timeline_start(&self) -> Option<u64> {
        self.start_us
            .or_else(|| Some(self.end_us?.saturating_sub(self.duration_us?)))
    }

    /// A name for people: `func [module]`.
    pub fn label(&self) -> String {
        match &self.module {
            Some(m) => format!("{} [{m}]", self.func),
            None => self.func.clone(),
        }
    }
}

/// One driver probe (`probe of DEVICE returned R after N usecs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    /// The device name.
    pub device: String,
    /// The return value as printed.
    pub ret: i64,
    /// Duration the kernel measured.
    pub duration_us: u64,
    /// Time of the line (the probe's end).
    pub end_us: u64,
    /// Line number.
    pub lineno: usize,
    /// Index in [`KernelBoot::initcalls`] of the initcall it ran inside, when known.
    pub initcall: Option<usize>,
    /// The thread, from the caller field or the enclosing initcall.
    pub pid: Option<u32>,
}

/// One thread that ran initcalls: a row of the timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Thread {
    /// The pid (`@ PID`).
    pub pid: u32,
    /// How many initcalls it ran.
    pub initcalls: usize,
    /// Sum of their durations.
    pub busy_us: u64,
    /// First start.
    pub first_us: u64,
    /// Last end.
    pub last_us: u64,
}

/// Line counts, so a report can say how much of the input it understood.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Lines with a kernel timestamp.
    pub kernel_lines: usize,
    /// Console lines without one (user space on a serial console).
    pub console_lines: usize,
    /// Lines that could not be read, by the line parser or the initcall parser.
    pub bad_lines: usize,
    /// `calling` lines with no `returned` line (still running when the log ends, or lost).
    pub unfinished_initcalls: usize,
    /// `returned` lines with no `calling` line (the log starts late, or the line was lost).
    pub unpaired_returns: usize,
    /// Kernel lines that were mended from two physical lines split by console output.
    pub mended_lines: usize,
    /// Bytes of timestamped kernel text up to the first program (what a console printed).
    pub kernel_bytes_to_init: usize,
    /// Of those, the bytes of `initcall_debug` output (`calling`, `initcall`, `probe of`),
    /// which the kernel prints at the debug level (7).
    pub initcall_debug_bytes_to_init: usize,
    /// The other bytes by syslog level 0-7; a line without a level counts as info (6), the
    /// level of most boot messages.
    pub bytes_to_init_by_level: [usize; 8],
}

/// A silence in the log: no kernel line for a while.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// Its length in microseconds.
    pub us: u64,
    /// The last line before it.
    pub before: Mark,
    /// The first line after it.
    pub after: Mark,
}

/// Deferred struct page initialisation on one memory node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeferredPages {
    /// The node.
    pub node: u32,
    /// How long it took, in milliseconds.
    pub ms: u64,
    /// The line.
    pub mark: Mark,
}

/// usb-storage waiting before it scans a device (`delay_use`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UsbStorageWait {
    /// `usb-storage ...: USB Mass Storage device detected`.
    pub detected: Mark,
    /// The first SCSI disk line after it (`Direct-Access`), when present.
    pub attached: Option<Mark>,
}

/// Everything the log says about the kernel's share of the boot.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KernelBoot {
    /// The kernel command line, when the log holds it.
    pub cmdline: Option<String>,
    /// The line it was read from.
    pub cmdline_lineno: Option<usize>,
    /// The `Linux version ...` line's text.
    pub version: Option<String>,
    /// Total memory in KiB from `Memory: A/TK available`.
    pub memory_kib: Option<u64>,
    /// `node N deferred pages initialised in Mms` lines.
    pub deferred_pages: Vec<DeferredPages>,
    /// `mem auto-init: stack:..., heap alloc:on|off, heap free:on|off`: whether the kernel
    /// zeroes pages when it allocates or frees them (init_on_alloc / init_on_free, from the
    /// command line or the kernel's defaults).
    pub mem_auto_init: Option<Mark>,
    /// `early_memtest: # of tests: N`: memtest= ran before the kernel set up its memory.
    pub memtest: Option<Mark>,
    /// Size of the initramfs in KiB from `Freeing initrd memory: NK`.
    pub initramfs_kib: Option<u64>,
    /// The landmarks.
    pub landmarks: Landmarks,
    /// Which init ran in the initramfs, when the log says (`systemd 259-1-arch`, `dracut
    /// without systemd`, `bootprint initramfs`).
    pub initramfs_init: Option<String>,
    /// The phases.
    pub phases: Phases,
    /// The initcalls in the order their first line appears.
    pub initcalls: Vec<Initcall>,
    /// The driver probes.
    pub probes: Vec<Probe>,
    /// Rows of the timeline: threads that ran initcalls, pid 1 first, then by first start.
    pub threads: Vec<Thread>,
    /// usb-storage detections.
    pub usb_storage: Vec<UsbStorageWait>,
    /// Lines about the floppy driver (`Floppy drive(s):`, `FDC 0 is`, `no floppy controllers`).
    pub floppy_lines: Vec<Mark>,
    /// `alg: self-tests for ... passed` lines.
    pub selftest_lines: Vec<Mark>,
    /// The longest silences before the first program (at least 200 ms, longest first, five at
    /// most): (line before, line after). Without `initcall_debug` these show where time went.
    pub gaps: Vec<Gap>,
    /// A line saying the kernel runs in a virtual machine (`Hypervisor detected`, `DMI: QEMU`).
    pub virtual_machine: Option<Mark>,
    /// The last kernel timestamp in the log.
    pub last_us: u64,
    /// Line counts.
    pub counts: Counts,
    /// Lines that could not be read, with the reason (the first 50).
    pub bad: Vec<BadLine>,
}

impl KernelBoot {
    /// The time shares are measured against: kernel start to the real init, else to the
    /// first program, else to the last line.
    pub fn basis_us(&self) -> u64 {
        self.phases
            .to_real_init_us
            .or(self.phases.kernel_us)
            .unwrap_or(self.last_us)
    }

    /// Whether the log had `initcall_debug` output.
    pub fn has_initcalls(&self) -> bool {
        !self.initcalls.is_empty()
    }

    /// Indices of initcalls, slowest first (ties by log order, so output is stable).
    pub fn slowest(&self) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.initcalls.len()).collect();
        idx.sort_by_key(|&i| (std::cmp::Reverse(self.initcalls[i].cost_us()), i));
        idx
    }

    /// Whether an initcall started within the basis ([`KernelBoot::basis_us`]). Module
    /// inits that udev or modprobe ran after the real init started are not part of the
    /// kernel's time to init, so they are not measured against it.
    pub fn within_basis(&self, ic: &Initcall) -> bool {
        if self.phases.kernel_us.is_none() {
            return true;
        }
        ic.timeline_start().is_none_or(|s| s < self.basis_us())
    }

    /// Per module: (module, summed init duration, initcall count), slowest first.
    pub fn modules(&self) -> Vec<(String, u64, usize)> {
        self.modules_where(|_| true)
    }

    /// [`KernelBoot::modules`] over the initcalls `keep` selects.
    pub fn modules_where(&self, keep: impl Fn(&Initcall) -> bool) -> Vec<(String, u64, usize)> {
        let mut by: HashMap<&str, (u64, usize)> = HashMap::new();
        for ic in self.initcalls.iter().filter(|i| keep(i)) {
            if let Some(m) = &ic.module {
                let e = by.entry(m).or_default();
                e.0 = e.0.saturating_add(ic.cost_us());
                e.1 += 1;
            }
        }
        let mut v: Vec<(String, u64, usize)> = by
            .into_iter()
            .map(|(m, (d, n))| (m.to_string(), d, n))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }

    /// The `key=value` or `key` words of the command line.
    pub fn cmdline_has(&self, key: &str) -> Option<&str> {
        let c = self.cmdline.as_deref()?;
        c.split_whitespace().find(|w| {
            *w == key
                || w.strip_prefix(key)
                    .is_some_and(|rest| rest.starts_with('='))
        })
    }
}

/// Analyses a parsed log. Never fails; what it cannot read is counted.
pub fn analyze(log: &Log) -> KernelBoot {
    let mut scan = Scan::new(log);
    let mut lines = log.lines.iter().enumerate();
    while let Some((i, line)) = lines.next() {
        let Some(ts) = line.ts_us else {
            scan.kb.counts.console_lines += 1;
            console_landmark(&mut scan.kb, line, scan.last_ts);
            continue;
        };
        // A kernel line cut by console output: its rest is the next, untimed, line.
        let text = match mended(line, log.lines.get(i + 1)) {
            Some(joined) => {
                lines.next();
                scan.kb.counts.mended_lines += 1;
                Cow::Owned(joined)
            }
            None => Cow::Borrowed(line.text.as_str()),
        };
        scan.kernel_line(line, ts, &text);
    }
    scan.finish()
}

/// The state of one pass over the log.
struct Scan {
    kb: KernelBoot,
    /// Initcalls called and not yet returned, by (symbol, module): indices into
    /// `kb.initcalls`, the latest last.
    open: HashMap<(String, Option<String>), Vec<usize>>,
    /// The initcall level pid 1 is in (`entering initcall level: `).
    level: Option<String>,
    /// The latest kernel time so far.
    last_ts: u64,
    /// The latest kernel line before the first program, for the gaps.
    prev: Option<Mark>,
    /// The version in the latest systemd banner (`systemd 259-1-arch`), to name the init that
    /// ran in the initramfs.
    banner: Option<String>,
}

impl Scan {
    fn new(log: &Log) -> Scan {
        let mut kb = KernelBoot {
            bad: log.bad.iter().take(50).cloned().collect(),
            ..Default::default()
        };
        kb.counts.bad_lines = log.bad.len();
        Scan {
            kb,
            open: HashMap::new(),
            level: None,
            last_ts: 0,
            prev: None,
            banner: None,
        }
    }

    /// One kernel line (`text`: mended when it was cut), timestamped `ts`.
    fn kernel_line(&mut self, line: &Line, ts: u64, text: &str) {
        self.kb.counts.kernel_lines += 1;
        self.last_ts = self.last_ts.max(ts);
        if self.kb.landmarks.run_init.is_none() {
            self.before_first_program(line, ts, text);
        }
        if let Some(rest) = text.strip_prefix("calling ") {
            self.calling(line, ts, rest);
        } else if let Some(rest) = text.strip_prefix("initcall ") {
            self.returned(line, ts, rest);
        } else if let Some(rest) = text.strip_prefix("probe of ") {
            self.probe(line, ts, rest);
        } else if let Some(name) = text.strip_prefix("entering initcall level: ") {
            self.level = Some(name.trim().to_string());
        } else if !self.initramfs_systemd(text, || mark(line, ts, text)) {
            kernel_landmark(&mut self.kb, text, mark(line, ts, text));
        }
    }

    /// systemd in the initramfs (`Running in initrd`): its lines until the switch root are
    /// the initramfs's; the real init is the systemd that starts after it. True when the line
    /// was taken here.
    fn initramfs_systemd(&mut self, text: &str, mark: impl Fn() -> Mark) -> bool {
        let lm = &mut self.kb.landmarks;
        if lm.run_init.is_none() {
            return false;
        }
        let banner = systemd_banner(text);
        if banner.is_some() {
            self.banner = banner.clone();
        }
        if text.starts_with("systemd[1]: Running in initrd")
            || text.starts_with("systemd[1]: Running in initial RAM disk")
        {
            if lm.initrd_init.is_none() && lm.switch_root.is_none() {
                lm.initrd_init = Some(mark());
                // The systemd line taken for the real init so far was the initramfs's.
                lm.real_init = None;
                self.kb.initramfs_init =
                    Some(self.banner.clone().unwrap_or_else(|| "systemd".into()));
            }
            return true;
        }
        if lm.initrd_init.is_none() || lm.switch_root.is_some() || lm.real_init.is_some() {
            return false;
        }
        if text.starts_with("systemd[1]: Switching root")
            || (text.starts_with("systemd-journald[")
                && text.contains("Received SIGTERM from PID 1"))
        {
            lm.switch_root = Some(mark());
            return true;
        }
        if banner.is_some() {
            // A new systemd started with no switch line before it: the real one.
            lm.real_init = Some(mark());
            return true;
        }
        // Any other line from the initramfs's systemd is not the real init.
        text.starts_with("systemd[1]: ")
    }

    /// Until the kernel runs its first program: what the console printed (bytes by kind
    /// and level), and the silences between lines.
    fn before_first_program(&mut self, line: &Line, ts: u64, text: &str) {
        let counts = &mut self.kb.counts;
        // `[    7.339389] ` and the newline.
        let n = text.len() + 16;
        counts.kernel_bytes_to_init += n;
        if text.starts_with("calling ")
            || text.starts_with("initcall ")
            || text.starts_with("probe of ")
        {
            counts.initcall_debug_bytes_to_init += n;
        } else {
            counts.bytes_to_init_by_level[usize::from(line.level.unwrap_or(6).min(7))] += n;
        }
        if let Some(p) = self
            .prev
            .as_ref()
            .filter(|p| ts >= p.us.saturating_add(200_000))
        {
            self.kb.gaps.push(Gap {
                us: ts - p.us,
                before: p.clone(),
                after: mark(line, ts, text),
            });
        }
        // A secondary CPU's early lines can go back in time; keep the latest.
        match &self.prev {
            Some(p) if ts < p.us => {}
            _ => self.prev = Some(mark(line, ts, text)),
        }
    }

    /// `calling  FUNC+0xOFF/0xLEN [MODULE] @ PID`: an initcall begins.
    fn calling(&mut self, line: &Line, ts: u64, rest: &str) {
        let Some((symbol, module, pid)) = parse_calling(rest) else {
            bad(
                &mut self.kb,
                line,
                "expected `calling  FUNC+0xOFF/0xLEN [MODULE] @ PID`",
            );
            return;
        };
        let (func, cookie) = split_symbol(&symbol);
        let idx = self.kb.initcalls.len();
        self.open
            .entry((symbol.clone(), module.clone()))
            .or_default()
            .push(idx);
        self.kb.initcalls.push(Initcall {
            func,
            symbol,
            module,
            pid: Some(pid),
            async_cookie: cookie,
            level: if pid == 1 { self.level.clone() } else { None },
            start_us: Some(ts),
            end_us: None,
            duration_us: None,
            ret: None,
            overlapped: false,
            call_line: Some(line.lineno),
            return_line: None,
        });
    }

    /// `initcall FUNC+0xOFF/0xLEN [MODULE] returned R after N usecs`: the latest open call
    /// of it ends; with none open (the log starts late, a line was lost), it stands alone.
    fn returned(&mut self, line: &Line, ts: u64, rest: &str) {
        if rest.ends_with("blacklisted") {
            return;
        }
        let Some((symbol, module, ret, dur)) = parse_returned(rest) else {
            bad(
                &mut self.kb,
                line,
                "expected `initcall FUNC+0xOFF/0xLEN [MODULE] returned R after N usecs`",
            );
            return;
        };
        let key = (symbol.clone(), module.clone());
        if let Some(idx) = self.open.get_mut(&key).and_then(|v| v.pop()) {
            let ic = &mut self.kb.initcalls[idx];
            ic.end_us = Some(ts);
            ic.duration_us = Some(dur);
            ic.ret = ret;
            ic.return_line = Some(line.lineno);
            return;
        }
        self.kb.counts.unpaired_returns += 1;
        let (func, cookie) = split_symbol(&symbol);
        self.kb.initcalls.push(Initcall {
            func,
            symbol,
            module,
            pid: thread_of(line),
            async_cookie: cookie,
            level: None,
            start_us: None,
            end_us: Some(ts),
            duration_us: Some(dur),
            ret,
            overlapped: false,
            call_line: None,
            return_line: Some(line.lineno),
        });
    }

    /// `probe of DEVICE returned R after N usecs`, in the initcall open on its thread.
    fn probe(&mut self, line: &Line, ts: u64, rest: &str) {
        let Some((device, ret, dur)) = parse_probe(rest) else {
            bad(
                &mut self.kb,
                line,
                "expected `probe of DEVICE returned R after N usecs`",
            );
            return;
        };
        let caller_pid = thread_of(line);
        let initcall = enclosing(&self.kb.initcalls, &self.open, caller_pid);
        let pid = caller_pid.or_else(|| initcall.and_then(|i| self.kb.initcalls[i].pid));
        self.kb.probes.push(Probe {
            device,
            ret,
            duration_us: dur,
            end_us: ts,
            lineno: line.lineno,
            initcall,
            pid,
        });
    }

    /// What needs the whole log: the longest gaps, the phases, overlapping initcalls and
    /// the threads that ran them.
    fn finish(self) -> KernelBoot {
        let mut kb = self.kb;
        kb.gaps
            .sort_by_key(|g| (std::cmp::Reverse(g.us), g.before.lineno));
        kb.gaps.truncate(5);
        kb.counts.unfinished_initcalls = kb.initcalls.iter().filter(|i| i.end_us.is_none()).count();
        kb.last_us = self.last_ts;
        kb.phases = phases(&kb.landmarks);
        mark_overlaps(&mut kb.initcalls);
        kb.threads = threads(&kb.initcalls, self.last_ts);
        kb
    }
}

/// `line` joined with `next` when it is a kernel line cut by console output and `next`, an
/// untimed line, completes it.
fn mended(line: &Line, next: Option<&Line>) -> Option<String> {
    if !needs_mending(&line.text) {
        return None;
    }
    let next = next.filter(|n| n.ts_us.is_none())?;
    let joined = format!("{}{}", line.text, next.text);
    (!needs_mending(&joined)).then_some(joined)
}

/// The evidence of a kernel line, at `ts`.
fn mark(line: &Line, ts: u64, text: &str) -> Mark {
    Mark {
        us: ts,
        approximate: false,
        lineno: line.lineno,
        text: text.to_string(),
    }
}

/// The thread a line names as its caller (`[    T1]`), if any.
fn thread_of(line: &Line) -> Option<u32> {
    match line.caller {
        Some(Caller::Thread(p)) => Some(p),
        _ => None,
    }
}

fn bad(kb: &mut KernelBoot, line: &Line, reason: &str) {
    kb.counts.bad_lines += 1;
    if kb.bad.len() < 50 {
        kb.bad.push(BadLine {
            lineno: line.lineno,
            reason: reason.to_string(),
            text: line.text.chars().take(200).collect(),
        });
    }
}

/// True for an initcall or probe line that stops before its end.
fn needs_mending(text: &str) -> bool {
    if let Some(rest) = text.strip_prefix("calling ") {
        return parse_calling(rest).is_none();
    }
    if let Some(rest) = text.strip_prefix("initcall ") {
        return !rest.ends_with("blacklisted") && parse_returned(rest).is_none();
    }
    if let Some(rest) = text.strip_prefix("probe of ") {
        return parse_probe(rest).is_none();
    }
    false
}

/// `SYMBOL [MODULE]` into its parts.
fn split_module(s: &str) -> Option<(String, Option<String>)> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    match s.split_once(' ') {
        None => Some((s.to_string(), None)),
        Some((sym, rest)) => {
            let m = rest.trim().strip_prefix('[')?.strip_suffix(']')?;
            if m.is_empty() || m.contains(' ') {
                return None;
            }
            Some((sym.to_string(), Some(m.to_string())))
        }
    }
}

/// `func+0x0/0x10` into `func`; `12_func+0x0/0x10` (async) into `func` and cookie 12.
fn split_symbol(symbol: &str) -> (String, Option<u64>) {
    let base = symbol.split('+').next().unwrap_or(symbol);
    if let Some((n, f)) = base.split_once('_') {
        if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !f.is_empty() {
            return (f.to_string(), n.parse().ok());
        }
    }
    (base.to_string(), None)
}

/// After `calling `: ` FUNC+0x0/0x10 [MOD] @ PID`.
fn parse_calling(rest: &str) -> Option<(String, Option<String>, u32)> {
    let (left, pid) = rest.rsplit_once(" @ ")?;
    let pid: u32 = pid.trim().parse().ok()?;
    let (sym, module) = split_module(left)?;
    Some((sym, module, pid))
}

/// After `initcall `: `FUNC+0x0/0x10 [MOD] returned R after N usecs` (R absent for async).
fn parse_returned(rest: &str) -> Option<(String, Option<String>, Option<i64>, u64)> {
    let (left, right) = rest.split_once(" returned ")?;
    let (sym, module) = split_module(left)?;
    let (ret, after) = match right.split_once("after ") {
        Some((r, a)) if r.trim().is_empty() => (None, a),
        Some((r, a)) => (Some(r.trim().parse().ok()?), a),
        None => return None,
    };
    Some((sym, module, ret, parse_duration(after)?))
}

/// `N usecs` (or `N msecs`, old kernels) into microseconds.
fn parse_duration(s: &str) -> Option<u64> {
    let (n, unit) = s.trim().split_once(' ')?;
    let n: u64 = n.parse().ok()?;
    match unit.trim() {
        "usecs" | "usec" | "us" => Some(n),
        "msecs" | "msec" | "ms" => n.checked_mul(1000),
        _ => None,
    }
}

/// After `probe of `: `DEVICE returned R after N usecs`.
fn parse_probe(rest: &str) -> Option<(String, i64, u64)> {
    let (device, right) = rest.rsplit_once(" returned ")?;
    let (r, after) = right.split_once(" after ")?;
    Some((
        device.trim().to_string(),
        r.trim().parse().ok()?,
        parse_duration(after)?,
    ))
}

/// The initcall a probe ran inside: the open one on the caller's thread, or the only open one.
fn enclosing(
    initcalls: &[Initcall],
    open: &HashMap<(String, Option<String>), Vec<usize>>,
    pid: Option<u32>,
) -> Option<usize> {
    let mut candidates: Vec<usize> = open.values().flatten().copied().collect();
    if let Some(p) = pid {
        candidates.retain(|&i| initcalls[i].pid == Some(p));
    }
    candidates.sort_unstable();
    match candidates.as_slice() {
        [only] => Some(*only),
        _ => None,
    }
}

fn kernel_landmark(kb: &mut KernelBoot, text: &str, mark: Mark) {
    let lm = &mut kb.landmarks;
    if let Some(c) = text
        .strip_prefix("Kernel command line: ")
        .or_else(|| text.strip_prefix("Command line: "))
    {
        // The `Kernel command line:` form is the one the kernel parses; prefer it.
        if kb.cmdline.is_none() || text.starts_with("Kernel") {
            kb.cmdline = Some(c.trim().to_string());
            kb.cmdline_lineno = Some(mark.lineno);
        }
    } else if text.starts_with("Linux version ") {
        kb.version.get_or_insert_with(|| text.to_string());
    } else if let Some(rest) = text.strip_prefix("Memory: ") {
        // `Memory: 260860K/1048044K available (...)`
        let total = rest
            .split_whitespace()
            .next()
            .and_then(|w| w.split_once('/'))
            .and_then(|(_, t)| t.strip_suffix('K')?.parse().ok());
        if kb.memory_kib.is_none() {
            kb.memory_kib = total;
        }
    } else if text.contains("deferred pages initialised in ") {
        let node = text
            .strip_prefix("node ")
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok());
        let ms = text
            .rsplit_once(" in ")
            .and_then(|(_, r)| r.trim().strip_suffix("ms")?.parse().ok());
        if let (Some(n), Some(ms)) = (node, ms) {
            kb.deferred_pages.push(DeferredPages { node: n, ms, mark });
        }
    } else if text.starts_with("mem auto-init: ") {
        kb.mem_auto_init.get_or_insert(mark);
    } else if text.starts_with("early_memtest: ") {
        kb.memtest.get_or_insert(mark);
    } else if text.starts_with("Trying to unpack rootfs image as initramfs")
        || text.starts_with("Unpacking initramfs")
    {
        lm.initramfs_unpack_start.get_or_insert(mark);
    } else if let Some(rest) = text.strip_prefix("Freeing initrd memory: ") {
        if lm.initramfs_unpack_end.is_none() {
            kb.initramfs_kib = rest.trim().strip_suffix('K').and_then(|n| n.parse().ok());
            lm.initramfs_unpack_end = Some(mark);
        }
    } else if text.starts_with("Freeing unused kernel") {
        lm.initcalls_done.get_or_insert(mark);
    } else if let Some(rest) = text.strip_prefix("Run ") {
        if let Some(prog) = rest.strip_suffix(" as init process") {
            if lm.run_init.is_none() {
                lm.run_init_program = Some(prog.to_string());
                lm.run_init = Some(mark);
            }
        }
    } else if lm.root_mounted.is_none()
        && (text.starts_with("VFS: Mounted root") || (lm.run_init.is_some() && is_root_mount(text)))
    {
        // The kernel mounts the root itself (`VFS: Mounted root`), or the initramfs does:
        // then the first file system mounted after it started is taken as the root.
        lm.root_mounted = Some(mark);
    } else if lm.run_init.is_some()
        && lm.real_init.is_none()
        && text.starts_with("bootprint initramfs: root ")
        && text.contains(", running ")
    {
        // bootprint's own /init (docs/initramfs.md) says this just before it switches root
        // and execs the real init: the hand-over, which a sysvinit real init would not log.
        lm.switch_root = Some(mark.clone());
        lm.real_init = Some(mark);
        kb.initramfs_init = Some("bootprint initramfs".into());
    } else if lm.run_init.is_some()
        && lm.switch_root.is_none()
        && text.starts_with("systemd[1]: Switching root")
    {
        lm.switch_root = Some(mark);
        // The systemd seen so far ran in the initramfs; the real one comes next.
        lm.real_init = None;
        kb.initramfs_init.get_or_insert_with(|| "systemd".into());
    } else if lm.run_init.is_some()
        && lm.switch_root.is_none()
        && text.starts_with("dracut: Switching root")
    {
        // dracut's shell /init (without systemd) says so before it execs the real init.
        lm.switch_root = Some(mark);
        kb.initramfs_init = Some("dracut without systemd".into());
    } else if lm.run_init.is_some()
        && lm.real_init.is_none()
        && (text.starts_with("Not activating Mandatory Access Control")
            || text.starts_with("systemd[1]: "))
    {
        lm.real_init = Some(mark);
    } else if text.contains("USB Mass Storage device detected") {
        kb.usb_storage.push(UsbStorageWait {
            detected: mark,
            attached: None,
        });
    } else if text.contains("Direct-Access") {
        if let Some(w) = kb
            .usb_storage
            .iter_mut()
            .rev()
            .find(|w| w.attached.is_none())
        {
            w.attached = Some(mark);
        }
    } else if text.starts_with("Floppy drive(s):")
        || text.starts_with("FDC ")
        || text.contains("no floppy controllers found")
    {
        kb.floppy_lines.push(mark);
    } else if text.starts_with("alg: self-tests for ") {
        kb.selftest_lines.push(mark);
    } else if kb.virtual_machine.is_none()
        && (text.starts_with("Hypervisor detected")
            || (text.starts_with("DMI: ")
                && ["QEMU", "VMware", "VirtualBox", "KVM", "Bochs", "Xen"]
                    .iter()
                    .any(|v| text.contains(v))))
    {
        kb.virtual_machine = Some(mark);
    }
}

/// `systemd[1]: systemd 259-1-arch running in system mode (...)` into `systemd 259-1-arch`.
fn systemd_banner(text: &str) -> Option<String> {
    let rest = text.strip_prefix("systemd[1]: systemd ")?;
    let (version, _) = rest.split_once(" running in system mode")?;
    Some(format!("systemd {}", version.trim()))
}

fn is_root_mount(text: &str) -> bool {
    text.contains("mounted filesystem")
        || text.contains("Ending clean mount")
        || text.starts_with("VFS: Mounted root")
        || (text.starts_with("BTRFS info") && text.contains("enabling"))
}

/// Console lines carry no time: take the last kernel time before them, marked approximate.
fn console_landmark(kb: &mut KernelBoot, line: &Line, last_ts: u64) {
    let lm = &mut kb.landmarks;
    let in_initrd_systemd = lm.initrd_init.is_some() && lm.switch_root.is_none();
    if lm.run_init.is_some()
        && lm.real_init.is_none()
        && !in_initrd_systemd
        && (line.text.starts_with("INIT: version") || line.text.starts_with("systemd[1]: "))
    {
        lm.real_init = Some(Mark {
            us: last_ts,
            approximate: true,
            lineno: line.lineno,
            text: line.text.clone(),
        });
    }
}

fn phases(lm: &Landmarks) -> Phases {
    let run = lm.run_init.as_ref().map(|m| m.us);
    let real = lm.real_init.as_ref().map(|m| m.us);
    // Without an initramfs the kernel's first program is the real init.
    let direct = lm
        .run_init_program
        .as_deref()
        .is_some_and(|p| p != "/init" && lm.initramfs_unpack_start.is_none());
    if direct {
        return Phases {
            kernel_us: run,
            initramfs_us: None,
            to_real_init_us: run,
        };
    }
    // The initramfs ends where it hands over; the real init starts a little later (systemd
    // re-executes itself from the real root).
    let end = lm.switch_root.as_ref().map(|m| m.us).or(real);
    Phases {
        kernel_us: run,
        initramfs_us: match (run, end) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        },
        to_real_init_us: real,
    }
}

/// Flags initcalls during which another thread's initcall started (see
/// [`Initcall::overlapped`]).
fn mark_overlaps(initcalls: &mut [Initcall]) {
    let mut starts: Vec<(u64, Option<u32>)> = initcalls
        .iter()
        .filter_map(|i| Some((i.start_us?, i.pid)))
        .collect();
    starts.sort_unstable();
    for ic in initcalls.iter_mut() {
        let (Some(s), Some(e)) = (ic.start_us, ic.end_us) else {
            continue;
        };
        let from = starts.partition_point(|&(t, _)| t <= s);
        ic.overlapped = starts[from..]
            .iter()
            .take_while(|&&(t, _)| t < e)
            .any(|&(_, p)| p != ic.pid);
    }
}

fn threads(initcalls: &[Initcall], last_us: u64) -> Vec<Thread> {
    let mut by: HashMap<u32, Thread> = HashMap::new();
    for ic in initcalls {
        let (Some(pid), Some(start)) = (ic.pid, ic.timeline_start()) else {
            continue;
        };
        let end = ic.end_us.unwrap_or(last_us);
        let t = by.entry(pid).or_insert(Thread {
            pid,
            initcalls: 0,
            busy_us: 0,
            first_us: start,
            last_us: end,
        });
        t.initcalls += 1;
        t.busy_us = t.busy_us.saturating_add(ic.cost_us());
        t.first_us = t.first_us.min(start);
        t.last_us = t.last_us.max(end);
    }
    let mut v: Vec<Thread> = by.into_values().collect();
    v.sort_by_key(|t| (t.pid != 1, t.first_us, t.pid));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dmesg::parse;

    fn run(s: &str) -> KernelBoot {
        analyze(&parse(s))
    }

    #[test]
    fn pairs_interleaved_initcalls_by_symbol_and_module() {
        let kb = run("\
[    8.991277] calling  floppy_module_init+0x0/0xed9 [floppy] @ 118
[    8.994349] calling  piix4_driver_init+0x0/0x1000 [i2c_piix4] @ 119
[    9.006080] probe of 0000:00:01.3 returned 0 after 11290 usecs
[    9.006652] initcall piix4_driver_init+0x0/0x1000 [i2c_piix4] returned 0 after 12024 usecs
[    9.124901] initcall floppy_module_init+0x0/0xed9 [floppy] returned 0 after 5183 usecs
");
        assert_eq!(kb.initcalls.len(), 2);
        let f = &kb.initcalls[0];
        assert_eq!(f.func, "floppy_module_init");
        assert_eq!(f.module.as_deref(), Some("floppy"));
        assert_eq!(f.pid, Some(118));
        assert_eq!(f.duration_us, Some(5183));
        assert_eq!(f.start_us, Some(8_991_277));
        assert_eq!(f.end_us, Some(9_124_901));
        assert_eq!(kb.initcalls[1].ret, Some(0));
        // Two initcalls were open when the probe line came: without a caller field it is
        // not guessed.
        assert_eq!(kb.probes[0].initcall, None);
        assert_eq!(kb.threads.len(), 2);
        assert_eq!(kb.counts.unfinished_initcalls, 0);
    }

    #[test]
    fn probe_attributed_by_caller_field() {
        let kb = run("\
[    9.0][  T118] calling  a_init+0x0/0x1 [a] @ 118
[    9.1][  T119] calling  b_init+0x0/0x1 [b] @ 119
[    9.2][  T119] probe of dev0 returned 0 after 100000 usecs
[    9.3][  T119] initcall b_init+0x0/0x1 [b] returned 0 after 200000 usecs
");
        assert_eq!(kb.probes[0].initcall, Some(1));
        assert_eq!(kb.probes[0].pid, Some(119));
        assert_eq!(kb.counts.unfinished_initcalls, 1);
    }

    #[test]
    fn split_line_is_mended() {
        let kb = run("\
[    9.0] calling  floppy_module_init+0x0/0xed9 [flo
ppy] @ 118
[    9.1] initcall floppy_module_init+0x0/0xed9 [floppy] returned 0 af
ter 5183 usecs
");
        assert_eq!(kb.counts.mended_lines, 2);
        assert_eq!(kb.counts.bad_lines, 0);
        assert_eq!(kb.initcalls.len(), 1);
        assert_eq!(kb.initcalls[0].duration_us, Some(5183));
        assert_eq!(kb.counts.console_lines, 0);
    }

    #[test]
    fn a_cut_line_is_mended_only_by_an_untimed_line_that_completes_it() {
        let log = parse(
            "\
[    9.0] calling  floppy_module_init+0x0/0xed9 [flo
[    9.1] ppy] @ 118
[    9.2] calling  floppy_module_init+0x0/0xed9 [flo
eth0: link up
",
        );
        let l = &log.lines;
        assert_eq!(mended(&l[0], Some(&l[1])), None, "the next line has a time");
        assert_eq!(mended(&l[2], Some(&l[3])), None, "it does not complete it");
        assert_eq!(mended(&l[2], None), None);
        let rest = Line {
            text: "ppy] @ 118".into(),
            ts_us: None,
            ..l[3].clone()
        };
        assert_eq!(
            mended(&l[2], Some(&rest)).as_deref(),
            Some("calling  floppy_module_init+0x0/0xed9 [floppy] @ 118")
        );
        let kb = analyze(&log);
        assert_eq!(kb.counts.mended_lines, 0);
        assert_eq!(kb.counts.console_lines, 1);
    }

    #[test]
    fn bytes_and_silences_are_counted_until_the_first_program() {
        let kb = run("\
<6>[    0.100000] Linux version 6.1.0
<7>[    0.200000] calling  a_init+0x0/0x1 @ 1
<4>[    0.900000] slow thing
<6>[    1.000000] Run /init as init process
<6>[    3.000000] after init
");
        // `[    0.100000] ` and the newline around each text: 16 bytes.
        let n = |text: &str| text.len() + 16;
        assert_eq!(
            kb.counts.initcall_debug_bytes_to_init,
            n("calling  a_init+0x0/0x1 @ 1")
        );
        assert_eq!(kb.counts.bytes_to_init_by_level[4], n("slow thing"));
        assert_eq!(
            kb.counts.bytes_to_init_by_level[6],
            n("Linux version 6.1.0") + n("Run /init as init process")
        );
        // The silence after the first program is not the kernel's.
        let gaps: Vec<(u64, usize, usize)> = kb
            .gaps
            .iter()
            .map(|g| (g.us, g.before.lineno, g.after.lineno))
            .collect();
        assert_eq!(gaps, vec![(700_000, 2, 3)]);
    }

    #[test]
    fn broken_initcall_lines_counted() {
        let kb = run("\
[    1.0] calling  foo+0x0/0x1 @ x
[    1.1] initcall foo+0x0/0x1 returned 0 after many usecs
[    1.2] initcall bar blacklisted
[    1.3] probe of x returned
");
        assert_eq!(kb.counts.bad_lines, 3);
        assert!(kb.bad[0].reason.contains("@ PID"));
        assert_eq!(kb.bad[1].lineno, 2);
        assert!(kb.initcalls.is_empty());
    }

    #[test]
    fn async_and_level_and_unpaired() {
        let kb = run("\
[    0.5] entering initcall level: device
[    0.6] calling  12_async_port_probe+0x0/0x10 @ 7
[    0.7] calling  x_init+0x0/0x1 @ 1
[    0.8] initcall 12_async_port_probe+0x0/0x10 returned after 150 msecs
[    0.9] initcall gone_init+0x0/0x1 returned -19 after 5 usecs
");
        let a = &kb.initcalls[0];
        assert_eq!(a.func, "async_port_probe");
        assert_eq!(a.async_cookie, Some(12));
        assert_eq!(a.duration_us, Some(150_000));
        assert_eq!(a.ret, None);
        assert_eq!(a.level, None);
        assert_eq!(kb.initcalls[1].level.as_deref(), Some("device"));
        assert_eq!(kb.counts.unpaired_returns, 1);
        assert_eq!(kb.initcalls[2].ret, Some(-19));
        assert_eq!(kb.initcalls[2].timeline_start(), Some(899_995));
        assert_eq!(kb.counts.unfinished_initcalls, 1);
    }

    #[test]
    fn landmarks_and_phases_with_initramfs() {
        let kb = run("\
[    0.000000] Kernel command line: console=ttyS0 root=/dev/vda quiet
[    0.132702] Memory: 260860K/1048044K available (14343K kernel code)
[    1.926535] Trying to unpack rootfs image as initramfs...
[    8.493000] Freeing initrd memory: 34612K
[   10.431845] Freeing unused kernel image (initmem) memory: 2820K
[   10.659736] Run /init as init process
[   16.708479] EXT4-fs (vda): mounted filesystem with ordered data mode. Quota mode: none.
[   17.676281] Not activating Mandatory Access Control as /sbin/tomoyo-init does not exist.
");
        assert_eq!(kb.memory_kib, Some(1_048_044));
        assert_eq!(kb.initramfs_kib, Some(34612));
        assert_eq!(kb.phases.kernel_us, Some(10_659_736));
        assert_eq!(kb.phases.initramfs_us, Some(17_676_281 - 10_659_736));
        assert_eq!(kb.phases.to_real_init_us, Some(17_676_281));
        assert_eq!(kb.landmarks.root_mounted.as_ref().unwrap().us, 16_708_479);
        assert_eq!(kb.landmarks.initcalls_done.as_ref().unwrap().lineno, 5);
        assert!(kb.cmdline_has("quiet").is_some());
        assert!(kb.cmdline_has("console").is_some());
        assert!(kb.cmdline_has("quie").is_none());
    }

    #[test]
    fn no_initramfs_means_no_initramfs_phase() {
        let kb = run("\
[    1.2] VFS: Mounted root (ext4 filesystem) on device 254:0.
[    1.5] Run /sbin/init as init process
");
        assert_eq!(kb.phases.kernel_us, Some(1_500_000));
        assert_eq!(kb.phases.initramfs_us, None);
        assert_eq!(kb.phases.to_real_init_us, Some(1_500_000));
        assert_eq!(kb.landmarks.root_mounted.as_ref().unwrap().us, 1_200_000);
    }

    #[test]
    fn systemd_initramfs_switching_root() {
        let kb = run("\
[    1.0] Run /init as init process
[    1.2] systemd[1]: systemd 252 running in system mode (+PAM)
[    1.3] systemd[1]: Detected virtualization kvm.
[    3.0] EXT4-fs (vda): mounted filesystem with ordered data mode.
[    3.5] systemd[1]: Switching root.
[    3.9] systemd[1]: systemd 252 running in system mode (+PAM)
");
        assert_eq!(kb.landmarks.switch_root.as_ref().unwrap().us, 3_500_000);
        assert_eq!(kb.landmarks.real_init.as_ref().unwrap().lineno, 6);
        // The initramfs ends at the switch; the real init starts 0.4 s later.
        assert_eq!(kb.phases.initramfs_us, Some(2_500_000));
        assert_eq!(kb.phases.to_real_init_us, Some(3_900_000));
        assert_eq!(kb.initramfs_init.as_deref(), Some("systemd"));
        // Without the switch, the first systemd line is the real init (initramfs-tools).
        let kb = run("\
[    1.0] Run /init as init process
[    3.9] systemd[1]: systemd 252 running in system mode (+PAM)
");
        assert_eq!(kb.phases.to_real_init_us, Some(3_900_000));
    }

    #[test]
    fn systemd_in_initrd_without_a_switch_line() {
        // journald took systemd's messages: the switch shows as the SIGTERM PID 1 sends.
        let kb = run("\
[    1.0] Run /init as init process
[    1.1] systemd[1]: Successfully made /usr/ read-only.
[    1.2] systemd[1]: systemd 257.9 running in system mode (+PAM)
[    1.3] systemd[1]: Running in initrd.
[    1.4] systemd[1]: Reached target Path Units.
[    6.0] systemd-journald[186]: Received SIGTERM from PID 1 (systemd).
[    6.4] systemd[1]: systemd 257.9 running in system mode (+PAM)
");
        assert_eq!(kb.landmarks.initrd_init.as_ref().unwrap().lineno, 4);
        assert_eq!(kb.landmarks.switch_root.as_ref().unwrap().us, 6_000_000);
        assert_eq!(kb.landmarks.real_init.as_ref().unwrap().lineno, 7);
        assert_eq!(kb.phases.initramfs_us, Some(5_000_000));
        assert_eq!(kb.phases.to_real_init_us, Some(6_400_000));
        assert_eq!(kb.initramfs_init.as_deref(), Some("systemd 257.9"));
        // With neither a switch line nor the SIGTERM, the next banner is the real init.
        let kb = run("\
[    1.0] Run /init as init process
[    1.2] systemd[1]: systemd 257.9 running in system mode (+PAM)
[    1.3] systemd[1]: Running in initrd.
[    4.1] systemd[1]: Reached target Initrd Default Target.
[    6.4] systemd[1]: systemd 257.9 running in system mode (+PAM)
");
        assert_eq!(kb.phases.to_real_init_us, Some(6_400_000));
        assert_eq!(kb.phases.initramfs_us, Some(5_400_000));
        // Until then there is no real init: the initramfs's systemd is not one.
        let kb = run("\
[    1.0] Run /init as init process
[    1.3] systemd[1]: Running in initrd.
[    4.1] systemd[1]: Reached target Initrd Default Target.
");
        assert_eq!(kb.phases.to_real_init_us, None);
        assert_eq!(kb.initramfs_init.as_deref(), Some("systemd"));
    }

    #[test]
    fn module_inits_after_init_are_outside_the_basis() {
        let kb = run("\
[    0.5] calling  a_init+0x0/0x1 @ 1
[    0.6] initcall a_init+0x0/0x1 returned 0 after 100000 usecs
[    1.0] Run /sbin/init as init process
[    3.0] calling  svm_init+0x0/0x48 [kvm_amd] @ 362
[    8.0] initcall svm_init+0x0/0x48 [kvm_amd] returned 0 after 5000000 usecs
");
        assert_eq!(kb.basis_us(), 1_000_000);
        assert!(kb.within_basis(&kb.initcalls[0]));
        assert!(!kb.within_basis(&kb.initcalls[1]));
        let within = kb.modules_where(|i| kb.within_basis(i));
        assert!(within.is_empty());
    }

    #[test]
    fn bootprint_initramfs_hands_over() {
        let kb = run("\
[    2.2] Run /init as init process
[    2.6] EXT4-fs (vda): mounted filesystem with ordered data mode.
[    2.7] bootprint initramfs: modules virtio_blk ext4
[    2.9] bootprint initramfs: root /dev/vda (ext4, ro) mounted, running /sbin/init after 481 ms
INIT: version 3.06 booting
");
        assert_eq!(kb.landmarks.switch_root.as_ref().unwrap().us, 2_900_000);
        assert_eq!(kb.landmarks.real_init.as_ref().unwrap().lineno, 4);
        assert_eq!(kb.phases.initramfs_us, Some(700_000));
    }

    #[test]
    fn console_init_banner_takes_the_time_before_it() {
        let kb = run("\
[    7.0] Run /init as init process
Loading, please wait...
[   13.4] EXT4-fs (vda): mounted filesystem with ordered data mode.
INIT: version 3.06 booting
");
        let r = kb.landmarks.real_init.unwrap();
        assert!(r.approximate);
        assert_eq!(r.us, 13_400_000);
        assert_eq!(r.lineno, 4);
    }
}
