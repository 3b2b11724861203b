//! `bootprint modules status|on|off`: the module loader's switch, its history of boots with
//! and without it, and its own verdict (docs/modules.md, "Proving itself"). Readahead's
//! equivalent is `bootprint readahead status|on|off`, which also shows its pack.

use std::path::{Path, PathBuf};

use readahead::state::{State, Verdict, MODULES};
use record::config::{Config, CONFIG_FILE};
use record::modload;
use render::modules_status;

use crate::output::{print, write_json};
use crate::Outcome;

/// `bootprint modules status`.
pub fn status(root: &Path, as_json: bool) -> Outcome {
    let (file, config) = match load(root) {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(e),
    };
    let state_file = under(root, &config.modules_state);
    let state = match State::load_for(&state_file, &MODULES) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let status = modules_status::Status {
        enabled: config.modules,
        config_file: &file,
        state_file: &state_file,
        state: &state,
        judgement: &state.judge(),
        next_boot: modload::next_boot(&config, &state),
    };
    print("the status", |out| {
        if as_json {
            write_json(out, &modules_status::json(&status))
        } else {
            modules_status::text(out, &status)
        }
    })
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
