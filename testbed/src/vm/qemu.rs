//! `boot`: one boot of the image under QEMU (TCG), measured from QEMU start to the serial
//! `login:` prompt, then a login, a wait for the recorder's trace, `poweroff`, and the trace
//! copied out of the guest's disk with debugfs. With `BootOpts::reboot`, the guest reboots
//! once inside the same QEMU before that, and the serial log times the cycle (`vm::cycle`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::vm::cycle::{self, CycleStages, REQUEST_MARK};
use crate::vm::hostload::{self, HostCpu};
use crate::vm::image::{Image, GUEST_BOOT_BIN, ROOT_PASSWORD};
use crate::vm::seekdisk::SeekDisk;
use crate::vm::serial::{
    clock_offset_before, firmware_estimate, kernel_fault, kernel_fault_in_log, Console, Seen,
    PANIC_MARK,
};
use crate::vm::util::{
    fresh_dir, io_err, output_logged, run_logged, tail, Error, Lock, Paths, Result,
};

/// Base kernel command line; `loglevel=` after `quiet` brings kernel lines to the console
/// so the firmware time can be estimated (see docs/testbed.md); `sysrq_always_enabled` lets
/// a hung boot's diagnosis ask the kernel for its tasks (SysRq l, t, w).
pub const BASE_APPEND: &str =
    "console=ttyS0 root=/dev/vda rw quiet loglevel=6 sysrq_always_enabled";
const LOGIN_TIMEOUT: Duration = Duration::from_secs(600);
// Covers the recorder's hard limit (240 s of uptime by default) plus writing the trace.
const TRACE_TIMEOUT_S: u64 = 300;
/// How long a `BootOpts::guest_script` may run.
const GUEST_SCRIPT_TIMEOUT_S: u64 = 3600;
const EXIT_TIMEOUT: Duration = Duration::from_secs(90);
/// What sulogin's prompt says (util-linux: "Give root password for maintenance", or "Enter
/// root password for system maintenance").
const MAINTENANCE_MARK: &str = "root password for";
/// How long a reboot cycle's reset may take, from the kernel's restart line to the next
/// kernel's banner, before it is diagnosed: about 1 s, up to 8 s with the host busy, but
/// once 252 s (2026-11-29, Debian 13 under TCG).
const RESET_SLOW: Duration = Duration::from_secs(60);
const TRACE_ROOT: &str = "/var/log/bootprint";
/// Where `RebootOpts::copy_log_dir` puts the guest's /var/log/bootprint, in the run directory.
const LOG_DIR_COPY: &str = "var-log-bootprint";

/// Disk speed stand-ins, as QEMU drive throttling (`--profile`).
#[derive(Clone, Copy, Debug, PartialEq, clap::ValueEnum)]
pub enum Profile {
    /// No throttling
    Fast,
    /// An SD card: 20 MB/s, 400 I/O operations a second
    Sd,
    /// A hard disk: 80 MB/s, 100 I/O operations a second
    Hdd,
    /// A 5400 rpm laptop disk with a head: each request pays its seek, rotation and transfer
    /// (the seekdisk NBD server)
    HddSeek,
    /// A class-10 SD card: a cost per request that does not continue the last, 42 MB/s
    /// (the seekdisk NBD server)
    SdSeek,
    /// hdd-seek slowed by the emulation's CPU slowdown (`hostload::tcg_slowdown`): the disk as slow
    /// beside the guest's CPU as the real one is beside the host's
    HddScaled,
    /// sd-seek slowed by the emulation's CPU slowdown (`hostload::tcg_slowdown`)
    SdScaled,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Fast => "fast",
            Profile::Sd => "sd",
            Profile::Hdd => "hdd",
            Profile::HddSeek => "hdd-seek",
            Profile::SdSeek => "sd-seek",
            Profile::HddScaled => "hdd-scaled",
            Profile::SdScaled => "sd-scaled",
        }
    }

    /// A profile whose drive is slowed by [`hostload::tcg_slowdown`] (derived, so not checked
    /// against published figures by `seekcheck`).
    pub fn is_scaled(self) -> bool {
        matches!(self, Profile::HddScaled | Profile::SdScaled)
    }

    /// What the modelled drive is, in `[readahead] media`'s words, where the guest's virtio
    /// disk (which says it rotates on every profile) would say otherwise: a card for the SD
    /// profiles (a real one is an `mmcblk` device), solid state for `fast` (the host's own
    /// file, an SSD's speed). `None`: it rotates, as the disk says.
    pub fn media(self) -> Option<&'static str> {
        match self {
            Profile::Fast => Some("solid-state"),
            Profile::Sd | Profile::SdSeek | Profile::SdScaled => Some("card"),
            Profile::Hdd | Profile::HddSeek | Profile::HddScaled => None,
        }
    }

    /// The drive the seekdisk NBD server models for this profile (None: QEMU serves the file
    /// itself, with `limits` as its throttle).
    pub fn seek_model(self) -> Option<crate::vm::seekmodel::Model> {
        use crate::vm::seekmodel::{Model, LAPTOP_5400, SD_CLASS10};
        match self {
            Profile::HddSeek => Some(Model::Head(LAPTOP_5400)),
            Profile::SdSeek => Some(Model::Flash(SD_CLASS10)),
            Profile::HddScaled => Some(Model::Head(LAPTOP_5400).slowed(hostload::tcg_slowdown())),
            Profile::SdScaled => Some(Model::Flash(SD_CLASS10).slowed(hostload::tcg_slowdown())),
            _ => None,
        }
    }

    /// The drive's sequential limit in bytes per second, if it has one (the throttle's, or
    /// the modelled drive's media rate).
    pub fn bandwidth(self) -> Option<f64> {
        match (self.limits(), self.seek_model()) {
            (Some((bps, _)), _) => Some(bps as f64),
            (None, Some(m)) => m.rate(),
            _ => None,
        }
    }

    /// (bytes per second, I/O operations per second); the figures are explained in
    /// docs/testbed.md.
    pub fn limits(self) -> Option<(u64, u64)> {
        match self {
            Profile::Fast
            | Profile::HddSeek
            | Profile::SdSeek
            | Profile::HddScaled
            | Profile::SdScaled => None,
            Profile::Sd => Some((20_000_000, 400)),
            Profile::Hdd => Some((80_000_000, 100)),
        }
    }

    /// The `-drive` option suffix.
    pub fn drive_opts(self) -> String {
        match self.limits() {
            None => String::new(),
            Some((bps, iops)) => {
                format!(",throttling.bps-total={bps},throttling.iops-total={iops}")
            }
        }
    }
}

/// Put before the append of a boot that turns the runner or late units on: a check or
/// benchmark booting one disk again and again measures the lever on every boot, so they
/// never compare (nor judge) unless the append asks again (`bootprint.rc_compare_every=5`:
/// the last word wins).
pub const NO_JUDGING: &str = "bootprint.rc_compare_every=0 bootprint.late_compare_every=0";

/// What one boot is asked to do.
#[derive(Clone, Debug)]
pub struct BootOpts {
    pub profile: Profile,
    /// Extra kernel arguments after the base ones.
    pub append: String,
    pub record: bool,
    pub trace_out: Option<PathBuf>,
    pub keep_disk: bool,
    /// Start from a copy of this disk (one kept by an earlier `--keep-disk` boot) instead of
    /// the image, so state a boot left (a learned readahead pack, ...) carries into the next.
    pub disk_from: Option<PathBuf>,
    /// A shell script run as root in the guest after login (and after the trace, with
    /// `record`); its output (stdout and stderr) is kept in `BootResult::guest_output`.
    pub guest_script: Option<String>,
    /// Boot with this initramfs instead of the image's (`--initrd FILE`).
    pub initrd: Option<PathBuf>,
    /// Boot this kernel instead of the image's (with `initrd`: the GRUB disk's setup boot
    /// runs the kernel installed on that disk, whose modules are there).
    pub kernel: Option<PathBuf>,
    /// fsync the fresh disk copy before QEMU starts: otherwise the guest's first flush (an
    /// ext4 rw mount writes its superblock) waits ~1.5 s for the host to write back the
    /// copy (measured in docs/initramfs.md).
    pub sync_disk: bool,
    /// While the guest script runs, a stall report from the guest kernel (soft lockup, RCU
    /// stall) ends the boot at once (QEMU killed, `BootResult::kernel_stall` set) instead of
    /// waiting out the script's limit: for scripts that may wedge the guest on purpose.
    pub stop_on_stall: bool,
    /// Boot as a PC does: the firmware (SeaBIOS) loads the boot loader from the disk, which
    /// picks the kernel, initramfs and command line (the package test's GRUB disk); no
    /// `-kernel`, and `append`, `record`, `initrd`, `root` do not apply.
    pub firmware: bool,
    /// The root device on the command line instead of `/dev/vda` (`/dev/vda1` on a disk
    /// with a partition table).
    pub root: Option<String>,
    /// Where the root file system starts on the disk, in bytes (the trace is copied out from
    /// there): 0 for the image's bare file system, 1 MiB on the GRUB disk.
    pub fs_offset: u64,
    /// How long to wait after the login for the recorder's trace, s (a desktop's session is
    /// recorded to its desktop ready).
    pub trace_wait_s: u64,
    /// A second virtio disk (the guest's `vdb`), this file itself, not a copy: the GRUB
    /// disk's setup boot builds a root on LVM there, which the host cannot.
    pub second_disk: Option<PathBuf>,
    /// With `record`: copy the trace out of the disk after the boot. Off where the host
    /// cannot read the root (LUKS): the wait for the trace stays, the guest reads it.
    pub copy_trace: bool,
    /// Reboot the guest once inside the same QEMU (started without `-no-reboot`) and time
    /// the cycle; `None`: one boot, QEMU's arguments unchanged.
    pub reboot: Option<RebootOpts>,
    /// End with the init's own `poweroff` (its shutdown runs, and is recorded) instead of
    /// `poweroff -f` after a sync.
    pub clean_poweroff: bool,
}

