//! `bootprint readahead ...` on a system tree in a temporary directory (`--root`): the real
//! binary, real files.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use readahead::pack::{Entry, Header, Pack, Range, RootId};
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

fn json_status(root: &Path) -> serde_json::Value {
    let o = bootprint(&[
        "readahead",
        "status",
        "--root",
        root.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn small_pack() -> Pack {
    Pack {
        header: Header {
            created_unix_s: 1_795_000_000,
            kernel_release: "6.1.0-test".into(),
            root: RootId {
                uuid: "00112233-4455-6677-8899-aabbccddeeff".into(),
                fsid: 0,
            },
            rotational: true,
            relocated: false,
            disk_bound: false,
            budget_bytes: 100_000_000,
            metadata: Vec::new(),
        },
        entries: vec![Entry {
            path: "/usr/bin/thing".into(),
            dev: 1,
            ino: 2,
            size: 10_000,
            mtime_s: 3,
            mtime_ns: 4,
            ranges: vec![Range {
                offset: 0,
                len: 8192,
            }],
            first_access: 0,
        }],
    }
}

#[test]
fn status_on_off_relearn_show() {
    let root_tmp = tempfile::tempdir().unwrap();
    let root = root_tmp.path();
    let r = root.to_str().unwrap();
    let v = json_status(root);
    assert_eq!(v["enabled"], false);
    assert_eq!(v["pack"]["valid"], false);
    assert_eq!(v["next_boot"], "nothing: readahead is off");

    // on: writes the switch into a new bootprint.toml.
    let o = bootprint(&["readahead", "on", "--root", r]);
    assert!(o.status.success(), "{}", text(&o));
    let toml = fs::read_to_string(root.join("etc/bootprint/bootprint.toml")).unwrap();
    assert_eq!(toml, "[readahead]\nenabled = true\n");
    assert_eq!(json_status(root)["next_boot"], "learn a pack");

    // A pack and a history: status reads both.
    let lib = root.join("var/lib/bootprint");
    small_pack()
        .write_file(&lib.join("readahead.pack"))
        .unwrap();
    let mut st = State::default();
    for (kind, login) in [
        (BootKind::Learn, 40.0),
        (BootKind::Replay, 30.0),
        (BootKind::Control, 35.0),
    ] {
        st.push(BootRecord {
            unix_s: 1_795_000_100,
            kind,
            login_s: Some(login),
            done_s: None,
        });
    }
    st.save(&lib.join("readahead.state")).unwrap();
    let v = json_status(root);
    assert_eq!(v["pack"]["valid"], true);
    assert_eq!(v["pack"]["files"], 1);
    assert_eq!(v["pack"]["bytes"], 8192);
    assert_eq!(v["pack"]["rotational"], true);
    assert_eq!(v["history"].as_array().unwrap().len(), 3);
    assert_eq!(v["judgement"]["replay_boots"], 1);
    assert_eq!(v["next_boot"], "replay the pack");
    let o = bootprint(&["readahead", "status", "--root", r]);
    let t = text(&o);
    assert!(t.contains("1 files, 0.0 MB in 1 ranges"), "{t}");
    assert!(t.contains("control"), "{t}");

    // show: the entries.
    let o = bootprint(&["readahead", "show", "--root", r]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("    1       8192       1  /usr/bin/thing"),
        "{}",
        text(&o)
    );
    let o = bootprint(&["readahead", "show", "--root", r, "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["entries"][0]["path"], "/usr/bin/thing");

    // A verdict it gave itself: `on` clears it and the history.
    st.verdict = Verdict::Off {
        unix_s: 1_795_000_200,
        reason: "replay does not make boots faster here".into(),
    };
    st.save(&lib.join("readahead.state")).unwrap();
    let v = json_status(root);
    assert_eq!(v["verdict"]["state"], "off");
    assert!(v["next_boot"]
        .as_str()
        .unwrap()
        .starts_with("nothing: readahead switched itself off"));
    let o = bootprint(&["readahead", "on", "--root", r]);
    assert!(text(&o).contains("cleared its own verdict"), "{}", text(&o));
    let v = json_status(root);
    assert_eq!(v["verdict"]["state"], "auto");
    assert_eq!(v["history"].as_array().unwrap().len(), 0);

    // off keeps the rest of the file.
    fs::write(
        root.join("etc/bootprint/bootprint.toml"),
        "# site settings\n[record]\nhz = 25\n\n[readahead]\nenabled = true # since May\n",
    )
    .unwrap();
    assert!(bootprint(&["readahead", "off", "--root", r])
        .status
        .success());
    assert_eq!(
        fs::read_to_string(root.join("etc/bootprint/bootprint.toml")).unwrap(),
        "# site settings\n[record]\nhz = 25\n\n[readahead]\nenabled = false # since May\n"
    );

    // relearn removes the pack; twice is fine.
    assert!(bootprint(&["readahead", "relearn", "--root", r])
        .status
        .success());
    assert!(!lib.join("readahead.pack").exists());
    let o = bootprint(&["readahead", "relearn", "--root", r]);
    assert!(
        o.status.success() && text(&o).contains("no pack"),
        "{}",
        text(&o)
    );
}

#[test]
fn bad_files_are_named_and_left_alone() {
    let root_tmp = tempfile::tempdir().unwrap();
    let root = root_tmp.path();
    let r = root.to_str().unwrap();
    let conf = root.join("etc/bootprint/bootprint.toml");
    fs::create_dir_all(conf.parent().unwrap()).unwrap();
    let bad = "[readahead]\nenabled = true\nhz = [1\n";
    fs::write(&conf, bad).unwrap();
    let o = bootprint(&["readahead", "off", "--root", r]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).contains("bootprint.toml:3: expected"),
        "{}",
        text(&o)
    );
    assert_eq!(fs::read_to_string(&conf).unwrap(), bad, "nothing changed");

    fs::write(&conf, "[readahead]\nenabled = true\n").unwrap();
    let lib = root.join("var/lib/bootprint");
    fs::create_dir_all(&lib).unwrap();
    fs::write(lib.join("readahead.state"), "version 1\nboot 1 fast 2 3\n").unwrap();
    let o = bootprint(&["readahead", "status", "--root", r]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).contains("readahead.state:2: expected `boot"),
        "{}",
        text(&o)
    );

    fs::write(lib.join("readahead.state"), "").unwrap();
    let mut bytes = small_pack().encode();
    bytes[40] ^= 0xff;
    fs::write(lib.join("readahead.pack"), bytes).unwrap();
    let v = json_status(root);
    assert_eq!(v["pack"]["valid"], false);
    assert!(
        v["pack"]["error"].as_str().unwrap().contains("checksum"),
        "{v}"
    );
    assert_eq!(v["next_boot"], "learn a pack");
    let o = bootprint(&["readahead", "bogus"]);
    assert_eq!(o.status.code(), Some(2));
}
