//! Built-in equivalents of Debian's early-boot scripts (issue 15, part 2) and of the
//! scripts that end a shutdown ([`shutdown`], issue 43).
//!
//! On the test image most of runlevel S's time goes into shell: `mountkernfs.sh` forks about
//! thirty processes to mount one tmpfs, `urandom` a dozen to copy 32 bytes. The runner runs
//! these instead, as `bootprint-boot rc-builtin SCRIPT start` (its own process, so the
//! script's timeout, pty and span apply unchanged), **only** where doing exactly what the
//! script would do is certain:
//!
//! - the script and every file it sources are Debian's own, byte for byte, as Debian 12 or
//!   13 ships them (SHA-256 in [`Builtin::script_known`] and [`Builtin::known_files`];
//!   `/lib/lsb/init-functions.d` holds no other hook): an edited or unknown script runs as a
//!   script; where the releases' copies differ on the built-in's path, it does what the copy
//!   on the system does;
//! - its configuration is the default: `/etc/default/rcS` and `/etc/default/tmpfs` set
//!   nothing, `/etc/default/devpts` sets only `TTYGRP` and `TTYMODE`, `/etc/fstab` names none
//!   of the mount points it handles (the `proc` line Debian ships aside), there is no
//!   `/etc/fstab.d` and no SELinux `restorecon`;
//! - at run time, what the script would find: `/run`, `/proc` and `/sys` already mounted (the
//!   initramfs moved them), the file systems it mounts known to the kernel, no
//!   `/run/systemd/system`.
//!
//! Anything else, and any step that fails, ends the built-in with [`DECLINED`]: the runner
//! then runs the script itself, which is idempotent (its own comment: "May be run several
//! times"), so a built-in that stopped half-way leaves nothing the script does not mend.
//! The early-boot scripts' `start` action is built in, the shutdown's scripts' `stop`
//! ([`Builtin::action`]).

pub mod checkroot;
pub mod mountall;
pub mod sha256;
pub mod shutdown;

use std::fs;
use std::io::{self, Read, Write};

use crate::{Error, ErrorKind};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Exit code of a built-in that did not (or not wholly) do the script's work: run the script.
pub const DECLINED: i32 = 254;

/// Environment variable that makes every built-in fail after its first step (the fault
/// switch `bootprint.rc.fault=builtin` sets it for the built-ins it starts).
pub const FAULT_ENV: &str = "BOOTPRINT_RC_BUILTIN_FAULT";

/// A script the runner can do itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// `mountkernfs.sh`: /run's bookkeeping, /run/lock, securityfs, pstore, efivarfs.
    MountKernFs,
    /// `mountdevsubfs.sh`: /dev/fd and std links, /dev/shm, /run/shm, /dev/pts.
    MountDevSubFs,
    /// `urandom`: feeds the saved seed to the kernel and saves a new one.
    Urandom,
    /// `hostname.sh`: the host name from /etc/hostname.
    Hostname,
    /// `checkroot.sh` with the root already checked ([`checkroot`]).
    CheckRoot,
    /// `checkfs.sh` with nothing left to check ([`checkroot::checkfs_nothing_to_check`]).
    CheckFs,
    /// `mountall.sh` ([`mountall`]).
    MountAll,
    /// `sendsigs stop` ([`shutdown`]).
    SendSigs,
    /// `umountnfs.sh stop` with nothing to unmount ([`shutdown`]).
    UmountNfs,
    /// `umountfs stop` with nothing to unmount ([`shutdown`]).
    UmountFs,
    /// `umountroot stop` ([`shutdown`]).
    UmountRoot,
    /// `reboot stop` ([`shutdown`]).
    Reboot,
    /// `halt stop` ([`shutdown`]).
    Halt,
}

/// A Debian release whose copies of the scripts the built-ins know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Release {
    /// Debian 12 (bookworm): initscripts and sysvinit-utils 3.06-4, udev 252.
    Debian12,
    /// Debian 13 (trixie): initscripts and sysvinit-utils 3.14-4 (which also ship the udev
    /// script there), systemd 257.
    Debian13,
}

/// The releases every known file was checked against (each file of 13 either listed or
/// byte-equal to 12's), for messages.
pub const KNOWN_RELEASES: &str = "Debian 12's or 13's";

/// A file the built-ins know: its path under the root, and its SHA-256 in each release
/// whose copy differs from the one before (a release shipping the same bytes is not
/// listed again: the file then behaves as the earlier release's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    /// The path, relative to the root.
    pub path: &'static str,
    /// (release, SHA-256), oldest first.
    pub versions: &'static [(Release, &'static str)],
}

impl Known {
    /// Which release's copy `data` is, if any.
    pub fn release_of(&self, data: &[u8]) -> Option<Release> {
        let got = sha256::hex(data);
        self.versions
            .iter()
            .find(|(_, want)| *want == got)
            .map(|(r, _)| *r)
    }
}

/// Which release's copy of `known` the system under `env` has (None: another, or
/// unreadable; [`recognise`] has refused such a system before a built-in runs).
fn release_on(env: &Env, known: &Known) -> Option<Release> {
    read_small(&env.at(&format!("/{}", known.path)))
        .ok()
        .and_then(|d| known.release_of(&d))
}

