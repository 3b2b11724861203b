//! Kernel findings: what costs time before init and what to change, each with the log lines
//! that show it and the expected gain with how it was estimated. A rule that finds no
//! evidence in the log says nothing.

use serde::Serialize;

use crate::boot::{Initcall, KernelBoot, Mark};

/// One line of evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// 1-based line number in the log.
    pub lineno: usize,
    /// Kernel time of the line in microseconds, when it has one.
    pub us: Option<u64>,
    /// The line's message.
    pub text: String,
}

/// A finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// A stable name (`slow-selftest`, `floppy`, ...), for scripts and docs/kernel.md.
    pub id: &'static str,
    /// One sentence saying what was found.
    pub title: String,
    /// The lines that show it.
    pub evidence: Vec<Evidence>,
    /// The expected gain in microseconds, when it can be estimated.
    pub gain_us: Option<u64>,
    /// How the gain was estimated (or why it could not be).
    pub gain_basis: String,
    /// What to change.
    pub advice: String,
}

/// Thresholds, so tests and callers can see the numbers the rules use.
pub mod limits {
    /// An initcall this slow with a self-test is worth a finding.
    pub const SELFTEST_US: u64 = 100_000;
    /// A driver probe this slow could run asynchronously.
    pub const PROBE_US: u64 = 100_000;
    /// A module init failing with "no such device" this slow is worth a finding.
    pub const ABSENT_US: u64 = 1_000;
    /// `pty_init` this slow suggests many legacy ptys.
    pub const PTY_US: u64 = 5_000;
    /// Initramfs unpacking this long is worth a finding.
    pub const UNPACK_US: u64 = 500_000;
    /// A silence this long before init, without initcall_debug, is worth a finding.
    pub const GAP_US: u64 = 1_000_000;
    /// Memory from which early (not deferred) struct page init costs noticeable time.
    pub const LARGE_MEMORY_KIB: u64 = 32 * 1024 * 1024;
    /// Deferred struct page initialisation this slow on a node is worth a finding: without
    /// page poisoning or zeroing it takes tens of ms for tens of GiB.
    pub const DEFERRED_PAGES_MS: u64 = 500;
}

fn ev(m: &Mark) -> Evidence {
    Evidence {
        lineno: m.lineno,
        us: if m.approximate { None } else { Some(m.us) },
        text: m.text.clone(),
    }
}

/// Says where a cost came from when it is not the kernel's own figure.
fn cost_note(ic: &Initcall) -> &'static str {
    if ic.overlapped {
        " (from the timestamps: the kernel's `after N usecs` is wrong when initcalls overlap)"
    } else {
        ""
    }
}

fn ev_call(ic: &Initcall) -> Vec<Evidence> {
    let mut v = Vec::new();
    if let (Some(l), Some(t)) = (ic.call_line, ic.start_us) {
        v.push(Evidence {
            lineno: l,
            us: Some(t),
            text: format!(
                "calling  {}{} @ {}",
                ic.symbol,
                ic.module
                    .as_ref()
                    .map(|m| format!(" [{m}]"))
                    .unwrap_or_default(),
                ic.pid.map(|p| p.to_string()).unwrap_or_default()
            ),
        });
    }
    if let (Some(l), Some(t)) = (ic.return_line, ic.end_us) {
        v.push(Evidence {
            lineno: l,
            us: Some(t),
            text: format!(
                "initcall {}{} returned {} after {} usecs",
                ic.symbol,
                ic.module
                    .as_ref()
                    .map(|m| format!(" [{m}]"))
                    .unwrap_or_default(),
                ic.ret.map(|r| r.to_string()).unwrap_or_default(),
                ic.duration_us.unwrap_or(0)
            ),
        });
    }
    v
}

