//! `bootprint fleet DIR...`: many machines' boots gathered into directories, each boot
//! reduced to an `analyze::fleet::BootRecord` as it is read (trace directories and records
//! files, `*.jsonl`), judged by `analyze::fleet`, rendered by `render::fleet`; and
//! `bootprint fleet --export [DIR]`, this machine's kept boots as records (docs/fleet.md).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use analyze::fleet::{BootRecord, Fleet};
use render::fleet::Skipped;
use serde_json::Value;

use crate::output::{print, write_json};
use crate::Outcome;

/// What a records file's line must be, said when one is not.
const RECORD: &str = "one JSON object a line with a string boot_id (bootprint fleet --export)";

/// The record of the trace directory `dir` (its `seq` when it has one): the summary
/// `bootprint list` gives, the header's DMI, and the services' start times from `rc.log` or
/// `systemd-units.log` (the process tree is not read: too costly for a fleet).
fn trace_record(dir: &Path, seq: Option<u64>) -> Result<BootRecord, String> {
    let header = match std::fs::read_to_string(dir.join("header")) {
        Ok(t) => trace::bootchart::parse_header(&t),
        Err(e) => return Err(format!("header: {e}")),
    };
    let (summary, _) = crate::list::boot_summary_with(dir, &header)?;
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let services = if let Some(text) = read(trace::rclog::FILE_NAME) {
        analyze::services::ServicesView::from_text(&text, trace::rclog::FILE_NAME)
            .0
            .start_times()
    } else if let Some(text) = read(trace::units::FILE_NAME) {
        analyze::services::ServicesView::from_units_text(&text, trace::units::FILE_NAME)
            .0
            .start_times()
    } else {
        Vec::new()
    };
    let boot_id = header
        .iter()
        .find(|(k, _)| k == "bootprint.boot_id")
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| dir.file_name().unwrap_or_default().to_string_lossy().into());
    Ok(BootRecord::new(boot_id, seq, &header, &summary, services))
}

/// A records file's line back into a record.
fn parse_record(line: &str) -> Result<BootRecord, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("{e}"))?;
    let str_of = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
    let num = |k: &str| v.get(k).and_then(Value::as_f64);
    let boot_id = str_of("boot_id")
        .filter(|s| !s.is_empty())
        .ok_or("no boot_id")?;
    let services = match v.get("services") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, t)| Some((k.clone(), t.as_f64()?)))
            .collect::<Option<Vec<_>>>()
            .ok_or("services: a value is not a number")?,
        Some(_) => return Err("services is not an object".into()),
    };
    Ok(BootRecord {
        boot_id,
        seq: v.get("seq").and_then(Value::as_u64),
        kernel_release: str_of("kernel_release"),
        vendor: str_of("vendor"),
        product: str_of("product"),
        text_login_s: num("text_login_s"),
        boot_done_s: num("boot_done_s"),
        services,
    })
}

/// What a walk found to read, in the walk's order.
enum Input {
    /// A records file and its machine.
    Records(PathBuf, String),
    /// A trace directory and its machine.
    Trace(PathBuf, String),
}

/// What a walk gathered.
struct Gather {
    fleet: Fleet,
    skipped: Vec<Skipped>,
    inputs: Vec<Input>,
}

impl Gather {
    fn skip(&mut self, path: impl std::fmt::Display, problem: impl Into<String>) {
        let s = Skipped {
            path: path.to_string(),
            problem: problem.into(),
        };
        eprintln!("bootprint: skipped {}: {}", s.path, s.problem);
        self.skipped.push(s);
    }

