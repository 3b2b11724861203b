//! bootprint preload: the desktop session's third boot time. It learns, per login, which
//! files and which pieces of them the session's start reads; keeps a model across logins in
//! which what the user stopped using fades ([`model`]); and prefetches the model at idle I/O
//! priority while the greeter waits and as the session starts, within a byte budget that
//! respects free memory ([`run`]). Like readahead it proves itself: an A/B history of
//! desktop times with and without prefetch, and it switches itself off where prefetch does
//! not make logins faster ([`PRELOAD`], readahead's [`readahead::state`]).
//!
//! It owns the model file and its rules (decay, threshold, budget), the two stages of a
//! login (greeter, session) and its state directory (`/var/lib/bootprint/preload/`). It
//! does not own fanotify learning, replay or the A/B rule: those are readahead's, called
//! here. It does not measure the desktop time: the caller passes it ([`run::desktop_time`]).
//! `bootprint preload ...` (the CLI) parses arguments and calls this crate; docs/preload.md.
#![deny(missing_docs)]

pub mod config;
pub mod model;
pub mod run;

use readahead::state::Lever;

/// Preload's history: a login prefetched (`prefetch`), learned only (`learn`, no model yet),
/// or went without to compare (`control`); judged on the time from the login to the desktop.
pub const PRELOAD: Lever = Lever {
    name: "preload",
    on: "prefetch",
    running: "prefetch",
    doc: "docs/preload.md",
    record: "login",
    what: "desktop",
};

/// The model as JSON (`bootprint preload show --json`).
pub fn model_json(m: &model::Model) -> serde_json::Value {
    serde_json::json!({
        "version": model::VERSION,
        "logins": m.logins,
        "updated_unix_s": m.updated_unix_s,
        "bytes": m.bytes(),
        "files": m.files.iter().map(|f| serde_json::json!({
            "path": f.entry.path.to_string_lossy(),
            "weight": f.weight,
            "dev": f.entry.dev,
            "ino": f.entry.ino,
            "size": f.entry.size,
            "mtime_s": f.entry.mtime_s,
            "mtime_ns": f.entry.mtime_ns,
            "bytes": f.entry.bytes(),
            "ranges": f.entry.ranges.iter().map(|r| [r.offset, r.len]).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
