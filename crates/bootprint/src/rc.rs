//! `bootprint rc graph [--root DIR] [--runlevel N] [--json|--dot]`: the start graph of the
//! init scripts of a system and the order bootprint would start them in, every edge with
//! the header line it came from; `rc services TRACE`: how bootprint's runner started the
//! services of a recorded boot; `rc login`: the login target the system needs. Reading and
//! planning live in the `rc` crate.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use rc::graph::{Edge, EdgeKind, Graph, Origin};
use rc::system::{Runlevel, System};
use rc::Diagnostic;
use serde_json::{json, Value};

use crate::cli;
use crate::Outcome;

/// Runs `bootprint rc ...`.
pub fn run(cmd: &cli::RcVerb) -> Outcome {
    match &cmd.sub {
        Some(cli::Rc::Graph(a)) => graph(a),
        Some(cli::Rc::Services(a)) => services(a),
        Some(cli::Rc::Login(a)) => login(a),
        // `bootprint rc` alone shows rc's help, as it did before clap.
        None => match cli::parse_from(["bootprint", "rc", "--help"]) {
            Err(e) => {
                let _ = e.print();
                Outcome::Ok
            }
            Ok(_) => Outcome::Ok,
        },
    }
}

/// `bootprint rc graph`.
fn graph(args: &cli::RcGraph) -> Outcome {
    let runlevels = match args.runlevel {
        Some(r) => vec![r],
        None => vec![Runlevel::S, Runlevel::Num(2)],
    };
    let sys = match System::load(&args.root) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(format!("rc graph: {e}")),
    };
    let graphs: Vec<Graph> = runlevels.iter().map(|&r| sys.graph(r)).collect();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = if args.json {
        serde_json::to_writer_pretty(&mut out, &to_json(&sys, &graphs))
            .map_err(std::io::Error::from)
            .and_then(|_| writeln!(out))
    } else if args.dot {
        for d in all_diagnostics(&sys, &graphs) {
            eprintln!("bootprint: rc graph: {d}");
        }
        write_dot(&graphs, &mut out)
    } else {
        write_text(&sys, &graphs, &mut out)
    };
    match written.and_then(|_| out.flush()) {
        Ok(()) => Outcome::Ok,
        // A closed pipe (`| head`) is not a failure worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Outcome::Ok,
        Err(e) => Outcome::Failed(format!("writing the graph: {e}")),
    }
}

fn all_diagnostics<'a>(sys: &'a System, graphs: &'a [Graph]) -> Vec<&'a Diagnostic> {
    let mut v: Vec<&Diagnostic> = sys.diagnostics.iter().collect();
    // A set, not `Vec::contains`: a header with 200k missing names made this quadratic.
    let mut seen: BTreeSet<(&Path, Option<usize>, &str)> = v
        .iter()
        .map(|d| (d.file.as_path(), d.line, d.message.as_str()))
        .collect();
    for g in graphs {
        for d in &g.diagnostics {
            // The same missing dependency shows in several runlevels: say it once.
            if seen.insert((d.file.as_path(), d.line, d.message.as_str())) {
                v.push(d);
            }
        }
    }
    v
}

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

fn write_text(sys: &System, graphs: &[Graph], out: &mut impl Write) -> std::io::Result<()> {
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
    let diags = all_diagnostics(sys, graphs);
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

fn to_json(sys: &System, graphs: &[Graph]) -> Value {
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
        "diagnostics": all_diagnostics(sys, graphs).into_iter().map(diag_json).collect::<Vec<_>>(),
    })
}

