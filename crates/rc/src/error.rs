//! The crate's error: what kind of failure (for the caller to act on), where (the file and
//! line, when there is one) and the message the user sees.

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

impl sys::Kind for ErrorKind {
    const IO: ErrorKind = ErrorKind::Io;
    /// rc's messages name their file themselves.
    const PATH_FIRST: bool = false;
}

/// A failure of an rc operation (the shape every boot-path crate's error has, `sys::Error`).
/// `Display` prints the message alone (it names the file itself where it has one);
/// `String::from` gives that text.
pub type Error = sys::Error<ErrorKind>;
