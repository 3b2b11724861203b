//! Our start order against Debian's insserv on real init scripts from Debian 12 packages
//! (tests/fixtures/initscripts/debian-bookworm, see the README there).
//!
//! - Always: every edge of the `.depend.boot` / `.depend.start` files insserv wrote for
//!   that tree (checked in) is respected by our order: the dependency starts first.
//! - Where insserv is installed: run it again on a copy of the tree (in a temporary
//!   directory, `-p`, `-c`, `-o` and `-i` all pointing into the copy, so the machine's
//!   /etc is not touched) and check the same against what it writes now.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use rc::graph::EdgeKind;
use rc::system::{Runlevel, System};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/initscripts")
}

fn fixture() -> PathBuf {
    fixtures().join("debian-bookworm")
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

/// Apart from `$all` scripts, our edges and insserv's give the same partial order:
/// every insserv edge is one of our direct edges, and each of ours that insserv does not
/// list is implied by a chain of its edges (insserv drops redundant edges). Returns the
/// number of our edges that were only implied.
fn same_partial_order(sys: &System, depend_file: &Path, runlevels: &[Runlevel]) -> usize {
    let dep = parse_depend(&std::fs::read_to_string(depend_file).unwrap(), depend_file);
    let mut ours = BTreeSet::new();
    let mut all = BTreeSet::new();
    for &rl in runlevels {
        let g = sys.graph(rl);
        for e in g.active_edges() {
            let (a, b) = (g.nodes[e.from].name.clone(), g.nodes[e.to].name.clone());
            if e.kind() == EdgeKind::All {
                all.insert(b);
            } else {
                ours.insert((a, b));
            }
        }
    }
    let theirs: BTreeSet<(String, String)> = dep
        .edges
        .iter()
        .filter(|(_, b, _)| !all.contains(b))
        .map(|(a, b, _)| (a.clone(), b.clone()))
        .collect();
    let ours: BTreeSet<(String, String)> =
        ours.into_iter().filter(|(_, b)| !all.contains(b)).collect();
    let missing: Vec<_> = theirs.difference(&ours).collect();
    assert!(
        missing.is_empty(),
        "{}: insserv edges we do not have: {missing:?}",
        depend_file.display()
    );
    let mut implied = 0;
    for (a, b) in ours.difference(&theirs) {
        let mut seen = BTreeSet::new();
        let mut stack = vec![a.as_str()];
        while let Some(x) = stack.pop() {
            for (p, q) in &theirs {
                if p == x && seen.insert(q.as_str()) {
                    stack.push(q.as_str());
                }
            }
        }
        assert!(
            seen.contains(b.as_str()),
            "{}: our edge {a} -> {b} is not implied by insserv's",
            depend_file.display()
        );
        implied += 1;
    }
    implied
}

#[test]
fn same_partial_order_as_insserv_apart_from_all() {
    let root = fixture();
    let sys = System::load(&root).unwrap();
    let boot = same_partial_order(&sys, &root.join("etc/init.d/.depend.boot"), &[Runlevel::S]);
    let start = same_partial_order(&sys, &root.join("etc/init.d/.depend.start"), &START);
    // Measured on the fixture: 19 boot and 1 start edges are redundant for insserv.
    assert_eq!((boot, start), (19, 1));
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

/// Hand-written headers in every spelling insserv accepts (see the fixture README), with
/// the .depend files insserv 1.24 wrote for them.
#[test]
fn lenient_headers_give_insserv_order() {
    let root = fixtures().join("lenient");
    let sys = System::load(&root).unwrap();
    let boot = check(&sys, &root.join("etc/init.d/.depend.boot"), &[Runlevel::S]);
    let start = check(&sys, &root.join("etc/init.d/.depend.start"), &START);
    assert_eq!((boot, start), (2, 4 * 10));
    same_partial_order(&sys, &root.join("etc/init.d/.depend.boot"), &[Runlevel::S]);
    same_partial_order(&sys, &root.join("etc/init.d/.depend.start"), &START);
    // The second Required-Start of web (app) is ignored, as insserv ignores it.
    let g = sys.graph(Runlevel::Num(2));
    let (app, web) = (g.node("app").unwrap(), g.node("web").unwrap());
    assert!(!g
        .edges
        .iter()
        .any(|e| e.from == app && e.to == web && e.kind() != EdgeKind::All));
    let shown: Vec<String> = sys.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        shown,
        [
            "etc/init.d/web:5: second Required-Start ignored: the first, on line 4, wins (as in insserv)",
            "etc/init.d/web:8: second Should-Start ignored: the first, on line 7, wins (as in insserv)",
            "etc/init.d/web:12: second header block ignored: the first, lines 2-11, wins (as in insserv)",
        ]
    );
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

/// insserv's path: `$BOOTPRINT_INSSERV` if set (a path, or `none` to skip), else the
/// Debian locations.
fn find_insserv() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("BOOTPRINT_INSSERV") {
        return Some(PathBuf::from(p)).filter(|p| p.exists());
    }
    ["/usr/sbin/insserv", "/sbin/insserv"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Runs insserv on a copy of a fixture (without its links and .depend files) and checks
/// our order against what it writes now.
fn rerun_insserv(insserv: &Path, fixture: &Path, tag: &str) {
    let tmp_tmp = tempfile::tempdir().unwrap();
    let tmp = tmp_tmp.path();
    let etc = tmp.join("etc");
    copy_tree(&fixture.join("etc/init.d"), &etc.join("init.d"));
    copy_tree(
        &fixture.join("etc/insserv.conf.d"),
        &etc.join("insserv.conf.d"),
    );
    std::fs::copy(fixture.join("etc/insserv.conf"), etc.join("insserv.conf")).unwrap();
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
    // -i keeps the .depend files out of the real /etc/init.d (insserv writes them there
    // even with -p); the links go to initd/../rcN.d.
    let out = Command::new(insserv)
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
    let sys = System::load(tmp).unwrap();
    let boot = check(&sys, &initd.join(".depend.boot"), &[Runlevel::S]);
    let start = check(&sys, &initd.join(".depend.start"), &START);
    assert!(boot > 0 && start > 0, "{boot} {start}");
    same_partial_order(&sys, &initd.join(".depend.boot"), &[Runlevel::S]);
    same_partial_order(&sys, &initd.join(".depend.start"), &START);
    for f in [".depend.boot", ".depend.start", ".depend.stop"] {
        let now = std::fs::read_to_string(initd.join(f)).unwrap();
        let then = std::fs::read_to_string(fixture.join("etc/init.d").join(f)).unwrap();
        if now != then {
            eprintln!("note: {tag} {f} from this insserv differs from the checked-in one (another insserv version?)");
        }
    }
}

#[test]
fn order_respects_insserv_run_now() {
    let Some(insserv) = find_insserv() else {
        testkit::skip("insserv is not installed (Debian package insserv); the checked-in .depend files were still compared");
        return;
    };
    rerun_insserv(&insserv, &fixture(), "debian");
    rerun_insserv(&insserv, &fixtures().join("lenient"), "lenient");
}
