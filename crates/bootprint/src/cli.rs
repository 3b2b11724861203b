//! The command line of `bootprint`, defined once with clap's derive API: parsing, `--help`,
//! the usage in error messages, the man pages (`bootprint man`) and the shell completions
//! (`bootprint completions`) all come from the types below, so they cannot drift apart.
//!
//! A path is bytes, not text: path arguments are `PathBuf` and taken as the OS gives them.
//! A value that must be text (a runlevel, a kernel release, a number) goes through [`text`],
//! which names the argument and the value when it is not UTF-8.

use std::ffi::OsStr;
use std::path::PathBuf;

use clap::builder::{
    PossibleValue, PossibleValuesParser, RangedU64ValueParser, StringValueParser, StyledStr,
    TypedValueParser,
};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, Args, Command, CommandFactory, FromArgMatches, Parser, Subcommand};

/// bootprint: the command line for everything after boot
///
/// Reads the traces bootprint-boot records (or bootchart2's bootchart.tgz) and says where
/// the time of a boot went and what to change; shows and switches the boot levers
/// (readahead, the module loader, the init script runner, the initramfs).
#[derive(Debug, Parser)]
#[command(name = "bootprint", version, max_term_width = 100)]
// As before clap: an option given twice is not an error, the last one wins.
#[command(args_override_self = true)]
pub struct Cli {
    #[command(subcommand)]
    pub verb: Verb,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Where the time of a recorded boot went, against the phase budgets
    ///
    /// Shows where the time of a recorded boot went: kernel, init, login and boot-done times,
    /// each phase against its budget (and what overran it), when CPU and disk went idle and
    /// what ran after the login until then, idle and iowait fractions, and the processes that
    /// used the most CPU or waited most on I/O.
    Report(Report),
    /// What to change, with evidence and estimated gain
    ///
    /// Findings from a recorded boot, largest estimated gain first: network waits before the
    /// login, storms of one program, sleeps and udev settle waits, services that could start
    /// after the login, CPU-and-disk idle gaps, disk-bound stretches readahead would cover, and
    /// the kernel's own findings (from the trace's dmesg). Each finding names its evidence
    /// (process, pid, time span, samples), the estimated gain and how it was estimated, and
    /// the fix.
    Advise(Advise),
    /// Two recorded boots side by side
    ///
    /// Compares two recorded boots: milestones and phase lengths, the services whose run time
    /// changed most, the programs that changed most (runs, CPU, lifetime summed by name) and
    /// the programs that appeared in B or disappeared from it.
    Diff(Diff),
    /// The boot's times for Prometheus, its timeline for OpenTelemetry
    ///
    /// --prometheus DIR writes the boot's milestone and phase times (with their budgets), the
    /// idle and iowait shares and, when the boot replayed a readahead pack, its hit rate, in
    /// Prometheus' text format to DIR/bootprint.prom (through a temporary file and a rename),
    /// for node_exporter's textfile collector (--collector.textfile.directory=DIR).
    /// --otlp URL|FILE sends the boot as one OpenTelemetry trace (OTLP/HTTP, JSON) to a
    /// collector, queued on disk while it cannot be reached, or writes it to FILE. Metric
    /// names and spans: docs/export.md.
    Export(Export),
    /// Many machines' boots: each against its own baseline, logins by kernel and model
    ///
    /// Reads the directories gathered from many machines (one subdirectory a machine:
    /// DIR/<machine>/...), searched recursively for trace directories and for records files
    /// (*.jsonl, written by `bootprint fleet --export` on each machine). Prints each machine's
    /// newest text login and boot done against its own baseline (REGRESSED when its newest
    /// boots were over it), the text login's median and 95th percentile by kernel release and
    /// by model, and the services whose start time grew most: on each regressed machine,
    /// between kernel releases, and between the older and newer half of the boots. An input
    /// that cannot be read is reported with its path and skipped. docs/fleet.md.
    Fleet(Fleet),
    /// The kept boots, newest first: when, kernel, login and boot-done times, size
    ///
    /// One row per trace kept in the log directory (default: `log_dir` of
    /// /etc/bootprint/bootprint.toml, /var/log/bootprint): its id (short), when it was written
    /// (UTC), the kernel release, the text login, graphical login and boot-done times (seconds
    /// since the kernel started), its size on disk, and whether it is `latest` or pinned.
    List(List),
    /// Pin a trace so pruning never removes it (--unpin: release it)
    ///
    /// ID is a boot id, a prefix only one kept trace has, or `latest`. The pin is a file
    /// `pinned` in the trace directory, so it moves with the trace.
    Keep(Keep),
    /// Remove the oldest traces beyond the configured limits, as boot done does
    ///
    /// Keeps the newest `keep_traces` traces (default 10), then removes the oldest while they
    /// take more than `keep_mb` MiB (default 200), never `latest`'s target or a pinned trace;
    /// also removes temporary directories left by a write that crashed in an earlier boot.
    /// Anything that is not a trace stays.
    Prune(Prune),
    /// The kernel's share: phases, initcalls, findings
    ///
    /// Shows what happened before init ran: how long the kernel took to its first program and
    /// how long the initramfs ran, the slowest initcalls and module inits with their share of
    /// the time and the thread that ran them, the slowest driver probes, and findings (what to
    /// change, the log lines that show it, and the expected gain). Initcalls need a boot with
    /// initcall_debug.
    Kernel(Kernel),
    /// The modules this machine's boot would load, the parallel loader and its switch
    #[command(subcommand)]
    Modules(Modules),
    /// A host-only initramfs whose /init is bootprint-boot
    ///
    /// Roots on LVM, dm-crypt, md RAID or the network are refused with the reason
    /// (docs/initramfs.md).
    #[command(subcommand)]
    Initramfs(Initramfs),
    /// The services of a recorded boot: spans, blame, critical chain to the login
    ///
    /// The scripts bootprint's runner started (the trace's rc.log) or, on a systemd boot, the
    /// units as systemd timed them (the trace's systemd-units.log): when each started and how
    /// long it took, failed ones, blame (longest first, as systemd-analyze blame) and the
    /// critical chain to the login (as systemd-analyze critical-chain for units).
    /// `bootprint rc services` is the same.
    Services(RcServices),
    /// The init scripts: start graph and order, the services of a boot, the login target
    Rc(RcVerb),
    /// Readahead's pack, history and verdict; its switch
    ///
    /// Paths come from the same configuration the boot path reads; --root DIR looks at another
    /// system's files (an image, a test tree).
    #[command(subcommand)]
    Readahead(Readahead),
    /// Preload of the desktop session: its model, history and verdict; its switch; its run
    ///
    /// Preload learns which files the desktop session's start reads, keeps a model across
    /// logins in which what is no longer used fades, and prefetches it at idle I/O priority
    /// while the greeter waits and as the session starts (docs/preload.md). Paths come from
    /// the [preload] section of bootprint.toml; --root DIR looks at another system's files.
    #[command(subcommand)]
    Preload(Preload),
    /// Switch bootprint on for every boot: kernel parameters through GRUB, the levers' hooks
    ///
    /// Writes the kernel parameters of the levers asked for to /etc/default/grub.d/bootprint.cfg
    /// and runs update-grub; --rc diverts startpar to the runner's wrapper, --initramfs builds
    /// bootprint's initramfs for every kernel (kept current by the kernel hooks) as an extra
    /// GRUB entry. Levers add up over runs; every change is listed in
    /// /var/lib/bootprint/enabled, which `bootprint disable` undoes (docs/enable.md).
    Enable(Enable),
    /// Undo everything `bootprint enable` changed, exactly, and run update-grub
    ///
    /// Reads /var/lib/bootprint/enabled and undoes its changes newest first. With nothing
    /// enabled it says so and exits 0 (the package's prerm runs it).
    Disable(Disable),
    /// What is enabled, what this boot had, each lever's verdict, the last boot's times
    Status(Status),
    /// Reboot by a fast path: kexec (no firmware, no loader) or systemd's soft-reboot
    ///
    /// --kexec loads the entry the boot loader boots next (Debian's GRUB: grub.cfg's default,
    /// grubenv's saved or one-time entry; systemd-boot: its one-time or default EFI variable,
    /// loader.conf's default, or its first entry; or the kernel named with --kernel) and reboots into
    /// it through the init's own shutdown (systemd: `systemctl kexec`; sysvinit: bootprint's
    /// runner, which ends runlevel 6 with the kexec). --soft restarts userspace only
    /// (`systemctl soft-reboot`). Either is refused, with every reason, where it would boot
    /// something other than a reset would or is unsafe: no kexec in the kernel, lockdown or
    /// Secure Boot, firmware work pending at the reset, a newer kernel than the next entry's,
    /// a soft reboot that would keep a kernel the machine no longer boots (docs/reboot.md).
    Reboot(Reboot),
    /// Print the shell completions of bootprint to stdout
    ///
    /// For example `bootprint completions bash > /usr/share/bash-completion/completions/bootprint`.
    Completions(cliutil::Completions),
    /// Write the man pages (bootprint.1, bootprint-report.1, ...) into DIR
    Man(cliutil::Man),
}

