//! `report --systemd --journal` and `export --systemd --journal` against a real journal:
//! six boots' manager entries (the catalogue ids and fields systemd 252-257 write) turned into
//! journal files by systemd's own `systemd-journal-remote`, read back by the real
//! `journalctl --directory`. The last two boots reach the getty 30 % later than the four
//! before: the newest is over its baseline for 2 boots in a row, the third newest is not.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{run, text};

const JOURNAL_REMOTE: &str = "/lib/systemd/systemd-journal-remote";
const STARTING: &str = "7d4958e842da4a758f6c1cdc7b36dcc5";
const STARTED: &str = "39f53479d3a045ac8e11786248231fbf";
const FAILED: &str = "be02cf6855d2428ba40df7e9d022f03d";
const FINISHED: &str = "b07a249cd024414a82dd00cd181378ff";

fn boot_id(n: usize) -> String {
    format!("{n:x}").repeat(32)
}

/// Boot `n` (1-based) in export format: the getty active at `login_s`.
fn boot(n: usize, login_s: f64) -> String {
    let id = boot_id(n);
    let t0 = 1_700_000_000_000_000u64 + n as u64 * 86_400_000_000;
    let mut s = String::new();
    let mut entry = |mono: u64, fields: &str| {
        s += &format!(
            "__REALTIME_TIMESTAMP={}\n__MONOTONIC_TIMESTAMP={mono}\n_BOOT_ID={id}\n_PID=1\n\
             _HOSTNAME=m1\nSYSLOG_IDENTIFIER=systemd\n{fields}\n\n",
            t0 + mono
        );
    };
    let login = (login_s * 1e6) as u64;
    entry(
        2_000_000,
        &format!("MESSAGE_ID={STARTING}\nUNIT=slow.service\nMESSAGE=Starting slow.service"),
    );
    entry(2_100_000, &format!("MESSAGE_ID={STARTED}\nUNIT=local-fs.target\nJOB_TYPE=start\nJOB_RESULT=done\nMESSAGE=Reached target local-fs.target"));
    entry(
        2_200_000,
        &format!("MESSAGE_ID={STARTING}\nUNIT=bad.service\nMESSAGE=Starting bad.service"),
    );
    entry(2_400_000, &format!("MESSAGE_ID={FAILED}\nUNIT=bad.service\nJOB_TYPE=start\nJOB_RESULT=failed\nMESSAGE=Failed to start bad.service"));
    entry(login - 500_000, &format!("MESSAGE_ID={STARTED}\nUNIT=slow.service\nJOB_TYPE=start\nJOB_RESULT=done\nMESSAGE=Started slow.service"));
    entry(
        login - 100_000,
        &format!("MESSAGE_ID={STARTING}\nUNIT=getty@tty1.service\nMESSAGE=Starting getty"),
    );
    entry(login, &format!("MESSAGE_ID={STARTED}\nUNIT=getty@tty1.service\nJOB_TYPE=start\nJOB_RESULT=done\nMESSAGE=Started getty"));
    entry(
        login + 200_000,
        &format!(
            "MESSAGE_ID={FINISHED}\nKERNEL_USEC=1500000\nUSERSPACE_USEC={}\nMESSAGE=Startup finished",
            login + 200_000 - 1_500_000
        ),
    );
    s
}

/// The six boots as journal files in a directory.
fn journal() -> (tempfile::TempDir, PathBuf) {
    assert!(
        Path::new(JOURNAL_REMOTE).exists(),
        "{JOURNAL_REMOTE} is missing: scripts/install-deps.sh installs systemd-journal-remote"
    );
    let tmp = tempfile::tempdir().unwrap();
    let export = tmp.path().join("boots.export");
    let logins = [10.0, 10.0, 10.0, 10.0, 13.0, 13.0];
    let all: String = logins
        .iter()
        .enumerate()
        .map(|(i, l)| boot(i + 1, *l))
        .collect();
    std::fs::write(&export, all).unwrap();
    let dir = tmp.path().join("journal");
    std::fs::create_dir(&dir).unwrap();
    let out = Command::new(JOURNAL_REMOTE)
        .arg(format!("--output={}", dir.join("remote.journal").display()))
        .arg(&export)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    (tmp, dir)
}

