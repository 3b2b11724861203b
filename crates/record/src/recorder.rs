//! The recording loop: sample at the configured rate on absolute deadlines (so the rate does
//! not drift), take exec events as they come, mark milestones, stop when boot is done or at
//! the time limit, then write the trace.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sample::procfs::{self, CachedFile, Listing, ProcFs, ProcessTable};
use sys::boottime_ns;
use trace::Event;

use crate::config::Config;
use crate::done::{DoneDetector, Thresholds};
use crate::execs::ExecSource;
use crate::store::{Access, Store};
use crate::{kmsg, sysinfo};
use sample::knob::KnobGuard;

/// Exec events are taken at most this often (ns), besides at every sample.
const EXEC_COALESCE_NS: u64 = 50_000_000;
/// With the connector's process events, /proc is still listed at one sample in this many.
const RESCAN_EVERY: u64 = 50;

/// Where the recorder looks and writes; every path a parameter so tests use their own.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The /proc to sample.
    pub proc: ProcFs,
    /// The kernel log device.
    pub kmsg: PathBuf,
    /// A path on the file system to watch for execs (the root).
    pub exec_root: PathBuf,
    /// The delay-accounting switch: read for `recorder_stats`, and with `delayacct = true`
    /// turned on while recording (per-task I/O wait) and put back afterwards.
    pub delayacct: PathBuf,
    /// Where to write if `log_dir` cannot be written.
    pub fallback_dir: PathBuf,
    /// The sysfs root (firmware times are copied from it).
    pub sys: PathBuf,
    /// The service runner's span log (`bootprint-boot rc`), copied into the trace as
    /// `rc.log` when it exists.
    pub rc_log: PathBuf,
    /// The systemd late-unit waiter's log (`systemd::waiter`), copied as `late.log`.
    pub late_log: PathBuf,
    /// Where the learned systemd late units are kept (`systemd::late`).
    pub late_state: PathBuf,
    /// The group file: the trace is readable by group `adm` when it lists one.
    pub etc_group: PathBuf,
}

impl Default for Paths {
    fn default() -> Self {
        Paths {
            proc: ProcFs::default(),
            kmsg: PathBuf::from("/dev/kmsg"),
            exec_root: PathBuf::from("/"),
            delayacct: PathBuf::from("/proc/sys/kernel/task_delayacct"),
            fallback_dir: PathBuf::from("/run/bootprint"),
            sys: PathBuf::from("/sys"),
            rc_log: PathBuf::from("/run/bootprint/rc.log"),
            late_log: PathBuf::from(systemd::generator::LATE_LOG),
            late_state: PathBuf::from(systemd::generator::STATE_FILE),
            etc_group: PathBuf::from("/etc/group"),
        }
    }
}

/// What the boot path knows before the recorder starts.
#[derive(Debug, Default)]
pub struct Start {
    /// When the real init was exec'd and which, if bootprint-boot did it.
    pub init_exec: Option<(u64, String)>,
    /// Stop after this long even before the configured time limit (used outside boot).
    pub stop_after_ns: Option<u64>,
    /// Configuration problems to record as warnings.
    pub warnings: Vec<String>,
    /// What readahead does this boot (decided before init was exec'd).
    pub readahead: crate::readahead::Plan,
    /// The module loader started before init, if any.
    pub modules: crate::modload::Boot,
}

