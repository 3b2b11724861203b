//! `bootprint diff A B [--json] [--svg FILE]`: two recorded boots side by side.

use std::io::Write;

use crate::Outcome;

fn open(path: &std::path::Path) -> Result<(String, analyze::BootModel), String> {
    let t = trace::Trace::open(path).map_err(|e| e.to_string())?;
    let m = analyze::analyze(&t).map_err(|e| format!("{}: {e}", t.origin))?;
    Ok((t.origin, m))
}

/// Runs the verb.
pub fn run(args: &crate::cli::Diff) -> Outcome {
    let (a, b) = match (open(&args.a), open(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return Outcome::Failed(e),
    };
    let diff = analyze::diff::diff(&a.1, &b.1);
    if let Some(path) = &args.svg {
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
    let written = if args.json {
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
