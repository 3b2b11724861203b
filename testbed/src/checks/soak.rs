//! `soak`: boots one boot-path configuration many times in a row and counts the boots that
//! never reach the real init (or the login), to catch what happens one time in dozens.
//!
//! Every boot starts from the same disk (QEMU `snapshot=on`: the guest's writes go to a
//! temporary overlay) and is stopped as soon as its mark appears on the serial console:
//! sysvinit's `INIT: version` for the configurations that end at the real init's exec, the
//! getty's `login:` for those whose work runs after it (the service runner). A boot that
//! shows neither within the limit is a hang: before QEMU is stopped, the QEMU monitor gives
//! each vCPU's registers (CPL and RIP: kernel or user space, and where), the kernel's
//! magic SysRq keys (sent as key presses; the boots have `sysrq_always_enabled`) print the
//! backtrace of each CPU ('l'), every task's state ('t') and the blocked ones ('w') on the
//! console, and the kernel RIPs are named from the image's System.map (the KASLR offset is
//! read off the IDT's first gate). All of it is written beside the boot's serial log.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::vm::hang::diagnose_hang;
use crate::vm::image::{self, Image};
use crate::vm::qemu::{self, BootOpts, Profile, BASE_APPEND};
use crate::vm::serial::{Seen, PANIC_MARK};
use crate::vm::util::{io_err, median, run_logged, Error, Paths, Result};

/// Where a boot of a configuration is counted as arrived (`--until`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Until {
    /// The real init (sysvinit) printed its first line.
    Init,
    /// The getty's login prompt: everything the boot path starts has run.
    Login,
}

impl Until {
    fn mark(self) -> &'static str {
        match self {
            Until::Init => "INIT: version",
            Until::Login => "login:",
        }
    }

    /// The limit after which a boot counts as hung: several times the slowest boot seen on
    /// a loaded host (INIT: ~15 s, login ~50 s).
    fn limit(self) -> Duration {
        match self {
            Until::Init => Duration::from_secs(150),
            Until::Login => Duration::from_secs(360),
        }
    }
}

/// Which initramfs a configuration boots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Initramfs {
    /// Debian's initramfs-tools image, as installed.
    Debian,
    /// bootprint's own, built in the guest (`bootprint initramfs build`).
    Ours,
}

/// One boot-path configuration.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    pub name: &'static str,
    pub what: &'static str,
    /// Kernel arguments after the base ones (`init=` included where bootprint-boot runs).
    append: &'static str,
    initramfs: Initramfs,
    /// Boot once to login first (recorder on, readahead learning, durations learned) and
    /// soak from that boot's disk: for configurations that replay or use learned state.
    seasoned: bool,
    pub until: Until,
}

const BOOT: &str = "init=/usr/lib/bootprint/bootprint-boot";

/// Every configuration `soak` knows, in the order `soak all-configs` runs them.
pub fn configs() -> Vec<SoakConfig> {
    let c = |name, what, append, initramfs, seasoned, until| SoakConfig {
        name,
        what,
        append,
        initramfs,
        seasoned,
        until,
    };
    use Initramfs::*;
    use Until::*;
    vec![
        c(
            "plain",
            "no bootprint (Debian's initramfs, /sbin/init)",
            "",
            Debian,
            false,
            Init,
        ),
        c("recorder", "the recorder", BOOT, Debian, false, Init),
        c(
            "readahead-learn",
            "recorder, readahead on, no pack yet (learns)",
            "bootprint.readahead=1 init=/usr/lib/bootprint/bootprint-boot",
            Debian,
            false,
            Init,
        ),
        c(
            "readahead-replay",
            "recorder, readahead on, a learned pack (replays)",
            "bootprint.readahead=1 init=/usr/lib/bootprint/bootprint-boot",
            Debian,
            true,
            Init,
        ),
        c(
            "rc",
            "recorder and bootprint's service runner, to the login",
            "bootprint.rc=1 init=/usr/lib/bootprint/bootprint-boot",
            Debian,
            true,
            Login,
        ),
        c(
            "modules",
            "recorder and the parallel module loader",
            "bootprint.modules=1 init=/usr/lib/bootprint/bootprint-boot",
            Debian,
            true,
            Init,
        ),
        c(
            "initramfs",
            "bootprint's initramfs, /sbin/init",
            "",
            Ours,
            false,
            Init,
        ),
        c(
            "initramfs-readahead",
            "bootprint's initramfs, recorder, readahead on, no pack yet",
            "bootprint.readahead=1 init=/usr/lib/bootprint/bootprint-boot",
            Ours,
            false,
            Init,
        ),
        c(
            "initramfs-replay",
            "bootprint's initramfs, recorder, readahead replayed from the initramfs",
            "bootprint.readahead=1 init=/usr/lib/bootprint/bootprint-boot",
            Ours,
            true,
            Init,
        ),
        c(
            "all",
            "bootprint's initramfs, recorder, readahead, runner and module loader, to the login",
            "bootprint.readahead=1 bootprint.rc=1 bootprint.modules=1 \
             init=/usr/lib/bootprint/bootprint-boot",
            Ours,
            true,
            Login,
        ),
    ]
}

