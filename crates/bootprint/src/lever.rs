//! `bootprint modules status|on|off`: the module loader's switch, its history of boots with
//! and without it, and its own verdict (docs/modules.md, "Proving itself"). Readahead's
//! equivalent is `bootprint readahead status|on|off`, which also shows its pack.

use std::path::{Path, PathBuf};

use readahead::state::{BootKind, State, Verdict, MODULES};
use record::config::{Config, CONFIG_FILE};
use serde_json::json;

use crate::Outcome;

/// `bootprint modules status`.
pub fn status(root: &Path, as_json: bool) -> Outcome {
    let r = load(root).and_then(|(file, config)| print_status(root, &file, &config, as_json));
    match r {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed(e),
    }
}

/// `bootprint modules on|off`.
pub fn switch(root: &Path, on: bool) -> Outcome {
    let r = load(root).and_then(|(file, config)| flip(root, &file, &config, on));
    match r {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed(e),
    }
}

fn under(root: &Path, p: &Path) -> PathBuf {
    root.join(p.strip_prefix("/").unwrap_or(p))
}

/// bootprint.toml under `root` (and, for the running system, the kernel command line).
fn load(root: &Path) -> Result<(PathBuf, Config), String> {
    let file = under(root, Path::new(CONFIG_FILE));
    let mut config = Config::default();
    match std::fs::read_to_string(&file) {
        Ok(text) => config
            .apply_toml(&text, &file.display().to_string())
            .map_err(|e| e.to_string())?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    }
    if root == Path::new("/") {
        let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
        let _ = config.apply_cmdline(&cmdline);
    }
    Ok((file, config))
}

fn print_status(root: &Path, file: &Path, config: &Config, as_json: bool) -> Result<(), String> {
    let path = under(root, &config.modules_state);
    let state = State::load_for(&path, &MODULES).map_err(|e| e.to_string())?;
    let judged = state.judge();
    let next = match (&state.verdict, config.modules) {
        (_, false) => "off (the switch)",
        (Verdict::Off { .. }, true) => "off (its own verdict)",
        (Verdict::Auto, true) => match state.next_kind(config.modules_compare_every) {
            BootKind::Control => "without the loader, to compare",
            _ => "with the loader",
        },
    };
    if as_json {
        let v = json!({
            "enabled": config.modules,
            "config_file": file.display().to_string(),
            "state_file": path.display().to_string(),
            "verdict": match &state.verdict {
                Verdict::Auto => json!({"state": "auto"}),
                Verdict::Off { unix_s, reason } => json!({"state": "off", "unix_s": unix_s, "reason": reason}),
            },
            "judgement": judged.describe_for(&MODULES),
            "ratio": judged.ratio(),
            "next_boot": next,
            "boots": state.boots.iter().map(|b| json!({
                "unix_s": b.unix_s, "kind": b.kind.word_for(&MODULES),
                "login_s": b.login_s, "done_s": b.done_s,
            })).collect::<Vec<_>>(),
        });
        println!("{v:#}");
        return Ok(());
    }
    println!(
        "module loader: {} ({})",
        if config.modules { "on" } else { "off" },
        file.display()
    );
    match &state.verdict {
        Verdict::Auto => println!("verdict: auto (it judges itself)"),
        Verdict::Off { reason, .. } => println!("verdict: off by itself: {reason}"),
    }
    println!("judgement: {}", judged.describe_for(&MODULES));
    println!("next boot: {next}");
    println!("history ({}):", path.display());
    let secs = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
    for b in &state.boots {
        println!(
            "  {:>12}  {:<8} login {:>8} s  done {:>8} s",
            b.unix_s,
            b.kind.word_for(&MODULES),
            secs(b.login_s),
            secs(b.done_s)
        );
    }
    Ok(())
}

/// Sets `key` under `[section]` of bootprint.toml (`file`) to `on`, the rest of the file
/// kept byte for byte ([`crate::config_edit`]); a file that does not parse is left
/// unchanged. `bootprint readahead on|off` too.
pub(crate) fn set_switch(file: &Path, section: &str, key: &str, on: bool) -> Result<(), String> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let new = crate::config_edit::set_bool(&text, &file.display().to_string(), section, key, on)
        .map_err(|e| format!("{e}; nothing changed"))?;
    sys::write_atomic(file, new.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", file.display()))
}

fn flip(root: &Path, file: &Path, config: &Config, on: bool) -> Result<(), String> {
    set_switch(file, "record", "modules", on)?;
    println!(
        "module loader {} in {}",
        if on { "on" } else { "off" },
        file.display()
    );
    if on {
        let path = under(root, &config.modules_state);
        let state = State::load_for(&path, &MODULES).unwrap_or_default();
        if let Verdict::Off { reason, .. } = &state.verdict {
            println!("cleared its own verdict ({reason}) and its history: it judges itself anew");
            State::default()
                .save_for(&path, &MODULES)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
    }
    Ok(())
}
