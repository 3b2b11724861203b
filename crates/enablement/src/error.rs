//! The crate's error: [`Error`], whose [`ErrorKind`] is what a caller decides on, with the
//! file, the manifest's line or the command where there is one. Its text is the message
//! `bootprint enable` and `disable` print.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

/// What kind of failure an [`Error`] is: what a caller acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// What was asked cannot work on this machine or layout: a lever its init system, its
    /// boot loader or its files do not allow, startpar diverted by someone else, a kernel
    /// release that is not one. Nothing was changed.
    NotSupported,
    /// A file bootprint would write is there and its manifest does not list it (the admin
    /// moves it away first). Nothing was changed.
    NotOurs,
    /// The manifest does not parse, or lists what enable does not make ([`Error::path`] and
    /// [`Error::line`] say where).
    BadManifest,
    /// An external program (update-grub, dpkg-divert, the initramfs build) could not be run
    /// or failed ([`Error::command`], [`Error::status`]).
    CommandFailed,
    /// Undoing failed or was partial: the manifest lists what is left to undo.
    UndoFailed,
    /// Reading, writing or removing a file of the root failed ([`Error::path`]).
    Io,
}

/// An error of enable, disable, the kernel hooks or one of [`crate::Machine`]'s operations.
#[derive(Debug)]
pub struct Error(Box<Inner>);

#[derive(Debug)]
struct Inner {
    kind: ErrorKind,
    message: String,
    path: Option<PathBuf>,
    line: Option<usize>,
    command: Option<String>,
    status: Option<ExitStatus>,
    source: Option<io::Error>,
}

