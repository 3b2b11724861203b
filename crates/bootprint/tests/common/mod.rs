//! What the CLI's integration tests share: running the built `bootprint` and reading its
//! output.
#![allow(dead_code)] // each test binary uses its own share of it

use std::process::{Command, Output};

/// The built `bootprint` with `args`, run to its end.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(args)
        .output()
        .expect("bootprint runs")
}

/// Output bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
