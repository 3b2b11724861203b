//! The start graph on small fake roots built in a temporary directory.

use std::path::Path;

use rc::graph::{EdgeKind, Graph};
use rc::system::{Runlevel, System};

/// Removed when dropped.
struct Root(tempfile::TempDir);

impl Root {
    fn path(&self) -> &Path {
        self.0.path()
    }

    fn new() -> Root {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path();
        std::fs::create_dir_all(p.join("etc/init.d")).unwrap();
        Root(tmp)
    }
    fn write(&self, rel: &str, text: &str) -> &Self {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }
    /// A script with a header made of `lines` ("Required-Start: x" ...).
    fn script(&self, name: &str, lines: &[&str]) -> &Self {
        let mut t = format!("#!/bin/sh\n### BEGIN INIT INFO\n# Provides: {name}\n");
        for l in lines {
            t.push_str(&format!("# {l}\n"));
        }
        t.push_str("### END INIT INFO\n");
        self.write(&format!("etc/init.d/{name}"), &t)
    }
    fn link(&self, rl: &str, seq: u8, name: &str) -> &Self {
        let dir = self.path().join(format!("etc/rc{rl}.d"));
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(
            format!("../init.d/{name}"),
            dir.join(format!("S{seq:02}{name}")),
        )
        .unwrap();
        self
    }
    fn graph(&self, rl: Runlevel) -> Graph {
        System::load(self.path()).unwrap().graph(rl)
    }
}

fn edge<'g>(g: &'g Graph, from: &str, to: &str) -> Option<&'g rc::graph::Edge> {
    let (f, t) = (g.node(from)?, g.node(to)?);
    g.edges.iter().find(|e| e.from == f && e.to == t)
}

fn names(g: &Graph, ids: &[usize]) -> Vec<String> {
    ids.iter().map(|&i| g.nodes[i].name.clone()).collect()
}

#[test]
fn required_edge_through_a_facility_remembers_both_lines() {
    let r = Root::new();
    r.write(
        "etc/insserv.conf",
        "# facilities\n$local_fs +mountall\n$remote_fs $local_fs +mountnfs\n",
    )
    .script("mountall", &["Required-Start:"])
    .script("web", &["Required-Start: $remote_fs"])
    .link("2", 1, "mountall")
    .link("2", 2, "web");
    let g = r.graph(Runlevel::Num(2));
    let e = edge(&g, "mountall", "web").expect("edge mountall -> web");
    let o = &e.origins[0];
    assert_eq!(
        (o.file.as_path(), o.line, o.token.as_str()),
        (Path::new("etc/init.d/web"), Some(4), "$remote_fs")
    );
    let via: Vec<(String, usize)> = o.via.iter().map(|v| (v.facility.clone(), v.line)).collect();
    assert_eq!(
        via,
        vec![("$remote_fs".to_string(), 3), ("$local_fs".to_string(), 2)]
    );
    // +mountall is optional inside the facility: the edge is a should edge.
    assert_eq!(e.kind(), EdgeKind::Should);
    // +mountnfs is provided by nobody: silently ignored.
    assert!(g.diagnostics.is_empty(), "{:?}", g.diagnostics);
    assert_eq!(names(&g, &g.order()), ["mountall", "web"]);
}

#[test]
fn should_start_only_when_enabled_and_required_missing_is_reported() {
    let r = Root::new();
    r.script("a", &["Required-Start:"])
        .script("b", &["Required-Start:"])
        .script("c", &["Required-Start: a", "Should-Start: b x"])
        .script("d", &["Required-Start: b"])
        .link("2", 1, "a")
        .link("2", 2, "c")
        .link("2", 3, "d");
    let g = r.graph(Runlevel::Num(2));
    assert_eq!(edge(&g, "a", "c").unwrap().kind(), EdgeKind::Required);
    assert!(g.node("b").is_none());
    assert_eq!(g.active_edges().count(), 1);
    // b is not started: Should-Start is silent, Required-Start (d's line 4) is reported.
    let shown: Vec<String> = g.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(shown[0].starts_with("etc/init.d/d:4: Required-Start names b (b), which runlevel 2 does not start nor runlevel S"), "{shown:?}");
    // Once b is enabled, c's Should-Start becomes an edge.
    r.link("2", 1, "b");
    let g = r.graph(Runlevel::Num(2));
    assert_eq!(edge(&g, "b", "c").unwrap().kind(), EdgeKind::Should);
    assert!(g.diagnostics.is_empty());
}

