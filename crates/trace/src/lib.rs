//! The bootprint trace: what a recorded boot leaves on disk, and the types to read and write it.
//!
//! A trace is a directory of bootchart2-compatible sample logs plus bootprint's own
//! `events.log` and, when bootprint's runner started the init scripts, its span log `rc.log`
//! ([`rclog`]); on a systemd boot, systemd's own unit timing `systemd-units.log` ([`units`])
//! (see `docs/trace-format.md`). This crate owns the format only: parsing takes
//! text, writing takes values; it decides nothing about when to sample or what a boot means
//! (that belongs to `sample` and `analyze`). It also holds [`conf`], the one parser of
//! `bootprint.toml`'s syntax, and [`config`], the file's schema (its path, every section and
//! key with type, default and meaning), shared by the boot path, the runner and the report,
//! and [`config_default`], the commented default file the Debian package installs, and
//! [`procfs`], the one parser of the /proc lines a trace keeps (`/proc/stat`'s `cpu` line,
//! `/proc/diskstats`), which the live readers share.
#![deny(missing_docs)]

pub mod conf;
pub mod config;
pub mod config_default;
pub mod events;
pub mod procfs;
pub mod rclog;
pub mod units;
pub mod writer;

pub use events::{Event, EventParseError};
pub mod bootchart;
pub mod reader;

pub use bootchart::ParseError;
pub use reader::{ReadError, Trace};
