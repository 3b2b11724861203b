//! The command line of `bootprint-testbed`, defined once with clap's derive API: parsing,
//! `--help` (the program's and each verb's), the usage in error messages, the man pages
//! (`bootprint-testbed man`) and the shell completions (`bootprint-testbed completions`) all
//! come from the types below. The choices of a verb (benchmarks from bench's registry, soak
//! configurations, fault cases, drive profiles) come from the module that runs them, so a
//! new one is offered, checked and completed without a change here. The top layer: it may
//! import every other (lib.rs).

use std::ffi::OsString;
use std::fs;
use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Args, Command, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::bench::registry::{Request, BENCHMARKS};
use crate::checks::soak::Until;
use crate::vm::image::Flavor;
use crate::vm::qemu::{BootOpts, Profile};
use crate::vm::util::{self, io_err};

/// What the top-level help ends with, after the list of command lines.
const ENVIRONMENT: &str = "\
Environment:
  BOOTPRINT_TESTBED_CACHE    the cache directory (default <repo>/testbed/cache)
  BOOTPRINT_TESTBED_RELEASE  the Debian release, as --release (default 12)
  BOOTPRINT_TESTBED_FIRMWARE the firmware, as --firmware (default bios)

Exit codes: 0 ok, 1 failure, 2 usage.";

