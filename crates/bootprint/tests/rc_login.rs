//! `bootprint rc login` on a small system tree: the learned login target, text and JSON, and
//! a clear error for a root that is not there.

use std::fs;
use std::process::Command;

#[test]
fn the_login_target_with_its_reasons() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::create_dir_all(root.join("etc")).unwrap();
    fs::write(root.join("etc/nsswitch.conf"), "passwd: files sss\n").unwrap();
    fs::write(root.join("etc/rsyslog.conf"), "mail.* /var/log/mail.log\n").unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_bootprint"))
            .args(["rc", "login", "--root"])
            .arg(root)
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("waits for  $network    /etc/nsswitch.conf:1: passwd from sss"),
        "{text}"
    );
    assert!(text.contains("left out   $syslog"), "{text}");
    let out = run(&["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kept: Vec<&str> = v["login"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kept"] == true)
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(kept, ["$local_fs", "$time", "rmnologin", "$network"]);
    let missing = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(["rc", "login", "--root", "/no/such/root"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/no/such/root is not a directory"));
}
