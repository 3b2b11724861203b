//! `bootprint preload status|show|relearn|on|off|run|desktop-time`: what preload knows about
//! this machine (its switch, its model, its history of logins with and without prefetch, its
//! own verdict), the admin's levers (as `bootprint readahead ...`), and the daemon's entry
//! (`run`, started by the session hook: docs/preload.md). The work is the `preload` crate's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use preload::config::Config;
use preload::model::Model;
use preload::run::{self, RunOptions};
use preload::PRELOAD;
use readahead::state::{State, Verdict};
use record::config::CONFIG_FILE;
use render::preload_status::{self, ModelFound};

use crate::cli;
use crate::output::{print, write_json};
use crate::Outcome;

/// Runs `bootprint preload ...`.
pub fn run(cmd: &cli::Preload) -> Outcome {
    let root = match cmd {
        cli::Preload::Status(a) => a.root.clone(),
        cli::Preload::Show(a) => a.root.clone(),
        cli::Preload::Relearn(a) | cli::Preload::On(a) | cli::Preload::Off(a) => a.root.clone(),
        cli::Preload::DesktopTime(a) => a.root.clone(),
        cli::Preload::Run(_) => PathBuf::from("/"),
    };
    let sys = match System::load(&root) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(e),
    };
    match cmd {
        cli::Preload::Status(a) => status(&sys, a.json),
        cli::Preload::Show(a) => show(&sys, a.model.as_deref(), a.json),
        cli::Preload::Relearn(_) => relearn(&sys).into(),
        cli::Preload::On(_) => switch(&sys, true).into(),
        cli::Preload::Off(_) => switch(&sys, false).into(),
        cli::Preload::Run(a) => daemon(&sys, a),
        cli::Preload::DesktopTime(a) => desktop_time(&sys, a.seconds).into(),
    }
}

/// bootprint.toml and preload's settings from it, with its paths under `--root`.
struct System {
    config_file: PathBuf,
    config: Config,
}

impl System {
    fn load(root: &Path) -> Result<System, String> {
        let config_file = run::under(root, Path::new(CONFIG_FILE));
        let mut config = Config::load(&config_file)?;
        config.dir = run::under(root, &config.dir);
        Ok(System {
            config_file,
            config,
        })
    }
}

fn status(sys: &System, as_json: bool) -> Outcome {
    let c = &sys.config;
    let state = match State::load_for(&c.state_path(), &PRELOAD) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let model = Model::load(&c.model_path());
    let error = model.as_ref().err().map(ToString::to_string);
    let found = match (&model, &error) {
        (Ok(Some(m)), _) => ModelFound::Valid(m),
        (Ok(None), _) => ModelFound::None,
        (Err(_), Some(e)) => ModelFound::Unusable(e),
        (Err(_), None) => ModelFound::None,
    };
    let valid = match found {
        ModelFound::Valid(m) => Some(m),
        _ => None,
    };
    let status = preload_status::Status {
        enabled: c.enabled,
        config_file: &sys.config_file,
        state_file: &c.state_path(),
        state: &state,
        judgement: &state.judge(),
        model_path: &c.model_path(),
        model: found,
        budget_bytes: run::budget_now(c, None),
        next_login: run::next_login(c, &state, valid),
    };
    print("the status", |out| {
        if as_json {
            write_json(out, &preload_status::json(&status))
        } else {
            preload_status::text(out, &status)
        }
    })
}

fn show(sys: &System, model: Option<&Path>, as_json: bool) -> Outcome {
    let path = model.map_or_else(|| sys.config.model_path(), Path::to_path_buf);
    let m = match Model::load(&path) {
        Ok(Some(m)) => m,
        Ok(None) => {
            return Outcome::Failed(format!(
                "{}: no model yet (the next login with preload on learns one)",
                path.display()
            ))
        }
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    print("the model", |out| {
        if as_json {
            write_json(out, &preload::model_json(&m))
        } else {
            preload_status::model_text(out, &path, &m, run::budget_now(&sys.config, None))
        }
    })
}

fn relearn(sys: &System) -> Result<(), String> {
    let path = sys.config.model_path();
    match run::relearn(&sys.config) {
        Ok(true) => println!(
            "removed {}: the next login with preload on learns a new model",
            path.display()
        ),
        Ok(false) => println!(
            "no model at {}: the next login with preload on learns one",
            path.display()
        ),
        Err(e) => return Err(format!("cannot remove {}: {e}", path.display())),
    }
    Ok(())
}

fn switch(sys: &System, on: bool) -> Result<(), String> {
    let file = &sys.config_file;
    crate::lever::set_switch(file, "preload", "enabled", on)?;
    println!(
        "preload {} in {}",
        if on { "on" } else { "off" },
        file.display()
    );
    if on {
        let path = sys.config.state_path();
        let state = State::load_for(&path, &PRELOAD).unwrap_or_default();
        if let Verdict::Off { reason, .. } = &state.verdict {
            println!("cleared its own verdict ({reason}) and its history: it judges itself anew");
            State::default()
                .save_for(&path, &PRELOAD)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
    }
    Ok(())
}

fn daemon(sys: &System, a: &cli::PreloadRun) -> Outcome {
    let mut config = sys.config.clone();
    if let Some(t) = a.time_limit {
        config.window = Duration::from_secs_f64(t);
    }
    let opts = RunOptions::default();
    let r = if a.prefetch {
        run::greeter(&config, &opts)
    } else {
        run::session(&config, &opts, a.learn)
    };
    let report = match r {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(format!("preload: {e}")),
    };
    print("what it did", |out| {
        if a.json {
            write_json(out, &preload_status::run_json(&report))
        } else {
            preload_status::run_text(out, &report)
        }
    })
}

fn desktop_time(sys: &System, secs: f64) -> Result<(), String> {
    match run::desktop_time(&sys.config, secs, None)? {
        run::Timed::SwitchedOff(reason) => println!("preload switched itself off: {reason}"),
        run::Timed::Recorded => println!(
            "login recorded: {secs:.3} s to the desktop in {}",
            sys.config.state_path().display()
        ),
        run::Timed::NoLogin => println!("no login to give it to"),
    }
    Ok(())
}