    /// A records file: each good line a boot, each bad one skipped.
    fn records(&mut self, path: &Path, machine: &str) {
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) => return self.skip(path.display(), format!("{e}")),
        };
        for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = match line {
                Ok(l) => l,
                Err(e) => {
                    return self.skip(
                        format!("{}:{}", path.display(), i + 1),
                        format!("{e}; expected {RECORD}"),
                    )
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            match parse_record(&line) {
                Ok(r) => {
                    self.fleet.add(machine, r);
                }
                Err(e) => self.skip(
                    format!("{}:{}", path.display(), i + 1),
                    format!("{e}; expected {RECORD}"),
                ),
            }
        }
    }

    /// A trace directory's boot, as [`read_traces`] read it.
    fn trace(&mut self, dir: &Path, machine: &str, read: Result<BootRecord, String>) {
        match read {
            Ok(r) => {
                self.fleet.add(machine, r);
            }
            Err(e) => self.skip(
                dir.display(),
                format!("{e}; expected a bootprint trace directory (docs/trace-format.md)"),
            ),
        }
    }

    /// Reads every input the walks found: the trace directories on every core (parsing
    /// their event and unit logs is most of the time), then all in the walk's order, so the
    /// same tree gives the same output whatever thread read what.
    fn read_inputs(&mut self) {
        let inputs = std::mem::take(&mut self.inputs);
        let traces: Vec<&Path> = inputs
            .iter()
            .filter_map(|i| match i {
                Input::Trace(dir, _) => Some(dir.as_path()),
                Input::Records(..) => None,
            })
            .collect();
        let mut read = read_traces(&traces).into_iter();
        for input in &inputs {
            match input {
                Input::Records(path, machine) => self.records(path, machine),
                Input::Trace(dir, machine) => {
                    let r = read.next().unwrap_or_else(|| Err("not read".into()));
                    self.trace(dir, machine, r);
                }
            }
        }
    }

    /// Walks `dir` (never through a symlink: `latest` would count a boot twice, a link could
    /// loop), `machine` being the name its boots go under once known.
    fn walk(&mut self, dir: &Path, machine: Option<&str>, top: &str) {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => return self.skip(dir.display(), format!("{e}; expected a directory")),
        };
        let mut entries: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
        // A fixed order, so the same tree gives the same output and the same skips.
        entries.sort();
        for path in entries {
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if meta.is_dir() {
                if path.join("header").is_file() {
                    // A trace straight in DIR is one of DIR's machine's (a log directory).
                    let m = machine.unwrap_or(top).to_string();
                    self.inputs.push(Input::Trace(path, m));
                } else {
                    self.walk(&path, Some(machine.unwrap_or(&name)), top);
                }
            } else if meta.is_file() && name.ends_with(".jsonl") {
                let m = machine
                    .unwrap_or(name.trim_end_matches(".jsonl"))
                    .to_string();
                self.inputs.push(Input::Records(path, m));
            }
        }
    }
}

/// Each trace directory's record (with its `seq`), in the order given, read by as many
/// threads as there are cores.
fn read_traces(dirs: &[&Path]) -> Vec<Result<BootRecord, String>> {
    let read = |dir: &Path| {
        let seq = std::fs::read_to_string(dir.join(record::retain::SEQ_FILE))
            .ok()
            .and_then(|s| s.trim().parse().ok());
        trace_record(dir, seq)
    };
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(dirs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<Option<Result<BootRecord, String>>> = (0..dirs.len()).map(|_| None).collect();
    let done: Vec<Vec<(usize, Result<BootRecord, String>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(dir) = dirs.get(i) else { break };
                        mine.push((i, read(dir)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    for (i, r) in done.into_iter().flatten() {
        out[i] = Some(r);
    }
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err("its reader stopped".into())))
        .collect()
}

/// The name of a given DIR, for the boots straight in it.
fn dir_name(dir: &Path) -> String {
    std::fs::canonicalize(dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| dir.display().to_string())
}

/// `--export`: each kept trace of the log directories as one line.
fn export(args: &crate::cli::Fleet) -> Outcome {
    let dirs = if args.dirs.is_empty() {
        vec![crate::list::log_dir(None)]
    } else {
        args.dirs.clone()
    };
    print("the records", |out| {
        for dir in &dirs {
            let scan = match record::retain::scan(dir, &crate::list::this_boot()) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("bootprint: skipped {}: {e}", dir.display());
                    continue;
                }
            };
            for kept in scan.traces {
                match trace_record(&kept.path, kept.seq) {
                    Ok(r) => writeln!(out, "{}", render::fleet::record_line(&r))?,
                    Err(e) => eprintln!("bootprint: skipped {}: {e}", kept.path.display()),
                }
            }
        }
        Ok(())
    })
}

/// Runs the verb.
pub fn run(args: &crate::cli::Fleet) -> Outcome {
    if args.export {
        return export(args);
    }
    let mut g = Gather {
        fleet: Fleet::new(),
        skipped: Vec::new(),
        inputs: Vec::new(),
    };
    for dir in &args.dirs {
        if !dir.is_dir() {
            g.skip(dir.display(), "not a directory");
            continue;
        }
        g.walk(dir, None, &dir_name(dir));
    }
    g.read_inputs();
    if g.fleet.boots() == 0 {
        return Outcome::Failed(format!(
            "no boots found in {} ({} inputs skipped): expected trace directories or *.jsonl \
             records (docs/fleet.md)",
            args.dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(" "),
            g.skipped.len()
        ));
    }
    let view = g.fleet.view(args.over);
    print("the fleet", |out| {
        if args.json {
            write_json(out, &render::fleet::json(&view, &g.skipped))
        } else {
            render::fleet::text(out, &view, &g.skipped)
        }
    })
}