#[derive(Debug, Args)]
pub struct Report {
    /// A bootprint trace directory (e.g. /var/log/bootprint/latest) or a bootchart2
    /// bootchart.tgz
    #[arg(value_name = "TRACE", required_unless_present_any = ["systemd", "journal"])]
    pub trace: Option<PathBuf>,
    /// No trace: the running boot as systemd's manager timed it (its stages, as
    /// `systemd-analyze time`, and every unit: blame, the critical chain), for a machine
    /// booted without the recorder
    #[arg(long, conflicts_with_all = ["trace", "svg", "html", "perfetto", "config"])]
    pub systemd: bool,
    /// No trace (implies --systemd): boot BOOT from the journal instead of the running one,
    /// as journalctl -b names it (0 the newest, -1 the one before, or a boot id): its stages
    /// and its units' start jobs (blame; the journal keeps no dependencies, so no critical
    /// chain)
    #[arg(
        long,
        value_name = "BOOT",
        allow_hyphen_values = true,
        conflicts_with_all = ["trace", "svg", "html", "perfetto", "config"]
    )]
    pub journal: Option<String>,
    /// With --systemd or --journal: read the journal files of DIR (journalctl --directory;
    /// a machine's copied /var/log/journal) instead of this machine's
    #[arg(long, value_name = "DIR", conflicts_with = "trace", value_hint = clap::ValueHint::DirPath)]
    pub journal_dir: Option<PathBuf>,
    /// Print one JSON object instead of the text report (keys: docs/report.md)
    #[arg(long)]
    pub json: bool,
    /// Also write a bootchart-style SVG chart to FILE
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Read the phase budgets ([budget]) from FILE instead of /etc/bootprint/bootprint.toml (a
    /// missing default file means the defaults)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Also write one self-contained HTML report (chart zoomable along time, tables, findings;
    /// nothing fetched from the network) to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write the boot as Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing):
    /// processes, services, initcalls, CPU and disk counters
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct List {
    /// The log directory (default: `log_dir` of the configuration, /var/log/bootprint)
    #[arg(value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub dir: Option<PathBuf>,
    /// Print one JSON object {dir, traces: [...]} (keys: docs/recorder.md, "Retention")
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct Fleet {
    /// Directories gathered from the machines (with --export: log directories; default
    /// `log_dir` of the configuration)
    #[arg(value_name = "DIR", value_hint = clap::ValueHint::DirPath, required_unless_present = "export")]
    pub dirs: Vec<PathBuf>,
    /// Print one JSON object {boots, regressed, machines, by_kernel_release, by_model,
    /// between_releases, between_halves, skipped} (keys: docs/fleet.md)
    #[arg(long, conflicts_with = "export")]
    pub json: bool,
    /// A machine is REGRESSED when its newest N boots or more in a row were over their
    /// baselines (text login or boot done)
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "export")]
    pub over: usize,
    /// Print this machine's kept boots as records instead, one JSON line each, oldest first
    /// (what `bootprint fleet` reads back from a *.jsonl file)
    #[arg(long)]
    pub export: bool,
}

