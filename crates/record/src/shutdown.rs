//! Recording a shutdown (docs/recorder.md, "Shutdown"): the boot's recorder, started when
//! the shutdown is asked for and kept until the root file system is about to go read-only,
//! writes `shutdown/` into the trace of the boot it ends. The next boot joins it with its own
//! (`analyze::cycle`).
//!
//! Who starts and ends it: on sysvinit, bootprint's runner for runlevels 0 and 6 starts it
//! before the first stop and asks it to save ([`save`], SIGUSR1) before the script that
//! remounts the root read-only; sendsigs spares it ([`SENDSIGS_OMIT`]). On systemd,
//! `bootprint-shutdown.service` starts with the shutdown's jobs and systemd-shutdown's
//! SIGTERM to every remaining process (after every unit stopped, before the root is
//! remounted read-only) ends it. Why then and not after: nothing can be written once the
//! root is read-only, and what follows (the remount, sync, the devices' shutdown, the
//! firmware) is measured from the next boot as the gap to its kernel's start.
//!
//! The trace is written whole or not at all: into `.shutdown.tmp` beside, synced, then
//! renamed to `shutdown` ([`write`]).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use trace::events::SHUTDOWN_JOURNAL_BEFORE_NS as JOURNAL_BEFORE_NS;
use trace::events::{SHUTDOWN_SYNC_EVENT as SYNC_EVENT, SHUTDOWN_SYNC_FILE as SYNC_FILE};
use trace::Event;

use crate::config::Config;
use crate::recorder::{self, Paths, Start};
use crate::store::{Access, Store};

/// When the process that asked for the shutdown started (`by`: its command line), when it
/// was still there as the recorder started: the request itself, a little before the init
/// acted on it.
pub const REQUEST_EVENT: &str = "shutdown_request";
/// The event that opens a shutdown's `events.log`, with `how` it was asked for.
pub const START_EVENT: &str = "shutdown_start";
/// The event that ends it, with `reason`: `saved` (asked to, before the root went
/// read-only), `terminated` (systemd-shutdown's SIGTERM) or `limit`.
pub const END_EVENT: &str = "shutdown_end";
/// The shutdown's directory inside the boot's trace.
pub const DIR_NAME: &str = "shutdown";
/// The running shutdown recorder's pid; removed once its trace is written (what [`save`]
/// waits for).
pub const PID_FILE: &str = "/run/bootprint/shutdown.pid";
/// sendsigs (Debian's runlevel 0 and 6) spares the pids listed in this directory's files.
pub const SENDSIGS_OMIT: &str = "/run/sendsigs.omit.d/bootprint-shutdown";
/// A shutdown is recorded for at most this long (s): one that takes longer is written then.
pub const LIMIT_S: u64 = 900;

/// The hardware clock's offset, measured as the shutdown began (a second's wait is not
/// spent at the end, where it would lengthen the shutdown).
static RTC_OFFSET: std::sync::OnceLock<i64> = std::sync::OnceLock::new();

/// The `clock` event at the shutdown's end, with the offset measured at its start.
pub fn clock_event() -> Event {
    crate::sysinfo::clock_event(RTC_OFFSET.get().copied())
}

/// Where the shutdown's trace goes: `<log_dir>/<boot_id>/shutdown`.
pub fn dir_of(log_dir: &Path, boot_id: &str) -> PathBuf {
    log_dir.join(boot_id).join(DIR_NAME)
}

