//! `bootprint services TRACE [--json]` (and its older name `rc services`): the services of a
//! recorded boot, from the runner's span log (`rc.log`) or, on a systemd boot, systemd's unit
//! timing (`systemd-units.log`). One verb for both because a user asks "which services made
//! my boot slow" whatever started them; `rc` is the LSB runner's verb and stays as an alias.

use std::path::{Path, PathBuf};

use analyze::services::ServicesView;

use crate::cli;
use crate::Outcome;

/// The file to read for `trace`: itself when it is a file, else the trace's `rc.log`, else
/// its `systemd-units.log`.
fn file_of(trace: &Path) -> Result<PathBuf, String> {
    if !trace.is_dir() {
        return Ok(trace.to_path_buf());
    }
    [trace::rclog::FILE_NAME, trace::units::FILE_NAME]
        .iter()
        .map(|n| trace.join(n))
        .find(|p| p.exists())
        .ok_or_else(|| {
            format!(
                "services: {} holds neither rc.log nor systemd-units.log: the boot used neither \
                 bootprint's runner (bootprint.rc=1) nor systemd, or was recorded by an older \
                 bootprint",
                trace.display()
            )
        })
}

/// `services --shutdown`: the shutdown recorded in TRACE/shutdown (or TRACE itself, a
/// shutdown directory).
fn shutdown(args: &cli::RcServices) -> Outcome {
    let dir = if args.trace.join(trace::events::FILE_NAME).is_file()
        && !args.trace.join(record::shutdown::DIR_NAME).is_dir()
    {
        args.trace.clone()
    } else {
        args.trace.join(record::shutdown::DIR_NAME)
    };
    if !dir.is_dir() {
        return Outcome::Failed(format!(
            "services --shutdown: {} has no shutdown/: the shutdown after that boot was not \
             recorded (docs/recorder.md, \"Shutdown\"), or the machine has not shut down since",
            args.trace.display()
        ));
    }
    let (view, problems) = match analyze::shutdown::ShutdownView::load(&dir) {
        Ok(v) => v,
        Err(e) => return Outcome::Failed(format!("services --shutdown: {e}")),
    };
    for p in &problems {
        eprintln!("bootprint: services: {p}");
    }
    if args.json {
        let v = render::shutdown::json(&view);
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        print!("{}", render::shutdown::text(&view));
    }
    Outcome::Ok
}

/// Runs `bootprint services`.
pub fn run(args: &cli::RcServices) -> Outcome {
    if args.shutdown {
        return shutdown(args);
    }
    let file = match file_of(&args.trace) {
        Ok(f) => f,
        Err(e) => return Outcome::Failed(e),
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => return Outcome::Failed(format!("services: {}: {e}", file.display())),
    };
    let name = file.display().to_string();
    let units = file
        .file_name()
        .is_some_and(|n| n == trace::units::FILE_NAME)
        || text.starts_with(trace::units::MAGIC);
    let (view, problems) = if units {
        ServicesView::from_units_text(&text, &name)
    } else {
        ServicesView::from_text(&text, &name)
    };
    for p in &problems {
        eprintln!("bootprint: services: {p}");
    }
    if !args.json {
        print!("{}", render::services::text(&view));
        return Outcome::Ok;
    }
    let v = render::services::json(&view);
    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    Outcome::Ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_without_either_log_is_named_and_units_are_found() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let e = file_of(dir).unwrap_err();
        assert!(e.contains("neither rc.log nor systemd-units.log"), "{e}");
        std::fs::write(
            dir.join(trace::units::FILE_NAME),
            format!(
                "{}\nunit id=a.service activating_us=5 active_us=9\n",
                trace::units::MAGIC
            ),
        )
        .unwrap();
        assert_eq!(file_of(dir).unwrap(), dir.join("systemd-units.log"));
        let args = cli::RcServices {
            trace: dir.to_path_buf(),
            json: true,
            shutdown: false,
        };
        assert!(matches!(run(&args), Outcome::Ok));
    }
}