#[derive(Debug, Args)]
pub struct Keep {
    /// A boot id, a prefix of one, or `latest`
    #[arg(value_name = "ID", value_parser = text(StringValueParser::new()))]
    pub id: String,
    /// Remove the pin instead
    #[arg(long)]
    pub unpin: bool,
    /// The log directory (default: `log_dir` of the configuration)
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct Prune {
    /// Say what would be removed, remove nothing
    #[arg(long)]
    pub dry_run: bool,
    /// The log directory (default: `log_dir` of the configuration)
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub dir: Option<PathBuf>,
    /// Read the limits from FILE instead of /etc/bootprint/bootprint.toml
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("method").required(true).args(["kexec", "soft"])))]
pub struct Reboot {
    /// kexec into the boot loader's next entry (or the kernel given with --kernel)
    #[arg(long)]
    pub kexec: bool,
    /// systemd's soft-reboot: userspace only
    #[arg(long)]
    pub soft: bool,
    /// Say what would be booted and any reason to refuse; load and reboot nothing (exit 1
    /// when refused)
    #[arg(long)]
    pub dry_run: bool,
    /// With --kexec: this kernel image instead of the boot loader's next entry
    #[arg(long, value_name = "FILE", conflicts_with = "soft")]
    pub kernel: Option<PathBuf>,
    /// With --kernel: an initramfs image (again for more, joined in order as GRUB joins them)
    #[arg(long, value_name = "FILE", requires = "kernel")]
    pub initrd: Vec<PathBuf>,
    /// With --kernel: the kernel command line
    #[arg(long, value_name = "TEXT", requires = "kernel", conflicts_with = "reuse_cmdline",
          value_parser = text(StringValueParser::new()))]
    pub append: Option<String>,
    /// With --kernel: the running kernel's command line (/proc/cmdline, without the
    /// loader's BOOT_IMAGE=)
    #[arg(long, requires = "kernel")]
    pub reuse_cmdline: bool,
}