/// The serial console named on the command line, with its bit rate (default 9600, as the
/// kernel's serial console documentation says).
fn serial_console(kb: &KernelBoot) -> Option<(String, u64)> {
    let c = kb.cmdline.as_deref()?;
    c.split_whitespace()
        .filter_map(|w| w.strip_prefix("console="))
        .filter(|v| {
            [
                "ttyS", "ttyAMA", "ttymxc", "ttyO", "ttySAC", "ttyMSM", "ttyPS", "hvc",
            ]
            .iter()
            .any(|p| v.starts_with(p))
        })
        .map(|v| {
            let (dev, opts) = v.split_once(',').unwrap_or((v, ""));
            let baud = opts
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect::<String>()
                .parse()
                .unwrap_or(9600);
            (dev.to_string(), baud)
        })
        .next_back()
}

fn cmdline_evidence(kb: &KernelBoot) -> Vec<Evidence> {
    kb.cmdline
        .as_ref()
        .map(|c| {
            vec![Evidence {
                lineno: kb.cmdline_lineno.unwrap_or(0),
                us: None,
                text: format!("Kernel command line: {c}"),
            }]
        })
        .unwrap_or_default()
}

/// Console time for `bytes` at `baud` (8N1: ten bits a byte), capped at the kernel phase,
/// which it cannot exceed; with how it was estimated. In a virtual machine the emulated UART
/// is not paced, so the gain is unknown there and the basis says what it would be.
fn uart_gain(kb: &KernelBoot, bytes: usize, dev: &str, baud: u64) -> (Option<u64>, String) {
    let raw = bytes as u64 * 10 * 1_000_000 / baud.max(1);
    let us = kb.phases.kernel_us.map_or(raw, |k| raw.min(k));
    let mut basis = format!(
        "{bytes} bytes reach the console before the first program; at {baud} baud on {dev} \
         (10 bits a byte) they take {:.2} s, and printk waits for the console",
        raw as f64 / 1e6
    );
    if us < raw {
        basis.push_str(&format!(
            "; capped at the kernel phase ({:.2} s)",
            us as f64 / 1e6
        ));
    }
    match &kb.virtual_machine {
        Some(vm) => (
            None,
            format!(
                "on real hardware: {basis}. This is a virtual machine ({}): its emulated UART \
                 is not paced, so the gain here is unknown; compare two recorded boots",
                vm.text
            ),
        ),
        None => (Some(us), basis),
    }
}

/// Runs every rule over the boot; findings with the largest gain first.
pub fn findings(kb: &KernelBoot) -> Vec<Finding> {
    let mut out = Vec::new();
    initcall_debug(kb, &mut out);
    verbose_console(kb, &mut out);
    selftests(kb, &mut out);
    floppy(kb, &mut out);
    absent_hardware(kb, &mut out);
    async_probe(kb, &mut out);
    legacy_pty(kb, &mut out);
    usb_storage(kb, &mut out);
    initramfs(kb, &mut out);
    struct_pages(kb, &mut out);
    deferred_pages(kb, &mut out);
    silent_gaps(kb, &mut out);
    // Stable: by gain, unknown gains last, then in rule order.
    out.sort_by_key(|f| std::cmp::Reverse(f.gain_us.map_or(0, |g| g.saturating_add(1))));
    out
}

/// The console log level the command line sets: `loglevel=`, else 4 with `quiet`, else 7
/// (the usual CONFIG_CONSOLE_LOGLEVEL_DEFAULT). Messages below it reach the console.
fn console_level(kb: &KernelBoot) -> u32 {
    let loglevel = kb
        .cmdline_has("loglevel")
        .and_then(|w| w.split_once('=')?.1.parse().ok());
    match loglevel {
        Some(l) => l,
        None if kb.cmdline_has("quiet").is_some() => 4,
        None => 7,
    }
}