/// bootprint's test bed: builds a Debian image, boots it under QEMU, measures
///
/// Builds a Debian 12 (or, with --release 13, 13) image, boots it under QEMU (TCG) with
/// Debian's own kernel, measures the boot, and runs the benchmarks and the real-boot tests
/// (docs/testbed.md). Runs as root.
#[derive(Debug, Parser)]
#[command(name = "bootprint-testbed", version, max_term_width = 100)]
#[command(after_help = ENVIRONMENT)]
// As before clap: an option given twice is not an error, the last one wins.
#[command(args_override_self = true)]
pub struct Cli {
    /// The Debian release of the image to build and boot: 12 (bookworm) or 13 (trixie)
    #[arg(long, global = true, value_parser = ["12", "13"])]
    pub release: Option<String>,
    /// The firmware every boot starts under: bios (SeaBIOS) or uefi (OVMF)
    #[arg(long, global = true, value_parser = ["bios", "uefi"])]
    pub firmware: Option<String>,
    #[command(subcommand)]
    pub verb: Verb,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Install the host packages the test bed needs (idempotent)
    Deps,
    /// Build the Debian image (cached) and install the current bootprint binaries
    ///
    /// The image is rebuilt only when its inputs change; the bootprint binaries in it are
    /// replaced when they changed.
    Image(Image),
    /// Boot the image once under QEMU and measure it
    ///
    /// Prints the host's wall time to `login:` (and the firmware's estimated share), logs in,
    /// waits for the recorder's trace with --record, powers off and copies the trace out of
    /// the guest's disk.
    Boot(Boot),
    /// Run a benchmark: variants interleaved after a discarded warm-up boot, medians, ratios
    ///
    /// The result goes to testbed/results/DATE-NAME.json.
    Bench(Bench),
    /// The real-boot smoke test: boot with --record, check the trace and the report
    Smoke(Build),
    /// The fault matrix: real boots with one thing broken on purpose
    ///
    /// Each boot must reach `login:` with a readable trace (or a clear reason why not).
    /// Without --all or --case only the cheap cases run.
    Faults(Faults),
    /// Boot one boot-path configuration many times in a row and count the failed boots
    ///
    /// A boot fails when it never reaches the real init (or the login), or when its kernel
    /// reported a stall on the way. A hang is diagnosed (QEMU's threads, the registers, SysRq
    /// task dumps) before QEMU stops. `soak list` lists the configurations.
    Soak(Soak),
    /// The guest-kernel stall behind issue 14's hangs, on demand
    ///
    /// Flips kernel.task_delayacct while two processes take copy-on-write faults; stops at the
    /// guest's first stall report (docs/testbed.md, "Kernel stalls").
    StallRepro(StallRepro),
    /// systemd's late units (docs/systemd.md): the machine after boot done must be the same
    ///
    /// A learning boot, a boot that defers what it learned, systemd's own boot and one with a
    /// bad state file.
    Late(Build),
    /// A lever made to cost switches itself off (record::judged)
    ///
    /// sysvinit with the runner forced slow, booted again and again from the disk the last
    /// boot left: it must compare with Debian's startpar and switch itself off within eight
    /// boots; then systemd with late units: a comparison boot defers nothing.
    SelfOff(Build),
    /// Debian's own sysvinit boot against one with every sysvinit lever of bootprint
    ///
    /// bootprint's initramfs, runner, module loader and readahead: the machine after boot
    /// done must be the same.
    Parity(Build),
    /// A reboot inside one QEMU, under sysvinit (LSB runner) and systemd, timed by the host
    ///
    /// Recorded boots that each reboot once, by `reboot` and by `bootprint reboot --kexec`,
    /// under each init: a planted service takes 4 s to stop and an unsynced file must
    /// survive; the serial log's host times give the request, the kernel's reset or kexec,
    /// the next kernel's start and its `login:` (docs/testbed.md, `reboot`).
    Reboot(Reboot),
    /// A planted fleet's boots in a real Prometheus: no VM
    ///
    /// Machines' boot histories backfilled (promtool), live machines served by real
    /// node_exporters from the textfiles `bootprint export` writes, the package's rules:
    /// the regression and quantile questions and the alerts must give exactly the planted
    /// answers (docs/testbed.md, `fleet`).
    Fleet(Fleet),
    /// Boots' OpenTelemetry traces in a real Jaeger: no VM
    ///
    /// Four copies of a real test-bed trace through `bootprint export --otlp`: two while the
    /// endpoint is down (queued), flushed once Jaeger is up, one at once, one over TLS with
    /// the check's CA; Jaeger's query API must return each boot's spans whole, at their
    /// times, none twice (docs/testbed.md, `otlp`). Needs scripts/build-jaeger.sh first.
    Otlp(Build),
    /// A lever judging itself: boot again and again from the disk the last boot left
    ///
    /// Every sysvinit lever on; shows what the module loader, readahead and the runner did on each boot
    /// and what they concluded.
    Verdict(Verdict),
    /// bootprint's initramfs: built in the guest, booted to login, a wrong root= stops cleanly
    ///
    /// `bench initramfs` measures it against Debian's initramfs-tools, dracut host-only and
    /// tiny-initramfs.
    Initramfs(Build),
    /// The Debian package on a machine GRUB boots: install, enable, kernel upgrade, disable,
    /// purge
    ///
    /// Seven boots through the firmware and GRUB from the image's own disk (derived once and
    /// cached: grub-pc, the kernel ABI before the image's), disable failing on purpose twice
    /// (update-grub, dpkg-divert) before it succeeds; see docs/testbed.md.
    Package(Package),
    /// The desktop image's Xfce session comes up, by autologin and by the password typed
    /// into the greeter
    ///
    /// Two boots of the desktop image (`--systemd`: desktop-systemd); each checks that the
    /// test user's session runs every program it starts (docs/testbed.md, `desktop`).
    Desktop(Desktop),
    /// Check a seek-modelling drive profile against published figures
    ///
    /// Serves a sparse file the size of the modelled drive through the seekdisk NBD server
    /// and reads it with QEMU's NBD client (qemu-io), one request at a time: random 4 KiB
    /// reads, sequential 1 MiB reads, short seeks, short skips, full strokes. Prints what
    /// was measured beside the model's figure and the published one (docs/testbed.md,
    /// "Drive profiles"). Boots no VM.
    Seekcheck(Seekcheck),
    /// Measure how much slower the guest's CPU is under emulation than the host's
    ///
    /// Runs the same single-threaded work (gzip, sort, sha256sum, a shell loop, starting
    /// processes, listing files) on the host
    /// and in a booted guest of the text image and prints each step's ratio and their median:
    /// the figure the time-scaled profiles (hdd-scaled, sd-scaled) slow their drive by
    /// (docs/testbed.md, "Time-scaled profiles"). One boot.
    Cpuscale(Cpuscale),
    /// Print the shell completions of bootprint-testbed to stdout
    Completions(cliutil::Completions),
    /// Write the man pages (bootprint-testbed.1, bootprint-testbed-boot.1, ...) into DIR
    Man(cliutil::Man),
}

/// `--no-cargo`, for every verb that installs the bootprint binaries into the image.
#[derive(Debug, Args)]
pub struct Build {
    /// Do not run `cargo build --release` first
    #[arg(long)]
    pub no_cargo: bool,
}

impl Build {
    /// Whether to build the binaries first.
    pub fn cargo(&self) -> bool {
        !self.no_cargo
    }
}