/// A reboot cycle inside one QEMU: after the first login (and its trace, with `record`) the
/// `before` script, then the request, then the second boot's login (and its trace), the
/// `after` script and the power-off. With `-kernel` the reset boots the same kernel, initrd
/// and command line again; with `BootOpts::firmware` the disk's loader again. Exclusive
/// with `BootOpts::guest_script` (which boot would it run in?).
#[derive(Clone, Debug)]
pub struct RebootOpts {
    /// The guest's command that asks for the reboot: `reboot`, `init 6`, `systemctl reboot`.
    pub command: String,
    /// A shell script run as root in the first boot, just before the request; its output is
    /// `BootResult::before_reboot_output`.
    pub before: Option<String>,
    /// A shell script run as root after the second boot's login (and trace); its output is
    /// `BootResult::after_reboot_output`.
    pub after: Option<String>,
    /// Copy the guest's whole /var/log/bootprint out of the disk after the power-off
    /// (`BootResult::log_dir`): both boots' traces and whatever the shutdown left there.
    pub copy_log_dir: bool,
}

impl Default for RebootOpts {
    fn default() -> RebootOpts {
        RebootOpts {
            command: "reboot".to_string(),
            before: None,
            after: None,
            copy_log_dir: false,
        }
    }
}

impl BootOpts {
    pub fn new(profile: Profile) -> BootOpts {
        BootOpts {
            profile,
            append: String::new(),
            record: false,
            trace_out: None,
            keep_disk: false,
            disk_from: None,
            guest_script: None,
            initrd: None,
            kernel: None,
            sync_disk: false,
            stop_on_stall: false,
            firmware: false,
            root: None,
            fs_offset: 0,
            trace_wait_s: TRACE_TIMEOUT_S,
            second_disk: None,
            copy_trace: true,
            reboot: None,
            clean_poweroff: false,
        }
    }

    /// The whole kernel command line.
    pub fn cmdline(&self) -> String {
        let mut s = match &self.root {
            Some(dev) => BASE_APPEND.replace("root=/dev/vda ", &format!("root={dev} ")),
            None => BASE_APPEND.to_string(),
        };
        let judged_on = ["bootprint.rc=1", "bootprint.late=1", "bootprint.all=1"]
            .iter()
            .any(|w| self.append.split_whitespace().any(|a| a == *w));
        if judged_on {
            s.push(' ');
            s.push_str(NO_JUDGING);
        }
        if !self.append.trim().is_empty() {
            s.push(' ');
            s.push_str(self.append.trim());
        }
        if self.record {
            s.push_str(&format!(" init={GUEST_BOOT_BIN}"));
        }
        s
    }
}

/// What one boot measured.
#[derive(Clone, Debug)]
pub struct BootResult {
    pub profile: Profile,
    pub append: String,
    pub cmdline: String,
    pub host_login_s: f64,
    pub firmware_load_s: Option<f64>,
    /// Host time minus guest time near `login:` (see `serial::clock_offset_before`).
    pub clock_offset_s: Option<f64>,
    pub boot_id: Option<String>,
    pub trace_dir: Option<PathBuf>,
    pub serial_log: PathBuf,
    pub qemu_exit: &'static str,
    pub disk_copy_s: f64,
    /// What `BootOpts::guest_script` printed (carriage returns removed).
    pub guest_output: Option<String>,
    /// With `BootOpts::stop_on_stall`: the guest kernel's stall report that ended the boot.
    pub kernel_stall: Option<String>,
    /// What the host's CPUs did from QEMU's start to `login:` (None: counters unreadable).
    pub host_cpu: Option<HostCpu>,
    /// The first attempt's guest kernel died of what the boot cannot have caused (before it
    /// ran any program, or on a stale int3; the report's first line); this result is the
    /// second attempt's (`boot`).
    pub kernel_fault_retried: Option<String>,
    /// With `BootOpts::reboot`: the cycle's stages on the host's clock. `boot_id` and
    /// `trace_dir` are then the second boot's, `host_login_s`, `firmware_load_s` and
    /// `clock_offset_s` the first's, and `guest_output` is None (`after_reboot_output`).
    pub cycle: Option<CycleStages>,
    /// With `BootOpts::reboot`: the first boot's id.
    pub first_boot_id: Option<String>,
    /// What `RebootOpts::before` printed (carriage returns removed).
    pub before_reboot_output: Option<String>,
    /// What `RebootOpts::after` printed (carriage returns removed).
    pub after_reboot_output: Option<String>,
    /// The guest's /var/log/bootprint, copied out (`RebootOpts::copy_log_dir`).
    pub log_dir: Option<PathBuf>,
}

impl BootResult {
    /// The boot's disk, when `--keep-disk` kept it (beside the serial log in the run
    /// directory).
    pub fn kept_disk(&self) -> Option<PathBuf> {
        self.serial_log
            .parent()
            .map(|d| d.join("disk.raw"))
            .filter(|d| d.is_file())
    }

    pub fn to_json(&self) -> Value {
        json!({
            "profile": self.profile.name(),
            "append": self.append,
            "cmdline": self.cmdline,
            "host_login_s": round3(self.host_login_s),
            "firmware_load_s": self.firmware_load_s.map(round3),
            "clock_offset_s": self.clock_offset_s.map(round3),
            "boot_id": self.boot_id,
            "trace_dir": self.trace_dir.as_deref().map(crate::vm::util::shown_path),
            "serial_log": crate::vm::util::shown_path(&self.serial_log),
            "qemu_exit": self.qemu_exit,
            "disk_copy_s": round3(self.disk_copy_s),
            "host_cpu": self.host_cpu.as_ref().map(HostCpu::to_json),
            "kernel_fault_retried": self.kernel_fault_retried,
            "scaled_drive_slowdown": self.profile.is_scaled().then(hostload::tcg_slowdown),
            "cycle": self.cycle.as_ref().map(CycleStages::to_json),
            "first_boot_id": self.first_boot_id,
            "log_dir": self.log_dir.as_deref().map(crate::vm::util::shown_path),
        })
    }

