//! Our start order against Debian's insserv on real init scripts from Debian 12 packages
//! (tests/fixtures/initscripts/debian-bookworm, see the README there).
//!
//! - Always: every edge of the `.depend.boot` / `.depend.start` files insserv wrote for
//!   that tree (checked in) is respected by our order: the dependency starts first.
//! - Where insserv is installed: run it again on a copy of the tree (in a temporary
//!   directory, `-p`, `-c`, `-o` and `-i` all pointing into the copy, so the machine's
//!   /etc is not touched) and check the same against what it writes now.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rc::system::{Runlevel, System};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/initscripts/debian-bookworm")
}

/// A `.depend.*` file: TARGETS, INTERACTIVE and `name: deps` lines.
struct Depend {
    targets: Vec<String>,
    interactive: Vec<String>,
    edges: Vec<(String, String, usize)>, // (dependency, dependent, line)
}

fn parse_depend(text: &str, file: &Path) -> Depend {
    let mut d = Depend {
        targets: Vec::new(),
        interactive: Vec::new(),
        edges: Vec::new(),
    };
    for (i, line) in text.lines().enumerate() {
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        if let Some(t) = line.strip_prefix("TARGETS =") {
            d.targets = words(t);
        } else if let Some(t) = line.strip_prefix("INTERACTIVE =") {
            d.interactive = words(t);
        } else if let Some((name, deps)) = line.split_once(':') {
            for dep in words(deps) {
                d.edges.push((dep, name.trim().to_string(), i + 1));
            }
        } else if !line.trim().is_empty() {
            panic!(
                "{}:{}: expected 'TARGETS =', 'INTERACTIVE =' or 'name: deps', found {line:?}",
                file.display(),
                i + 1
            );
        }
    }
    d
}

/// Checks one .depend file against our graphs of the given runlevels; returns the number
/// of (edge, runlevel) pairs checked.
fn check(sys: &System, depend_file: &Path, runlevels: &[Runlevel]) -> usize {
    let text = std::fs::read_to_string(depend_file).unwrap();
    let dep = parse_depend(&text, depend_file);
    assert!(
        !dep.targets.is_empty(),
        "{}: no TARGETS",
        depend_file.display()
    );
    let mut checked = 0;
    let mut seen_targets: BTreeMap<&str, bool> =
        dep.targets.iter().map(|t| (t.as_str(), false)).collect();
    for &rl in runlevels {
        let g = sys.graph(rl);
        assert!(
            g.cycles.is_empty(),
            "runlevel {}: unexpected cycles {:?}",
            rl.label(),
            g.cycles
        );
        let order = g.order();
        assert_eq!(
            order.len(),
            g.nodes.len(),
            "runlevel {}: order misses nodes",
            rl.label()
        );
        let pos: BTreeMap<&str, usize> = order
            .iter()
            .enumerate()
            .map(|(p, &id)| (g.nodes[id].name.as_str(), p))
            .collect();
        for n in &g.nodes {
            if let Some(s) = seen_targets.get_mut(n.name.as_str()) {
                *s = true;
            }
        }
        for (before, after, line) in &dep.edges {
            if let (Some(b), Some(a)) = (pos.get(before.as_str()), pos.get(after.as_str())) {
                assert!(
                    b < a,
                    "{}:{}: insserv starts {before} before {after}; our runlevel {} order has {before} at {b}, {after} at {a}",
                    depend_file.display(), line, rl.label()
                );
                checked += 1;
            }
        }
        for name in &dep.interactive {
            if let Some(id) = g.node(name) {
                assert!(
                    g.nodes[id].interactive,
                    "{name} is INTERACTIVE for insserv, not for us"
                );
            }
        }
    }
    let missing: Vec<&&str> = seen_targets
        .iter()
        .filter(|(_, s)| !**s)
        .map(|(t, _)| t)
        .collect();
    assert!(
        missing.is_empty(),
        "{}: targets we do not start in {runlevels:?}: {missing:?}",
        depend_file.display()
    );
    checked
}

const START: [Runlevel; 5] = [
    Runlevel::Num(1),
    Runlevel::Num(2),
    Runlevel::Num(3),
    Runlevel::Num(4),
    Runlevel::Num(5),
];

#[test]
fn fixture_is_big_enough() {
    let sys = System::load(&fixture()).unwrap();
    assert!(sys.scripts.len() >= 40, "{} scripts", sys.scripts.len());
    assert_eq!(sys.enabled(Runlevel::S).len(), 36);
    assert_eq!(sys.enabled(Runlevel::Num(2)).len(), 51);
}

#[test]
fn order_respects_checked_in_insserv_depend_files() {
    let root = fixture();
    let sys = System::load(&root).unwrap();
    let boot = check(&sys, &root.join("etc/init.d/.depend.boot"), &[Runlevel::S]);
    let start = check(&sys, &root.join("etc/init.d/.depend.start"), &START);
    eprintln!("checked {boot} boot and {start} start edge-runlevel pairs");
    // Numbers from the checked-in files: a drop means edges stopped being compared.
    assert!(boot >= 60, "only {boot} boot edges checked");
    assert!(start >= 100, "only {start} start edges checked");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        let target = to.join(&name);
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            copy_tree(&e.path(), &target);
        } else if ft.is_file() {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

fn find_insserv() -> Option<PathBuf> {
    ["/usr/sbin/insserv", "/sbin/insserv"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

#[test]
fn order_respects_insserv_run_now() {
    let Some(insserv) = find_insserv() else {
        eprintln!("SKIPPED: insserv is not installed (Debian package insserv); the checked-in .depend files were still compared");
        return;
    };
    let tmp = std::env::temp_dir().join(format!("bootprint-rc-insserv-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let etc = tmp.join("etc");
    copy_tree(&fixture().join("etc/init.d"), &etc.join("init.d"));
    copy_tree(
        &fixture().join("etc/insserv.conf.d"),
        &etc.join("insserv.conf.d"),
    );
    std::fs::copy(fixture().join("etc/insserv.conf"), etc.join("insserv.conf")).unwrap();
    let initd = etc.join("init.d");
    let mut scripts = Vec::new();
    for e in std::fs::read_dir(&initd).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.starts_with(".depend") {
            std::fs::remove_file(initd.join(&name)).unwrap();
        } else {
            scripts.push(name);
        }
    }
    scripts.sort();
    // -i keeps the .depend files out of the real /etc/init.d; links go to initd/../rcN.d.
    let out = Command::new(&insserv)
        .current_dir(&initd)
        .arg("-p")
        .arg(&initd)
        .arg("-c")
        .arg(etc.join("insserv.conf"))
        .arg("-o")
        .arg(etc.join("insserv/overrides"))
        .arg("-i")
        .arg(&initd)
        .args(&scripts)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "insserv failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sys = System::load(&tmp).unwrap();
    let boot = check(&sys, &initd.join(".depend.boot"), &[Runlevel::S]);
    let start = check(&sys, &initd.join(".depend.start"), &START);
    assert!(boot >= 60 && start >= 100, "{boot} {start}");
    // The run reproduces the checked-in files (same insserv, same scripts).
    for f in [".depend.boot", ".depend.start", ".depend.stop"] {
        let now = std::fs::read_to_string(initd.join(f)).unwrap();
        let then = std::fs::read_to_string(fixture().join("etc/init.d").join(f)).unwrap();
        if now != then {
            eprintln!("note: {f} from this insserv differs from the checked-in one (another insserv version?)");
        }
    }
    std::fs::remove_dir_all(&tmp).unwrap();
}
