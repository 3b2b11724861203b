//! The crate's error: what kind of failure (for the caller to act on), where (the file and
//! line, when there is one) and the message the user sees.

use std::fmt;
use std::path::{Path, PathBuf};

/// The kinds of failure a caller of rc tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Reading the system failed: a file or directory could not be read ([`Error::path`]).
    Io,
    /// A file holds what the reader cannot take: [`Error::path`] and, when there is one,
    /// [`Error::line`] name the place.
    Parse,
    /// The command line the runner was given (startpar's arguments) is not usable.
    Arguments,
    /// The operation refuses this system and the normal way is taken instead: a built-in
    /// declines (the script runs), udev keeps its place, runlevel S runs whole.
    Refused,
    /// A built-in's step failed or was not certain; the script runs instead.
    BuiltinFailed,
}

/// A failure of an rc operation. `Display` prints the message alone (it names the file
/// itself where it has one).
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    path: Option<PathBuf>,
    line: Option<usize>,
    message: String,
    source: Option<std::io::Error>,
}

impl Error {
    /// A failure of `kind` said by `message`, at no file in particular.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            path: None,
            line: None,
            message: message.into(),
            source: None,
        }
    }

    /// Reading `path` failed with `source`; `message` is the whole text the user sees.
    pub(crate) fn io(path: &Path, message: impl Into<String>, source: std::io::Error) -> Error {
        Error {
            source: Some(source),
            ..Error::new(ErrorKind::Io, message).at(path)
        }
    }

    /// The same error, about `path`.
    pub(crate) fn at(mut self, path: &Path) -> Error {
        self.path = Some(path.to_path_buf());
        self
    }

    /// The same error, at 1-based `line` of its file.
    pub(crate) fn on_line(mut self, line: usize) -> Error {
        self.line = Some(line);
        self
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The file or directory concerned, if any (as the message names it).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The 1-based line of [`Error::path`] concerned, if any.
    pub fn line(&self) -> Option<usize> {
        self.line
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Equal when kind, place and message are: an I/O source is compared by its message.
impl PartialEq for Error {
    fn eq(&self, other: &Error) -> bool {
        (self.kind, &self.path, self.line, &self.message)
            == (other.kind, &other.path, other.line, &other.message)
    }
}

/// The message alone, for the runner's and the built-ins' steps that report text only.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.message
    }
}
