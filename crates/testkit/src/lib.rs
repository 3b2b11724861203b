//! Test support shared by bootprint's test suites (a dev-dependency only; nothing here is
//! built into the programs).
//!
//! It owns one rule: a test that cannot run here (it needs root, a tool, a kernel feature)
//! says so and passes on a developer's machine, but **fails under `CI=true`**, where the
//! machine runs as root with every tool installed, so a missing install step cannot hide
//! behind a green run. Each skip is also appended to the file named by
//! `BOOTPRINT_TEST_SKIPS`, so `make unit` can say in its summary how many tests were
//! skipped and why.
//!
//! ```
//! fn needs_root() {
//!     if !testkit::is_root() {
//!         return testkit::skip("needs root");
//!     }
//!     // ... the test
//! }
//! ```

#![deny(missing_docs)]

use std::io::Write;

/// Whether this is a CI run (`CI=true`), where skipping is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    sys::euid() == 0
}

/// Skips the calling test with a reason: prints it and records it, and under `CI=true`
/// fails the test instead.
#[track_caller]
pub fn skip(why: &str) {
    let at = std::panic::Location::caller();
    let test = std::thread::current().name().unwrap_or("?").to_string();
    if in_ci() {
        panic!("{test} ({at}) would be skipped ({why}); under CI=true every test must run");
    }
    eprintln!("skipped: {why}");
    record(why, at);
}

/// Notes that a check of the machine itself does not apply here (a kernel built without
/// modules, say): printed and recorded like [`skip`], but not a failure under `CI=true`,
/// since no install step can change it. Use [`skip`] for everything a machine can be given.
#[track_caller]
pub fn not_here(why: &str) {
    let at = std::panic::Location::caller();
    eprintln!("not applicable here: {why}");
    record(&format!("(not applicable here) {why}"), at);
}

fn record(why: &str, at: &std::panic::Location) {
    let test = std::thread::current().name().unwrap_or("?").to_string();
    if let Some(file) = std::env::var_os("BOOTPRINT_TEST_SKIPS") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
        {
            let _ = writeln!(f, "{test} ({at}): {why}");
        }
    }
}

/// Whether `tool` is on the PATH; when it is not, skips (see [`skip`]) and returns false.
#[track_caller]
pub fn have_tool_or_skip(tool: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(tool).is_file()));
    if !found {
        skip(&format!("no {tool} on this host"));
    }
    found
}