/// `/lib/init/vars.sh` (Debian 13's defaults ASYNCMOUNTNFS to no for `ip=`/`nfsroot=`,
/// which only mountnfs.sh reads).
const VARS: Known = Known {
    path: "lib/init/vars.sh",
    versions: &[
        (
            Release::Debian12,
            "49d734860b46c62805fc29a67b9d61210113b6eac2409e4ffd5cf14589f4f0a3",
        ),
        (
            Release::Debian13,
            "a35cfcac3e119e5488bf093f3dc8213b2f10e7668a460665b884760e823e5eef",
        ),
    ],
};

/// `/lib/lsb/init-functions` (the same bytes in Debian 13).
const INIT_FUNCTIONS: Known = Known {
    path: "lib/lsb/init-functions",
    versions: &[(
        Release::Debian12,
        "f58bfadf2419d6036a2c7440e574c3c3e7a35aea380375f6ab1b590d64e5e952",
    )],
};

/// The hooks `/lib/lsb/init-functions` may source (any of them may be absent; any other
/// file there could do anything): sysvinit-utils' and systemd's (252 and 257 ship the same
/// bytes).
const HOOKS: &[Known] = &[
    Known {
        path: "lib/lsb/init-functions.d/00-verbose",
        versions: &[(
            Release::Debian12,
            "e1c1b915d3e45deaddd57fd4bdd1ff490e0f8dd1e842b22cf2bdc963bbd29e13",
        )],
    },
    Known {
        path: "lib/lsb/init-functions.d/40-systemd",
        versions: &[(
            Release::Debian12,
            "deab4c161571359f3e74deab9f555c3f0774d2fd7e49258ef26891053cfbe5c2",
        )],
    },
];

/// `/lib/init/tmpfs.sh` (the same bytes in Debian 13).
const TMPFS: Known = Known {
    path: "lib/init/tmpfs.sh",
    versions: &[(
        Release::Debian12,
        "cf2210f2b522748cccb677f793b8c24d6b276d4a2b3a7eae295f45ab1b9f292b",
    )],
};

/// `/lib/init/mount-functions.sh`. Debian 13's `logsave_best_effort` logs only into a log
/// file that exists (else it says so and runs the command alone); its other changes are a
/// `test` rewritten and a warning for a compatibility bind mount no built-in makes.
pub const MOUNT_FUNCTIONS: Known = Known {
    path: "lib/init/mount-functions.sh",
    versions: &[
        (
            Release::Debian12,
            "b93b8e7da0f1d22d64cef47f6200697136c8312826ffc5894dcf21d19a12a277",
        ),
        (
            Release::Debian13,
            "1b8081b4645a2000924babdf2bb74fee024152302c57a4f1fef35546dfb000fd",
        ),
    ],
};

/// Where the hooks are.
const HOOKS_DIR: &str = "lib/lsb/init-functions.d";

impl Builtin {
    /// Every built-in.
    pub const ALL: [Builtin; 13] = [
        Builtin::MountKernFs,
        Builtin::MountDevSubFs,
        Builtin::Urandom,
        Builtin::Hostname,
        Builtin::CheckRoot,
        Builtin::CheckFs,
        Builtin::MountAll,
        Builtin::SendSigs,
        Builtin::UmountNfs,
        Builtin::UmountFs,
        Builtin::UmountRoot,
        Builtin::Reboot,
        Builtin::Halt,
    ];

