//! `bootprint rc graph`: the start graph of a system's init scripts (the `rc` crate's
//! `System` and `Graph`) as text, JSON and Graphviz DOT.

use std::io::{self, Write};

use rc::graph::{Edge, EdgeKind, Graph, Origin};
use rc::system::System;
use rc::Diagnostic;
use serde_json::{json, Value};

/// `etc/init.d/web:5 Required-Start: $remote_fs [$remote_fs: etc/insserv.conf:22 > $local_fs: etc/insserv.conf:4]`
fn explain(o: &Origin) -> String {
    let mut s = o.file.display().to_string();
    if let Some(l) = o.line {
        s.push_str(&format!(":{l}"));
    }
    match o.keyword {
        Some(k) => s.push_str(&format!(" {}: {}", k.name(), o.token)),
        None => s.push_str(&format!(" (no header; its link follows {})", o.token)),
    }
    if !o.via.is_empty() {
        let steps: Vec<String> = o
            .via
            .iter()
            .map(|v| format!("{}: {}:{}", v.facility, v.file.display(), v.line))
            .collect();
        s.push_str(&format!(" [{}]", steps.join(" > ")));
    }
    s
}

/// The graphs as text: each runlevel's start order, every edge with the header line it came
/// from, the cycles broken, then every diagnostic once.
pub fn text(out: &mut impl Write, sys: &System, graphs: &[Graph]) -> io::Result<()> {
    writeln!(
        out,
        "root {}: {} scripts in etc/init.d",
        sys.root.display(),
        sys.scripts.len()
    )?;
    for g in graphs {
        let order = g.order();
        let levels = g.levels();
        let active = g.active_edges().count();
        writeln!(
            out,
            "\nrunlevel {}: {} scripts, {} edges, {} cycles broken",
            g.runlevel.label(),
            g.nodes.len(),
            active,
            g.cycles.len()
        )?;
        writeln!(out, "  #  level  script (after: kind, from header line)")?;
        // Incoming edges per node, built once (a scan of all edges per node was quadratic).
        let mut incoming_of: Vec<Vec<&Edge>> = vec![Vec::new(); g.nodes.len()];
        for e in &g.edges {
            incoming_of[e.to].push(e);
        }
        for (pos, &id) in order.iter().enumerate() {
            let n = &g.nodes[id];
            let mut flags = String::new();
            if n.interactive {
                flags.push_str("  [interactive: runs alone]");
            }
            if !n.lsb {
                flags.push_str("  [no LSB header]");
            }
            writeln!(
                out,
                "{:>3}  {:>5}  {}{}",
                pos + 1,
                levels[id],
                n.name,
                flags
            )?;
            let incoming = std::mem::take(&mut incoming_of[id]);
            let (all, other): (Vec<&Edge>, Vec<&Edge>) = incoming
                .into_iter()
                .partition(|e| e.kind() == EdgeKind::All && !e.broken);
            for e in other {
                let mark = if e.broken { "  DROPPED (cycle)" } else { "" };
                writeln!(
                    out,
                    "              after {} ({}: {}){}",
                    g.nodes[e.from].name,
                    e.kind().name(),
                    explain(&e.origins[0]),
                    mark
                )?;
                for o in &e.origins[1..] {
                    writeln!(out, "                also {}", explain(o))?;
                }
            }
            if let Some(e) = all.first() {
                writeln!(
                    out,
                    "              after all {} other scripts not waiting for it (all: {})",
                    all.len(),
                    explain(&e.origins[0])
                )?;
            }
        }
        for c in &g.cycles {
            let names: Vec<&str> = c.path.iter().map(|&i| g.nodes[i].name.as_str()).collect();
            let e = &g.edges[c.removed];
            writeln!(
                out,
                "  cycle: {}; dropped {} -> {} ({})",
                names.join(" -> "),
                g.nodes[e.from].name,
                g.nodes[e.to].name,
                explain(&e.origins[0])
            )?;
        }
    }
    let diags = sys.diagnostics_with(graphs);
    if !diags.is_empty() {
        writeln!(out, "\n{} diagnostics:", diags.len())?;
        for d in diags {
            writeln!(out, "  {d}")?;
        }
    }
    Ok(())
}

