//! `bootprint-boot late-start`, run as `bootprint-late.service`: waits until the machine is
//! idle (the same rule and limits as the LSB runner's late services, from
//! `[rc]` of `/etc/bootprint/bootprint.toml`), creates the go flag and starts `bootprint-late.target`. Its
//! span log (`/run/bootprint/late.log`) tells the recorder that late units are still
//! starting, so boot done waits for them as it waits for the runner's.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rc::run::{was_idle, Config, ProcStat};

/// Where the late log and the flag live, and what to run: the paths are parameters so a
/// test can run the waiter on a scratch tree.
pub struct Waiter<'a> {
    /// The span log to append to.
    pub log: &'a Path,
    /// The flag the late units' condition waits for.
    pub go_flag: &'a Path,
    /// The /proc to read the load from.
    pub proc_dir: &'a Path,
    /// Idle thresholds and the maximum wait.
    pub cfg: &'a Config,
    /// The command that starts the late target (`systemctl start bootprint-late.target`).
    pub start: Command,
}

/// Appends one event line (`NS KIND key=value ...`) to the log; best effort.
pub fn log_event(log: &Path, kind: &str, kv: &[(&str, String)]) {
    let mut line = format!("{} {kind}", sys::boottime_ns());
    for (k, v) in kv {
        line.push_str(&format!(" {k}={v}"));
    }
    line.push('\n');
    if let Some(dir) = log.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(log) {
        let _ = f.write_all(line.as_bytes());
    }
}

impl Waiter<'_> {
    /// Waits, raises the flag, starts the target. Returns the process's exit code: 0 when
    /// the target was started, 1 when the flag could not be created or systemctl failed.
    pub fn run(mut self) -> i32 {
        log_event(self.log, "late_begin", &[]);
        let t0 = Instant::now();
        let mut prev = ProcStat::read(self.proc_dir);
        let reason = loop {
            let left = self.cfg.late_max_wait.saturating_sub(t0.elapsed());
            if left.is_zero() {
                break "max_wait";
            }
            std::thread::sleep(
                self.cfg
                    .idle_window
                    .min(left)
                    .max(Duration::from_millis(10)),
            );
            let cur = ProcStat::read(self.proc_dir);
            if was_idle(&prev, &cur, self.cfg) {
                break "idle";
            }
            prev = cur;
        };
        log_event(
            self.log,
            "late_start",
            &[
                ("reason", reason.into()),
                ("waited_ms", t0.elapsed().as_millis().to_string()),
            ],
        );
        if let Some(dir) = self.go_flag.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // What went wrong, as (result, key, detail); None: the target was started.
        let failure = match std::fs::write(self.go_flag, b"") {
            Err(e) => Some(("no-flag", "error", escape(&e.to_string()))),
            Ok(()) => match self.start.status() {
                Ok(s) if s.success() => None,
                Ok(s) => Some(("failed", "status", s.to_string().replace(' ', "_"))),
                Err(e) => Some(("failed", "error", escape(&e.to_string()))),
            },
        };
        match failure {
            None => {
                log_event(self.log, "late_done", &[("result", "ok".into())]);
                0
            }
            Some((result, key, detail)) => {
                log_event(
                    self.log,
                    "late_done",
                    &[("result", result.into()), (key, detail)],
                );
                1
            }
        }
    }
}

fn escape(s: &str) -> String {
    s.replace(|c: char| c.is_whitespace() || c == '=', "_")
}

/// Whether the log shows a waiter that began and has not finished: boot is not done yet.
pub fn pending(log: &str) -> bool {
    let mut open = false;
    for l in log.lines() {
        match l.split_whitespace().nth(1) {
            Some("late_begin") => open = true,
            Some("late_done") => open = false,
            _ => {}
        }
    }
    open
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_from_begin_until_done() {
        assert!(!pending(""));
        assert!(pending("1 late_begin\n"));
        assert!(pending(
            "1 late_begin\n2 late_start reason=idle waited_ms=5\n"
        ));
        assert!(!pending(
            "1 late_begin\n2 late_start reason=idle\n3 late_done result=ok\n"
        ));
        // A restarted waiter (Restart=on-failure) begins again.
        assert!(pending(
            "1 late_begin\n3 late_done result=failed\n4 late_begin\n"
        ));
    }

    /// The real thing on a scratch tree: an idle /proc/stat that never changes is idle at
    /// once, the flag appears, the start command runs, and the log is complete.
    #[test]
    fn waits_raises_the_flag_and_starts() {
        let dir_tmp = tempfile::tempdir().unwrap();
        let dir = dir_tmp.path();
        let proc_dir = dir.join("proc");
        std::fs::create_dir_all(&proc_dir).unwrap();
        std::fs::write(
            proc_dir.join("stat"),
            "cpu  100 0 100 10000 0 0 0 0 0 0\nprocs_running 1\nprocs_blocked 0\n",
        )
        .unwrap();
        let log = dir.join("run/late.log");
        let flag = dir.join("run/late-go");
        let marker = dir.join("started");
        let cfg = Config {
            idle_window: Duration::from_millis(20),
            late_max_wait: Duration::from_millis(200),
            ..Config::default()
        };
        let mut start = Command::new("sh");
        start.arg("-c").arg(format!(
            "test -e {} && touch {}",
            flag.display(),
            marker.display()
        ));
        let code = Waiter {
            log: &log,
            go_flag: &flag,
            proc_dir: &proc_dir,
            cfg: &cfg,
            start,
        }
        .run();
        // A /proc/stat that does not move has no elapsed time, so it never counts as idle:
        // the wait ends at its maximum.
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(code, 0, "{text}");
        assert!(
            marker.exists(),
            "the start command ran after the flag was raised"
        );
        assert!(text.contains(" late_begin"), "{text}");
        assert!(text.contains(" late_start reason=max_wait"), "{text}");
        assert!(text.contains(" late_done result=ok"), "{text}");
        assert!(!pending(&text));
    }

    #[test]
    fn a_failing_start_is_logged_and_ends_the_wait() {
        let dir_tmp = tempfile::tempdir().unwrap();
        let dir = dir_tmp.path();
        let log = dir.join("late.log");
        let flag = dir.join("late-go");
        let cfg = Config {
            idle_window: Duration::from_millis(10),
            late_max_wait: Duration::from_millis(30),
            ..Config::default()
        };
        let code = Waiter {
            log: &log,
            go_flag: &flag,
            proc_dir: &dir.join("no-proc"),
            cfg: &cfg,
            start: Command::new("false"),
        }
        .run();
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(code, 1);
        assert!(text.contains("late_start reason=max_wait"), "{text}");
        assert!(text.contains("late_done result=failed"), "{text}");
        assert!(
            !pending(&text),
            "a failed start still ends the wait: {text}"
        );
    }
}