    /// The script it stands for (its name in /etc/init.d).
    pub fn script(self) -> &'static str {
        match self {
            Builtin::MountKernFs => "mountkernfs.sh",
            Builtin::MountDevSubFs => "mountdevsubfs.sh",
            Builtin::Urandom => "urandom",
            Builtin::Hostname => "hostname.sh",
            Builtin::CheckRoot => "checkroot.sh",
            Builtin::CheckFs => "checkfs.sh",
            Builtin::MountAll => "mountall.sh",
            Builtin::SendSigs => "sendsigs",
            Builtin::UmountNfs => "umountnfs.sh",
            Builtin::UmountFs => "umountfs",
            Builtin::UmountRoot => "umountroot",
            Builtin::Reboot => "reboot",
            Builtin::Halt => "halt",
        }
    }

    /// The action that is built in: `stop` for the shutdown's scripts, else `start`.
    pub fn action(self) -> &'static str {
        match self {
            Builtin::SendSigs
            | Builtin::UmountNfs
            | Builtin::UmountFs
            | Builtin::UmountRoot
            | Builtin::Reboot
            | Builtin::Halt => "stop",
            _ => "start",
        }
    }

    /// The built-in for a script name.
    pub fn for_script(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.script() == name)
    }

    /// The script as Debian ships it (`/etc/init.d/NAME`). Only checkroot.sh changed in
    /// Debian 13: its temporary root node moved from /run/rootdev to /dev/rootdev, and with
    /// the initramfs's check done it saves the initramfs's fsck log ([`checkroot`]).
    pub fn script_known(self) -> Known {
        const fn one(path: &'static str, versions: &'static [(Release, &'static str)]) -> Known {
            Known { path, versions }
        }
        use Release::*;
        match self {
            Builtin::MountKernFs => one(
                "etc/init.d/mountkernfs.sh",
                &[(
                    Debian12,
                    "b9f83b0f3144aa32efa6591a9fe4bc0b5fb37258329dc4f3ed1f39e8728b23de",
                )],
            ),
            Builtin::MountDevSubFs => one(
                "etc/init.d/mountdevsubfs.sh",
                &[(
                    Debian12,
                    "2197bdd7905c31a1726b7133d07a375c31fd4c01e3dacd6faa1b1f31aff29419",
                )],
            ),
            Builtin::Urandom => one(
                "etc/init.d/urandom",
                &[(
                    Debian12,
                    "a2da46bce6f249f7d2a35b12cdfab3ad894c095f6c130c98b2c38795bba1f9b4",
                )],
            ),
            Builtin::Hostname => one(
                "etc/init.d/hostname.sh",
                &[(
                    Debian12,
                    "f5489707910a7915d7316e503ddf7ec9d86dbd10350891de18f4e3288a843c52",
                )],
            ),
            Builtin::CheckRoot => one(
                "etc/init.d/checkroot.sh",
                &[
                    (
                        Debian12,
                        "82bf5e8198851fdeb754402e7e92633f9e1af80985470ca9c5ba36cd8ab0393a",
                    ),
                    (
                        Debian13,
                        "f6264696b6800f581c9809dde4a7d6d25af48b8be6ffad2d9b0760de3706f15e",
                    ),
                ],
            ),
            Builtin::CheckFs => one(
                "etc/init.d/checkfs.sh",
                &[(
                    Debian12,
                    "ddd0e61899f1708d833e30aaf3b156ca098ae19294fb52a76e0a4eb2b5affb73",
                )],
            ),
            Builtin::MountAll => one(
                "etc/init.d/mountall.sh",
                &[(
                    Debian12,
                    "78f5776229dc2460f5c6353c22a9def2bed145cf1edd41cd970fbee4b4661679",
                )],
            ),
            Builtin::SendSigs => one(
                "etc/init.d/sendsigs",
                &[(
                    Debian12,
                    "e631deba4c8c1686ff8f4cd32fd00ece9c007131c909a52df274649805d7c797",
                )],
            ),
            Builtin::UmountNfs => one(
                "etc/init.d/umountnfs.sh",
                &[(
                    Debian12,
                    "722a658c7fd09c93d5e70e87f9986af2da6bc5e6688175aa8356e48b0de5ca8f",
                )],
            ),
            Builtin::UmountFs => one(
                "etc/init.d/umountfs",
                &[(
                    Debian12,
                    "61790846840574d1d7bba26d5e77be7ec2110a79e37f47dfcd15f68847e3e487",
                )],
            ),
            Builtin::UmountRoot => one(
                "etc/init.d/umountroot",
                &[(
                    Debian12,
                    "811419e168be1cae551e4f9065e46e4871360c3089a3b2de610e2422fd64bfbe",
                )],
            ),
            Builtin::Reboot => one(
                "etc/init.d/reboot",
                &[(
                    Debian12,
                    "66138b7ce110cd87e5513805836a732d6a8925bd4ae458bdab0f444b859bcc22",
                )],
            ),
            Builtin::Halt => one(
                "etc/init.d/halt",
                &[(
                    Debian12,
                    "1a4940d7e22bb17749f0ec6759cdc739d2faf0e550ba9a6749c458044c4dffc3",
                )],
            ),
        }
    }

    /// The files the script sources (or, for checkroot.sh, runs again).
    pub fn known_files(self) -> Vec<Known> {
        if matches!(self, Builtin::SendSigs | Builtin::Reboot | Builtin::Halt) {
            // They source init-functions (reboot and halt /etc/default/halt), not vars.sh.
            return vec![INIT_FUNCTIONS];
        }
        let mut v = vec![VARS, INIT_FUNCTIONS];
        match self {
            Builtin::MountKernFs
            | Builtin::MountDevSubFs
            | Builtin::CheckRoot
            | Builtin::MountAll => v.extend([TMPFS, MOUNT_FUNCTIONS]),
            // It sources mount-functions.sh, not tmpfs.sh.
            Builtin::CheckFs => v.push(MOUNT_FUNCTIONS),
            _ => {}
        }
        if self == Builtin::CheckRoot {
            // It runs both again with `reload`.
            v.push(Builtin::MountKernFs.script_known());
            v.push(Builtin::MountDevSubFs.script_known());
        }
        v
    }

    /// The mount points whose `/etc/fstab` entry would change what the script does.
    fn fstab_points(self) -> Vec<&'static str> {
        const KERNFS: [&str; 7] = [
            "/run",
            "/run/lock",
            "/run/shm",
            "/sys",
            "/sys/kernel/security",
            "/sys/fs/pstore",
            "/sys/firmware/efi/efivars",
        ];
        const DEVSUBFS: [&str; 3] = ["/dev/shm", "/run/shm", "/dev/pts"];
        match self {
            Builtin::MountKernFs => KERNFS.to_vec(),
            Builtin::MountDevSubFs => DEVSUBFS.to_vec(),
            // It runs both again with `reload`.
            Builtin::CheckRoot => [KERNFS.as_slice(), &DEVSUBFS].concat(),
            Builtin::MountAll => vec!["/run", "/run/lock", "/run/shm", "/dev/shm", "/tmp"],
            Builtin::Urandom
            | Builtin::Hostname
            | Builtin::CheckFs
            | Builtin::SendSigs
            | Builtin::UmountNfs
            | Builtin::UmountFs
            | Builtin::UmountRoot
            | Builtin::Reboot
            | Builtin::Halt => Vec::new(),
        }
    }
}

