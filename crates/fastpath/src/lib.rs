//! The fast paths of a reboot: what `bootprint reboot --kexec|--soft` and the runner's
//! runlevel 6 need to skip the firmware (kexec) or the kernel too (systemd's soft-reboot).
//!
//! - [`grub`]: the entry Debian's GRUB boots next, read from `grub.cfg` and `grubenv` as
//!   GRUB resolves `default` and `next_entry` (its kernel, initramfs and command line).
//! - [`sdboot`]: the entry systemd-boot boots next, read from its type #1 entries,
//!   loader.conf and EFI variables as systemd's `bootctl` and `systemctl kexec` read them.
//! - [`refusal`]: every reason a fast path would boot something other than what a reset
//!   would, or cannot be taken safely (no kexec in the kernel, lockdown or Secure Boot, a
//!   firmware action pending at the reset, a newer kernel than the next entry's, a soft
//!   reboot that would keep a kernel the loader no longer boots).
//! - [`kexec`]: loading an entry with kexec_file_load(2) (several initramfs images joined as
//!   GRUB joins them), the loaded state, the marker that says bootprint loaded it, and the
//!   final reboot(2) into it.
//!
//! - [`prepare_plain_reboot`]: the `kexec` lever's step at a plain reboot's start (load
//!   the next entry and mark the reboot, or say why not).
//!
//! It owns no init system: systemd's `systemctl kexec|soft-reboot`, the LSB runner's
//! runlevel 6 (the `rc` crate) and bootprint-boot's systemd-shutdown hook act on what this
//! crate prepared. Every check reads the host under a root directory given by the caller
//! (`/` on a real machine), so tests run on fixtures; only [`kexec`]'s system calls touch
//! the running kernel.
#![deny(missing_docs)]

pub mod grub;
pub mod kexec;
pub mod refusal;
pub mod sdboot;

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem in a boot loader's file: the file, the line (1-based; 0: the file as a whole)
/// and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The file.
    pub file: String,
    /// The line, 1-based; 0 when no one line is at fault.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        } else {
            write!(f, "{}: {}", self.file, self.message)
        }
    }
}

/// Makes the errors of one file: `err(line, message)`.
fn error_in(file: &str) -> impl Fn(usize, String) -> Error + '_ {
    move |line, message| Error {
        file: file.to_string(),
        line,
        message,
    }
}

/// A fast path of a reboot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// kexec into the boot loader's next entry: no firmware, no loader.
    Kexec,
    /// systemd's soft-reboot: userspace only, the kernel keeps running.
    Soft,
}

impl Method {
    /// Its word in options, markers and logs.
    pub fn word(self) -> &'static str {
        match self {
            Method::Kexec => "kexec",
            Method::Soft => "soft",
        }
    }
}

/// What a kexec boots: a kernel, its initramfs images (in order) and a command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootEntry {
    /// The kernel image on this system.
    pub kernel: PathBuf,
    /// The initramfs images, joined in this order; empty: none.
    pub initrds: Vec<PathBuf>,
    /// The kernel command line.
    pub cmdline: String,
    /// Where it came from, for the user: the loader's file and entry, or the options.
    pub source: String,
}

impl BootEntry {
    /// The kernel release its image's name gives (`vmlinuz-6.1.0-13-amd64` →
    /// `6.1.0-13-amd64`), as Debian names kernels.
    pub fn release(&self) -> Option<String> {
        // kernel-install's layout for systemd-boot: $BOOT/ENTRY-TOKEN/RELEASE/linux.
        if self.kernel.file_name().is_some_and(|n| n == "linux") {
            let dir = self.kernel.parent()?.file_name()?.to_str()?;
            return Some(dir.to_string());
        }
        release_of(&self.kernel)
    }
}

impl fmt::Display for BootEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "kernel   {}", self.kernel.display())?;
        for i in &self.initrds {
            writeln!(f, "initrd   {}", i.display())?;
        }
        writeln!(f, "cmdline  {}", self.cmdline)?;
        write!(f, "from     {}", self.source)
    }
}

