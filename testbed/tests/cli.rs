//! The real `bootprint-testbed` binary on command lines that boot nothing: help exits 0, a
//! wrong command line exits 2 with the verb's usage, `completions` and `man` write what the
//! definition says.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bootprint-testbed"))
        .args(args)
        .output()
        .expect("bootprint-testbed runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn help_exits_0_and_a_wrong_command_line_2() {
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let help = text(&o.stdout);
    assert!(
        help.contains("bootprint-testbed soak CONFIG [--boots N]"),
        "{help}"
    );
    for verb in ["boot", "bench", "soak", "stall-repro", "man"] {
        let o = run(&[verb, "--help"]);
        assert_eq!(o.status.code(), Some(0), "{verb}");
        assert!(text(&o.stdout).contains(&format!("Usage: bootprint-testbed {verb}")));
    }
    for (args, says) in [
        (&["boot", "--bogus"][..], "unexpected argument '--bogus'"),
        (
            &["bench", "record", "--runs", "0"],
            "expected a positive integer",
        ),
        (&["soak", "nope"], "[possible values: list, plain"),
        (&["soak", "list", "--hold"], "takes no options"),
        (
            &["faults", "--case"],
            "a value is required for '--case <NAME>'",
        ),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = text(&o.stderr);
        assert!(
            err.contains(says) && err.contains(&format!("Usage: bootprint-testbed {}", args[0])),
            "{args:?}: {err}"
        );
    }
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("Usage: bootprint-testbed [OPTIONS] <COMMAND>"));
}

#[test]
fn completions_and_man_pages() {
    let o = run(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).contains("bootprint__testbed,stall-repro)"));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let o = run(&["man", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let soak = std::fs::read_to_string(dir.join("bootprint-testbed-soak.1")).unwrap();
    assert!(soak.contains("fresh\\-copy"), "{soak}");
    // A directory that is not there is a failure (1), not a usage error.
    let o = run(&["man", "/nonexistent/bootprint-testbed-man"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
}
