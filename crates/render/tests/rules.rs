//! The Prometheus rules the package ships (packaging/prometheus-rules.yml, docs/export.md
//! "Rules"): Prometheus' own `promtool` checks them and runs their unit test
//! (tests/prometheus/bootprint-rules.test.yml: twelve machines, the planted regressions and
//! the levers switched off must raise exactly the expected alerts, the recording rules give
//! the expected quantiles); the test can fail: with one expected alert taken away it does.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const RULES: &str = "packaging/prometheus-rules.yml";
const TEST: &str = "tests/prometheus/bootprint-rules.test.yml";

fn promtool(args: &[&str], dir: &Path) -> (bool, String) {
    testkit::run_with_input(Command::new("promtool").args(args).current_dir(dir), None)
}

#[test]
fn the_shipped_rules_pass_their_promtool_test() {
    if !testkit::have_tool_or_skip("promtool") {
        return;
    }
    let (ok, said) = promtool(&["check", "rules", RULES], &root());
    assert!(ok && said.contains("9 rules found"), "{said}");
    let (ok, said) = promtool(&["test", "rules", TEST], &root());
    assert!(ok, "{said}");

    // The same rules and test in a scratch tree, the test without the alert for m8: the
    // alert still fires, so the test must fail and name it.
    let tmp = tempfile::tempdir().unwrap();
    for f in [RULES, TEST] {
        let to = tmp.path().join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root().join(f), &to).unwrap();
    }
    let test = std::fs::read_to_string(tmp.path().join(TEST)).unwrap();
    let start = test
        .find("        alertname: BootprintBootRegressed")
        .unwrap();
    let end = start + test[start..].find("      - eval_time").unwrap();
    let without = format!(
        "{}        alertname: BootprintBootRegressed\n        exp_alerts: []\n{}",
        &test[..start],
        &test[end..]
    );
    std::fs::write(tmp.path().join(TEST), without).unwrap();
    let (ok, said) = promtool(&["test", "rules", TEST], tmp.path());
    assert!(
        !ok && said.contains("BootprintBootRegressed") && said.contains("m8:9100"),
        "{said}"
    );
}