/// `reboot`'s arguments.
#[derive(Debug, Args)]
pub struct Reboot {
    /// Only this init (default: sysvinit, then systemd)
    #[arg(long, value_name = "NAME", value_parser = choices(crate::checks::reboot::init_names()))]
    pub init: Option<String>,
    #[command(flatten)]
    pub build: Build,
}

/// `fleet`'s arguments.
#[derive(Debug, Args)]
pub struct Fleet {
    /// Machines in the history
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub machines: usize,
    /// Of them, machines served live, each by its own node_exporter
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub live: usize,
    /// Days of history, one boot a day (10 at least: a machine keeps 10 traces)
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub days: u64,
    #[command(flatten)]
    pub build: Build,
}

/// `package`'s arguments.
#[derive(Debug, Args)]
pub struct Package {
    /// The .deb to test (`make deb` builds it)
    #[arg(long, value_name = "FILE")]
    pub deb: PathBuf,
    /// The boot loader of the machine (systemd-boot: with --firmware uefi)
    #[arg(long, value_enum, default_value = "grub")]
    pub loader: crate::vm::grub_disk::Loader,
    /// What builds the machine's initramfs (dracut: with systemd as init; run with GRUB so far)
    #[arg(long, value_enum, default_value = "initramfs-tools")]
    pub generator: crate::vm::grub_disk::Generator,
    /// The root file system (btrfs: on the subvolume `@`; btrfs and XFS with GRUB only)
    #[arg(long, value_enum, default_value = "ext4")]
    pub root: crate::vm::grub_disk::Root,
    #[command(flatten)]
    pub build: Build,
}

/// `desktop`'s arguments.
#[derive(Debug, Args)]
pub struct Desktop {
    /// The desktop-systemd image instead of the sysvinit one
    #[arg(long)]
    pub systemd: bool,
    /// Seconds (N) the greeter login waits at the greeter before typing, as a person does
    #[arg(long, value_name = "N", default_value_t = crate::vm::desktop_session::GREETER_WAIT_S)]
    pub greeter_wait: u32,
    /// Only this login (both by default)
    #[arg(long, value_parser = ["auto", "greeter"])]
    pub login: Option<String>,
    #[command(flatten)]
    pub build: Build,
}

/// Which image: `--desktop` or `--desktop-systemd`, else the text one.
#[derive(Debug, Args)]
pub struct FlavorArgs {
    /// The desktop image: the text one plus Xorg and LightDM (sysvinit and elogind)
    #[arg(long, conflicts_with = "desktop_systemd")]
    pub desktop: bool,
    /// The same desktop with systemd as init (Debian's default)
    #[arg(long)]
    pub desktop_systemd: bool,
}

impl FlavorArgs {
    pub fn flavor(&self) -> Flavor {
        if self.desktop_systemd {
            Flavor::DesktopSystemd
        } else if self.desktop {
            Flavor::Desktop
        } else {
            Flavor::Text
        }
    }
}

#[derive(Debug, Args)]
pub struct Image {
    #[command(flatten)]
    pub build: Build,
    #[command(flatten)]
    pub flavor: FlavorArgs,
}

/// What one boot is asked to do (`qemu::BootOpts`).
#[derive(Debug, Args)]
pub struct BootArgs {
    /// The drive's speed, as QEMU throttling
    #[arg(long, value_name = "PROFILE", default_value = "fast", value_enum)]
    pub profile: Profile,
    /// More kernel arguments after the base ones
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub append: Option<String>,
    /// Boot with the recorder (init=bootprint-boot) and copy its trace out
    #[arg(long)]
    pub record: bool,
    /// Copy the trace into DIR (default: a fresh directory under the cache's traces/)
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub trace_out: Option<PathBuf>,
    /// Keep the boot's disk (disk.raw in the run directory)
    #[arg(long)]
    pub keep_disk: bool,
    /// Start from a copy of DISK (one an earlier --keep-disk boot left) instead of the image
    #[arg(long, value_name = "DISK")]
    pub disk_from: Option<PathBuf>,
    /// Run FILE as root in the guest after login; its output goes to the run directory's
    /// guest.out
    #[arg(long, value_name = "FILE")]
    pub guest_script: Option<PathBuf>,
    /// Boot with this initramfs instead of the image's
    #[arg(long, value_name = "FILE")]
    pub initrd: Option<PathBuf>,
    /// fsync the disk copy before QEMU starts
    #[arg(long)]
    pub sync_disk: bool,
}

