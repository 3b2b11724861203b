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
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::image::{self, Image};
use crate::qemu::{self, BootOpts, Profile, BASE_APPEND};
use crate::serial::{Console, Seen};
use crate::util::{io_err, median, run_logged, Error, Paths, Result};

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
    let run = crate::util::fresh_dir(&paths.cache.join("soak"))?;
    let initrd = match cfg.initramfs {
        Initramfs::Debian => img.initrd.clone(),
        Initramfs::Ours => crate::initramfs_test::ensure_ours(paths, &img)?,
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
    let commit = crate::util::git_commit(&paths.repo);
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
                &img, &initrd, &copy, false, &cmdline, until, &run, i, opts.hold,
            );
            if !opts.hold {
                let _ = fs::remove_file(&copy);
            }
            o?
        } else {
            soak_boot(
                &img, &initrd, &disk, true, &cmdline, until, &run, i, opts.hold,
            )?
        };
        let line = match &o {
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
        };
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
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let summary = format!(
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
        median(&times).unwrap_or(0.0),
        started.elapsed().as_secs_f64()
    );
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
        "failures": outcomes.iter().enumerate().filter_map(|(i, o)| match o {
            Outcome::Arrived(_) => None,
            Outcome::Hung(d) => Some(json!({"boot": i + 1, "outcome": "hung", "diagnosis": crate::util::shown_path(d)})),
            Outcome::Panic(l) => Some(json!({"boot": i + 1, "outcome": "kernel panic", "line": l})),
            Outcome::Exited(l) => Some(json!({"boot": i + 1, "outcome": "qemu exited", "line": l})),
            Outcome::Stalled(s, l) => Some(json!({"boot": i + 1, "outcome": "kernel stall", "line": l, "arrived_s": qemu::round3(*s)})),
        }).collect::<Vec<_>>(),
        "commit": commit,
        "date": crate::util::today(),
    });
    let _ = fs::write(run.join("result.json"), format!("{result:#}\n"));
    let results = paths.repo.join("testbed/results");
    let _ = fs::create_dir_all(&results);
    let stem = format!(
        "{}-soak-{}{}",
        crate::util::today(),
        cfg.name,
        append_tag(&opts.append)
    );
    let file = crate::util::unused_results_path(&results, &stem);
    let _ = fs::write(&file, format!("{result:#}\n"));
    eprintln!("soak: result in {}", file.display());
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
        let _lock = crate::util::Lock::acquire(&img.lock_path())?;
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
    let mut cmd = qemu::qemu_command(img, initrd, cmdline);
    cmd.arg("-drive").arg(format!(
        "file={},format=raw,if=virtio{}",
        disk.display(),
        if snapshot { ",snapshot=on" } else { "" }
    ));
    qemu::add_monitor(&mut cmd, &monitor);
    let (mut child, con, start) = qemu::spawn_with_console(&mut cmd, &serial_log)?;
    let seen = con.wait_for(&[until.mark(), "Kernel panic"], 0, until.limit(), start);
    let outcome = match seen {
        Seen::Match(0, _, t) => match crate::serial::kernel_stall(&con.text(0, usize::MAX)) {
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

/// A QEMU human monitor on a Unix socket.
struct Monitor {
    sock: UnixStream,
}

impl Monitor {
    fn connect(path: &Path) -> std::io::Result<Monitor> {
        let sock = UnixStream::connect(path)?;
        sock.set_read_timeout(Some(Duration::from_secs(20)))?;
        let mut m = Monitor { sock };
        m.until_prompt()?;
        Ok(m)
    }

    fn until_prompt(&mut self) -> std::io::Result<String> {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.ends_with(b"(qemu) ") {
            let n = self.sock.read(&mut buf)?;
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        Ok(String::from_utf8_lossy(&got).into_owned())
    }

    /// Runs `cmd`; returns what it printed (escape sequences dropped).
    fn cmd(&mut self, cmd: &str) -> String {
        if self.sock.write_all(format!("{cmd}\n").as_bytes()).is_err() {
            return format!("(cannot send {cmd:?})\n");
        }
        match self.until_prompt() {
            Ok(text) => strip_escapes(&text)
                .trim_end_matches("(qemu) ")
                .lines()
                .filter(|l| !l.contains(cmd))
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => format!("(no answer to {cmd:?}: {e})\n"),
        }
    }
}

/// Terminal escape sequences the monitor echoes its input with.
fn strip_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\x1b' {
            if it.peek() == Some(&'[') {
                it.next();
                for d in it.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        if c != '\r' {
            out.push(c);
        }
    }
    out
}

/// QEMU's threads as the host sees them: CPU time of each, twice 2 s apart (the ones that
/// move are the busy ones), then their stacks from gdb when it is installed.
fn host_threads(pid: u32) -> String {
    let sample = || -> Vec<(String, String, u64)> {
        let mut v = Vec::new();
        let Ok(rd) = fs::read_dir(format!("/proc/{pid}/task")) else {
            return v;
        };
        for e in rd.flatten() {
            let tid = e.file_name().to_string_lossy().into_owned();
            let stat = fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let Some((head, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let name = head.split_once('(').map_or("", |x| x.1).to_string();
            let f: Vec<&str> = rest.split_whitespace().collect();
            // utime and stime: fields 14 and 15, here 11 and 12 after the state.
            let ticks = f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
                + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
            v.push((tid, name, ticks));
        }
        v.sort();
        v
    };
    let a = sample();
    std::thread::sleep(Duration::from_secs(2));
    let b = sample();
    let mut out = String::from("== QEMU threads: CPU ticks in 2 s\n");
    for (tid, name, t) in &b {
        let before = a.iter().find(|x| &x.0 == tid).map_or(0, |x| x.2);
        out.push_str(&format!(
            "{tid:>8} {name:<20} {:>5}\n",
            t.saturating_sub(before)
        ));
    }
    match Command::new("timeout")
        .args([
            "60",
            "gdb",
            "-p",
            &pid.to_string(),
            "-batch",
            "-ex",
            "thread apply all bt",
        ])
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => {
            out.push_str("== QEMU threads' stacks (gdb)\n");
            out.push_str(&String::from_utf8_lossy(&o.stdout));
        }
        _ => out.push_str("== (no gdb stacks: gdb missing or it failed)\n"),
    }
    out
}

/// Everything known about a hung boot's QEMU (pid `qemu_pid`, monitor socket `monitor`):
/// QEMU's own threads first (which burn CPU, where: a hang inside QEMU's TCG would not let
/// the monitor's vCPU commands answer), then [`diagnose`].
pub fn diagnose_hang(
    qemu_pid: u32,
    monitor: &Path,
    img: &Image,
    disk: &Path,
    con: &Console,
) -> String {
    let mut text = host_threads(qemu_pid);
    text.push_str(&diagnose(monitor, img, disk, con));
    text
}

/// What a hung guest is doing: registers per vCPU (twice, a few seconds apart: the same RIP
/// is a spin), the kernel's own view through SysRq, the RIPs named.
fn diagnose(monitor: &Path, img: &Image, disk: &Path, con: &Console) -> String {
    let mut out = String::new();
    let mut m = match Monitor::connect(monitor) {
        Ok(m) => m,
        Err(e) => return format!("cannot reach the QEMU monitor {}: {e}\n", monitor.display()),
    };
    out.push_str(&format!("== info status\n{}\n", m.cmd("info status")));
    out.push_str(&format!("== info cpus\n{}\n", m.cmd("info cpus")));
    let map = system_map(img, disk);
    for round in 1..=2 {
        for cpu in 0..2 {
            m.cmd(&format!("cpu {cpu}"));
            let regs = m.cmd("info registers");
            out.push_str(&format!(
                "== round {round}, cpu {cpu}: info registers\n{regs}\n"
            ));
            out.push_str(&name_rip(&mut m, &regs, map.as_deref()));
        }
        if round == 1 {
            std::thread::sleep(Duration::from_secs(3));
        }
    }
    let before = con.tail(100_000).len();
    // Console log level 9 first: the SysRq handlers print at KERN_INFO, below `loglevel=6`.
    for key in ["9", "l", "t", "w"] {
        m.cmd(&format!("sendkey alt-sysrq-{key}"));
        std::thread::sleep(Duration::from_secs(if key == "t" { 15 } else { 4 }));
    }
    let all = con.tail(100_000);
    out.push_str(&format!(
        "== serial console after SysRq 9, l, t, w\n{}\n",
        &all[before.min(all.len())..]
    ));
    out
}

/// The guest kernel's System.map, read out of the disk (the image's kernel is the one the
/// disk has in /boot).
fn system_map(img: &Image, disk: &Path) -> Option<String> {
    let vmlinuz = fs::canonicalize(&img.kernel).ok()?;
    let name = vmlinuz.file_name()?.to_string_lossy().into_owned();
    let release = name.strip_prefix("vmlinuz-").unwrap_or(&name).to_string();
    let out = Command::new("debugfs")
        .arg("-R")
        .arg(format!("cat /boot/System.map-{release}"))
        .arg(disk)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (text.len() > 1000).then_some(text)
}

/// For a kernel-mode RIP: its symbol, from the KASLR offset (the IDT's first gate is
/// `asm_exc_divide_error`) and the System.map; for a user-mode one: says so.
fn name_rip(m: &mut Monitor, regs: &str, map: Option<&str>) -> String {
    let field = |key: &str| -> Option<u64> {
        let i = regs.find(key)?;
        let v = regs[i + key.len()..].split_whitespace().next()?;
        u64::from_str_radix(v, 16).ok()
    };
    let Some(rip) = field("RIP=") else {
        return String::new();
    };
    let cpl = regs
        .find("CPL=")
        .and_then(|i| regs[i + 4..].chars().next())
        .and_then(|c| c.to_digit(10));
    if cpl == Some(3) {
        return format!("-> user space, RIP {rip:#x}\n");
    }
    let (Some(map), Some(idt)) = (map, field("IDT=")) else {
        return format!("-> kernel, RIP {rip:#x} (no System.map to name it)\n");
    };
    // The first 16-byte gate: offset bits 0-15 at 0, 16-31 at 6, 32-63 at 8.
    let dump = m.cmd(&format!("x /2gx {idt:#x}"));
    let words: Vec<u64> = dump
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("0x"))
        .filter_map(|w| u64::from_str_radix(w, 16).ok())
        .filter(|w| *w != idt)
        .collect();
    let (Some(&lo), Some(&hi)) = (words.first(), words.get(1)) else {
        return format!("-> kernel, RIP {rip:#x} (cannot read the IDT: {dump:?})\n");
    };
    let handler = (lo & 0xffff) | ((lo >> 48) << 16) | ((hi & 0xffff_ffff) << 32);
    let symbols = parse_system_map(map);
    let Some(&(base, _)) = symbols.iter().find(|(_, n)| n == "asm_exc_divide_error") else {
        return format!("-> kernel, RIP {rip:#x} (no asm_exc_divide_error in System.map)\n");
    };
    let offset = handler.wrapping_sub(base);
    let linked = rip.wrapping_sub(offset);
    let at = symbols.partition_point(|(a, _)| *a <= linked);
    match at.checked_sub(1).map(|i| &symbols[i]) {
        Some((a, name)) => format!(
            "-> kernel, RIP {rip:#x} = {name}+{:#x} (KASLR offset {offset:#x})\n",
            linked - a
        ),
        None => format!("-> kernel, RIP {rip:#x} (below every symbol)\n"),
    }
}

/// `ADDRESS TYPE NAME` lines, sorted by address.
fn parse_system_map(text: &str) -> Vec<(u64, String)> {
    let mut v: Vec<(u64, String)> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let a = u64::from_str_radix(f.next()?, 16).ok()?;
            let _kind = f.next()?;
            Some((a, f.next()?.to_string()))
        })
        .collect();
    v.sort();
    v
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

    #[test]
    fn escapes_are_stripped() {
        assert_eq!(
            strip_escapes("\x1b[K\x1b[Dinfo\r\n(qemu) "),
            "info\n(qemu) "
        );
    }

    #[test]
    fn system_map_lookup() {
        let map = "ffffffff81000000 T _stext\nffffffff81a00000 T asm_exc_divide_error\n";
        let s = parse_system_map(map);
        assert_eq!(s[1], (0xffffffff81a00000, "asm_exc_divide_error".into()));
    }
}
