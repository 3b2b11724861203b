//! From a trace to a boot model.
//!
//! `analyze` owns the meaning of a recorded boot: it turns the parsed trace files (from
//! `trace`) into one [`BootModel`]: milestones (kernel, init exec, text and graphical login,
//! boot done), CPU and disk time series, the idle fraction, the process list and the top lists.
//! It also rebuilds bootchart2's process tree (module `bootchart`) for compatibility. It does not
//! read files itself beyond what `trace::reader` does, never looks at the machine it runs on,
//! and does not format anything (that is `render`).
#![deny(missing_docs)]

pub mod model;

pub use model::*;