#[test]
fn required_by_the_boot_runlevel_is_satisfied() {
    let r = Root::new();
    r.script("udev", &["Required-Start:"])
        .script("x", &["Required-Start: udev"])
        .link("S", 2, "udev")
        .link("2", 1, "x");
    let g = r.graph(Runlevel::Num(2));
    assert!(g.diagnostics.is_empty(), "{:?}", g.diagnostics);
    assert_eq!(g.edges.len(), 0);
    let g = r.graph(Runlevel::S);
    assert_eq!(names(&g, &g.order()), ["udev"]);
}

#[test]
fn start_before_is_a_reversed_edge() {
    let r = Root::new();
    r.script("late", &["Required-Start:"])
        .script(
            "early",
            &["Required-Start:", "X-Start-Before: late missing"],
        )
        .link("2", 1, "late")
        .link("2", 1, "early");
    let g = r.graph(Runlevel::Num(2));
    let e = edge(&g, "early", "late").unwrap();
    assert_eq!(
        (e.kind(), e.origins[0].line),
        (EdgeKind::StartBefore, Some(5))
    );
    assert!(
        g.diagnostics.is_empty(),
        "X-Start-Before of a missing script is silent"
    );
    assert_eq!(names(&g, &g.order()), ["early", "late"]);
}

#[test]
fn all_goes_last_except_before_its_own_dependents() {
    let r = Root::new();
    r.script("a", &["Required-Start:"])
        .script("b", &["Required-Start: a"])
        .script("rc.local", &["Required-Start: $all"])
        .script("after", &["Required-Start: rc.local"])
        .link("2", 1, "a")
        .link("2", 2, "b")
        .link("2", 3, "rc.local")
        .link("2", 4, "after");
    let g = r.graph(Runlevel::Num(2));
    assert!(g.nodes[g.node("rc.local").unwrap()].all);
    for x in ["a", "b"] {
        let e = edge(&g, x, "rc.local").unwrap();
        assert_eq!(
            (e.kind(), e.origins[0].line, e.origins[0].token.as_str()),
            (EdgeKind::All, Some(4), "$all")
        );
    }
    // `after` waits for rc.local, so $all does not pull it before: no cycle.
    assert!(edge(&g, "after", "rc.local").is_none());
    assert!(g.cycles.is_empty());
    assert_eq!(names(&g, &g.order()), ["a", "b", "rc.local", "after"]);
}

#[test]
fn cycle_is_reported_with_its_path_and_broken_at_the_weakest_edge() {
    let r = Root::new();
    r.script("a", &["Required-Start: c"])
        .script("b", &["Required-Start: a"])
        .script("c", &["Required-Start:", "Should-Start: b"])
        .script("d", &["Required-Start: c"])
        .link("2", 1, "a")
        .link("2", 1, "b")
        .link("2", 1, "c")
        .link("2", 1, "d");
    let g = r.graph(Runlevel::Num(2));
    assert_eq!(g.cycles.len(), 1);
    let c = &g.cycles[0];
    assert_eq!(names(&g, &c.path), ["a", "b", "c", "a"]);
    let removed = &g.edges[c.removed];
    assert_eq!(
        (
            g.nodes[removed.from].name.as_str(),
            g.nodes[removed.to].name.as_str()
        ),
        ("b", "c")
    );
    assert!(removed.broken);
    let d = g
        .diagnostics
        .iter()
        .find(|d| d.message.contains("cycle"))
        .unwrap()
        .to_string();
    assert_eq!(
        d,
        "etc/init.d/c:5: dependency cycle a -> b -> c -> a in runlevel 2: broken by dropping b -> c (should, b): expected no cycle"
    );
    assert_eq!(names(&g, &g.order()), ["c", "a", "b", "d"]);
    // Deterministic: the same result every time.
    let again = r.graph(Runlevel::Num(2));
    assert_eq!(again.cycles, g.cycles);
}

