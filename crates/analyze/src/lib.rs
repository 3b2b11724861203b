//! From a trace to a boot model.
//!
//! `analyze` owns the meaning of a recorded boot: it turns the parsed trace files (from
//! `trace`) into one [`BootModel`]: milestones (kernel, init exec, text and graphical login,
//! boot done, and the platform's own: Android's in [`platform`]), CPU and disk time series,
//! the idle fraction, the process list and the top lists.
//! [`bootchart`] rebuilds bootchart2's own figures and process tree, for compatibility checks.
//! The judgement over that model is here too: [`budget`] (phases against their time budgets,
//! from `[budget]` of `bootprint.toml`), [`settle`] (when CPU and disk went idle and what ran
//! after the login until then), [`advise`] (findings with evidence, gain and fix; the
//! kernel's own findings come from the `kernel` crate), [`diff`] (two boots side by side),
//! with [`services`] (init-script spans from the process tree; the services views of the
//! runner's `rc.log` and of systemd's units) and [`usage`] (who used a time window) beneath
//! them; [`systemd_analyze`] reads `systemd-analyze`'s output back to check the units' view.
//! [`account`] splits a systemd boot's time to the login into consecutive segments
//! (kernel, initramfs, systemd's start, generators, units, the getty's wait) with the
//! critical chain and the CPU before the login.
//! [`shutdown`] is a recorded shutdown: its stops, blame and the chain that held it;
//! [`cycle`] joins it with the boot after it, as one reboot's time line.
//! [`summary`] is a boot in one line for the history of kept traces (`bootprint list`);
//! [`baseline`] a boot's figure against the boots before it on the same machine;
//! [`fleet`] many machines' boots, each reduced to a small record, judged by that rule. It
//! does not read files itself beyond what `trace::reader` does (and
//! [`budget::Budgets::load`] for the budget file), never looks at the machine it runs on, and
//! formats nothing (that is `render`).
//!
//! ```no_run
//! let trace = trace::Trace::open(std::path::Path::new("/var/log/bootprint/latest"))?;
//! let model = analyze::analyze(&trace)?;
//! println!("boot done at {:.2} s", model.milestones.boot_done.t_s);
//! println!("idle {:.0}%", model.cpu_totals.idle_fraction * 100.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod account;
pub mod advise;
pub mod baseline;
pub mod bootchart;
pub mod budget;
pub mod build;
pub mod cycle;
pub mod diff;
pub mod fleet;
pub mod model;
pub mod platform;
pub mod report;
pub mod services;
pub mod settle;
pub mod shutdown;
pub mod summary;
pub mod systemd_analyze;
pub mod usage;

pub use build::{analyze, analyze_with, AnalyzeError, Options};
pub use model::*;
pub use report::Report;
