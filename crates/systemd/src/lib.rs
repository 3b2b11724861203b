//! bootprint on systemd: late units, and what a shutdown looked like to systemd. systemd starts everything the default target wants as
//! soon as it can, so on a small machine the services nobody needs to log in compete with
//! the getty and the display manager. This crate owns what moves them after the login:
//!
//! - [`show`]: the manager's unit graph, as `systemctl show` prints it.
//! - [`late`]: which units can wait (not on the path to a login, not socket-activated,
//!   nothing early waits for them), with the reason for each one kept; the state file.
//! - [`learn`]: asks the running manager (`systemctl`), the one place that does: every
//!   unit's graph and timing, which the recorder keeps in the trace at boot done, and the
//!   late units chosen from it, so the next boot uses what this one saw.
//! - [`generator`]: the systemd generator that defers the learned units (a condition drop-in
//!   each, a target that wants them, a service that starts it once idle).
//! - [`waiter`]: that service (`bootprint-boot late-start`).
//! - [`journal`]: a shutdown's unit stops as the journal recorded them, read by the boot
//!   after it; and the generator above also adds the shutdown recorder's unit.
//! - [`boots`]: a boot's start as the journal recorded it (its stages, its units' start
//!   jobs), for any past boot of a machine booted without the recorder.
//! - [`timeouts`]: stop timeouts learned from those stops for the services that hung a
//!   shutdown (the `timeouts` lever), and the generator's drop-ins for them.
//!
//! Not here: the switch and the pins (`[systemd]` in bootprint.toml, read by the `record`
//! crate's configuration), argument parsing (`bootprint-boot`). docs/systemd.md describes
//! the mechanism and why it is built this way.
#![deny(missing_docs)]

pub mod boots;
pub mod generator;
pub mod journal;
pub mod late;
pub mod learn;
pub mod show;
pub mod timeouts;
pub mod waiter;