    pub fn print_text(&self) {
        println!("profile          {}", self.profile.name());
        println!("cmdline          {}", self.cmdline);
        println!(
            "host_login_s     {:.2}  (QEMU start to `login:`)",
            self.host_login_s
        );
        match self.firmware_load_s {
            Some(f) => println!("firmware_load_s  {f:.2}  (estimate: QEMU start to kernel start)"),
            None => println!("firmware_load_s  -  (no kernel-timestamped lines on the console)"),
        }
        if let Some(t) = &self.trace_dir {
            println!("trace_dir        {}", t.display());
        }
        println!("serial_log       {}", self.serial_log.display());
        println!("qemu_exit        {}", self.qemu_exit);
        if let Some(c) = &self.cycle {
            println!(
                "reboot cycle     shutdown {:.2} s, reset to kernel {:.2} s, kernel to login \
                 {:.2} s, whole {:.2} s",
                c.shutdown_s(),
                c.reset_to_kernel_s(),
                c.kernel_to_login_s(),
                c.whole_s()
            );
        }
    }
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Kills QEMU if the boot driver returns early with an error.
struct Qemu(Child);

impl Drop for Qemu {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// One boot, start to power-off. Progress goes to stderr, so stdout carries only the result.
pub fn boot(paths: &Paths, img: &Image, opts: &BootOpts) -> Result<BootResult> {
    if opts.reboot.is_some() && opts.guest_script.is_some() {
        return Err(Error::fail(
            "a reboot cycle runs RebootOpts::before and ::after, not BootOpts::guest_script",
        ));
    }
    if let Some(out) = opts.trace_out.as_ref().filter(|o| o.exists()) {
        // Found out now rather than after a boot of a minute or more.
        return Err(Error::fail(format!(
            "--trace-out {} exists already; remove it or choose another",
            out.display()
        )));
    }
    let source = opts.disk_from.as_ref().unwrap_or(&img.rootfs);
    if !source.is_file() {
        return Err(Error::fail(format!(
            "--disk-from {}: no such disk image",
            source.display()
        )));
    }
    let run = fresh_dir(&paths.cache.join("runs"))?;
    let disk = run.join("disk.raw");
    // Not while another test bed is rebuilding the image or replacing its binaries.
    let lock = Lock::acquire(&img.lock_path())?;
    let t = Instant::now();
    // A fresh copy per boot: every boot starts from the same state, and the guest's writes
    // stay readable afterwards.
    copy_disk(source, &disk, opts.sync_disk, &run)?;
    let disk_copy_s = t.elapsed().as_secs_f64();
    drop(lock);
    let mut result = boot_disk(paths, img, opts, &run, &disk, disk_copy_s);
    if result.is_err() {
        // A guest kernel that died of something the boot cannot have caused is the
        // emulator's or the kernel's failure: boot once more, from a fresh copy, and say so.
        if let Some(fault) = set_aside_kernel_fault(&run, "boot") {
            result = copy_disk(source, &disk, opts.sync_disk, &run)
                .and_then(|_| boot_disk(paths, img, opts, &run, &disk, disk_copy_s))
                .map(|mut r| {
                    r.kernel_fault_retried = Some(fault);
                    r
                });
        }
    }
    if opts.keep_disk {
        eprintln!("boot: disk kept at {}", disk.display());
    } else {
        let _ = fs::remove_file(&disk);
    }
    let result = result?;
    let _ = fs::write(run.join("result.json"), result.to_json().to_string() + "\n");
    Ok(result)
}

/// After a failed boot in the run directory `run`: when its serial log shows the guest
/// kernel dying of what the boot cannot have caused (`serial::KernelFault::not_the_boots`:
/// before it ran any program, or on a stale int3), the log is kept as
/// `serial-kernel-fault.log`, stderr says so (prefixed `who:`), and the report's first line
/// is returned: the caller boots once more. Else `None`: the failure is the boot's own.
pub fn set_aside_kernel_fault(run: &Path, who: &str) -> Option<String> {
    let serial_log = run.join("serial.log");
    let fault = kernel_fault_in_log(&serial_log)?;
    let why = fault.not_the_boots()?;
    let kept = run.join("serial-kernel-fault.log");
    let _ = fs::rename(&serial_log, &kept);
    eprintln!(
        "{who}: the guest kernel died {why} ({}; serial log {}): booting again once",
        fault.line,
        kept.display()
    );
    Some(fault.line)
}

/// Copies the boot's disk from `source` (sparse; synced to the host's disk with `sync`).
fn copy_disk(source: &Path, disk: &Path, sync: bool, run: &Path) -> Result<()> {
    run_logged(
        Command::new("cp")
            .arg("--sparse=always")
            .arg(source)
            .arg(disk),
        &run.join("host.log"),
    )?;
    if sync {
        fs::File::open(disk)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_err("cannot sync", disk, e))?;
    }
    Ok(())
}

/// The machine's firmware (`--firmware`, or `BOOTPRINT_TESTBED_FIRMWARE`): a PC BIOS
/// (SeaBIOS, QEMU's default) or UEFI (OVMF, from Debian's `ovmf`, without Secure Boot and
/// SMM, as its `60-edk2-x86_64.json` describes it for QEMU's `pc` machine).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Firmware {
    Bios,
    Uefi,
}

/// OVMF's code (read-only) and the template of its variable store, in Debian 12 and 13.
pub const OVMF_CODE: &str = "/usr/share/OVMF/OVMF_CODE_4M.fd";
pub const OVMF_VARS: &str = "/usr/share/OVMF/OVMF_VARS_4M.fd";

impl Firmware {
    pub const ENV: &'static str = "BOOTPRINT_TESTBED_FIRMWARE";

    pub fn parse(s: &str) -> Option<Firmware> {
        match s {
            "bios" => Some(Firmware::Bios),
            "uefi" => Some(Firmware::Uefi),
            _ => None,
        }
    }

    pub fn from_env() -> Result<Firmware> {
        crate::vm::util::env_choice(
            Firmware::ENV,
            Firmware::parse,
            "bios or uefi",
            Firmware::Bios,
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Firmware::Bios => "bios",
            Firmware::Uefi => "uefi",
        }
    }

    /// QEMU's arguments for it. OVMF's variables start from Debian's template in every boot
    /// (`snapshot=on`: the guest's writes vanish with QEMU), as on a machine whose NVRAM was
    /// never written: it boots the disk's `\EFI\BOOT\BOOTX64.EFI` or QEMU's `-kernel`.
    fn qemu_args(self) -> Result<Vec<String>> {
        match self {
            Firmware::Bios => Ok(vec![]),
            Firmware::Uefi => {
                for f in [OVMF_CODE, OVMF_VARS] {
                    if !Path::new(f).is_file() {
                        return Err(Error::fail(format!(
                            "no {f}: UEFI boots need Debian's ovmf (run `bootprint-testbed deps`)"
                        )));
                    }
                }
                Ok(vec![
                    "-drive".into(),
                    format!("if=pflash,format=raw,unit=0,readonly=on,file={OVMF_CODE}"),
                    "-drive".into(),
                    format!("if=pflash,format=raw,unit=1,snapshot=on,file={OVMF_VARS}"),
                ])
            }
        }
    }
}

/// QEMU as the test bed runs it: TCG, 2 vCPUs, 1 GiB, no display, the serial console on
/// stdio, `firmware`, `kernel` (the image's, mostly) with `initrd` and `cmdline`; the caller
/// adds the drive.
pub fn qemu_command(
    img: &Image,
    firmware: Firmware,
    kernel: &Path,
    initrd: &Path,
    cmdline: &str,
) -> Result<Command> {
    qemu_command_with(img, firmware, kernel, initrd, cmdline, true)
}

/// [`qemu_command`], with `-no-reboot` only when `no_reboot` (a reboot cycle needs QEMU to
/// reset the machine on the guest's reboot rather than exit).
fn qemu_command_with(
    img: &Image,
    firmware: Firmware,
    kernel: &Path,
    initrd: &Path,
    cmdline: &str,
    no_reboot: bool,
) -> Result<Command> {
    let mut cmd = firmware_command_with(img, firmware, no_reboot)?;
    cmd.arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(initrd)
        .arg("-append")
        .arg(cmdline);
    Ok(cmd)
}

/// QEMU without a kernel: the firmware (SeaBIOS or OVMF) boots from the disk the caller
/// adds, as a PC does (`BootOpts::firmware`); [`qemu_command`] adds the image's kernel.
pub fn firmware_command(img: &Image, firmware: Firmware) -> Result<Command> {
    firmware_command_with(img, firmware, true)
}

/// [`firmware_command`], with `-no-reboot` only when `no_reboot` (in the same place, so a
/// boot without a reboot cycle has the same arguments as before there were cycles).
fn firmware_command_with(img: &Image, firmware: Firmware, no_reboot: bool) -> Result<Command> {
    let mut cmd = Command::new("qemu-system-x86_64");
    cmd.args(["-accel", "tcg", "-smp", "2", "-m", "1024"])
        .args(["-nodefaults", "-display", "none"])
        .args(if no_reboot {
            &["-no-reboot"][..]
        } else {
            &[][..]
        })
        .args(["-monitor", "none"])
        .args(["-serial", "stdio"])
        // A desktop image's Xorg needs a display: QEMU's standard VGA (the guest's bochs
        // DRM driver); `-display none` keeps it headless on the host.
        .args(if img.desktop {
            &["-device", "VGA"][..]
        } else {
            &[][..]
        })
        .args(firmware.qemu_args()?);
    Ok(cmd)
}

/// Gives the QEMU of `cmd` a monitor on the Unix socket `socket` (a stale one removed
/// first), for the diagnosis of a hung boot (`hang::diagnose_hang`).
pub fn add_monitor(cmd: &mut Command, socket: &Path) {
    let _ = fs::remove_file(socket);
    cmd.arg("-monitor")
        .arg(format!("unix:{},server=on,wait=off", socket.display()));
}

