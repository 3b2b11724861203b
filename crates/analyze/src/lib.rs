//! From a trace to a boot model.
//!
//! `analyze` owns the meaning of a recorded boot: it turns the parsed trace files (from
//! `trace`) into one [`BootModel`]: milestones (kernel, init exec, text and graphical login,
//! boot done), CPU and disk time series, the idle fraction, the process list and the top lists.
//! [`bootchart`] rebuilds bootchart2's own figures and process tree, for compatibility checks.
//! It does not read files itself beyond what `trace::reader` does, never looks at the machine
//! it runs on, and formats nothing (that is `render`).
#![deny(missing_docs)]

pub mod bootchart;
pub mod build;
pub mod model;

pub use build::{analyze, analyze_with, AnalyzeError, Options};
pub use model::*;
