//! The crate's error: [`Error`], whose [`ErrorKind`] is what a caller decides on (no pack
//! learned yet, a bad file, a file refused as unsafe, a relocation refused), with the detail
//! that says exactly what was wrong ([`PackError`], [`StateError`], [`Refusal`] or the
//! [`io::Error`]). Its text is the detail's, unchanged.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::pack::{PackError, PackErrorKind};
use crate::relocate::Refusal;
use crate::state::StateError;

/// What kind of failure an [`Error`] is: what a caller acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// No pack at its path: nothing learned yet.
    NothingLearned,
    /// Reading or writing a file failed ([`Error::path`] names it where known).
    Io,
    /// A pack or state file that is corrupt, truncated, too big, of another major version
    /// or does not parse; the message names the file (and the byte or line).
    BadFile,
    /// Refused because someone other than root could have planted or changed it: a
    /// symlink, not a regular file, another owner, writable by group or others.
    Unsafe,
    /// The pack was learned on another root filesystem.
    ForeignRoot,
    /// Relocation refused to run: not ext4, read-only, nearly full, fragmented free space,
    /// media where it does not help, nothing to move ([`Error::refusal`] says which).
    RelocationRefused,
}

/// An error of one of readahead's operations on files: loading, reading or writing a pack,
/// loading or saving a state file, relocating.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    path: Option<PathBuf>,
    /// Boxed: an error is rare, a `Result` of one is everywhere.
    detail: Box<Detail>,
}

#[derive(Debug)]
enum Detail {
    Pack(PackError),
    State(StateError),
    Io(io::Error),
    Refusal(Refusal),
}

impl Error {
    /// What kind of failure it is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The file it is about, where there is one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// A short word for logs and statistics: a pack's [`PackError::reason`]; otherwise `io`,
    /// `state` (a state file that does not parse) or `refused` (relocation).
    pub fn reason(&self) -> &'static str {
        match &*self.detail {
            Detail::Pack(e) => e.reason(),
            Detail::State(_) => "state",
            Detail::Io(_) => "io",
            Detail::Refusal(_) => "refused",
        }
    }

    /// The pack's own error, when it is about a pack.
    pub fn pack_error(&self) -> Option<&PackError> {
        match &*self.detail {
            Detail::Pack(e) => Some(e),
            _ => None,
        }
    }

    /// Why relocation refused, when it did.
    pub fn refusal(&self) -> Option<&Refusal> {
        match &*self.detail {
            Detail::Refusal(r) => Some(r),
            _ => None,
        }
    }

    /// Writing or reading `path` failed with `e`; the text is `e`'s alone (callers name the
    /// file in their own words).
    pub(crate) fn io(path: &Path, e: io::Error) -> Error {
        Error {
            kind: ErrorKind::Io,
            path: Some(path.to_path_buf()),
            detail: Box::new(Detail::Io(e)),
        }
    }

    /// The same error, of another kind (a symlink met where a pack is opened is unsafe
    /// although the open failed with an I/O error).
    pub(crate) fn of_kind(mut self, kind: ErrorKind) -> Error {
        self.kind = kind;
        self
    }
}

/// The kind a pack's refusal is.
fn pack_kind(e: &PackError) -> ErrorKind {
    match &e.kind {
        PackErrorKind::Io(io) if io.kind() == io::ErrorKind::NotFound => ErrorKind::NothingLearned,
        // Too many levels of links: O_NOFOLLOW met a symlink.
        PackErrorKind::Io(io) if io.raw_os_error() == Some(libc::ELOOP) => ErrorKind::Unsafe,
        PackErrorKind::Io(_) => ErrorKind::Io,
        PackErrorKind::Unsafe(_) => ErrorKind::Unsafe,
        PackErrorKind::ForeignRoot { .. } => ErrorKind::ForeignRoot,
        _ => ErrorKind::BadFile,
    }
}

impl From<PackError> for Error {
    fn from(e: PackError) -> Error {
        Error {
            kind: pack_kind(&e),
            path: e.path.clone(),
            detail: Box::new(Detail::Pack(e)),
        }
    }
}

