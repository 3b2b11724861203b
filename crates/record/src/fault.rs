//! Fault injection for the test bed's fault matrix (docs/testbed.md, `faults`):
//! `bootprint.fault=POWEROFF-POINT` on the kernel command line makes the recorder cut the
//! power at that point, as a power failure would (no sync; the kernel log says so first).
//! The points: `poweroff-in-trace`, the boot's trace files written, not yet renamed into
//! place; `poweroff-in-shutdown-trace`, the same for the shutdown's trace (`shutdown.rs`),
//! its files written into `.shutdown.tmp`, not yet synced. Nothing happens unless the
//! command line asks.

use std::sync::OnceLock;

static ARMED: OnceLock<String> = OnceLock::new();

/// The points [`at`] knows.
pub const POINTS: [&str; 2] = ["poweroff-in-trace", "poweroff-in-shutdown-trace"];

/// Arms the fault `name` (from the configuration); an empty name arms nothing.
pub fn arm(name: &str) {
    if !name.is_empty() {
        let _ = ARMED.set(name.to_string());
    }
}

/// Cuts the power here if the armed fault is `point`.
pub fn at(point: &str) {
    if ARMED.get().map(String::as_str) != Some(point) {
        return;
    }
    if let Ok(mut k) = std::fs::OpenOptions::new().write(true).open("/dev/kmsg") {
        use std::io::Write;
        let _ = k.write_all(
            format!("bootprint-boot: fault injection: cutting the power at {point}\n").as_bytes(),
        );
    }
    let _ = sys::reboot(libc::RB_POWER_OFF);
}