/// Starts QEMU (`cmd`, stderr discarded) with its serial console on stdio, logged to
/// `serial_log`; returns the process, the console and the moment it started.
pub fn spawn_with_console(
    cmd: &mut Command,
    serial_log: &Path,
) -> Result<(Child, Console, Instant)> {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::fail(format!("cannot start qemu-system-x86_64: {e}")))?;
    let con = Console::new(
        child.stdin.take().expect("piped"),
        child.stdout.take().expect("piped"),
        serial_log,
        start,
    )?;
    Ok((child, con, start))
}

fn boot_disk(
    paths: &Paths,
    img: &Image,
    opts: &BootOpts,
    run: &Path,
    disk: &Path,
    disk_copy_s: f64,
) -> Result<BootResult> {
    let cmdline = kernel_cmdline(img, opts);
    let serial_log = run.join("serial.log");
    let qemu_log = run.join("qemu.log");
    let qemu_err =
        fs::File::create(&qemu_log).map_err(|e| io_err("cannot create", &qemu_log, e))?;
    let no_reboot = opts.reboot.is_none();
    let mut cmd = if opts.firmware {
        firmware_command_with(img, paths.firmware, no_reboot)?
    } else {
        qemu_command_with(
            img,
            paths.firmware,
            opts.kernel.as_ref().unwrap_or(&img.kernel),
            opts.initrd.as_ref().unwrap_or(&img.initrd),
            &cmdline,
            no_reboot,
        )?
    };
    let seek = attach_disk(&mut cmd, opts, disk, run)?;
    // A monitor for the diagnosis of a boot that never reaches the login.
    let monitor = run.join("monitor.sock");
    add_monitor(&mut cmd, &monitor);
    let _ = fs::write(run.join("qemu.cmd"), crate::vm::util::describe(&cmd) + "\n");
    let start = Instant::now();
    let (mut qemu, con) = start_qemu(&mut cmd, qemu_err, &serial_log, start)?;
    let at_start = hostload::Snapshot::take(qemu.0.id());
    eprintln!(
        "boot: QEMU started ({}), waiting for login: (serial log {})",
        opts.profile.name(),
        serial_log.display()
    );
    let mut guest = Guest {
        con,
        start,
        serial_log: &serial_log,
        qemu_log: &qemu_log,
        seek: seek.as_ref(),
    };
    let hung = Hung {
        qemu: &qemu,
        monitor: &monitor,
        img,
        disk,
        run,
    };
    let (login_end, host_login_s) = guest.wait_for_login(&hung, 0, false)?;
    let host_cpu = at_start.until(&hostload::Snapshot::take(qemu.0.id()));
    eprintln!("boot: login: after {host_login_s:.2} s");
    let mut pos = guest.log_in(login_end)?;
    let mut boot_id;
    (boot_id, pos) = guest.read_boot_id(pos)?;
    let mut trace_ready = false;
    if opts.record {
        (trace_ready, pos) = guest.wait_for_trace(opts, boot_id.as_deref(), pos)?;
    }
    let mut first_boot_id = None;
    let mut before_reboot_output = None;
    if let Some(reboot) = &opts.reboot {
        if let Some(script) = &reboot.before {
            let (text, _, end) = guest.run_script(script, false, &run.join("before.out"), pos)?;
            before_reboot_output = Some(text);
            pos = end;
        }
        pos = guest.request_reboot(&reboot.command, pos)?;
        guest.watch_reset(&hung, pos);
        let (login_end, t) = guest.wait_for_login(&hung, pos, true)?;
        eprintln!("boot: login: again after the reboot, {t:.2} s after QEMU's start");
        pos = guest.log_in(login_end)?;
        first_boot_id = boot_id;
        (boot_id, pos) = guest.read_boot_id(pos)?;
        if opts.record {
            (trace_ready, pos) = guest.wait_for_trace(opts, boot_id.as_deref(), pos)?;
        }
    }
    // The last script: the boot's, or after a reboot cycle the second boot's.
    let last_script = match &opts.reboot {
        Some(r) => r.after.as_ref().map(|s| (s, "after.out")),
        None => opts.guest_script.as_ref().map(|s| (s, "guest.out")),
    };
    let (last_output, kernel_stall) = match last_script {
        Some((script, out)) => {
            let (text, stall, _) =
                guest.run_script(script, opts.stop_on_stall, &run.join(out), pos)?;
            (Some(text), stall)
        }
        None => (None, None),
    };
    let (guest_output, after_reboot_output) = match opts.reboot {
        Some(_) => (None, last_output),
        None => (last_output, None),
    };
    let qemu_exit = power_off(
        &mut qemu,
        &mut guest.con,
        kernel_stall.is_some(),
        opts.clean_poweroff,
    )?;
    if let Some(s) = &seek {
        report_seekdisk(s, run)?;
    }
    let Guest { con, .. } = guest;
    drop(qemu);
    drop(seek);
    let lines = con.finish();
    let cycle = match opts.reboot {
        Some(_) => Some(
            cycle::stages(&lines)
                .map_err(|e| Error::fail(format!("{e} (serial log {})", serial_log.display())))?,
        ),
        None => None,
    };
    // The first boot's lines: after a reboot the next kernel's lines would say nothing of
    // this boot's firmware.
    let first_boot = match &cycle {
        Some(c) => &lines[..lines.partition_point(|(h, _)| *h < c.request_s)],
        None => &lines[..],
    };
    let firmware_load_s = firmware_estimate(first_boot);
    let clock_offset_s = clock_offset_before(first_boot, host_login_s);
    let (trace_dir, log_dir) = copy_out(paths, opts, run, disk, boot_id.as_deref(), trace_ready)?;
    Ok(BootResult {
        profile: opts.profile,
        append: opts.append.clone(),
        cmdline,
        host_login_s,
        firmware_load_s,
        clock_offset_s,
        boot_id,
        trace_dir,
        serial_log,
        qemu_exit,
        disk_copy_s,
        guest_output,
        kernel_stall,
        host_cpu,
        kernel_fault_retried: None,
        cycle,
        first_boot_id,
        before_reboot_output,
        after_reboot_output,
        log_dir,
    })
}

/// Gives QEMU's command `cmd` the boot's disk: the file itself, throttled as the profile
/// says, or for a seek-modelling profile the seekdisk server it starts (returned).
fn attach_disk(
    cmd: &mut Command,
    opts: &BootOpts,
    disk: &Path,
    run: &Path,
) -> Result<Option<SeekDisk>> {
    // A seek-modelling profile: the seekdisk NBD server serves the disk copy (and takes the
    // guest's writes into it) until QEMU is gone: boot_disk drops it after QEMU, so QEMU
    // never outlives its server, and a server that stops ends QEMU's connection (EOF: the
    // guest sees I/O errors, the login wait's timeout applies).
    let seek = match opts.profile.seek_model() {
        Some(model) => Some(SeekDisk::start(disk, &run.join("seekdisk.sock"), model)?),
        None => None,
    };
    match &seek {
        Some(s) => cmd.arg("-drive").arg(s.drive_opt()),
        None => cmd.arg("-drive").arg(format!(
            "file={},format=raw,if=virtio{}",
            disk.display(),
            opts.profile.drive_opts()
        )),
    };
    if let Some(second) = &opts.second_disk {
        cmd.arg("-drive")
            .arg(format!("file={},format=raw,if=virtio", second.display()));
    }
    Ok(seek)
}

/// The kernel command line of a boot of `img` with `opts`.
fn kernel_cmdline(img: &Image, opts: &BootOpts) -> String {
    let mut cmdline = opts.cmdline();
    // On a desktop image no one logs in unless the login word says so; the recorder would
    // go on `session_wait_s` after boot done for a session, and the trace wait with it.
    if img.desktop && opts.record && !cmdline.contains(crate::vm::desktop_session::LOGIN_WORD) {
        cmdline.push_str(" bootprint.session_wait_s=0");
    }
    cmdline
}

/// Starts QEMU (`cmd`, stderr to `qemu_err`) with its serial console on stdio, logged to
/// `serial_log` from `start`.
fn start_qemu(
    cmd: &mut Command,
    qemu_err: fs::File,
    serial_log: &Path,
    start: Instant,
) -> Result<(Qemu, Console)> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(qemu_err)
        .spawn()
        .map_err(|e| {
            Error::fail(format!(
                "cannot start qemu-system-x86_64: {e} (run `bootprint-testbed deps`)"
            ))
        })?;
    let input = child.stdin.take().expect("piped");
    let output = child.stdout.take().expect("piped");
    let qemu = Qemu(child);
    let con = Console::new(input, output, serial_log, start)?;
    Ok((qemu, con))
}