#[test]
fn all_required_cycle_breaks_first_edge_in_path_order() {
    let r = Root::new();
    r.script("x", &["Required-Start: y"])
        .script("y", &["Required-Start: x"])
        .link("S", 1, "x")
        .link("S", 1, "y");
    let g = r.graph(Runlevel::S);
    assert_eq!(names(&g, &g.cycles[0].path), ["x", "y", "x"]);
    let e = &g.edges[g.cycles[0].removed];
    assert_eq!((e.from, e.to), (g.node("x").unwrap(), g.node("y").unwrap()));
    assert_eq!(g.order().len(), 2);
}

#[test]
fn script_without_header_follows_its_link_number() {
    let r = Root::new();
    r.script("a", &["Required-Start:"])
        .script("b", &["Required-Start:"])
        .script("c", &["Required-Start:"])
        .write("etc/init.d/old", "#!/bin/sh\necho old\n")
        .link("2", 1, "a")
        .link("2", 2, "b")
        .link("2", 2, "c")
        .link("2", 3, "old");
    let g = r.graph(Runlevel::Num(2));
    for x in ["b", "c"] {
        let e = edge(&g, x, "old").unwrap();
        assert_eq!(
            (e.kind(), e.origins[0].token.as_str()),
            (EdgeKind::LinkOrder, "S02")
        );
    }
    assert!(edge(&g, "a", "old").is_none());
    let sys = System::load(r.path()).unwrap();
    assert!(sys
        .diagnostics
        .iter()
        .any(|d| d.file == Path::new("etc/init.d/old") && d.message.contains("no LSB header")));
}

#[test]
fn unknown_provider_and_facility_are_reported_with_line() {
    let r = Root::new();
    r.script("a", &["Required-Start: $nosuch nobody +maybe"])
        .link("S", 1, "a");
    let g = r.graph(Runlevel::S);
    let shown: Vec<String> = g.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(shown[0].starts_with("etc/init.d/a:4: unknown facility $nosuch"));
    assert!(shown[1]
        .starts_with("etc/init.d/a:4: Required-Start names nobody, which no script provides"));
}

#[test]
fn interactive_marks_and_critical_path_priorities() {
    let r = Root::new();
    r.write("etc/insserv.conf", "<interactive> ask\n")
        .script("base", &["Required-Start:"])
        .script("long1", &["Required-Start: base"])
        .script("long2", &["Required-Start: long1"])
        .script("short", &["Required-Start: base"])
        .script("ask", &["Required-Start: base"])
        .link("2", 1, "base")
        .link("2", 2, "long1")
        .link("2", 3, "long2")
        .link("2", 2, "short")
        .link("2", 2, "ask");
    let g = r.graph(Runlevel::Num(2));
    let id = |n: &str| g.node(n).unwrap();
    assert!(g.nodes[id("ask")].interactive);
    let prio = g.critical_path(&vec![1; g.nodes.len()]);
    assert_eq!(prio[id("base")], 3);
    assert_eq!(prio[id("long1")], 2);
}

#[test]
fn levels_group_what_can_run_together() {
    let r = Root::new();
    r.script("a", &["Required-Start:"])
        .script("b", &["Required-Start: a"])
        .script("c", &["Required-Start: a"])
        .script("d", &["Required-Start: b c"])
        .link("S", 1, "a")
        .link("S", 2, "b")
        .link("S", 2, "c")
        .link("S", 3, "d");
    let g = r.graph(Runlevel::S);
    let lv = g.levels();
    let by: Vec<(String, u32)> = g
        .nodes
        .iter()
        .zip(lv)
        .map(|(n, l)| (n.name.clone(), l))
        .collect();
    assert_eq!(
        by,
        [
            ("a".into(), 1),
            ("b".into(), 2),
            ("c".into(), 2),
            ("d".into(), 3)
        ]
    );
}

