//! bootprint initramfs: a minimal, host-only initramfs whose `/init` is `bootprint-boot`.
//!
//! At build time ([`build`]) it finds the root block device's driver chain in sysfs
//! ([`plan::root_chain`]), resolves it to kernel modules and their dependencies from
//! `modules.dep`, `modules.alias`, `modules.softdep` and `modules.builtin` ([`plan`]; no
//! libkmod, so the boot path needs none), writes a text plan file ([`plan::Plan::to_text`]),
//! gathers `/init` and its shared libraries ([`elf`]), and writes a cpio "newc" archive
//! ([`cpio`]) compressed as measured best ([`compress`]). At boot ([`boot`]) `/init` mounts
//! the kernel file systems, loads the planned modules in parallel in dependency order with
//! `finit_module(2)`, waits for the root named on the kernel command line ([`cmdline`],
//! [`probe`]), mounts it, switches root and execs the real init; any failure is said on the
//! console and ends in a clean stop ([`boot::fail`]).
//!
//! It owns: command-line parsing of the root options, the build plan and its file format,
//! the cpio writer, compression choice, the ELF reader for `DT_NEEDED`, superblock and
//! partition-table probing, and the `/init` steps. It does not own: the CLI verb
//! (`bootprint initramfs`, crates/bootprint), the dispatch in `bootprint-boot`, the recorder
//! the real init may be (crates/record), nor the boot entry (`bootprint enable --initramfs`,
//! crates/bootprint, and the GRUB script packaging/grub.d). System calls: those only /init makes in `sys.rs`, the shared ones
//! (mount, fork, statfs, reboot...) from the `sys` crate.
//!
//! ```
//! let c = initramfs::cmdline::Cmdline::parse("root=UUID=0a1b ro rootwait quiet").unwrap();
//! assert_eq!(c.root, Some(initramfs::cmdline::RootSpec::Uuid("0a1b".into())));
//! assert!(c.readonly);
//! ```

#![deny(missing_docs)]

pub mod boot;
pub mod build;
pub mod cmdline;
pub mod compress;
pub mod cpio;
pub mod elf;
pub mod loader;
pub mod plan;
pub mod probe;
mod sys;

use std::fmt;
use std::path::{Path, PathBuf};

/// An error from building or probing: what went wrong and, where known, the file.
#[derive(Debug)]
pub struct Error {
    /// The file (or directory) concerned, if any.
    pub path: Option<PathBuf>,
    /// What went wrong, said so that a user can act on it.
    pub message: String,
}

impl Error {
    /// An error about `path`.
    pub fn at(path: &Path, message: impl Into<String>) -> Error {
        Error {
            path: Some(path.to_path_buf()),
            message: message.into(),
        }
    }

    /// An error about no file in particular.
    pub fn msg(message: impl Into<String>) -> Error {
        Error {
            path: None,
            message: message.into(),
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: &Path, what: &str, e: std::io::Error) -> Error {
        Error::at(path, format!("{what}: {e}"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{}: {}", p.display(), self.message),
            None => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for Error {}

/// `bootprint.initramfs.fault=VALUE` on the kernel command line forces a failure for the
/// test bed: `fsck` leaves the root's check to the system (checkroot.sh).
pub const FAULT_PARAM: &str = "bootprint.initramfs.fault";

/// Where the plan file lives inside the initramfs; its presence is how `bootprint-boot`
/// knows it runs as the initramfs's `/init`.
pub const PLAN_PATH: &str = "/bootprint/plan";

/// Whether this process is the initramfs's `/init`: PID 1 with the plan file present.
pub fn is_initramfs_init() -> bool {
    ::sys::getpid() == 1 && Path::new(PLAN_PATH).is_file()
}
