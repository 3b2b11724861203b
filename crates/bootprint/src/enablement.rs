//! What `bootprint enable` changes on a machine and how `bootprint disable` takes it back
//! (docs/enable.md): the levers, the manifest of every change (`/var/lib/bootprint/enabled`),
//! the GRUB drop-in that carries the kernel parameters, the startpar diversion, the initramfs
//! images under /boot. `disable` undoes exactly what the manifest lists, so it never touches
//! what bootprint did not change. Every path is under a root (`--root DIR`), and the external
//! programs (update-grub, dpkg-divert, the initramfs build) are a [`Tools`] value, so tests run
//! it all on a fake tree.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What enable changed, one record a line; the kernel hooks and the GRUB script read it too.
pub const MANIFEST: &str = "/var/lib/bootprint/enabled";
/// The GRUB drop-in: grub-mkconfig sources /etc/default/grub.d/*.cfg after /etc/default/grub.
pub const DROPIN: &str = "/etc/default/grub.d/bootprint.cfg";
/// The boot-path binary `init=` names.
pub const BOOT_BIN: &str = "/usr/lib/bootprint/bootprint-boot";
/// The startpar wrapper the package installs (packaging/startpar-wrapper).
pub const WRAPPER: &str = "/usr/lib/bootprint/startpar-wrapper";
/// Debian's startpar, which /lib/init/rc runs.
pub const STARTPAR: &str = "/bin/startpar";
/// Where the diversion moves Debian's startpar (the wrapper runs it when the runner is off).
pub const STARTPAR_DISTRIB: &str = "/bin/startpar.distrib";
/// The GRUB menu entry id of the newest kernel with bootprint's initramfs
/// (packaging/grub.d); `--default` points GRUB_DEFAULT at it.
pub const ENTRY_ID: &str = "bootprint-initramfs";
/// The package name diversions are made for.
const PACKAGE: &str = "bootprint";

/// One thing `enable` can switch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lever {
    /// bootprint-boot as `init=`: records every boot. Every other lever needs it.
    Record,
    /// Readahead (`bootprint.readahead=1`).
    Readahead,
    /// The parallel module loader (`bootprint.modules=1`).
    Modules,
    /// The LSB runner in place of startpar (`bootprint.rc=1`, sysvinit only).
    Rc,
    /// Late units (`bootprint.late=1`, systemd only).
    Late,
    /// bootprint's initramfs, an extra GRUB entry per kernel.
    Initramfs,
}

impl Lever {
    /// Every lever, in manifest order.
    pub const ALL: [Lever; 6] = [
        Lever::Record,
        Lever::Readahead,
        Lever::Modules,
        Lever::Rc,
        Lever::Late,
        Lever::Initramfs,
    ];

    /// Its name in the manifest, the options and the output.
    pub fn word(self) -> &'static str {
        match self {
            Lever::Record => "record",
            Lever::Readahead => "readahead",
            Lever::Modules => "modules",
            Lever::Rc => "rc",
            Lever::Late => "late",
            Lever::Initramfs => "initramfs",
        }
    }

    fn from_word(w: &str) -> Option<Lever> {
        Lever::ALL.into_iter().find(|l| l.word() == w)
    }

    /// The kernel parameter it adds to the command line (the initramfs lever adds none: its
    /// entry boots with the same command line).
    pub fn param(self) -> Option<String> {
        match self {
            Lever::Record => Some(format!("init={BOOT_BIN}")),
            Lever::Initramfs => None,
            l => Some(format!("bootprint.{}=1", l.word())),
        }
    }
}

/// One change enable made, so disable can take it back.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A directory that did not exist (removed again when empty).
    CreatedDir(String),
    /// A file that did not exist (removed).
    Created(String),
    /// `dpkg-divert --package bootprint --rename --divert TO --add PATH`.
    Diverted { path: String, to: String },
    /// An initramfs image built for a kernel (removed).
    Built { kernel: String, image: String },
}

