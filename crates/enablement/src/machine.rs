//! The machine under a root (`--root DIR`, `/` by default): its files, reached as its own
//! system would reach them and never outside the root, and the programs that change its boot
//! (update-grub, dpkg-divert, the initramfs build).
//!
//! Every path bootprint changes here is resolved in the root (`sys::open_in_root`: the
//! system's own links, `/bin -> usr/bin` on a merged /usr, are followed from the root, an
//! absolute link included, and nothing resolves outside it; the last component is never
//! followed), once: the directory that holds it is opened, and the write, the removal or
//! the creation happens in that directory.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, ErrorKind};
use crate::manifest::{startpar_distrib, Manifest, BOOT_BIN, MANIFEST, STARTPAR_PATHS, WRAPPER};

/// The package name diversions are made for.
pub const PACKAGE: &str = "bootprint";

/// The largest file of the root this reads (the manifest, the drop-in, the wrapper).
const MAX_READ: u64 = 1 << 20;

/// The init system the root boots.
#[derive(Debug, Clone, PartialEq)]
pub enum Init {
    /// sysvinit: /sbin/init a program of its own, /lib/init/rc present.
    Sysvinit,
    /// systemd: /sbin/init a link to systemd.
    Systemd,
    /// Something else, described.
    Other(String),
}

impl Init {
    /// Its name in messages.
    pub fn name(&self) -> String {
        match self {
            Init::Sysvinit => "sysvinit".into(),
            Init::Systemd => "systemd".into(),
            Init::Other(s) => s.clone(),
        }
    }
}

/// The external programs enable and disable run. Each is an argument vector the call's own
/// arguments are appended to; the real ones by default, a test double through the
/// environment (`BOOTPRINT_UPDATE_GRUB`, `BOOTPRINT_DPKG_DIVERT`, `BOOTPRINT_INITRAMFS_BUILD`,
/// `BOOTPRINT_KERNEL_INSTALL`, `BOOTPRINT_BOOTCTL`: a program run in place of the real one,
/// with `BOOTPRINT_ROOT` set to the root).
#[derive(Debug, Clone)]
pub struct Tools {
    /// Regenerates grub.cfg (Debian's `update-grub`).
    pub update_grub: Vec<OsString>,
    /// dpkg's `dpkg-divert` (with `--root DIR` for another root).
    pub dpkg_divert: Vec<OsString>,
    /// dpkg's `dpkg-query` (with `--root DIR` for another root): which path of startpar
    /// dpkg knows.
    pub dpkg_query: Vec<OsString>,
    /// `bootprint initramfs build`; `--kernel RELEASE --out IMAGE` are appended.
    pub initramfs_build: Vec<OsString>,
    /// Whether GRUB's update-grub is there to run.
    pub grub_present: bool,
    /// systemd's `kernel-install` (`add RELEASE KERNEL [INITRD]` is appended), which writes a
    /// kernel's Boot Loader Specification entry and runs bootprint's plugin.
    pub kernel_install: Vec<OsString>,
    /// systemd's `bootctl` (`is-installed --quiet` says whether systemd-boot is on the ESP).
    pub bootctl: Vec<OsString>,
}

impl Tools {
    /// The real programs for the system under `root` (run inside it with chroot when it is
    /// not `/`), each replaced by its environment variable when set.
    pub fn for_root(root: &Path) -> Tools {
        let env = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty());
        let here = root == Path::new("/");
        let chroot = |args: &[&str]| -> Vec<OsString> {
            let mut v: Vec<OsString> = vec!["chroot".into(), root.into()];
            v.extend(args.iter().map(OsString::from));
            v
        };
        let (update_grub, grub_present) = match env("BOOTPRINT_UPDATE_GRUB") {
            Some(p) => (vec![p], true),
            None if here => (vec!["update-grub".into()], in_path("update-grub")),
            None => (
                chroot(&["update-grub"]),
                under(root, "/usr/sbin/update-grub").exists(),
            ),
        };
        let mut dpkg_divert = vec![env("BOOTPRINT_DPKG_DIVERT").unwrap_or("dpkg-divert".into())];
        let mut dpkg_query = vec![env("BOOTPRINT_DPKG_QUERY").unwrap_or("dpkg-query".into())];
        if !here {
            dpkg_divert.extend(["--root".into(), root.into()]);
            dpkg_query.extend(["--root".into(), root.into()]);
        }
        let initramfs_build = match env("BOOTPRINT_INITRAMFS_BUILD") {
            Some(p) => vec![p],
            None if here => {
                let me = std::env::current_exe().unwrap_or_else(|_| "/usr/bin/bootprint".into());
                vec![me.into(), "initramfs".into(), "build".into()]
            }
            None => chroot(&["/usr/bin/bootprint", "initramfs", "build"]),
        };
        let systemd = |var: &str, name: &str| match env(var) {
            Some(p) => vec![p],
            None if here => vec![name.into()],
            None => chroot(&[name]),
        };
        Tools {
            update_grub,
            dpkg_divert,
            dpkg_query,
            initramfs_build,
            grub_present,
            kernel_install: systemd("BOOTPRINT_KERNEL_INSTALL", "kernel-install"),
            bootctl: systemd("BOOTPRINT_BOOTCTL", "bootctl"),
        }
    }
}