/// What the diagnosis of a boot that never reaches the login needs.
struct Hung<'a> {
    qemu: &'a Qemu,
    monitor: &'a Path,
    img: &'a Image,
    disk: &'a Path,
    run: &'a Path,
}

impl Hung<'_> {
    /// Diagnoses the guest as a hung boot (`vm::hang::diagnose_hang`) into the file `out`.
    fn diagnose_into(&self, out: &Path, con: &Console) {
        let text = crate::vm::hang::diagnose_hang(
            self.qemu.0.id(),
            self.monitor,
            self.img,
            self.disk,
            con,
        );
        let _ = fs::write(out, text);
    }
}

/// A booting guest's console, with what a failure shows: the seekdisk server's error, the
/// tails of the serial log and of QEMU's log.
struct Guest<'a> {
    con: Console,
    start: Instant,
    serial_log: &'a Path,
    qemu_log: &'a Path,
    seek: Option<&'a SeekDisk>,
}

impl Guest<'_> {
    fn fail(&self, what: &str) -> Error {
        let server = self
            .seek
            .and_then(|s| s.error())
            .map(|e| format!("\n{e}"))
            .unwrap_or_default();
        Error::fail(format!(
            "{what}{server}\nserial log {}, last lines:\n{}\nqemu log {}:\n{}",
            self.serial_log.display(),
            self.con.tail(25),
            self.qemu_log.display(),
            tail(self.qemu_log, 10)
        ))
    }

    /// Waits for one of `pats` after `from`, at most `secs`; returns which and where it ends.
    fn expect(&self, pats: &[&str], from: usize, secs: u64, what: &str) -> Result<(usize, usize)> {
        match self
            .con
            .wait_for(pats, from, Duration::from_secs(secs), self.start)
        {
            Seen::Match(i, end, _) => Ok((i, end)),
            Seen::Timeout => {
                Err(self.fail(&format!("timed out after {secs} s waiting for {what}")))
            }
            Seen::Closed => Err(self.fail(&format!("QEMU exited while waiting for {what}"))),
        }
    }

    /// Waits for `login:` after byte `from`; returns where it ends and the host's seconds
    /// to it. With `maintenance_fails` (after a reboot request), sulogin's prompt ends the
    /// wait at once: init fell to its maintenance shell (sysvinit's inittab runs one in
    /// runlevel 6 when `rc 6` returns without a reboot), and no `login:` can follow.
    fn wait_for_login(
        &mut self,
        hung: &Hung,
        from: usize,
        maintenance_fails: bool,
    ) -> Result<(usize, f64)> {
        let mut pats = vec!["login:", PANIC_MARK];
        if maintenance_fails {
            pats.push(MAINTENANCE_MARK);
        }
        match self.con.wait_for(&pats, from, LOGIN_TIMEOUT, self.start) {
            Seen::Match(0, end, t) => Ok((end, t)),
            Seen::Match(2, end, _) => {
                let seen = self.in_maintenance_shell(end);
                let out = hung.run.join("maintenance.txt");
                let _ = fs::write(&out, &seen);
                Err(self.fail(&format!(
                    "after the reboot request the guest asked for the root password for \
                     maintenance (sulogin) instead of restarting; its processes and \
                     /run/bootprint's logs then are in {}",
                    out.display()
                )))
            }
            Seen::Match(..) => {
                // The report and the panic line are out; its last lines follow within
                // milliseconds, and the guest is dead: no need to wait for the timeout.
                std::thread::sleep(Duration::from_secs(1));
                let text = self.con.text(from, usize::MAX);
                let what = kernel_fault(&text)
                    .map(|f| f.line)
                    .unwrap_or_else(|| PANIC_MARK.to_string());
                Err(self.fail(&format!(
                    "the guest kernel panicked before `login:`: {what}"
                )))
            }
            Seen::Timeout => {
                // Every test-bed boot that hangs is diagnosed before QEMU is stopped (as `soak`
                // does): a rare hang seen once is worth its registers and task dumps.
                let hang = hung.run.join("hang.txt");
                hung.diagnose_into(&hang, &self.con);
                Err(self.fail(&format!(
                    "no `login:` on the serial console within {} s (diagnosis in {})",
                    LOGIN_TIMEOUT.as_secs(),
                    hang.display()
                )))
            }
            Seen::Closed => Err(self.fail("QEMU exited before `login:`")),
        }
    }

    /// At sulogin's prompt (ending at byte `from`): logs in to the maintenance shell and
    /// returns what was running and the tails of /run/bootprint's logs (the LSB runner's
    /// rc.log), which the reset would lose; or why it could not.
    fn in_maintenance_shell(&mut self, from: usize) -> String {
        let got = self
            .expect(&["continue):"], from, 30, "sulogin's prompt")
            .and_then(|_| self.maintenance_login(from))
            .and_then(|pos| {
                self.con.send(
                    "echo BP\"\"DIAG=begin; ps -eo pid,ppid,sid,stat,etime,args; \
                     for f in /run/bootprint/*.log; do echo \"== $f\"; tail -n 60 \"$f\"; done; \
                     echo BP\"\"DIAG=end\n",
                )?;
                let (_, begin) = self.expect(&["BPDIAG=begin"], pos, 60, "the diagnosis")?;
                let (_, end) = self.expect(&["BPDIAG=end"], begin, 60, "the diagnosis")?;
                Ok(self
                    .con
                    .text(begin, end - "BPDIAG=end".len())
                    .replace('\r', ""))
            });
        got.unwrap_or_else(|e| format!("no maintenance shell: {e}\n"))
    }

    /// Types the root password at sulogin's prompt (after byte `from`) until its shell's
    /// prompt comes; returns where that ends. A few tries, a few seconds apart: sulogin
    /// flushes what was typed before it set up the terminal, and a second one may prompt.
    fn maintenance_login(&mut self, from: usize) -> Result<usize> {
        let mut last = None;
        for _ in 0..3 {
            std::thread::sleep(Duration::from_secs(3));
            self.con.send(&format!("{ROOT_PASSWORD}\n"))?;
            match self.expect(&["# "], from, 20, "the maintenance shell") {
                Ok((_, pos)) => return Ok(pos),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| self.fail("no maintenance shell")))
    }

    /// Logs in as root; returns where the shell prompt ends.
    fn log_in(&mut self, login_end: usize) -> Result<usize> {
        self.con.send("root\n")?;
        let (_, pw_end) = self.expect(&["Password:"], login_end, 60, "the password prompt")?;
        self.con.send(&format!("{ROOT_PASSWORD}\n"))?;
        let (i, pos) = self.expect(
            &[":~# ", "Login incorrect"],
            pw_end,
            120,
            "the root shell prompt",
        )?;
        if i == 1 {
            return Err(self.fail("root login refused on the serial console"));
        }
        Ok(pos)
    }

    /// Widens the terminal and reads the guest's boot id (none if it is not one).
    fn read_boot_id(&mut self, pos: usize) -> Result<(Option<String>, usize)> {
        // A wide terminal: readline redraws lines longer than the default 80 columns, which
        // garbles the echo in the serial log (the input itself is intact).
        // The markers are split with "" so that the shell's echo of the command does not match.
        self.con
            .send("stty cols 250; echo BP\"\"ID=$(cat /proc/sys/kernel/random/boot_id)\n")?;
        let (_, id_start) = self.expect(&["BPID="], pos, 60, "the boot id")?;
        let (_, id_end) = self.expect(&["\n"], id_start, 30, "the boot id")?;
        let boot_id = self.con.text(id_start, id_end).trim().to_string();
        let boot_id = if is_boot_id(&boot_id) {
            Some(boot_id)
        } else {
            None
        };
        Ok((boot_id, id_end))
    }

    /// Waits for the recorder's trace of boot `boot_id`, then for the recorder's end;
    /// returns whether the trace came.
    fn wait_for_trace(
        &mut self,
        opts: &BootOpts,
        boot_id: Option<&str>,
        mut pos: usize,
    ) -> Result<(bool, usize)> {
        let id = boot_id
            .map(str::to_string)
            .ok_or_else(|| self.fail("could not read the guest's boot id"))?;
        eprintln!(
            "boot: waiting (up to {} s) for the recorder's trace",
            opts.trace_wait_s
        );
        // Poll with shell builtins only (`read -t` on a FIFO nobody writes to sleeps without
        // a fork), so the wait adds no processes to the trace and keeps the guest idle for
        // the recorder's boot-done detection.
        self.con.send(&format!(
            "f={TRACE_ROOT}/{id}/events.log; mkfifo /run/bp.wait; exec 3<>/run/bp.wait\n"
        ))?;
        self.con.send(&format!(
            "i=0; while [ ! -e $f ] && [ $i -lt {} ]; do read -t 2 -u 3; i=$((i+1)); done; \
             [ -e $f ] && echo BP\"\"TRACE=yes || echo BP\"\"TRACE=no\n",
            opts.trace_wait_s / 2
        ))?;
        let (i, end) = self.expect(
            &["BPTRACE=yes", "BPTRACE=no"],
            pos,
            opts.trace_wait_s + 60,
            "the recorder's trace",
        )?;
        let trace_ready = i == 0;
        pos = end;
        if !trace_ready {
            eprintln!(
                "boot: warning: no {TRACE_ROOT}/{id}/events.log after {} s",
                opts.trace_wait_s
            );
        } else {
            // The recorder goes on after the trace (the Prometheus export): let it finish
            // (at most 30 s) before the power goes.
            self.con.send(
                "i=0; while pidof -x bootprint-boot >/dev/null && [ $i -lt 30 ]; do read -t 1 -u 3; \
                 i=$((i+1)); done; echo BP\"\"DONE=$i\n",
            )?;
            let (_, end) = self.expect(&["BPDONE="], pos, 60, "the recorder's end")?;
            pos = end;
        }
        Ok((trace_ready, pos))
    }

    /// Runs `script` as root in the guest; returns its output (also written to `out`), the
    /// kernel's stall report if one stopped it (`stop_on_stall`, see `BootOpts`), and where
    /// the output ends.
    fn run_script(
        &mut self,
        script: &str,
        stop_on_stall: bool,
        out: &Path,
        pos: usize,
    ) -> Result<(String, Option<String>, usize)> {
        // Sent base64-encoded in short lines (the tty's line limit; no shell quoting), run
        // from a file, its output between markers split with "" like the ones above.
        self.con.send("rm -f /run/bp.b64\n")?;
        let encoded = base64(script.as_bytes());
        for chunk in encoded.as_bytes().chunks(512) {
            self.con.send(&format!(
                "echo {} >> /run/bp.b64\n",
                String::from_utf8_lossy(chunk)
            ))?;
        }
        self.con.send(
            "base64 -d /run/bp.b64 > /run/bp.sh; echo BP\"\"OUT=begin; sh /run/bp.sh 2>&1 3<&-; \
             echo BP\"\"OUT=end\n",
        )?;
        let (_, begin) = self.expect(&["BPOUT=begin"], pos, 60, "the guest script's start")?;
        let mut marks = vec!["BPOUT=end"];
        if stop_on_stall {
            marks.extend(crate::vm::serial::STALL_MARKS);
        }
        let (i, end) = self.expect(
            &marks,
            begin,
            GUEST_SCRIPT_TIMEOUT_S,
            "the guest script's end",
        )?;
        let mut kernel_stall = None;
        let text = if i > 0 {
            // Let the report's backtrace arrive, then stop the wedged guest (below).
            std::thread::sleep(Duration::from_secs(3));
            let text = self.con.text(begin, usize::MAX).replace('\r', "");
            kernel_stall = crate::vm::serial::kernel_stall(&text);
            text
        } else {
            self.con
                .text(begin, end - "BPOUT=end".len())
                .replace('\r', "")
        };
        // Beside the serial log, for `boot --guest-script FILE`.
        let _ = fs::write(out, &text);
        Ok((text, kernel_stall, end))
    }

    /// After a reboot request at byte `from`: when the kernel's restart line comes and the
    /// next kernel's banner does not follow within [`RESET_SLOW`], the guest is diagnosed as
    /// a hung boot is (the run directory's reset-slow.txt: where the vCPUs are, in the
    /// firmware or the old kernel), and the boot goes on. A missing restart line or login is
    /// left to the login wait and `cycle::stages`.
    fn watch_reset(&self, hung: &Hung, from: usize) {
        let restart = cycle::SHUTDOWN_END_MARKS[0];
        let ends = [restart, "login:", PANIC_MARK, MAINTENANCE_MARK];
        let Seen::Match(0, end, _) = self.con.wait_for(&ends, from, LOGIN_TIMEOUT, self.start)
        else {
            return;
        };
        if let Seen::Timeout = self
            .con
            .wait_for(&["Linux version"], end, RESET_SLOW, self.start)
        {
            let out = hung.run.join("reset-slow.txt");
            eprintln!(
                "boot: no kernel banner {} s after `{restart}`: diagnosing into {}",
                RESET_SLOW.as_secs(),
                out.display()
            );
            hung.diagnose_into(&out, &self.con);
        }
    }

    /// Asks the guest for a reboot with `command`, after a line with [`REQUEST_MARK`] that
    /// the same shell line prints (so its host time is the request's); returns where the
    /// marker ends.
    fn request_reboot(&mut self, command: &str, pos: usize) -> Result<usize> {
        // Split with "" as the other markers, so the terminal's echo of the command line
        // is not the marker line.
        let (head, tail) = REQUEST_MARK.split_at(REQUEST_MARK.rfind('-').unwrap_or(1));
        eprintln!("boot: asking the guest to reboot: {command}");
        self.con
            .send(&format!("echo {head}\"\"{tail}; {command}\n"))?;
        let (_, end) = self.expect(&[REQUEST_MARK], pos, 60, "the reboot request's marker")?;
        Ok(end)
    }
}

