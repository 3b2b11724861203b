//! `bootprint modules status|on|off` on a system tree in a temporary directory (`--root`):
//! the real binary, real files.

use std::fs;
use std::process::{Command, Output};

use readahead::state::{BootKind, BootRecord, State, Verdict, MODULES};

fn bootprint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

#[test]
fn status_shows_the_verdict_and_on_clears_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::create_dir_all(root.join("var/lib/bootprint")).unwrap();
    let state_file = root.join("var/lib/bootprint/modules.state");
    let mut st = State::default();
    for (kind, login) in [
        (BootKind::Learn, 12.0),
        (BootKind::Replay, 10.0),
        (BootKind::Control, 9.0),
    ] {
        st.push(BootRecord {
            unix_s: 1_795_000_000,
            kind,
            login_s: Some(login),
            done_s: None,
        });
    }
    st.verdict = Verdict::Off {
        unix_s: 1_795_000_100,
        reason: "the loader does not make boots faster here".into(),
    };
    st.save_for(&state_file, &MODULES).unwrap();
    let r = root.to_str().unwrap();
    let o = bootprint(&["modules", "status", "--root", r, "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["enabled"], false);
    assert_eq!(v["verdict"]["state"], "off");
    assert_eq!(v["boots"][1]["kind"], "load");
    assert_eq!(v["next_boot"], "off (the switch)");
    let o = bootprint(&["modules", "on", "--root", r]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("cleared its own verdict"), "{}", text(&o));
    let toml = fs::read_to_string(root.join("etc/bootprint/bootprint.toml")).unwrap();
    assert!(
        toml.contains("[record]") && toml.contains("modules = true"),
        "{toml}"
    );
    let back = State::load_for(&state_file, &MODULES).unwrap();
    assert_eq!(back.verdict, Verdict::Auto);
    assert!(back.boots.is_empty());
    let o = bootprint(&["modules", "status", "--root", r]);
    assert!(
        text(&o).contains("next boot: with the loader"),
        "{}",
        text(&o)
    );
    // A state file that does not parse is an error naming the file and line.
    fs::write(&state_file, "version 1\nboot 1 replay 1.0 -\n").unwrap();
    let o = bootprint(&["modules", "status", "--root", r]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("modules.state:2: expected"),
        "{}",
        text(&o)
    );
}
