//! The initramfs's `/init`: `bootprint-boot` run as PID 1 from the initramfs (the plan file
//! [`crate::PLAN_PATH`] exists). Steps, each timestamped (CLOCK_BOOTTIME) into
//! `/run/bootprint/initramfs.log`, which moves with `/run` into the real root so the real
//! init and the recorder find it:
//!
//! 1. read the plan ([`crate::plan`]) and start loading its modules with finit_module(2) in
//!    the background, one worker per CPU, each module once its dependencies are in
//!    ([`load_modules`]; EEXIST counts as loaded; an optional module may fail);
//! 2. mount proc, sysfs, devtmpfs and a tmpfs on /run;
//! 3. read the kernel command line ([`crate::cmdline`]);
//! 4. meanwhile sleep `rootdelay=`, then wait for the root device (scanning sysfs every
//!    10 ms, probing superblocks and partition tables for UUID/LABEL/PARTUUID/PARTLABEL) up
//!    to the timeout;
//! 5. once the modules are in, mount it on /root as the command line says (`rootfstype=`,
//!    `rootflags=`, `ro`/`rw`);
//! 6. check the init to run exists there; move /dev, /proc, /sys, /run onto the new root;
//! 7. switch root: delete the initramfs's files (they would hold memory for ever), make the
//!    new root `/` (`mount --move . /`, `chroot .`), and exec the real init (`init=` or
//!    `/sbin/init`) with our arguments.
//!
//! Any failure: [`fail`] says why on the console and in the kernel log, waits
//! [`FAIL_DELAY_S`] seconds, syncs and reboots (or powers off / halts, as
//! `bootprint.initramfs.onfail=` says), so a machine with this initramfs as an extra boot
//! entry comes back in its default entry. PID 1 must never exit: that is a kernel panic.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cmdline::{Cmdline, RootSpec};
use crate::plan::Plan;
use crate::probe;
use crate::sys;

/// Seconds between the failure message and the reboot: time to read it.
pub const FAIL_DELAY_S: u64 = 10;
/// Where the steps' timestamps are written (on the tmpfs that becomes the real root's /run).
pub const STEPS_LOG: &str = "/run/bootprint/initramfs.log";
const NEW_ROOT: &str = "/root";
const DEFAULT_INIT: &str = "/sbin/init";
/// The least time /init waits for the module loader once the root device is there.
const MODULES_WAIT_MIN_S: u32 = 30;

/// The steps' timestamps.
#[derive(Debug, Default)]
pub struct Steps {
    lines: Vec<String>,
}

impl Steps {
    /// Notes that `step` ended now; `detail` says what it did.
    pub fn mark(&mut self, step: &str, detail: &str) {
        let line = format!(
            "{} {step} {}",
            ::sys::boottime_ns(),
            detail.replace('\n', " ")
        );
        self.lines.push(line.trim_end().to_string());
    }

    /// One line: each step with the milliseconds since the one before (`modules +812`).
    pub fn summary(&self) -> String {
        let mut prev: Option<u64> = None;
        let mut out = Vec::new();
        for l in &self.lines {
            let mut f = l.splitn(3, ' ');
            let (Some(Ok(t)), Some(step)) = (f.next().map(str::parse::<u64>), f.next()) else {
                continue;
            };
            if let Some(p) = prev {
                out.push(format!("{step} +{}", t.saturating_sub(p) / 1_000_000));
            }
            prev = Some(t);
        }
        out.join(", ")
    }

    /// The log's text: a header line, then `BOOTTIME_NS STEP DETAIL` lines.
    pub fn text(&self) -> String {
        let mut s = String::from("# bootprint initramfs steps 1: boottime_ns step detail\n");
        for l in &self.lines {
            s.push_str(l);
            s.push('\n');
        }
        s
    }
}

/// Called once the real root is mounted (at the path given), before the switch: starts
/// readahead replay there (bootprint-boot passes the recorder crate's
/// `readahead::start_in_initramfs`; this crate does not know the pack). Returns what it did,
/// for the step log. It must not fail the boot: a panic in it is caught and logged.
pub type RootMounted = fn(&Path) -> String;

/// Runs the initramfs's /init. Never returns.
pub fn run(args: Vec<std::ffi::OsString>, root_mounted: RootMounted) -> ! {
    let start = ::sys::boottime_ns();
    let mut steps = Steps::default();
    steps.mark("start", "");
    let mut onfail = OnFail::Reboot;
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        steps_to_exec(&args, &mut steps, &mut onfail, start, root_mounted)
    }));
    let msg = match res {
        Ok(Err(msg)) => msg,
        Ok(Ok(never)) => match never {},
        Err(_) => "internal error (a panic)".to_string(),
    };
    fail(&msg, onfail)
}

/// What to do after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFail {
    /// Reboot: with this initramfs as a non-default entry, the machine comes back in the
    /// distribution's.
    Reboot,
    /// Power off.
    Poweroff,
    /// Halt (stop the CPUs, leave the message on screen).
    Halt,
}

enum Never {}

