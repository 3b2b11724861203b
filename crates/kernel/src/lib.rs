//! The kernel's share of the boot: what happened before init ran.
//!
//! This crate reads a kernel log — a trace's `dmesg` file, `dmesg` output, or a serial console
//! capture with user-space output mixed in — and tells how long the kernel took to its first
//! program, how long the initramfs ran, which initcalls and module inits cost time and on
//! which thread, and what to change ([`mod@findings`]). Its renderings (text, JSON, a
//! standalone SVG timeline with one row per thread, as the kernel's `bootgraph.pl` draws it)
//! are `render`'s, beside the other formats.
//!
//! It owns dmesg parsing ([`dmesg`]), the kernel model ([`boot`]), the kernel findings, and
//! the pure parsers for firmware and loader times ([`firmware`]). It does not read user-space
//! samples or build the whole-boot model (that is
//! `analyze`). Parsing is pure; the only I/O is [`read_path`] (a convenience for the CLI) and
//! the firmware readers, which take the sysfs directory as a parameter.
//!
//! ```
//! let report = kernel::Report::from_text(
//!     "dmesg",
//!     "[    1.6] calling  crypto_kdf108_init+0x0/0x156 @ 1\n\
//!      [    5.5] initcall crypto_kdf108_init+0x0/0x156 returned 0 after 3916026 usecs\n\
//!      [    7.3] Run /init as init process\n",
//! );
//! assert_eq!(report.boot.phases.kernel_us, Some(7_300_000));
//! assert_eq!(report.boot.initcalls[0].func, "crypto_kdf108_init");
//! ```
#![deny(missing_docs)]

pub mod boot;
pub mod dmesg;
pub mod findings;
pub mod firmware;

use std::path::Path;

use serde::Serialize;

pub use boot::{analyze, Initcall, KernelBoot};
pub use findings::{findings, Finding};

/// A module's share: its init functions summed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModuleCost {
    /// The module.
    pub module: String,
    /// Summed init duration in microseconds.
    pub duration_us: u64,
    /// How many init functions.
    pub initcalls: usize,
}

/// Everything the verb shows: the kernel model and the findings over it.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Where the log came from, for messages and the report header.
    pub source: String,
    /// The time shares are measured against (see [`KernelBoot::basis_us`]).
    pub basis_us: u64,
    /// What `basis_us` is: `to real init`, `to the first program` or `to the last line`.
    pub basis: &'static str,
    /// Modules whose inits started within the basis, slowest first.
    pub modules: Vec<ModuleCost>,
    /// What ran after the basis ended: not part of the kernel's time to init.
    pub after: After,
    /// The findings, largest gain first.
    pub findings: Vec<Finding>,
    /// The kernel model.
    pub boot: KernelBoot,
    /// Firmware and boot-loader times, when the trace holds them (see [`read_path`]).
    pub firmware: Firmware,
}

/// Initcalls that started after the basis ended (module inits udev or modprobe ran once the
/// real init was up): listed apart, never as a share of the kernel's time to init.
#[derive(Debug, Clone, Default, Serialize)]
pub struct After {
    /// Where the basis ends, in microseconds (`None`: the basis is the whole log).
    pub from_us: Option<u64>,
    /// Indices into [`KernelBoot::initcalls`], slowest first.
    pub initcalls: Vec<usize>,
    /// Their modules, slowest first.
    pub modules: Vec<ModuleCost>,
}

fn module_costs(v: Vec<(String, u64, usize)>) -> Vec<ModuleCost> {
    v.into_iter()
        .map(|(module, duration_us, initcalls)| ModuleCost {
            module,
            duration_us,
            initcalls,
        })
        .collect()
}

/// Firmware and boot-loader times the recorder copied into the trace (`firmware/`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Firmware {
    /// The ACPI FPDT boot record.
    pub fpdt: Option<firmware::FpdtBoot>,
    /// The EFI boot loader's `LoaderTimeInitUSec` / `LoaderTimeExecUSec`.
    pub loader: Option<firmware::LoaderTimes>,
    /// Files that were there but could not be read.
    pub errors: Vec<String>,
}

impl Firmware {
    /// Reads the copies in a trace directory: `firmware/fpdt/boot/` (the sysfs FPDT files)
    /// and `firmware/efivars/` (the loader variables). Missing files mean "not exposed".
    pub fn from_trace(trace: &Path) -> Firmware {
        let mut f = Firmware::default();
        match firmware::read_fpdt_sysfs(&trace.join("firmware/fpdt/boot")) {
            Ok(v) => f.fpdt = v,
            Err(e) => f.errors.push(e.to_string()),
        }
        match firmware::read_loader_times(&trace.join("firmware/efivars")) {
            Ok(v) => f.loader = v,
            Err(e) => f.errors.push(e.to_string()),
        }
        f
    }
}

impl Report {
    /// Parses and analyses a log given as text.
    pub fn from_text(source: &str, text: &str) -> Report {
        let boot = analyze(&dmesg::parse(text));
        let findings = findings(&boot);
        let basis = if boot.phases.to_real_init_us.is_some() {
            "to real init"
        } else if boot.phases.kernel_us.is_some() {
            "to the first program"
        } else {
            "to the last line"
        };
        let modules = module_costs(boot.modules_where(|i| boot.within_basis(i)));
        let after = After {
            from_us: boot.phases.kernel_us.map(|_| boot.basis_us()),
            initcalls: boot
                .slowest()
                .into_iter()
                .filter(|&i| !boot.within_basis(&boot.initcalls[i]))
                .collect(),
            modules: module_costs(boot.modules_where(|i| !boot.within_basis(i))),
        };
        Report {
            source: source.to_string(),
            basis_us: boot.basis_us(),
            basis,
            modules,
            after,
            findings,
            boot,
            firmware: Firmware::default(),
        }
    }

    /// A fraction of the basis, for the "share" columns; at most 1 (inits on several threads
    /// can add up to more than the time that passed).
    pub fn share(&self, us: u64) -> f64 {
        if self.basis_us == 0 {
            0.0
        } else {
            (us as f64 / self.basis_us as f64).min(1.0)
        }
    }

    /// An initcall's share of the basis: the part of its cost that fell within the basis (an
    /// init that started before the real init and ran on past it counts only until then).
    pub fn initcall_share(&self, ic: &Initcall) -> f64 {
        let within = match ic.timeline_start() {
            Some(s) => ic.cost_us().min(self.basis_us.saturating_sub(s)),
            None => ic.cost_us(),
        };
        self.share(within)
    }
}

/// An error reading the log.
#[derive(Debug)]
pub struct ReadError {
    /// The file that could not be read.
    pub path: std::path::PathBuf,
    /// Why.
    pub source: std::io::Error,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for ReadError {}

/// Reads a log from a file, or from the `dmesg` file of a trace directory, and analyses it.
/// Bytes that are not UTF-8 (serial line noise) are replaced, not refused.
pub fn read_path(path: &Path) -> Result<Report, ReadError> {
    let file = if path.is_dir() {
        path.join("dmesg")
    } else {
        path.to_path_buf()
    };
    let bytes = std::fs::read(&file).map_err(|source| ReadError {
        path: file.clone(),
        source,
    })?;
    let mut report = Report::from_text(
        &file.display().to_string(),
        &String::from_utf8_lossy(&bytes),
    );
    if path.is_dir() {
        report.firmware = Firmware::from_trace(path);
    }
    Ok(report)
}
