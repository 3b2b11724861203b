//! `bootprint readahead status|show|relearn|on|off|relocate|replay`: what readahead knows about this
//! machine (its switch, its pack, its history of boots with and without replay, its own
//! verdict), and the admin's levers (`relocate`: `readahead::relocate`; `replay`: the boot's replay run by hand, to measure it). Paths come from the same configuration the boot path reads; `--root
//! DIR` looks at another system's files (an image, a test tree).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use readahead::pack::Pack;
use readahead::replay::{self, RelearnLimits, ReplayOutcome};
use readahead::state::{State, Verdict};
use record::config::{Config, CONFIG_FILE};
use render::readahead_status::{self, PackFound};
use render::{readahead_pack, readahead_relocate, readahead_replay};

use crate::cli;
use crate::output::{print, write_json};
use crate::Outcome;

/// Runs `bootprint readahead ...`.
pub fn run(cmd: &cli::Readahead) -> Outcome {
    let root = match cmd {
        cli::Readahead::Status(a) => &a.root,
        cli::Readahead::Show(a) => &a.root,
        cli::Readahead::Relearn(a) | cli::Readahead::On(a) | cli::Readahead::Off(a) => &a.root,
        cli::Readahead::Relocate(a) => &a.root,
        cli::Readahead::Replay(a) => &a.root,
    };
    let sys = match System::load(root) {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(e),
    };
    match cmd {
        cli::Readahead::Status(a) => status(&sys, a.json),
        cli::Readahead::Show(a) => show(&sys, a.pack.as_deref(), a.json),
        cli::Readahead::Relearn(_) => relearn(&sys).into(),
        cli::Readahead::On(_) => switch(&sys, true).into(),
        cli::Readahead::Off(_) => switch(&sys, false).into(),
        cli::Readahead::Relocate(a) => relocate(&sys, a),
        cli::Readahead::Replay(a) => replay_now(&sys, a),
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

fn load_pack(path: &Path) -> Result<Pack, String> {
    match Pack::read_file(path) {
        Ok(p) => Ok(p),
        Err(e) => Err(e.to_string()),
    }
}

/// `bootprint readahead status`.
fn status(sys: &System, as_json: bool) -> Outcome {
    let state = match sys.state() {
        Ok(s) => s,
        Err(e) => return Outcome::Failed(e),
    };
    let pack_path = sys.pack_path();
    let pack = pack_path.exists().then(|| load_pack(&pack_path));
    let valid = pack.as_ref().and_then(|p| p.as_ref().ok());
    let now = unix_now();
    let kernel = if sys.root == Path::new("/") {
        sys::kernel_release().unwrap_or_default()
    } else {
        String::new()
    };
    // What a replay boot would conclude about this pack now (age and kernel only: staleness
    // and misses are only known from a replay).
    let relearn = valid.and_then(|p| {
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
    let status = readahead_status::Status {
        enabled: sys.config.readahead,
        config_file: &sys.config_file,
        cmdline_switch: sys.cmdline_switch.as_deref(),
        state: &state,
        judgement: &state.judge(),
        pack_path: &pack_path,
        pack: match &pack {
            None => PackFound::None,
            Some(Ok(p)) => PackFound::Valid(p),
            Some(Err(e)) => PackFound::Unusable(e),
        },
        relearn,
        next_boot: record::readahead::next_boot(&sys.config, &state, valid.is_some()),
        metadata: sys.config.readahead_metadata,
        now_unix_s: now,
    };
    print("the status", |out| {
        if as_json {
            write_json(out, &readahead_status::json(&status))
        } else {
            readahead_status::text(out, &status)
        }
    })
}

/// `bootprint readahead show`.
fn show(sys: &System, pack: Option<&Path>, as_json: bool) -> Outcome {
    let path = pack.map_or_else(|| sys.pack_path(), Path::to_path_buf);
    let p = match load_pack(&path) {
        Ok(p) => p,
        Err(e) => return Outcome::Failed(e),
    };
    print("the pack", |out| {
        if as_json {
            write_json(out, &p.to_json())
        } else {
            readahead_pack::text(out, &path, &p)
        }
    })
}

/// `bootprint readahead relocate`: one line per file as it is done (so a long run shows
/// its progress), then the summary; or one JSON object at the end.
fn relocate(sys: &System, a: &cli::ReadaheadRelocate) -> Outcome {
    use std::io::Write;
    let path = a.pack.clone().unwrap_or_else(|| sys.pack_path());
    // The files it names are opened read-write by root.
    let p = match load_trusted_pack(&path) {
        Ok(p) => p,
        Err(e) => return Outcome::Failed(e),
    };
    let opts = readahead::relocate::Options {
        dry_run: a.dry_run,
        force_media: a.force_media,
        media: readahead::relocate::Media::from_setting(&sys.config.readahead_media),
        // The requests it expects are counted as replay will read: with its merge gap.
        merge_gap: u64::from(sys.config.readahead_merge_gap_kb) * 1024,
        // A running program's copy is noted beside the pack while it has a name of its own.
        pending: Some(readahead::relocate::pending_path(&path)),
        ..Default::default()
    };
    let n = p.entries.len();
    let mut i = 0;
    let mut progress = |f: &readahead::relocate::FileReport| {
        i += 1;
        if !a.json {
            let mut out = std::io::stdout().lock();
            let _ = readahead_relocate::progress_line(&mut out, i, n, f);
            let _ = out.flush();
        }
    };
    let report = match readahead::relocate::relocate(&p, &opts, &mut progress) {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(format!("{}: {e}", path.display())),
    };
    use readahead::relocate::Outcome as Moved;
    let moved = report
        .files
        .iter()
        .any(|f| matches!(f.outcome, Moved::Moved { .. } | Moved::Replaced { .. }));
    if moved {
        // Replay reads a relocated pack with one thread, as one stream: in the order the
        // files now lie in, the order relocation laid them out in.
        let mut p = p.in_access_order();
        p.header.relocated = true;
        // A running program's moved copy took its name: the entry is the copy now.
        let copies: std::collections::HashMap<&Path, u64> = report
            .files
            .iter()
            .filter_map(|f| match f.outcome {
                Moved::Replaced { ino, .. } => Some((f.path.as_path(), ino)),
                _ => None,
            })
            .collect();
        for e in &mut p.entries {
            if let Some(&ino) = copies.get(e.path.as_path()) {
                e.ino = ino;
            }
        }
        if let Err(e) = p.write_file(&path) {
            eprintln!(
                "bootprint: the files moved, but the pack could not be rewritten in their new \
                 order and marked relocated (replay will read it as before): {e}"
            );
        }
    }
    print("the relocation", |out| {
        if a.json {
            write_json(out, &readahead_relocate::json(&report))
        } else {
            readahead_relocate::summary(out, &report)
        }
    })
}

/// `bootprint readahead replay`: the pack replayed in the foreground with the boot's
/// settings (the flags override the merge gap, the metadata read and the time limit),
/// waiting until its reads are in the page cache.
fn replay_now(sys: &System, a: &cli::ReadaheadReplay) -> Outcome {
    let path = a.pack.clone().unwrap_or_else(|| sys.pack_path());
    // The pack names what is read, as root.
    let p = match load_trusted_pack(&path) {
        Ok(p) => p,
        Err(e) => return Outcome::Failed(e),
    };
    let mut opts = record::readahead::replay_options(&sys.config);
    if let Some(kb) = a.merge_gap_kb {
        opts.merge_gap = u64::from(kb) * 1024;
    }
    if let Some(when) = &a.metadata {
        opts.metadata = match when.as_str() {
            "on" => Some(true),
            "off" => Some(false),
            _ => None,
        };
    }
    opts.time_limit = std::time::Duration::from_secs(a.time_limit);
    let stats = replay::replay(&p, &opts);
    print("the replay", |out| {
        if a.json {
            write_json(out, &readahead_replay::json(&path, &stats))
        } else {
            readahead_replay::text(out, &path, &stats)
        }
    })
}

/// The pack at `path`, if it is as trusted as the one the boot path replays (opened without
/// following a symlink, owned by this user, not writable by group or others:
/// `replay::load_trusted`).
fn load_trusted_pack(path: &Path) -> Result<Pack, String> {
    replay::load_trusted(path, sys::euid()).map_err(|e| e.to_string())
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