impl From<StateError> for Error {
    fn from(e: StateError) -> Error {
        Error {
            kind: ErrorKind::BadFile,
            path: Some(PathBuf::from(&e.file)),
            detail: Box::new(Detail::State(e)),
        }
    }
}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Error {
        let path = match &r {
            Refusal::NotExt4 { file, .. } => Some(file.clone()),
            Refusal::ReadOnly { mount }
            | Refusal::NearlyFull { mount, .. }
            | Refusal::Fragmented { mount, .. } => Some(mount.clone()),
            _ => None,
        };
        Error {
            kind: ErrorKind::RelocationRefused,
            path,
            detail: Box::new(Detail::Refusal(r)),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.detail {
            Detail::Pack(e) => e.fmt(f),
            Detail::State(e) => e.fmt(f),
            Detail::Io(e) => e.fmt(f),
            Detail::Refusal(r) => r.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &*self.detail {
            Detail::Pack(e) => Some(e),
            Detail::State(e) => Some(e),
            Detail::Io(e) => Some(e),
            Detail::Refusal(r) => Some(r),
        }
    }
}

/// For callers that report errors as text: the same text.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}

/// For callers whose own errors are I/O errors: the I/O error itself where there is one,
/// otherwise one of kind `InvalidData` with the same text.
impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match *e.detail {
            Detail::Io(io) => io,
            detail => io::Error::new(
                io::ErrorKind::InvalidData,
                Error {
                    kind: e.kind,
                    path: e.path,
                    detail: Box::new(detail),
                }
                .to_string(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::{Header, Pack, RootId};
    use crate::replay;
    use crate::state::State;
    use std::os::unix::fs::PermissionsExt;

    fn root() -> RootId {
        RootId {
            uuid: String::new(),
            fsid: 42,
        }
    }

    fn pack() -> Pack {
        Pack {
            header: Header {
                root: root(),
                ..Header::default()
            },
            entries: Vec::new(),
        }
    }

    #[test]
    fn a_symlink_planted_where_the_pack_is_loaded_is_unsafe_with_the_same_text() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real.pack");
        pack().write_file(&real).unwrap();
        let planted = d.path().join("readahead.pack");
        std::os::unix::fs::symlink(&real, &planted).unwrap();
        let e = replay::load(&planted, &root(), ::sys::euid()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsafe, "{e}");
        assert_eq!(e.reason(), "io");
        assert_eq!(e.path(), Some(planted.as_path()));
        assert!(
            e.to_string()
                .starts_with(&format!("{}: ", planted.display())),
            "{e}"
        );
    }

    #[test]
    fn a_truncated_pack_is_a_bad_file_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("readahead.pack");
        let bytes = pack().encode();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        for e in [
            replay::load(&path, &root(), ::sys::euid()).unwrap_err(),
            Pack::read_file(&path).unwrap_err(),
        ] {
            assert_eq!(e.kind(), ErrorKind::BadFile, "{e}");
            assert_eq!(e.path(), Some(path.as_path()));
            assert!(
                e.to_string().starts_with(&path.display().to_string()),
                "{e}"
            );
        }
    }

    #[test]
    fn no_pack_yet_others_may_write_and_another_root() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("readahead.pack");
        let me = ::sys::euid();
        let e = replay::load(&path, &root(), me).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NothingLearned, "{e}");
        assert_eq!(
            Pack::read_file(&path).unwrap_err().kind(),
            ErrorKind::NothingLearned
        );
        pack().write_file(&path).unwrap();
        let other = RootId {
            uuid: String::new(),
            fsid: 43,
        };
        let e = replay::load(&path, &other, me).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ForeignRoot, "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
        let e = replay::load(&path, &root(), me).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsafe, "{e}");
        assert!(e.to_string().contains("mode 664"), "{e}");
    }

    #[test]
    fn state_files_that_do_not_parse_are_bad_and_a_directory_there_is_unsafe() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("readahead.state");
        std::fs::write(&path, "version 1\nfrobnicate\n").unwrap();
        let e = State::load(&path).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadFile);
        assert_eq!(e.path(), Some(path.as_path()));
        assert!(
            e.to_string()
                .starts_with(&format!("{}:2: expected", path.display())),
            "{e}"
        );
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let e = State::load(&path).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsafe, "{e}");
        let a_file = d.path().join("a-file");
        std::fs::write(&a_file, "").unwrap();
        let e = State::default().save(&a_file.join("state")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    }

    #[test]
    fn a_refusal_is_a_relocation_refused_with_its_text() {
        let r = Refusal::ReadOnly {
            mount: PathBuf::from("/mnt"),
        };
        let text = r.to_string();
        let e = Error::from(r);
        assert_eq!(e.kind(), ErrorKind::RelocationRefused);
        assert_eq!(e.path(), Some(Path::new("/mnt")));
        assert_eq!(e.to_string(), text);
        assert!(matches!(e.refusal(), Some(Refusal::ReadOnly { .. })));
        assert_eq!(String::from(e), text);
    }
}
