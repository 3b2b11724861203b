//! `bootprint rc graph [--root DIR] [--runlevel N] [--json|--dot]`: the start graph of the
//! init scripts of a system and the order bootprint would start them in, every edge with
//! the header line it came from; `rc services TRACE`: the services of a recorded boot (the
//! same as `bootprint services`); `rc login`: the login target the system needs. Reading and
//! planning live in the `rc` crate.

use rc::graph::Graph;
use rc::system::{Runlevel, System};
use render::rc_graph;
use serde_json::{json, Value};

use crate::cli;
use crate::output::{print, write_json};
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
    if args.dot {
        // DOT has no place for them.
        for d in sys.diagnostics_with(&graphs) {
            eprintln!("bootprint: rc graph: {d}");
        }
    }
    print("the graph", |out| {
        if args.json {
            write_json(out, &rc_graph::json(&sys, &graphs))
        } else if args.dot {
            rc_graph::dot(out, &graphs)
        } else {
            rc_graph::text(out, &sys, &graphs)
        }
    })
}

/// `rc services TRACE [--json]`: the same as `bootprint services` (crate::services).
fn services(args: &cli::RcServices) -> Outcome {
    crate::services::run(args)
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

    fn services_of(trace: &std::path::Path, json: bool) -> Outcome {
        services(&cli::RcServices {
            trace: trace.to_path_buf(),
            json,
            shutdown: false,
        })
    }

    #[test]
    fn services_reads_a_trace_dir_or_file_and_names_what_is_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let missing = services_of(dir, false);
        assert!(
            matches!(&missing, Outcome::Failed(m) if m.contains("rc.log nor")),
            "no rc.log in the trace is a failure naming the file"
        );
        std::fs::write(
            dir.join("rc.log"),
            "# bootprint rc 1\n1000 rc_start script=a action=start runlevel=2 late=0 waited_for=\n\
             2000 rc_end script=a action=start runlevel=2 late=0 exit=0 outcome=ok timed_out=0\n\
             2000 rc_reached runlevel=2 action=start\n",
        )
        .unwrap();
        assert!(matches!(services_of(dir, false), Outcome::Ok));
        assert!(matches!(
            services_of(&dir.join("rc.log"), true),
            Outcome::Ok
        ));
    }
}