impl Change {
    fn line(&self) -> String {
        match self {
            Change::CreatedDir(p) => format!("created-dir {p}"),
            Change::Created(p) => format!("created {p}"),
            Change::Diverted { path, to } => format!("diverted {path} {to}"),
            Change::Built { kernel, image } => format!("built {kernel} {image}"),
        }
    }
}

/// The manifest: the levers on, whether our entry is GRUB's default, and every change made.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Manifest {
    /// The levers enable switched on.
    pub levers: BTreeSet<Lever>,
    /// `--default`: GRUB_DEFAULT points at bootprint's initramfs entry.
    pub default_entry: bool,
    /// In the order they were made; undone in reverse.
    pub changes: Vec<Change>,
}

impl Manifest {
    /// Parses the manifest's text; `file` names it in errors (with the line and what was
    /// expected there).
    pub fn parse(text: &str, file: &str) -> Result<Manifest, String> {
        let mut m = Manifest::default();
        for (i, line) in text.lines().enumerate() {
            let w: Vec<&str> = line.split_whitespace().collect();
            let bad = |what: &str| format!("{file}:{}: expected {what}, found {line:?}", i + 1);
            match w.as_slice() {
                [] => {}
                [c, ..] if c.starts_with('#') => {}
                ["lever", l] => {
                    let lever = Lever::from_word(l).ok_or_else(|| {
                        bad("a lever (record, readahead, modules, rc, late, initramfs)")
                    })?;
                    m.levers.insert(lever);
                }
                ["default", "initramfs"] => m.default_entry = true,
                ["created-dir", p] if p.starts_with('/') => {
                    m.changes.push(Change::CreatedDir(p.to_string()))
                }
                ["created", p] if p.starts_with('/') => {
                    m.changes.push(Change::Created(p.to_string()))
                }
                ["diverted", p, to] if p.starts_with('/') && to.starts_with('/') => {
                    m.changes.push(Change::Diverted {
                        path: p.to_string(),
                        to: to.to_string(),
                    })
                }
                ["built", k, img] if img.starts_with('/') => m.changes.push(Change::Built {
                    kernel: k.to_string(),
                    image: img.to_string(),
                }),
                _ => {
                    return Err(bad(
                        "`lever NAME`, `default initramfs`, `created-dir PATH`, `created PATH`, \
                     `diverted PATH TO` or `built RELEASE IMAGE`",
                    ))
                }
            }
        }
        Ok(m)
    }

    /// The manifest's text.
    pub fn to_text(&self) -> String {
        let mut s = String::from(
            "# bootprint enable: what it changed on this machine. `bootprint disable` undoes\n\
             # exactly this, newest change first; the kernel hooks and /etc/grub.d/42_bootprint\n\
             # read the `lever` lines.\n",
        );
        for l in &self.levers {
            s.push_str(&format!("lever {}\n", l.word()));
        }
        if self.default_entry {
            s.push_str("default initramfs\n");
        }
        for c in &self.changes {
            s.push_str(&c.line());
            s.push('\n');
        }
        s
    }
}

/// The kernel parameters of a set of levers, in lever order.
pub fn params(levers: &BTreeSet<Lever>) -> Vec<String> {
    levers.iter().filter_map(|l| l.param()).collect()
}

