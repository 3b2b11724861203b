//! What the report verbs share: opening a trace as one `analyze::Report`, writing a file
//! through a buffer, printing to stdout, each failure as the message the verb exits with.

use std::io::Write;
use std::path::Path;

use crate::Outcome;

/// The phase budgets: from `config` when given (any problem is an error), else from the
/// system's config file (a missing file means the defaults; a broken one is warned about).
/// Returns them with where they came from.
pub fn budgets(config: Option<&Path>) -> Result<(analyze::budget::Budgets, String), String> {
    match config {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let source = path.display().to_string();
            analyze::budget::Budgets::from_toml(&text, &source)
                .map(|b| (b, source))
                .map_err(|e| e.to_string())
        }
        None => {
            let path = Path::new(analyze::budget::CONFIG_FILE);
            let (b, source, warning) = analyze::budget::Budgets::load_system(path);
            if let Some(w) = warning {
                eprintln!("bootprint: warning: {w}");
            }
            Ok((b, source))
        }
    }
}

/// Opens a trace and analyses it once, judged against `budgets`; problems in its optional
/// files are printed as warnings of `verb`.
pub fn report(
    trace: &Path,
    budgets: &(analyze::budget::Budgets, String),
    verb: &str,
) -> Result<analyze::Report, String> {
    let trace = trace::Trace::open(trace).map_err(|e| e.to_string())?;
    let report = analyze::Report::build(&trace, &budgets.0, &budgets.1)
        .map_err(|e| format!("{}: {e}", trace.origin))?;
    for w in &report.warnings {
        eprintln!("bootprint: {verb}: {w}");
    }
    Ok(report)
}

/// Writes a file through a buffer; a failure names the file.
pub fn write_file(
    path: &Path,
    f: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<(), String> {
    let written = std::fs::File::create(path).and_then(|file| {
        let mut w = std::io::BufWriter::new(file);
        f(&mut w)?;
        w.flush()
    });
    written.map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes `value` pretty-printed and a newline.
pub fn write_json(out: &mut impl Write, value: &serde_json::Value) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)
}

/// Prints through a buffered stdout; `what` names the output in a failure. A closed pipe
/// (`| head`) is not a failure worth a message.
pub fn print(
    what: &str,
    f: impl FnOnce(&mut std::io::BufWriter<std::io::StdoutLock>) -> std::io::Result<()>,
) -> Outcome {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match f(&mut out).and_then(|_| out.flush()) {
        Ok(()) => Outcome::Ok,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Outcome::Ok,
        Err(e) => Outcome::Failed(format!("writing {what}: {e}")),
    }
}

impl From<Result<(), String>> for Outcome {
    fn from(r: Result<(), String>) -> Outcome {
        match r {
            Ok(()) => Outcome::Ok,
            Err(e) => Outcome::Failed(e),
        }
    }
}