#[derive(Debug, Args)]
pub struct Advise {
    /// A bootprint trace directory or a bootchart2 bootchart.tgz
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Print one JSON object {trace, findings: [...]} (keys: docs/advise.md)
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct Diff {
    /// The reference boot: a trace directory or a bootchart2 bootchart.tgz
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The boot compared with A: a trace directory or a bootchart2 bootchart.tgz
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Print one JSON object {a, b, milestones, phases, services, changed, appeared,
    /// disappeared} (keys: docs/report.md)
    #[arg(long)]
    pub json: bool,
    /// Also write an SVG with both boots on one time axis
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).multiple(true).args(["prometheus", "otlp"])))]
pub struct Export {
    /// node_exporter's textfile-collector directory
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub prometheus: Option<PathBuf>,
    /// An OTLP/HTTP endpoint (http:// or https://; /v1/traces is added to a URL without a
    /// path), or a FILE to write the request to (one JSON line, as the collector's
    /// otlpjsonfile receiver reads)
    #[arg(long, value_name = "URL|FILE")]
    pub otlp: Option<String>,
    /// A request header for the endpoint, NAME=VALUE (repeatable; a collector's auth)
    #[arg(long = "otlp-header", value_name = "NAME=VALUE")]
    pub otlp_headers: Vec<String>,
    /// Request headers from FILE, `NAME: VALUE` a line; mode 0600 (credentials)
    #[arg(long, value_name = "FILE")]
    pub otlp_headers_file: Option<PathBuf>,
    /// Trust the certificate authorities of this PEM FILE (default: the Mozilla roots built
    /// in)
    #[arg(long, value_name = "FILE")]
    pub otlp_ca: Option<PathBuf>,
    /// The queue of boots not yet accepted by the endpoint
    #[arg(
        long,
        value_name = "DIR",
        default_value = "/var/lib/bootprint/otlp-queue"
    )]
    pub otlp_queue: PathBuf,
    /// Keep at most N boots queued; the oldest are dropped first
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub otlp_queue_max: usize,
    /// Tries of each queued boot before it is left for the next export (1: no retry; waits
    /// 1, 2, 4 ... s between)
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub otlp_tries: u32,
    /// Send only what the queue holds (no TRACE)
    #[arg(long, requires = "otlp", conflicts_with = "trace")]
    pub flush: bool,
    /// No trace: the running boot as systemd timed it (as `report --systemd`), its text
    /// login against the journal's earlier boots, to --prometheus
    #[arg(long, requires = "prometheus", conflicts_with_all = ["trace", "otlp", "flush", "config"])]
    pub systemd: bool,
    /// No trace (implies --systemd): boot BOOT from the journal instead (0, -1, ... or a
    /// boot id)
    #[arg(
        long,
        value_name = "BOOT",
        allow_hyphen_values = true,
        requires = "prometheus",
        conflicts_with_all = ["trace", "otlp", "flush", "config"]
    )]
    pub journal: Option<String>,
    /// With --systemd or --journal: the journal files of DIR instead of this machine's
    #[arg(long, value_name = "DIR", conflicts_with_all = ["trace", "otlp", "flush"], value_hint = clap::ValueHint::DirPath)]
    pub journal_dir: Option<PathBuf>,
    /// A bootprint trace directory or a bootchart2 bootchart.tgz
    #[arg(value_name = "TRACE", required_unless_present_any = ["flush", "systemd", "journal"])]
    pub trace: Option<PathBuf>,
    /// Read the phase budgets from FILE (default /etc/bootprint/bootprint.toml)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct Kernel {
    /// A bootprint trace directory (its dmesg file is read), or a kernel log: `dmesg` output
    /// (also -r, -x) or a serial console capture
    #[arg(value_name = "TRACE|DMESG")]
    pub input: PathBuf,
    /// Print one JSON object instead of the text report (keys: docs/kernel.md)
    #[arg(long)]
    pub json: bool,
    /// Also write an SVG timeline of the initcalls, one row per thread, to FILE
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
#[command(disable_help_subcommand = true)]
pub enum Modules {
    /// The modules the boot would load in parallel, in order; nothing is loaded
    ///
    /// Every device modalias under sysfs and every module in /etc/modules and
    /// modules-load.d, resolved through libkmod with modprobe.d (aliases, blacklist, options,
    /// softdeps), builtin and already-loaded modules left out, in the order one worker would
    /// load them (the slowest chains first).
    Plan(ModulesPlan),
    /// Load the planned modules for real, in parallel (what the boot runs); needs root
    ///
    /// Loads the modules `plan` shows with N worker threads in dependency order, and prints
    /// one `events.log` line per module (kind `module`: name, end_ns, worker, outcome, detail),
    /// after a `modules_plan` line (planned, the modules loaded before, skipped). The boot path
    /// runs this early in boot (`bootprint.modules=1`) and puts the lines into the trace. Then
    /// each module's measured load time is folded into the durations state file, so the next
    /// plan puts the slow ones first (`modules_learned` line); at boot the root is still
    /// read-only, so this waits until it is writable.
    Load(ModulesLoad),
    /// The loader's switch, its history and its own verdict
    Status(ModulesStatus),
    /// Switch the loader on in bootprint.toml (also clears a verdict it gave itself, and its
    /// history)
    On(ModulesSwitch),
    /// Switch the loader off in bootprint.toml
    Off(ModulesSwitch),
}

