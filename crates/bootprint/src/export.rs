//! `bootprint export --prometheus DIR TRACE`: the boot's figures for node_exporter's textfile
//! collector, written atomically as DIR/bootprint.prom.

use std::path::PathBuf;

use crate::Outcome;

const HELP: &str = "\
usage: bootprint export --prometheus DIR TRACE [--config FILE]

Writes the boot's milestone and phase times (with their budgets), the idle and iowait shares
and, when the boot replayed a readahead pack, its hit rate, in Prometheus' text format to
DIR/bootprint.prom (through a temporary file and a rename), for node_exporter's textfile
collector (--collector.textfile.directory=DIR). Metric names: docs/report.md.

--prometheus DIR  the collector's directory
TRACE             a bootprint trace directory or a bootchart2 bootchart.tgz
--config FILE     read the phase budgets from FILE (default /etc/bootprint/bootprint.toml)
-h, --help        this help
";

/// Runs the verb.
pub fn run(args: &[std::ffi::OsString]) -> Outcome {
    let mut dir = None;
    let mut input = None;
    let mut config = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let s = crate::args::lossy(a);
        match s.as_ref() {
            "-h" | "--help" => {
                print!("{HELP}");
                return Outcome::Ok;
            }
            "--prometheus" | "--config" => {
                let Some(v) = it.next() else {
                    return Outcome::Usage(format!("export: {s} needs a value"));
                };
                if s == "--prometheus" {
                    dir = Some(PathBuf::from(v));
                } else {
                    config = Some(PathBuf::from(v));
                }
            }
            s if s.starts_with('-') => {
                return Outcome::Usage(format!("export: unknown option {s:?}"))
            }
            s => {
                if input.replace(PathBuf::from(a)).is_some() {
                    return Outcome::Usage(format!(
                        "export: only one TRACE is allowed, found another: {s:?}"
                    ));
                }
            }
        }
    }
    let Some(dir) = dir else {
        return Outcome::Usage("export: --prometheus DIR is required".into());
    };
    let Some(input) = input else {
        return Outcome::Usage("export: a TRACE is required".into());
    };
    let budgets = match &config {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => {
                match analyze::budget::Budgets::from_toml(&text, &path.display().to_string()) {
                    Ok(b) => b,
                    Err(e) => return Outcome::Failed(e.to_string()),
                }
            }
            Err(e) => return Outcome::Failed(format!("{}: {e}", path.display())),
        },
        None => {
            let path = std::path::Path::new(analyze::budget::CONFIG_FILE);
            let (b, _, warning) = analyze::budget::Budgets::load_system(path);
            if let Some(w) = warning {
                eprintln!("bootprint: warning: {w}");
            }
            b
        }
    };
    if !dir.is_dir() {
        return Outcome::Failed(format!("{}: not a directory", dir.display()));
    }
    let trace = match trace::Trace::open(&input) {
        Ok(t) => t,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let model = match analyze::analyze(&trace) {
        Ok(m) => m,
        Err(e) => return Outcome::Failed(format!("{}: {e}", trace.origin)),
    };
    let text = render::prometheus::text_with(&model, &budgets);
    match render::prometheus::write_atomic(&dir, &text) {
        Ok(_) => Outcome::Ok,
        Err(e) => Outcome::Failed(format!(
            "{}: {e}",
            dir.join(render::prometheus::FILE_NAME).display()
        )),
    }
}
