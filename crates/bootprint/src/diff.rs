//! `bootprint diff A B [--json] [--svg FILE]`: two recorded boots side by side.

use std::io::Write;
use std::path::PathBuf;

use crate::Outcome;

const HELP: &str = "\
usage: bootprint diff A B [--json] [--svg FILE]

Compares two recorded boots: milestones and phase lengths, the services whose run time changed
most, the programs that changed most (runs, CPU, lifetime summed by name) and the programs that
appeared in B or disappeared from it.

A, B        trace directories or bootchart2 bootchart.tgz files (A is the reference)
--json      print one JSON object {a, b, milestones, phases, services, changed, appeared,
            disappeared} (keys: docs/report.md)
--svg FILE  also write an SVG with both boots on one time axis
-h, --help  this help
";

fn open(path: &std::path::Path) -> Result<(String, analyze::BootModel), String> {
    let t = trace::Trace::open(path).map_err(|e| e.to_string())?;
    let m = analyze::analyze(&t).map_err(|e| format!("{}: {e}", t.origin))?;
    Ok((t.origin, m))
}

/// Runs the verb.
pub fn run(args: &[std::ffi::OsString]) -> Outcome {
    let mut inputs = Vec::new();
    let mut json = false;
    let mut svg = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match crate::args::split_flag(a) {
            (f, None) if f == "-h" || f == "--help" => {
                print!("{HELP}");
                return Outcome::Ok;
            }
            (f, None) if f == "--json" => json = true,
            (f, None) if f == "--svg" => match it.next() {
                Some(f) => svg = Some(PathBuf::from(f)),
                None => return Outcome::Usage("diff: --svg needs a FILE".into()),
            },
            (f, Some(v)) if f == "--svg" => svg = Some(PathBuf::from(v)),
            (s, _) if s.starts_with('-') => {
                return Outcome::Usage(format!("diff: unknown option {:?}", crate::args::lossy(a)))
            }
            _ => inputs.push(PathBuf::from(a)),
        }
    }
    if inputs.len() != 2 {
        return Outcome::Usage(format!(
            "diff: two traces A and B are required, found {}",
            inputs.len()
        ));
    }
    let (a, b) = match (open(&inputs[0]), open(&inputs[1])) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return Outcome::Failed(e),
    };
    let diff = analyze::diff::diff(&a.1, &b.1);
    if let Some(path) = &svg {
        let written = std::fs::File::create(path).and_then(|f| {
            let mut w = std::io::BufWriter::new(f);
            render::diff::write_svg(
                &mut w,
                (&format!("A: {}", a.0), &a.1),
                (&format!("B: {}", b.0), &b.1),
            )?;
            w.flush()
        });
        if let Err(e) = written {
            return Outcome::Failed(format!("{}: {e}", path.display()));
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = if json {
        let mut v = serde_json::to_value(&diff).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("a".into(), a.0.clone().into());
            o.insert("b".into(), b.0.clone().into());
        }
        serde_json::to_writer_pretty(&mut out, &v)
            .map_err(std::io::Error::from)
            .and_then(|_| writeln!(out))
    } else {
        render::diff::write_text(&mut out, &a.0, &b.0, &diff)
    };
    match written.and_then(|_| out.flush()) {
        Ok(()) => Outcome::Ok,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Outcome::Ok,
        Err(e) => Outcome::Failed(format!("writing the diff: {e}")),
    }
}