#[derive(Debug, Args)]
pub struct ModulesPlan {
    /// The system's root: DIR/sys/devices, DIR/etc, DIR/proc/modules, DIR/lib/modules/RELEASE
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// The kernel release under DIR/lib/modules (default: the running kernel's, or the only
    /// one there)
    #[arg(long, value_name = "RELEASE", value_parser = text(StringValueParser::new()))]
    pub kernel: Option<String>,
    /// Learned durations (default DIR/var/lib/bootprint/modules.durations)
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Print one JSON object instead of text (keys: docs/modules.md)
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ModulesLoad {
    /// Worker threads, 1 to 64 (default: CPUs + 1, at most 4)
    #[arg(long, value_name = "N", value_parser = text(RangedU64ValueParser::<usize>::new().range(1..=64)))]
    pub workers: Option<usize>,
    /// Load these modules or aliases (comma-separated; may be repeated) and what they need,
    /// instead of what sysfs and the module lists ask for (the bench)
    #[arg(long, value_name = "NAMES", value_parser = text(module_names))]
    pub only: Vec<Names>,
    /// Learned durations (default /var/lib/bootprint/modules.durations)
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// Do not write the durations
    #[arg(long)]
    pub no_learn: bool,
    /// How long to wait for a writable state file, up to 3600
    #[arg(long, value_name = "SECONDS", default_value_t = 120,
          value_parser = text(RangedU64ValueParser::<u64>::new().range(0..=3600)))]
    pub learn_wait: u64,
}

/// Module names from one `--only` (a comma-separated list, blanks and empty items dropped).
#[derive(Debug, Clone, PartialEq)]
pub struct Names(pub Vec<String>);

fn module_names(s: &str) -> Result<Names, String> {
    let names: Vec<String> = s
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(String::from)
        .collect();
    if names.is_empty() {
        return Err("at least one module name is needed".into());
    }
    Ok(Names(names))
}

#[derive(Debug, Args)]
pub struct ModulesStatus {
    /// The system's root: its bootprint.toml and state files are read
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// Print one JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ModulesSwitch {
    /// The system's root: DIR/etc/bootprint/bootprint.toml is changed
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
}

#[derive(Debug, Subcommand)]
#[command(disable_help_subcommand = true)]
pub enum Initramfs {
    /// Write a host-only initramfs
    ///
    /// bootprint-boot as /init with its shared libraries, the modules that reach the root file
    /// system (from sysfs and modules.dep, so no libkmod at boot) and a plan file; compression
    /// chosen by measurement among what the kernel unpacks (CONFIG_RD_*) and this host
    /// produces. The measurements go to FILE.txt beside the image.
    Build(InitramfsBuild),
    /// Print the plan only: root, file system, modules in dependency order
    Plan(InitramfsPlan),
}

/// Which root the initramfs mounts, and for which kernel (build and plan).
#[derive(Debug, Args)]
pub struct InitramfsTarget {
    /// The root of the running system (the default)
    #[arg(long, overrides_with = "root")]
    pub root_from_running: bool,
    /// A root device (/dev/vda1, /dev/disk/by-uuid/...)
    #[arg(long, value_name = "DEV", overrides_with = "root_from_running",
          value_parser = text(StringValueParser::new()))]
    pub root: Option<String>,
    /// The kernel release (default: the running kernel's)
    #[arg(long, value_name = "RELEASE", value_parser = text(StringValueParser::new()))]
    pub kernel: Option<String>,
    /// Module-loading workers at boot, 1 to 64 (default: one per CPU)
    #[arg(long, value_name = "N", value_parser = text(RangedU64ValueParser::<usize>::new().range(1..=64)))]
    pub workers: Option<usize>,
}

#[derive(Debug, Args)]
pub struct InitramfsBuild {
    /// The image to write (default /boot/bootprint-initrd.img-RELEASE)
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub target: InitramfsTarget,
    /// The compression; auto measures which is cheapest at boot
    #[arg(long, value_name = "METHOD", value_parser = text(compression()))]
    pub compression: Option<Compression>,
    /// The program to make /init (default /usr/lib/bootprint/bootprint-boot)
    #[arg(long, value_name = "PATH")]
    pub init: Option<PathBuf>,
}

/// `--compression`: a method, or None for auto (chosen by measurement).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compression(pub Option<initramfs::compress::Method>);

fn compression() -> impl TypedValueParser<Value = Compression> {
    let names = std::iter::once("auto").chain(initramfs::compress::ALL.iter().map(|m| m.name()));
    PossibleValuesParser::new(names.map(PossibleValue::new))
        .map(|s| Compression(initramfs::compress::Method::parse(&s)))
}

#[derive(Debug, Args)]
pub struct InitramfsPlan {
    #[command(flatten)]
    pub target: InitramfsTarget,
}