/// A fast path's decision: what it would boot (kexec) and every reason not to take it.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// The entry a kexec boots (None for a soft reboot, or when none could be found).
    pub entry: Option<BootEntry>,
    /// Why not; empty: the path is safe to take.
    pub refusals: Vec<String>,
}

impl Plan {
    /// Whether the path may be taken.
    pub fn go(&self) -> bool {
        self.refusals.is_empty() && self.entry.is_some()
    }
}

/// The kexec plan on the system under `root`: `chosen` if the user named the kernel, else
/// the boot loader's next entry (Debian's GRUB), with every refusal of [`refusal`].
pub fn kexec_plan(root: &Path, chosen: Option<BootEntry>) -> Plan {
    let mut refusals = refusal::kexec_kernel(root);
    refusals.extend(refusal::firmware_pending(root));
    let entry = match chosen {
        Some(e) => {
            for f in std::iter::once(&e.kernel).chain(&e.initrds) {
                if !f.is_file() {
                    refusals.push(format!("{}: not a file", f.display()));
                }
            }
            Some(e)
        }
        None => match loader_entry(root) {
            Ok((e, grub_cfg)) => {
                refusals.extend(refusal::stale_entry(root, &e, grub_cfg.as_deref()));
                Some(e)
            }
            Err(why) => {
                refusals.push(why);
                None
            }
        },
    };
    Plan { entry, refusals }
}

/// What [`prepare_plain_reboot`] came to: the outcome of the `kexec` lever at a plain
/// reboot (docs/reboot.md, "An ordinary reboot by kexec").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prepared {
    /// The loader's next entry is loaded and the reboot marked: it goes by kexec.
    Loaded(BootEntry),
    /// `bootprint reboot --kexec` prepared this reboot already: nothing more to do.
    AlreadyMarked,
    /// An image someone else loaded (`kexec -l`): left alone, the reboot goes through the
    /// firmware as without bootprint.
    Foreign,
    /// Not safe here: every reason; nothing loaded.
    Refused(Vec<String>),
    /// The load or the mark failed: nothing stays loaded or marked.
    Failed(String),
}

impl Prepared {
    /// Whether the reboot goes by kexec.
    pub fn by_kexec(&self) -> bool {
        matches!(self, Prepared::Loaded(_) | Prepared::AlreadyMarked)
    }

    /// Its word in the span log (`rc_kexec_prepared outcome=`).
    pub fn word(&self) -> &'static str {
        match self {
            Prepared::Loaded(_) => "loaded",
            Prepared::AlreadyMarked => "marked",
            Prepared::Foreign => "foreign",
            Prepared::Refused(_) => "refused",
            Prepared::Failed(_) => "failed",
        }
    }

    /// One line for the console and the logs.
    pub fn describe(&self) -> String {
        match self {
            Prepared::Loaded(e) => format!(
                "the reboot goes by kexec into {} ({})",
                e.kernel.display(),
                e.source
            ),
            Prepared::AlreadyMarked => "the reboot goes by kexec (bootprint reboot --kexec)".into(),
            Prepared::Foreign => "a kexec image bootprint did not load is in the kernel: left \
                                  alone, the reboot goes through the firmware"
                .into(),
            Prepared::Refused(why) => format!(
                "the reboot goes through the firmware; kexec refused: {}",
                why.join("; ")
            ),
            Prepared::Failed(why) => {
                format!("the reboot goes through the firmware; the kexec load failed: {why}")
            }
        }
    }
}

/// The `kexec` lever at a plain reboot of the running system under `root` (`/`): loads
/// the boot loader's next entry, as `bootprint reboot --kexec` would, and marks the reboot
/// as asked at `request_ns` (CLOCK_BOOTTIME), unless it is marked already, someone else
/// loaded an image, or [`kexec_plan`] refuses. Nothing stays loaded or marked when it fails.
pub fn prepare_plain_reboot(root: &Path, request_ns: u64) -> Prepared {
    if kexec::kexec_in_force() {
        return Prepared::AlreadyMarked;
    }
    if kexec::loaded() {
        return Prepared::Foreign;
    }
    let plan = kexec_plan(root, None);
    if !plan.refusals.is_empty() {
        return Prepared::Refused(plan.refusals);
    }
    let Some(entry) = plan.entry else {
        return Prepared::Refused(vec!["the boot loader names no entry to boot".into()]);
    };
    if let Err(e) = kexec::load(&entry) {
        return Prepared::Failed(format!(
            "kexec_file_load of {}: {e}",
            entry.kernel.display()
        ));
    }
    if let Err(e) = kexec::mark(Method::Kexec, request_ns) {
        let _ = kexec::unload();
        return Prepared::Failed(format!("{}: {e}; the image was unloaded", kexec::MARKER));
    }
    Prepared::Loaded(entry)
}

