//! `bootprint list [--json] [DIR]`: the kept traces, newest first (`record::retain::scan`),
//! each summed up in one line (`analyze::summary`: from `events.log` when the recorder
//! finished it, else from the whole model), rendered by `render::history`.

use std::path::{Path, PathBuf};

use analyze::summary::Summary;
use render::history::Row;

use crate::output::{print, write_json};
use crate::Outcome;

/// The log directory: as given, else `log_dir` of the system's configuration (a problem in
/// that file is a warning; the boot path would use the default then too).
pub fn log_dir(given: Option<&Path>) -> PathBuf {
    if let Some(d) = given {
        return d.to_path_buf();
    }
    let (config, errors) = record::Config::load(Path::new(record::config::CONFIG_FILE), "");
    for e in errors {
        eprintln!("bootprint: warning: {e}");
    }
    config.log_dir
}

/// The running boot's id (its temporary directory is no crashed write).
pub fn this_boot() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// One trace's line, with the shutdown that ended the boot when it was recorded and the
/// reboot that led to it when the boot before's shutdown is beside it.
fn summary(dir: &Path) -> Result<Summary, String> {
    let (mut s, events) = boot_summary(dir)?;
    if let Some(events) = events {
        s = s.with_reboot(dir, &events);
    }
    let shutdown = dir
        .join(record::shutdown::DIR_NAME)
        .join(trace::events::FILE_NAME);
    Ok(match std::fs::read_to_string(shutdown) {
        Ok(text) => match trace::events::parse(&text) {
            Ok(events) => s.with_shutdown(&events),
            Err(_) => s,
        },
        Err(_) => s,
    })
}

/// One boot's line: `header` and `events.log` when they have a `boot_done`, else the model;
/// and the events, when there are (the reboot that led to the boot is joined from them).
pub(crate) fn boot_summary(dir: &Path) -> Result<(Summary, Option<Vec<trace::Event>>), String> {
    let header = trace::bootchart::parse_header(&read_if_there(dir, "header")?.unwrap_or_default());
    boot_summary_with(dir, &header)
}

/// A file of the trace `dir`: None when it is not there.
fn read_if_there(dir: &Path, name: &str) -> Result<Option<String>, String> {
    match std::fs::read_to_string(dir.join(name)) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{name}: {e}")),
    }
}

/// [`boot_summary`] of a trace whose `header` the caller has read already.
pub(crate) fn boot_summary_with(
    dir: &Path,
    header: &[(String, String)],
) -> Result<(Summary, Option<Vec<trace::Event>>), String> {
    let events = match read_if_there(dir, "events.log")? {
        Some(text) => Some(trace::events::parse(&text).map_err(|e| format!("events.log: {e}"))?),
        None => None,
    };
    if let Some(s) = events
        .as_deref()
        .and_then(|ev| Summary::from_events(header, ev))
    {
        return Ok((s, events));
    }
    let trace = trace::Trace::open(dir).map_err(|e| e.to_string())?;
    let model = analyze::analyze(&trace).map_err(|e| e.to_string())?;
    Ok((Summary::from_model(&trace.header, &model), events))
}

/// Runs the verb.
pub fn run(args: &crate::cli::List) -> Outcome {
    let dir = log_dir(args.dir.as_deref());
    let scan = match record::retain::scan(&dir, &this_boot()) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(format!("{}: {e}", dir.display())),
    };
    let rows: Vec<Row> = scan
        .traces
        .into_iter()
        .map(|kept| Row {
            summary: summary(&kept.path),
            kept,
        })
        .collect();
    print("the list", |out| {
        if args.json {
            write_json(out, &render::history::json(&dir, &rows))
        } else {
            render::history::text(out, &dir, &rows)
        }
    })
}