#[derive(Debug, Args)]
pub struct RcVerb {
    // Optional: `bootprint rc` alone showed its help (exit 0) before clap, and still does.
    #[command(subcommand)]
    pub sub: Option<Rc>,
}

#[derive(Debug, Subcommand)]
#[command(disable_help_subcommand = true)]
pub enum Rc {
    /// The start graph of the LSB init scripts and the order bootprint would start them in
    ///
    /// For each script, what it starts after and the header line (file:line) each dependency
    /// came from, like insserv's .depend files but explained. Cycles are reported with their
    /// path and the edge dropped to break them; problems in headers are listed with file and
    /// line.
    Graph(RcGraph),
    /// The services of a recorded boot (the same as `bootprint services`)
    ///
    /// Spans (late services apart), blame (longest first) and the critical chain to the
    /// login, from the runner's rc.log or systemd's units (systemd-units.log).
    Services(RcServices),
    /// The login target this system needs (what `login = ["auto"]` in [rc] of bootprint.toml
    /// uses)
    ///
    /// Each part kept or left out, and why (docs/rc.md).
    Login(RcLogin),
}

#[derive(Debug, Args)]
pub struct RcGraph {
    /// The system's root directory: reads DIR/etc/init.d, DIR/etc/insserv.conf,
    /// DIR/etc/insserv.conf.d and DIR/etc/rc?.d
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// S (boot) or 0-6 (default: S, then 2)
    #[arg(long, value_name = "N", value_parser = text(runlevel))]
    pub runlevel: Option<rc::system::Runlevel>,
    /// One JSON object (keys: docs/rc.md)
    #[arg(long, conflicts_with = "dot")]
    pub json: bool,
    /// A Graphviz digraph (dashed red: an edge dropped to break a cycle)
    #[arg(long)]
    pub dot: bool,
}

fn runlevel(s: &str) -> Result<rc::system::Runlevel, String> {
    rc::system::Runlevel::parse(s).ok_or_else(|| "expected S or 0-6".into())
}