/// Records the shutdown (`how`: `runlevel 6`, `systemd`) until asked to save, terminated or
/// [`LIMIT_S`]; returns the trace's directory, or None when this boot was not recorded
/// (no trace of it to add to) or recording is off.
/// `pid_file` is [`PID_FILE`] but in tests.
pub fn record(
    config: &Config,
    paths: &Paths,
    how: &str,
    pid_file: &Path,
) -> io::Result<Option<PathBuf>> {
    let boot_id = crate::sysinfo::boot_id(&paths.proc);
    if !config.record || !config.log_dir.join(&boot_id).is_dir() {
        return Ok(None);
    }
    crate::sys::catch_save();
    std::thread::spawn(|| {
        if let Ok(off) = crate::sys::rtc_offset_ns(Path::new(crate::sysinfo::RTC_DEV)) {
            let _ = RTC_OFFSET.set(off);
        }
    });
    let pid = std::process::id().to_string();
    sys::write_atomic(pid_file, pid.as_bytes())?;
    // Only where initscripts made the directory: on systemd nothing reads it.
    let omit = Path::new(SENDSIGS_OMIT);
    let omitted =
        omit.parent().is_some_and(Path::is_dir) && sys::write_atomic(omit, pid.as_bytes()).is_ok();
    let start = Start {
        stop_after_ns: Some(LIMIT_S * 1_000_000_000),
        shutdown: Some(how.to_string()),
        shutdown_request: earliest(
            requester(&paths.proc.path(""), sys::clk_tck()),
            fast_path_request(),
        ),
        ..Start::default()
    };
    let mut config = config.clone();
    // The boot's uptime limit means nothing here: only the run's limit stops it.
    config.timeout_s = f64::MAX / 2e9;
    let written = recorder::run(&config, paths, start);
    if omitted {
        let _ = fs::remove_file(omit);
    }
    let _ = fs::remove_file(pid_file);
    written.map(Some)
}

/// Whether a command line asks for a shutdown: `reboot`, `poweroff`, `halt`, `shutdown`,
/// `systemctl reboot|poweroff|halt|kexec|soft-reboot`, `init 0|6` / `telinit 0|6`,
/// sysvinit's `rc 0|6` (`/etc/init.d/rc 6`, once init acts on the request) and bootprint's
/// own fast path, `bootprint reboot` (its kexec load comes before the init's request).
pub fn is_request(argv: &[&str]) -> bool {
    let Some(program) = argv.first().map(|p| p.rsplit('/').next().unwrap_or(p)) else {
        return false;
    };
    // `/etc/init.d/rc 6` runs as `/bin/sh /etc/init.d/rc 6`.
    let (program, args) = match (program, argv.get(1)) {
        ("sh" | "bash" | "dash", Some(script)) => {
            (script.rsplit('/').next().unwrap_or(script), &argv[2..])
        }
        _ => (program, &argv[1..]),
    };
    let first = args.first().copied().unwrap_or_default();
    match program {
        "reboot" | "poweroff" | "halt" | "shutdown" => true,
        "systemctl" => args
            .iter()
            .any(|a| matches!(*a, "reboot" | "poweroff" | "halt" | "kexec" | "soft-reboot")),
        "init" | "telinit" | "rc" => matches!(first, "0" | "6"),
        "bootprint" => first == "reboot",
        _ => false,
    }
}

/// The request as the processes still show it: the earliest-started process under `proc`
/// whose command line [`is_request`], with its start (CLOCK_BOOTTIME ns, from
/// `/proc/PID/stat`'s start time in `clk_tck` ticks) and command line. None when it has
/// exited already: the recorder's start then stands for the request.
pub fn requester(proc: &Path, clk_tck: u64) -> Option<(u64, String)> {
    let mut best: Option<(u64, String)> = None;
    for entry in fs::read_dir(proc).ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(cmdline) = fs::read(proc.join(pid).join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline);
        let argv: Vec<&str> = text.split('\0').filter(|a| !a.is_empty()).collect();
        if !is_request(&argv) {
            continue;
        }
        let Some(rec) = fs::read(proc.join(pid).join("stat"))
            .ok()
            .and_then(|raw| sample::procfs::parse_stat_line(&raw))
        else {
            continue;
        };
        let t = rec.starttime.saturating_mul(1_000_000_000) / clk_tck.max(1);
        if best.as_ref().is_none_or(|(b, _)| t < *b) {
            best = Some((t, argv.join(" ")));
        }
    }
    best
}

/// `bootprint reboot`'s request, from the fast path's marker (the process may be gone by
/// the time the init starts the recorder, and its load came before the init's request).
fn fast_path_request() -> Option<(u64, String)> {
    let mark = fastpath::kexec::mark_in_force()?;
    Some((
        mark.request_ns?,
        format!("bootprint reboot --{}", mark.method.word()),
    ))
}

