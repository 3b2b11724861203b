//! `bootprint export --prometheus DIR TRACE [--config FILE]`: the boot's figures for
//! node_exporter's textfile collector, written atomically as DIR/bootprint.prom.

use crate::Outcome;

/// Runs the verb.
pub fn run(args: &crate::cli::Export) -> Outcome {
    let dir = &args.prometheus;
    let budgets = match &args.config {
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
    let trace = match trace::Trace::open(&args.trace) {
        Ok(t) => t,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let model = match analyze::analyze(&trace) {
        Ok(m) => m,
        Err(e) => return Outcome::Failed(format!("{}: {e}", trace.origin)),
    };
    let text = render::prometheus::text_with(&model, &budgets);
    match render::prometheus::write_atomic(dir, &text) {
        Ok(_) => Outcome::Ok,
        Err(e) => Outcome::Failed(format!(
            "{}: {e}",
            dir.join(render::prometheus::FILE_NAME).display()
        )),
    }
}