/// Powers the guest off (kills it when its kernel stalled) and waits for QEMU's exit; says
/// how QEMU ended.
fn power_off(
    qemu: &mut Qemu,
    con: &mut Console,
    stalled: bool,
    clean: bool,
) -> Result<&'static str> {
    let t = Instant::now();
    let mut qemu_exit = "clean";
    if stalled {
        let _ = qemu.0.kill();
        qemu_exit = "killed (kernel stall)";
    } else if clean {
        con.send("poweroff\n")?;
    } else {
        // As a clean shutdown's unmount would, the freeze puts the root's metadata in its
        // place: XFS keeps it in its log until then, and GRUB reads no log (an XFS root's
        // next boot found no grub.cfg after update-grub and `sync`).
        con.send("sync; fsfreeze -f / && fsfreeze -u /; poweroff -f\n")?;
    }
    loop {
        match qemu.0.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if t.elapsed() < EXIT_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(100))
            }
            _ => {
                let _ = qemu.0.kill();
                let _ = qemu.0.wait();
                qemu_exit = "killed";
                break;
            }
        }
    }
    Ok(qemu_exit)
}

/// Prints what the seekdisk server served and writes its log; its error is the boot's.
fn report_seekdisk(s: &SeekDisk, run: &Path) -> Result<()> {
    let st = s.stats();
    eprintln!(
        "boot: seekdisk: {} requests ({} reads, {:.1} MB; {} writes, {:.1} MB; {} jumps), \
         {:.2} s of drive time",
        st.requests,
        st.reads,
        st.bytes_read as f64 / 1e6,
        st.writes,
        st.bytes_written as f64 / 1e6,
        st.jumps,
        st.modelled_s
    );
    if let Err(e) = s.write_log(&run.join("seekdisk.log")) {
        eprintln!("boot: {e}");
    }
    if let Some(e) = s.error() {
        return Err(Error::fail(e));
    }
    Ok(())
}

/// Copies out of the guest's disk what the boot asks for: the recorder's trace (`record`
/// with `copy_trace`; to `--trace-out` or the cache's traces/, none when there was none to
/// copy) and the whole /var/log/bootprint (`RebootOpts::copy_log_dir`, into the run
/// directory). Returns (trace, log directory).
fn copy_out(
    paths: &Paths,
    opts: &BootOpts,
    run: &Path,
    disk: &Path,
    boot_id: Option<&str>,
    trace_ready: bool,
) -> Result<(Option<PathBuf>, Option<PathBuf>)> {
    let want_trace = opts.record && opts.copy_trace;
    let want_log_dir = opts.reboot.as_ref().is_some_and(|r| r.copy_log_dir);
    if !want_trace && !want_log_dir {
        return Ok((None, None));
    }
    let trace_dest = match (&opts.trace_out, want_trace) {
        (_, false) => None,
        (Some(p), true) => Some(p.clone()),
        (None, true) => {
            let base = paths.cache.join("traces");
            fs::create_dir_all(&base).map_err(|e| io_err("cannot create", &base, e))?;
            Some(base.join(run.file_name().unwrap_or_default()))
        }
    };
    let host_log = run.join("host.log");
    // On a partitioned disk the file system is copied out first: e2fsck cannot replay a
    // journal through e2fsprogs' `FILE?offset=N` (it reopens the file without the offset).
    let fs = if opts.fs_offset > 0 {
        let fs = run.join("fs.img");
        extract_fs(disk, opts.fs_offset, &fs, &host_log)?;
        fs
    } else {
        disk.to_path_buf()
    };
    let trace = match trace_dest {
        Some(out) => match copy_trace(&fs, boot_id, &out, run, &host_log) {
            Ok(()) => Ok(Some(out)),
            Err(e) if !trace_ready => {
                eprintln!("boot: no trace to copy out: {e}");
                Ok(None)
            }
            Err(e) => Err(e),
        },
        None => Ok(None),
    };
    let log_dir = match want_log_dir && trace.is_ok() {
        true => {
            let out = run.join(LOG_DIR_COPY);
            copy_log_dir(&fs, &out, run, &host_log).map(|_| Some(out))
        }
        false => Ok(None),
    };
    if opts.fs_offset > 0 {
        let _ = fs::remove_file(&fs);
    }
    Ok((trace?, log_dir?))
}