fn initcall_debug(kb: &KernelBoot, out: &mut Vec<Finding>) {
    if kb.cmdline_has("initcall_debug").is_none() {
        return;
    }
    let bytes = kb.counts.initcall_debug_bytes_to_init;
    let level = console_level(kb);
    let (gain_us, gain_basis) = match serial_console(kb) {
        // Its lines are debug (7): the console shows them only above level 7.
        Some((dev, baud)) if level > 7 => uart_gain(kb, bytes, &dev, baud),
        Some(_) => (
            None,
            format!(
                "the console level is {level}, so its debug lines stay off the console; the \
                 cost is the printk calls alone, small"
            ),
        ),
        None => (
            None,
            "no serial console on the command line: the cost is the printk calls alone, small"
                .to_string(),
        ),
    };
    out.push(Finding {
        id: "initcall-debug",
        title: format!(
            "initcall_debug is on: {} initcalls each printed two lines before the first program",
            kb.initcalls
                .iter()
                .filter(|i| i.pid.is_some_and(|p| p <= 1))
                .count()
        ),
        evidence: cmdline_evidence(kb),
        gain_us,
        gain_basis,
        advice: "remove initcall_debug from the kernel command line once the initcalls are \
                 measured (keep it for one recorded boot to see them)"
            .into(),
    });
}

fn verbose_console(kb: &KernelBoot, out: &mut Vec<Finding>) {
    let Some((dev, baud)) = serial_console(kb) else {
        return;
    };
    let level = console_level(kb);
    // What reaches the console now and would not with `quiet` (level 4): levels 4 up to the
    // console level, initcall_debug output left to its own finding.
    let bytes: usize = kb.counts.bytes_to_init_by_level[4..(level.min(8) as usize).max(4)]
        .iter()
        .sum();
    if level <= 4 || bytes == 0 {
        return;
    }
    let quiet = kb.cmdline_has("quiet").is_some();
    let (gain_us, gain_basis) = uart_gain(kb, bytes, &dev, baud);
    out.push(Finding {
        id: "verbose-console",
        title: format!(
            "the kernel prints messages up to level {} to the serial console {dev} ({})",
            level.min(8) - 1,
            if quiet {
                format!("loglevel={level} overrides quiet")
            } else {
                "no `quiet`".into()
            }
        ),
        evidence: cmdline_evidence(kb),
        gain_us,
        gain_basis,
        advice: "add `quiet` to the kernel command line (and drop loglevel= above 4); the \
                 messages stay in the kernel log for dmesg"
            .into(),
    });
}

fn selftests(kb: &KernelBoot, out: &mut Vec<Finding>) {
    for ic in &kb.initcalls {
        if ic.cost_us() < limits::SELFTEST_US {
            continue;
        }
        let (Some(s), Some(e)) = (ic.start_us, ic.end_us) else {
            continue;
        };
        let during: Vec<&Mark> = kb
            .selftest_lines
            .iter()
            .filter(|m| m.us >= s && m.us <= e)
            .collect();
        let named = ic.func.contains("selftest") || ic.func.contains("self_test");
        if during.is_empty() && !named {
            continue;
        }
        let mut evidence = ev_call(ic);
        evidence.extend(during.iter().map(|m| ev(m)));
        evidence.sort_by_key(|e| e.lineno);
        out.push(Finding {
            id: "slow-selftest",
            title: format!(
                "{} ran a self-test for {:.2} s",
                ic.label(),
                ic.cost_us() as f64 / 1e6
            ),
            evidence,
            gain_us: Some(ic.cost_us()),
            gain_basis: format!(
                "the initcall's own duration{}{}",
                cost_note(ic),
                if ic.pid == Some(1) {
                    "; it ran on pid 1, so every later built-in initcall waited for it"
                } else {
                    ""
                }
            ),
            advice: "a self-test at boot proves the code, not this boot: use a kernel built \
                     with CONFIG_CRYPTO_MANAGER_DISABLE_TESTS=y (and, for crypto_kdf108_init, \
                     a kernel where the KDF self-test honours it), unless FIPS mode needs it"
                .into(),
        });
    }
}

