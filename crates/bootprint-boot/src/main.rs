//! `bootprint-boot`: the boot path. As PID 1 (`init=/usr/lib/bootprint/bootprint-boot`) it
//! forks the recorder and execs the real init; otherwise it takes a verb. Logic lives in the
//! `record` crate; this file parses arguments and dispatches.

use std::path::PathBuf;
use std::process::ExitCode;

use record::recorder::{self, Paths, Start};
use record::Config;

const USAGE: &str = "\
usage: bootprint-boot                      (as PID 1, from init=: record and exec the real init)
       bootprint-boot record [--out DIR] [--seconds S] [--hz N]
                                           record this running system for S seconds (default 10)
                                           into DIR/<boot id>/ (default /var/log/bootprint)
       bootprint-boot --help | --version";

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if record::handoff::is_pid1() {
        record::handoff::boot(args);
    }
    let words: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match words.first().map(String::as_str) {
        Some("record") => record_now(&words[1..]),
        Some("--version") => {
            println!("bootprint-boot {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Some("--help") | Some("-h") | Some("help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => usage_error("expected a verb"),
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("bootprint-boot: {msg}\n{USAGE}");
    ExitCode::from(2)
}

fn record_now(args: &[String]) -> ExitCode {
    let mut config = Config::default();
    let mut seconds = 10.0;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned();
        match flag.as_str() {
            "--out" => match value() {
                Some(v) => config.log_dir = PathBuf::from(v),
                None => return usage_error("--out needs a directory"),
            },
            "--seconds" => match value().and_then(|v| v.parse::<f64>().ok()) {
                Some(v) if v > 0.0 => seconds = v,
                _ => return usage_error("--seconds needs a positive number"),
            },
            "--hz" => match value().and_then(|v| v.parse::<u32>().ok()) {
                Some(v) if (1..=1000).contains(&v) => config.hz = v,
                _ => return usage_error("--hz needs a number from 1 to 1000"),
            },
            "--help" | "-h" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage_error(&format!("unknown option {other:?}")),
        }
    }
    // Outside boot the uptime limit means nothing: only the run length stops it.
    config.timeout_s = f64::MAX / 2e9;
    let start = Start {
        stop_after_ns: Some((seconds * 1e9) as u64),
        ..Start::default()
    };
    match recorder::run(&config, &Paths::default(), start) {
        Ok(dir) => {
            println!("{}", dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "bootprint-boot: cannot write the trace under {}: {e}",
                config.log_dir.display()
            );
            ExitCode::FAILURE
        }
    }
}