/// The boot loader's next entry, with grub.cfg when GRUB's (a menu that can be older than
/// the kernels), or why there is none: the loader that started this boot (systemd-boot
/// sets `LoaderInfo`), else GRUB where grub.cfg is, else systemd-boot where its entries are
/// (kernel-install writes an entry with its kernel: never older).
fn loader_entry(root: &Path) -> Result<(BootEntry, Option<PathBuf>), String> {
    let cfg = root.join(grub::CFG);
    if came_through_systemd_boot(root) || (!cfg.exists() && !sdboot::partitions(root).is_empty()) {
        let (entry, file) = sdboot::next_entry(root)?;
        if root == Path::new("/") {
            cross_check_with_bootctl(&file, sdboot::ask_bootctl())?;
        }
        return Ok((entry, None));
    }
    match std::fs::read_to_string(&cfg) {
        Ok(text) => {
            let env = std::fs::read_to_string(root.join(grub::ENV)).ok();
            let entry = grub::next_entry(root, &text, env.as_deref(), boot_separate(root))
                .map_err(|e| e.to_string())?;
            Ok((entry, Some(cfg)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "no boot loader configuration bootprint reads ({}, or systemd-boot's loader/ \
             under /{}): name the kernel with --kernel, --initrd and --append or \
             --reuse-cmdline",
            cfg.display(),
            sdboot::PARTITIONS.join(", /")
        )),
        Err(e) => Err(format!("{}: {e}", cfg.display())),
    }
}

/// systemd's own answer, where `bootctl` gives one, must be the entry bootprint read
/// (`file`): a kexec boots what the loader would, or nothing.
fn cross_check_with_bootctl(file: &Path, bootctl: Option<String>) -> Result<(), String> {
    let ours = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match bootctl {
        Some(theirs) if !theirs.eq_ignore_ascii_case(&ours) => Err(format!(
            "bootctl says systemd-boot's default entry is {theirs}, bootprint read {ours}: \
             reboot normally (and tell bootprint's developers)"
        )),
        _ => Ok(()),
    }
}

/// Where efivarfs shows the EFI variables, relative to the root.
pub const EFIVARS: &str = "sys/firmware/efi/efivars";
/// The EFI variable systemd-boot sets for the boot it started (vendor GUID of systemd-boot's
/// variables, systemd-boot(7)).
const LOADER_INFO: &str = "LoaderInfo-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";

/// Whether the running boot of the system under `root` came through systemd-boot (its
/// `LoaderInfo` variable is there).
pub fn came_through_systemd_boot(root: &Path) -> bool {
    root.join(EFIVARS).join(LOADER_INFO).exists()
}

/// Whether /boot is a file system of its own (GRUB's paths are then relative to it).
pub fn boot_separate(root: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (
        std::fs::metadata(root),
        std::fs::metadata(root.join("boot")),
    ) {
        (Ok(r), Ok(b)) => r.dev() != b.dev(),
        _ => false,
    }
}

/// The release in a kernel image's file name (`vmlinuz-RELEASE`, `vmlinux-RELEASE`).
pub fn release_of(kernel: &std::path::Path) -> Option<String> {
    let name = kernel.file_name()?.to_str()?;
    let (_, rest) = name.split_once('-')?;
    (!rest.is_empty()).then(|| rest.to_string())
}

/// Orders two kernel releases as `sort -V` and dpkg do for Debian's (`6.1.0-9-amd64` before
/// `6.1.0-13-amd64`): runs of digits by value, everything else by bytes.
pub fn cmp_release(a: &str, b: &str) -> std::cmp::Ordering {
    fn chunks(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let b = s.as_bytes();
        for i in 1..=b.len() {
            if i == b.len() || b[i].is_ascii_digit() != b[start].is_ascii_digit() {
                out.push((b[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for (x, y) in ca.iter().zip(cb.iter()) {
        let o = match (x, y) {
            ((true, x), (true, y)) => {
                let (x, y) = (x.trim_start_matches('0'), y.trim_start_matches('0'));
                x.len().cmp(&y.len()).then_with(|| x.cmp(y))
            }
            ((_, x), (_, y)) => x.cmp(y),
        };
        if o.is_ne() {
            return o;
        }
    }
    ca.len().cmp(&cb.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootctls_other_default_refuses_and_its_silence_does_not() {
        let ours = Path::new("/boot/efi/loader/entries/debian-6.12.conf");
        assert!(cross_check_with_bootctl(ours, None).is_ok());
        assert!(cross_check_with_bootctl(ours, Some("DEBIAN-6.12.conf".into())).is_ok());
        let why = cross_check_with_bootctl(ours, Some("debian-6.1.conf".into())).unwrap_err();
        assert!(
            why.contains("debian-6.1.conf") && why.contains("debian-6.12.conf"),
            "{why}"
        );
    }
    use std::cmp::Ordering::*;
    use std::path::Path;

    #[test]
    fn releases_order_as_debian_does() {
        assert_eq!(cmp_release("6.1.0-9-amd64", "6.1.0-13-amd64"), Less);
        assert_eq!(
            cmp_release("6.12.117+deb13-amd64", "6.1.0-13-amd64"),
            Greater
        );
        assert_eq!(cmp_release("6.1.0-13-amd64", "6.1.0-13-amd64"), Equal);
        assert_eq!(cmp_release("6.1.0-13-amd64", "6.1.0-13-amd64-rt"), Less);
    }

    #[test]
    fn a_plan_names_every_reason() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        // No kexec, no loader configuration.
        let p = kexec_plan(root, None);
        assert!(!p.go() && p.entry.is_none());
        assert!(
            p.refusals[0].contains("CONFIG_KEXEC_CORE"),
            "{:?}",
            p.refusals
        );
        assert!(p.refusals[1].contains("--kernel"), "{:?}", p.refusals);
        assert!(
            !p.refusals.iter().any(|r| r.contains("  ")),
            "{:?}",
            p.refusals
        );
        // kexec, and a grub.cfg whose default is there.
        std::fs::create_dir_all(root.join("sys/kernel")).unwrap();
        std::fs::write(root.join("sys/kernel/kexec_loaded"), "0\n").unwrap();
        std::fs::create_dir_all(root.join("boot/grub")).unwrap();
        std::fs::write(root.join("boot/vmlinuz-6.1.0-13-amd64"), "k").unwrap();
        std::fs::write(
            root.join("boot/grub/grub.cfg"),
            "menuentry 'Debian' {\n\tlinux /boot/vmlinuz-6.1.0-13-amd64 root=/dev/vda1 ro\n}\n",
        )
        .unwrap();
        let p = kexec_plan(root, None);
        assert!(p.go(), "{:?}", p.refusals);
        assert_eq!(p.entry.unwrap().cmdline, "root=/dev/vda1 ro");
        // A kernel named on the command line that is not there.
        let chosen = BootEntry {
            kernel: root.join("boot/vmlinuz-none"),
            initrds: vec![],
            cmdline: String::new(),
            source: "test".into(),
        };
        let p = kexec_plan(root, Some(chosen));
        assert_eq!(p.refusals.len(), 1, "{:?}", p.refusals);
        assert!(p.refusals[0].ends_with("vmlinuz-none: not a file"));
    }

    #[test]
    fn release_from_image_name() {
        assert_eq!(
            release_of(Path::new("/boot/vmlinuz-6.1.0-13-amd64")).as_deref(),
            Some("6.1.0-13-amd64")
        );
        assert_eq!(release_of(Path::new("/boot/vmlinuz")), None);
    }
}
