//! `bootprint fleet` over a gathered tree of real trace directories (copies of the
//! `mini-trace` fixture with `systemd-units`' unit timing, one machine per subdirectory, and
//! one machine as a records file from `bootprint fleet --export`): exactly the planted machine
//! is flagged, and a malformed records line and a broken trace are reported and skipped.

use std::path::{Path, PathBuf};

mod common;
use common::{run, text};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A copy of the fixture as boot `seq` of machine `m`, its text login at `login` s, its kernel
/// release `release`.
fn boot(dir: &Path, m: &str, seq: u64, login: f64, release: &str) {
    let fixtures = root().join("tests/fixtures");
    std::fs::create_dir_all(dir).unwrap();
    for e in std::fs::read_dir(fixtures.join("mini-trace")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    std::fs::copy(
        fixtures.join("systemd-units/systemd-units.log"),
        dir.join("systemd-units.log"),
    )
    .unwrap();
    let header = std::fs::read_to_string(dir.join("header")).unwrap();
    let header = header
        .replace(
            "bootprint.boot_id = 00000000-0000-4000-8000-000000000001",
            &format!("bootprint.boot_id = {m}-{seq}"),
        )
        .replace(
            "bootprint.kernel_release = 6.1.0-test",
            &format!("bootprint.kernel_release = {release}\nbootprint.dmi_vendor = QEMU\nbootprint.dmi_product = Standard PC"),
        );
    std::fs::write(dir.join("header"), header).unwrap();
    std::fs::write(dir.join("seq"), format!("{seq}\n")).unwrap();
    let events = std::fs::read_to_string(dir.join("events.log"))
        .unwrap()
        .replace(
            "12000000000 milestone name=text_login",
            &format!("{} milestone name=text_login", (login * 1e9) as u64),
        );
    std::fs::write(dir.join("events.log"), events).unwrap();
}

#[test]
fn the_planted_machine_is_flagged_and_bad_input_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let gathered = tmp.path().join("gathered");
    // Machines a, b, c as scp'd log directories; c's newest boot 16 s against 12.
    for m in ["a", "b", "c"] {
        let release = if m == "b" { "6.1.0-10" } else { "6.1.0-9" };
        for seq in 1..=5 {
            let login = if m == "c" && seq == 5 { 16.0 } else { 12.0 };
            boot(
                &gathered.join(m).join(format!("boot{seq}")),
                m,
                seq,
                login,
                release,
            );
        }
    }
    // `latest` as the recorder leaves it: a link, not followed (the boot would count twice).
    std::os::unix::fs::symlink("boot5", gathered.join("a/latest")).unwrap();
    // Machine d exported its records on its own log directory.
    let d_log = tmp.path().join("d-log");
    for seq in 1..=4 {
        boot(
            &d_log.join(format!("boot{seq}")),
            "d",
            seq,
            11.0,
            "6.1.0-10",
        );
    }
    let o = run(&["fleet", "--export", s(&d_log)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let lines = text(&o.stdout);
    assert_eq!(lines.lines().count(), 4, "{lines}");
    let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(first["boot_id"], "d-1");
    assert_eq!(first["seq"], 1);
    assert_eq!(first["product"], "Standard PC");
    assert_eq!(first["text_login_s"], 11.0);
    assert!(
        first["services"]
            .as_object()
            .is_some_and(|m| !m.is_empty() && m.len() <= 10),
        "{first}"
    );
    std::fs::create_dir_all(gathered.join("d")).unwrap();
    // A malformed line among good ones, and a trace whose events.log is not one.
    std::fs::write(
        gathered.join("d/boots.jsonl"),
        format!("{lines}{{\"boot_id\": \"d-9\", \"text_login_s\": \n"),
    )
    .unwrap();
    boot(&gathered.join("a/broken"), "a", 6, 12.0, "6.1.0-9");
    std::fs::write(gathered.join("a/broken/events.log"), "not an events log\n").unwrap();

    let o = run(&["fleet", "--json", s(&gathered)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let flagged: Vec<&str> = v["machines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["regressed"] == true)
        .map(|m| m["machine"].as_str().unwrap())
        .collect();
    assert_eq!(flagged, ["c"], "{v:#}");
    assert_eq!(v["regressed"], 1);
    assert_eq!(
        v["boots"], 19,
        "5 + 5 + 5 + 4, a's latest link and the broken trace left out"
    );
    let c = &v["machines"][0];
    assert_eq!(c["text_login_baseline"]["baseline_s"], 12.0);
    assert_eq!(c["text_login_baseline"]["over_boots"], 1);
    let skipped = v["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    let bad_line = format!("{}:5", s(&gathered.join("d/boots.jsonl")));
    assert_eq!(skipped[0]["path"], s(&gathered.join("a/broken")));
    assert!(skipped[0]["problem"]
        .as_str()
        .unwrap()
        .contains("events.log"));
    assert_eq!(skipped[1]["path"], bad_line.as_str());
    assert!(skipped[1]["problem"]
        .as_str()
        .unwrap()
        .contains("expected one JSON object"));
    // By kernel release: a and c on 6.1.0-9, b and d on 6.1.0-10.
    let releases: Vec<(&str, u64)> = v["by_kernel_release"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["key"].as_str().unwrap(), g["machines"].as_u64().unwrap()))
        .collect();
    assert_eq!(releases, [("6.1.0-9", 2), ("6.1.0-10", 2)]);

    // The text says the same, and each skip on stderr with its path.
    let o = run(&["fleet", s(&gathered)]);
    assert_eq!(o.status.code(), Some(0));
    let out = text(&o.stdout);
    assert!(
        out.starts_with("4 machines, 19 boots, 1 regressed, 2 inputs skipped"),
        "{out}"
    );
    let regressed: Vec<&str> = out.lines().filter(|l| l.ends_with("REGRESSED")).collect();
    assert_eq!(regressed.len(), 1, "{out}");
    assert!(regressed[0].starts_with("c "), "{out}");
    let err = text(&o.stderr);
    assert!(err.contains(&bad_line) && err.contains("a/broken"), "{err}");
    // Nothing readable: a failure that says what was expected.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = run(&["fleet", s(&empty)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("no boots found"),
        "{}",
        text(&o.stderr)
    );
}