/// The whole of /init up to the exec of the real init; Err is the message [`fail`] says.
fn steps_to_exec(
    args: &[std::ffi::OsString],
    steps: &mut Steps,
    onfail: &mut OnFail,
    start: u64,
    root_mounted: RootMounted,
) -> Result<Never, String> {
    let plan = read_plan()?;
    // The loader starts first (loading needs none of the mounts below) and runs beside the
    // root search: the disk can appear (its driver loaded) while the file system's module
    // is still loading. It is a process of its own, so that the wait for it has a bound
    // (crate::loader).
    let loader = crate::loader::Loader::start(&plan, Path::new("/"))
        .map_err(|e| format!("cannot start the module loader: {e}"))?;
    let loader = std::cell::RefCell::new(loader);
    steps.mark("loader-started", &format!("{} modules", plan.modules.len()));
    mount_kernel_fs()?;
    steps.mark("mounted", "proc sys dev run");
    let (cmd, text) = read_cmdline()?;
    *onfail = onfail_of(&cmd);
    steps.mark("cmdline", text.trim());
    let loader_failed = || loader.borrow_mut().failed();

    if cmd.rootdelay_s > 0 {
        std::thread::sleep(Duration::from_secs(cmd.rootdelay_s.into()));
        steps.mark("rootdelay", &format!("{} s", cmd.rootdelay_s));
    }
    let spec = root_spec(&cmd, &plan)?;
    let dev = wait_for_root(
        Path::new("/sys"),
        Path::new("/dev"),
        &spec,
        Duration::from_secs(cmd.wait_s.into()),
        &loader_failed,
    )?;
    steps.mark("root-found", &format!("{spec} = {}", dev.display()));
    // The root's device is there; its file system's module may still be loading. A module
    // whose init never returns must not hold the boot: past the limit, try the mount
    // without waiting (it works when the file system is built in or already loaded).
    let limit = Duration::from_secs(cmd.wait_s.max(MODULES_WAIT_MIN_S).into());
    let loaded = wait_for_modules(&mut loader.borrow_mut(), limit)?;
    steps.mark("modules", &loaded);

    let checked = check_root(&dev, &cmd);
    steps.mark("fsck", &checked);

    let fstype = mount_root(&dev, &cmd, &plan, steps)?;
    steps.mark(
        "root-mounted",
        &format!(
            "{} {fstype} {}",
            dev.display(),
            if cmd.readonly { "ro" } else { "rw" }
        ),
    );

    let init = init_on_root(&cmd, &dev, &spec)?;
    steps.mark("init-found", &init);
    // Readahead replay from the root's pack, as early as the root is there. /init has no
    // threads (the module loader is a process of its own), so its fork is safe.
    let readahead = std::panic::catch_unwind(|| root_mounted(Path::new(NEW_ROOT)))
        .unwrap_or_else(|_| "failed (a panic); booting without it".to_string());
    steps.mark("readahead", &readahead);
    let elapsed_ms = (::sys::boottime_ns() - start) / 1_000_000;
    steps.mark(
        "switch-root",
        &format!("exec {init} after {elapsed_ms} ms in /init"),
    );
    let _ = fs::write(STEPS_LOG, steps.text());
    kmsg(&format!(
        "bootprint initramfs: steps (ms): {}",
        steps.summary()
    ));
    kmsg(&format!("bootprint initramfs: modules {loaded}"));
    kmsg(&format!(
        "bootprint initramfs: root {spec} ({}) mounted, running {init} after {elapsed_ms} ms",
        dev.display()
    ));
    move_kernel_fs()?;
    switch_root()?;
    Err(exec_init(&init, args))
}

/// The plan file the build wrote into the initramfs.
fn read_plan() -> Result<Plan, String> {
    let plan_text =
        fs::read_to_string(crate::PLAN_PATH).map_err(|e| format!("{}: {e}", crate::PLAN_PATH))?;
    Plan::parse(&plan_text, Path::new(crate::PLAN_PATH)).map_err(|e| e.to_string())
}

/// The kernel command line, parsed, and its text.
fn read_cmdline() -> Result<(Cmdline, String), String> {
    let text = fs::read_to_string("/proc/cmdline").map_err(|e| format!("/proc/cmdline: {e}"))?;
    let cmd = Cmdline::parse(&text).map_err(|e| e.to_string())?;
    Ok((cmd, text))
}

/// What to do after a failure, as `bootprint.initramfs.onfail=` says (reboot if nothing).
fn onfail_of(cmd: &Cmdline) -> OnFail {
    match cmd.get("bootprint.initramfs.onfail") {
        Some("poweroff") => OnFail::Poweroff,
        Some("halt") => OnFail::Halt,
        _ => OnFail::Reboot,
    }
}

/// The root to wait for: `root=`, or with none at all the plan's device, found at build
/// time.
fn root_spec(cmd: &Cmdline, plan: &Plan) -> Result<RootSpec, String> {
    match &cmd.root {
        Some(s) => Ok(s.clone()),
        None => crate::cmdline::parse_root(&plan.root).map_err(|e| {
            format!(
                "no root= on the command line and the plan's root {:?}: expected {e}",
                plan.root
            )
        }),
    }
}

/// Waits up to `limit` for the module loader: its summary, the error of a required module,
/// or, when it is still busy, a message that the root is mounted without waiting (said on
/// the console and in the kernel log).
fn wait_for_modules(loader: &mut crate::loader::Loader, limit: Duration) -> Result<String, String> {
    Ok(match loader.wait(limit) {
        crate::loader::Waited::Done(r) => r?,
        crate::loader::Waited::Busy(loading) => {
            let msg = format!(
                "the module loader is still busy after {} s (loading: {}); mounting the root \
                 without waiting for it",
                limit.as_secs(),
                if loading.is_empty() {
                    "?".to_string()
                } else {
                    loading.join(" ")
                }
            );
            sys::console(&format!("bootprint initramfs: {msg}\n"));
            kmsg(&format!("bootprint initramfs: {msg}"));
            msg
        }
    })
}