impl Error {
    /// An error of `kind` saying `message`.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error(Box::new(Inner {
            kind,
            message: message.into(),
            path: None,
            line: None,
            command: None,
            status: None,
            source: None,
        }))
    }

    /// An I/O error on `path`, said as `message`.
    pub(crate) fn io(path: &Path, message: String, source: io::Error) -> Error {
        let mut e = Error::new(ErrorKind::Io, message).at(path);
        e.0.source = Some(source);
        e
    }

    /// The command `shown` that could not be run (`status` `None`) or failed.
    pub(crate) fn of_command(
        message: String,
        shown: String,
        status: Option<ExitStatus>,
        source: Option<io::Error>,
    ) -> Error {
        let mut e = Error::new(ErrorKind::CommandFailed, message);
        e.0.command = Some(shown);
        e.0.status = status;
        e.0.source = source;
        e
    }

    /// The same, about `path`.
    pub(crate) fn at(mut self, path: &Path) -> Error {
        self.0.path = Some(path.to_path_buf());
        self
    }

    /// The same, at line `line` of its file.
    pub(crate) fn on_line(mut self, line: usize) -> Error {
        self.0.line = Some(line);
        self
    }

    /// The same, of another kind.
    pub(crate) fn of_kind(mut self, kind: ErrorKind) -> Error {
        self.0.kind = kind;
        self
    }

    /// The same, saying what `say` makes of its message (what was undone since, say).
    pub(crate) fn said(mut self, say: impl FnOnce(&str) -> String) -> Error {
        self.0.message = say(&self.0.message);
        self
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The file it is about, where there is one (as shown, under the root).
    pub fn path(&self) -> Option<&Path> {
        self.0.path.as_deref()
    }

    /// The manifest's line (1-based), for a bad manifest.
    pub fn line(&self) -> Option<usize> {
        self.0.line
    }

    /// The command that failed, as shown in the message.
    pub fn command(&self) -> Option<&str> {
        self.0.command.as_deref()
    }

    /// Its exit status, when it ran and failed.
    pub fn status(&self) -> Option<ExitStatus> {
        self.0.status
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// For callers that report errors as text: the same text.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.0.message
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Lever, Machine, Request, Tools, DROPIN, MANIFEST};
    use std::os::unix::fs::PermissionsExt;

    /// A machine under a fresh root whose update-grub is `update_grub`.
    fn machine(update_grub: &str) -> (tempfile::TempDir, Machine) {
        let d = tempfile::tempdir().unwrap();
        let m = Machine {
            root: d.path().to_path_buf(),
            tools: Tools {
                update_grub: vec![update_grub.into()],
                dpkg_divert: vec!["/nonexistent/dpkg-divert".into()],
                dpkg_query: vec!["/nonexistent/dpkg-query".into()],
                initramfs_build: vec!["true".into()],
                grub_present: true,
                kernel_install: vec!["/nonexistent/kernel-install".into()],
                bootctl: vec!["/nonexistent/bootctl".into()],
            },
            loader: Default::default(),
        };
        (d, m)
    }

    fn put(m: &Machine, p: &str, text: &str) {
        let path = m.path(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn asked(l: Lever) -> Request {
        Request {
            levers: [l].into(),
            ..Request::default()
        }
    }

    #[test]
    fn a_bad_manifest_names_its_file_and_line() {
        let (_d, m) = machine("true");
        put(&m, MANIFEST, "lever record\ncreated /etc/passwd\n");
        let e = m.manifest().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadManifest, "{e}");
        assert_eq!(e.path(), Some(m.path(MANIFEST).as_path()));
        assert_eq!(e.line(), Some(2));
        assert_eq!(
            crate::disable(&m).unwrap_err().kind(),
            ErrorKind::BadManifest
        );
    }

    #[test]
    fn a_lever_this_machine_cannot_run_and_a_file_not_ours_change_nothing() {
        let (_d, m) = machine("true");
        let e = crate::enable(&m, &asked(Lever::Late)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
        assert!(e.to_string().ends_with("; nothing changed"), "{e}");
        put(&m, crate::BOOT_BIN, "#!/bin/sh\n");
        let bin = m.path(crate::BOOT_BIN);
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        put(&m, DROPIN, "# the admin's\n");
        let e = crate::enable(&m, &asked(Lever::Record)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotOurs, "{e}");
        assert_eq!(e.path(), Some(m.path(DROPIN).as_path()));
        assert!(!m.exists(MANIFEST));
    }

    #[test]
    fn update_grub_failing_is_a_command_failure_naming_it() {
        let (_d, m) = machine("false");
        put(&m, MANIFEST, &format!("lever record\ncreated {DROPIN}\n"));
        put(&m, DROPIN, "GRUB_CMDLINE_LINUX_DEFAULT=x\n");
        let e = crate::disable(&m).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CommandFailed, "{e}");
        assert_eq!(e.command(), Some("false"));
        assert!(e.status().is_some_and(|s| !s.success()));
        assert!(e.to_string().starts_with("`false` failed ("), "{e}");
        assert!(e.to_string().contains(": nothing was undone"), "{e}");
        assert!(m.exists(DROPIN));
    }

    #[test]
    fn what_cannot_be_undone_is_a_partial_undo() {
        let (_d, m) = machine("true");
        let image = crate::image_of("6.1.0-9-amd64");
        put(
            &m,
            MANIFEST,
            &format!("lever initramfs\nbuilt 6.1.0-9-amd64 {image}\n"),
        );
        // A directory where the image was: removing it fails.
        put(&m, &format!("{image}/keep"), "");
        let e = crate::disable(&m).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UndoFailed, "{e}");
        assert!(e.to_string().contains("lists what is left to undo"), "{e}");
        assert!(m.manifest().unwrap().unwrap().changes.len() == 1);
    }

    #[test]
    fn a_kernel_hook_for_what_is_not_a_release_is_not_supported() {
        let (_d, m) = machine("true");
        put(&m, MANIFEST, "lever initramfs\n");
        let e = crate::kernel_installed(&m, "../../etc").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
        assert_eq!(String::from(e), "\"../../etc\" is not a kernel release");
    }
}
