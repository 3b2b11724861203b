//! The module loader of /init in a process of its own, so that /init's wait for it has a
//! bound. A module whose init function never returns keeps the thread that called
//! finit_module(2) in the kernel for ever; in /init itself that thread could not even be
//! killed by the exec of the real init (execve waits for every other thread to die). In a
//! child, it only holds the child: /init stops waiting at its limit, names the modules still
//! loading, and goes on (the documented fail-safe: try to mount the root without them; if
//! that fails, the usual failure path).
//!
//! The child reports through a pipe, one line at a time: `start NAME`, `done NAME` as
//! modules load, then `ok SUMMARY` or `err MESSAGE` (see [`crate::boot::load_modules`]).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::plan::Plan;
use crate::sys;

/// What the loader has said so far.
#[derive(Debug, Default)]
pub struct Progress {
    /// Modules started and not done, in start order.
    pub loading: Vec<String>,
    /// The final answer, once given (or the loader's death, as an error).
    pub result: Option<Result<String, String>>,
}

/// The loader process and what it said.
pub struct Loader {
    pid: i32,
    pipe: File,
    partial: Vec<u8>,
    progress: Progress,
}

/// How a bounded wait for the loader ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Waited {
    /// Every module was handled: the summary, or the error of a required module.
    Done(Result<String, String>),
    /// Still busy at the limit with these modules (in start order).
    Busy(Vec<String>),
}

impl Loader {
    /// Forks the loader for `plan`'s modules under `root` (`/` at boot).
    pub fn start(plan: &Plan, root: &Path) -> std::io::Result<Loader> {
        let (r, w) = ::sys::pipe()?;
        match ::sys::fork()? {
            0 => {
                drop(r);
                let w = Mutex::new(w);
                let say = |line: &str| {
                    let mut w = w.lock().unwrap_or_else(|p| p.into_inner());
                    let _ = w.write_all(format!("{}\n", line.replace('\n', " ")).as_bytes());
                };
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    crate::boot::load_modules_reporting(plan, root, &say)
                }));
                match outcome {
                    Ok(Ok(summary)) => say(&format!("ok {summary}")),
                    Ok(Err(e)) => say(&format!("err {e}")),
                    Err(_) => say("err the module loader failed (a panic)"),
                }
                ::sys::exit_now(0)
            }
            pid => {
                drop(w);
                Ok(Loader {
                    pid,
                    pipe: r,
                    partial: Vec::new(),
                    progress: Progress::default(),
                })
            }
        }
    }

    /// Reads what the loader said, waiting at most `wait` for the first of it.
    fn pump(&mut self, wait: Duration) {
        if self.progress.result.is_some() {
            return;
        }
        let ms = wait.as_millis().min(i32::MAX as u128) as i32;
        if !::sys::poll_readable(self.pipe.as_raw_fd(), ms).unwrap_or(false) {
            return;
        }
        let mut buf = [0u8; 4096];
        let n = match self.pipe.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return,
            Err(_) => 0,
        };
        if n == 0 {
            // The pipe closed without an answer: the loader died.
            let status = sys::wait_status(self.pid);
            self.progress.result = Some(Err(format!(
                "the module loader ended without an answer ({status})"
            )));
            return;
        }
        self.partial.extend_from_slice(&buf[..n]);
        while let Some(i) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=i).collect();
            let line = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
            self.take_line(&line);
        }
    }

    fn take_line(&mut self, line: &str) {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let p = &mut self.progress;
        match word {
            "start" => p.loading.push(rest.to_string()),
            "done" => p.loading.retain(|m| m != rest),
            "ok" => p.result = Some(Ok(rest.to_string())),
            "err" => p.result = Some(Err(rest.to_string())),
            _ => {}
        }
        if p.result.is_some() {
            let _ = sys::wait_status(self.pid);
        }
    }

    /// Without waiting: the loader's error, once it has failed (for the root wait, which
    /// gives up early when the disk's driver did not load).
    pub fn failed(&mut self) -> Option<String> {
        self.pump(Duration::ZERO);
        match &self.progress.result {
            Some(Err(e)) => Some(e.clone()),
            _ => None,
        }
    }

    /// Waits at most `limit` for the loader to finish.
    pub fn wait(&mut self, limit: Duration) -> Waited {
        let until = Instant::now() + limit;
        loop {
            if let Some(r) = &self.progress.result {
                return Waited::Done(r.clone());
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Waited::Busy(self.progress.loading.clone());
            }
            self.pump(left);
        }
    }
}
