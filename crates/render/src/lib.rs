//! Renders a boot model.
//!
//! `render` owns the output formats of `bootprint report` and its sibling verbs: plain text
//! ([`text`], with [`judge`] for the budget and boot-done sections), one JSON object
//! ([`json`]), the bootchart-style SVG ([`chart`] lays it out, [`svg`] draws it), the
//! self-contained HTML report ([`html`]), the findings of `advise` as text ([`advice`]), two
//! boots side by side ([`diff`]), and the exports: Chrome trace-event JSON for Perfetto
//! ([`perfetto`]) and the Prometheus textfile ([`prometheus`]; at boot done the recorder runs
//! `bootprint export --prometheus`, which calls it: the boot path does not link `render`).
//! Every renderer takes what `analyze` computed and writes to any `io::Write`; none of them
//! computes boot figures (that is `analyze`) or reads traces (that is `trace`).
#![deny(missing_docs)]

pub mod advice;
pub mod chart;
pub mod diff;
pub mod html;
pub mod json;
pub mod judge;
pub mod perfetto;
pub mod prometheus;
pub mod svg;
pub mod text;
