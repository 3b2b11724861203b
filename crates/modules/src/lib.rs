//! bootprint modules: coldplug. Finds the kernel modules the present hardware needs (every
//! `modalias` under sysfs, resolved through libkmod as udev resolves it, plus `/etc/modules`
//! and `modules-load.d`), builds a dependency graph of them ([`Plan`]: `modules.dep`, softdeps
//! from `modules.softdep` and modprobe.d, options, blacklist; builtin and loaded modules left
//! out), and loads it with several threads in dependency order, the modules that take long
//! first so their waits overlap the rest of the boot ([`load`]).
//!
//! It owns: the libkmod binding (`ffi.rs`, `sys.rs`, the only `unsafe`; the clock and
//! `uname` are the `sys` crate's), the plan, the ready
//! set, the loader and the durations state file. It does not own: when loading runs at boot
//! and what is recorded in the trace (the boot path, `bootprint-boot`), nor the CLI verb
//! (`bootprint modules`).
//!
//! ```no_run
//! use modules::kmod::{self, Paths};
//! let paths = Paths::new("/".as_ref(), &kmod::running_release());
//! let plan = kmod::plan_system(&paths)?;
//! for i in plan.order() {
//!     println!("{}", plan.modules[i].name);
//! }
//! let report = kmod::load_system(&plan, &paths, 4);
//! println!("{} modules live", report.live());
//! # Ok::<(), modules::Error>(())
//! ```

#![deny(missing_docs)]

pub mod durations;
#[allow(missing_docs)]
mod ffi;
pub mod input;
pub mod kmod;
pub mod load;
pub mod plan;
pub mod sched;
mod sys;

use std::fmt;
use std::path::{Path, PathBuf};

pub use ::sys::boottime_ns;
pub use durations::Durations;
pub use load::{load, Insert, Inserter, LoadReport, Outcome, Timing};
pub use plan::{build, Index, Inputs, ModInfo, Plan, Planned, SkipReason};

/// Where a request came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A device's `modalias` file.
    Modalias(PathBuf),
    /// A line of `/etc/modules` or a `modules-load.d` file.
    List(PathBuf, usize),
}

/// One thing to load: a modalias or a module name, with extra options (from `/etc/modules`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The modalias or module name as found.
    pub name: String,
    /// Options given beside it (only `/etc/modules` has them).
    pub options: String,
    /// Where it came from.
    pub source: Source,
}

/// What can go wrong planning or reading state.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file's content is not what was expected.
    Parse {
        /// The file.
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// What was expected and found.
        msg: String,
    },
    /// libkmod could not open its index or answer a lookup.
    Kmod(String),
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn parse(file: &Path, line: usize, msg: String) -> Error {
        Error::Parse {
            file: file.to_path_buf(),
            line,
            msg,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Parse { file, line, msg } => write!(f, "{}:{line}: {msg}", file.display()),
            Error::Kmod(msg) => write!(f, "libkmod: {msg}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