/// The init to run on the mounted root ([`find_init`]); when `init=` named one that is
/// not there, says so and runs the system's own.
fn init_on_root(cmd: &Cmdline, dev: &Path, spec: &RootSpec) -> Result<String, String> {
    let init = match find_init(Path::new(NEW_ROOT), cmd.init.as_deref()) {
        Ok(found) => found,
        Err(msg) => {
            return Err(format!(
                "{msg} on the root file system {} ({spec})",
                dev.display()
            ))
        }
    };
    if let Some(asked) = cmd.init.as_deref().filter(|asked| *asked != init) {
        // As Debian's initramfs-tools does: say so, and boot the system's own init.
        let msg = format!("the root file system has no {asked} (init=); running {init} instead");
        sys::console(&format!("bootprint initramfs: {msg}\n"));
        kmsg(&format!("bootprint initramfs: {msg}"));
    }
    Ok(init)
}

/// Moves the kernel file systems under the new root.
fn move_kernel_fs() -> Result<(), String> {
    for m in ["/dev", "/proc", "/sys", "/run"] {
        let to = format!("{NEW_ROOT}{m}");
        if let Err(e) = sys::move_mount(m, &to) {
            return Err(format!(
                "cannot move {m} to {to}: {e} (does the root have {m}?)"
            ));
        }
    }
    Ok(())
}

/// Execs `init` on the new root; returns only when it cannot: then the next of the usual
/// inits that exists (not executable, a foreign binary). The message of the last failure.
fn exec_init(init: &str, args: &[std::ffi::OsString]) -> String {
    use std::os::unix::process::CommandExt;
    let mut errors = Vec::new();
    let mut tried: Vec<&str> = Vec::new();
    for candidate in std::iter::once(init).chain(FALLBACK_INITS) {
        if tried.contains(&candidate)
            || (!tried.is_empty() && fs::symlink_metadata(candidate).is_err())
        {
            continue;
        }
        tried.push(candidate);
        let e = std::process::Command::new(candidate)
            .arg0(candidate)
            .args(args.iter().skip(1))
            .exec();
        errors.push(format!("{candidate}: {e}"));
        sys::console(&format!(
            "bootprint initramfs: cannot exec {candidate}: {e}\n"
        ));
    }
    format!(
        "no init could be started on the new root ({})",
        errors.join("; ")
    )
}

/// The inits tried, in order, after the one asked for (`init=` or /sbin/init): those the
/// kernel and Debian's initramfs-tools try.
pub const FALLBACK_INITS: [&str; 4] = ["/sbin/init", "/etc/init", "/bin/init", "/bin/sh"];

/// The init to run on the root mounted at `root`: `asked` (`init=`, default /sbin/init) if
/// it is there, else the first of [`FALLBACK_INITS`] that is (a missing `init=` is a typo or
/// a removed program: booting the system's own init is better than a reboot loop). A
/// dangling symlink counts as there: it is absolute, so it points into the initramfs now
/// and will resolve after the switch.
pub fn find_init(root: &Path, asked: Option<&str>) -> Result<String, String> {
    let asked = asked.unwrap_or(DEFAULT_INIT);
    std::iter::once(asked)
        .chain(FALLBACK_INITS)
        .find(|init| fs::symlink_metadata(root.join(init.trim_start_matches('/'))).is_ok())
        .map(str::to_string)
        .ok_or_else(|| {
            format!(
                "no init: neither {asked} nor any of {} exists",
                FALLBACK_INITS.join(", ")
            )
        })
}

fn mount_kernel_fs() -> Result<(), String> {
    let nosuid = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    // (source, point, type, flags, data, required): like initramfs-tools, a /dev/pts that
    // cannot be mounted is left to mountdevsubfs.sh.
    for (src, dir, fstype, flags, data, required) in [
        ("proc", "/proc", "proc", nosuid, "", true),
        ("sysfs", "/sys", "sysfs", nosuid, "", true),
        // Source "udev", as Debian's initramfs-tools names it: the mount table after boot
        // is the same as with Debian's initramfs (`bootprint-testbed parity` checks).
        (
            "udev",
            "/dev",
            "devtmpfs",
            libc::MS_NOSUID,
            "mode=0755",
            true,
        ),
        // As initramfs-tools mounts them (its /init, Debian 12): the pty file system moves
        // to the new root with /dev, and /run is noexec. mountdevsubfs.sh would mount
        // /dev/pts with /etc/default/devpts's mode (600) instead of 620.
        (
            "devpts",
            "/dev/pts",
            "devpts",
            libc::MS_NOEXEC | libc::MS_NOSUID,
            "gid=5,mode=0620",
            false,
        ),
        (
            "tmpfs",
            "/run",
            "tmpfs",
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            "mode=0755,size=10%",
            true,
        ),
    ] {
        let _ = fs::create_dir_all(dir);
        if let Err(e) = ::sys::mount(
            src,
            Path::new(dir),
            non_empty(fstype),
            flags,
            non_empty(data),
        ) {
            // Already mounted (a kernel with CONFIG_DEVTMPFS_MOUNT) is fine.
            if required && e.raw_os_error() != Some(libc::EBUSY) {
                return Err(format!("cannot mount {fstype} on {dir}: {e}"));
            }
        }
    }
    // The links initramfs-tools' /init makes; they move to the new root with /dev, and
    // mountdevsubfs.sh keeps links it finds (it would make `fd/0`, not these).
    for (link, target) in [
        ("/dev/fd", "/proc/self/fd"),
        ("/dev/stdin", "/proc/self/fd/0"),
        ("/dev/stdout", "/proc/self/fd/1"),
        ("/dev/stderr", "/proc/self/fd/2"),
    ] {
        if !Path::new(link).is_symlink() {
            let _ = std::os::unix::fs::symlink(target, link);
        }
    }
    let _ = fs::create_dir_all("/run/bootprint");
    Ok(())
}

