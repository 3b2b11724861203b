//! `bootprint-boot rc --enabled`, the startpar wrapper's question, for real: every way of
//! turning the runner on answers 0, everything else 1.

use std::fs;
use std::process::Command;

#[test]
fn every_switch_of_the_runner_is_honoured() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cmdline = dir.join("cmdline");
    let config = dir.join("bootprint.toml");
    let ask = |line: &str, toml: Option<&str>| {
        fs::write(&cmdline, line).unwrap();
        match toml {
            Some(t) => fs::write(&config, t).unwrap(),
            None => {
                let _ = fs::remove_file(&config);
            }
        }
        Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
            .args(["rc", "--enabled", "--cmdline"])
            .arg(&cmdline)
            .arg("--config")
            .arg(&config)
            .status()
            .unwrap()
            .code()
    };
    assert_eq!(ask("quiet bootprint.rc=1\n", None), Some(0));
    assert_eq!(ask("quiet bootprint.all=1\n", None), Some(0));
    assert_eq!(ask("quiet\n", Some("[boot]\nall = true\n")), Some(0));
    assert_eq!(ask("quiet\n", Some("[record]\nrc = true\n")), Some(0));
    assert_eq!(ask("quiet\n", None), Some(1));
    assert_eq!(ask("quiet bootprint.all=1 bootprint.rc=0\n", None), Some(1));
    assert_eq!(
        ask("bootprint.rc=1\n", Some("not toml at all [\n")),
        Some(0),
        "a bad file is ignored, the command line still counts"
    );
}