/// Records until boot is done and writes the trace; returns its directory.
pub fn run(config: &Config, paths: &Paths, start: Start) -> io::Result<PathBuf> {
    let t_start = boottime_ns();
    crate::sys::catch_termination();
    crate::fault::arm(&config.fault);
    let mut store = Store::default();
    let (clk_tck, page_size) = (sys::clk_tck(), sys::page_size());
    store.events.push(
        Event::new(t_start, "recorder_start")
            .with("pid", std::process::id())
            .with("hz", config.hz)
            .with("version", env!("CARGO_PKG_VERSION")),
    );
    if let Some((t, path)) = &start.init_exec {
        store
            .events
            .push(Event::new(*t, "init_exec").with("path", path));
    }
    for w in &start.warnings {
        store
            .events
            .push(Event::new(t_start, "warning").with("what", w));
    }

    let mut readahead = crate::readahead::Session::start(start.readahead, &mut store.events);
    if start.modules.is_control() {
        readahead.set_aside("the module loader compared on this boot");
    }
    let mut watch = ExecSource::open(&config.exec_events, &paths.exec_root, t_start, &mut store);
    // Per-task I/O delay needs delay accounting, off by default since Linux 5.14. Switched
    // on here only when asked: the switch patches the kernel's code (a static key) while
    // init forks, which wedges QEMU's TCG for good (docs/testbed.md "Kernel stalls").
    let _delayacct = config
        .delayacct
        .then(|| KnobGuard::set(&paths.delayacct, "1"));
    let delayacct_on = fs::read_to_string(&paths.delayacct).is_ok_and(|v| v.trim() == "1");

    let period = (1_000_000_000 / config.hz.max(1) as u64).max(1);
    let timeout_ns = (config.timeout_s * 1e9) as u64;
    let mut detector = DoneDetector::new(Thresholds {
        cpu: config.idle_cpu,
        disk: config.idle_disk,
        settle_ns: (config.settle_s * 1e9) as u64,
    });
    let mut table = ProcessTable::new(paths.proc.clone());
    let (mut born, mut gone) = (Vec::new(), Vec::new());
    let mut records = Vec::new();
    let mut prev_forks = None;
    let mut login_ns = None;
    let mut waited_for_services = false;
    let mut greeter_seen = false;
    let mut cmdline_retry = CmdlineRetry::default();
    let mut root_writable = false;
    let mut next_root_check = t_start;
    let mut late = 0u64;
    let mut sample_no = 0u64;
    // All CPUs' busy time at the last sample (clock ticks): the boot's CPU, for the
    // recorder's share of it.
    let mut boot_busy_ticks = 0u64;
    let mut stat_file = CachedFile::new(paths.proc.path("stat"));
    let mut diskstats_file = CachedFile::new(paths.proc.path("diskstats"));
    let mut meminfo_file = CachedFile::new(paths.proc.path("meminfo"));
    let own_pid = std::process::id();
    store.observer_pid = Some(own_pid);
    let mut next = t_start;

    let mut exec_quiet_until = 0u64;
    let setup_cpu_s = sample::sys::own_usage().0;
    // CPU time by part of the loop (exec events, system files, process table, new
    // processes, the rest), for recorder_stats: where the recorder's cost goes. Only with
    // `cost_detail`: the clock reads are system calls, a cost of their own.
    let mut parts = [0u64; 5];
    let mut mark = if config.cost_detail {
        sys::thread_cpu_ns()
    } else {
        0
    };
    let mut lap = |part: usize, parts: &mut [u64; 5]| {
        if !config.cost_detail {
            return;
        }
        let t = sys::thread_cpu_ns();
        parts[part] += t.saturating_sub(mark);
        mark = t;
    };
    table.time_listing = config.cost_detail;
    let done = loop {
        lap(4, &mut parts);
        // Sleep until the deadline, taking exec events as they arrive, but at most once per
        // EXEC_COALESCE_NS: a boot of shell scripts execs thousands of times, and a wake-up
        // per exec was the recorder's largest cost after the process table
        // (docs/recorder.md, "Cost").
        let now = loop {
            let now = boottime_ns();
            if now >= next {
                break now;
            }
            let watch_fd = watch.wake_fd().filter(|_| now >= exec_quiet_until);
            let until = if watch.wake_fd().is_some() && watch_fd.is_none() {
                next.min(exec_quiet_until)
            } else {
                next
            };
            let wait_ms = (until - now).div_ceil(1_000_000) as i32;
            if sample::sys::wait_readable(watch_fd, wait_ms).unwrap_or(false) {
                let taken = boottime_ns();
                exec_quiet_until = taken + EXEC_COALESCE_NS;
                watch.drain(taken, &paths.proc, &mut store.events);
            }
        };
        if now - next > period {
            // Starved (the boot had the CPU): skip the missed deadlines instead of bursting.
            late += 1;
            next = now;
        }
        next += period;

        lap(0, &mut parts);
        let cs = now / 10_000_000;
        let stat = stat_file.read();
        let diskstats = diskstats_file.read();
        // Memory moves slowly and /proc/meminfo is costly to produce: every fifth sample.
        sample_no += 1;
        let meminfo = (sample_no % 5 == 1).then(|| procfs::filter_meminfo(meminfo_file.read()));
        store.push_system(
            cs,
            &procfs::filter_stat(stat),
            &procfs::filter_diskstats(diskstats),
            meminfo.as_deref(),
        );
        let forks = procfs::forks(stat);
        let forked = forks.is_none() || forks != prev_forks;
        prev_forks = forks;
        lap(1, &mut parts);
        // With the connector, its fork and exit events say which processes came and went:
        // no listing of /proc. Listed anyway at the first sample (what ran before the
        // recorder), after lost events, and every RESCAN_EVERY samples (a pid reused between
        // two samples would otherwise be missed).
        if matches!(watch, ExecSource::Connector(_)) {
            watch.drain(now, &paths.proc, &mut store.events);
        }
        let complete = watch.take_lifecycle(&mut born, &mut gone);
        let listing = if complete && sample_no % RESCAN_EVERY != 1 {
            Listing::Events {
                born: &born,
                gone: &gone,
            }
        } else if forked {
            Listing::Rescan
        } else {
            Listing::Known
        };
        lap(0, &mut parts);
        table.sample(listing, &mut records);
        lap(2, &mut parts);
        for pid in cmdline_retry.due() {
            let argv = paths.proc.cmdline(pid);
            if !argv.is_empty() {
                store.push_cmdline(pid, &paths.proc.exe(pid), &argv);
                cmdline_retry.done(pid);
            }
        }
        for &i in table.fresh() {
            let r = &records[i];
            // New process, or its comm changed (it exec'd): read its command line.
            let argv = paths.proc.cmdline(r.pid);
            let exe = paths.proc.exe(r.pid);
            store.push_cmdline(r.pid, &exe, &argv);
            if argv.is_empty() && r.ppid != 2 && r.pid != 2 {
                cmdline_retry.add(r.pid);
            }
            let started_ns = r.starttime * 1_000_000_000 / clk_tck;
            if login_ns.is_none() && config.login_names.contains(&r.comm) {
                login_ns = Some(started_ns);
                store
                    .events
                    .push(milestone(started_ns, "text_login", r.pid, &r.comm));
            }
            if !greeter_seen && config.greeter_names.contains(&r.comm) {
                greeter_seen = true;
                store
                    .events
                    .push(milestone(started_ns, "graphical_login", r.pid, &r.comm));
            }
        }
        lap(3, &mut parts);
        store.push_processes(cs, &records);

        if let Some((busy, _idle, _iowait, total)) = procfs::cpu_totals(stat) {
            boot_busy_ticks = busy;
            // The observer's own CPU time is not the boot's: without this, the recorder
            // alone can keep an emulated machine "busy".
            let own = records
                .iter()
                .find(|r| r.pid == own_pid)
                .map_or(0, |r| r.utime + r.stime);
            detector.feed(
                now,
                busy.saturating_sub(own),
                total,
                &procfs::disk_io_ms(diskstats),
            );
        }
        if !root_writable && now >= next_root_check {
            next_root_check = now + 1_000_000_000;
            if sys::statvfs(Path::new("/")).ok().map(|s| s.read_only) == Some(false) {
                root_writable = true;
                store.events.push(Event::new(now, "root_writable"));
            }
        }
        if detector.done_at(now, login_ns).is_some()
            && (services_pending(&paths.rc_log) || late_units_pending(&paths.late_log))
        {
            detector.not_before(now);
            waited_for_services = true;
        }
        if let Some(at) = detector.done_at(now, login_ns) {
            let done = Event::new(at, "boot_done")
                .with("reason", "idle")
                .with("settle_s", config.settle_s);
            break if waited_for_services {
                done.with("waited_for", "services")
            } else {
                done
            };
        }
        if crate::sys::terminated() {
            break Event::new(now, "boot_done")
                .with("reason", "terminated")
                .with("settle_s", config.settle_s);
        }
        let over_time = now >= timeout_ns;
        let over_run = start.stop_after_ns.is_some_and(|d| now - t_start >= d);
        if over_time || over_run {
            break Event::new(now, "boot_done")
                .with("reason", if over_time { "timeout" } else { "limit" })
                .with("settle_s", config.settle_s);
        }
    };
    let loop_cpu_s = sample::sys::own_usage().0;
    let done_ns = (done
        .fields
        .iter()
        .any(|(k, v)| k == "reason" && v == "idle"))
    .then_some(done.t_ns);
    store.events.push(done);
    watch.drain(boottime_ns(), &paths.proc, &mut store.events);
    let (exec_source, exec_overflows) = (watch.name(), watch.overflows());
    drop(watch);
    // The header holds the kernel release readahead's relearn check needs.
    store.header = sysinfo::header(&paths.proc, config.hz, clk_tck, page_size);
    let release = store
        .header
        .iter()
        .find(|(k, _)| k == "bootprint.kernel_release")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let seen = crate::readahead::Milestones { login_ns, done_ns };
    readahead.finish(&mut store.events, config, &release, seen);
    start.modules.finish(&mut store.events, config, seen);

    store.dmesg = kmsg::read_all(&paths.kmsg);
    store.extra_files = sysinfo::firmware_files(&paths.sys);
    // The modules live at boot done: what udev's coldplug (and our loader) left loaded.
    if let Ok(modules) = paths.proc.read("modules") {
        store.extra_files.push(("proc_modules".into(), modules));
    }
    // The runner's spans so far (its late-service child may still be appending; the copy
    // in /var/lib/bootprint/rc-last.log is complete once it ends).
    if let Ok(spans) = std::fs::read(&paths.rc_log) {
        store.extra_files.push(("rc.log".into(), spans));
    }
    // bootprint's initramfs leaves its steps' times beside it (docs/initramfs.md).
    if let Ok(steps) = std::fs::read(paths.rc_log.with_file_name("initramfs.log")) {
        store.extra_files.push(("initramfs.log".into(), steps));
    }
    let (cpu_s, maxrss_kb) = sample::sys::own_usage();
    // Its share of all the CPU time the boot used (docs/recorder.md, "Cost").
    let boot_cpu_s = boot_busy_ticks as f64 / clk_tck.max(1) as f64;
    let share_pct = if boot_cpu_s > 0.0 {
        100.0 * cpu_s / boot_cpu_s
    } else {
        0.0
    };
    let mut stats = Event::new(boottime_ns(), "recorder_stats")
        .with("samples", store.ps_sample_count())
        .with("hz", config.hz)
        .with("boot_cpu_s", format!("{boot_cpu_s:.3}"))
        .with("share_pct", format!("{share_pct:.2}"))
        .with("setup_cpu_s", format!("{setup_cpu_s:.3}"))
        .with("at_done_cpu_s", format!("{loop_cpu_s:.3}"))
        .with("late_samples", late)
        .with("cpu_s", format!("{cpu_s:.3}"))
        .with("maxrss_kb", maxrss_kb)
        .with("ps_lines", store.ps_line_count())
        .with("stat_reads", table.reads)
        .with("store_bytes", store.memory_bytes())
        .with("delayacct", u8::from(delayacct_on))
        .with("exec_source", exec_source)
        .with("exec_overflows", exec_overflows);
    if config.cost_detail {
        let ms = parts.map(|ns| (ns / 1_000_000).to_string());
        stats = stats
            .with("parts_ms", ms.join(","))
            .with("list_ms", table.list_ns / 1_000_000);
    }
    store.events.push(stats);
    if let Ok(log) = std::fs::read(&paths.late_log) {
        store.extra_files.push(("late.log".into(), log));
    }
    if config.late {
        learn_late_units(config, paths, &mut store);
    }
    let boot_id = sysinfo::boot_id(&paths.proc);
    let access = Access::from_group_file(&paths.etc_group);
    write_trace(
        &store,
        &config.log_dir,
        &paths.fallback_dir,
        &boot_id,
        access,
    )
}

