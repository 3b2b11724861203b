//! Sampling for the bootprint recorder: the /proc files a sample is made of, every
//! process's `/proc/PID/stat` read cheaply at the recorder's rate, and exec events from the
//! kernel's process events connector or fanotify.
//!
//! This crate reads the running kernel; it decides nothing about when to sample or when boot
//! is done (that is the recorder's, in `record`) and formats nothing on disk (that is
//! `trace`'s). Every path is a parameter ([`procfs::ProcFs`]) so tests use fake trees;
//! raw system calls only it makes live in [`sys`] (those other crates make too: the `sys`
//! crate).
#![deny(missing_docs)]

pub mod execwatch;
pub mod knob;
pub mod procevents;
pub mod procfs;
pub mod sys;
