//! At boot done, after the trace is written: hands it to `bootprint export`, with
//! `--prometheus DIR` when node_exporter's textfile-collector directory exists and `--otlp
//! URL` when an OpenTelemetry endpoint is configured, so a fleet's monitoring sees every
//! machine's boot. The CLI does the work (the boot binary does not link the report); its exit
//! status and what it printed go to the trace's `export.log`.

use std::io::{self, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest the export may take before it is killed (a report of a boot takes well under a
/// second).
const LIMIT: Duration = Duration::from_secs(60);

/// Where a boot is exported to.
pub struct Targets<'a> {
    /// node_exporter's textfile directory (used when it is a directory).
    pub prometheus_dir: &'a Path,
    /// An OTLP/HTTP endpoint (`""`: none).
    pub otlp_endpoint: &'a str,
    /// Its request headers (used when the file exists).
    pub otlp_headers_file: &'a Path,
}

impl Targets<'_> {
    /// The CLI's arguments before the trace; empty when there is nothing to export to.
    fn args(&self) -> Vec<std::ffi::OsString> {
        let mut out = Vec::new();
        let dir = self.prometheus_dir;
        if !dir.as_os_str().is_empty() && dir.is_dir() {
            out.push("--prometheus".into());
            out.push(dir.into());
        }
        if !self.otlp_endpoint.is_empty() {
            out.push("--otlp".into());
            out.push(self.otlp_endpoint.into());
            if self.otlp_headers_file.is_file() {
                out.push("--otlp-headers-file".into());
                out.push(self.otlp_headers_file.into());
            }
        }
        out
    }
}

/// Runs `<cli> export [--prometheus DIR] [--otlp URL ...] <trace>` when there is somewhere to
/// export to and writes `<trace>/export.log`. `None` when there is nothing to export to.
pub fn export(cli: &str, targets: &Targets, trace: &Path) -> Option<io::Result<String>> {
    let args = targets.args();
    if args.is_empty() {
        return None;
    }
    let result = run(cli, &args, trace);
    let log = match &result {
        Ok(text) => text.clone(),
        Err(e) => format!("bootprint-boot: cannot run {cli}: {e}\n"),
    };
    // As private as the rest of the trace (docs/recorder.md).
    let access = crate::store::Access::of_dir(trace).unwrap_or(crate::store::Access { gid: None });
    let _ = access.write(&trace.join("export.log"), log.as_bytes());
    Some(result)
}

fn run(cli: &str, args: &[std::ffi::OsString], trace: &Path) -> io::Result<String> {
    let mut child = Command::new(cli)
        .arg("export")
        .args(args)
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
    let shown: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut out = format!(
        "$ {cli} export {} {}\n{status}\n",
        shown.join(" "),
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
        let headers = d.join("otlp-headers");
        let mut to = Targets {
            prometheus_dir: &prom,
            otlp_endpoint: "",
            otlp_headers_file: &headers,
        };
        assert!(
            export(cli, &to, &trace).is_none(),
            "no directory, no endpoint: nothing to do"
        );
        std::fs::create_dir_all(&prom).unwrap();
        let text = export(cli, &to, &trace).unwrap().unwrap();
        let args = std::fs::read_to_string(prom.join("args")).unwrap();
        assert_eq!(
            args.trim(),
            format!("export --prometheus {} {}", prom.display(), trace.display())
        );
        let log = std::fs::read_to_string(trace.join("export.log")).unwrap();
        assert_eq!(log, text);
        assert!(log.contains("exit status: 3"), "{log}");
        assert!(log.contains("wrote\n") && log.contains("warned\n"), "{log}");
        // An endpoint too, and its headers file once there is one.
        std::fs::write(&headers, "").unwrap();
        to.otlp_endpoint = "http://collector:4318";
        export(cli, &to, &trace).unwrap().unwrap();
        assert_eq!(
            std::fs::read_to_string(prom.join("args")).unwrap().trim(),
            format!(
                "export --prometheus {} --otlp http://collector:4318 --otlp-headers-file {} {}",
                prom.display(),
                headers.display(),
                trace.display()
            )
        );
        to.otlp_endpoint = "";
        let missing = export("/nonexistent/bootprint", &to, &trace).unwrap();
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
        let to = Targets {
            prometheus_dir: &prom,
            otlp_endpoint: "",
            otlp_headers_file: Path::new(""),
        };
        let _ = export("/nonexistent/bootprint", &to, &trace);
        let m = std::fs::metadata(trace.join("export.log")).unwrap();
        assert_eq!((m.mode() & 0o7777, m.gid()), (0o640, 4));
    }
}
