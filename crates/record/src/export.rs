//! At boot done, after the trace is written: hands it to `bootprint export --prometheus`
//! when node_exporter's textfile-collector directory exists, so a fleet's monitoring sees
//! every machine's boot. The CLI does the work (the boot binary does not link the report);
//! its exit status and what it printed go to the trace's `export.log`.

use std::io::{self, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest the export may take before it is killed (a report of a boot takes well under a
/// second).
const LIMIT: Duration = Duration::from_secs(60);

/// Runs `<cli> export --prometheus <prom_dir> <trace>` when `prom_dir` is a directory and
/// writes `<trace>/export.log`. `None` when there is nothing to export to.
pub fn prometheus(cli: &str, prom_dir: &Path, trace: &Path) -> Option<io::Result<String>> {
    if prom_dir.as_os_str().is_empty() || !prom_dir.is_dir() {
        return None;
    }
    let result = run(cli, prom_dir, trace);
    let log = match &result {
        Ok(text) => text.clone(),
        Err(e) => format!("bootprint-boot: cannot run {cli}: {e}\n"),
    };
    // As private as the rest of the trace (docs/recorder.md).
    let access = crate::store::Access::of_dir(trace).unwrap_or(crate::store::Access { gid: None });
    let _ = access.write(&trace.join("export.log"), log.as_bytes());
    Some(result)
}

fn run(cli: &str, prom_dir: &Path, trace: &Path) -> io::Result<String> {
    let mut child = Command::new(cli)
        .args(["export", "--prometheus"])
        .arg(prom_dir)
        .arg(trace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        match child.try_wait()? {
            Some(st) => break st.to_string(),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break format!("killed after {} s", LIMIT.as_secs());
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let mut out = format!(
        "$ {cli} export --prometheus {} {}\n{status}\n",
        prom_dir.display(),
        trace.display()
    );
    for pipe in [
        child.stdout.take().map(|p| Box::new(p) as Box<dyn Read>),
        child.stderr.take().map(|p| Box::new(p) as Box<dyn Read>),
    ]
    .into_iter()
    .flatten()
    {
        let mut p = pipe;
        let _ = p.read_to_string(&mut out);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn runs_the_cli_and_logs_what_it_said() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let (prom, trace) = (d.join("prom"), d.join("trace"));
        std::fs::create_dir_all(&trace).unwrap();
        // A stand-in for the CLI that records its arguments where the real one writes.
        let cli = d.join("cli.sh");
        std::fs::write(
            &cli,
            "#!/bin/sh\necho \"$@\" > \"$3/args\"\necho wrote\necho warned >&2\nexit 3\n",
        )
        .unwrap();
        std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
        let cli = cli.to_str().unwrap();
        assert!(
            prometheus(cli, &prom, &trace).is_none(),
            "no directory: nothing to do"
        );
        std::fs::create_dir_all(&prom).unwrap();
        let text = prometheus(cli, &prom, &trace).unwrap().unwrap();
        let args = std::fs::read_to_string(prom.join("args")).unwrap();
        assert_eq!(
            args.trim(),
            format!("export --prometheus {} {}", prom.display(), trace.display())
        );
        let log = std::fs::read_to_string(trace.join("export.log")).unwrap();
        assert_eq!(log, text);
        assert!(log.contains("exit status: 3"), "{log}");
        assert!(log.contains("wrote\n") && log.contains("warned\n"), "{log}");
        let missing = prometheus("/nonexistent/bootprint", &prom, &trace).unwrap();
        assert!(missing.is_err());
        assert!(std::fs::read_to_string(trace.join("export.log"))
            .unwrap()
            .contains("cannot run /nonexistent/bootprint"));
    }

    /// Defect 9: export.log, added to the trace after it is written, is as private as the
    /// rest of it.
    #[test]
    fn defect9_export_log_has_the_traces_access() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let (prom, trace) = (d.join("prom"), d.join("trace"));
        std::fs::create_dir_all(&trace).unwrap();
        std::fs::create_dir_all(&prom).unwrap();
        std::os::unix::fs::chown(&trace, None, Some(4)).unwrap();
        std::fs::set_permissions(&trace, std::fs::Permissions::from_mode(0o750)).unwrap();
        let _ = prometheus("/nonexistent/bootprint", &prom, &trace);
        let m = std::fs::metadata(trace.join("export.log")).unwrap();
        assert_eq!((m.mode() & 0o7777, m.gid()), (0o640, 4));
    }
}