/// Processes whose command line read empty though they are no kernel threads: caught in
/// the middle of an exec (the kernel sets the new name before the new arguments; under
/// emulation the window is wide), they are read again at the next few samples. A later
/// `cmdline2.log` entry for a pid replaces the earlier one. Seen in `make test`: `sleep 4`
/// recorded as `sleep` with no arguments, and `bootprint advise` could not name it.
#[derive(Debug, Default)]
struct CmdlineRetry {
    /// (pid, samples left).
    pending: Vec<(u32, u8)>,
}

impl CmdlineRetry {
    /// Samples a process is read again at most.
    const TRIES: u8 = 5;

    fn add(&mut self, pid: u32) {
        self.pending.retain(|&(p, _)| p != pid);
        self.pending.push((pid, Self::TRIES));
    }

    /// The pids to read again this sample (each counts one try; out of tries, dropped).
    fn due(&mut self) -> Vec<u32> {
        self.pending.retain(|&(_, left)| left > 0);
        for (_, left) in &mut self.pending {
            *left -= 1;
        }
        self.pending.iter().map(|&(p, _)| p).collect()
    }

    fn done(&mut self, pid: u32) {
        self.pending.retain(|&(p, _)| p != pid);
    }
}

fn milestone(t_ns: u64, name: &str, pid: u32, comm: &str) -> Event {
    Event::new(t_ns, "milestone")
        .with("name", name)
        .with("pid", pid)
        .with("comm", comm)
        .with("source", "process_start")
}