/// The earlier of two requests.
fn earliest(a: Option<(u64, String)>, b: Option<(u64, String)>) -> Option<(u64, String)> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// Writes a shutdown's trace into the trace of boot `boot_id` under `log_dir`: into
/// `.shutdown.tmp`, synced, renamed to [`DIR_NAME`] (replacing one there), the boot's
/// directory synced. Only into a directory of root's (or this user's) that no one else can
/// write, reached without following a symlink.
pub fn write(store: &Store, log_dir: &Path, boot_id: &str) -> io::Result<PathBuf> {
    let base = log_dir.join(boot_id);
    check_boot_dir(&base)?;
    let access = Access::of_dir(&base)?;
    let tmp = base.join(TMP_NAME);
    let dir = base.join(DIR_NAME);
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir(&tmp)?;
    access.set_dir(&tmp)?;
    store.write_to(&tmp, access)?;
    crate::fault::at("poweroff-in-shutdown-trace");
    crate::store::sync_dir(&tmp)?;
    if fs::symlink_metadata(&dir).is_ok() {
        fs::remove_dir_all(&dir)?;
    }
    fs::rename(&tmp, &dir)?;
    crate::store::sync_dir(&base)?;
    Ok(dir)
}

/// Where a shutdown's trace is written before it is complete, inside the boot's trace.
const TMP_NAME: &str = ".shutdown.tmp";

/// How long after the request to save (or systemd-shutdown's SIGTERM) [`sync_after`] may
/// still write its file, s: within the runner's 10 s wait for the save, with a margin.
pub const SYNC_DEADLINE_S: u64 = 8;

/// Once the shutdown's trace is in place (`dir`, as [`write`] returned it), flushes every
/// file system's dirty data (sync(2)), timed, and writes what it took into `dir`'s
/// [`SYNC_FILE`] (whole or not at all): one [`SYNC_EVENT`] at its start, with `ms`, the
/// dirty and writeback data before and after (`dirty_kb`, `writeback_kb`, `after_dirty_kb`,
/// `after_writeback_kb`, from `proc`'s meminfo) and the sectors written to the disks
/// meanwhile (`written_kb`, `trace::procfs::disk_write_sectors`).
///
/// Why here: what is dirty at the save must reach the disk before the machine resets
/// anyway (umountroot's read-only remount, reboot's or systemd-shutdown's sync write it),
/// so this adds no writing, and it turns that part of the gap after the save into a
/// measured figure. After the trace, never before it: a sync that hangs (a dead network
/// file system) must not cost the trace. And only until `deadline_ns` (CLOCK_BOOTTIME):
/// whoever waits for the save ([`save`], the runner's 10 s; systemd-shutdown after its
/// SIGTERM) goes on to remount the root read-only once it stops waiting, and a file being
/// written then would make that remount fail; past it, nothing is written (an error).
pub fn sync_after(dir: &Path, proc: &sample::procfs::ProcFs, deadline_ns: u64) -> io::Result<()> {
    let read =
        |rel: &str| String::from_utf8_lossy(&proc.read(rel).unwrap_or_default()).into_owned();
    let (mem, disks) = (read("meminfo"), read("diskstats"));
    let t0 = sys::boottime_ns();
    sys::sync();
    let t1 = sys::boottime_ns();
    let (mem_after, disks_after) = (read("meminfo"), read("diskstats"));
    let kb = |text: &str, key: &str| {
        trace::procfs::meminfo_kb(text, key).map_or_else(|| "-".to_string(), |v| v.to_string())
    };
    let written = trace::procfs::disk_write_sectors(&disks_after)
        .saturating_sub(trace::procfs::disk_write_sectors(&disks))
        / 2;
    let event = Event::new(t0, SYNC_EVENT)
        .with("ms", (t1 - t0) / 1_000_000)
        .with("dirty_kb", kb(&mem, "Dirty"))
        .with("writeback_kb", kb(&mem, "Writeback"))
        .with("after_dirty_kb", kb(&mem_after, "Dirty"))
        .with("after_writeback_kb", kb(&mem_after, "Writeback"))
        .with("written_kb", written);
    if sys::boottime_ns() > deadline_ns {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the sync took {} ms: too late to write {SYNC_FILE} before the root goes \
                 read-only",
                (t1 - t0) / 1_000_000
            ),
        ));
    }
    let body = format!("{}\n{}\n", trace::events::HEADER_LINE, event.to_line());
    let tmp = dir.join(format!(".{SYNC_FILE}.tmp"));
    Access::of_dir(dir)?.write_synced(&tmp, body.as_bytes())?;
    fs::rename(&tmp, dir.join(SYNC_FILE))?;
    crate::store::sync_dir(dir)
}