fn diag_json(d: &Diagnostic) -> Value {
    json!({"file": d.file.display().to_string(), "line": d.line, "message": d.message})
}

fn origin_json(o: &Origin) -> Value {
    json!({
        "kind": o.kind.name(),
        "keyword": o.keyword.map(|k| k.name()),
        "file": o.file.display().to_string(),
        "line": o.line,
        "token": o.token,
        "via": o.via.iter().map(|v| json!({
            "facility": v.facility, "file": v.file.display().to_string(), "line": v.line
        })).collect::<Vec<_>>(),
    })
}

/// The graphs as JSON (`rc graph --json`; keys: docs/rc.md).
pub fn json(sys: &System, graphs: &[Graph]) -> Value {
    let runlevels: Vec<Value> = graphs
        .iter()
        .map(|g| {
            let order = g.order();
            let levels = g.levels();
            let name = |i: usize| g.nodes[i].name.clone();
            let mut position = vec![0; g.nodes.len()];
            for (p, &id) in order.iter().enumerate() {
                position[id] = p + 1;
            }
            json!({
                "runlevel": g.runlevel.label(),
                "order": order.iter().map(|&i| name(i)).collect::<Vec<_>>(),
                "scripts": g.nodes.iter().enumerate().map(|(i, n)| json!({
                    "name": n.name,
                    "path": sys.scripts[n.script].path.display().to_string(),
                    "position": position[i],
                    "level": levels[i],
                    "link": n.seq,
                    "interactive": n.interactive,
                    "all": n.all,
                    "lsb": n.lsb,
                })).collect::<Vec<_>>(),
                "edges": g.edges.iter().map(|e| json!({
                    "from": name(e.from),
                    "to": name(e.to),
                    "kind": e.kind().name(),
                    "broken": e.broken,
                    "origins": e.origins.iter().map(origin_json).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "cycles": g.cycles.iter().map(|c| json!({
                    "path": c.path.iter().map(|&i| name(i)).collect::<Vec<_>>(),
                    "removed": {"from": name(g.edges[c.removed].from), "to": name(g.edges[c.removed].to)},
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "root": sys.root.display().to_string(),
        "runlevels": runlevels,
        "diagnostics": sys.diagnostics_with(graphs).into_iter().map(diag_json).collect::<Vec<_>>(),
    })
}

fn dot_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The graphs in Graphviz's DOT language, one cluster per runlevel.
pub fn dot(out: &mut impl Write, graphs: &[Graph]) -> io::Result<()> {
    writeln!(out, "digraph bootprint_rc {{")?;
    writeln!(out, "  rankdir=LR;\n  node [shape=box];")?;
    for g in graphs {
        let rl = g.runlevel.label();
        let id = |i: usize| dot_quote(&format!("{rl}:{}", g.nodes[i].name));
        writeln!(out, "  subgraph {} {{", dot_quote(&format!("cluster_{rl}")))?;
        writeln!(out, "    label={};", dot_quote(&format!("runlevel {rl}")))?;
        for (i, n) in g.nodes.iter().enumerate() {
            let style = if n.interactive { ", style=bold" } else { "" };
            writeln!(out, "    {} [label={}{style}];", id(i), dot_quote(&n.name))?;
        }
        for e in &g.edges {
            let o = &e.origins[0];
            let label = match o.line {
                Some(l) => format!("{} {}:{}", e.kind().name(), o.file.display(), l),
                None => format!("{} {}", e.kind().name(), o.file.display()),
            };
            let style = if e.broken {
                ", style=dashed, color=red"
            } else if e.kind() == EdgeKind::All {
                ", color=gray"
            } else {
                ""
            };
            writeln!(
                out,
                "    {} -> {} [label={}{style}];",
                id(e.from),
                id(e.to),
                dot_quote(&label)
            )?;
        }
        writeln!(out, "  }}")?;
    }
    writeln!(out, "}}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rc::system::Runlevel;

    fn fixture() -> System {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/initscripts/debian-bookworm");
        System::load(&root).unwrap()
    }

    #[test]
    fn text_explains_each_edge_with_its_line() {
        let sys = fixture();
        let graphs = vec![sys.graph(Runlevel::S)];
        let mut out = Vec::new();
        text(&mut out, &sys, &graphs).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("runlevel S: 36 scripts"), "{text}");
        assert!(text.contains(
            "  1      1  mountkernfs.sh\n  2      2  udev  [interactive: runs alone]\n              after mountkernfs.sh (required: etc/init.d/udev:4 Required-Start: mountkernfs)\n"
        ), "{text}");
        assert!(text.contains("after mountall.sh (should: etc/init.d/procps:8 Required-Start: $local_fs [$local_fs: etc/insserv.conf:4])"), "{text}");
    }

    #[test]
    fn json_and_dot_carry_the_same_graph() {
        let sys = fixture();
        let graphs = vec![sys.graph(Runlevel::S), sys.graph(Runlevel::Num(2))];
        let v = json(&sys, &graphs);
        assert_eq!(v["runlevels"][0]["runlevel"], "S");
        assert_eq!(v["runlevels"][0]["order"][0], "mountkernfs.sh");
        assert_eq!(v["runlevels"][1]["scripts"].as_array().unwrap().len(), 51);
        let plymouth = v["runlevels"][1]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["to"] == "plymouth" && e["kind"] == "all")
            .count();
        assert_eq!(plymouth, 47);
        assert_eq!(v["diagnostics"].as_array().unwrap().len(), 0);
        let mut out = Vec::new();
        dot(&mut out, &graphs).unwrap();
        let dot = String::from_utf8(out).unwrap();
        assert!(dot.starts_with("digraph bootprint_rc {"));
        assert!(
            dot.contains(
                "\"S:mountkernfs.sh\" -> \"S:udev\" [label=\"required etc/init.d/udev:4\"];"
            ),
            "{dot}"
        );
    }

    /// `rc graph` on a header naming 200k scripts nobody provides, started in S and in 2:
    /// the same 200k diagnostics in both runlevels, each said once. Before, each was checked against every earlier
    /// one (`Vec::contains`): quadratic, far beyond the bound below.
    #[test]
    fn graph_of_a_header_with_200k_missing_dependencies_is_near_linear() {
        const N: usize = 200_000;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for d in ["etc/init.d", "etc/rcS.d", "etc/rc2.d"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let names: Vec<String> = (0..N).map(|i| format!("n{i}")).collect();
        std::fs::write(
            root.join("etc/init.d/user"),
            format!(
                "### BEGIN INIT INFO\n# Provides: user\n# Required-Start: {}\n### END INIT INFO\n",
                names.join(" ")
            ),
        )
        .unwrap();
        for rl in ["S", "2"] {
            std::os::unix::fs::symlink(
                "../init.d/user",
                root.join(format!("etc/rc{rl}.d/S01user")),
            )
            .unwrap();
        }
        let t0 = cpu_time();
        let sys = System::load(root).unwrap();
        let graphs = vec![sys.graph(Runlevel::S), sys.graph(Runlevel::Num(2))];
        let mut out = Vec::new();
        text(&mut out, &sys, &graphs).unwrap();
        let took = cpu_time() - t0;
        eprintln!("rc graph of 200k missing dependencies: {took:?} of CPU");
        let text = String::from_utf8(out).unwrap();
        let total = sys.diagnostics.len() + N;
        assert!(
            text.contains(&format!("\n{total} diagnostics:\n")),
            "{}",
            &text[..500]
        );
        assert!(text
            .contains("etc/init.d/user:3: Required-Start names n199999, which no script provides"));
        let v = json(&sys, &graphs);
        assert_eq!(v["diagnostics"].as_array().unwrap().len(), total);
        // CPU time (the test machines are shared); generous: under 2 s in a debug build
        // once near-linear.
        assert!(
            took < std::time::Duration::from_secs(10),
            "took {took:?} of CPU"
        );
    }

    /// This thread's CPU time.
    fn cpu_time() -> std::time::Duration {
        std::time::Duration::from_nanos(sys::thread_cpu_ns())
    }
}