/// Loads the plan's modules from under `root` with as many workers as CPUs: each takes the
/// first module, in plan order, whose dependencies are in. Plan order puts the root
/// device's drivers first, so the disk appears while the file system's modules load; more
/// workers than CPUs only make every load slower (signature checks are CPU work). Returns a
/// one-line summary; a required module that fails (or whose dependency failed) is an error
/// naming it and the reason.
pub fn load_modules(plan: &Plan, root: &Path) -> Result<String, String> {
    load_modules_reporting(plan, root, &|_| {})
}

/// [`load_modules`], telling `report` as each module starts (`start NAME`) and ends
/// (`done NAME`), so a watcher can name the modules still loading when it stops waiting.
pub fn load_modules_reporting(
    plan: &Plan,
    root: &Path,
    report: &(dyn Fn(&str) + Sync),
) -> Result<String, String> {
    let t = Instant::now();
    let n = plan.modules.len();
    let index: std::collections::HashMap<&str, usize> = plan
        .modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.name.as_str(), i))
        .collect();
    let deps: Vec<Vec<usize>> = plan
        .modules
        .iter()
        .map(|m| {
            m.deps
                .iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .collect()
        })
        .collect();
    #[derive(Clone)]
    enum Slot {
        Pending,
        Running,
        Done(Result<u128, String>),
    }
    let state = (
        std::sync::Mutex::new(vec![Slot::Pending; n]),
        std::sync::Condvar::new(),
    );
    let workers = plan
        .workers
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|c| c.get())
                .unwrap_or(2)
                .clamp(1, 8)
        })
        .min(n.max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            let (state, deps) = (&state, &deps);
            s.spawn(move || {
                let (lock, cv) = state;
                let mut st = lock.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    let mut pick = None;
                    for i in 0..n {
                        if !matches!(st[i], Slot::Pending) {
                            continue;
                        }
                        if let Some(&d) = deps[i]
                            .iter()
                            .find(|&&d| matches!(st[d], Slot::Done(Err(_))))
                        {
                            st[i] = Slot::Done(Err(format!(
                                "needs {}, which did not load",
                                plan.modules[d].name
                            )));
                            cv.notify_all();
                            continue;
                        }
                        if deps[i].iter().all(|&d| matches!(st[d], Slot::Done(Ok(_)))) {
                            pick = Some(i);
                            break;
                        }
                    }
                    match pick {
                        Some(i) => {
                            st[i] = Slot::Running;
                            drop(st);
                            let m = &plan.modules[i];
                            report(&format!("start {}", m.name));
                            let t = Instant::now();
                            let r = match sys::finit_module(
                                &root.join(m.path.trim_start_matches('/')),
                                &m.options,
                                crate::compress::module_format(&m.path).is_some(),
                            ) {
                                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
                                other => other,
                            };
                            report(&format!("done {}", m.name));
                            st = lock.lock().unwrap_or_else(|p| p.into_inner());
                            st[i] = Slot::Done(
                                r.map(|()| t.elapsed().as_millis())
                                    .map_err(|e| e.to_string()),
                            );
                            cv.notify_all();
                        }
                        None if st.iter().any(|x| matches!(x, Slot::Pending)) => {
                            st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
                        }
                        None => return,
                    }
                }
            });
        }
    });
    let st = state.0.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut summary = Vec::new();
    for (m, r) in plan.modules.iter().zip(st) {
        match r {
            Slot::Done(Ok(ms)) => summary.push(format!("{}:{ms}ms", m.name)),
            Slot::Done(Err(e)) if m.optional => summary.push(format!("{}:skipped({e})", m.name)),
            Slot::Done(Err(e)) => {
                return Err(format!("cannot load module {} ({}): {e}", m.name, m.path))
            }
            _ => return Err(format!("module {} was never loaded", m.name)),
        }
    }
    Ok(format!(
        "{} in {} ms with {workers} workers: {}",
        n,
        t.elapsed().as_millis(),
        summary.join(" ")
    ))
}