/// Reads a regular file (not a FIFO or device: never blocks) of at most 1 MiB
/// (`sys::read_regular`; a larger one is an error, and the script runs).
fn read_small(path: &Path) -> io::Result<Vec<u8>> {
    sys::read_regular(path, 1 << 20)
}

/// Whether a shell configuration file sets nothing: absent, or only blank lines and
/// comments. Err names the first line that sets something.
fn sets_nothing(root: &Path, rel: &str) -> Result<(), Error> {
    let path = root.join(rel);
    let text = match read_small(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(&path, format!("/{rel}: {e}"), e)),
    };
    for (n, line) in String::from_utf8_lossy(&text).lines().enumerate() {
        let t = line.trim();
        if !t.is_empty() && !t.starts_with('#') {
            let message = format!(
                "/{rel}:{}: sets {t:?} (the built-in does only the default)",
                n + 1
            );
            return Err(refused(message).at(&path).on_line(n + 1));
        }
    }
    Ok(())
}

/// `TTYGRP` and `TTYMODE` from `/etc/default/devpts` (Debian ships `TTYGRP=5`,
/// `TTYMODE=600`); defaults 5 and 620 as in the script. Anything else in the file is an
/// Err: the script would source it as shell.
pub fn devpts_options(text: &str) -> Result<(u32, String), Error> {
    let (mut grp, mut mode) = (5u32, "620".to_string());
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let bad = || {
            let message = format!(
                "/etc/default/devpts:{}: {t:?} is not TTYGRP=N or TTYMODE=octal",
                n + 1
            );
            Error::new(ErrorKind::Parse, message)
                .at(Path::new("/etc/default/devpts"))
                .on_line(n + 1)
        };
        match t.split_once('=') {
            Some(("TTYGRP", v)) if !v.is_empty() && v.bytes().all(|c| c.is_ascii_digit()) => {
                grp = v.parse().map_err(|_| bad())?;
            }
            Some(("TTYMODE", v))
                if !v.is_empty()
                    && v.len() <= 4
                    && v.bytes().all(|c| (b'0'..=b'7').contains(&c)) =>
            {
                mode = v.to_string();
            }
            _ => return Err(bad()),
        }
    }
    Ok((grp, mode))
}

/// `(dev, point, type)` of every `/etc/fstab` entry, as `read_fstab_entry` reads them.
fn fstab_entries(text: &str) -> Vec<(String, String, String)> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let dev = w.next()?;
            if dev.starts_with('#') {
                return None;
            }
            Some((
                dev.to_string(),
                w.next().unwrap_or("").to_string(),
                w.next().unwrap_or("").to_string(),
            ))
        })
        .collect()
}

/// Whether the runner may run `name`'s `action` as a built-in on the system at `root`
/// (`script` is its file). Err says why not, for `--dry-run` and the docs' examples: mostly
/// [`ErrorKind::Refused`]; a file that cannot be read is [`ErrorKind::Io`], a bad
/// `/etc/default/devpts` line [`ErrorKind::Parse`].
pub fn recognise(root: &Path, name: &str, script: &Path, action: &str) -> Result<Builtin, Error> {
    let b = Builtin::for_script(name).ok_or_else(|| refused("no built-in for this script"))?;
    if action != b.action() {
        return Err(refused(format!(
            "only {} is built in, not {action}",
            b.action()
        )));
    }
    let same = |path: &Path, known: &Known| -> Result<(), Error> {
        let data =
            read_small(path).map_err(|e| Error::io(path, format!("{}: {e}", path.display()), e))?;
        match known.release_of(&data) {
            Some(_) => Ok(()),
            None => {
                let message = format!(
                    "{}: not {KNOWN_RELEASES} (sha256 {}): runs as a script",
                    path.display(),
                    sha256::hex(&data)
                );
                Err(refused(message).at(path))
            }
        }
    };
    same(script, &b.script_known())?;
    for known in b.known_files() {
        same(&root.join(known.path), &known)?;
    }
    if let Ok(dir) = fs::read_dir(root.join(HOOKS_DIR)) {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = format!("{HOOKS_DIR}/{name}");
            match HOOKS.iter().find(|k| k.path == path) {
                Some(known) => same(&e.path(), known)?,
                None => {
                    return Err(refused(format!(
                        "/{HOOKS_DIR}/{name}: an unknown hook could change what the script does"
                    ))
                    .at(&e.path()))
                }
            }
        }
    }
    sets_nothing(root, "etc/default/rcS")?;
    if matches!(
        b,
        Builtin::MountKernFs | Builtin::MountDevSubFs | Builtin::CheckRoot | Builtin::MountAll
    ) {
        sets_nothing(root, "etc/default/tmpfs")?;
        if root.join("etc/fstab.d").exists() {
            return Err(refused(
                "/etc/fstab.d exists: the built-in reads /etc/fstab only",
            ));
        }
        if root.join("sbin/restorecon").exists() {
            return Err(refused(
                "/sbin/restorecon exists (SELinux): the built-in does not relabel",
            ));
        }
        let fstab_path = root.join("etc/fstab");
        let fstab = match read_small(&fstab_path) {
            Ok(t) => String::from_utf8_lossy(&t).into_owned(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(Error::io(&fstab_path, format!("/etc/fstab: {e}"), e)),
        };
        for (_, point, fstype) in fstab_entries(&fstab) {
            if b.fstab_points().contains(&point.as_str()) {
                return Err(refused(format!(
                    "/etc/fstab has an entry for {point} ({fstype}): the script's options come from it"
                ))
                .at(&fstab_path));
            }
        }
    }
    // These checks say why in text only: whatever they find, the built-in declines.
    if b == Builtin::CheckRoot {
        checkroot::no_check_left(&Env::under(root)).map_err(refused)?;
    }
    if b == Builtin::CheckFs {
        checkroot::checkfs_nothing_to_check(&Env::under(root)).map_err(refused)?;
    }
    if b == Builtin::MountAll {
        mountall::plain_enough(&Env::under(root)).map_err(refused)?;
    }
    if matches!(b, Builtin::Reboot | Builtin::Halt) {
        let halt = root.join("etc/default/halt");
        match read_small(&halt) {
            Ok(t) => {
                if let Err((line, why)) = shutdown::halt_defaults(&String::from_utf8_lossy(&t)) {
                    let message = format!("/etc/default/halt:{line}: {why}");
                    return Err(Error::new(ErrorKind::Parse, message)
                        .at(&halt)
                        .on_line(line));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&halt, format!("/etc/default/halt: {e}"), e)),
        }
    }
    if matches!(b, Builtin::MountDevSubFs | Builtin::CheckRoot) {
        let devpts = root.join("etc/default/devpts");
        match read_small(&devpts) {
            Ok(t) => {
                devpts_options(&String::from_utf8_lossy(&t))?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&devpts, format!("/etc/default/devpts: {e}"), e)),
        }
    }
    Ok(b)
}