/// Whether `name` is a program in $PATH or the sbin directories (dpkg runs maintainer
/// scripts with them in PATH; a shell of a user may not have them).
fn in_path(name: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .any(|d| {
            fs::metadata(d.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// `p` (absolute, in the root's terms) under `root`, for messages and read-only looks.
pub fn under(root: &Path, p: &str) -> PathBuf {
    root.join(p.trim_start_matches('/'))
}

/// The machine under a root, and the programs to change it with.
pub struct Machine {
    /// The root directory.
    pub root: PathBuf,
    /// The programs.
    pub tools: Tools,
    /// [`Machine::loader`]'s answer, asked once: it runs bootctl, and `enable` asks for
    /// every lever.
    pub(crate) loader: std::cell::OnceCell<crate::Loader>,
}

impl Machine {
    /// The machine under `root` with the real programs (or their test doubles, see [`Tools`]).
    pub fn new(root: &Path) -> Machine {
        Machine {
            root: root.to_path_buf(),
            tools: Tools::for_root(root),
            loader: std::cell::OnceCell::new(),
        }
    }

    /// `p` under the root, for messages.
    pub fn path(&self, p: &str) -> PathBuf {
        under(&self.root, p)
    }

    fn root_dir(&self) -> io::Result<sys::Dir> {
        sys::Dir::open_following(&self.root)
    }

    /// The directory holding `p` (absolute, in the root's terms), opened in the root, and
    /// the name of `p` in it.
    fn parent_of(&self, p: &str) -> io::Result<(sys::Dir, OsString)> {
        let path = Path::new(p);
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no file name"));
        };
        let dir = sys::open_dir_in_root(&self.root_dir()?, parent)?;
        Ok((dir, name.to_os_string()))
    }

    /// The file `p` of the root, if it is there (a regular file of at most 1 MiB).
    pub fn read(&self, p: &str) -> Result<Option<Vec<u8>>, Error> {
        self.read_capped(p, MAX_READ)
    }

    /// The same for a file of at most `cap` bytes (an initramfs image).
    pub fn read_capped(&self, p: &str, cap: u64) -> Result<Option<Vec<u8>>, Error> {
        let err = |e: io::Error| {
            let path = self.path(p);
            Error::io(&path, format!("cannot read {}: {e}", path.display()), e)
        };
        let f = match self
            .root_dir()
            .and_then(|r| sys::open_in_root(&r, Path::new(p), libc::O_RDONLY | libc::O_NONBLOCK))
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(err(e)),
        };
        if !f.metadata().map_err(err)?.is_file() {
            return Err(err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            )));
        }
        sys::read_capped(f, cap).map(Some).map_err(err)
    }

    /// Writes the file `p` whole (`sys::write_atomic`'s way) with `mode`.
    pub fn write(&self, p: &str, bytes: &[u8], mode: u32) -> Result<(), Error> {
        self.write_with(p, |dir, name| dir.write_atomic_at(name, bytes, mode))
    }

    /// `write` in the directory holding `p`, opened in the root; an error names `p`.
    fn write_with(
        &self,
        p: &str,
        write: impl FnOnce(&sys::Dir, &std::ffi::OsStr) -> io::Result<()>,
    ) -> Result<(), Error> {
        self.parent_of(p)
            .and_then(|(dir, name)| write(&dir, &name))
            .map_err(|e| {
                let path = self.path(p);
                Error::io(&path, format!("cannot write {}: {e}", path.display()), e)
            })
    }

    /// Writes the file `p` whole on the EFI system partition (or XBOOTLDR): with the mode
    /// of the file it replaces (0644 for a new one), where the filesystem keeps modes; FAT
    /// has none and gives what its mount options say.
    pub fn write_fs_mode(&self, p: &str, bytes: &[u8]) -> Result<(), Error> {
        let mode = self.stat(p).map_or(0o644, |s| s.mode & 0o7777);
        self.write_with(p, |dir, name| {
            dir.write_atomic_at_fs_mode(name, bytes, mode)
        })
    }

    /// Removes the file `p` (a link itself, never what it points to); a missing one is no
    /// error, a directory there is.
    pub fn remove(&self, p: &str) -> Result<(), Error> {
        let err = |e: io::Error| {
            let path = self.path(p);
            Error::io(&path, format!("cannot remove {}: {e}", path.display()), e)
        };
        let (dir, name) = match self.parent_of(p) {
            Ok(x) => x,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(err(e)),
        };
        match dir.unlink_at(&name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other.map_err(err),
        }?;
        dir.sync().map_err(err)
    }

    /// What `p` is, if anything (never following a link at `p` itself).
    pub fn stat(&self, p: &str) -> Option<sys::EntryStat> {
        if p == "/" {
            return self.root_dir().and_then(|d| d.stat()).ok();
        }
        let (dir, name) = self.parent_of(p).ok()?;
        dir.stat_at(&name).ok().flatten()
    }

    /// Whether `p` is there (as anything, a dangling link included).
    pub fn exists(&self, p: &str) -> bool {
        self.stat(p).is_some()
    }

    /// Creates the directory `p` (its parent must exist), mode 0755.
    pub fn mkdir(&self, p: &str) -> Result<(), Error> {
        let err = |e: io::Error| {
            let path = self.path(p);
            Error::io(&path, format!("cannot create {}: {e}", path.display()), e)
        };
        let (dir, name) = self.parent_of(p).map_err(err)?;
        dir.mkdir_at(&name, 0o755).map_err(err)?;
        // Exactly 0755, whatever the umask.
        let sub = dir.dir_at(&name).map_err(err)?;
        sub.file()
            .set_permissions(fs::Permissions::from_mode(0o755))
            .map_err(err)?;
        dir.sync().map_err(err)
    }

    /// Removes the directory `p` if it is empty (something else may have put a file there
    /// since); missing is fine.
    pub fn rmdir_if_empty(&self, p: &str) {
        if let Ok((dir, name)) = self.parent_of(p) {
            if dir.rmdir_at(&name).is_ok() {
                let _ = dir.sync();
            }
        }
    }

    /// The manifest, if enable ran.
    pub fn manifest(&self) -> Result<Option<Manifest>, Error> {
        match self.read(MANIFEST)? {
            Some(bytes) => {
                let path = self.path(MANIFEST);
                let file = path.display().to_string();
                let text = String::from_utf8(bytes).map_err(|_| {
                    Error::new(
                        ErrorKind::BadManifest,
                        format!("{file}: expected text (UTF-8)"),
                    )
                    .at(&path)
                })?;
                Manifest::parse(&text, &file).map(Some)
            }
            None => Ok(None),
        }
    }

    /// The init system `/sbin/init` starts.
    pub fn init(&self) -> Init {
        let init = self.path("/sbin/init");
        match fs::read_link(&init) {
            Ok(t) if t.to_string_lossy().contains("systemd") => Init::Systemd,
            Ok(t) => Init::Other(format!("/sbin/init -> {}", t.display())),
            Err(_) if init.is_file() && self.path("/lib/init/rc").is_file() => Init::Sysvinit,
            Err(_) if init.exists() => Init::Other("an unknown /sbin/init".into()),
            Err(_) => Init::Other("no /sbin/init".into()),
        }
    }

    /// The boot loader the levers go through: systemd-boot when `bootctl is-installed` says
    /// it is on the EFI system partition and either GRUB's update-grub is missing or this
    /// boot came through systemd-boot (it sets the EFI variable `LoaderInfo`); else GRUB.
    pub fn loader(&self) -> crate::Loader {
        use crate::Loader;
        *self.loader.get_or_init(|| {
            let systemd_boot = succeeds(
                &self.tools.bootctl,
                &["is-installed", "--quiet"],
                &self.root,
            ) && (!self.tools.grub_present
                || fastpath::came_through_systemd_boot(&self.root));
            if systemd_boot {
                Loader::SystemdBoot
            } else {
                Loader::Grub
            }
        })
    }

    /// The kernel releases installed: /boot/vmlinuz-RELEASE with /lib/modules/RELEASE.
    pub fn kernels(&self) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.path("/boot"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let rel = name.strip_prefix("vmlinuz-")?.to_string();
                (crate::manifest::valid_release(&rel)
                    && self.path(&format!("/lib/modules/{rel}")).is_dir())
                .then_some(rel)
            })
            .collect();
        v.sort();
        v
    }

    /// The diversion of `path`: (diverted to, package; `LOCAL` for a local diversion), asked
    /// of dpkg-divert (`--listpackage`, `--truename`), not read from dpkg's database, whose
    /// format is dpkg's own. No dpkg-divert (not a Debian system): no diversions.
    pub fn diversion(&self, path: &str) -> Result<Option<(String, String)>, Error> {
        let Some(pkg) = output(
            &self.tools.dpkg_divert,
            &["--listpackage", path],
            &self.root,
        )?
        else {
            return Ok(None);
        };
        if pkg.is_empty() {
            return Ok(None);
        }
        let to =
            output(&self.tools.dpkg_divert, &["--truename", path], &self.root)?.unwrap_or_default();
        Ok(Some((to, pkg)))
    }

    /// Debian's startpar as dpkg knows it: the one of [`STARTPAR_PATHS`] already diverted
    /// (by bootprint or another), else `/usr/bin/startpar` when dpkg's database names that
    /// (Debian 13), else `/bin/startpar` (Debian 12). A diversion of the path dpkg does not
    /// name would not stop an upgrade of startpar writing over the wrapper.
    pub fn startpar(&self) -> Result<&'static str, Error> {
        for p in STARTPAR_PATHS {
            if self.diversion(p)?.is_some() {
                return Ok(p);
            }
        }
        let usr = STARTPAR_PATHS[1];
        let known = Command::new(&self.tools.dpkg_query[0])
            .args(&self.tools.dpkg_query[1..])
            .args(["--search", usr])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        Ok(if known { usr } else { STARTPAR_PATHS[0] })
    }

    /// Whether `startpar` (as [`Machine::startpar`] found it) is already the wrapper over
    /// Debian's startpar, diverted by someone else (the test bed's image does this with a
    /// local diversion): then the rc lever needs only its kernel parameter.
    pub fn startpar_hooked_by_other(&self, startpar: &str) -> Result<Option<String>, Error> {
        let Some((to, pkg)) = self.diversion(startpar)? else {
            return Ok(None);
        };
        if pkg == PACKAGE {
            return Ok(None);
        }
        let wrapper = self.read(WRAPPER).ok().flatten();
        let current = self.read(startpar).ok().flatten();
        let by = if pkg == "LOCAL" {
            "a local diversion".to_string()
        } else {
            pkg
        };
        if to == startpar_distrib(startpar) && wrapper.is_some() && wrapper == current {
            Ok(Some(by))
        } else {
            Err(Error::new(
                ErrorKind::NotSupported,
                format!(
                    "{startpar} is already diverted to {to} by {by}: bootprint will not divert it again"
                ),
            )
            .at(&self.path(startpar)))
        }
    }

    /// Why `lever` cannot work on this machine, if it cannot.
    pub fn cannot(&self, lever: crate::Lever) -> Option<String> {
        use crate::Lever;
        match lever {
            Lever::Record | Lever::Readahead | Lever::Modules => {
                let bin = self.path(BOOT_BIN);
                let exec = fs::metadata(&bin).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
                if !exec {
                    return Some(format!(
                        "{} is not an executable file: init= would name a program that is not there",
                        bin.display()
                    ));
                }
                match self.loader() {
                    crate::Loader::SystemdBoot => (!self.path(crate::loader::PLUGIN).is_file())
                        .then(|| {
                            format!(
                                "{} is missing: on systemd-boot the kernel parameters go \
                                 through bootprint's kernel-install plugin",
                                self.path(crate::loader::PLUGIN).display()
                            )
                        }),
                    crate::Loader::Grub => (!self.tools.grub_present).then(|| {
                        "update-grub is not installed and systemd-boot is not (`bootctl \
                         is-installed`): the kernel parameters go through Debian's GRUB \
                         (/etc/default/grub.d) or through systemd-boot's entries"
                            .to_string()
                    }),
                }
            }
            Lever::Rc => match self.init() {
                Init::Sysvinit => {
                    if !self.path(WRAPPER).is_file() {
                        return Some(format!("{} is missing", self.path(WRAPPER).display()));
                    }
                    let startpar = match self.startpar() {
                        Ok(p) => p,
                        Err(e) => return Some(e.to_string()),
                    };
                    match self.startpar_hooked_by_other(startpar) {
                        Err(e) => Some(e.to_string()),
                        Ok(Some(_)) => None,
                        Ok(None) if self.diversion(startpar).ok().flatten().is_some() => None,
                        Ok(None) if !self.path(startpar).is_file() => Some(format!(
                            "{} is missing (Debian's startpar package): /lib/init/rc runs the scripts one by one, there is nothing to replace",
                            self.path(startpar).display()
                        )),
                        Ok(None) => None,
                    }
                }
                other => Some(format!(
                    "the init script runner replaces sysvinit's startpar, and this system boots {}{}",
                    other.name(),
                    if other == Init::Systemd { " (its lever is --late)" } else { "" }
                )),
            },
            Lever::Timeouts => match self.init() {
                Init::Systemd => None,
                other => Some(format!(
                    "learned stop timeouts are a systemd lever (TimeoutStopSec= drop-ins), and \
                     this system boots {}",
                    other.name()
                )),
            },
            Lever::Late => match self.init() {
                Init::Systemd => None,
                other => Some(format!(
                    "late units are a systemd lever, and this system boots {}{}",
                    other.name(),
                    if other == Init::Sysvinit { " (its lever is --rc)" } else { "" }
                )),
            },
            Lever::Kexec => {
                let init = self.init();
                if !matches!(init, Init::Sysvinit | Init::Systemd) {
                    return Some(format!(
                        "an ordinary reboot by kexec needs sysvinit (with bootprint's runner) \
                         or systemd, and this system boots {}",
                        init.name()
                    ));
                }
                let why = fastpath::refusal::kexec_kernel(&self.root);
                (!why.is_empty()).then(|| why.join("; "))
            }
            Lever::Initramfs => {
                if self.kernels().is_empty() {
                    return Some(format!(
                        "no kernel is installed ({} has no vmlinuz-RELEASE with a /lib/modules/RELEASE)",
                        self.path("/boot").display()
                    ));
                }
                self.root_refused_by_initramfs()
            }
        }
    }
}

