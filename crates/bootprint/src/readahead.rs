//! `bootprint readahead status|show|relearn|on|off`: what readahead knows about this machine
//! (its switch, its pack, its history of boots with and without replay, its own verdict), and
//! the admin's levers. Paths come from the same configuration the boot path reads; `--root
//! DIR` looks at another system's files (an image, a test tree).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use readahead::pack::Pack;
use readahead::replay::{self, RelearnLimits, ReplayOutcome};
use readahead::state::{BootKind, State, Verdict};
use record::config::{Config, CONFIG_FILE};
use serde_json::json;

use crate::cli;
use crate::Outcome;

/// Runs `bootprint readahead ...`.
pub fn run(cmd: &cli::Readahead) -> Outcome {
    let root = match cmd {
        cli::Readahead::Status(a) => &a.root,
        cli::Readahead::Show(a) => &a.root,
        cli::Readahead::Relearn(a) | cli::Readahead::On(a) | cli::Readahead::Off(a) => &a.root,
    };
    let sys = match System::load(root) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(e),
    };
    let result = match cmd {
        cli::Readahead::Status(a) => status(&sys, a.json),
        cli::Readahead::Show(a) => show(&sys, a.pack.as_deref(), a.json),
        cli::Readahead::Relearn(_) => relearn(&sys),
        cli::Readahead::On(_) => switch(&sys, true),
        cli::Readahead::Off(_) => switch(&sys, false),
    };
    match result {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed(e),
    }
}

/// The files readahead uses on the system under `root`.
struct System {
    root: PathBuf,
    config_file: PathBuf,
    /// The configuration from the file (and, on the running system, the kernel command line).
    config: Config,
    /// The `bootprint.readahead` word on the running kernel's command line, if any.
    cmdline_switch: Option<String>,
}

impl System {
    fn load(root: &Path) -> Result<System, String> {
        let config_file = under(root, Path::new(CONFIG_FILE));
        let mut config = Config::default();
        match std::fs::read_to_string(&config_file) {
            Ok(text) => config
                .apply_toml(&text, &config_file.display().to_string())
                .map_err(|e| e.to_string())?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot read {}: {e}", config_file.display())),
        }
        // The kernel command line is this machine's, so it only counts for the running system.
        let mut cmdline_switch = None;
        if root == Path::new("/") {
            let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
            cmdline_switch = cmdline
                .split_whitespace()
                .find(|w| w.starts_with("bootprint.readahead"))
                .map(String::from);
            let _ = config.apply_cmdline(&cmdline);
        }
        Ok(System {
            root: root.to_path_buf(),
            config_file,
            config,
            cmdline_switch,
        })
    }

    fn pack_path(&self) -> PathBuf {
        under(&self.root, &self.config.readahead_pack)
    }

    fn state_path(&self) -> PathBuf {
        under(&self.root, &self.config.readahead_state)
    }

    fn state(&self) -> Result<State, String> {
        State::load(&self.state_path()).map_err(|e| e.to_string())
    }
}

fn under(root: &Path, p: &Path) -> PathBuf {
    root.join(p.strip_prefix("/").unwrap_or(p))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `2026-11-22 12:34 UTC` from seconds since the epoch (civil-from-days, proleptic Gregorian).
fn utc(unix_s: u64) -> String {
    let days = (unix_s / 86400) as i64;
    let secs = unix_s % 86400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        secs / 3600,
        (secs % 3600) / 60
    )
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn secs(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2} s"))
}

/// What the next boot will do, as the boot path decides it.
fn next_boot(sys: &System, state: &State, pack: &Result<Pack, String>) -> String {
    if !sys.config.readahead {
        return "nothing: readahead is off".into();
    }
    if let Verdict::Off { .. } = state.verdict {
        return "nothing: readahead switched itself off (`bootprint readahead on` to retry)".into();
    }
    match pack {
        Err(_) => "learn a pack".into(),
        Ok(_) => match state.next_kind(sys.config.readahead_compare_every) {
            BootKind::Control => "boot without replay, to compare".into(),
            _ => "replay the pack".into(),
        },
    }
}

