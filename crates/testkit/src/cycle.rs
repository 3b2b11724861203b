//! A log directory holding a reboot cycle for the tests of its views: boot `b` (the
//! repository's mini-trace with a `clock` and a `previous_boot` event added) and the shutdown
//! of boot `a` before it. Its figures: the shutdown saved 6 s after the request, 19 s
//! (19.5 s on the wall clock) to b's kernel, b's login at 12 s.

use std::fs;
use std::path::{Path, PathBuf};

const BOOT_CLOCK: &str = "20500000000 clock realtime_ns=1000000100000000000";
const SHUTDOWN_CLOCK: &str = "106000000000 clock realtime_ns=1000000060000000000";

/// The log directory and b's trace; `rtc`: the clock events carry the hardware clock's
/// offset.
pub fn log_dir(rtc: bool) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("log");
    let boot = log.join("b");
    fs::create_dir_all(&boot).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/mini-trace");
    for e in fs::read_dir(&fixture).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), boot.join(e.file_name())).unwrap();
    }
    let offset = |o: &str| {
        if rtc {
            format!(" rtc_offset_ns={o}")
        } else {
            String::new()
        }
    };
    let mut events = fs::read_to_string(boot.join("events.log")).unwrap();
    events.push_str(&format!(
        "{BOOT_CLOCK}{}\n20500000000 previous_boot id=a\n",
        offset("500000000")
    ));
    fs::write(boot.join("events.log"), events).unwrap();
    let shutdown = log.join("a/shutdown");
    fs::create_dir_all(&shutdown).unwrap();
    fs::write(
        shutdown.join("events.log"),
        format!(
            "# bootprint events 1\n100000000000 recorder_start pid=7 hz=50\n\
             100000000000 shutdown_start how=runlevel%206\n\
             106000000000 shutdown_end reason=saved settle_s=3\n{SHUTDOWN_CLOCK}{}\n",
            offset("0")
        ),
    )
    .unwrap();
    (tmp, boot)
}