#[test]
fn system_problems_are_diagnostics_with_file_and_line() {
    let r = Root::new();
    r.script("a", &["Required-Start:"])
        .write(
            "etc/init.d/b",
            "#!/bin/sh\n### BEGIN INIT INFO\n# Provides: a b\n# Required-Start:\n### END INIT INFO\n",
        )
        .write("etc/init.d/c", "#!/bin/sh\n### BEGIN INIT INFO\n# Provides: c\n")
        .write("etc/init.d/a.dpkg-old", "not a script")
        .write("etc/init.d/README", "not a script")
        .link("2", 1, "a")
        .link("2", 2, "gone");
    let sys = System::load(r.path()).unwrap();
    let names: Vec<&str> = sys.scripts.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["a", "b", "c"],
        "leftovers and README are not scripts"
    );
    let shown: Vec<String> = sys.diagnostics.iter().map(|d| d.to_string()).collect();
    let has = |prefix: &str| shown.iter().any(|s| s.starts_with(prefix));
    assert!(
        has("etc/init.d/b:3: a is already provided by a: expected each name provided once"),
        "{shown:?}"
    );
    assert!(
        has("etc/init.d/c:2: '### BEGIN INIT INFO' without '### END INIT INFO'"),
        "{shown:?}"
    );
    assert!(has("etc/insserv.conf: cannot read"), "{shown:?}");
    assert!(
        has("etc/rc2.d/S02gone: start link to \"gone\", which is not a script"),
        "{shown:?}"
    );
    // b still provides b; c has no usable header and provides its own name.
    assert_eq!(sys.providers["a"], 0);
    assert_eq!(sys.providers["b"], 1);
    assert!(sys.scripts[2].header.is_none());
    assert_eq!(sys.providers["c"], 2);
    assert_eq!(sys.enabled(Runlevel::Num(2)), vec![0]);
}

#[test]
fn missing_init_d_is_an_error_naming_the_path() {
    let e = System::load(Path::new("/nonexistent-bootprint-root")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent-bootprint-root/etc/init.d: "),
        "{e}"
    );
    // A missing root is the I/O kind, naming the directory that could not be read.
    assert_eq!(e.kind(), rc::ErrorKind::Io);
    assert_eq!(
        e.path(),
        Some(Path::new("/nonexistent-bootprint-root/etc/init.d"))
    );
}

#[test]
fn runlevel_names() {
    assert_eq!(Runlevel::parse("S"), Some(Runlevel::S));
    assert_eq!(Runlevel::parse("s"), Some(Runlevel::S));
    assert_eq!(Runlevel::parse("6"), Some(Runlevel::Num(6)));
    assert_eq!(Runlevel::parse("7"), None);
    assert_eq!(Runlevel::Num(3).dir(), Path::new("etc/rc3.d"));
}

/// A header naming 200k dependencies (a generated or hostile script) must not make the
/// graph quadratic: before, each origin was checked against every earlier one of its edge
/// (`Vec::contains`): this test had not finished after 15 minutes in a debug build.
#[test]
fn a_header_with_200k_dependencies_builds_in_near_linear_time() {
    const N: usize = 200_000;
    let r = Root::new();
    let names: Vec<String> = (0..N).map(|i| format!("n{i}")).collect();
    let list = names.join(" ");
    // Each name twice: the repetition is one origin, not two.
    let requires = format!("Required-Start: {list} {list} gone");
    r.write(
        "etc/init.d/prov",
        &format!("### BEGIN INIT INFO\n# Provides: prov {list}\n### END INIT INFO\n"),
    )
    .script("user", &[requires.as_str()])
    .link("2", 1, "prov")
    .link("2", 2, "user");
    let t0 = cpu_time();
    let sys = System::load(r.path()).unwrap();
    let g = sys.graph(Runlevel::Num(2));
    let took = cpu_time() - t0;
    eprintln!("graph of 200k dependencies: {took:?} of CPU");
    let e = edge(&g, "prov", "user").expect("edge prov -> user");
    assert_eq!(e.origins.len(), N, "one origin per distinct name");
    assert_eq!(e.origins[0].token, "n0");
    assert_eq!(e.origins[N - 1].token, format!("n{}", N - 1));
    assert_eq!(
        g.order(),
        [g.node("prov").unwrap(), g.node("user").unwrap()]
    );
    let missing: Vec<_> = g
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("gone"))
        .collect();
    assert_eq!(missing.len(), 1, "{missing:?}");
    // CPU time, not wall time: the test machines are shared. Generous: about 2 s in a
    // debug build once near-linear.
    assert!(
        took < std::time::Duration::from_secs(10),
        "took {took:?} of CPU"
    );
}

/// This thread's CPU time.
fn cpu_time() -> std::time::Duration {
    std::time::Duration::from_nanos(sys::thread_cpu_ns())
}