impl BootArgs {
    /// The options `boot`'s command line gives (the guest script's file is read here).
    pub fn boot_opts(&self) -> util::Result<BootOpts> {
        let guest_script = match &self.guest_script {
            Some(f) => Some(fs::read_to_string(f).map_err(|e| io_err("cannot read", f, e))?),
            None => None,
        };
        Ok(BootOpts {
            append: self.append.clone().unwrap_or_default(),
            record: self.record,
            trace_out: self.trace_out.clone(),
            keep_disk: self.keep_disk,
            disk_from: self.disk_from.clone(),
            guest_script,
            initrd: self.initrd.clone(),
            sync_disk: self.sync_disk,
            ..BootOpts::new(self.profile)
        })
    }
}

#[derive(Debug, Args)]
pub struct Boot {
    #[command(flatten)]
    pub opts: BootArgs,
    /// Boot another built image (a directory in the cache) than the current inputs'
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub image: Option<PathBuf>,
    /// Boot the aged copy of the root filesystem (docs/testbed.md, "Aged image")
    #[arg(long)]
    pub aged: bool,
    #[command(flatten)]
    pub flavor: FlavorArgs,
    /// Print the result as one JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct Bench {
    /// The benchmark
    #[arg(value_name = "NAME", value_parser = benchmarks())]
    pub name: String,
    /// Boots of each variant
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = positive)]
    pub runs: usize,
    /// The drive profile (default fast; readahead: each in turn, the seek-modelling ones too)
    #[arg(long, value_name = "PROFILE", value_enum)]
    pub profile: Option<Profile>,
    /// Print the result as one JSON object
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub build: Build,
    /// readahead: on another built image (a directory in the cache)
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub image: Option<PathBuf>,
    /// desktop: only this login (both by default)
    #[arg(long, value_parser = ["auto", "greeter"])]
    pub login: Option<String>,
    /// reboot: only these variants, comma-separated (the baseline, the first, always runs)
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub variants: Vec<String>,
    #[command(flatten)]
    pub flavor: FlavorArgs,
}

impl Bench {
    /// What the benchmark is asked.
    pub fn request(&self) -> Request {
        Request {
            runs: self.runs,
            profile: self.profile,
            json: self.json,
            cargo: self.build.cargo(),
            image: self.image.clone(),
            login: self.login.clone(),
            variants: self.variants.clone(),
            flavor: self.flavor.flavor(),
        }
    }
}

/// The registry's benchmarks, each with what it measures.
fn benchmarks() -> PossibleValuesParser {
    choices(BENCHMARKS.iter().map(|(name, entry)| (*name, entry.about)))
}

#[derive(Debug, Args)]
pub struct Faults {
    /// Every case, not only the cheap ones
    #[arg(long)]
    pub all: bool,
    /// Only this case
    #[arg(long, value_name = "NAME", value_parser = choices(crate::checks::faults::names()))]
    pub case: Option<String>,
    #[command(flatten)]
    pub build: Build,
}

/// `soak CONFIG`: `list` lists the configurations and takes no options ([`parse_from`]).
pub const SOAK_LIST: &str = "list";

#[derive(Debug, Args)]
pub struct Soak {
    /// The boot-path configuration, or `list`
    #[arg(value_name = "CONFIG", value_parser = soak_configs())]
    pub config: String,
    /// Boots in a row
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = positive)]
    pub boots: usize,
    /// Where a boot counts as arrived (default: the configuration's own)
    #[arg(long, value_name = "MARK", value_enum)]
    pub until: Option<Until>,
    /// Leave the first hung guest running (its QEMU monitor socket is printed)
    #[arg(long)]
    pub hold: bool,
    /// Each boot from a fresh fsynced disk copy, as the tests boot, instead of snapshot=on
    #[arg(long)]
    pub fresh_copy: bool,
    /// More kernel arguments for every boot, e.g. bootprint.delayacct=1
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub append: Option<String>,
    #[command(flatten)]
    pub build: Build,
}

fn soak_configs() -> PossibleValuesParser {
    let list = (SOAK_LIST, "list the configurations");
    let configs = crate::checks::soak::configs()
        .into_iter()
        .map(|c| (c.name, c.what));
    choices(std::iter::once(list).chain(configs))
}