/// Waits up to `timeout` for the device `spec` names; the error lists the block devices
/// that were there.
pub fn wait_for_root(
    sys_dir: &Path,
    dev_dir: &Path,
    spec: &RootSpec,
    timeout: Duration,
    give_up: &dyn Fn() -> Option<String>,
) -> Result<PathBuf, String> {
    let t = Instant::now();
    loop {
        if let Some(p) = find_root(sys_dir, dev_dir, spec) {
            return Ok(p);
        }
        // A driver that did not load will not bring the disk: say that, not "timed out".
        if let Some(why) = give_up() {
            return Err(why);
        }
        if t.elapsed() >= timeout {
            let seen = block_devices(sys_dir)
                .into_iter()
                .map(|b| b.name)
                .collect::<Vec<_>>();
            return Err(format!(
                "root device {spec} did not appear within {} s; block devices present: {}",
                timeout.as_secs(),
                if seen.is_empty() {
                    "none".to_string()
                } else {
                    seen.join(" ")
                }
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A block device from `SYS/class/block`.
#[derive(Debug, Clone)]
pub struct BlockDev {
    /// Kernel name (`vda1`).
    pub name: String,
    /// Device number.
    pub devnum: (u32, u32),
    /// Partition number, for a partition.
    pub partition: Option<u32>,
    /// The whole disk's name, for a partition.
    pub disk: Option<String>,
}

/// The block devices sysfs lists now.
pub fn block_devices(sys_dir: &Path) -> Vec<BlockDev> {
    let class = sys_dir.join("class/block");
    let Ok(rd) = fs::read_dir(&class) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let p = class.join(&name);
        let Some(devnum) = fs::read_to_string(p.join("dev")).ok().and_then(|s| {
            let (a, b) = s.trim().split_once(':')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        }) else {
            continue;
        };
        let partition = fs::read_to_string(p.join("partition"))
            .ok()
            .and_then(|s| s.trim().parse().ok());
        // A partition's sysfs directory sits inside its disk's.
        let disk = partition.and_then(|_| {
            fs::canonicalize(&p)
                .ok()?
                .parent()?
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        });
        out.push(BlockDev {
            name,
            devnum,
            partition,
            disk,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn read_head(path: &Path, n: usize) -> Option<Vec<u8>> {
    let mut f = fs::File::open(path).ok()?;
    let mut buf = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match f.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(_) => return None,
        }
    }
    buf.truncate(got);
    Some(buf)
}

/// The device node for `spec` if it is present now.
pub fn find_root(sys_dir: &Path, dev_dir: &Path, spec: &RootSpec) -> Option<PathBuf> {
    let node = |name: &str| dev_dir.join(name);
    match spec {
        RootSpec::Path(p) => {
            let n = node(p.strip_prefix("/dev/").unwrap_or(p));
            n.exists().then_some(n)
        }
        RootSpec::DevNum(a, b) => {
            let d = block_devices(sys_dir)
                .into_iter()
                .find(|d| d.devnum == (*a, *b))?;
            let n = node(&d.name);
            if !n.exists() {
                let _ = sys::mknod_block(&n, *a, *b);
            }
            n.exists().then_some(n)
        }
        RootSpec::Uuid(_) | RootSpec::Label(_) => {
            block_devices(sys_dir).into_iter().find_map(|d| {
                let n = node(&d.name);
                let fs_info = probe::superblock(&read_head(&n, probe::PROBE_BYTES)?)?;
                let hit = match spec {
                    RootSpec::Uuid(u) => fs_info.uuid == *u,
                    RootSpec::Label(l) => fs_info.label == *l,
                    _ => false,
                };
                hit.then_some(n)
            })
        }
        RootSpec::PartUuid(_) | RootSpec::PartLabel(_) => {
            block_devices(sys_dir).into_iter().find_map(|d| {
                let (num, disk) = (d.partition?, d.disk.as_ref()?);
                let head = read_head(&node(disk), probe::PART_BYTES)?;
                let sector = fs::read_to_string(
                    sys_dir
                        .join("class/block")
                        .join(disk)
                        .join("queue/logical_block_size"),
                )
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(512);
                let p = probe::partition(&head, num, sector)?;
                let hit = match spec {
                    RootSpec::PartUuid(u) => p.partuuid == *u,
                    RootSpec::PartLabel(l) => p.partlabel == *l,
                    _ => false,
                };
                hit.then(|| node(&d.name))
            })
        }
    }
}

/// The file system types to try, in order: `rootfstype=`, else what the superblock says,
/// else the plan's.
pub fn fstypes(cmd: &Cmdline, probed: Option<&str>, plan: &Plan) -> Vec<String> {
    if !cmd.rootfstype.is_empty() {
        return cmd.rootfstype.clone();
    }
    let mut v = Vec::new();
    for t in [probed, Some(plan.fstype.as_str())].into_iter().flatten() {
        if !t.is_empty() && !v.iter().any(|x| x == t) {
            v.push(t.to_string());
        }
    }
    v
}

fn mount_root(dev: &Path, cmd: &Cmdline, plan: &Plan, steps: &mut Steps) -> Result<String, String> {
    let probed = read_head(dev, probe::PROBE_BYTES).and_then(|b| probe::superblock(&b));
    steps.mark(
        "probed",
        probed
            .as_ref()
            .map(|p| p.fstype.as_str())
            .unwrap_or("unknown"),
    );
    let types = fstypes(cmd, probed.as_ref().map(|p| p.fstype.as_str()), plan);
    if types.is_empty() {
        return Err(format!(
            "no file system type for {}: its superblock is not one we know; give rootfstype=",
            dev.display()
        ));
    }
    let flags = if cmd.readonly { libc::MS_RDONLY } else { 0 };
    let data = cmd.rootflags.clone().unwrap_or_default();
    let _ = fs::create_dir_all(NEW_ROOT);
    let mut errors = Vec::new();
    for t in &types {
        match ::sys::mount(
            &dev.to_string_lossy(),
            Path::new(NEW_ROOT),
            non_empty(t),
            flags,
            non_empty(&data),
        ) {
            Ok(()) => return Ok(t.clone()),
            Err(e) => errors.push(format!("{t}: {e}")),
        }
    }
    Err(format!(
        "cannot mount {} on {NEW_ROOT} ({}{}): {}",
        dev.display(),
        if cmd.readonly { "ro" } else { "rw" },
        if data.is_empty() {
            String::new()
        } else {
            format!(", {data}")
        },
        errors.join("; ")
    ))
}

/// The checker this initramfs carries (with its libraries), when the system has it.
pub const E2FSCK: &str = "/sbin/e2fsck";
/// Where initramfs-tools leaves its root check's log and its "root checked" flag; Debian's
/// checkroot.sh skips its own check of the root when the flag is there.
pub const FSCK_LOG: &str = "/run/initramfs/fsck.log";
/// See [`FSCK_LOG`].
pub const FSCK_ROOT_FLAG: &str = "/run/initramfs/fsck-root";

/// What to do about the root's check, from the command line and the file system type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsckPlan {
    /// Leave it to the system (checkroot.sh, systemd-fsck-root), saying why.
    Skip(String),
    /// Run [`E2FSCK`] with these options before the device.
    Run(Vec<&'static str>),
}

/// The root's check as initramfs-tools does it (its `checkfs`, Debian 12), for ext2/3/4:
/// `fastboot` or `fsck.mode=skip` skips it, `forcefsck` or `fsck.mode=force` forces it
/// (`-f`), `fsckfix` or `fsck.repair=yes` answers yes to every repair (`-y`),
/// `fsck.repair=no` repairs nothing (`-n`), otherwise only safe repairs (`-p`, what
/// `fsck -a` runs). Exit 0 or 1 leaves initramfs-tools' flag [`FSCK_ROOT_FLAG`], as its
/// `_checkfs_once` does.
pub fn fsck_plan(cmd: &Cmdline, fstype: Option<&str>, have_e2fsck: bool) -> FsckPlan {
    let word = |w: &str| cmd.rest.iter().any(|x| x == w);
    if word("fastboot") || cmd.get("fsck.mode") == Some("skip") {
        return FsckPlan::Skip("fastboot: not checked".into());
    }
    if cmd.get("bootprint.initramfs.fsck") == Some("0") {
        return FsckPlan::Skip("bootprint.initramfs.fsck=0: left to the system".into());
    }
    if cmd.get(crate::FAULT_PARAM) == Some("fsck") {
        return FsckPlan::Skip(format!(
            "{}=fsck: not checked, for testing (checkroot.sh checks it)",
            crate::FAULT_PARAM
        ));
    }
    match fstype {
        Some("ext2" | "ext3" | "ext4") => {}
        other => {
            return FsckPlan::Skip(format!(
                "{} is not ext2/3/4: left to the system",
                other.unwrap_or("an unknown file system")
            ))
        }
    }
    if !have_e2fsck {
        return FsckPlan::Skip(format!("no {E2FSCK} in this initramfs: left to the system"));
    }
    let mut opts = vec![
        if word("fsckfix") || cmd.get("fsck.repair") == Some("yes") {
            "-y"
        } else if cmd.get("fsck.repair") == Some("no") {
            "-n"
        } else {
            "-p"
        },
    ];
    if word("forcefsck") || cmd.get("fsck.mode") == Some("force") {
        opts.push("-f");
    }
    FsckPlan::Run(opts)
}

/// Checks the root before it is mounted, so that checkroot.sh does not remount it
/// read-only to check it (3.7 s of the chain to the login on the test bed). Never fails the
/// boot: a check that cannot run or finds what it cannot fix safely (exit 2 and above)
/// leaves no flag, and checkroot.sh checks the root as it would without bootprint. Not
/// bounded in time, as no fsck is: stopping a repair half-way is worse than waiting.
fn check_root(dev: &Path, cmd: &Cmdline) -> String {
    let fstype = read_head(dev, probe::PROBE_BYTES)
        .and_then(|b| probe::superblock(&b))
        .map(|p| p.fstype);
    let opts = match fsck_plan(cmd, fstype.as_deref(), Path::new(E2FSCK).exists()) {
        FsckPlan::Skip(why) => return why,
        FsckPlan::Run(opts) => opts,
    };
    let _ = fs::create_dir_all("/run/initramfs");
    let out = std::process::Command::new(E2FSCK)
        .args(&opts)
        .arg(dev)
        .stdin(std::process::Stdio::null())
        .output();
    let (code, text) = match out {
        Ok(o) => (
            o.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        ),
        Err(e) => (None, format!("cannot run {E2FSCK}: {e}\n")),
    };
    let _ = fs::write(FSCK_LOG, &text);
    let summary = format!(
        "{E2FSCK} {} {}: exit {}",
        opts.join(" "),
        dev.display(),
        code.map_or("by a signal".into(), |c| c.to_string())
    );
    match code {
        // 0: clean; 1: errors corrected. The root is checked: checkroot.sh skips it.
        Some(0) | Some(1) => {
            let _ = fs::write(FSCK_ROOT_FLAG, "");
            summary
        }
        _ => {
            let msg = format!("{summary}; checkroot.sh will check the root ({FSCK_LOG})");
            sys::console(&format!("bootprint initramfs: {msg}\n"));
            kmsg(&format!("bootprint initramfs: {msg}"));
            msg
        }
    }
}

/// Refuses to go on unless `root` is an initramfs (ramfs or tmpfs): the switch deletes
/// every file on it, which on a disk would be the system itself (util-linux's and
/// busybox's switch_root refuse the same way).
pub fn check_initramfs_root(root: &Path) -> Result<(), String> {
    match ::sys::statfs(root).map(|s| s.fs_type) {
        // The file systems an initramfs is unpacked into.
        Ok(::sys::fs_magic::RAMFS | ::sys::fs_magic::TMPFS) => Ok(()),
        Ok(other) => Err(format!(
            "{} is not an initramfs (file system type {other:#x}, not ramfs or tmpfs): \
             refusing to delete its files",
            root.display()
        )),
        Err(e) => Err(format!("cannot tell what {} is: {e}", root.display())),
    }
}

/// Deletes the initramfs's files, then makes /root the root: what `switch_root` does.
fn switch_root() -> Result<(), String> {
    check_initramfs_root(Path::new("/"))?;
    let root_dev = sys::st_dev(Path::new("/"));
    let new_dev = sys::st_dev(Path::new(NEW_ROOT));
    if root_dev.is_none() || root_dev == new_dev {
        return Err(format!("{NEW_ROOT} is not a mount point"));
    }
    if let Ok(rd) = fs::read_dir("/") {
        for e in rd.flatten() {
            let p = e.path();
            if p != Path::new(NEW_ROOT) {
                remove_on_dev(&p, root_dev);
            }
        }
    }
    std::env::set_current_dir(NEW_ROOT).map_err(|e| format!("cannot chdir to {NEW_ROOT}: {e}"))?;
    sys::move_mount(".", "/").map_err(|e| format!("cannot move {NEW_ROOT} to /: {e}"))?;
    std::os::unix::fs::chroot(".").map_err(|e| format!("cannot chroot to the new root: {e}"))?;
    std::env::set_current_dir("/").map_err(|e| format!("cannot chdir to /: {e}"))?;
    Ok(())
}

/// Removes `p` and, for a directory, what is in it, staying on the file system `dev`.
fn remove_on_dev(p: &Path, dev: Option<u64>) {
    if sys::st_dev(p) != dev {
        return;
    }
    let Ok(m) = fs::symlink_metadata(p) else {
        return;
    };
    if m.is_dir() {
        if let Ok(rd) = fs::read_dir(p) {
            for e in rd.flatten() {
                remove_on_dev(&e.path(), dev);
            }
        }
        let _ = fs::remove_dir(p);
    } else {
        let _ = fs::remove_file(p);
    }
}

/// An empty mount type or option string is passed as NULL, as mount(8) does.
fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

fn kmsg(line: &str) {
    if let Ok(mut f) = fs::OpenOptions::new().write(true).open("/dev/kmsg") {
        let _ = f.write_all(line.as_bytes());
    }
}

/// Says why on the console and in the kernel log, waits [`FAIL_DELAY_S`], syncs and
/// stops the machine as `onfail` says. Never returns and never exits (PID 1).
pub fn fail(msg: &str, onfail: OnFail) -> ! {
    let what = match onfail {
        OnFail::Reboot => "rebooting",
        OnFail::Poweroff => "powering off",
        OnFail::Halt => "halting",
    };
    let text = format!(
        "bootprint initramfs: {msg}\nbootprint initramfs: cannot boot with this initramfs; {what} in {FAIL_DELAY_S} s (boot the distribution's entry instead)\n"
    );
    let mut told = false;
    if let Ok(mut c) = fs::OpenOptions::new().write(true).open("/dev/console") {
        told = c.write_all(text.as_bytes()).is_ok();
    }
    if !told {
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
    kmsg(&format!("bootprint initramfs: {msg}"));
    std::thread::sleep(Duration::from_secs(FAIL_DELAY_S));
    sys::sync();
    let cmd = match onfail {
        OnFail::Reboot => libc::RB_AUTOBOOT,
        OnFail::Poweroff => libc::RB_POWER_OFF,
        OnFail::Halt => libc::RB_HALT_SYSTEM,
    };
    let e = ::sys::reboot(cmd);
    let _ = std::io::stderr()
        .write_all(format!("bootprint initramfs: reboot(2) failed: {e}; halted\n").as_bytes());
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_root_check_follows_the_command_line_as_initramfs_tools_does() {
        let cmd = |t: &str| Cmdline::parse(t).unwrap();
        let plain = cmd("root=/dev/vda rw quiet");
        assert_eq!(
            fsck_plan(&plain, Some("ext4"), true),
            FsckPlan::Run(vec!["-p"])
        );
        assert_eq!(
            fsck_plan(&cmd("root=/dev/vda forcefsck fsckfix"), Some("ext3"), true),
            FsckPlan::Run(vec!["-y", "-f"])
        );
        assert_eq!(
            fsck_plan(&cmd("fsck.mode=force fsck.repair=no"), Some("ext2"), true),
            FsckPlan::Run(vec!["-n", "-f"])
        );
        for (c, fstype, have, why) in [
            ("fastboot", Some("ext4"), true, "fastboot"),
            ("fsck.mode=skip", Some("ext4"), true, "fastboot"),
            (
                "bootprint.initramfs.fsck=0",
                Some("ext4"),
                true,
                "left to the system",
            ),
            (
                "bootprint.initramfs.fault=fsck",
                Some("ext4"),
                true,
                "for testing",
            ),
            ("", Some("xfs"), true, "xfs is not ext2/3/4"),
            ("", None, true, "unknown"),
            ("", Some("ext4"), false, "no /sbin/e2fsck"),
        ] {
            match fsck_plan(&cmd(c), fstype, have) {
                FsckPlan::Skip(s) => assert!(s.contains(why), "{c}: {s}"),
                run => panic!("{c} {fstype:?}: {run:?}"),
            }
        }
    }

    use super::*;
    use std::os::unix::fs::symlink;

    /// A fake sysfs with a disk `vdb` (partition `vdb1`) and a fake /dev of plain files.
    fn fixture(dir: &Path) -> (PathBuf, PathBuf) {
        let sys = dir.join("sys");
        let dev = dir.join("dev");
        let disk = sys.join("devices/pci0000:00/0000:00:05.0/virtio3/block/vdb");
        fs::create_dir_all(disk.join("vdb1")).unwrap();
        fs::create_dir_all(disk.join("queue")).unwrap();
        fs::write(disk.join("dev"), "254:16\n").unwrap();
        fs::write(disk.join("queue/logical_block_size"), "512\n").unwrap();
        fs::write(disk.join("vdb1/dev"), "254:17\n").unwrap();
        fs::write(disk.join("vdb1/partition"), "1\n").unwrap();
        fs::create_dir_all(sys.join("class/block")).unwrap();
        symlink(&disk, sys.join("class/block/vdb")).unwrap();
        symlink(disk.join("vdb1"), sys.join("class/block/vdb1")).unwrap();
        fs::create_dir_all(&dev).unwrap();
        // The disk: an MBR with signature 0xdeadbeef; the partition: an ext4 superblock.
        let mut d = vec![0u8; probe::PART_BYTES];
        d[440..444].copy_from_slice(&0xdeadbeefu32.to_le_bytes());
        d[510] = 0x55;
        d[511] = 0xaa;
        fs::write(dev.join("vdb"), &d).unwrap();
        let mut p = vec![0u8; 4096];
        p[1024 + 0x38] = 0x53;
        p[1024 + 0x39] = 0xef;
        p[1024 + 0x68] = 0xab;
        p[1024 + 0x78..1024 + 0x7c].copy_from_slice(b"root");
        fs::write(dev.join("vdb1"), &p).unwrap();
        (sys, dev)
    }

    #[test]
    fn finds_the_root_every_way() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let (sys, dev) = fixture(dir);
        let want = Some(dev.join("vdb1"));
        let f = |s: &str| find_root(&sys, &dev, &crate::cmdline::parse_root(s).unwrap());
        assert_eq!(f("LABEL=root"), want);
        assert_eq!(f("UUID=ab000000-0000-0000-0000-000000000000"), want);
        assert_eq!(f("PARTUUID=DEADBEEF-01"), want);
        assert_eq!(f("/dev/vdb1"), want);
        assert_eq!(f("254:17"), want);
        assert_eq!(f("LABEL=other"), None);
        assert_eq!(f("PARTUUID=deadbeef-02"), None);
        let e = wait_for_root(
            &sys,
            &dev,
            &RootSpec::Label("nope".into()),
            Duration::from_secs(30),
            &|| Some("cannot load module virtio_blk".into()),
        )
        .unwrap_err();
        assert_eq!(e, "cannot load module virtio_blk");
        let e = wait_for_root(
            &sys,
            &dev,
            &RootSpec::Label("nope".into()),
            Duration::from_millis(30),
            &|| None,
        )
        .unwrap_err();
        assert!(e.contains("LABEL=nope did not appear within 0 s"), "{e}");
        assert!(e.contains("vdb vdb1"), "{e}");
    }

    #[test]
    fn fstype_order() {
        let plan = Plan {
            fstype: "ext4".into(),
            ..Plan::default()
        };
        let c = Cmdline::parse("rootfstype=xfs").unwrap();
        assert_eq!(fstypes(&c, Some("ext4"), &plan), vec!["xfs"]);
        let c = Cmdline::parse("").unwrap();
        assert_eq!(fstypes(&c, Some("btrfs"), &plan), vec!["btrfs", "ext4"]);
        assert_eq!(fstypes(&c, None, &plan), vec!["ext4"]);
    }

    #[test]
    fn a_failing_required_module_is_named() {
        let plan = Plan {
            modules: vec![crate::plan::Planned {
                name: "nothere".into(),
                path: "/lib/modules/x/nothere.ko".into(),
                optional: false,
                deps: vec![],
                options: String::new(),
            }],
            ..Plan::default()
        };
        let e = load_modules(&plan, Path::new("/nonexistent-root")).unwrap_err();
        assert!(
            e.contains("cannot load module nothere (/lib/modules/x/nothere.ko)"),
            "{e}"
        );
        // A module whose dependency failed is not tried, and says why.
        let mut two = plan.clone();
        two.modules[0].optional = true;
        two.modules.push(crate::plan::Planned {
            name: "user".into(),
            path: "/lib/modules/x/user.ko".into(),
            optional: false,
            deps: vec!["nothere".into()],
            options: String::new(),
        });
        let e = load_modules(&two, Path::new("/nonexistent-root")).unwrap_err();
        assert!(
            e.contains("cannot load module user") && e.contains("needs nothere"),
            "{e}"
        );
        let mut opt = plan.clone();
        opt.modules[0].optional = true;
        let s = load_modules(&opt, Path::new("/nonexistent-root")).unwrap();
        assert!(s.contains("nothere:skipped"), "{s}");
    }

    #[test]
    fn steps_log_format() {
        let mut s = Steps::default();
        s.mark("start", "");
        s.mark("modules", "2 in 5 ms");
        let t = s.text();
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("# bootprint initramfs steps 1"));
        assert!(lines[1].ends_with(" start"));
        let f: Vec<&str> = lines[2].splitn(3, ' ').collect();
        assert!(f[0].parse::<u64>().is_ok());
        assert_eq!(&f[1..], ["modules", "2 in 5 ms"]);
        assert!(s.summary().starts_with("modules +"), "{}", s.summary());
    }
}