#[derive(Debug, Args)]
pub struct RcServices {
    /// A trace directory (its rc.log, else its systemd-units.log) or one of those files
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// The shutdown that ended the boot TRACE (TRACE/shutdown): what stopped, blame, the
    /// chain that held it
    #[arg(long)]
    pub shutdown: bool,
    /// One JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RcLogin {
    /// The system's root directory
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// One JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
#[command(disable_help_subcommand = true)]
pub enum Readahead {
    /// The switch, the pack, the history and the verdict
    Status(ReadaheadStatus),
    /// Every file in the pack and its ranges
    Show(ReadaheadShow),
    /// Remove the pack: the next boot learns a new one
    Relearn(ReadaheadSwitch),
    /// Switch readahead on in bootprint.toml (also clears a verdict it gave itself, and its
    /// history)
    On(ReadaheadSwitch),
    /// Switch readahead off in bootprint.toml
    Off(ReadaheadSwitch),
    /// Move the pack's files into one contiguous region of their ext4 filesystem, in replay
    /// order (rotating disks and SD/MMC cards; at idle I/O priority; each file's move is
    /// atomic)
    Relocate(ReadaheadRelocate),
    /// Replay the pack now, in the foreground, as the boot does, and say how fast it read
    ///
    /// Measures a pack on its device: what replay alone reaches, with nothing else reading.
    /// To start cold, drop the page cache first (as root: `sync; echo 3 >
    /// /proc/sys/vm/drop_caches`); what is already cached reads at memory speed.
    Replay(ReadaheadReplay),
}

#[derive(Debug, Args)]
pub struct ReadaheadStatus {
    /// The system's root: its bootprint.toml, pack and state files are read
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// One JSON object
    #[arg(long)]
    pub json: bool,
    // Every readahead verb took --json and --pack before clap; where they mean nothing they
    // are still accepted (so old command lines keep working), but not shown.
    #[arg(long, value_name = "FILE", hide = true)]
    pub pack: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReadaheadShow {
    /// The system's root: its bootprint.toml names the pack
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// The pack to show instead of the configured one
    #[arg(long, value_name = "FILE")]
    pub pack: Option<PathBuf>,
    /// One JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReadaheadRelocate {
    /// The system's root: its bootprint.toml names the pack
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// The pack to relocate instead of the configured one
    #[arg(long, value_name = "FILE")]
    pub pack: Option<PathBuf>,
    /// Show what would move (each file's extents now, the requests replay needs before and
    /// after); move nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Relocate on a device that neither rotates nor is an SD/MMC card
    #[arg(long)]
    pub force_media: bool,
    /// One JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReadaheadReplay {
    /// The system's root: its bootprint.toml names the pack and the replay's settings
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// The pack to replay instead of the configured one
    #[arg(long, value_name = "FILE")]
    pub pack: Option<PathBuf>,
    /// Read a file's ranges closer than this many KiB as one (default: merge_gap_kb from
    /// bootprint.toml; 0: every range alone)
    #[arg(long, value_name = "KIB")]
    pub merge_gap_kb: Option<u32>,
    /// Read the root filesystem's metadata first (`on`, or the flag alone), not (`off`), or
    /// when the pack was learned on a rotating device its boot waited on (`auto`), whatever
    /// bootprint.toml says
    #[arg(long, value_name = "WHEN", num_args = 0..=1, default_missing_value = "on",
          value_parser = ["on", "off", "auto"])]
    pub metadata: Option<String>,
    /// Give up after this many seconds, as the boot does after 30 (what is not read by then
    /// is counted as not reached)
    #[arg(long, value_name = "S", default_value_t = 30)]
    pub time_limit: u64,
    /// One JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReadaheadSwitch {
    /// The system's root: DIR/etc/bootprint/bootprint.toml and the state files under DIR
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    // See ReadaheadStatus::pack.
    #[arg(long, hide = true)]
    pub json: bool,
    #[arg(long, value_name = "FILE", hide = true)]
    pub pack: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
#[command(disable_help_subcommand = true)]
pub enum Preload {
    /// The switch, the model, the history of logins and the verdict
    Status(PreloadStatus),
    /// Every file in the model: weight, bytes, ranges, and where the budget ends
    Show(PreloadShow),
    /// Remove the model: the next login learns a new one
    Relearn(PreloadSwitch),
    /// Switch preload on in bootprint.toml (also clears a verdict it gave itself, and its
    /// history)
    On(PreloadSwitch),
    /// Switch preload off in bootprint.toml
    Off(PreloadSwitch),
    /// One login: prefetch the model, learn the session, update the model (run as root)
    ///
    /// Without a flag (the session's start): takes what the greeter's run decided (or
    /// decides: learn without a model; else prefetch, or every compare_every-th login go
    /// without, to compare), prefetches on a prefetch login while it learns what the
    /// session reads until it opens no new file for quiet_s (at most window_s), then updates
    /// the model and adds the login to the history. --prefetch (while the greeter waits):
    /// decides and prefetches only. Does nothing when preload is off or switched itself off.
    Run(PreloadRun),
    /// Give the latest login its desktop time and judge the history
    ///
    /// SECONDS is the time from the login to the desktop being ready, as the caller measured
    /// it. With three logins of each kind timed, preload switches itself off when the
    /// median with prefetch is not shorter than without.
    DesktopTime(PreloadDesktopTime),
}

#[derive(Debug, Args)]
pub struct PreloadStatus {
    /// The system's root: its bootprint.toml, model and state files are read
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// One JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PreloadShow {
    /// The system's root: its bootprint.toml names the model's directory
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// The model to show instead of the configured one
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
    /// One JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PreloadSwitch {
    /// The system's root: DIR/etc/bootprint/bootprint.toml and the state files under DIR
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
}

#[derive(Debug, Args)]
pub struct PreloadRun {
    /// The greeter's stage: decide this login and prefetch; learn nothing
    #[arg(long, conflicts_with = "learn")]
    pub prefetch: bool,
    /// Learn only: no prefetch this login (it counts as a learning login)
    #[arg(long)]
    pub learn: bool,
    /// Learn at most this long (default: window_s of [preload])
    #[arg(long, value_name = "SECONDS", value_parser = text(seconds))]
    pub time_limit: Option<f64>,
    /// What it did as one JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PreloadDesktopTime {
    /// Seconds from the login to the desktop being ready
    #[arg(value_name = "SECONDS", value_parser = text(seconds))]
    pub seconds: f64,
    /// The system's root: its bootprint.toml and state file
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
}

/// Seconds: a finite number, 0 or more.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("expected seconds (a number, 0 or more), not `{s}`")),
    }
}

