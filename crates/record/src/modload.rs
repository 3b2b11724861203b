//! Parallel module loading on the boot path (`bootprint.modules=1`): before init is exec'd,
//! `bootprint modules load` runs as a child (it links libkmod; the boot-path binary does not,
//! so a system without libkmod still boots), loads the planned modules in parallel and prints
//! a `modules_plan` line, one `module` event per module and, once it has folded the measured
//! times into the durations state file (waiting for a writable root), `modules_learned`; the
//! recorder puts those events into the trace at boot done. udev's own coldplug still runs: a
//! module it finds loaded counts as done for both.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use trace::Event;

/// The program that loads (the CLI; it has the libkmod binding).
pub const LOADER: &str = "/usr/bin/bootprint";

/// The loader running in the background.
#[derive(Debug)]
pub struct Loader {
    child: Child,
    started_ns: u64,
}

/// Starts the loader, or says why it could not.
pub fn start(program: &str) -> Result<Loader, String> {
    let started_ns = sample::sys::boottime_ns();
    Command::new(program)
        .args(["modules", "load"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map(|child| Loader { child, started_ns })
        .map_err(|e| format!("{program}: {e}"))
}

impl Loader {
    /// The loader's events, read until it closes its output or `limit` passes (a module
    /// whose init hangs must not hold the trace back). The loader is the real init's child
    /// by then, so init reaps it.
    pub fn events(mut self, limit: Duration) -> Vec<Event> {
        let mut out = vec![Event::new(self.started_ns, "modules_start").with("loader", LOADER)];
        let Some(mut pipe) = self.child.stdout.take() else {
            return out;
        };
        let deadline = Instant::now() + limit;
        let mut text = Vec::new();
        let mut buf = [0u8; 8192];
        let complete = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break false;
            }
            let ready = sample::sys::poll_readable(
                Some(pipe.as_raw_fd()),
                left.as_millis().min(1000) as i32,
            )
            .unwrap_or(false);
            if !ready {
                continue;
            }
            match pipe.read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => text.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break false,
            }
        };
        let text = String::from_utf8_lossy(&text);
        match trace::events::parse(&text) {
            Ok(events) => out.extend(events.into_iter().map(|mut e| {
                if e.kind == "warning" && e.t_ns == 0 {
                    e.t_ns = self.started_ns;
                }
                e
            })),
            Err(e) => out.push(warning(format!("modules: loader output: {e}"))),
        }
        if !complete {
            out.push(warning(format!(
                "modules: loader not done after {} s",
                limit.as_secs()
            )));
        }
        out
    }
}

fn warning(what: String) -> Event {
    Event::new(sample::sys::boottime_ns(), "warning").with("what", what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_from_the_loader_output() {
        // A stand-in loader: prints two module events and a line that is not one.
        let dir = std::env::temp_dir().join(format!("bp-modload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("fake-loader");
        std::fs::write(
            &fake,
            "#!/bin/sh\necho '100 module name=virtio_blk end_ns=200 worker=1 outcome=loaded detail='\n\
             echo '150 module name=floppy end_ns=900 worker=2 outcome=failed detail=No%20such%20device'\n",
        )
        .unwrap();
        Command::new("chmod")
            .arg("755")
            .arg(&fake)
            .status()
            .unwrap();
        let events = start(fake.to_str().unwrap())
            .unwrap()
            .events(Duration::from_secs(10));
        let modules: Vec<&Event> = events.iter().filter(|e| e.kind == "module").collect();
        assert_eq!(modules.len(), 2);
        assert_eq!(modules[1].get("detail"), Some("No such device"));
        assert_eq!(events[0].kind, "modules_start");

        // A loader that hangs is given up on.
        std::fs::write(&fake, "#!/bin/sh\necho '1 module name=a end_ns=2 worker=1 outcome=loaded detail='\nexec sleep 30\n").unwrap();
        let t = Instant::now();
        let events = start(fake.to_str().unwrap())
            .unwrap()
            .events(Duration::from_secs(1));
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(events.iter().any(|e| e.kind == "warning"), "{events:?}");
        assert!(start("/nonexistent/loader").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
