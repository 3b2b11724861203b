//! `bootprint diff A B [--json] [--svg FILE]`: two recorded boots side by side.

use crate::output::{print, write_file, write_json};
use crate::Outcome;

type Opened = (
    String,
    analyze::BootModel,
    Option<analyze::services::ServicesView>,
    Option<analyze::cycle::Cycle>,
);

/// A trace's model, services view (the runner's, or systemd's units) and the reboot cycle
/// that led to it (when the boot before's shutdown is beside it).
fn open(path: &std::path::Path) -> Result<Opened, String> {
    let t = trace::Trace::open(path).map_err(|e| e.to_string())?;
    let m = analyze::analyze(&t).map_err(|e| format!("{}: {e}", t.origin))?;
    let (view, warnings) = analyze::services::view_of(&t);
    for w in warnings {
        eprintln!("bootprint: diff: {w}");
    }
    let cycle = t
        .events
        .as_deref()
        .and_then(|ev| analyze::cycle::Cycle::load(path, ev, &m));
    Ok((t.origin, m, view, cycle))
}

/// Runs the verb.
pub fn run(args: &crate::cli::Diff) -> Outcome {
    let (a, b) = match (open(&args.a), open(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return Outcome::Failed(e),
    };
    let diff = analyze::diff::diff_with(&a.1, &b.1, a.2.as_ref(), b.2.as_ref())
        .with_cycles(a.3.as_ref(), b.3.as_ref());
    if let Some(path) = &args.svg {
        let (name_a, name_b) = (format!("A: {}", a.0), format!("B: {}", b.0));
        let written = write_file(path, |w| {
            render::diff::write_svg(w, (&name_a, &a.1), (&name_b, &b.1))
        });
        if let Err(e) = written {
            return Outcome::Failed(e);
        }
    }
    print("the diff", |out| {
        if args.json {
            write_json(out, &render::diff::json(&diff, &a.0, &b.0))
        } else {
            render::diff::write_text(out, &a.0, &b.0, &diff)
        }
    })
}
