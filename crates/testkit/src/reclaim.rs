//! Pausing the machine's proactive reclaim while a test checks what is in the page cache.
//!
//! A machine may run DAMON with a `pageout` scheme (the machines these tests run on do:
//! `kdamond.0`, pages idle for 12 aggregation intervals of 5 s paged out, 128 MiB/s at most).
//! DAMON watches physical memory in coarse regions, so a page just read into a region that
//! was idle (free memory is idle) can be paged out within a second of the read. A test
//! that reads a file and then checks with mincore that every page is cached then fails now
//! and then, for no fault of the code under test. [`PauseReclaim`] turns every running
//! kdamond (and the `damon_reclaim` module) off and back on when the last guard in the
//! process is dropped. Without root, or without DAMON, it does nothing.

use std::fs;
use std::path::PathBuf;
use std::sync::Mutex;

const KDAMONDS: &str = "/sys/kernel/mm/damon/admin/kdamonds";
const DAMON_RECLAIM: &str = "/sys/module/damon_reclaim/parameters/enabled";

/// How many guards are alive, and the switches they turned off (to turn back on).
static PAUSED: Mutex<(usize, Vec<(PathBuf, &'static str)>)> = Mutex::new((0, Vec::new()));

/// While alive, the machine's DAMON reclaim is off (see the module's doc).
#[must_use = "reclaim resumes when the guard is dropped"]
pub struct PauseReclaim(());

impl PauseReclaim {
    /// Turns DAMON's reclaim off, if it runs and this is the first guard.
    pub fn new() -> PauseReclaim {
        let mut p = PAUSED.lock().unwrap_or_else(|e| e.into_inner());
        if p.0 == 0 {
            p.1 = pause();
        }
        p.0 += 1;
        PauseReclaim(())
    }
}

impl Default for PauseReclaim {
    fn default() -> PauseReclaim {
        PauseReclaim::new()
    }
}

impl Drop for PauseReclaim {
    fn drop(&mut self) {
        let mut p = PAUSED.lock().unwrap_or_else(|e| e.into_inner());
        p.0 -= 1;
        if p.0 == 0 {
            for (path, on) in p.1.drain(..) {
                let _ = fs::write(&path, on);
            }
        }
    }
}

/// Turns off what runs; returns each switch with the word that turns it back on.
fn pause() -> Vec<(PathBuf, &'static str)> {
    let mut off = Vec::new();
    if let Ok(rd) = fs::read_dir(KDAMONDS) {
        for d in rd.flatten() {
            let state = d.path().join("state");
            if fs::read_to_string(&state).is_ok_and(|s| s.trim() == "on")
                && fs::write(&state, "off").is_ok()
            {
                off.push((state, "on"));
            }
        }
    }
    let module = PathBuf::from(DAMON_RECLAIM);
    if fs::read_to_string(&module).is_ok_and(|s| s.trim() == "Y") && fs::write(&module, "N").is_ok()
    {
        off.push((module, "Y"));
    }
    off
}