/// Writes the trace into `<log_dir>/<boot_id>/` (via a temporary name, so a directory with
/// that name is always complete) and points `latest` at it. Waits up to two minutes for a
/// read-only root to become writable; after that writes under `fallback`. The trace, and
/// `log_dir` when this creates it, get `access` (docs/recorder.md).
pub fn write_trace(
    store: &Store,
    log_dir: &Path,
    fallback: &Path,
    boot_id: &str,
    access: Access,
) -> io::Result<PathBuf> {
    for _ in 0..120 {
        if sys::statvfs(existing_ancestor(log_dir))
            .ok()
            .map(|s| s.read_only)
            != Some(true)
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    match write_into(store, log_dir, boot_id, access) {
        Ok(dir) => Ok(dir),
        Err(_) => write_into(store, fallback, boot_id, access),
    }
}

fn write_into(store: &Store, base: &Path, boot_id: &str, access: Access) -> io::Result<PathBuf> {
    if !base.is_dir() {
        fs::create_dir_all(base)?;
        access.set_dir(base)?;
        if let Some(parent) = base.parent() {
            let _ = crate::store::sync_dir(parent);
        }
    }
    let tmp = base.join(format!(".{boot_id}.tmp"));
    let dir = base.join(boot_id);
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir(&tmp)?;
    // Before anything is written into it: no moment where the kernel log is readable.
    access.set_dir(&tmp)?;
    // The trace must survive a power cut right after boot: its files (write_to) and their
    // directory entries are on disk before the rename makes it appear, and the rename and
    // `latest` after.
    store.write_to(&tmp, access)?;
    crate::fault::at("poweroff-in-trace");
    crate::store::sync_dir(&tmp)?;
    if dir.exists() {
        fs::remove_dir_all(&dir)?;
    }
    fs::rename(&tmp, &dir)?;
    let link_tmp = base.join(".latest.tmp");
    let _ = fs::remove_file(&link_tmp);
    std::os::unix::fs::symlink(boot_id, &link_tmp)?;
    fs::rename(&link_tmp, base.join("latest"))?;
    // The trace is in place whatever this says; writing it again elsewhere would not help.
    let _ = crate::store::sync_dir(base);
    Ok(dir)
}

fn existing_ancestor(path: &Path) -> &Path {
    let mut p = path;
    while !p.exists() {
        match p.parent() {
            Some(parent) => p = parent,
            None => break,
        }
    }
    p
}

/// Whether systemd's late units are still being started (`systemd::waiter::pending`), with
/// the same staleness rule as the runner's log.
fn late_units_pending(late_log: &Path) -> bool {
    let fresh = std::fs::metadata(late_log)
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|m| m.elapsed().ok())
        .is_some_and(|age| age.as_secs() < 130);
    fresh
        && std::fs::read_to_string(late_log)
            .map(|t| systemd::waiter::pending(&t))
            .unwrap_or(false)
}