/// A boot's trace directory may take a shutdown's trace (or lose a half-written one) only
/// when no one else can replace what root writes there: owned by root (or this user), not
/// writable by group or others.
fn check_boot_dir(base: &Path) -> io::Result<()> {
    let st = sys::open_dir(base)?.stat()?;
    if (st.uid != 0 && st.uid != sys::euid()) || st.mode & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is owned by uid {} with mode {:o}: a shutdown is written only where no one \
                 else can replace what root writes",
                base.display(),
                st.uid,
                st.mode & 0o7777
            ),
        ));
    }
    Ok(())
}

/// The boot after a shutdown whose trace was cut short (the power lost, or the machine
/// reset, while it was written: [`write`] had not renamed it into place) removes what was
/// left of it from the trace of boot `prev` under `log_dir`, and says so: the event
/// `shutdown_incomplete` for this boot's trace. None when nothing was left.
pub fn clean_incomplete(log_dir: &Path, prev: &str) -> Option<Event> {
    let base = log_dir.join(prev);
    let tmp = base.join(TMP_NAME);
    let left = fs::symlink_metadata(&tmp).ok()?;
    let event = Event::new(sys::boottime_ns(), "shutdown_incomplete").with("boot", prev);
    // remove_dir_all follows no symlink inside; the directory itself must be root's.
    let removed = check_boot_dir(&base).and_then(|()| match left.is_dir() {
        true => fs::remove_dir_all(&tmp),
        false => fs::remove_file(&tmp),
    });
    Some(match removed {
        Ok(()) => event.with("removed", "1"),
        Err(e) => event.with("removed", "0").with("error", e.to_string()),
    })
}

/// On systemd, the boot after a shutdown adds to its trace what the journal says about it
/// (`systemd::journal`, [`systemd::journal::FILE_NAME`]): the trace of boot `prev` under
/// `log_dir`, when it has a shutdown and not that file yet. Returns the event for this
/// boot's trace saying what was done, or None when there was nothing to do.
pub fn add_journal_stops(log_dir: &Path, prev: &str, journalctl: &Path) -> Option<Event> {
    let dir = dir_of(log_dir, prev);
    let file = dir.join(systemd::journal::FILE_NAME);
    if !dir.is_dir() || file.exists() {
        return None;
    }
    let text = fs::read_to_string(dir.join(trace::events::FILE_NAME)).ok()?;
    let events = trace::events::parse(&text).ok()?;
    let start = events.iter().find(|e| e.kind == START_EVENT)?.t_ns;
    let clock = events
        .iter()
        .find(|e| e.kind == crate::sysinfo::CLOCK_EVENT)?;
    let mono: u64 = clock.get("monotonic_ns")?.parse().ok()?;
    let offset = clock.t_ns.saturating_sub(mono);
    let t0 = sys::boottime_ns();
    let limit = Duration::from_secs(20);
    // systemd acts on the request before the recorder runs (its unit is one of the
    // shutdown's first jobs, not the first): from a little before.
    let since_us = start
        .saturating_sub(offset)
        .saturating_sub(JOURNAL_BEFORE_NS)
        / 1000;
    let event = Event::new(t0, "shutdown_journal").with("boot", prev);
    Some(
        match systemd::journal::unit_entries(journalctl, prev, since_us, limit) {
            Ok(entries) => {
                let body = systemd::journal::to_trace(&entries, offset);
                match sys::write_atomic_mode(&file, body.as_bytes(), 0o640) {
                    Ok(()) => event.with("entries", entries.len()),
                    Err(e) => event.with("error", format!("{}: {e}", file.display())),
                }
            }
            Err(e) => event.with("error", e),
        }
        .with("ms", sys::boottime_ns().saturating_sub(t0) / 1_000_000),
    )
}

/// Why [`save`] did not see a trace written.
#[derive(Debug, PartialEq)]
pub enum SaveError {
    /// No shutdown recorder runs (no pid file, or its pid is not one).
    NotRunning,
    /// It did not finish within the wait.
    Timeout,
}