fn floppy(kb: &KernelBoot, out: &mut Vec<Finding>) {
    let ic = kb
        .initcalls
        .iter()
        .find(|i| i.module.as_deref() == Some("floppy") || i.func.starts_with("floppy_"));
    if ic.is_none() && kb.floppy_lines.is_empty() {
        return;
    }
    let absent = kb
        .floppy_lines
        .iter()
        .any(|m| m.text.contains("no floppy controllers"));
    let mut evidence = ic.map(ev_call).unwrap_or_default();
    evidence.extend(kb.floppy_lines.iter().map(ev));
    evidence.sort_by_key(|e| e.lineno);
    out.push(Finding {
        id: "floppy",
        title: if absent {
            "the floppy driver probed for a controller that is not there".into()
        } else {
            "the floppy driver was loaded and probed the floppy controller".into()
        },
        evidence,
        gain_us: ic.map(|i| i.cost_us()),
        gain_basis: match ic {
            Some(i) => format!(
                "the module init's duration, {} us{}; controllers without a drive can take \
                 far longer",
                i.cost_us(),
                cost_note(i)
            ),
            None => "unknown without initcall_debug".into(),
        },
        advice: "if no floppy drive is used, blacklist the module (`blacklist floppy` in \
                 /etc/modprobe.d/, then rebuild the initramfs) or boot with \
                 modprobe.blacklist=floppy"
            .into(),
    });
}

fn absent_hardware(kb: &KernelBoot, out: &mut Vec<Finding>) {
    for ic in &kb.initcalls {
        let Some(m) = &ic.module else { continue };
        if m == "floppy" || !matches!(ic.ret, Some(-19 | -6)) || ic.cost_us() < limits::ABSENT_US {
            continue;
        }
        out.push(Finding {
            id: "absent-hardware",
            title: format!(
                "module {m} was loaded and found no device (returned {})",
                ic.ret.unwrap_or(0)
            ),
            evidence: ev_call(ic),
            gain_us: Some(ic.cost_us()),
            gain_basis: format!(
                "the module init's duration{}; loading it cost more",
                cost_note(ic)
            ),
            advice: format!(
                "find who loads {m} (`modprobe -c`, udev rules, /etc/modules) and stop it on \
                 this machine, or blacklist it"
            ),
        });
    }
}

fn driver_guess(ic: &Initcall) -> String {
    if let Some(m) = &ic.module {
        return m.clone();
    }
    let f = ic.func.as_str();
    for suffix in [
        "_driver_init",
        "_module_init",
        "_init_module",
        "_init",
        "_mod_init",
    ] {
        if let Some(s) = f.strip_suffix(suffix) {
            return s.to_string();
        }
    }
    f.to_string()
}

fn async_probe(kb: &KernelBoot, out: &mut Vec<Finding>) {
    for p in &kb.probes {
        // A probe whose initcall the log does not tie down names no driver to change: it is
        // listed with the slow probes, not made a finding.
        let Some(ic) = p.initcall.map(|i| &kb.initcalls[i]) else {
            continue;
        };
        if p.duration_us < limits::PROBE_US {
            continue;
        }
        let mut evidence = ev_call(ic);
        evidence.push(Evidence {
            lineno: p.lineno,
            us: Some(p.end_us),
            text: format!(
                "probe of {} returned {} after {} usecs",
                p.device, p.ret, p.duration_us
            ),
        });
        evidence.sort_by_key(|e| e.lineno);
        let d = driver_guess(ic);
        out.push(Finding {
            id: "async-probe",
            title: format!(
                "{} probed {} synchronously for {:.2} s",
                ic.label(),
                p.device,
                p.duration_us as f64 / 1e6
            ),
            evidence,
            gain_us: Some(p.duration_us),
            gain_basis: if ic.pid == Some(1) {
                "the probe's duration: it ran on pid 1, so the boot waited for all of it".into()
            } else {
                "the probe's duration, an upper bound: it ran beside other work, and the boot \
                 waits for it only where something needs the device or udev settles"
                    .into()
            },
            advice: format!(
                "let the driver probe in the background: driver_async_probe={d} on the kernel \
                 command line (the driver's name as under /sys/bus/*/drivers/; `{d}` is a \
                 guess from the initcall)"
            ),
        });
    }
}

