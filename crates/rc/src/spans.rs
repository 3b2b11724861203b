//! The runner's span log (`/run/bootprint/rc.log`, copied into the trace as `rc.log`): its
//! writer. The format and its reader are the trace's ([`trace::rclog`]); the services view
//! built from it (spans, blame, the critical chain to the login) is `analyze::services`.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use trace::rclog;

/// Where the runner writes its spans during the boot.
pub const DEFAULT_PATH: &str = "/run/bootprint/rc.log";

/// Appends events to the span log. Write errors are remembered, never fatal: the boot
/// goes on without spans.
pub struct SpanLog {
    file: Option<std::fs::File>,
    /// The first write error, if any.
    pub error: Option<String>,
    /// Scripts this process logged as started, kept in memory (written or not): what a
    /// fallback must not run a second time.
    started: BTreeSet<String>,
    /// (script, outcome) of every `rc_end` this process logged: startpar's answer when
    /// the runner's own state is lost to a panic.
    ended: Vec<(String, String)>,
}

impl SpanLog {
    /// Opens (creating it and its directory, with the magic line when new) `path` for
    /// appending. Several runner processes (rcS, rc2, the late child) append to one file.
    pub fn open(path: &Path) -> SpanLog {
        let res = (|| -> std::io::Result<std::fs::File> {
            if let Some(d) = path.parent() {
                std::fs::create_dir_all(d)?;
            }
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            if f.metadata()?.len() == 0 {
                f.write_all(format!("{}\n", rclog::MAGIC).as_bytes())?;
            }
            Ok(f)
        })();
        match res {
            Ok(f) => SpanLog {
                file: Some(f),
                ..SpanLog::none()
            },
            Err(e) => SpanLog {
                error: Some(format!("{}: {e}", path.display())),
                ..SpanLog::none()
            },
        }
    }

    /// A log that writes nowhere.
    pub fn none() -> SpanLog {
        SpanLog {
            file: None,
            error: None,
            started: BTreeSet::new(),
            ended: Vec::new(),
        }
    }

    /// Whether events reach a file (opened, no write error so far).
    pub fn is_writing(&self) -> bool {
        self.file.is_some() && self.error.is_none()
    }

    /// The scripts this process logged an `rc_start` for.
    pub fn started(&self) -> &BTreeSet<String> {
        &self.started
    }

    /// (script, outcome) of each `rc_end` this process logged, in order.
    pub fn ended(&self) -> &[(String, String)] {
        &self.ended
    }

    /// Appends one event at `ns` (one write per line, so concurrent appenders interleave
    /// whole lines).
    pub fn event(&mut self, ns: u64, kind: &str, kv: &[(&str, String)]) {
        let get = |k: &str| kv.iter().find(|(key, _)| *key == k).map(|(_, v)| v.clone());
        match (kind, get("script")) {
            ("rc_start", Some(script)) => {
                self.started.insert(script);
            }
            ("rc_end", Some(script)) => {
                let outcome = get("outcome").unwrap_or_default();
                self.ended.push((script, outcome));
            }
            _ => {}
        }
        let Some(f) = self.file.as_mut() else { return };
        let mut line = rclog::line(ns, kind, kv);
        line.push('\n');
        if let Err(e) = f.write_all(line.as_bytes()) {
            if self.error.is_none() {
                self.error = Some(e.to_string());
            }
        }
    }
}