/// Asks the running shutdown recorder to write its trace now (SIGUSR1) and waits up to
/// `wait` for it to be written (its pid file gone). The pid is checked to be a
/// `bootprint-boot shutdown` before it is signalled.
pub fn save(pid_file: &Path, proc: &Path, wait: Duration) -> Result<(), SaveError> {
    let pid: i32 = fs::read_to_string(pid_file)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .filter(|p| *p > 1)
        .ok_or(SaveError::NotRunning)?;
    let cmdline = fs::read(proc.join(pid.to_string()).join("cmdline")).unwrap_or_default();
    let mut words = cmdline.split(|b| *b == 0);
    let program = words.next().unwrap_or_default();
    let is_ours = program.ends_with(b"bootprint-boot") && words.any(|w| w == b"shutdown");
    if !is_ours || sys::kill(pid, libc::SIGUSR1).is_err() {
        return Err(SaveError::NotRunning);
    }
    let started = Instant::now();
    while pid_file.exists() {
        if started.elapsed() >= wait {
            return Err(SaveError::Timeout);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a power cut left of a shutdown's trace goes at the next boot, through no
    /// symlink, and only from a boot directory no one else can write.
    #[test]
    fn what_a_cut_shutdown_left_is_removed_by_the_next_boot() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path();
        let outside = log.join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("keep"), "x").unwrap();
        let boot = log.join("b1");
        let left = boot.join(TMP_NAME);
        fs::create_dir_all(&left).unwrap();
        fs::set_permissions(&boot, fs::Permissions::from_mode(0o750)).unwrap();
        fs::write(
            left.join(trace::events::FILE_NAME),
            "# bootprint events 1\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(&outside, left.join("link")).unwrap();
        fs::write(boot.join("header"), "h").unwrap();

        let e = clean_incomplete(log, "b1").unwrap();
        assert_eq!(e.kind, "shutdown_incomplete");
        assert_eq!((e.get("boot"), e.get("removed")), (Some("b1"), Some("1")));
        assert!(!left.exists());
        assert!(
            outside.join("keep").exists(),
            "nothing followed the symlink"
        );
        assert!(boot.join("header").exists(), "the boot's own trace is kept");
        assert!(
            clean_incomplete(log, "b1").is_none(),
            "nothing left: no event"
        );
        assert!(
            clean_incomplete(log, "b2").is_none(),
            "no such boot: no event"
        );

        // A boot directory others can write: left alone, and said.
        fs::create_dir(&left).unwrap();
        fs::set_permissions(&boot, fs::Permissions::from_mode(0o777)).unwrap();
        let e = clean_incomplete(log, "b1").unwrap();
        assert_eq!(e.get("removed"), Some("0"));
        assert!(
            e.get("error").is_some_and(|m| m.contains("no one")),
            "{e:?}"
        );
        assert!(left.exists());
    }

    #[test]
    fn the_trace_appears_whole_under_the_boot_and_replaces_an_older_one() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path();
        let boot = log.join("b1");
        fs::create_dir(&boot).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&boot, fs::Permissions::from_mode(0o750)).unwrap();
        fs::create_dir(boot.join(DIR_NAME)).unwrap();
        fs::write(boot.join(DIR_NAME).join("stale"), "x").unwrap();
        let mut store = Store::default();
        store
            .events
            .push(Event::new(5, START_EVENT).with("how", "runlevel 6"));
        store.events.push(clock_event());
        let dir = write(&store, log, "b1").unwrap();
        assert_eq!(dir, boot.join(DIR_NAME));
        assert!(
            !dir.join("stale").exists(),
            "the old shutdown is replaced whole"
        );
        let events = fs::read_to_string(dir.join(trace::events::FILE_NAME)).unwrap();
        assert!(
            events.contains("shutdown_start how=runlevel%206"),
            "{events}"
        );
        assert!(events.contains("clock realtime_ns="), "{events}");
        assert!(!boot.join(".shutdown.tmp").exists());
    }

    #[test]
    fn the_closing_sync_is_timed_and_written_whole_beside_the_trace() {
        let tmp = tempfile::tempdir().unwrap();
        let (proc, dir) = (tmp.path().join("proc"), tmp.path().join("shutdown"));
        fs::create_dir_all(&proc).unwrap();
        fs::create_dir(&dir).unwrap();
        fs::write(
            proc.join("meminfo"),
            "MemTotal: 1000 kB\nDirty:  2048 kB\nWriteback:  16 kB\n",
        )
        .unwrap();
        // No diskstats: nothing written, still a figure.
        sync_after(&dir, &sample::procfs::ProcFs::new(&proc), u64::MAX).unwrap();
        let text = fs::read_to_string(dir.join(SYNC_FILE)).unwrap();
        let events = trace::events::parse(&text).unwrap();
        assert_eq!(events.len(), 1, "{text}");
        let e = &events[0];
        assert_eq!(e.kind, SYNC_EVENT);
        assert_eq!(e.get("dirty_kb"), Some("2048"));
        assert_eq!(e.get("writeback_kb"), Some("16"));
        assert_eq!(e.get("written_kb"), Some("0"));
        assert!(
            e.get("ms").is_some_and(|m| m.parse::<u64>().is_ok()),
            "{text}"
        );
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, [SYNC_FILE], "no temporary file left");
        // Where meminfo cannot be read the figures say so, not zero.
        fs::remove_file(proc.join("meminfo")).unwrap();
        sync_after(&dir, &sample::procfs::ProcFs::new(&proc), u64::MAX).unwrap();
        let text = fs::read_to_string(dir.join(SYNC_FILE)).unwrap();
        assert!(text.contains("dirty_kb=- "), "{text}");
        // Past the deadline nothing is written (the file there stays as it was).
        let e = sync_after(&dir, &sample::procfs::ProcFs::new(&proc), 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(fs::read_to_string(dir.join(SYNC_FILE)).unwrap(), text);
    }

    #[test]
    fn never_into_a_boot_others_can_write_or_a_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path();
        let boot = log.join("b1");
        fs::create_dir(&boot).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&boot, fs::Permissions::from_mode(0o777)).unwrap();
        let store = Store::default();
        let e = write(&store, log, "b1").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        assert!(!boot.join(DIR_NAME).exists());
        let elsewhere = tmp.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, log.join("b2")).unwrap();
        assert!(write(&store, log, "b2").is_err());
        assert!(!elsewhere.join(DIR_NAME).exists());
    }

    #[test]
    fn requests_are_recognised() {
        for yes in [
            "/sbin/reboot",
            "systemctl reboot",
            "systemctl --no-wall poweroff",
            "shutdown -r now",
            "telinit 6",
            "init 0",
            "/bin/sh /etc/init.d/rc 6",
            "bootprint reboot --kexec",
        ] {
            let argv: Vec<&str> = yes.split(' ').collect();
            assert!(is_request(&argv), "{yes}");
        }
        for no in [
            "systemctl status",
            "init 2",
            "/bin/sh /etc/init.d/rc 2",
            "sh -c reboot-notes",
            "bash",
            "bootprint report /var/log/bootprint/latest",
        ] {
            let argv: Vec<&str> = no.split(' ').collect();
            assert!(!is_request(&argv), "{no}");
        }
    }

    #[test]
    fn the_requester_is_found_with_its_start() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path();
        for (pid, cmd, start) in [
            ("10", "bash\0", 5),
            ("11", "systemctl\0reboot\0", 300),
            ("12", "reboot\0", 250),
        ] {
            fs::create_dir(p.join(pid)).unwrap();
            fs::write(p.join(pid).join("cmdline"), cmd).unwrap();
            let stat = format!("{pid} (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {start} 0 0");
            fs::write(p.join(pid).join("stat"), stat).unwrap();
        }
        let (t, by) = requester(p, 100).unwrap();
        assert_eq!((t, by.as_str()), (2_500_000_000, "reboot"));
    }

    #[test]
    fn save_signals_only_a_shutdown_recorder() {
        let tmp = tempfile::tempdir().unwrap();
        let pid_file = tmp.path().join("shutdown.pid");
        assert_eq!(
            save(&pid_file, Path::new("/proc"), Duration::ZERO),
            Err(SaveError::NotRunning)
        );
        // A pid that is alive but not ours (this test) is never signalled.
        fs::write(&pid_file, std::process::id().to_string()).unwrap();
        assert_eq!(
            save(&pid_file, Path::new("/proc"), Duration::ZERO),
            Err(SaveError::NotRunning)
        );
    }
}