/// Copies the guest's whole /var/log/bootprint out of the file system image `fs_image` into
/// `out` (ext4 with debugfs, its journal replayed first; btrfs and XFS through a mount).
fn copy_log_dir(fs_image: &Path, out: &Path, run: &Path, log: &Path) -> Result<()> {
    let tmp = run.join("rdump-log");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| io_err("cannot create", &tmp, e))?;
    if crate::vm::fsimage::mounted_type(fs_image, log) {
        let m = crate::vm::fsimage::Mounted::new(fs_image, &run.join("fs-mnt"), log)?;
        let base = m.system_root().join(TRACE_ROOT.trim_start_matches('/'));
        run_logged(Command::new("cp").arg("-a").arg(base).arg(&tmp), log)?;
    } else {
        replay_journal(fs_image, log)?;
        run_logged(
            Command::new("debugfs")
                .arg("-R")
                .arg(format!("rdump {TRACE_ROOT} {}", tmp.display()))
                .arg(fs_image),
            log,
        )?;
    }
    // debugfs says it found nothing on its output, and exits 0.
    let got = tmp.join(Path::new(TRACE_ROOT).file_name().unwrap_or_default());
    if !got.is_dir() {
        return Err(Error::fail(format!(
            "{TRACE_ROOT} not found in {} (log {})",
            fs_image.display(),
            log.display()
        )));
    }
    let _ = fs::remove_dir_all(out);
    fs::rename(&got, out).map_err(|e| io_err("cannot move the log directory to", out, e))?;
    let _ = fs::remove_dir_all(&tmp);
    Ok(())
}