/// Why a built-in declines on this system: the script runs.
fn refused(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Refused, message)
}

/// Where a built-in acts: `/` on a real boot; a scratch tree in tests. `proc` is read for
/// mountinfo, filesystems, meminfo and the pool size; `urandom` is written to.
#[derive(Debug, Clone)]
pub struct Env {
    /// The root the script's paths are under.
    pub root: PathBuf,
    /// The proc file system (`/proc`).
    pub proc_dir: PathBuf,
    /// The kernel's random device (`/dev/urandom`).
    pub urandom: PathBuf,
    /// Fail after the first step (the fault switch), to prove the fallback mends it.
    pub fault: bool,
}

impl Env {
    /// The running system.
    pub fn system() -> Env {
        Env {
            root: PathBuf::from("/"),
            proc_dir: PathBuf::from("/proc"),
            urandom: PathBuf::from("/dev/urandom"),
            fault: std::env::var_os(FAULT_ENV).is_some(),
        }
    }

    /// A system under `root`, its proc file system at `root/proc`: what the runner plans on.
    fn under(root: &Path) -> Env {
        Env {
            root: root.to_path_buf(),
            proc_dir: root.join("proc"),
            urandom: root.join("dev/urandom"),
            fault: false,
        }
    }

    fn at(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }
}

/// Does what the script's built-in action ([`Builtin::action`]) does. Err: a step that was not certain or failed; the
/// caller exits [`DECLINED`] and the runner runs the script. Every failure is
/// [`ErrorKind::BuiltinFailed`]: whichever step it was, the script does it all again.
pub fn run(b: Builtin, env: &Env) -> Result<(), Error> {
    run_steps(b, env).map_err(|message| Error::new(ErrorKind::BuiltinFailed, message))
}

fn run_steps(b: Builtin, env: &Env) -> Result<(), String> {
    let mut steps = Steps {
        fault: env.fault,
        done: 0,
    };
    match b {
        Builtin::MountKernFs => mountkernfs(env, &mut steps),
        Builtin::MountDevSubFs => mountdevsubfs(env, &mut steps),
        Builtin::Urandom => urandom(env, &mut steps),
        Builtin::Hostname => hostname(env, &mut steps),
        Builtin::CheckRoot => checkroot::run(env, &mut steps),
        Builtin::CheckFs => checkroot::checkfs(env, &mut steps),
        Builtin::MountAll => mountall::run(env, &mut steps),
        Builtin::SendSigs => shutdown::sendsigs(env, &mut steps),
        Builtin::UmountNfs => shutdown::umountnfs(env, &mut steps),
        Builtin::UmountFs => shutdown::umountfs(env, &mut steps),
        Builtin::UmountRoot => shutdown::umountroot(env, &mut steps),
        Builtin::Reboot => shutdown::reboot(env, &mut steps),
        Builtin::Halt => shutdown::halt(env, &mut steps),
    }?;
    // The end counts as a step: under the fault switch, a built-in of one step fails too.
    steps.step()
}

/// Counts steps, so that the fault switch can fail the built-in after the first one.
struct Steps {
    fault: bool,
    done: usize,
}