fn legacy_pty(kb: &KernelBoot, out: &mut Vec<Finding>) {
    if kb.cmdline_has("pty.legacy_count").is_some() {
        return;
    }
    let Some(ic) = kb
        .initcalls
        .iter()
        .find(|i| i.func == "pty_init" && i.cost_us() >= limits::PTY_US)
    else {
        return;
    };
    out.push(Finding {
        id: "legacy-pty",
        title: format!(
            "pty_init took {:.1} ms: the kernel allocates legacy (BSD) ptys at boot",
            ic.cost_us() as f64 / 1e3
        ),
        evidence: ev_call(ic),
        gain_us: Some(ic.cost_us()),
        gain_basis: "pty_init's duration; with no legacy ptys it only registers the Unix98 \
                     driver"
            .into(),
        advice: "boot with pty.legacy_count=0 (nothing modern uses /dev/ptyXX), or build \
                 without CONFIG_LEGACY_PTYS"
            .into(),
    });
}

fn usb_storage(kb: &KernelBoot, out: &mut Vec<Finding>) {
    if kb.cmdline_has("usb-storage.delay_use").is_some() {
        return;
    }
    for w in &kb.usb_storage {
        let mut evidence = vec![ev(&w.detected)];
        let waited = w.attached.as_ref().map(|a| {
            evidence.push(ev(a));
            a.us.saturating_sub(w.detected.us)
        });
        out.push(Finding {
            id: "usb-storage-delay",
            title: "usb-storage waited before scanning a USB disk (delay_use)".into(),
            evidence,
            gain_us: Some(waited.unwrap_or(1_000_000)),
            gain_basis: match waited {
                Some(_) => "from the detection to the disk's SCSI line".into(),
                None => "the default delay_use of 1 s (no SCSI disk line followed)".into(),
            },
            advice: "boot with usb-storage.delay_use=0 (or set it in /etc/modprobe.d/); load \
                     usb-storage early so its settle overlaps the rest of the boot"
                .into(),
        });
    }
}

fn initramfs(kb: &KernelBoot, out: &mut Vec<Finding>) {
    let lm = &kb.landmarks;
    let (Some(a), Some(b)) = (&lm.initramfs_unpack_start, &lm.initramfs_unpack_end) else {
        return;
    };
    let us = b.us.saturating_sub(a.us);
    if us < limits::UNPACK_US {
        return;
    }
    let size = kb
        .initramfs_kib
        .map(|k| format!("{:.1} MiB", k as f64 / 1024.0))
        .unwrap_or_else(|| "an initramfs".into());
    let rate = kb
        .initramfs_kib
        .map(|k| format!(" ({:.1} MiB/s)", k as f64 / 1024.0 / (us as f64 / 1e6)))
        .unwrap_or_default();
    out.push(Finding {
        id: "initramfs-unpack",
        title: format!(
            "unpacking {size} of initramfs took {:.2} s{rate}",
            us as f64 / 1e6
        ),
        evidence: vec![ev(a), ev(b)],
        gain_us: Some(us / 2),
        gain_basis: "half the unpack time, for an image half the size: unpacking scales with \
                     size; it runs beside the initcalls, so the boot waits on it only as far \
                     as it holds a CPU they need or ends after them"
            .into(),
        advice: "make the initramfs smaller: MODULES=dep in /etc/initramfs-tools/initramfs.conf \
                 (Debian) or hostonly in dracut keeps only this machine's modules; a fast \
                 decompressor (COMPRESS=lz4 or zstd) unpacks faster"
            .into(),
    });
}

fn struct_pages(kb: &KernelBoot, out: &mut Vec<Finding>) {
    let Some(mem) = kb.memory_kib else { return };
    if !kb.deferred_pages.is_empty() || mem < limits::LARGE_MEMORY_KIB {
        return;
    }
    out.push(Finding {
        id: "struct-page-init",
        title: format!(
            "{:.0} GiB of memory and no deferred struct page init: one CPU sets up every page \
             descriptor before the others start",
            mem as f64 / 1048576.0
        ),
        evidence: Vec::new(),
        gain_us: None,
        gain_basis: "grows with memory; Oracle measured minutes on multi-terabyte machines".into(),
        advice: "use a kernel built with CONFIG_DEFERRED_STRUCT_PAGE_INIT=y, which initialises \
                 most pages later on all CPUs"
            .into(),
    });
}