#[derive(Debug, Args)]
pub struct StallRepro {
    /// The control: the same load, reading the switch instead of flipping it
    #[arg(long)]
    pub no_flip: bool,
    /// How long to flip it
    #[arg(long, value_name = "N", default_value_t = 120, value_parser = positive)]
    pub seconds: usize,
    #[command(flatten)]
    pub build: Build,
}

#[derive(Debug, Args)]
pub struct Cpuscale {
    /// Print the result as one JSON object
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub build: Build,
}

#[derive(Debug, Args)]
pub struct Seekcheck {
    /// The seek-modelling profile (both when not given)
    #[arg(long, value_name = "PROFILE", value_parser = seek_profiles())]
    pub profile: Option<String>,
    /// Reads of each pattern (the sequential and full-stroke ones read half as many)
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = positive)]
    pub reads: usize,
}

/// The profiles with a seekdisk model.
fn seek_profiles() -> PossibleValuesParser {
    use clap::ValueEnum;
    choices(
        Profile::value_variants()
            .iter()
            .filter(|p| !p.is_scaled() && p.seek_model().is_some())
            .map(|p| (p.name(), "")),
    )
}

#[derive(Debug, Args)]
pub struct Verdict {
    /// Boots in a row
    #[arg(long, value_name = "N", default_value_t = 11, value_parser = positive)]
    pub boots: usize,
    #[command(flatten)]
    pub build: Build,
}

/// The whole command: the derive's, with every verb's command line added to the top-level
/// help. Parsing, help and completions use this.
pub fn command() -> Command {
    let cmd = Cli::command();
    let mut help =
        String::from("Command lines (`bootprint-testbed VERB --help`: a verb's options):\n");
    help.push_str(&cliutil::synopses("bootprint-testbed", &cmd));
    help.push('\n');
    help.push_str(ENVIRONMENT);
    cmd.after_help(help)
}

/// Parses a command line (the program name first). `soak list` with options is an error.
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let mut cmd = command();
    let matches = match cmd.try_get_matches_from_mut(&args) {
        Ok(m) => m,
        Err(e) => return Err(with_usage(e, &mut cmd, &args)),
    };
    if let Some(("soak", m)) = matches.subcommand() {
        if let Some(soak) = cmd.find_subcommand_mut("soak") {
            soak_list_alone(soak, m)?;
        }
    }
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))
}

/// A wrong command line's error with the verb's usage: clap shows it for a wrong option but
/// not for a wrong or missing value. The verb is the first argument (the program has no
/// options of its own but --help and --version).
fn with_usage(mut e: clap::Error, cmd: &mut Command, args: &[OsString]) -> clap::Error {
    let verb = args.get(1).and_then(|v| v.to_str());
    if e.exit_code() == 2 && e.get(ContextKind::Usage).is_none() {
        if let Some(sub) = verb.and_then(|v| cmd.find_subcommand_mut(v)) {
            let usage = sub.render_usage();
            e.insert(ContextKind::Usage, ContextValue::StyledStr(usage));
        }
    }
    e
}

/// `soak list` takes no options (before clap, anything after it was an error too).
fn soak_list_alone(soak: &mut Command, m: &ArgMatches) -> Result<(), clap::Error> {
    if m.get_one::<String>("config").map(String::as_str) != Some(SOAK_LIST) {
        return Ok(());
    }
    let given = m
        .ids()
        .filter(|id| m.value_source(id.as_str()) == Some(ValueSource::CommandLine))
        .find_map(|id| {
            soak.get_arguments()
                .find(|a| a.get_id() == id)
                .and_then(Arg::get_long)
        });
    match given {
        Some(long) => Err(soak.error(
            ErrorKind::ArgumentConflict,
            format!("`soak {SOAK_LIST}` takes no options, got '--{long}'"),
        )),
        None => Ok(()),
    }
}

/// A count that must be at least 1 (`--runs`, `--boots`, `--seconds`).
fn positive(s: &str) -> Result<usize, String> {
    s.parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| "expected a positive integer".into())
}

/// One of a list of names, each with its help (shown by `VERB --help` and the completions).
fn choices(list: impl IntoIterator<Item = (&'static str, &'static str)>) -> PossibleValuesParser {
    PossibleValuesParser::new(
        list.into_iter()
            .map(|(name, help)| PossibleValue::new(name).help(help)),
    )
}

pub mod completions;
pub mod man;

#[cfg(test)]
mod tests;
