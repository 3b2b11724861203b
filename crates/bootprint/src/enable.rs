//! `bootprint enable`, `disable` and `status`: the verbs over the `enablement` crate, which
//! holds what they change and how it is undone (docs/enable.md).

use std::path::Path;

use readahead::state::{State, Verdict, LATE, MODULES, RC, READAHEAD};
use record::config::{Config, CONFIG_FILE};
use render::enable_status::{self, LastBoot};

use crate::cli;
use crate::output::{print, write_json};
use crate::Outcome;
use enablement::{self, under, Lever, Machine, Request, DROPIN, MANIFEST};

fn said(r: Result<Vec<String>, enablement::Error>) -> Outcome {
    match r {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            Outcome::Ok
        }
        Err(e) => Outcome::Failed(e.into()),
    }
}

/// `bootprint enable`.
pub fn enable(a: &cli::Enable) -> Outcome {
    let m = Machine::new(&a.root);
    if let Some(k) = &a.kernel_installed {
        return said(enablement::kernel_installed(&m, k));
    }
    if let Some(args) = &a.kernel_install {
        return said(
            enablement::KernelInstall::new(args, |v| std::env::var(v).ok())
                .and_then(|call| enablement::loader::kernel_install(&m, &call)),
        );
    }
    let mut levers = std::collections::BTreeSet::new();
    for (on, l) in [
        (a.record, Lever::Record),
        (a.readahead, Lever::Readahead),
        (a.modules, Lever::Modules),
        (a.rc, Lever::Rc),
        (a.late, Lever::Late),
        (a.initramfs, Lever::Initramfs),
        (a.kexec, Lever::Kexec),
        (a.timeouts, Lever::Timeouts),
    ] {
        if on {
            levers.insert(l);
        }
    }
    let rearm: Vec<Lever> = [Lever::Rc, Lever::Late]
        .into_iter()
        .filter(|l| a.all || levers.contains(l))
        .collect();
    let enabled = said(enablement::enable(
        &m,
        &Request {
            levers,
            all: a.all,
            default_entry: a.default,
        },
    ));
    if !matches!(enabled, Outcome::Ok) {
        return enabled;
    }
    match rearm_judged(&a.root, &rearm) {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Failed(e),
    }
}

/// The configuration under `root` (its file only: the kernel command line is the running
/// boot's, not DIR's).
fn config_under(root: &Path) -> Result<Config, String> {
    let config_file = under(root, CONFIG_FILE);
    let mut config = Config::default();
    if let Ok(text) = std::fs::read_to_string(&config_file) {
        config
            .apply_toml(&text, &config_file.display().to_string())
            .map_err(|e| e.to_string())?;
    }
    Ok(config)
}

/// The state file and words of a lever that judges itself, or `None`.
fn judged_state(
    config: &Config,
    lever: Lever,
) -> Option<(&Path, &'static readahead::state::Lever)> {
    let words = match lever {
        Lever::Readahead => &READAHEAD,
        Lever::Modules => &MODULES,
        Lever::Rc => &RC,
        Lever::Late => &LATE,
        _ => return None,
    };
    record::judged::history_of(config, words).map(|(path, _)| (path, words))
}

/// Enabling the runner or late units again where they switched themselves off clears that
/// verdict and their history, so they judge themselves anew (readahead and the module loader
/// have their own `on` for that).
fn rearm_judged(root: &Path, levers: &[Lever]) -> Result<(), String> {
    if levers.is_empty() {
        return Ok(());
    }
    let config = config_under(root)?;
    for &l in levers {
        let Some((file, words)) = judged_state(&config, l) else {
            continue;
        };
        let path = under(root, &file.to_string_lossy());
        let Ok(state) = State::load_for(&path, words) else {
            continue;
        };
        if let Verdict::Off { reason, .. } = &state.verdict {
            State::default()
                .save_for(&path, words)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            println!(
                "{}: cleared its own verdict ({reason}) and its history: it judges itself anew",
                l.word()
            );
        }
    }
    Ok(())
}

/// `bootprint disable`.
pub fn disable(a: &cli::Disable) -> Outcome {
    let m = Machine::new(&a.root);
    match &a.kernel_removed {
        Some(k) => said(enablement::kernel_removed(&m, k)),
        None => said(enablement::disable(&m)),
    }
}