/// The settings in this log that make struct page initialisation write every page: the
/// command line's words and the `mem auto-init` line's `heap free:on`.
fn page_init_causes(kb: &KernelBoot) -> Vec<String> {
    let on = |key: &str| {
        kb.cmdline_has(key)
            .and_then(|w| w.split_once('='))
            .is_some_and(|(_, v)| matches!(v, "1" | "on" | "y" | "Y" | "yes"))
    };
    let mut causes = Vec::new();
    for key in ["page_poison", "init_on_free", "debug_pagealloc"] {
        if on(key) {
            causes.push(kb.cmdline_has(key).unwrap_or(key).to_string());
        }
    }
    let free_on = kb
        .mem_auto_init
        .as_ref()
        .is_some_and(|m| m.text.contains("heap free:on"));
    if free_on && !on("init_on_free") {
        causes.push("heap free:on (init_on_free, the kernel's default)".into());
    }
    causes
}

/// `node N deferred pages initialised in Mms` taking long: the kernel waits for every node's
/// thread before it goes on (`page_alloc_init_late`), so the slowest node is on the path.
fn deferred_pages(kb: &KernelBoot, out: &mut Vec<Finding>) {
    let Some(slowest) = kb.deferred_pages.iter().max_by_key(|d| (d.ms, d.node)) else {
        return;
    };
    if slowest.ms < limits::DEFERRED_PAGES_MS {
        return;
    }
    let mut nodes: Vec<&crate::boot::DeferredPages> = kb.deferred_pages.iter().collect();
    nodes.sort_by_key(|d| d.node);
    let figures: Vec<String> = nodes
        .iter()
        .map(|d| format!("node {} {} ms", d.node, d.ms))
        .collect();
    let mut evidence: Vec<Evidence> = nodes.iter().map(|d| ev(&d.mark)).collect();
    evidence.extend(cmdline_evidence(kb));
    evidence.extend(kb.mem_auto_init.iter().chain(kb.memtest.iter()).map(ev));
    let causes = page_init_causes(kb);
    let memory = kb
        .memory_kib
        .map(|k| format!(" of {:.0} GiB", k as f64 / 1048576.0))
        .unwrap_or_default();
    let (gain_us, gain_basis) = if causes.is_empty() {
        (
            None,
            "unknown: nothing in this log (command line, `mem auto-init`) makes the kernel \
             write every page; the slowest node's time is what the boot waited"
                .to_string(),
        )
    } else {
        (
            Some(slowest.ms * 1000),
            format!(
                "the slowest node's time, an upper bound: the kernel waits for it, and with {} \
                 every page is written as it is freed to the allocator; without, the same \
                 memory takes tens of ms",
                causes.join(", ")
            ),
        )
    };
    out.push(Finding {
        id: "deferred-pages",
        title: format!(
            "deferred struct page initialisation{memory} took {:.2} s ({})",
            slowest.ms as f64 / 1e3,
            figures.join(", ")
        ),
        evidence,
        gain_us,
        gain_basis,
        advice: "drop what writes every page at boot unless you need it: page_poison=1 \
                 (poisons each freed page), init_on_free=1 (zeroes each freed page; \
                 CONFIG_INIT_ON_FREE_DEFAULT_ON sets it by default), debug_pagealloc=on; \
                 init_on_alloc=1 zeroes pages when they are allocated, later in the boot; \
                 memtest= tests all memory before this (docs/kernel.md cites the kernel's \
                 documentation of each)"
            .into(),
    });
}