impl Steps {
    fn step(&mut self) -> Result<(), String> {
        self.done += 1;
        if self.fault && self.done > 1 {
            return Err(format!(
                "{}=1: failing after the first step, for testing",
                FAULT_ENV
            ));
        }
        Ok(())
    }
}

/// The mount points in `mountinfo` text (field 5, octal escapes undone).
fn mount_points(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(sample::procfs::unescape_mount_field)
        .collect()
}

/// `mountpoint -q`: whether `path` (resolved) is a mount point now.
fn is_mount_point(env: &Env, path: &Path) -> Result<bool, String> {
    let info = read_small(&env.proc_dir.join("self/mountinfo"))
        .or_else(|_| read_small(&env.proc_dir.join("1/mountinfo")))
        .map_err(|e| format!("{}/self/mountinfo: {e}", env.proc_dir.display()))?;
    let Ok(real) = fs::canonicalize(path) else {
        return Ok(false);
    };
    Ok(mount_points(&String::from_utf8_lossy(&info)).contains(&real))
}

/// `grep -E -qs "TYPE$" /proc/filesystems`.
fn kernel_has(env: &Env, fstype: &str) -> Result<bool, String> {
    let t = read_small(&env.proc_dir.join("filesystems"))
        .map_err(|e| format!("{}/filesystems: {e}", env.proc_dir.display()))?;
    Ok(String::from_utf8_lossy(&t)
        .lines()
        .any(|l| l.ends_with(fstype)))
}

fn mount(
    src: &str,
    target: &Path,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> Result<(), String> {
    // A NUL byte in any of them is an error too ("holds a NUL byte").
    sys::mount(src, target, Some(fstype), flags, Some(data))
        .map_err(|e| format!("mount -t {fstype} {src} {}: {e}", target.display()))
}

/// `prog args` as a script runs it: found in the script's `path`, no input, its output to
/// the console (the runner's pty).
fn program(prog: impl AsRef<std::ffi::OsStr>, args: &[&str], path: &str) -> std::process::Command {
    let mut c = std::process::Command::new(prog);
    c.args(args)
        .env("PATH", path)
        .stdin(std::process::Stdio::null());
    c
}

/// `[ -d DIR ] || mkdir --mode=755 DIR` (the mode exactly, whatever the umask).
fn ensure_dir_755(dir: &Path) -> Result<(), String> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .mode(0o755)
        .create(dir)
        .and_then(|_| fs::set_permissions(dir, fs::Permissions::from_mode(0o755)))
        .map_err(|e| format!("mkdir {}: {e}", dir.display()))
}

/// `touch FILE`: created (0666 less the umask) if missing, its times set to now.
fn touch(file: &Path) -> Result<(), String> {
    let f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .mode(0o666)
        .open(file)
        .map_err(|e| format!("touch {}: {e}", file.display()))?;
    crate::sys::touch_now(&f).map_err(|e| format!("touch {}: {e}", file.display()))
}