/// Standard base64 with padding (RFC 4648), for sending a guest script through the console.
fn base64(data: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= c.len() {
                out.push(ABC[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn is_boot_id(s: &str) -> bool {
    s.len() == 36 && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// Copies the file system that starts `offset` bytes into `disk` to the file `dest`
/// (sparse), and [`write_back_fs`] puts it back: e2fsck replays a journal only on a whole
/// file (through `FILE?offset=N` it reopens the file without the offset and fails, exit 12).
pub fn extract_fs(disk: &Path, offset: u64, dest: &Path, log: &Path) -> Result<()> {
    let _ = fs::remove_file(dest);
    run_logged(
        Command::new("dd")
            .arg(format!("if={}", disk.display()))
            .arg(format!("of={}", dest.display()))
            .args(["bs=1M", "conv=sparse", "status=none", "iflag=skip_bytes"])
            .arg(format!("skip={offset}")),
        log,
    )
}

/// Writes the file system `src` back into `disk` at `offset`, sparse: the range is first
/// punched out of `disk` (a sparse write over it alone would leave stale data where `src`
/// has zeros), so the disk takes no more room than `src` does.
pub fn write_back_fs(src: &Path, disk: &Path, offset: u64, log: &Path) -> Result<()> {
    let len = fs::metadata(src)
        .map_err(|e| io_err("cannot stat", src, e))?
        .len();
    run_logged(
        Command::new("fallocate")
            .arg("--punch-hole")
            .arg(format!("--offset={offset}"))
            .arg(format!("--length={len}"))
            .arg(disk),
        log,
    )?;
    run_logged(
        Command::new("dd")
            .arg(format!("if={}", src.display()))
            .arg(format!("of={}", disk.display()))
            .args([
                "bs=1M",
                "conv=notrunc,sparse",
                "status=none",
                "oflag=seek_bytes",
            ])
            .arg(format!("seek={offset}")),
        log,
    )
}

/// Replays the journal of the ext4 image `fs` (whole file, see [`extract_fs`]), e2fsck's
/// output appended to `log`: a test-bed boot ends with `poweroff -f` after a sync and a
/// freeze of the root, which leave the journal clean, but one that did not get there (a
/// killed guest, a fault case) may leave its last metadata only in the journal, which
/// debugfs does not read, and which the next boot would replay over what debugfs wrote.
pub fn replay_journal(fs: &Path, log: &Path) -> Result<()> {
    e2fsck(&["-p", "-E", "journal_only"], fs, log)
}

/// `e2fsck ARGS FS`, output appended to `log`; exit 0 (clean) and 1 (errors corrected, such
/// as a replayed journal) are both success.
pub fn e2fsck(args: &[&str], fs: &Path, log: &Path) -> Result<()> {
    let logf = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| io_err("cannot open log", log, e))?;
    let logf2 = logf
        .try_clone()
        .map_err(|e| io_err("cannot open log", log, e))?;
    let status = Command::new("e2fsck")
        .args(args)
        .arg(fs)
        .stdin(Stdio::null())
        .stdout(logf)
        .stderr(logf2)
        .status()
        .map_err(|e| Error::fail(format!("cannot run e2fsck: {e}")))?;
    if !matches!(status.code(), Some(0) | Some(1)) {
        return Err(Error::fail(format!(
            "`e2fsck {} {}` failed ({status}); log {}:\n{}",
            args.join(" "),
            fs.display(),
            log.display(),
            tail(log, 10)
        )));
    }
    Ok(())
}

/// Copies `/var/log/bootprint/<boot id>` (or what `latest` points at) out of the disk image.
fn copy_trace(
    fs_image: &Path,
    boot_id: Option<&str>,
    out: &Path,
    run: &Path,
    log: &Path,
) -> Result<()> {
    let tmp = run.join("rdump");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).map_err(|e| io_err("cannot create", &tmp, e))?;
    // ext4 unless blkid says otherwise (it fails on an image with two signatures).
    let name = if crate::vm::fsimage::mounted_type(fs_image, log) {
        copy_trace_mounted(fs_image, boot_id, &tmp, run, log)?
    } else {
        dump_trace_ext4(fs_image, boot_id, &tmp, log)?
    };
    let got = tmp.join(&name);
    if !got.join("events.log").is_file() && !got.join("header").is_file() {
        return Err(Error::fail(format!(
            "{TRACE_ROOT}/{name} not found in {} (log {})",
            fs_image.display(),
            log.display()
        )));
    }
    if out.exists() {
        return Err(Error::fail(format!(
            "trace output {} exists already",
            out.display()
        )));
    }
    if let Some(parent) = out.parent() {
        fs::create_dir_all(parent).map_err(|e| io_err("cannot create", parent, e))?;
    }
    if fs::rename(&got, out).is_err() {
        // A different file system: copy instead.
        run_logged(Command::new("cp").arg("-a").arg(&got).arg(out), log)?;
    }
    let _ = fs::remove_dir_all(&tmp);
    Ok(())
}

/// The trace's directory name: the boot's id, else where `latest` points.
fn trace_name(boot_id: Option<&str>, latest: Option<String>, fs_image: &Path) -> Result<String> {
    if let Some(id) = boot_id {
        return Ok(id.to_string());
    }
    latest
        .map(|t| {
            t.trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or("")
                .to_string()
        })
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            Error::fail(format!(
                "no {TRACE_ROOT}/latest symlink in {}",
                fs_image.display()
            ))
        })
}

/// The trace out of an ext4 image into `tmp` with debugfs (its journal replayed first);
/// returns its name.
fn dump_trace_ext4(
    fs_image: &Path,
    boot_id: Option<&str>,
    tmp: &Path,
    log: &Path,
) -> Result<String> {
    replay_journal(fs_image, log)?;
    let latest = match boot_id {
        Some(_) => None,
        None => {
            let stat = output_logged(
                Command::new("debugfs")
                    .arg("-R")
                    .arg(format!("stat {TRACE_ROOT}/latest"))
                    .arg(fs_image),
                log,
            )?;
            symlink_target(&stat)
        }
    };
    let name = trace_name(boot_id, latest, fs_image)?;
    run_logged(
        Command::new("debugfs")
            .arg("-R")
            .arg(format!("rdump {TRACE_ROOT}/{name} {}", tmp.display()))
            .arg(fs_image),
        log,
    )?;
    Ok(name)
}

/// The trace out of a btrfs or XFS image into `tmp`, through a loop mount of the image (a
/// copy: the mount replays its log); returns its name.
fn copy_trace_mounted(
    fs_image: &Path,
    boot_id: Option<&str>,
    tmp: &Path,
    run: &Path,
    log: &Path,
) -> Result<String> {
    let m = crate::vm::fsimage::Mounted::new(fs_image, &run.join("fs-mnt"), log)?;
    let base = m.system_root().join(TRACE_ROOT.trim_start_matches('/'));
    let latest = fs::read_link(base.join("latest"))
        .ok()
        .map(|t| t.to_string_lossy().into_owned());
    let name = trace_name(boot_id, latest, fs_image)?;
    run_logged(
        Command::new("cp").arg("-a").arg(base.join(&name)).arg(tmp),
        log,
    )?;
    Ok(name)
}

/// The target of a fast symlink from `debugfs stat` output (`Fast link dest: "..."`).
pub fn symlink_target(stat: &str) -> Option<String> {
    let i = stat.find("Fast link dest:")?;
    let rest = &stat[i + "Fast link dest:".len()..];
    let a = rest.find('"')?;
    let b = rest[a + 1..].find('"')?;
    Some(rest[a + 1..a + 1 + b].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_coreutils_encodes() {
        // Expected values from `printf %s ... | base64`.
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"echo a\tb\n"), "ZWNobyBhCWIK");
    }

    #[test]
    fn cmdlines() {
        let mut o = BootOpts::new(Profile::Fast);
        assert_eq!(o.cmdline(), BASE_APPEND);
        o.append = " loglevel=5 ".into();
        o.record = true;
        assert_eq!(
            o.cmdline(),
            format!("{BASE_APPEND} loglevel=5 init=/usr/lib/bootprint/bootprint-boot")
        );
        // A partitioned disk's root.
        let mut o = BootOpts::new(Profile::Fast);
        o.root = Some("/dev/vda1".into());
        assert!(o.cmdline().contains(" root=/dev/vda1 "), "{}", o.cmdline());
        assert!(!o.cmdline().contains("root=/dev/vda "), "{}", o.cmdline());
    }

    #[test]
    fn a_reboot_cycle_only_drops_no_reboot() {
        let img = Image {
            dir: "/i".into(),
            rootfs: "/i/rootfs.ext4".into(),
            kernel: "/i/vmlinuz".into(),
            initrd: "/i/initrd.img".into(),
            desktop: false,
        };
        let args = |no_reboot| {
            let cmd = qemu_command_with(
                &img,
                Firmware::Bios,
                &img.kernel,
                &img.initrd,
                "console=ttyS0",
                no_reboot,
            );
            crate::vm::util::describe(&cmd.unwrap())
        };
        // A boot without a cycle keeps its arguments as they were, in their order.
        assert_eq!(
            args(true),
            "qemu-system-x86_64 -accel tcg -smp 2 -m 1024 -nodefaults -display none -no-reboot \
             -monitor none -serial stdio -kernel /i/vmlinuz -initrd /i/initrd.img \
             -append console=ttyS0"
        );
        let public = qemu_command(
            &img,
            Firmware::Bios,
            &img.kernel,
            &img.initrd,
            "console=ttyS0",
        );
        assert_eq!(crate::vm::util::describe(&public.unwrap()), args(true));
        assert_eq!(args(false), args(true).replace(" -no-reboot", ""));
    }

    #[test]
    fn profiles() {
        assert_eq!(Profile::Fast.drive_opts(), "");
        assert_eq!(
            Profile::Sd.drive_opts(),
            ",throttling.bps-total=20000000,throttling.iops-total=400"
        );
        assert_eq!(Profile::Hdd.limits(), Some((80_000_000, 100)));
    }

    #[test]
    fn debugfs_symlink() {
        let stat = "Inode: 1234   Type: symlink    Mode:  0777\nFast link dest: \"/var/log/bootprint/0a1b\"\n";
        assert_eq!(
            symlink_target(stat).as_deref(),
            Some("/var/log/bootprint/0a1b")
        );
        assert_eq!(symlink_target("Type: regular"), None);
    }

    #[test]
    fn trace_is_copied_out_of_an_ext4_image() {
        if !crate::vm::util::on_path("mke2fs") {
            testkit::skip("no mke2fs (e2fsprogs) on this host");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let id = "3f2c1a5e-8d7b-4c1e-9f0a-1b2c3d4e5f60";
        let root = dir.path().join("root");
        let tdir = root.join("var/log/bootprint").join(id);
        fs::create_dir_all(&tdir).unwrap();
        fs::write(tdir.join("events.log"), "# bootprint events 1\n").unwrap();
        fs::write(tdir.join("header"), "bootprint.format = 1\n").unwrap();
        std::os::unix::fs::symlink(
            format!("/var/log/bootprint/{id}"),
            root.join("var/log/bootprint/latest"),
        )
        .unwrap();
        let disk = dir.path().join("disk.raw");
        let log = dir.path().join("log");
        run_logged(
            Command::new("mke2fs")
                .args(["-q", "-F", "-t", "ext4", "-d"])
                .arg(&root)
                .arg(&disk)
                .arg("8M"),
            &log,
        )
        .unwrap();
        // By boot id, and through the `latest` symlink when the boot id is unknown.
        let out1 = dir.path().join("t1");
        copy_trace(&disk, Some(id), &out1, dir.path(), &log).unwrap();
        assert_eq!(
            fs::read_to_string(out1.join("header")).unwrap(),
            "bootprint.format = 1\n"
        );
        let out2 = dir.path().join("sub/t2");
        copy_trace(&disk, None, &out2, dir.path(), &log).unwrap();
        assert!(out2.join("events.log").is_file());
        // The same file system 1 MiB into a disk, as on the GRUB disk.
        let shifted = dir.path().join("shifted.raw");
        run_logged(
            Command::new("dd")
                .arg(format!("if={}", disk.display()))
                .arg(format!("of={}", shifted.display()))
                .args(["bs=1M", "seek=1", "status=none"]),
            &log,
        )
        .unwrap();
        // Out of the disk (the same bytes, a trace to copy) and back.
        let extracted = dir.path().join("extracted.ext4");
        extract_fs(&shifted, 1 << 20, &extracted, &log).unwrap();
        assert_eq!(fs::read(&extracted).unwrap(), fs::read(&disk).unwrap());
        let out4 = dir.path().join("t4");
        copy_trace(&extracted, Some(id), &out4, dir.path(), &log).unwrap();
        assert!(out4.join("header").is_file());
        let back = dir.path().join("back.raw");
        fs::write(&back, vec![0xa5u8; 3 << 20]).unwrap();
        write_back_fs(&extracted, &back, 1 << 20, &log).unwrap();
        // Sparse where the file system has zeros: the 1 MiB before it and the ext4 image's
        // few written blocks, not the whole 8 MiB.
        use std::os::unix::fs::MetadataExt;
        let allocated = fs::metadata(&back).unwrap().blocks() * 512;
        assert!(allocated < 5 << 20, "{allocated} bytes allocated");
        let back = fs::read(&back).unwrap();
        assert!(
            back[..1 << 20].iter().all(|&b| b == 0xa5),
            "the bytes before the offset stay"
        );
        assert_eq!(
            &back[1 << 20..(1 << 20) + (8 << 20)],
            &fs::read(&disk).unwrap()[..]
        );
        // The whole log directory, its `latest` symlink with it (a reboot cycle's).
        let all = dir.path().join("all");
        copy_log_dir(&disk, &all, dir.path(), &log).unwrap();
        assert!(all.join(id).join("events.log").is_file());
        let latest = fs::symlink_metadata(all.join("latest")).unwrap();
        assert!(latest.file_type().is_symlink());
        // An existing output is not overwritten; a missing trace is an error naming it.
        let e = copy_trace(&disk, Some(id), &out1, dir.path(), &log).unwrap_err();
        assert!(e.to_string().contains("exists already"), "{e}");
        let e = copy_trace(
            &disk,
            Some("00000000-0000-0000-0000-000000000000"),
            &dir.path().join("t3"),
            dir.path(),
            &log,
        )
        .unwrap_err();
        assert!(e.to_string().contains("not found"), "{e}");
    }

    #[test]
    fn boot_ids() {
        assert!(is_boot_id("3f2c1a5e-8d7b-4c1e-9f0a-1b2c3d4e5f60"));
        assert!(!is_boot_id("$(cat /proc/sys/kernel/random/boot_id)"));
    }
}