fn dot_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn write_dot(graphs: &[Graph], out: &mut impl Write) -> std::io::Result<()> {
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

/// `rc services TRACE [--json]`: the services view of a recorded boot.
fn services(args: &cli::RcServices) -> Outcome {
    let trace = &args.trace;
    let file = if trace.is_dir() {
        trace.join("rc.log")
    } else {
        trace.clone()
    };
    let (view, diags) = match rc::spans::load(&file) {
        Ok(v) => v,
        Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => {
            return Outcome::Failed(format!(
                "rc services: {} does not exist: the boot did not use bootprint's runner \
                 (bootprint.rc=1), or its span log was not copied into the trace",
                file.display()
            ))
        }
        Err(e) => return Outcome::Failed(format!("rc services: {e}")),
    };
    for d in &diags {
        eprintln!("bootprint: rc services: {d}");
    }
    if !args.json {
        print!("{}", rc::spans::render_text(&view));
        return Outcome::Ok;
    }
    let v = services_json(&view);
    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    Outcome::Ok
}

/// The services view as JSON (`rc services --json`, and `services` in `report --json`).
pub fn services_json(view: &rc::spans::Services) -> Value {
    let span = |s: &rc::spans::Span| {
        json!({
            "script": s.script, "action": s.action, "runlevel": s.runlevel,
            "start_s": s.start_ns as f64 / 1e9,
            "end_s": s.end_ns.map(|e| e as f64 / 1e9),
            "duration_s": s.duration_ns() as f64 / 1e9,
            "exit": s.exit, "outcome": s.outcome, "late": s.late,
            "waited_for": s.waited_for,
        })
    };
    json!({
        "spans": view.spans.iter().map(span).collect::<Vec<_>>(),
        "blame": view.blame().iter().map(|s| s.script.clone()).collect::<Vec<_>>(),
        "critical_chain": view.critical_chain().iter().map(|s| s.script.clone()).collect::<Vec<_>>(),
        "reached": view.reached.iter().map(|(rl, ns)| json!({"runlevel": rl, "at_s": *ns as f64 / 1e9})).collect::<Vec<_>>(),
        "late_start": view.late_start.iter().map(|(rl, ns, why)| json!({"runlevel": rl, "at_s": *ns as f64 / 1e9, "reason": why})).collect::<Vec<_>>(),
        "fallbacks": view.fallbacks.iter().map(|(rl, why)| json!({"runlevel": rl, "reason": why})).collect::<Vec<_>>(),
    })
}

/// `rc login [--root DIR] [--json]`: the learned login target with its reasons.
fn login(args: &cli::RcLogin) -> Outcome {
    let root = &args.root;
    if !root.is_dir() {
        return Outcome::Failed(format!(
            "rc login: {} is not a directory: expected the root of a system",
            root.display()
        ));
    }
    let needs = rc::login::learn(root);
    if args.json {
        let v: Vec<Value> = needs
            .iter()
            .map(|n| json!({"name": n.name, "kept": n.kept, "why": n.why}))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"root": root, "login": v})).unwrap_or_default()
        );
        return Outcome::Ok;
    }
    println!(
        "login target of {} (`login = [\"auto\"]` in [rc] of bootprint.toml):",
        root.display()
    );
    for n in &needs {
        let state = if n.kept { "waits for" } else { "left out" };
        println!("  {state:<10} {:<11} {}", n.name, n.why);
    }
    Outcome::Ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn services_of(trace: &Path, json: bool) -> Outcome {
        services(&cli::RcServices {
            trace: trace.to_path_buf(),
            json,
        })
    }

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
        write_text(&sys, &graphs, &mut out).unwrap();
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
        let v = to_json(&sys, &graphs);
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
        write_dot(&graphs, &mut out).unwrap();
        let dot = String::from_utf8(out).unwrap();
        assert!(dot.starts_with("digraph bootprint_rc {"));
        assert!(
            dot.contains(
                "\"S:mountkernfs.sh\" -> \"S:udev\" [label=\"required etc/init.d/udev:4\"];"
            ),
            "{dot}"
        );
    }

    #[test]
    fn services_reads_a_trace_dir_or_file_and_names_what_is_missing() {
        let dir =
            std::env::temp_dir().join(format!("bootprint-rc-services-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = services_of(&dir, false);
        assert!(
            matches!(&missing, Outcome::Failed(m) if m.contains("rc.log does not exist")),
            "no rc.log in the trace is a failure naming the file"
        );
        std::fs::write(
            dir.join("rc.log"),
            "# bootprint rc 1\n1000 rc_start script=a action=start runlevel=2 late=0 waited_for=\n\
             2000 rc_end script=a action=start runlevel=2 late=0 exit=0 outcome=ok timed_out=0\n\
             2000 rc_reached runlevel=2 action=start\n",
        )
        .unwrap();
        assert!(matches!(services_of(&dir, false), Outcome::Ok));
        assert!(matches!(
            services_of(&dir.join("rc.log"), true),
            Outcome::Ok
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `rc graph` on a header naming 200k scripts nobody provides, started in S and in 2:
    /// the same 200k diagnostics in both runlevels, each said once. Before, each was checked against every earlier
    /// one (`Vec::contains`): quadratic, far beyond the bound below.
    #[test]
    fn graph_of_a_header_with_200k_missing_dependencies_is_near_linear() {
        const N: usize = 200_000;
        let root =
            std::env::temp_dir().join(format!("bootprint-rc-graph-huge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
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
        let sys = System::load(&root).unwrap();
        let graphs = vec![sys.graph(Runlevel::S), sys.graph(Runlevel::Num(2))];
        let mut out = Vec::new();
        write_text(&sys, &graphs, &mut out).unwrap();
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
        let v = to_json(&sys, &graphs);
        assert_eq!(v["diagnostics"].as_array().unwrap().len(), total);
        let _ = std::fs::remove_dir_all(&root);
        // CPU time (the test machines are shared); generous: under 2 s in a debug build
        // once near-linear.
        assert!(
            took < std::time::Duration::from_secs(10),
            "took {took:?} of CPU"
        );
    }

    /// This thread's CPU time.
    fn cpu_time() -> std::time::Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a valid, writable timespec; clock_gettime only writes it.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
}
