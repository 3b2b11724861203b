//! Renders a boot model.
//!
//! `render` owns the output formats of `bootprint report`: plain text ([`text`]), one JSON
//! object ([`json`]) and the bootchart-style SVG ([`chart`] lays it out, [`svg`] draws it).
//! Every renderer takes an [`analyze::BootModel`] and writes to any `io::Write`; none of them
//! computes boot figures (that is `analyze`) or reads traces (that is `trace`).
#![deny(missing_docs)]

pub mod chart;
pub mod json;
pub mod svg;
pub mod text;