/// A lever's verdict, from its state file (readahead, the module loader, the runner and late
/// units judge themselves by boots with and without them; the other levers have no verdict
/// of their own).
fn verdict(root: &Path, config: &Config, lever: Lever) -> String {
    let Some((file, kind)) = judged_state(config, lever) else {
        return "no A/B verdict of its own (`bootprint diff` two boots)".into();
    };
    let path = under(root, &file.to_string_lossy());
    match State::load_for(&path, kind) {
        Err(e) => format!("state unreadable: {e}"),
        Ok(state) => match &state.verdict {
            Verdict::Off { reason, .. } => format!("switched itself off: {reason}"),
            Verdict::Auto => state.judge().describe_for(kind),
        },
    }
}

/// `bootprint status`.
pub fn status(a: &cli::Status) -> Outcome {
    let root = a.root.as_path();
    let m = Machine::new(root);
    let manifest = match m.manifest() {
        Ok(x) => x,
        Err(e) => return Outcome::Failed(e.into()),
    };
    // The configuration, for where the levers keep their state and the traces go.
    let config_file = under(root, CONFIG_FILE);
    let config = match config_under(root) {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(e),
    };
    let running = root == Path::new("/");
    let cmdline = running.then(|| std::fs::read_to_string("/proc/cmdline").unwrap_or_default());
    // What the command line alone switched on, parsed as the boot path parses it.
    let booted = cmdline.as_ref().map(|c| {
        let mut b = Config::default();
        let _ = b.apply_cmdline(c);
        let init = c
            .split_whitespace()
            .any(|w| w == format!("init={}", enablement::BOOT_BIN));
        (b, init)
    });
    let levers = Lever::ALL
        .into_iter()
        .map(|l| enable_status::Lever {
            name: l.word().into(),
            enabled: manifest.as_ref().is_some_and(|m| m.levers.contains(&l)),
            this_boot: booted.as_ref().map(|(b, init)| match l {
                Lever::Record => *init,
                Lever::Readahead => b.readahead,
                Lever::Modules => b.modules,
                Lever::Rc => b.rc,
                Lever::Late => b.late,
                Lever::Kexec => b.kexec,
                Lever::Timeouts => b.timeouts,
                // bootprint's /init leaves its log in /run.
                Lever::Initramfs => Path::new("/run/bootprint/initramfs.log").exists(),
            }),
            verdict: verdict(root, &config, l),
        })
        .collect();
    let latest = under(root, &config.log_dir.to_string_lossy()).join("latest");
    let report = if latest.exists() {
        let (b, source, _) = analyze::budget::Budgets::load_system(&config_file);
        Some(crate::output::report(&latest, &(b, source), "status"))
    } else {
        None
    };
    let latest_shown = latest.display().to_string();
    let st = enable_status::Status {
        manifest_file: under(root, MANIFEST).display().to_string(),
        enabled: manifest.is_some(),
        default_entry: manifest.as_ref().is_some_and(|m| m.default_entry),
        changes: manifest.as_ref().map_or_else(Vec::new, |m| {
            m.to_text()
                .lines()
                .filter(|l| {
                    !l.starts_with('#')
                        && !l.starts_with("lever ")
                        && !l.starts_with("default ")
                        && !l.starts_with("loader ")
                })
                .map(String::from)
                .collect()
        }),
        dropin: (
            under(root, DROPIN).display().to_string(),
            under(root, DROPIN).exists(),
        ),
        loader: match manifest.as_ref().filter(|m| !m.levers.is_empty()) {
            Some(m) => m.loader,
            None => m.loader(),
        }
        .word()
        .to_string(),
        cmdline,
        levers,
        last_boot: match &report {
            None => LastBoot::None(latest_shown),
            Some(Err(e)) => LastBoot::Unreadable(latest_shown, e.clone()),
            Some(Ok(r)) => LastBoot::Report(r),
        },
    };
    print("the status", |out| {
        if a.json {
            write_json(out, &enable_status::json(&st))
        } else {
            enable_status::text(out, &st)
        }
    })
}
