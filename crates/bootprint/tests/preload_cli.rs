//! `bootprint preload ...` on a system tree in a temporary directory (`--root`): the real
//! binary, real files.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use preload::model::Model;
use preload::PRELOAD;
use readahead::pack::{Entry, Range};
use readahead::state::{BootKind, BootRecord, State, Verdict};

fn bootprint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

fn ok(args: &[&str]) -> String {
    let o = bootprint(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    text(&o)
}

fn json_status(root: &str) -> serde_json::Value {
    let o = bootprint(&["preload", "status", "--root", root, "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn model() -> Model {
    let mut m = Model::default();
    m.update(
        &[Entry {
            path: "/usr/bin/xfce4-panel".into(),
            ranges: vec![Range {
                offset: 0,
                len: 8192,
            }],
            ..Entry::default()
        }],
        &Default::default(),
        1_795_000_000,
    );
    m
}

#[test]
fn status_show_switch_desktop_time_relearn() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_str().unwrap();
    let dir = tmp.path().join("var/lib/bootprint/preload");
    fs::create_dir_all(tmp.path().join("etc/bootprint")).unwrap();

    // Nothing yet: off, no model, the next login does nothing.
    let s = json_status(root);
    assert_eq!(s["enabled"], false);
    assert_eq!(s["model"]["error"], "none");
    assert_eq!(s["next_login"], "nothing: preload is off");
    let o = bootprint(&["preload", "show", "--root", root]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("no model yet"), "{}", text(&o));

    // On: the file gets `[preload] enabled = true`; without a model the next login learns.
    ok(&["preload", "on", "--root", root]);
    let toml = fs::read_to_string(tmp.path().join("etc/bootprint/bootprint.toml")).unwrap();
    assert!(
        toml.contains("[preload]") && toml.contains("enabled = true"),
        "{toml}"
    );
    assert_eq!(json_status(root)["next_login"], "learn the session");

    // A model and a login without a time: show lists it, desktop-time gives the time.
    fs::create_dir_all(&dir).unwrap();
    model().save(&dir.join("model")).unwrap();
    let mut st = State::default();
    st.push(BootRecord {
        unix_s: 1_795_000_000,
        kind: BootKind::Replay,
        login_s: None,
        done_s: None,
    });
    st.save_for(&dir.join("state"), &PRELOAD).unwrap();
    let shown = ok(&["preload", "show", "--root", root]);
    assert!(
        shown.contains("    1   1.000       8192       1  /usr/bin/xfce4-panel"),
        "{shown}"
    );
    let j: serde_json::Value =
        serde_json::from_str(&ok(&["preload", "show", "--root", root, "--json"])).unwrap();
    assert_eq!(j["files"][0]["ranges"][0][1], 8192);
    let said = ok(&["preload", "desktop-time", "4.5", "--root", root]);
    assert!(said.contains("4.500 s to the desktop"), "{said}");
    let s = json_status(root);
    assert_eq!(s["history"][0]["desktop_s"], 4.5);
    assert_eq!(s["history"][0]["kind"], "prefetch");
    assert_eq!(
        s["next_login"],
        "go without prefetch, to compare (and learn)"
    );
    let o = bootprint(&["preload", "desktop-time", "4.5", "--root", root]);
    assert_eq!(o.status.code(), Some(1), "a second time for the same login");
    assert_eq!(
        bootprint(&["preload", "desktop-time", "soon", "--root", root])
            .status
            .code(),
        Some(2)
    );
    let t = ok(&["preload", "status", "--root", root]);
    assert!(t.starts_with("preload:    on (in "), "{t}");
    assert!(t.contains("1 files, 0.0 MB, from 1 logins"), "{t}");

    // A verdict it gave itself: `on` clears it and the history.
    let mut st = State::load_for(&dir.join("state"), &PRELOAD).unwrap();
    st.verdict = Verdict::Off {
        unix_s: 1_795_000_000,
        reason: "prefetch does not make logins faster here".into(),
    };
    st.save_for(&dir.join("state"), &PRELOAD).unwrap();
    assert_eq!(
        json_status(root)["next_login"],
        "nothing: preload switched itself off (`bootprint preload on` to retry)"
    );
    let said = ok(&["preload", "on", "--root", root]);
    assert!(said.contains("cleared its own verdict"), "{said}");
    assert_eq!(json_status(root)["history"].as_array().unwrap().len(), 0);

    // A broken model is reported with its file and line; relearn removes it.
    fs::write(dir.join("model"), "version 1\nfile x\n").unwrap();
    let s = json_status(root);
    assert!(
        s["model"]["error"]
            .as_str()
            .unwrap()
            .ends_with("var/lib/bootprint/preload/model:2: expected `file <weight> <dev> <ino> <size> <mtime s.ns> <offset+len,...> <path>`"),
        "{s}"
    );
    ok(&["preload", "relearn", "--root", root]);
    assert!(!dir.join("model").exists());
    ok(&["preload", "off", "--root", root]);
    assert_eq!(json_status(root)["enabled"], false);
    assert!(Path::new(&dir).is_dir());
}