/// On systemd (PID 1's name says so), asks the manager which units can start late next boot
/// and keeps the answer (`systemd::learn`); the choice, with the reason for each unit kept
/// early, goes into the trace as `systemd-late.txt`. Runs after boot done, so it costs the
/// boot nothing; a failure is a warning in the trace and leaves the last state as it was.
fn learn_late_units(config: &Config, paths: &Paths, store: &mut Store) {
    let pid1 = paths.proc.read("1/comm").unwrap_or_default();
    if String::from_utf8_lossy(&pid1).trim() != "systemd" {
        return;
    }
    let t0 = boottime_ns();
    let pins = systemd::late::Pins {
        late: config.late_units.clone(),
        never_late: config.never_late.clone(),
    };
    let systemctl = ["/usr/bin/systemctl", "/bin/systemctl"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists())
        .unwrap_or(Path::new("systemctl"));
    match systemd::learn::learn(systemctl, &pins) {
        Ok(choice) => {
            let text = systemd::late::to_state(&choice);
            let saved = rc::state::write_atomic(&paths.late_state, text.as_bytes());
            let mut e = Event::new(boottime_ns(), "late_learned")
                .with("late", choice.late.len())
                .with("kept", choice.kept.len())
                .with("ms", (boottime_ns().saturating_sub(t0)) / 1_000_000);
            if let Err(err) = saved {
                e = e.with(
                    "error",
                    format!("{}: {err}", paths.late_state.display()).replace(' ', "_"),
                );
            }
            store.events.push(e);
            store
                .extra_files
                .push(("systemd-late.txt".into(), text.into_bytes()));
        }
        Err(err) => store.events.push(
            Event::new(boottime_ns(), "warning")
                .with("what", format!("systemd late units not learned: {err}")),
        ),
    }
}

