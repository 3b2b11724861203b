//! `bootprint-fuzz`: runs the fuzz targets (see `docs/fuzzing.md`). Only parses arguments
//! and dispatches; the runner is `bootprint_fuzz::runner`.

use std::path::PathBuf;
use std::process::ExitCode;

use bootprint_fuzz::runner::{self, ChildArgs, Options};

const HELP: &str = "\
usage: bootprint-fuzz [--target NAME|all]... [--inputs N] [--seed S] [--max-ms MS]
                      [--mem-mb MB] [--max-len BYTES] [--jobs N] [--crash-dir DIR]
                      [--max-failures N]
       bootprint-fuzz --target NAME --input FILE...
       bootprint-fuzz --list
       bootprint-fuzz [--target NAME]... --write-seeds DIR

Runs each target on N inputs (its seeds, then inputs generated from seed S), each target
in a child process whose address space is capped at MB MiB; an input that panics, aborts,
overflows the stack, exhausts the cap or takes longer than MS ms is a failure: it is saved
under DIR (default fuzz/crashes) with the command that replays it. Exit code 1 on any
failure.

--target NAME   a target (repeatable; default all); see --list
--inputs N      inputs per target, seeds included (default 10000)
--seed S        the run's seed; the same seed makes the same inputs (default 1)
--max-ms MS     time limit per input (default 1000)
--mem-mb MB     address-space cap of a child (default 2048; 0: none)
--max-len B     largest generated input (default 1048576)
--jobs N        children at once (default: the number of CPUs)
--input FILE    run the target on FILE in this process (replays a saved failure)
--list          list the targets and the parsers they reach
--write-seeds DIR
                write each target's seeds to DIR/NAME/ (a corpus for libFuzzer)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match dispatch(&args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("bootprint-fuzz: {e}\n{HELP}");
            ExitCode::from(2)
        }
    }
}

fn dispatch(args: &[String]) -> Result<u8, String> {
    let mut opts = Options::default();
    let mut inputs: Vec<PathBuf> = Vec::new();
    let mut child: Option<String> = None;
    let (mut from, mut to) = (0u64, 0u64);
    let mut list = false;
    let mut write_seeds: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = || -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        let num = |v: String| -> Result<u64, String> {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: expected a number, found {v:?}"))
        };
        match flag {
            "-h" | "--help" => {
                print!("{HELP}");
                return Ok(0);
            }
            "--list" => list = true,
            "--target" => {
                let v = value()?;
                if v != "all" {
                    opts.targets.push(v);
                }
            }
            "--inputs" => opts.inputs = num(value()?)?,
            "--seed" => opts.seed = num(value()?)?,
            "--max-ms" => opts.max_ms = num(value()?)?,
            "--mem-mb" => opts.mem_mb = num(value()?)?,
            "--max-len" => opts.max_len = num(value()?)? as usize,
            "--jobs" => opts.jobs = num(value()?)?.max(1) as usize,
            "--crash-dir" => opts.crash_dir = PathBuf::from(value()?),
            "--max-failures" => opts.max_failures = num(value()?)?,
            "--input" => inputs.push(PathBuf::from(value()?)),
            "--write-seeds" => write_seeds = Some(PathBuf::from(value()?)),
            "--child" => child = Some(value()?),
            "--from" => from = num(value()?)?,
            "--to" => to = num(value()?)?,
            _ => return Err(format!("unknown argument {a:?}")),
        }
    }
    if let Some(target) = child {
        let code = runner::child(&ChildArgs {
            target,
            seed: opts.seed,
            from,
            to,
            max_ms: opts.max_ms,
            mem_mb: opts.mem_mb,
            max_len: opts.max_len,
            max_failures: opts.max_failures,
        });
        return Ok(code as u8);
    }
    if list {
        for t in bootprint_fuzz::all() {
            println!("{:<28} {}", t.name, t.about);
        }
        return Ok(0);
    }
    for name in &opts.targets {
        if bootprint_fuzz::target(name).is_none() {
            return Err(format!("unknown target {name:?} (see --list)"));
        }
    }
    if let Some(dir) = write_seeds {
        for t in bootprint_fuzz::all() {
            if !opts.targets.is_empty() && !opts.targets.iter().any(|n| n == t.name) {
                continue;
            }
            let d = dir.join(t.name);
            std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
            for (i, s) in (t.seeds)().iter().enumerate() {
                let p = d.join(format!("seed-{i:03}"));
                std::fs::write(&p, s).map_err(|e| format!("{}: {e}", p.display()))?;
            }
        }
        return Ok(0);
    }
    if !inputs.is_empty() {
        let [name] = opts.targets.as_slice() else {
            return Err("--input needs exactly one --target".into());
        };
        let t = bootprint_fuzz::target(name).expect("checked above");
        for path in &inputs {
            let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let took = runner::replay(&t, &bytes);
            println!("{name} {}: ok in {} ms", path.display(), took.as_millis());
        }
        return Ok(0);
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let results = runner::run(&opts, &exe);
    let failures = runner::report(&results, &mut std::io::stdout());
    Ok(if failures > 0 { 1 } else { 0 })
}