/// `domount mount_noupdate TYPE ...` for a point with no fstab entry: nothing when it is
/// mounted already, else one mount.
fn domount(
    env: &Env,
    steps: &mut Steps,
    src: &str,
    point: &str,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> Result<(), String> {
    let target = env.at(point);
    if !target.is_dir() {
        return Err(format!(
            "mount point {point} does not exist (the script warns)"
        ));
    }
    if !is_mount_point(env, &target)? {
        steps.step()?;
        mount(src, &target, fstype, flags, data)?;
    }
    Ok(())
}

/// What the script needs to find already there; Err before anything is done otherwise.
fn common_runtime_checks(env: &Env) -> Result<(), String> {
    if env.at("/run/systemd/system").is_dir() {
        return Err(
            "/run/systemd/system exists: init-functions would hand over to systemctl".into(),
        );
    }
    Ok(())
}

const NOSUID: libc::c_ulong = libc::MS_NOSUID;
const NODEV: libc::c_ulong = libc::MS_NODEV;
const NOEXEC: libc::c_ulong = libc::MS_NOEXEC;

fn mountkernfs(env: &Env, steps: &mut Steps) -> Result<(), String> {
    common_runtime_checks(env)?;
    // mount_run, mount_lock and the proc and sysfs mounts all find their file system in
    // place on a boot through an initramfs; mounting them is the script's job otherwise.
    for point in ["/run", "/proc", "/sys"] {
        if !is_mount_point(env, &env.at(point))? {
            return Err(format!("{point} is not mounted yet: the script mounts it"));
        }
    }
    let security = kernel_has(env, "securityfs")?;
    let pstore_dir = env.at("/sys/fs/pstore").is_dir();
    if pstore_dir && !kernel_has(env, "pstore")? {
        return Err("/sys/fs/pstore exists but the kernel has no pstore (the script warns)".into());
    }
    // mount_run: /run is mounted; its bookkeeping.
    steps.step()?;
    ensure_dir_755(&env.at("/run/sendsigs.omit.d"))?;
    touch(&env.at("/run/.tmpfs"))?;
    // mount_lock: RAMLOCK=yes, LOCK_SIZE=5242880, LOCK_MODE=1777.
    ensure_dir_755(&env.at("/run/lock"))?;
    domount(
        env,
        steps,
        "tmpfs",
        "/run/lock",
        "tmpfs",
        NODEV | NOEXEC | NOSUID,
        "size=5242880,mode=1777",
    )?;
    touch(&env.at("/run/lock/.tmpfs"))?;
    if security {
        domount(
            env,
            steps,
            "securityfs",
            "/sys/kernel/security",
            "securityfs",
            0,
            "",
        )?;
    }
    if pstore_dir {
        domount(env, steps, "pstore", "/sys/fs/pstore", "pstore", 0, "")?;
    }
    if env.at("/sys/firmware/efi/efivars").is_dir() {
        domount(
            env,
            steps,
            "none",
            "/sys/firmware/efi/efivars",
            "efivarfs",
            0,
            "",
        )?;
    }
    Ok(())
}

/// `tmpfs_size_vm 20%VM`: a fifth of RAM plus swap, in KiB, as the shell computes it.
pub fn shm_size_kib(meminfo: &str) -> Option<u64> {
    let field = |name: &str| -> Option<u64> {
        meminfo
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    };
    let total = field("MemTotal:")?.checked_add(field("SwapTotal:").unwrap_or(0))?;
    (total / 100).checked_mul(20)
}

fn mountdevsubfs(env: &Env, steps: &mut Steps) -> Result<(), String> {
    common_runtime_checks(env)?;
    let (grp, mode) = match read_small(&env.at("/etc/default/devpts")) {
        Ok(t) => devpts_options(&String::from_utf8_lossy(&t))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => (5, "620".to_string()),
        Err(e) => return Err(format!("/etc/default/devpts: {e}")),
    };
    let meminfo = read_small(&env.proc_dir.join("meminfo"))
        .map_err(|e| format!("{}/meminfo: {e}", env.proc_dir.display()))?;
    let shm_kib =
        shm_size_kib(&String::from_utf8_lossy(&meminfo)).ok_or("no MemTotal in meminfo")?;
    if !kernel_has(env, "devpts")? {
        return Err("the kernel has no devpts (the script warns)".into());
    }
    let run_shm = env.at("/run/shm");
    if run_shm.is_dir() && !run_shm.is_symlink() {
        return Err("/run/shm is a directory: the script migrates it".into());
    }
    steps.step()?;
    trylinks(env)?;
    // mount_shm: SHMDIR=/dev/shm, RAMSHM=yes, SHM_SIZE = TMPFS_SIZE = 20%VM, mode 1777.
    let shm = env.at("/dev/shm");
    if !shm.is_dir() {
        if shm.is_symlink() {
            fs::remove_file(&shm).map_err(|e| format!("rm {}: {e}", shm.display()))?;
        }
        ensure_dir_755(&shm)?;
    }
    domount(
        env,
        steps,
        "tmpfs",
        "/dev/shm",
        "tmpfs",
        NOSUID | NODEV | NOEXEC,
        &format!("size={shm_kib}k,mode=1777"),
    )?;
    touch(&shm.join(".tmpfs"))?;
    // run_migrate /run/shm /dev/shm: /run/shm becomes a link to /dev/shm.
    steps.step()?;
    mountall::run_migrate(env, "/run/shm", "/dev/shm")?;
    // /dev/pts.
    ensure_dir_755(&env.at("/dev/pts"))?;
    domount(
        env,
        steps,
        "devpts",
        "/dev/pts",
        "devpts",
        NOEXEC | NOSUID,
        &format!("gid={grp},mode={mode}"),
    )
}

/// mountdevsubfs.sh's `trylink`s: idempotent, never replaces a link or directory there.
fn trylinks(env: &Env) -> Result<(), String> {
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "fd/0"),
        ("stdout", "fd/1"),
        ("stderr", "fd/2"),
    ] {
        let link = env.at("/dev").join(name);
        if !link.is_symlink() && !link.is_dir() {
            std::os::unix::fs::symlink(target, &link)
                .map_err(|e| format!("ln -s {target} {}: {e}", link.display()))?;
        }
    }
    Ok(())
}

/// `date +%s.%N` and a newline.
fn date_line() -> String {
    // SystemTime::now is clock_gettime(CLOCK_REALTIME); a clock before 1970 gives 0, as the
    // zeroed timespec of a failed call did.
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("{}.{:09}\n", t.as_secs(), t.subsec_nanos())
}