impl Machine {
    /// Why bootprint's initramfs cannot mount the running root (LVM, dm-crypt, md, a
    /// network file system: the build's own refusal), asked before anything changes so
    /// that `--all` leaves the lever out and turns the others on. A root it cannot look at
    /// (no mountinfo under a test's root) is not a refusal: the build says what it finds.
    fn root_refused_by_initramfs(&self) -> Option<String> {
        let mut o = initramfs::build::Options::new(PathBuf::new());
        o.fsroot = self.root.clone();
        o.sys = self.path("/sys");
        o.proc_dir = self.path("/proc");
        o.dev = self.path("/dev");
        match initramfs::build::check_root(&o) {
            Err(e) if e.kind() == initramfs::ErrorKind::Unsupported => Some(format!(
                "bootprint's initramfs cannot mount this root: {}",
                e.message()
            )),
            _ => None,
        }
    }
}

fn shown(argv: &[OsString], extra: &[&str]) -> String {
    argv.iter()
        .map(|a| a.to_string_lossy().into_owned())
        .chain(extra.iter().map(|s| s.to_string()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs an argument vector; a failure names the command.
pub fn run(argv: &[OsString], extra: &[&str], root: &Path) -> Result<(), Error> {
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .args(extra)
        .env("BOOTPRINT_ROOT", root)
        .status()
        .map_err(|e| cannot_run(argv, extra, e))?;
    if status.success() {
        Ok(())
    } else {
        Err(failed(argv, extra, status))
    }
}

/// Whether an argument vector runs and succeeds (its output discarded: a question, not a
/// change).
fn succeeds(argv: &[OsString], extra: &[&str], root: &Path) -> bool {
    Command::new(&argv[0])
        .args(&argv[1..])
        .args(extra)
        .env("BOOTPRINT_ROOT", root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `argv extra` could not be started.
fn cannot_run(argv: &[OsString], extra: &[&str], e: io::Error) -> Error {
    let cmd = shown(argv, extra);
    Error::of_command(format!("cannot run `{cmd}`: {e}"), cmd, None, Some(e))
}

/// `argv extra` ran and failed.
fn failed(argv: &[OsString], extra: &[&str], status: std::process::ExitStatus) -> Error {
    let cmd = shown(argv, extra);
    Error::of_command(
        format!("`{cmd}` failed ({status})"),
        cmd,
        Some(status),
        None,
    )
}

/// Runs `argv extra` and returns its first line of output, trimmed; `None` when the program
/// is not there at all.
fn output(argv: &[OsString], extra: &[&str], root: &Path) -> Result<Option<String>, Error> {
    let out = match Command::new(&argv[0])
        .args(&argv[1..])
        .args(extra)
        .env("BOOTPRINT_ROOT", root)
        .stderr(std::process::Stdio::inherit())
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(cannot_run(argv, extra, e)),
    };
    if !out.status.success() {
        return Err(failed(argv, extra, out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(Some(text.lines().next().unwrap_or("").trim().to_string()))
}