#[test]
fn an_earlier_boot_from_the_journal_with_its_baseline() {
    let (_tmp, dir) = journal();
    let d = dir.to_str().unwrap();
    // Boot 4 (-2): at its baseline.
    let out = run(&[
        "report",
        "--systemd",
        "--journal",
        "-2",
        "--journal-dir",
        d,
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["source"], "journal");
    assert_eq!(v["boot_id"], boot_id(4));
    assert_eq!(v["text_login_s"], 10.0);
    assert_eq!(v["stages"]["kernel_s"], 1.5);
    assert_eq!(v["stages"]["userspace_s"], 10.2 - 1.5);
    assert_eq!(v["stages"]["firmware_s"], serde_json::Value::Null);
    assert_eq!(v["baseline"]["boots"], 3);
    assert_eq!(v["baseline"]["over_boots"], 0);
    let blame: Vec<&str> = v["services"]["blame"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x.as_str())
        .collect();
    assert_eq!(blame.first(), Some(&"slow.service"), "{blame:?}");
    assert_eq!(v["services"]["failed"], serde_json::json!(["bad.service"]));
    assert_eq!(v["services"]["critical_chain"], serde_json::json!([]));
    assert_eq!(v["services"]["login_unit"], "getty@tty1.service");
    // The same boot by its id, in text.
    let out = run(&[
        "report",
        "--systemd",
        "--journal",
        &boot_id(4),
        "--journal-dir",
        d,
    ]);
    let t = text(&out.stdout);
    assert!(
        t.contains(&format!("Boot {} as the journal recorded it", boot_id(4))),
        "{t}"
    );
    assert!(t.contains("critical chain: none"), "{t}");
}

#[test]
fn export_of_the_newest_boot_says_it_regressed_and_promtool_accepts_it() {
    let (tmp, dir) = journal();
    let prom = tmp.path().join("textfile");
    std::fs::create_dir(&prom).unwrap();
    let out = run(&[
        "export",
        "--systemd",
        "--journal",
        "0",
        "--journal-dir",
        dir.to_str().unwrap(),
        "--prometheus",
        prom.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let file = std::fs::read_to_string(prom.join("bootprint.prom")).unwrap();
    for line in [
        "bootprint_milestone_seconds{milestone=\"text_login\"} 13",
        "bootprint_baseline_seconds{milestone=\"text_login\"} 10",
        "bootprint_baseline_boots{milestone=\"text_login\"} 5",
        "bootprint_over_baseline_boots{milestone=\"text_login\"} 2",
        "bootprint_systemd_stage_seconds{stage=\"kernel\"} 1.5",
        "bootprint_service_seconds{service=\"slow.service\"} 10.5",
    ] {
        assert!(file.lines().any(|l| l == line), "no {line:?} in\n{file}");
    }
    assert!(
        file.contains("bootprint_info{version=\"") && file.contains("kernel_release=\"\""),
        "a past boot's kernel is not the running one's:\n{file}"
    );
    if testkit::have_tool_or_skip("promtool") {
        let (ok, said) = testkit::run_with_input(
            Command::new("promtool").args(["check", "metrics"]),
            Some(file.as_bytes()),
        );
        assert!(ok, "promtool check metrics: {said}\n{file}");
    }
}

#[test]
fn a_bad_boot_or_an_empty_journal_is_an_error_naming_it() {
    let (tmp, dir) = journal();
    let d = dir.to_str().unwrap();
    let out = run(&[
        "report",
        "--systemd",
        "--journal",
        "last",
        "--journal-dir",
        d,
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("\"last\": expected a boot"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["report", "--systemd", "--journal", "-9", "--journal-dir", d]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("boot -9"),
        "{}",
        text(&out.stderr)
    );
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = run(&[
        "report",
        "--systemd",
        "--journal",
        "0",
        "--journal-dir",
        empty.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(!text(&out.stderr).is_empty());
    // --journal needs --systemd.
    let out = run(&["report", "--journal", "0", "x"]);
    assert!(!out.status.success());
}