fn load_pack(path: &Path) -> Result<Pack, String> {
    match Pack::read_file(path) {
        Ok(p) => Ok(p),
        Err(e) => Err(e.to_string()),
    }
}

fn status(sys: &System, as_json: bool) -> Result<(), String> {
    let state = sys.state()?;
    let pack_path = sys.pack_path();
    let pack = if pack_path.exists() {
        load_pack(&pack_path)
    } else {
        Err("none".into())
    };
    let judged = state.judge();
    let now = unix_now();
    let kernel = if sys.root == Path::new("/") {
        sys::kernel_release().unwrap_or_default()
    } else {
        String::new()
    };
    // What a replay boot would conclude about this pack now (age and kernel only: staleness
    // and misses are only known from a replay).
    let relearn = pack.as_ref().ok().and_then(|p| {
        let limits = RelearnLimits {
            max_age_s: (sys.config.readahead_max_age_days * 86400.0) as u64,
            ..RelearnLimits::default()
        };
        let seen = ReplayOutcome {
            kernel_release: if kernel.is_empty() {
                &p.header.kernel_release
            } else {
                &kernel
            },
            now_unix_s: now,
            ..ReplayOutcome::default()
        };
        replay::relearn_reason(p, &seen, &limits)
    });
    let next = next_boot(sys, &state, &pack);
    if as_json {
        let v = json!({
            "enabled": sys.config.readahead,
            "config_file": sys.config_file.display().to_string(),
            "kernel_cmdline": sys.cmdline_switch,
            "verdict": match &state.verdict {
                Verdict::Auto => json!({"state": "auto"}),
                Verdict::Off { unix_s, reason } => json!({"state": "off", "since_unix_s": unix_s, "reason": reason}),
            },
            "pack": {
                "path": pack_path.display().to_string(),
                "valid": pack.is_ok(),
                "error": pack.as_ref().err(),
                "files": pack.as_ref().ok().map(|p| p.entries.len()),
                "bytes": pack.as_ref().ok().map(Pack::bytes),
                "ranges": pack.as_ref().ok().map(|p| p.entries.iter().map(|e| e.ranges.len()).sum::<usize>()),
                "budget_bytes": pack.as_ref().ok().map(|p| p.header.budget_bytes),
                "created_unix_s": pack.as_ref().ok().map(|p| p.header.created_unix_s),
                "kernel_release": pack.as_ref().ok().map(|p| p.header.kernel_release.clone()),
                "rotational": pack.as_ref().ok().map(|p| p.header.rotational),
                "relearn_reason": relearn,
            },
            "history": state.boots.iter().map(|b| json!({
                "unix_s": b.unix_s, "kind": b.kind.word(), "login_s": b.login_s, "done_s": b.done_s,
            })).collect::<Vec<_>>(),
            "judgement": {
                "replay_median_login_s": judged.replay.map(|x| x.0),
                "replay_boots": judged.replay.map_or(0, |x| x.1),
                "control_median_login_s": judged.control.map(|x| x.0),
                "control_boots": judged.control.map_or(0, |x| x.1),
                "ratio": judged.ratio(),
                "summary": judged.describe(),
            },
            "next_boot": next,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(());
    }
    let switch = if sys.config.readahead { "on" } else { "off" };
    print!("readahead: {switch} (in {}", sys.config_file.display());
    match &sys.cmdline_switch {
        Some(w) => println!("; kernel command line {w})"),
        None => println!(")"),
    }
    match &state.verdict {
        Verdict::Auto => println!("verdict:   judging itself (auto)"),
        Verdict::Off { unix_s, reason } => {
            println!("verdict:   switched itself off {}: {reason}", utc(*unix_s))
        }
    }
    println!("pack:      {}", pack_path.display());
    match &pack {
        Ok(p) => {
            let ranges: usize = p.entries.iter().map(|e| e.ranges.len()).sum();
            let age_days = now.saturating_sub(p.header.created_unix_s) as f64 / 86400.0;
            println!(
                "           {} files, {} in {ranges} ranges (budget {}), {} order",
                p.entries.len(),
                mb(p.bytes()),
                mb(p.header.budget_bytes),
                if p.header.rotational {
                    "disk (rotating device)"
                } else {
                    "first-access"
                }
            );
            println!(
                "           learned {} ({age_days:.1} days ago) on kernel {}",
                utc(p.header.created_unix_s),
                p.header.kernel_release
            );
            if let Some(r) = relearn {
                println!("           the next replay boot learns it again: {r}");
            }
        }
        Err(e) if e == "none" => println!("           none yet"),
        Err(e) => println!("           unusable: {e}"),
    }
    println!(
        "history:   {} boots (learn, replay, without replay to compare)",
        state.boots.len()
    );
    for b in state.boots.iter().rev().take(10).rev() {
        println!(
            "           {}  {:<8} login {:>9}  done {:>9}",
            utc(b.unix_s),
            b.kind.word(),
            secs(b.login_s),
            secs(b.done_s)
        );
    }
    println!("judgement: {}", judged.describe());
    if let Some(r) = judged.ratio() {
        println!("           replay / without = {r:.3}");
    }
    println!("next boot: {next}");
    Ok(())
}

fn show(sys: &System, pack: Option<&Path>, as_json: bool) -> Result<(), String> {
    let path = pack.map_or_else(|| sys.pack_path(), Path::to_path_buf);
    let p = load_pack(&path)?;
    if as_json {
        println!(
            "{}",
            serde_json::to_string_pretty(&p.to_json()).unwrap_or_default()
        );
        return Ok(());
    }
    println!(
        "{}: {} files, {}, learned {} on kernel {}",
        path.display(),
        p.entries.len(),
        mb(p.bytes()),
        utc(p.header.created_unix_s),
        p.header.kernel_release
    );
    println!("{:>5} {:>10} {:>7}  path", "#", "bytes", "ranges");
    for (i, e) in p.entries.iter().enumerate() {
        println!(
            "{:>5} {:>10} {:>7}  {}",
            i + 1,
            e.bytes(),
            e.ranges.len(),
            e.path.display()
        );
    }
    Ok(())
}

fn relearn(sys: &System) -> Result<(), String> {
    let path = sys.pack_path();
    match std::fs::remove_file(&path) {
        Ok(()) => {
            println!(
                "removed {}: the next boot with readahead on learns a new pack",
                path.display()
            );
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!(
                "no pack at {}: the next boot with readahead on learns one",
                path.display()
            );
            Ok(())
        }
        Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
    }
}

fn switch(sys: &System, on: bool) -> Result<(), String> {
    let file = &sys.config_file;
    crate::lever::set_switch(file, "readahead", "enabled", on)?;
    println!(
        "readahead {} in {}",
        if on { "on" } else { "off" },
        file.display()
    );
    if on {
        let mut state = sys.state().unwrap_or_default();
        if let Verdict::Off { reason, .. } = &state.verdict {
            println!("cleared its own verdict ({reason}) and its history: it judges itself anew");
            state = State::default();
            let path = sys.state_path();
            state
                .save(&path)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
    }
    if let Some(w) = &sys.cmdline_switch {
        println!("note: the kernel command line has {w}, which wins over the file");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_795_350_000), "2026-11-22 12:20 UTC");
    }

    #[test]
    fn paths_under_a_root() {
        assert_eq!(
            under(Path::new("/mnt/img"), Path::new("/var/lib/bootprint/x")),
            PathBuf::from("/mnt/img/var/lib/bootprint/x")
        );
        assert_eq!(
            under(Path::new("/"), Path::new("/etc/a")),
            PathBuf::from("/etc/a")
        );
    }
}