fn silent_gaps(kb: &KernelBoot, out: &mut Vec<Finding>) {
    if kb.has_initcalls() {
        return;
    }
    for g in &kb.gaps {
        let (a, b, us) = (&g.before, &g.after, g.us);
        if us < limits::GAP_US {
            continue;
        }
        // A silence that a slow node's deferred pages line ends is that finding's.
        let deferred = kb
            .deferred_pages
            .iter()
            .any(|d| d.mark.lineno == b.lineno && d.ms >= limits::DEFERRED_PAGES_MS);
        if deferred {
            continue;
        }
        out.push(Finding {
            id: "silent-gap",
            title: format!(
                "{:.2} s passed with no kernel message before the first program",
                us as f64 / 1e6
            ),
            evidence: vec![ev(a), ev(b)],
            gain_us: None,
            gain_basis: "unknown: the log does not say what ran; boot once with initcall_debug \
                         (and without quiet) to see the initcalls"
                .into(),
            advice: "record one boot with initcall_debug to name the initcall".into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{boot::analyze, dmesg::parse};

    fn run(s: &str) -> Vec<Finding> {
        findings(&analyze(&parse(s)))
    }

    fn ids(f: &[Finding]) -> Vec<&str> {
        f.iter().map(|f| f.id).collect()
    }

    #[test]
    fn quiet_boot_without_evidence_has_no_findings() {
        let f = run("\
[    0.0] Kernel command line: root=/dev/sda1 quiet
[    0.5] Run /init as init process
");
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn initcall_debug_and_verbose_serial_console() {
        let f = run("\
[    0.0] Kernel command line: console=ttyS0,115200 initcall_debug loglevel=8
[    0.1] calling  a_init+0x0/0x1 @ 1
[    0.2] initcall a_init+0x0/0x1 returned 0 after 100 usecs
[    0.3] some info line
[    1.0] Run /init as init process
");
        // The command line and the info line are what quiet would hide: more bytes, first.
        assert_eq!(ids(&f), ["verbose-console", "initcall-debug"]);
        // Two initcall lines: (len+16) bytes each, 11520 bytes/s.
        let bytes = ("calling  a_init+0x0/0x1 @ 1".len()
            + "initcall a_init+0x0/0x1 returned 0 after 100 usecs".len()
            + 32) as u64;
        assert_eq!(f[1].gain_us, Some(bytes * 10 * 1_000_000 / 115_200));
        assert!(f[1].evidence[0].text.contains("initcall_debug"));
        let hidden = ("Kernel command line: console=ttyS0,115200 initcall_debug loglevel=8".len()
            + "some info line".len()
            + "Run /init as init process".len()
            + 48) as u64;
        assert_eq!(f[0].gain_us, Some(hidden * 10 * 1_000_000 / 115_200));
        assert!(f[0].title.contains("no `quiet`"));
    }

    #[test]
    fn quiet_without_loglevel_is_not_verbose() {
        let f = run("\
[    0.0] Kernel command line: console=ttyS0 quiet
[    1.0] Run /init as init process
");
        assert!(!ids(&f).contains(&"verbose-console"));
    }

    #[test]
    fn selftest_floppy_absent_pty_usb_async() {
        let f = run("\
[    0.0] Kernel command line: root=/dev/vda quiet
[    1.6] calling  crypto_kdf108_init+0x0/0x156 @ 1
[    5.5] alg: self-tests for CTR-KDF (hmac(sha256)) passed
[    5.6] initcall crypto_kdf108_init+0x0/0x156 returned 0 after 3916026 usecs
[    5.7] calling  pty_init+0x0/0x1d1 @ 1
[    5.8] initcall pty_init+0x0/0x1d1 returned 0 after 60000 usecs
[    5.9] calling  i8042_init+0x0/0x1 @ 1
[    6.1] probe of i8042 returned 0 after 150000 usecs
[    6.2] initcall i8042_init+0x0/0x1 returned 0 after 200000 usecs
[    7.0] Run /init as init process
[    9.0] calling  floppy_module_init+0x0/0xed9 [floppy] @ 118
[    9.05] floppy0: no floppy controllers found
[    9.1] initcall floppy_module_init+0x0/0xed9 [floppy] returned -19 after 5183 usecs
[    9.2] calling  sgx_mod_init+0x0/0x1 [sgxmod] @ 119
[    9.3] initcall sgx_mod_init+0x0/0x1 [sgxmod] returned -19 after 2000 usecs
[   10.0] usb-storage 1-1:1.0: USB Mass Storage device detected
[   11.2] scsi 6:0:0:0: Direct-Access     Kingston DataTraveler 3.0 PQ: 0 ANSI: 6
");
        assert_eq!(
            ids(&f),
            [
                "slow-selftest",
                "usb-storage-delay",
                "async-probe",
                "legacy-pty",
                "floppy",
                "absent-hardware"
            ]
        );
        assert_eq!(f[0].gain_us, Some(3_916_026));
        assert_eq!(f[0].evidence.len(), 3);
        assert_eq!(f[1].gain_us, Some(1_200_000));
        assert!(f[2].advice.contains("driver_async_probe=i8042"));
        assert!(f[2].gain_basis.contains("pid 1"));
        assert!(f[4].title.contains("not there"));
        assert!(f[5].title.contains("sgxmod"));
    }

    #[test]
    fn debug_lines_below_the_console_level_cost_nothing_claimed() {
        let f = run("\
[    0.0] Kernel command line: console=ttyS0 initcall_debug loglevel=6
[    0.1] calling  a_init+0x0/0x1 @ 1
[    0.2] initcall a_init+0x0/0x1 returned 0 after 100 usecs
[    1.0] Run /init as init process
[    2.0] usb-storage 1-1:1.0: USB Mass Storage device detected
");
        // loglevel=6: info and debug lines stay off the console.
        assert_eq!(ids(&f), ["usb-storage-delay", "initcall-debug"]);
        assert_eq!(f[1].gain_us, None);
        assert!(f[1].gain_basis.contains("console level is 6"));
        // No disk line followed: the default delay is assumed, and said.
        assert_eq!(f[0].gain_us, Some(1_000_000));
        assert!(f[0].gain_basis.contains("default"));
    }

    #[test]
    fn legacy_pty_silenced_by_cmdline() {
        let f = run("\
[    0.0] Kernel command line: pty.legacy_count=0
[    5.7] calling  pty_init+0x0/0x1d1 @ 1
[    5.8] initcall pty_init+0x0/0x1d1 returned 0 after 60000 usecs
");
        assert!(f.is_empty());
    }

    #[test]
    fn slow_deferred_pages_name_each_node_and_the_cause() {
        let f = run("\
[    0.0] Kernel command line: root=/dev/sda1 quiet
[    0.0] mem auto-init: stack:off, heap alloc:on, heap free:on
[    0.1] Memory: 1000K/268435456K available (14343K kernel code)
[    3.2] node 1 deferred pages initialised in 3154ms
[    3.3] node 0 deferred pages initialised in 3264ms
[    4.0] Run /init as init process
");
        assert_eq!(ids(&f), ["deferred-pages"]);
        assert!(f[0]
            .title
            .contains("256 GiB took 3.26 s (node 0 3264 ms, node 1 3154 ms)"));
        assert_eq!(f[0].gain_us, Some(3_264_000));
        assert!(f[0].gain_basis.contains("heap free:on"));
        // Fast nodes, or slow ones with nothing that explains them: no gain claimed.
        assert!(run("[ \
   0.3] node 0 deferred pages initialised in 32ms\n")
        .is_empty());
        let f = run("[ \
   0.0] Kernel command line: quiet\n[ \
   2.3] node 0 deferred pages initialised in 2000ms\n");
        assert_eq!(f[0].gain_us, None);
        assert!(f[0].gain_basis.starts_with("unknown"));
    }

    #[test]
    fn initramfs_and_gap_and_memory() {
        let f = run("\
[    0.0] Kernel command line: quiet
[    0.1] Memory: 1000K/67108864K available (14343K kernel code)
[    1.0] Trying to unpack rootfs image as initramfs...
[    1.5] Key type asymmetric registered
[    8.0] Freeing initrd memory: 34612K
[    8.5] Run /init as init process
");
        assert_eq!(
            ids(&f),
            ["initramfs-unpack", "struct-page-init", "silent-gap"]
        );
        assert_eq!(f[0].gain_us, Some(3_500_000));
        assert!(f[0].title.contains("33.8 MiB"));
        assert_eq!(f[2].evidence[0].lineno, 4);
        assert_eq!(f[2].evidence[1].lineno, 5);
    }
}
