//! Renders a boot.
//!
//! `render` owns the output formats of `bootprint report` and its sibling verbs. The report
//! is computed once, as an `analyze::Report`, and every format is a sibling function over it:
//! [`text::report`] (with [`judge`] for the budget and boot-done sections), [`json::report`],
//! [`svg::report`] (the bootchart-style SVG: [`chart`] lays it out, [`svg`] draws it),
//! [`html::report`] (one self-contained page), [`perfetto::report`] (Chrome trace-event JSON),
//! [`prometheus::report`] (the textfile for node_exporter; at boot done the recorder runs
//! `bootprint export --prometheus`, which calls it: the boot path does not link `render`) and
//! [`advice::report`] (the findings of `advise`). Beside them: the runner's services view
//! ([`services`]) and a recorded shutdown's ([`shutdown`]), two boots side by side ([`diff`]), and the kernel's own report
//! (`bootprint kernel`: [`kernel_text`], [`kernel_svg`], [`json::kernel`]) and the init
//! scripts' start graph (`bootprint rc graph`: [`rc_graph`], text, JSON, DOT). The levers'
//! views render what their crates hold: the module loader's plan (`bootprint modules plan`:
//! [`modules_plan`]) and its status ([`modules_status`]), readahead's status
//! ([`readahead_status`]), its pack ([`readahead_pack`]), its relocation
//! ([`readahead_relocate`]) and a replay run by hand ([`readahead_replay`]), preload's status and model ([`preload_status`]); and the
//! host-only initramfs's
//! plan ([`initramfs_plan`]). The history of kept traces and what a prune removes
//! (`bootprint list`, `prune`: [`history`]); many machines' boots (`bootprint fleet`:
//! [`fleet`]).
//! Every renderer takes what `analyze` (or the crate that owns the data: `rc`, `modules`,
//! `readahead`, `preload`, `record`) computed and writes to any `io::Write` (or returns the value);
//! none of them computes boot figures (that is `analyze`), decides what a lever does next
//! (that is `record`), or reads traces (that is `trace`), files or the clock.
#![deny(missing_docs)]

pub mod advice;
pub mod chart;
pub mod diff;
pub mod enable_status;
pub mod fleet;
pub mod history;
pub mod html;
pub mod initramfs_plan;
pub mod json;
pub mod judge;
pub mod kernel_svg;
pub mod kernel_text;
pub mod modules_plan;
pub mod modules_status;
pub mod otlp;
pub mod perfetto;
pub mod preload_status;
pub mod prometheus;
pub mod rc_graph;
pub mod readahead_pack;
pub mod readahead_relocate;
pub mod readahead_replay;
pub mod readahead_status;
pub mod services;
pub mod shutdown;
pub mod svg;
pub mod text;
pub mod utc;
