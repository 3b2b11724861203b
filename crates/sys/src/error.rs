//! The shape of the boot path's typed errors, once: a kind the caller decides on (each
//! crate's own enum), the file and line concerned when there is one, the message the user
//! sees, and the OS error underneath. `rc` and `initramfs` name theirs
//! `pub type Error = sys::Error<ErrorKind>`, their `ErrorKind` a [`Kind`].

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A crate's kinds of failure, and how its errors are shown.
pub trait Kind: Copy + fmt::Debug + PartialEq + 'static {
    /// The kind of a failed read or write of a file.
    const IO: Self;
    /// Whether the text shown is `PATH: message` (the crate's messages do not name their
    /// file) rather than the message alone (they name it themselves).
    const PATH_FIRST: bool;
}

/// A failure: its kind, where (the file and line, when there is one), the message and the
/// OS error it came from.
#[derive(Debug)]
pub struct Error<K> {
    kind: K,
    path: Option<PathBuf>,
    line: Option<usize>,
    message: String,
    source: Option<io::Error>,
}

impl<K: Kind> Error<K> {
    /// A failure of `kind` said by `message`, at no file in particular.
    pub fn new(kind: K, message: impl Into<String>) -> Self {
        Error {
            kind,
            path: None,
            line: None,
            message: message.into(),
            source: None,
        }
    }

    /// Reading or writing `path` failed with `source`; `message` is what the user reads.
    pub fn io(path: &Path, message: impl Into<String>, source: io::Error) -> Self {
        Error {
            source: Some(source),
            ..Error::new(K::IO, message).at(path)
        }
    }

    /// The same error, about `path`.
    pub fn at(mut self, path: &Path) -> Self {
        self.path = Some(path.to_path_buf());
        self
    }

    /// The same error, at 1-based `line` of its file.
    pub fn on_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> K {
        self.kind
    }

    /// The file or directory concerned, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The 1-based line of [`Error::path`] concerned, if any.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// What went wrong, as said, without the path the text may put first.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl<K: Kind> fmt::Display for Error<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) if K::PATH_FIRST => write!(f, "{}: {}", p.display(), self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl<K: Kind> std::error::Error for Error<K> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Equal when kind, place and message are: an OS error underneath is compared by the
/// message it gave.
impl<K: Kind> PartialEq for Error<K> {
    fn eq(&self, other: &Self) -> bool {
        (self.kind, &self.path, self.line, &self.message)
            == (other.kind, &other.path, other.line, &other.message)
    }
}

/// The text as shown, for the steps that report text only.
impl<K: Kind> From<Error<K>> for String {
    fn from(e: Error<K>) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Named {
        Io,
        Parse,
    }
    impl Kind for Named {
        const IO: Self = Named::Io;
        const PATH_FIRST: bool = false;
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Prefixed {
        Io,
    }
    impl Kind for Prefixed {
        const IO: Self = Prefixed::Io;
        const PATH_FIRST: bool = true;
    }

    #[test]
    fn the_kind_says_whether_the_path_comes_first() {
        let path = Path::new("/etc/x");
        let named = Error::new(Named::Parse, "/etc/x:3: expected a word")
            .at(path)
            .on_line(3);
        assert_eq!(named.to_string(), "/etc/x:3: expected a word");
        assert_eq!((named.kind(), named.line()), (Named::Parse, Some(3)));
        let prefixed: Error<Prefixed> =
            Error::io(path, "cannot read", io::Error::from_raw_os_error(2));
        assert_eq!(prefixed.to_string(), "/etc/x: cannot read");
        assert_eq!(prefixed.message(), "cannot read");
        assert_eq!(prefixed.kind(), Prefixed::Io);
        assert!(std::error::Error::source(&prefixed).is_some());
        assert_eq!(String::from(prefixed), "/etc/x: cannot read");
        let io: Error<Named> = Error::io(path, "m", io::Error::from_raw_os_error(2));
        assert_eq!(io.kind(), Named::Io);
        assert_ne!(io, Error::new(Named::Io, "m"));
        assert_eq!(io, Error::new(Named::Io, "m").at(path));
    }
}