#[derive(Debug, Args)]
pub struct Enable {
    /// Record every boot: init=/usr/lib/bootprint/bootprint-boot (every other lever implies it)
    #[arg(long)]
    pub record: bool,
    /// Readahead (bootprint.readahead=1)
    #[arg(long)]
    pub readahead: bool,
    /// The parallel init script runner in place of startpar (bootprint.rc=1; sysvinit only):
    /// diverts startpar (the path dpkg names: /bin/startpar on Debian 12, /usr/bin/startpar
    /// on 13) to startpar.distrib beside it, with the wrapper in its place
    #[arg(long)]
    pub rc: bool,
    /// Late units (bootprint.late=1; systemd only)
    #[arg(long)]
    pub late: bool,
    /// The parallel module loader (bootprint.modules=1)
    #[arg(long)]
    pub modules: bool,
    /// bootprint's initramfs for every installed kernel, an extra GRUB entry each, kept
    /// current by the kernel hooks; the distribution's entry stays the default
    #[arg(long)]
    pub initramfs: bool,
    /// Make the newest kernel's entry with bootprint's initramfs GRUB's default (implies
    /// --initramfs)
    #[arg(long)]
    pub default: bool,
    /// An ordinary reboot goes by kexec into the entry the boot loader (GRUB, systemd-boot)
    /// boots next, where safe
    /// (bootprint.kexec=1; on sysvinit with --rc; never part of --all; docs/reboot.md)
    #[arg(long)]
    pub kexec: bool,
    /// A service that hung a recorded shutdown until its TimeoutStopSec= gets a shorter one
    /// learned from its stops that ended (bootprint.timeouts=1; systemd only; never part of
    /// --all; docs/systemd.md)
    #[arg(long)]
    pub timeouts: bool,
    /// Every lever that can work here: record, readahead, modules, initramfs, and rc on
    /// sysvinit or late on systemd (the others are named with the reason and left out;
    /// --kexec and --timeouts only by name)
    #[arg(long)]
    pub all: bool,
    /// The system's root directory (update-grub and the initramfs build run in it with chroot)
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// For /etc/kernel/postinst.d/zz-bootprint: build the image of kernel RELEASE when the
    /// initramfs lever is on, else nothing
    #[arg(long, value_name = "RELEASE", value_parser = text(StringValueParser::new()),
          conflicts_with_all = ["record", "readahead", "rc", "late", "modules", "initramfs", "default", "kexec", "timeouts", "all"])]
    pub kernel_installed: Option<String>,
    /// For /usr/lib/kernel/install.d/91-bootprint.install, as kernel-install(8) runs it:
    /// the systemd-boot entry of kernel RELEASE as the manifest says (COMMAND is add or
    /// remove; ENTRY_DIR is kernel-install's $BOOT/$ENTRY_TOKEN/$KERNEL_VERSION)
    #[arg(long, num_args = 3, value_names = ["COMMAND", "RELEASE", "ENTRY_DIR"],
          conflicts_with_all = ["record", "readahead", "rc", "late", "modules", "initramfs", "default", "kexec", "timeouts", "all", "kernel_installed"])]
    pub kernel_install: Option<Vec<String>>,
}

#[derive(Debug, Args)]
pub struct Disable {
    /// The system's root directory
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// For /etc/kernel/postrm.d/zz-bootprint: remove only the image built for kernel RELEASE
    #[arg(long, value_name = "RELEASE", value_parser = text(StringValueParser::new()))]
    pub kernel_removed: Option<String>,
}

#[derive(Debug, Args)]
pub struct Status {
    /// The system's root directory (the running boot's /proc/cmdline is read only for /)
    #[arg(long, value_name = "DIR", default_value = "/", value_hint = clap::ValueHint::DirPath)]
    pub root: PathBuf,
    /// Print one JSON object instead of text (keys: docs/enable.md)
    #[arg(long)]
    pub json: bool,
}

/// The whole command: the derive's, with the list of every command line (verbs and sub-verbs,
/// with their options) added to the top-level help. Parse, help, man pages and completions
/// all use this.
pub fn command() -> Command {
    let cmd = Cli::command();
    let mut lines = String::from("Command lines (`bootprint VERB --help`: a verb's options):\n");
    lines.push_str(&cliutil::synopses("bootprint", &cmd));
    cmd.after_help(lines)
}

/// Parses a command line (the program name first).
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut cmd = command();
    let matches = cmd.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))
}

/// A value parser for a value that must be text: bytes that are not UTF-8 are an error naming
/// the argument and the value (clap's own parsers only say that some argument was not UTF-8),
/// and any error carries the verb's usage.
fn text<P: TypedValueParser>(inner: P) -> Text<P> {
    Text(inner)
}

#[derive(Clone)]
struct Text<P>(P);

impl<P: TypedValueParser> TypedValueParser for Text<P> {
    type Value = P::Value;

    fn parse_ref(
        &self,
        cmd: &Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let usage = || ContextValue::StyledStr(cmd.clone().render_usage());
        if value.to_str().is_some() {
            // clap's value errors leave the usage out; a wrong value shows it like a wrong
            // option does.
            return self.0.parse_ref(cmd, arg, value).map_err(|mut e| {
                if e.get(ContextKind::Usage).is_none() {
                    e.insert(ContextKind::Usage, usage());
                }
                e
            });
        }
        let mut e = clap::Error::new(ErrorKind::InvalidValue).with_cmd(cmd);
        let name = arg.map_or_else(String::new, ToString::to_string);
        e.insert(ContextKind::InvalidArg, ContextValue::String(name));
        e.insert(
            ContextKind::InvalidValue,
            ContextValue::String(value.to_string_lossy().into_owned()),
        );
        e.insert(
            ContextKind::Suggested,
            ContextValue::StyledStrs(vec![StyledStr::from("the value must be text (UTF-8)")]),
        );
        e.insert(ContextKind::Usage, usage());
        Err(e)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        self.0.possible_values()
    }
}

#[cfg(test)]
mod tests;