fn urandom(env: &Env, steps: &mut Steps) -> Result<(), String> {
    const SAVED: &str = "/var/lib/urandom/random-seed";
    // [ -c /dev/urandom ] || exit 0
    match fs::metadata(&env.urandom) {
        Ok(m) if m.file_type().is_char_device() => {}
        _ => return Ok(()),
    }
    let pool = read_small(&env.proc_dir.join("sys/kernel/random/poolsize"))
        .ok()
        .and_then(|t| String::from_utf8_lossy(&t).trim().parse::<u64>().ok())
        .ok_or("no pool size in /proc/sys/kernel/random/poolsize")?;
    let pool_bytes = pool.checked_add(7).ok_or("pool size overflows")? / 8;
    if pool_bytes == 0 || pool_bytes > 1 << 20 {
        return Err(format!(
            "pool of {pool_bytes} bytes: not what dd is given here"
        ));
    }
    let saved = env.at(SAVED);
    // ( date +%s.%N; [ -f SAVED ] && cat SAVED ) >/dev/urandom
    steps.step()?;
    let mut dev = fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(&env.urandom)
        .map_err(|e| format!("{}: {e}", env.urandom.display()))?;
    dev.write_all(date_line().as_bytes())
        .map_err(|e| format!("{}: {e}", env.urandom.display()))?;
    if saved.is_file() {
        let seed = read_small(&saved).map_err(|e| format!("{}: {e}", saved.display()))?;
        dev.write_all(&seed)
            .map_err(|e| format!("{}: {e}", env.urandom.display()))?;
    }
    drop(dev);
    // umask 077; dd if=/dev/urandom of=SAVED bs=POOLBYTES count=1 (errors ignored: a
    // read-only seed is the script's "case 1b").
    steps.step()?;
    let mut fresh = vec![0u8; pool_bytes as usize];
    let read = fs::File::open(&env.urandom).and_then(|mut f| f.read(&mut fresh));
    if let Ok(n) = read {
        fresh.truncate(n);
        let old = crate::sys::umask(0o077);
        let _ = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o666)
            .open(&saved)
            .and_then(|mut f| f.write_all(&fresh));
        crate::sys::umask(old);
    }
    Ok(())
}

/// The name `hostname "$(cat /etc/hostname)"` would set, if the built-in may set it:
/// trailing newlines dropped (as `$(...)` does); only letters, digits, `-`, `.` and `_`, at
/// most 64 bytes. Err: anything else (the script then runs).
pub fn hostname_from(text: &[u8]) -> Result<String, String> {
    let mut t = text;
    while let [rest @ .., b'\n'] = t {
        t = rest;
    }
    if t.is_empty()
        || t.len() > 64
        || !t
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
    {
        return Err(format!(
            "/etc/hostname holds {:?}: left to hostname(1)",
            String::from_utf8_lossy(t)
        ));
    }
    Ok(String::from_utf8_lossy(t).into_owned())
}

fn hostname(env: &Env, steps: &mut Steps) -> Result<(), String> {
    let file = env.at("/etc/hostname");
    // [ -f /etc/hostname ] || return
    if !file.is_file() {
        return Ok(());
    }
    let text = read_small(&file).map_err(|e| format!("/etc/hostname: {e}"))?;
    let name = hostname_from(&text)?;
    steps.step()?;
    crate::sys::sethostname(&name).map_err(|e| format!("sethostname {name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devpts_file_as_debian_ships_it_and_otherwise() {
        let debian = "# GID of the `tty' group\nTTYGRP=5\n\n# Set to 620 to have `mesg y' be the default\nTTYMODE=600\n";
        assert_eq!(devpts_options(debian), Ok((5, "600".into())));
        assert_eq!(devpts_options(""), Ok((5, "620".into())));
        let e = devpts_options("TTYGRP=5\nTTYMODE=$(id -g)\n").unwrap_err();
        assert!(e.to_string().contains("/etc/default/devpts:2:"), "{e}");
        assert_eq!((e.kind(), e.line()), (ErrorKind::Parse, Some(2)));
        assert_eq!(e.path(), Some(Path::new("/etc/default/devpts")));
        assert!(devpts_options("export TTYGRP=5").is_err());
        assert!(devpts_options("TTYMODE=6000").is_ok());
        assert!(devpts_options("TTYMODE=60000").is_err());
    }

    #[test]
    fn shm_size_is_a_fifth_of_ram_and_swap_in_whole_hundredths() {
        let m = "MemTotal:        1012345 kB\nMemFree: 1 kB\nSwapTotal:       1000 kB\n";
        // ((1012345 + 1000) / 100) * 20 = 10133 * 20, as the shell's integer arithmetic does.
        assert_eq!(shm_size_kib(m), Some(202_660));
        assert_eq!(shm_size_kib("MemTotal: 999 kB\n"), Some(180));
        assert_eq!(shm_size_kib("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn mountinfo_points_with_escapes() {
        let info = "22 1 0:21 / /run rw,nosuid - tmpfs tmpfs rw\n\
                    30 22 0:25 / /run/my\\040dir rw - tmpfs tmpfs rw\n";
        assert_eq!(
            mount_points(info),
            vec![PathBuf::from("/run"), PathBuf::from("/run/my dir")]
        );
    }

    #[test]
    fn hostname_as_the_shell_would_read_it() {
        assert_eq!(
            hostname_from(b"bootprint-test\n\n"),
            Ok("bootprint-test".into())
        );
        assert!(hostname_from(b"").is_err());
        assert!(hostname_from(b"two\nlines\n").is_err());
        assert!(hostname_from(&[b'a'; 65]).is_err());
    }

    #[test]
    fn date_line_is_seconds_dot_nine_digits() {
        let d = date_line();
        let (s, n) = d.trim_end().split_once('.').unwrap();
        assert!(s.parse::<u64>().unwrap() > 1_600_000_000);
        assert_eq!(n.len(), 9);
        assert!(d.ends_with('\n'));
    }

    #[test]
    fn the_fault_switch_fails_after_the_first_step() {
        let mut s = Steps {
            fault: true,
            done: 0,
        };
        assert!(s.step().is_ok());
        assert!(s.step().is_err());
        let mut s = Steps {
            fault: false,
            done: 0,
        };
        assert!((0..5).all(|_| s.step().is_ok()));
    }
}