/// The drop-in's text. The parameters go to GRUB_CMDLINE_LINUX_DEFAULT, which Debian's
/// 10_linux puts on its normal entries but not on the recovery ones: recovery mode boots
/// without bootprint.
pub fn dropin_text(m: &Manifest) -> String {
    let levers: Vec<&str> = m.levers.iter().map(|l| l.word()).collect();
    let mut s = format!(
        "# Written by `bootprint enable` (levers: {}); `bootprint disable` removes it.\n\
         # Do not edit: it is rewritten by the next `bootprint enable`.\n\
         GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT {}\"\n",
        levers.join(" "),
        params(&m.levers).join(" ")
    );
    if m.default_entry {
        s.push_str(&format!(
            "# `--default`: the newest kernel's entry with bootprint's initramfs boots by default.\n\
             GRUB_DEFAULT={ENTRY_ID}\n"
        ));
    }
    s
}

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
/// environment (`BOOTPRINT_UPDATE_GRUB`, `BOOTPRINT_DPKG_DIVERT`, `BOOTPRINT_INITRAMFS_BUILD`:
/// a program run in place of the real one, with `BOOTPRINT_ROOT` set to the root).
#[derive(Debug, Clone)]
pub struct Tools {
    /// Regenerates grub.cfg (Debian's `update-grub`).
    pub update_grub: Vec<OsString>,
    /// dpkg's `dpkg-divert` (with `--root DIR` for another root).
    pub dpkg_divert: Vec<OsString>,
    /// `bootprint initramfs build`; `--kernel RELEASE --out IMAGE` are appended.
    pub initramfs_build: Vec<OsString>,
    /// Whether GRUB's update-grub is there to run.
    pub grub_present: bool,
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
        if !here {
            dpkg_divert.extend(["--root".into(), root.into()]);
        }
        let initramfs_build = match env("BOOTPRINT_INITRAMFS_BUILD") {
            Some(p) => vec![p],
            None if here => {
                let me = std::env::current_exe().unwrap_or_else(|_| "/usr/bin/bootprint".into());
                vec![me.into(), "initramfs".into(), "build".into()]
            }
            None => chroot(&["/usr/bin/bootprint", "initramfs", "build"]),
        };
        Tools {
            update_grub,
            dpkg_divert,
            initramfs_build,
            grub_present,
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

/// `p` (absolute, in the root's terms) under `root`.
pub fn under(root: &Path, p: &str) -> PathBuf {
    root.join(p.trim_start_matches('/'))
}

/// The machine under a root, and the programs to change it with.
pub struct Machine {
    /// The root directory.
    pub root: PathBuf,
    /// The programs.
    pub tools: Tools,
}

/// Reads a file of the root; a missing file is `None`.
fn read_opt(path: &Path) -> Result<Option<String>, String> {
    match fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

impl Machine {
    /// The machine under `root` with the real programs (or their test doubles, see [`Tools`]).
    pub fn new(root: &Path) -> Machine {
        Machine {
            root: root.to_path_buf(),
            tools: Tools::for_root(root),
        }
    }

    fn path(&self, p: &str) -> PathBuf {
        under(&self.root, p)
    }

    /// The manifest, if enable ran.
    pub fn manifest(&self) -> Result<Option<Manifest>, String> {
        let path = self.path(MANIFEST);
        match read_opt(&path)? {
            Some(t) => Manifest::parse(&t, &path.display().to_string()).map(Some),
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

    /// The kernel releases installed: /boot/vmlinuz-RELEASE with /lib/modules/RELEASE.
    pub fn kernels(&self) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.path("/boot"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let rel = name.strip_prefix("vmlinuz-")?.to_string();
                self.path(&format!("/lib/modules/{rel}"))
                    .is_dir()
                    .then_some(rel)
            })
            .collect();
        v.sort();
        v
    }

    /// The diversion of `path`: (diverted to, package; `LOCAL` for a local diversion), asked
    /// of dpkg-divert (`--listpackage`, `--truename`), not read from dpkg's database, whose
    /// format is dpkg's own. No dpkg-divert (not a Debian system): no diversions.
    pub fn diversion(&self, path: &str) -> Result<Option<(String, String)>, String> {
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

    /// Whether /bin/startpar is already the wrapper over Debian's startpar, diverted by
    /// someone else (the test bed's image does this with a local diversion): then the rc
    /// lever needs only its kernel parameter.
    fn startpar_hooked_by_other(&self) -> Result<Option<String>, String> {
        let Some((to, pkg)) = self.diversion(STARTPAR)? else {
            return Ok(None);
        };
        if pkg == PACKAGE {
            return Ok(None);
        }
        let wrapper = fs::read(self.path(WRAPPER)).ok();
        let current = fs::read(self.path(STARTPAR)).ok();
        if to == STARTPAR_DISTRIB && wrapper.is_some() && wrapper == current {
            Ok(Some(if pkg == "LOCAL" {
                "a local diversion".into()
            } else {
                pkg
            }))
        } else {
            Err(format!(
                "{STARTPAR} is already diverted to {to} by {}: bootprint will not divert it again",
                if pkg == "LOCAL" {
                    "a local diversion"
                } else {
                    &pkg
                }
            ))
        }
    }

    /// Why `lever` cannot work on this machine, if it cannot.
    pub fn cannot(&self, lever: Lever) -> Option<String> {
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
                (!self.tools.grub_present).then(|| {
                    "update-grub is not installed: the kernel parameters go through GRUB \
                     (/etc/default/grub.d), and this machine does not boot with Debian's GRUB"
                        .to_string()
                })
            }
            Lever::Rc => match self.init() {
                Init::Sysvinit => {
                    if !self.path(WRAPPER).is_file() {
                        return Some(format!("{} is missing", self.path(WRAPPER).display()));
                    }
                    match self.startpar_hooked_by_other() {
                        Err(e) => Some(e),
                        Ok(Some(_)) => None,
                        Ok(None) if self.diversion(STARTPAR).ok().flatten().is_some() => None,
                        Ok(None) if !self.path(STARTPAR).is_file() => Some(format!(
                            "{} is missing (Debian's startpar package): /lib/init/rc runs the scripts one by one, there is nothing to replace",
                            self.path(STARTPAR).display()
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
            Lever::Late => match self.init() {
                Init::Systemd => None,
                other => Some(format!(
                    "late units are a systemd lever, and this system boots {}{}",
                    other.name(),
                    if other == Init::Sysvinit { " (its lever is --rc)" } else { "" }
                )),
            },
            Lever::Initramfs => self.kernels().is_empty().then(|| {
                format!(
                    "no kernel is installed ({} has no vmlinuz-RELEASE with a /lib/modules/RELEASE)",
                    self.path("/boot").display()
                )
            }),
        }
    }
}

/// What the admin asked enable for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The levers named.
    pub levers: BTreeSet<Lever>,
    /// `--all`: every lever that can work here (the others are named and left out).
    pub all: bool,
    /// `--default`: our initramfs entry becomes GRUB's default.
    pub default_entry: bool,
}

/// Runs an argument vector; a failure names the command.
fn run(argv: &[OsString], extra: &[&str], root: &Path) -> Result<(), String> {
    let shown = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .chain(extra.iter().map(|s| s.to_string()))
        .collect::<Vec<_>>()
        .join(" ");
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .args(extra)
        .env("BOOTPRINT_ROOT", root)
        .status()
        .map_err(|e| format!("cannot run `{shown}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

/// Runs `argv extra` and returns its first line of output, trimmed; `None` when the program
/// is not there at all.
fn output(argv: &[OsString], extra: &[&str], root: &Path) -> Result<Option<String>, String> {
    let shown = || {
        argv.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .chain(extra.iter().map(|s| s.to_string()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let out = match Command::new(&argv[0])
        .args(&argv[1..])
        .args(extra)
        .env("BOOTPRINT_ROOT", root)
        .stderr(std::process::Stdio::inherit())
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot run `{}`: {e}", shown())),
    };
    if !out.status.success() {
        return Err(format!("`{}` failed ({})", shown(), out.status));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(Some(text.lines().next().unwrap_or("").trim().to_string()))
}

fn write_file(path: &Path, text: &str, mode: u32) -> Result<(), String> {
    sys::write_atomic(path, text.as_bytes())
        .and_then(|_| fs::set_permissions(path, fs::Permissions::from_mode(mode)))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Removes an initramfs image and the summary the build writes beside it (`IMAGE.txt`).
fn remove_image(image: &Path) -> Result<(), String> {
    remove(image)?;
    let mut txt = image.as_os_str().to_owned();
    txt.push(".txt");
    remove(Path::new(&txt))
}

fn remove(path: &Path) -> Result<(), String> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
    }
}

/// The changes of one enable run, saved to the manifest after each so that a crash leaves a
/// manifest disable can work from; on a failure they are undone.
struct Journal<'a> {
    m: &'a Machine,
    manifest: Manifest,
}

impl Journal<'_> {
    fn save(&self) -> Result<(), String> {
        write_file(&self.m.path(MANIFEST), &self.manifest.to_text(), 0o644)
    }

    fn push(&mut self, c: Change) -> Result<(), String> {
        self.manifest.changes.push(c);
        self.save()
    }

    /// Creates `dir` and its missing parents, each recorded.
    fn ensure_dir(&mut self, dir: &str) -> Result<(), String> {
        let mut missing = Vec::new();
        let mut d = Path::new(dir);
        while !self.m.path(&d.to_string_lossy()).is_dir() {
            missing.push(d.to_string_lossy().into_owned());
            d = match d.parent() {
                Some(p) => p,
                None => break,
            };
        }
        for d in missing.into_iter().rev() {
            let p = self.m.path(&d);
            fs::create_dir(&p).map_err(|e| format!("cannot create {}: {e}", p.display()))?;
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("cannot set the mode of {}: {e}", p.display()))?;
            // The manifest's own directory cannot hold it before it exists.
            self.manifest.changes.push(Change::CreatedDir(d));
            if self.m.path(MANIFEST).parent().is_some_and(Path::is_dir) {
                self.save()?;
            }
        }
        Ok(())
    }
}

/// Undoes one change. Dirs are only removed when empty (something else may have put a file
/// there since).
fn undo(m: &Machine, c: &Change) -> Result<(), String> {
    match c {
        Change::Created(p) => remove(&m.path(p)),
        Change::Built { image, .. } => remove_image(&m.path(image)),
        Change::CreatedDir(d) => {
            let p = m.path(d);
            match fs::remove_dir(&p) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                // Not empty: someone else's files are in it now; leave it.
                Err(_) => Ok(()),
            }
        }
        Change::Diverted { path, to } => {
            // Only if the diversion is still ours (a dpkg --purge may have removed it).
            match m.diversion(path)? {
                Some((t, pkg)) if pkg == PACKAGE && t == *to => run(
                    &m.tools.dpkg_divert,
                    &["--package", PACKAGE, "--rename", "--remove", path],
                    &m.root,
                ),
                _ => Ok(()),
            }
        }
    }
}

/// Undoes `changes` newest first: files, diversions and images, then the directories. Returns
/// the changes it could not undo, with the errors.
fn undo_all(m: &Machine, changes: &[Change]) -> (Vec<Change>, Vec<String>) {
    let mut left = Vec::new();
    let mut errors = Vec::new();
    let (dirs, rest): (Vec<&Change>, Vec<&Change>) = changes
        .iter()
        .partition(|c| matches!(c, Change::CreatedDir(_)));
    for c in rest.into_iter().rev().chain(dirs.into_iter().rev()) {
        if let Err(e) = undo(m, c) {
            errors.push(e);
            left.push(c.clone());
        }
    }
    left.reverse();
    (left, errors)
}

/// Runs update-grub, or says why it was not run.
fn update_grub(m: &Machine, said: &mut Vec<String>) -> Result<(), String> {
    if !m.tools.grub_present {
        said.push("update-grub is not installed: GRUB's configuration was not regenerated".into());
        return Ok(());
    }
    run(&m.tools.update_grub, &[], &m.root)?;
    said.push("update-grub: done".into());
    Ok(())
}

/// `bootprint enable`: switches the asked levers on (added to those already on). Returns what
/// it says; an error changed nothing (what it had done is undone).
pub fn enable(m: &Machine, req: &Request) -> Result<Vec<String>, String> {
    let mut said = Vec::new();
    let old = m.manifest()?;
    let before = old.clone().unwrap_or_default();
    let mut asked: BTreeSet<Lever> = req.levers.clone();
    if req.all {
        for l in Lever::ALL {
            if before.levers.contains(&l) || asked.contains(&l) {
                continue;
            }
            match m.cannot(l) {
                None => {
                    asked.insert(l);
                }
                Some(why) => said.push(format!("--all: {} left out: {why}", l.word())),
            }
        }
    }
    if req.default_entry {
        asked.insert(Lever::Initramfs);
    }
    if !asked.is_empty() {
        asked.insert(Lever::Record);
    }
    let new: BTreeSet<Lever> = asked.difference(&before.levers).copied().collect();
    let default_now = req.default_entry && !before.default_entry;
    if new.is_empty() && !default_now {
        let on: Vec<&str> = before.levers.iter().map(|l| l.word()).collect();
        said.push(if on.is_empty() {
            "no lever asked for: nothing changed".into()
        } else {
            format!("already on: {}; nothing changed", on.join(" "))
        });
        return Ok(said);
    }
    let refusals: Vec<String> = new
        .iter()
        .filter_map(|&l| m.cannot(l).map(|why| format!("--{}: {why}", l.word())))
        .collect();
    if !refusals.is_empty() {
        return Err(format!("{}; nothing changed", refusals.join("; ")));
    }
    let dropin_ours = before
        .changes
        .contains(&Change::Created(DROPIN.to_string()));
    if !dropin_ours && m.path(DROPIN).exists() {
        return Err(format!(
            "{} exists and bootprint did not write it (it is not in {}): move it away first; nothing changed",
            m.path(DROPIN).display(),
            m.path(MANIFEST).display()
        ));
    }

    let mut j = Journal {
        m,
        manifest: before.clone(),
    };
    let mut target = before.clone();
    target.levers.extend(new.iter().copied());
    target.default_entry |= req.default_entry;
    let result = apply(&mut j, &new, &target, dropin_ours, &mut said);
    if let Err(e) = result {
        // Back to the state before this run: undo its changes, restore the drop-in and the
        // manifest as they were.
        let mine = &j.manifest.changes[before.changes.len()..];
        let (_, mut errors) = undo_all(m, mine);
        let restored = if dropin_ours {
            write_file(&m.path(DROPIN), &dropin_text(&before), 0o644)
        } else {
            Ok(())
        }
        .and_then(|_| match &old {
            Some(o) => write_file(&m.path(MANIFEST), &o.to_text(), 0o644),
            None => remove(&m.path(MANIFEST)),
        });
        if let Err(r) = restored {
            errors.push(r);
        }
        // A directory of the manifest that this run created is empty again now.
        let (_, more) = undo_all(
            m,
            &mine
                .iter()
                .filter(|c| matches!(c, Change::CreatedDir(_)))
                .cloned()
                .collect::<Vec<_>>(),
        );
        errors.extend(more);
        return Err(if errors.is_empty() {
            format!("{e}; what this run had changed is undone")
        } else {
            format!(
                "{e}; undoing what this run had changed failed too: {}",
                errors.join("; ")
            )
        });
    }
    Ok(said)
}

fn apply(
    j: &mut Journal,
    new: &BTreeSet<Lever>,
    target: &Manifest,
    dropin_ours: bool,
    said: &mut Vec<String>,
) -> Result<(), String> {
    let m = j.m;
    j.ensure_dir(Path::new(MANIFEST).parent().unwrap().to_str().unwrap())?;
    j.save()?;
    // The diversion and the images first, the drop-in last: GRUB sees the parameters only
    // once what they need is in place.
    if new.contains(&Lever::Rc) {
        match m.startpar_hooked_by_other()? {
            Some(by) => said.push(format!(
                "rc: {STARTPAR} is already the wrapper over {STARTPAR_DISTRIB} ({by}): left as it is"
            )),
            None if m.diversion(STARTPAR)?.is_some() => {
                said.push(format!("rc: {STARTPAR} is already diverted by bootprint"))
            }
            None => {
                run(
                    &m.tools.dpkg_divert,
                    &[
                        "--package",
                        PACKAGE,
                        "--rename",
                        "--divert",
                        STARTPAR_DISTRIB,
                        "--add",
                        STARTPAR,
                    ],
                    &m.root,
                )?;
                j.push(Change::Diverted {
                    path: STARTPAR.into(),
                    to: STARTPAR_DISTRIB.into(),
                })?;
                let wrapper = fs::read_to_string(m.path(WRAPPER))
                    .map_err(|e| format!("cannot read {}: {e}", m.path(WRAPPER).display()))?;
                // A copy, not a link: should the package go without its prerm, the copy
                // still runs Debian's startpar (it checks for bootprint-boot first).
                j.push(Change::Created(STARTPAR.into()))?;
                write_file(&m.path(STARTPAR), &wrapper, 0o755)?;
                said.push(format!(
                    "rc: diverted {STARTPAR} to {STARTPAR_DISTRIB}, the wrapper in its place"
                ));
            }
        }
    }
    if new.contains(&Lever::Initramfs) {
        for kernel in m.kernels() {
            build_image(j, &kernel, said)?;
        }
    }
    if !dropin_ours {
        j.ensure_dir("/etc/default/grub.d")?;
        j.push(Change::Created(DROPIN.into()))?;
    }
    write_file(&m.path(DROPIN), &dropin_text(target), 0o644)?;
    said.push(format!(
        "wrote {}: {}{}",
        m.path(DROPIN).display(),
        params(&target.levers).join(" "),
        if target.default_entry {
            format!(" and GRUB_DEFAULT={ENTRY_ID}")
        } else {
            String::new()
        }
    ));
    j.manifest.levers = target.levers.clone();
    j.manifest.default_entry = target.default_entry;
    j.save()?;
    update_grub(m, said)?;
    Ok(())
}

/// Builds the image of `kernel` (again, if it is there) and records it.
fn build_image(j: &mut Journal, kernel: &str, said: &mut Vec<String>) -> Result<(), String> {
    let image = ::initramfs::build::default_out(kernel)
        .to_string_lossy()
        .into_owned();
    let change = Change::Built {
        kernel: kernel.into(),
        image: image.clone(),
    };
    if !j.manifest.changes.contains(&change) {
        if j.m.path(&image).exists() {
            return Err(format!(
                "{} exists and bootprint's manifest does not list it: move it away first",
                j.m.path(&image).display()
            ));
        }
        // Recorded first: a build that fails half way leaves a file to remove.
        j.push(change)?;
    }
    run(
        &j.m.tools.initramfs_build,
        &["--kernel", kernel, "--out", &image],
        &j.m.root,
    )?;
    said.push(format!("initramfs: built {image}"));
    Ok(())
}

/// `bootprint disable`: undoes every change the manifest lists, newest first, then runs
/// update-grub once. Nothing enabled is not an error (the package's prerm runs it).
pub fn disable(m: &Machine) -> Result<Vec<String>, String> {
    let mut said = Vec::new();
    let Some(manifest) = m.manifest()? else {
        said.push(format!(
            "nothing to disable: {} does not exist",
            m.path(MANIFEST).display()
        ));
        return Ok(said);
    };
    let (dirs, files): (Vec<Change>, Vec<Change>) = manifest
        .changes
        .iter()
        .cloned()
        .partition(|c| matches!(c, Change::CreatedDir(_)));
    let (left, errors) = undo_all(m, &files);
    if !errors.is_empty() {
        let mut rest = manifest.clone();
        rest.changes = dirs.into_iter().chain(left).collect();
        let _ = write_file(&m.path(MANIFEST), &rest.to_text(), 0o644);
        return Err(format!(
            "{}; {} lists what is left to undo",
            errors.join("; "),
            m.path(MANIFEST).display()
        ));
    }
    for c in files.iter().rev() {
        said.push(match c {
            Change::Created(p) => format!("removed {p}"),
            Change::Built { image, .. } => format!("removed {image}"),
            Change::Diverted { path, to } => format!("undid the diversion of {path} to {to}"),
            Change::CreatedDir(_) => continue,
        });
    }
    // GRUB's menu still has the parameters until update-grub has run: should it fail, the
    // manifest stays (with only its directories left to undo), so disable can be run again.
    if let Err(e) = update_grub(m, &mut said) {
        let rest = Manifest {
            changes: dirs,
            ..Manifest::default()
        };
        let _ = write_file(&m.path(MANIFEST), &rest.to_text(), 0o644);
        return Err(format!(
            "{e}: bootprint's changes are undone, but GRUB's menu still boots with its \
             parameters; fix update-grub and run `bootprint disable` again"
        ));
    }
    remove(&m.path(MANIFEST))?;
    let (_, errors) = undo_all(m, &dirs);
    if !errors.is_empty() {
        return Err(errors.join("; "));
    }
    Ok(said)
}

/// The kernel postinst hook: with the initramfs lever on, builds the new kernel's image (the
/// distribution's zz-update-grub hook, which runs after ours, adds its entry). Silent and
/// changing nothing otherwise.
pub fn kernel_installed(m: &Machine, kernel: &str) -> Result<Vec<String>, String> {
    let mut said = Vec::new();
    let Some(manifest) = m.manifest()? else {
        return Ok(said);
    };
    if !manifest.levers.contains(&Lever::Initramfs) {
        return Ok(said);
    }
    let mut j = Journal { m, manifest };
    build_image(&mut j, kernel, &mut said)?;
    Ok(said)
}

/// The kernel postrm hook: removes the image enable or the postinst hook built for `kernel`.
pub fn kernel_removed(m: &Machine, kernel: &str) -> Result<Vec<String>, String> {
    let mut said = Vec::new();
    let Some(mut manifest) = m.manifest()? else {
        return Ok(said);
    };
    let before = manifest.changes.len();
    let mut err = None;
    manifest.changes.retain(|c| match c {
        Change::Built { kernel: k, image } if k == kernel => {
            match remove_image(&m.path(image)) {
                Ok(()) => said.push(format!("initramfs: removed {image}")),
                Err(e) => err = Some(e),
            }
            false
        }
        _ => true,
    });
    if let Some(e) = err {
        return Err(e);
    }
    if manifest.changes.len() != before {
        write_file(&m.path(MANIFEST), &manifest.to_text(), 0o644)?;
    }
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trip() {
        let m = Manifest {
            levers: [Lever::Record, Lever::Rc, Lever::Initramfs].into(),
            default_entry: true,
            changes: vec![
                Change::CreatedDir("/var/lib/bootprint".into()),
                Change::Diverted {
                    path: STARTPAR.into(),
                    to: STARTPAR_DISTRIB.into(),
                },
                Change::Created(STARTPAR.into()),
                Change::Built {
                    kernel: "6.1.0-9-amd64".into(),
                    image: "/boot/bootprint-initrd.img-6.1.0-9-amd64".into(),
                },
                Change::Created(DROPIN.into()),
            ],
        };
        let text = m.to_text();
        assert!(
            text.contains("\nlever initramfs\ndefault initramfs\ncreated-dir /var/lib/bootprint\n")
        );
        assert_eq!(Manifest::parse(&text, "x").unwrap(), m);
    }

    #[test]
    fn manifest_errors_name_the_line_and_what_was_expected() {
        let e = Manifest::parse("lever record\n\ncreated etc/x\n", "/m").unwrap_err();
        assert!(e.starts_with("/m:3: expected `lever NAME`"), "{e}");
        let e = Manifest::parse("lever warp\n", "/m").unwrap_err();
        assert!(e.starts_with("/m:1: expected a lever (record,"), "{e}");
    }

    #[test]
    fn dropin_carries_the_parameters_and_the_default_only_when_asked() {
        let mut m = Manifest {
            levers: [Lever::Record, Lever::Readahead, Lever::Late].into(),
            ..Manifest::default()
        };
        let t = dropin_text(&m);
        assert!(t.contains(
            "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT init=/usr/lib/bootprint/bootprint-boot bootprint.readahead=1 bootprint.late=1\"\n"
        ), "{t}");
        assert!(!t.contains("GRUB_DEFAULT="), "{t}");
        m.default_entry = true;
        assert!(dropin_text(&m).ends_with("GRUB_DEFAULT=bootprint-initramfs\n"));
    }
}
