//! Fuzz targets for every bootprint parser that reads a file a user or another program wrote,
//! and a runner for them that works on stable Rust.
//!
//! Parts of bootprint run as PID 1 at boot, where a parser that panics, aborts, loops or
//! allocates without bound on a hostile file can break the boot. Each [`Target`] here is one
//! function over bytes that calls a parser (or a chain: parse, then what production does next
//! with the result) the way production does, with the bytes as production reads them (lossy
//! or strict UTF-8, whole files, or a trace or root directory given as a small container of
//! files, see [`container`]). [`runner`] feeds each target inputs made from the repository's
//! fixtures by a deterministic generator ([`mutate`]), one child process per target so that
//! an abort or a stack overflow is caught, with the address space capped and a time limit per
//! input; a failing input is saved and can be replayed.
//!
//! This crate owns the targets, the generator and the runner. It does not own the parsers:
//! a crash found here is fixed in the parser's crate, with a regression test there.
//!
//! ```
//! let t = bootprint_fuzz::target("trace_events").unwrap();
//! (t.run)(b"# bootprint events 1\n5 milestone name=x\n");
//! for seed in (t.seeds)() {
//!     (t.run)(&seed);
//! }
//! ```
#![deny(missing_docs)]

pub mod container;
pub mod mutate;
pub mod runner;
pub mod seeds;
mod sys;
pub mod targets;

use arbitrary::Unstructured;

/// Builds an input from arbitrary bytes.
pub type Structured = fn(&mut Unstructured) -> arbitrary::Result<Vec<u8>>;

/// One fuzz target.
pub struct Target {
    /// Its name, e.g. `trace_proc_ps` (`[a-z0-9_]`).
    pub name: &'static str,
    /// The parser(s) it reaches, for the list and the docs.
    pub about: &'static str,
    /// Runs the parser on one input. It must return (never panic, abort, loop or exhaust
    /// memory) whatever the bytes.
    pub run: fn(&[u8]),
    /// The seed inputs, from the repository's fixtures or built in code.
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// Tokens of the format that mutations insert (keywords, separators, field names).
    pub tokens: &'static [&'static str],
    /// Builds a structured input from arbitrary bytes (`arbitrary`-driven), for formats that
    /// random byte mutations rarely get through (checksums, lengths, archives).
    pub structured: Option<Structured>,
}

/// Every target, in a stable order.
pub fn all() -> Vec<Target> {
    let mut v = Vec::new();
    v.extend(targets::trace::targets());
    v.extend(targets::analyze::targets());
    v.extend(targets::rc::targets());
    v.extend(targets::record::targets());
    v.extend(targets::readahead::targets());
    v.extend(targets::preload::targets());
    v.extend(targets::enablement::targets());
    v.extend(targets::modules::targets());
    v.extend(targets::initramfs::targets());
    v.extend(targets::kernel::targets());
    v.extend(targets::sample::targets());
    v
}

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    all().into_iter().find(|t| t.name == name)
}