/// Whether bootprint's service runner still has services to start ([`done::services_pending`]
/// on its span log). A log untouched for longer than the runner's default per-script timeout
/// (120 s) and a margin belongs to a runner that died: it holds nothing back.
fn services_pending(rc_log: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(rc_log) else {
        return false;
    };
    let fresh = meta
        .modified()
        .ok()
        .and_then(|m| m.elapsed().ok())
        .is_none_or(|age| age.as_secs() < 130);
    fresh
        && std::fs::read_to_string(rc_log)
            .map(|t| crate::done::services_pending(&t))
            .unwrap_or(false)
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_empty_command_line_is_read_again_a_few_times() {
        let mut r = CmdlineRetry::default();
        r.add(891);
        r.add(892);
        assert_eq!(r.due(), vec![891, 892]);
        r.done(891);
        for _ in 1..CmdlineRetry::TRIES {
            assert_eq!(r.due(), vec![892]);
        }
        assert!(r.due().is_empty(), "out of tries");
        // A pid exec'ing again starts over.
        r.add(7);
        r.add(7);
        assert_eq!(r.due(), vec![7]);
    }

    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// Every directory and file under `dir` (itself included) with its mode and group.
    fn modes(dir: &Path) -> Vec<(PathBuf, bool, u32, u32)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(p) = stack.pop() {
            let m = fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                continue; // `latest`: a link's own mode means nothing
            }
            out.push((p.clone(), m.is_dir(), m.mode() & 0o7777, m.gid()));
            if m.is_dir() {
                for e in fs::read_dir(&p).unwrap() {
                    stack.push(e.unwrap().path());
                }
            }
        }
        out
    }

    /// Each file of the trace is on disk before the rename that makes the trace appear, and
    /// the rename itself (and `latest`) is on disk after: fsync each file, the temporary
    /// directory, then the log directory.
    #[test]
    fn trace_files_are_synced_before_the_rename_and_the_directory_after() {
        let d = std::env::temp_dir().join(format!("bp-sync-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        let mut store = Store::default();
        store.push_system(100, b"cpu 1 2 3 4 5 6 7\n", b"", None);
        store.extra_files.push((
            "firmware/fpdt/boot/firmware_start_ns".into(),
            b"1\n".to_vec(),
        ));
        let base = d.join("log");
        crate::store::SYNCED.with(|s| s.borrow_mut().clear());
        let dir = write_trace(&store, &base, &d.join("fb"), "b00t", Access { gid: None }).unwrap();
        let synced = crate::store::SYNCED.with(|s| s.take());
        let tmp = base.join(".b00t.tmp");
        let mut files = Vec::new();
        let mut stack = vec![dir.clone()];
        while let Some(p) = stack.pop() {
            for e in fs::read_dir(&p).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    stack.push(path.clone());
                }
                files.push(path.strip_prefix(&dir).unwrap().to_path_buf());
            }
        }
        assert!(files.len() >= 10, "{files:?}");
        let at = |p: &Path| synced.iter().position(|s| s == p);
        let tmp_synced = at(&tmp).unwrap_or_else(|| panic!("{tmp:?} not synced: {synced:?}"));
        for f in &files {
            let i = at(&tmp.join(f)).unwrap_or_else(|| panic!("{f:?} not synced: {synced:?}"));
            assert!(
                i < tmp_synced,
                "{f:?} synced after its directory: {synced:?}"
            );
        }
        let base_synced = at(&base).unwrap_or_else(|| panic!("{base:?} not synced: {synced:?}"));
        assert!(base_synced > tmp_synced, "{synced:?}");
        fs::remove_dir_all(&d).unwrap();
    }

    /// Defect 9: a trace holds the whole kernel log and every command line; it was
    /// world-readable. Only root and group adm may read it.
    #[test]
    fn defect9_trace_is_for_root_and_adm_only() {
        let d = std::env::temp_dir().join(format!("bp-perms-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        let mut store = Store::default();
        store.push_system(100, b"cpu 1 2 3 4 5 6 7\n", b"", None);
        store.dmesg = b"[    0.000000] secret\n".to_vec();
        store.extra_files.push((
            "firmware/fpdt/boot/firmware_start_ns".into(),
            b"1\n".to_vec(),
        ));
        // A group file with adm (gid 4, as on Debian), and one without.
        fs::create_dir_all(&d).unwrap();
        let with_adm = d.join("group");
        fs::write(&with_adm, "root:x:0:\nadmins:x:9:\nadm:x:4:syslog,me\n").unwrap();
        let without = d.join("group2");
        fs::write(&without, "root:x:0:\nadmins:x:9:\n").unwrap();
        for (group, dmode, fmode, gid) in [
            (&with_adm, 0o750, 0o640, Some(4)),
            (&without, 0o700, 0o600, None),
        ] {
            let base = d.join("log");
            let _ = fs::remove_dir_all(&base);
            let access = Access::from_group_file(group);
            assert_eq!(access.gid, gid);
            let dir = write_trace(&store, &base, &d.join("fallback"), "b00t", access).unwrap();
            assert_eq!(dir, base.join("b00t"));
            let found = modes(&base);
            assert!(found.len() > 10, "{found:?}");
            for (p, is_dir, mode, g) in found {
                assert_eq!(mode, if is_dir { dmode } else { fmode }, "{}", p.display());
                if let Some(gid) = gid {
                    assert_eq!(g, gid, "{}", p.display());
                }
            }
            assert_eq!(Access::of_dir(&dir).unwrap(), access);
        }
        fs::remove_dir_all(&d).unwrap();
    }
}
