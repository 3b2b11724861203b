//! The bootprint recorder and the boot path's hand-off to the real init.
//!
//! [`handoff`] is what runs as PID 1 for a moment: it reads the configuration, forks the
//! recorder and execs the real init, and on any failure execs the real init at once.
//! [`recorder`] samples until boot is done ([`done`]) and writes the trace ([`store`]);
//! [`readahead`] replays or learns the readahead pack around it; [`retain`] then keeps the
//! log directory within its limits (also `bootprint prune`). [`modload`] and [`judged`] are
//! the levers that judge themselves by boots with and without them, beside readahead's. [`shutdown`] records a
//! shutdown with the same recorder, into the trace of the boot it ends.
//! Sampling /proc belongs to `sample`; the on-disk format belongs to `trace`; system calls
//! to the `sys` crate (and [`sys`] here: fchdir and the termination signals, which only the
//! hand-off and the recorder use).
#![deny(missing_docs)]

pub mod config;
pub mod done;
pub mod execs;
pub mod export;
pub mod fault;
pub mod handoff;
pub mod judged;
pub mod kmsg;
pub mod modload;
pub mod observers;
pub mod readahead;
pub mod recorder;
pub mod retain;
pub mod shutdown;
pub mod store;
pub mod sys;
pub mod sysinfo;

pub use config::Config;