/// One line for `soak list`: name, mark, what it boots.
pub fn describe(c: &SoakConfig) -> String {
    format!(
        "{:<20} until `{}`{}: {}",
        c.name,
        c.until.mark(),
        if c.seasoned { ", seasoned" } else { "" },
        c.what
    )
}

/// Finds a configuration by name; the error lists them all.
pub fn config(name: &str) -> Result<SoakConfig> {
    configs()
        .into_iter()
        .find(|c| c.name == name)
        .ok_or_else(|| {
            Error::Usage(format!(
                "unknown soak configuration {name:?}: expected one of {}",
                configs()
                    .iter()
                    .map(|c| c.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// How one boot ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Its mark, after this many seconds of host time.
    Arrived(f64),
    /// Nothing within the limit: a hang (diagnosis in the file named).
    Hung(PathBuf),
    /// The kernel panicked.
    Panic(String),
    /// QEMU exited (the guest rebooted or powered off) before the mark.
    Exited(String),
    /// Arrived after this many seconds, but the guest kernel reported a stall on the way
    /// (soft lockup, RCU stall, hung task: the line given). A stall that ends is the same
    /// defect as a hang that does not, caught sooner, so it counts as a failure.
    Stalled(f64, String),
}

/// What `soak` options say.
#[derive(Debug, Clone)]
pub struct SoakOpts {
    pub boots: usize,
    /// Stop at the first hang and leave QEMU running for a look through its monitor.
    pub hold: bool,
    /// Override the configuration's mark.
    pub until: Option<Until>,
    /// Every boot from a fresh, fsynced copy of the disk (as `boot` and the tests run),
    /// instead of QEMU's `snapshot=on` overlay over one copy: slower, but the guest's I/O
    /// then takes the same path as in the tests.
    pub fresh_copy: bool,
    /// Kernel arguments after the configuration's (`--append`), for the seasoning boot too:
    /// to soak a configuration with one more switch (e.g. `bootprint.delayacct=1`).
    pub append: String,
}

/// `bootprint-testbed soak CONFIG`: `opts.boots` boots, then a summary; an error when any
/// boot did not arrive.
pub fn run(paths: &Paths, cfg: &SoakConfig, opts: &SoakOpts, cargo: bool) -> Result<()> {
    let img = image::ensure(paths, cargo)?;
    let until = opts.until.unwrap_or(cfg.until);
    let run = crate::vm::util::fresh_dir(&paths.cache.join("soak"))?;
    let initrd = match cfg.initramfs {
        Initramfs::Debian => img.initrd.clone(),
        Initramfs::Ours => crate::vm::initramfs::ensure_ours(paths, &img)?,
    };
    let disk = soak_disk(paths, &img, cfg, &opts.append, &initrd, &run)?;
    let cmdline = format!("{BASE_APPEND} {} {}", cfg.append, opts.append.trim())
        .trim()
        .to_string();
    eprintln!(
        "soak {}: {} boots of {} (until `{}`), run directory {}",
        cfg.name,
        opts.boots,
        cfg.what,
        until.mark(),
        run.display()
    );
    let started = Instant::now();
    // The commit the binaries under test were built from (the tree may move during a run).
    let commit = crate::vm::util::git_commit(&paths.repo);
    let mut outcomes = Vec::new();
    for i in 1..=opts.boots {
        let o = if opts.fresh_copy {
            let copy = run.join("boot-disk.raw");
            run_logged(
                Command::new("cp")
                    .arg("--sparse=always")
                    .arg(&disk)
                    .arg(&copy),
                &run.join("host.log"),
            )?;
            fs::File::open(&copy)
                .and_then(|f| f.sync_all())
                .map_err(|e| io_err("cannot sync", &copy, e))?;
            let o = soak_boot(
                &img,
                paths.firmware,
                &initrd,
                &copy,
                false,
                &cmdline,
                until,
                &run,
                i,
                opts.hold,
            );
            if !opts.hold {
                let _ = fs::remove_file(&copy);
            }
            o?
        } else {
            soak_boot(
                &img,
                paths.firmware,
                &initrd,
                &disk,
                true,
                &cmdline,
                until,
                &run,
                i,
                opts.hold,
            )?
        };
        let line = outcome_line(&o, until);
        eprintln!("soak {} {i}/{}: {line}", cfg.name, opts.boots);
        let stop = opts.hold && !matches!(o, Outcome::Arrived(_));
        outcomes.push(o);
        if stop {
            break;
        }
    }
    let _ = fs::remove_file(&disk);
    let times: Vec<f64> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Arrived(s) => Some(*s),
            _ => None,
        })
        .collect();
    let failed = outcomes.len() - times.len();
    let max = times.iter().copied().fold(0.0, f64::max);
    let summary = summary_line(cfg, opts, &outcomes, &times, until, started);
    println!("{summary}");
    let result = json!({
        "config": cfg.name,
        "what": cfg.what,
        "cmdline": cmdline,
        "append": opts.append.trim(),
        "initramfs": format!("{:?}", cfg.initramfs).to_lowercase(),
        "seasoned": cfg.seasoned,
        "until": until.mark(),
        "disk": if opts.fresh_copy { "fresh fsynced copy per boot" } else { "snapshot=on" },
        "boots": outcomes.len(),
        "arrived": times.len(),
        "failed": failed,
        "median_s": median(&times).map(qemu::round3),
        "max_s": qemu::round3(max),
        "failures": failures_json(&outcomes),
        "commit": commit,
        "date": crate::vm::util::today(),
    });
    let _ = fs::write(run.join("result.json"), format!("{result:#}\n"));
    write_result(paths, cfg, opts, &result);
    if failed > 0 {
        return Err(Error::fail(format!(
            "soak {}: {failed} of {} boots did not reach `{}`",
            cfg.name,
            outcomes.len(),
            until.mark()
        )));
    }
    Ok(())
}

/// One boot's outcome, as its progress line says it.
fn outcome_line(o: &Outcome, until: Until) -> String {
    match o {
        Outcome::Arrived(s) => format!("`{}` after {s:.1} s", until.mark()),
        Outcome::Hung(d) => format!("HUNG (diagnosis {})", d.display()),
        Outcome::Panic(l) => format!("KERNEL PANIC: {l}"),
        Outcome::Exited(l) => format!("QEMU EXITED: {l}"),
        Outcome::Stalled(s, l) => {
            format!(
                "`{}` after {s:.1} s, but the kernel STALLED: {l}",
                until.mark()
            )
        }
    }
}

/// The soak's summary: how many boots arrived, hung, stalled, panicked or exited, and
/// their times.
fn summary_line(
    cfg: &SoakConfig,
    opts: &SoakOpts,
    outcomes: &[Outcome],
    times: &[f64],
    until: Until,
    started: Instant,
) -> String {
    let max = times.iter().copied().fold(0.0, f64::max);
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    format!(
        "soak {}{}: {} boots, {} reached `{}` with no stall, {} hung, {} stalled, {} panicked, \
         {} exited; time to it median {:.1} s, max {max:.1} s; {:.0} s in all",
        cfg.name,
        if opts.append.trim().is_empty() {
            String::new()
        } else {
            format!(" + `{}`", opts.append.trim())
        },
        outcomes.len(),
        times.len(),
        until.mark(),
        count(|o| matches!(o, Outcome::Hung(_))),
        count(|o| matches!(o, Outcome::Stalled(..))),
        count(|o| matches!(o, Outcome::Panic(_))),
        count(|o| matches!(o, Outcome::Exited(_))),
        median(times).unwrap_or(0.0),
        started.elapsed().as_secs_f64()
    )
}

/// The result's failed boots, each with its outcome.
fn failures_json(outcomes: &[Outcome]) -> Vec<Value> {
    outcomes.iter().enumerate().filter_map(|(i, o)| match o {
        Outcome::Arrived(_) => None,
        Outcome::Hung(d) => Some(json!({"boot": i + 1, "outcome": "hung", "diagnosis": crate::vm::util::shown_path(d)})),
        Outcome::Panic(l) => Some(json!({"boot": i + 1, "outcome": "kernel panic", "line": l})),
        Outcome::Exited(l) => Some(json!({"boot": i + 1, "outcome": "qemu exited", "line": l})),
        Outcome::Stalled(s, l) => Some(json!({"boot": i + 1, "outcome": "kernel stall", "line": l, "arrived_s": qemu::round3(*s)})),
    }).collect::<Vec<_>>()
}

/// Writes the result into testbed/results/ as DATE-soak-CONFIG[+APPEND][-N].json.
fn write_result(paths: &Paths, cfg: &SoakConfig, opts: &SoakOpts, result: &Value) {
    let results = paths.repo.join("testbed/results");
    let _ = fs::create_dir_all(&results);
    let stem = format!(
        "{}-soak-{}{}",
        crate::vm::util::today(),
        cfg.name,
        append_tag(&opts.append)
    );
    let file = crate::vm::util::unused_results_path(&results, &stem);
    let _ = fs::write(&file, format!("{result:#}\n"));
    eprintln!("soak: result in {}", file.display());
}

/// The disk every boot of the run starts from: a copy of the image, or of the disk a
/// seasoning boot left (recorder, readahead learning and the levers of `cfg` on).
fn soak_disk(
    paths: &Paths,
    img: &Image,
    cfg: &SoakConfig,
    extra: &str,
    initrd: &Path,
    run: &Path,
) -> Result<PathBuf> {
    let disk = run.join("disk.raw");
    if !cfg.seasoned {
        let _lock = crate::vm::util::Lock::acquire(&img.lock_path())?;
        run_logged(
            Command::new("cp")
                .arg("--sparse=always")
                .arg(&img.rootfs)
                .arg(&disk),
            &run.join("host.log"),
        )?;
        return Ok(disk);
    }
    let mut opts = BootOpts::new(Profile::Fast);
    opts.record = true;
    opts.keep_disk = true;
    opts.sync_disk = true;
    opts.initrd = Some(initrd.to_path_buf());
    // The configuration's levers, and readahead learning in any case; the recorder's init=
    // comes from `record`.
    let levers: Vec<&str> = cfg
        .append
        .split_whitespace()
        .chain(extra.split_whitespace())
        .filter(|a| !a.starts_with("init="))
        .collect();
    opts.append = if levers.contains(&"bootprint.readahead=1") {
        levers.join(" ")
    } else {
        format!("{} bootprint.readahead=1", levers.join(" "))
    };
    eprintln!("soak {}: seasoning boot ({})", cfg.name, opts.append.trim());
    let r = qemu::boot(paths, img, &opts)?;
    let kept = r
        .kept_disk()
        .ok_or_else(|| Error::fail("the seasoning boot's disk was not kept"))?;
    fs::rename(&kept, &disk).map_err(|e| io_err("cannot move", &kept, e))?;
    Ok(disk)
}

/// The results file's suffix for `--append`: its words, each character that is not a letter
/// or digit a `-` (`bootprint.delayacct=1` gives `+bootprint-delayacct-1`).
fn append_tag(append: &str) -> String {
    if append.trim().is_empty() {
        return String::new();
    }
    let words: Vec<String> = append
        .split_whitespace()
        .map(|w| {
            w.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect()
        })
        .collect();
    format!("+{}", words.join("+"))
}

/// One boot to `until`'s mark; a hang is diagnosed before QEMU is stopped.
#[allow(clippy::too_many_arguments)]
fn soak_boot(
    img: &Image,
    firmware: qemu::Firmware,
    initrd: &Path,
    disk: &Path,
    snapshot: bool,
    cmdline: &str,
    until: Until,
    run: &Path,
    n: usize,
    hold: bool,
) -> Result<Outcome> {
    let serial_log = run.join(format!("boot-{n:03}.serial"));
    let monitor = run.join(format!("boot-{n:03}.monitor"));
    let mut cmd = qemu::qemu_command(img, firmware, &img.kernel, initrd, cmdline)?;
    cmd.arg("-drive").arg(format!(
        "file={},format=raw,if=virtio{}",
        disk.display(),
        if snapshot { ",snapshot=on" } else { "" }
    ));
    qemu::add_monitor(&mut cmd, &monitor);
    let (mut child, con, start) = qemu::spawn_with_console(&mut cmd, &serial_log)?;
    let seen = con.wait_for(&[until.mark(), PANIC_MARK], 0, until.limit(), start);
    let outcome = match seen {
        Seen::Match(0, _, t) => match crate::vm::serial::kernel_stall(&con.text(0, usize::MAX)) {
            None => Outcome::Arrived(t),
            Some(line) => Outcome::Stalled(t, line),
        },
        Seen::Match(_, _, _) => {
            // Let the panic's lines arrive.
            std::thread::sleep(Duration::from_secs(2));
            Outcome::Panic(con.tail(3).replace('\n', " | "))
        }
        Seen::Closed => Outcome::Exited(con.tail(3).replace('\n', " | ")),
        Seen::Timeout => {
            let out = run.join(format!("boot-{n:03}.hang"));
            let _ = fs::write(&out, diagnose_hang(child.id(), &monitor, img, disk, &con));
            if hold {
                eprintln!(
                    "soak: holding the hung guest: QEMU pid {}, monitor {} (e.g. `socat - \
                     UNIX-CONNECT:{}`), serial log {}",
                    child.id(),
                    monitor.display(),
                    monitor.display(),
                    serial_log.display()
                );
                // Left running on purpose; the console's reader thread goes on logging.
                std::mem::forget(con);
                std::mem::forget(child);
                return Ok(Outcome::Hung(out));
            }
            Outcome::Hung(out)
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let _ = con.finish();
    let _ = fs::remove_file(&monitor);
    if matches!(outcome, Outcome::Arrived(_)) {
        // Only the failures' logs are worth keeping.
        let _ = fs::remove_file(&serial_log);
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_config_is_found_by_name_and_runs_bootprint_where_it_says() {
        for c in configs() {
            assert_eq!(config(c.name).unwrap().name, c.name);
            let boots_ours = c.append.contains(BOOT);
            assert_eq!(
                boots_ours,
                !matches!(c.name, "plain" | "initramfs"),
                "{}",
                c.name
            );
        }
        let e = config("nope").unwrap_err().to_string();
        assert!(e.contains("initramfs-readahead"), "{e}");
    }

    #[test]
    fn appended_arguments_name_the_results_file() {
        assert_eq!(append_tag(""), "");
        assert_eq!(append_tag("  "), "");
        assert_eq!(
            append_tag(" bootprint.delayacct=1  quiet "),
            "+bootprint-delayacct-1+quiet"
        );
    }
}
