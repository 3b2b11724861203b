//! bootprint readahead: learns which files, and which pages of them, a boot reads; packs
//! them into one checked file; and replays the pack at the start of the next boot so the
//! boot finds its data already in the page cache.
//!
//! - [`pack`]: the on-disk format (magic, version, CRC-32, [`pack::check`] without any
//!   filesystem access, deterministic encoding, JSON dump).
//! - [`filemap`]: the exact pages used, from the kernel's filemap tracepoints (Linux 6.10+),
//!   in a tracing instance of its own.
//! - [`learn`]: fanotify marks on the local disk filesystems record the files in
//!   first-access order; when boot is done, mincore gives the pages used; [`learn::build_pack`]
//!   orders them (physical order on rotating disks, access order otherwise) within a byte
//!   budget.
//! - [`replay`]: [`replay::load`] refuses untrusted, corrupt, foreign packs;
//!   [`replay::replay`] reads the ranges with readahead(2) at idle I/O priority within a time
//!   limit and returns statistics for the trace; [`replay::hit_rate`] says how much of it
//!   was used. With [`replay::ReplayOptions::yield_to_others`] it reads only while the disk
//!   is otherwise idle ([`yield_io`]: preload's prefetch, which must never slow a login).
//! - [`relocate`]: after boot (`bootprint readahead relocate`), moves the pack's files'
//!   blocks on ext4 into one contiguous region in first-access order (EXT4_IOC_MOVE_EXT).
//! - [`inode_table`]: where ext4 keeps each file's inode on the device (superblock and
//!   group descriptors); [`metadata`]: the inode-table and directory blocks opening the
//!   pack's files needs, learned into the pack and read first by replay.
//! - [`state`]: the history of boot times with and without replay and readahead's own
//!   verdict (it switches itself off where replay does not make boots faster).
//! - [`plan`]: the pure rules (pages to ranges, order, budget); [`system`]: mountinfo,
//!   sysfs and diskstats parsing (the `read_ahead_kb` guard is `sample::knob`); [`sys`]: the
//!   raw system calls only readahead makes (fork, pipe, statfs and the other shared ones are
//!   the `sys` crate's).
//!
//! Errors: the operations on files (loading, reading and writing a pack, loading and saving
//! a state file) fail with [`Error`]; its [`ErrorKind`] is what a caller decides on (nothing
//! learned yet, a bad file, unsafe, a foreign root, I/O), its text names the file and what
//! was wrong. [`relocate::relocate`] refuses with a [`relocate::Refusal`], which converts
//! into an [`Error`] of kind [`ErrorKind::RelocationRefused`]. Pure decoders keep their own
//! detailed errors ([`pack::PackError`], [`state::StateError`], [`system::ParseError`]);
//! starting the learner and the replay child fails with the system call's `io::Error`.
//!
//! This crate does not decide when to learn or replay, or write the trace: the boot path
//! (`bootprint-boot`) calls it and records [`replay::ReplayStats`] as an event.
//!
//! ```no_run
//! use readahead::{learn, pack, replay, system};
//! // Boot N: learn while the boot runs, pack when it is done.
//! let l = learn::LearnThread::spawn(&learn::LearnConfig::default())?;
//! // ... boot runs ...
//! let (p, _stats) = learn::build_pack(&l.stop(), &learn::PackOptions::default());
//! p.write_file(std::path::Path::new(pack::DEFAULT_PATH))?;
//! // Boot N+1: replay from a child before exec'ing init.
//! let paths = system::Paths::default();
//! let mounts = system::parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo")?, "mountinfo")?;
//! let ours = system::root_id(&paths, system::root_mount(&mounts));
//! let p = replay::load(std::path::Path::new(pack::DEFAULT_PATH), &ours, 0)?;
//! let child = replay::spawn_child(&p, &replay::ReplayOptions::default())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod error;
pub mod filemap;
pub mod inode_table;
pub mod learn;
pub mod metadata;
pub mod pack;
pub mod plan;
pub mod relocate;
pub mod replay;
pub mod state;
pub mod sys;
pub mod system;
pub mod yield_io;

pub use error::{Error, ErrorKind};
