//! bootprint rc: a parallel runner for LSB init scripts (sysvinit, Debian, Devuan,
//! embedded), and what it needs to know before it starts anything.
//!
//! - [`header`]: the `### BEGIN INIT INFO` block of one script, parsed as leniently as
//!   Debian's insserv parses it (keyword case, `-` or `_`, `X-vendor-` prefixes, the first
//!   block and the first occurrence of a keyword win, as insserv does).
//! - [`conf`]: system facilities (`$local_fs`, `$network`, ...) from `/etc/insserv.conf`
//!   and `/etc/insserv.conf.d/*`, with `+` optional providers and `<interactive>`.
//! - [`system`]: a whole system read from a root directory: every script of `/etc/init.d`,
//!   the facilities, and which scripts each runlevel starts (`/etc/rcN.d/S*` links).
//! - [`graph`]: the start graph of one runlevel: every edge with the header line it came
//!   from, `$all`, cycles reported with their path and broken deterministically, a start
//!   order, levels and the critical path (the runner's priorities).
//! - [`run`]: the runner behind `bootprint-boot rc`: a [`run::Plan`] per runlevel (the path
//!   to the login target, late services, priorities from [`durations`]), run in parallel
//!   with output on ptys, timeouts, load-following concurrency and idle-deferred late
//!   services; serial fallback on any failure.
//! - [`builtin`]: Debian's early-boot scripts done by the runner itself (mountkernfs.sh,
//!   mountdevsubfs.sh, urandom, hostname.sh), only where the script and its configuration
//!   are Debian's own; the script runs whenever a built-in declines or fails.
//! - [`udev`]: when udev may run beside the path to the login instead of alone before it.
//! - [`boot`]: one graph for the boot: the runlevel after S, and runlevel S's progress as
//!   its span log shows it to the runners that wait for its scripts.
//! - [`login`]: the login target learned from the system (`login = auto`): the network
//!   only when logins need it, syslog only when it logs them, each part with its reason.
//! - [`fallback`]: the last resort (every script of the runlevel serially in link order,
//!   whatever failed) and the `bootprint.rc.fault=` switch that forces a failure.
//! - [`durations`]: what earlier boots taught (`/var/lib/bootprint/rc-durations`).
//! - [`spans`]: the runner's span log (`/run/bootprint/rc.log`, `rc.log` in a trace), its
//!   writer (the format and reader are `trace::rclog`; the services view built from it is
//!   `analyze::services`).
//!
//! Errors: the operations a caller decides on ([`system::System::load`],
//! [`boot::next_runlevel`], [`run::Request::from_startpar`], [`builtin::recognise`],
//! [`builtin::run`], [`udev::off_path`]) return an [`Error`]; its [`ErrorKind`] says what
//! failed (I/O, a bad line, bad arguments, a refusal, a built-in's step), its `Display` the
//! message the console shows. Problems the reader works around are [`Diagnostic`]s instead.
//!
//! Not here: recording the boot (the `record` crate copies the span log into the trace),
//! argument parsing (`bootprint-boot rc`, `bootprint rc`), rendering beyond plain text.
//! System calls: those only rc makes (ptys, sessions, the built-ins') in `sys.rs`, the
//! shared ones (clock, fork, kill, mount, statvfs) from the `sys` crate.
//!
//! ```no_run
//! use std::path::Path;
//! let sys = rc::system::System::load(Path::new("/"))?;
//! let graph = sys.graph(rc::system::Runlevel::Num(2));
//! for id in graph.order() {
//!     println!("{}", graph.nodes[id].name);
//! }
//! # Ok::<(), rc::Error>(())
//! ```
#![deny(missing_docs)]

pub mod boot;
pub mod builtin;
pub mod conf;
pub mod durations;
mod error;
pub mod fallback;
pub mod graph;
pub mod header;
pub mod login;
pub mod run;
pub mod spans;
mod sys;
pub mod system;
pub mod udev;

pub use error::{Error, ErrorKind};

use std::fmt;
use std::path::PathBuf;

/// Something wrong in an input file that the reader worked around: the file, the line
/// (1-based, when there is one) and what was expected there. Never fatal: the boot goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file, as given to the parser (relative to the root for a loaded system).
    pub file: PathBuf,
    /// 1-based line number, if the problem has one.
    pub line: Option<usize>,
    /// What was found and what was expected.
    pub message: String,
}

impl Diagnostic {
    pub(crate) fn new(file: &std::path::Path, line: Option<usize>, message: String) -> Self {
        Diagnostic {
            file: file.to_path_buf(),
            line,
            message,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: {}", self.file.display(), l, self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}
