//! The processes besides the recorder whose work is not the boot's, for the done rule:
//! preload (`bootprint preload run`, started by LightDM's hook while the greeter waits and
//! as a session starts). Their CPU time and the bytes they cause to be read are summed here
//! into counts that only grow, so that one of them ending does not make the boot look busy.

use std::collections::HashMap;
use std::path::Path;

use sample::procfs::{self, ProcFs};
use trace::writer::PsRecord;

/// Whether a command line is preload's daemon (`bootprint preload run [...]`, any path to
/// the program).
pub fn is_preload(argv: &[String]) -> bool {
    let program = argv.first().map(|a| Path::new(a).file_name());
    program == Some(Some("bootprint".as_ref()))
        && argv.get(1).map(String::as_str) == Some("preload")
        && argv.get(2).map(String::as_str) == Some("run")
}

/// The observers being followed and what they have used so far.
#[derive(Debug, Default)]
pub struct Observers {
    /// pid → (CPU clock ticks, read_bytes) at the last look.
    last: HashMap<u32, (u64, u64)>,
    /// CPU clock ticks of every observer, since each was first seen.
    pub cpu_ticks: u64,
    /// Bytes every observer caused to be read from storage, since each was first seen.
    pub read_bytes: u64,
    /// Whether any observer was ever followed.
    pub seen: bool,
}

impl Observers {
    /// Follows `pid` from now on (what it used before is left as the boot's: at most one
    /// sample of a process just started); stops following it when `observer` is false (the
    /// pid now runs something else).
    pub fn set(&mut self, proc: &ProcFs, record: &PsRecord, observer: bool) {
        if !observer {
            self.last.remove(&record.pid);
            return;
        }
        self.seen = true;
        self.last.entry(record.pid).or_insert_with(|| {
            let read = read_bytes(proc, record.pid).unwrap_or(0);
            (record.utime + record.stime, read)
        });
    }

    /// Adds what the followed processes used since the last look; forgets those gone.
    pub fn update(&mut self, proc: &ProcFs, processes: &[PsRecord]) {
        let (mut cpu, mut read) = (0, 0);
        self.last.retain(|pid, (ticks, bytes)| {
            let Some(r) = processes.iter().find(|r| r.pid == *pid) else {
                return false;
            };
            let now_ticks = r.utime + r.stime;
            cpu += now_ticks.saturating_sub(*ticks);
            *ticks = now_ticks;
            if let Some(now_bytes) = read_bytes(proc, *pid) {
                read += now_bytes.saturating_sub(*bytes);
                *bytes = now_bytes;
            }
            true
        });
        self.cpu_ticks += cpu;
        self.read_bytes += read;
    }
}

fn read_bytes(proc: &ProcFs, pid: u32) -> Option<u64> {
    let text = proc.read(&format!("{pid}/io")).ok()?;
    procfs::parse_read_bytes(std::str::from_utf8(&text).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn preload_is_known_by_its_command_line() {
        assert!(is_preload(&argv(&["bootprint", "preload", "run"])));
        let hook = ["/usr/bin/bootprint", "preload", "run", "--prefetch"];
        assert!(is_preload(&argv(&hook)));
        assert!(!is_preload(&argv(&["bootprint", "preload", "status"])));
        assert!(!is_preload(&argv(&[
            "/usr/bin/bootprint-rc",
            "preload",
            "run"
        ])));
        assert!(!is_preload(&argv(&["sh", "-c", "bootprint preload run"])));
        assert!(!is_preload(&[]));
    }

    fn record(pid: u32, utime: u64) -> PsRecord {
        PsRecord {
            pid,
            comm: "bootprint".into(),
            state: 'S',
            ppid: 1,
            utime,
            stime: 0,
            priority: 20,
            nice: 0,
            num_threads: 1,
            starttime: 0,
            rss: 0,
            blkio_ticks: 0,
        }
    }

    #[test]
    fn counts_only_grow_when_an_observer_ends() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("7")).unwrap();
        let io = |n: u64| {
            let text = format!("rchar: 1\nread_bytes: {n}\nwrite_bytes: 0\n");
            std::fs::write(tmp.path().join("7/io"), text).unwrap();
        };
        let proc = ProcFs::new(tmp.path());
        let mut o = Observers::default();
        io(1000);
        assert!(!o.seen);
        o.set(&proc, &record(7, 5), true);
        assert!(o.seen);
        io(5096);
        o.update(&proc, &[record(7, 9), record(8, 50)]);
        assert_eq!((o.cpu_ticks, o.read_bytes), (4, 4096));
        // Gone: nothing is taken back, and nothing more is added.
        o.update(&proc, &[record(8, 60)]);
        assert_eq!((o.cpu_ticks, o.read_bytes), (4, 4096));
        // The pid came back running something else: not followed.
        o.set(&proc, &record(7, 0), false);
        o.update(&proc, &[record(7, 100)]);
        assert_eq!((o.cpu_ticks, o.read_bytes), (4, 4096));
    }
}
