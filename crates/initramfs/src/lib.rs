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
//! Errors: the build's operations return an [`Error`] whose [`ErrorKind`] says what a
//! caller acts on (I/O, a bad line in an index or the plan file, a root layout refused at
//! build time, a module or library not found, a bad ELF file, compression); its `Display`
//! is the message the user sees. The boot steps say their failures as text on the console
//! instead: whatever failed, /init stops the same way ([`boot::fail`]).
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

use std::path::Path;

/// The kinds of failure a caller of the build tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading or writing a file failed ([`Error::path`]; the OS error is the source).
    Io,
    /// A file holds what the reader cannot take (modules.dep, modules.alias, the plan
    /// file): [`Error::path`] and [`Error::line`] name the place.
    Parse,
    /// The root's layout is refused at build time: not a local block device, a loop or
    /// network block device, stacked (LVM, dm-crypt, md), or no file system it can mount.
    Unsupported,
    /// Something the initramfs needs is not there: a module in the kernel's index, a
    /// shared library, the mount of `/`.
    NotFound,
    /// A program or library is not an ELF file the reader can use.
    BadElf,
    /// Compressing failed: the kernel cannot unpack the method asked for, or its tool
    /// failed.
    Compression,
}

impl ::sys::Kind for ErrorKind {
    const IO: ErrorKind = ErrorKind::Io;
    /// The build's messages do not name their file: the text is `PATH: message`.
    const PATH_FIRST: bool = true;
}

/// An error from building or probing: its kind, what went wrong and, where known, the file
/// and line (the shape every boot-path crate's error has, `sys::Error`).
pub type Error = ::sys::Error<ErrorKind>;

/// An I/O error on `path`: `what` was being done, and the OS said `e`.
pub(crate) fn io_error(path: &Path, what: &str, e: std::io::Error) -> Error {
    let message = format!("{what}: {e}");
    Error::io(path, message, e)
}

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
