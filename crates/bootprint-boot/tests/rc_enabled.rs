//! `bootprint-boot rc --enabled`, the startpar wrapper's question, for real: every way of
//! turning the runner on answers 0, everything else 1; a boot marked as the runner's
//! comparison (or its own verdict off) keeps it out on the way up, not on the way down.

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
            .arg("--levers")
            .arg(dir.join("no-levers"))
            .env_remove("RUNLEVEL")
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

#[test]
fn a_comparison_or_its_own_verdict_keeps_the_runner_out_on_the_way_up() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cmdline = dir.join("cmdline");
    fs::write(&cmdline, "quiet bootprint.rc=1\n").unwrap();
    let levers = dir.join("levers");
    let ask = |mark: Option<&str>, runlevel: Option<&str>| {
        match mark {
            Some(m) => fs::write(&levers, m).unwrap(),
            None => {
                let _ = fs::remove_file(&levers);
            }
        }
        let mut c = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"));
        c.args(["rc", "--enabled", "--cmdline"])
            .arg(&cmdline)
            .arg("--config")
            .arg(dir.join("none.toml"))
            .arg("--levers")
            .arg(&levers);
        match runlevel {
            Some(r) => c.env("RUNLEVEL", r),
            None => c.env_remove("RUNLEVEL"),
        };
        c.status().unwrap().code()
    };
    assert_eq!(ask(None, Some("S")), Some(0));
    assert_eq!(ask(Some("rc control\n"), Some("S")), Some(1));
    assert_eq!(ask(Some("rc control\n"), None), Some(1));
    assert_eq!(ask(Some("rc off\n"), Some("2")), Some(1));
    assert_eq!(
        ask(Some("late control\n"), Some("2")),
        Some(0),
        "another lever's mark"
    );
    assert_eq!(
        ask(Some("rc maybe\n"), Some("2")),
        Some(0),
        "a word it does not know"
    );
    // Shutdowns are not judged: the runner (and the kexec it loads) stays.
    assert_eq!(ask(Some("rc control\n"), Some("6")), Some(0));
    assert_eq!(ask(Some("rc off\n"), Some("0")), Some(0));
}
