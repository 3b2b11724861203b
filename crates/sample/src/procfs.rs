//! Reading the /proc files a sample is made of. Filters and parsers are pure functions over
//! bytes; [`ProcFs`] only knows where /proc is, so tests point it at a fake tree.

use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use trace::procfs::{CpuTimes, DiskStat};
use trace::writer::PsRecord;

use crate::sys;

/// Where /proc is (a parameter so tests can use a fake tree).
#[derive(Debug, Clone)]
pub struct ProcFs {
    root: PathBuf,
}

impl Default for ProcFs {
    fn default() -> Self {
        ProcFs::new("/proc")
    }
}

impl ProcFs {
    /// A /proc rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> ProcFs {
        ProcFs { root: root.into() }
    }

    /// Path of a file under this /proc.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Reads a whole file under /proc.
    pub fn read(&self, rel: &str) -> io::Result<Vec<u8>> {
        fs::read(self.path(rel))
    }

    /// The pids listed in /proc now.
    pub fn pids(&self) -> io::Result<Vec<u32>> {
        let mut pids: Vec<u32> = fs::read_dir(&self.root)?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect();
        pids.sort_unstable();
        Ok(pids)
    }

    /// The command line of `pid` as arguments (empty for kernel threads or when gone).
    pub fn cmdline(&self, pid: u32) -> Vec<String> {
        match fs::read(self.root.join(format!("{pid}/cmdline"))) {
            Ok(raw) => split_cmdline(&raw),
            Err(_) => Vec::new(),
        }
    }

    /// The executable of `pid` (empty for kernel threads or when unreadable), escaped
    /// ([`trace::writer::escape_bytes`]): a path is bytes, not text.
    pub fn exe(&self, pid: u32) -> String {
        use std::os::unix::ffi::OsStrExt;
        fs::read_link(self.root.join(format!("{pid}/exe")))
            .map(|p| trace::writer::escape_bytes(p.as_os_str().as_bytes()))
            .unwrap_or_default()
    }
}

/// A /proc file kept open and re-read from the start with `pread` at every sample: one
/// system call instead of three. Reads as empty while the file cannot be opened or read.
pub struct CachedFile {
    path: PathBuf,
    fd: Option<OwnedFd>,
    buf: Vec<u8>,
    len: usize,
}

impl CachedFile {
    /// A file to be read at `path`.
    pub fn new(path: PathBuf) -> CachedFile {
        CachedFile {
            path,
            fd: None,
            buf: vec![0; 4096],
            len: 0,
        }
    }

    /// The file's whole current content.
    pub fn read(&mut self) -> &[u8] {
        self.len = 0;
        if self.fd.is_none() {
            self.fd = sys::open_read(&self.path).ok();
        }
        if let Some(fd) = &self.fd {
            loop {
                match sys::pread_start(fd, &mut self.buf) {
                    // A full buffer may mean the file is longer: grow and read again.
                    Ok(n) if n == self.buf.len() => self.buf.resize(self.buf.len() * 2, 0),
                    Ok(n) => {
                        self.len = n;
                        break;
                    }
                    Err(_) => {
                        self.fd = None;
                        break;
                    }
                }
            }
        }
        &self.buf[..self.len]
    }
}

/// A field of `/proc/PID/mountinfo` (a mount point, a root) as the kernel escapes it:
/// `\NNN` octal for a space, tab, newline or backslash. Three octal digits make a byte only
/// up to `\377`; a larger one would overflow it and stays as written. Not UTF-8 safe to
/// assume, so the result is a path of bytes.
pub fn unescape_mount_field(s: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        // Three octal digits make a byte only up to \377 (the kernel writes \040, \011,
        // \012, \134); a larger one would overflow it and stays as written.
        if b[i] == b'\\'
            && i + 3 < b.len()
            && (b'0'..=b'3').contains(&b[i + 1])
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// Splits a NUL-separated `/proc/PID/cmdline` into arguments, each escaped
/// ([`trace::writer::escape_bytes`]: bytes that are not UTF-8 and control characters).
pub fn split_cmdline(raw: &[u8]) -> Vec<String> {
    raw.split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(trace::writer::escape_bytes)
        .collect()
}

/// `/proc/stat` without the long `intr` and `softirq` lines no analysis reads.
pub fn filter_stat(raw: &[u8]) -> Vec<u8> {
    filter_lines(raw, |line| {
        !(line.starts_with(b"intr ") || line.starts_with(b"softirq "))
    })
}

/// `/proc/diskstats` without RAM disks, loop, zram and device-mapper devices.
pub fn filter_diskstats(raw: &[u8]) -> Vec<u8> {
    filter_lines(raw, |line| {
        let name = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty())
            .nth(2)
            .unwrap_or(b"");
        !trace::procfs::is_virtual_disk(&String::from_utf8_lossy(name))
    })
}

/// The `/proc/meminfo` lines bootchart and bootprint read.
pub fn filter_meminfo(raw: &[u8]) -> Vec<u8> {
    const KEEP: [&[u8]; 9] = [
        b"MemTotal:",
        b"MemFree:",
        b"MemAvailable:",
        b"Buffers:",
        b"Cached:",
        b"SwapTotal:",
        b"SwapFree:",
        b"Dirty:",
        b"Writeback:",
    ];
    filter_lines(raw, |line| KEEP.iter().any(|k| line.starts_with(k)))
}

fn filter_lines(raw: &[u8], keep: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    for line in raw.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        if keep(line) {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    out
}

/// CPU jiffies from the aggregate `cpu` line of `/proc/stat`: (busy, idle, iowait, total)
/// (`trace::procfs::CpuTimes`, at least four times on the line).
pub fn cpu_totals(stat: &[u8]) -> Option<(u64, u64, u64, u64)> {
    let c = CpuTimes::of_stat(&String::from_utf8_lossy(stat), 4)?;
    Some((c.busy(), c.idle, c.iowait, c.total()))
}

/// The `processes` counter of `/proc/stat` (forks since boot).
/// The line comes after `intr`, which holds a counter per interrupt (tens of kB on a large
/// machine) and is read at every sample: a SIMD search for it, not a byte-by-byte split.
pub fn forks(stat: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"processes ";
    let start = if stat.starts_with(KEY) {
        0
    } else {
        memchr::memmem::find(stat, b"\nprocesses ")? + 1
    };
    let line = &stat[start + KEY.len()..];
    let line = &line[..memchr::memchr(b'\n', line).unwrap_or(line.len())];
    std::str::from_utf8(line).ok()?.trim().parse().ok()
}

/// One whole disk's counters in `/proc/diskstats` (Documentation/admin-guide/iostats.rst).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskCounters {
    /// Milliseconds spent doing I/O (`io_ticks`, field 13).
    pub io_ms: u64,
    /// Bytes read and written (sectors read and written, fields 6 and 10, times 512).
    pub bytes: u64,
}

/// The counters of each whole disk in `/proc/diskstats` (`trace::procfs::DiskStat`).
/// Partitions are skipped: their time and bytes are already in their disk's.
pub fn disk_counters(diskstats: &[u8]) -> Vec<(String, DiskCounters)> {
    let text = String::from_utf8_lossy(diskstats);
    let lines: Vec<DiskStat> = DiskStat::all(&text).collect();
    let all: Vec<&str> = lines.iter().map(|d| d.name()).collect();
    lines
        .iter()
        .filter(|d| {
            !trace::procfs::is_virtual_disk(d.name())
                && !trace::procfs::is_partition(d.name(), &all)
        })
        .filter_map(|d| {
            Some((
                d.name().to_string(),
                DiskCounters {
                    io_ms: d.io_ms()?,
                    bytes: d.bytes()?,
                },
            ))
        })
        .collect()
}

/// `read_bytes` from the text of `/proc/PID/io`: the bytes this process caused to be read
/// from storage, counted when the reads are submitted (Documentation/filesystems/proc.rst).
pub fn parse_read_bytes(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Parses one `/proc/PID/stat` line. `comm` may hold spaces and parentheses: it runs from
/// the first `(` to the last `)`. It is any bytes a process chose (not UTF-8, newlines), so
/// it is kept escaped ([`trace::writer::escape_bytes`]), never dropped.
pub fn parse_stat_line(raw: &[u8]) -> Option<PsRecord> {
    let open = raw.iter().position(|&b| b == b'(')?;
    let close = raw.iter().rposition(|&b| b == b')')?;
    let pid: u32 = std::str::from_utf8(&raw[..open])
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let comm = trace::writer::escape_bytes(raw.get(open + 1..close)?);
    // The kernel writes the fields after the comm in ASCII.
    let after = std::str::from_utf8(&raw[close + 1..]).ok()?;
    // Fields 3..=42 on the stack: this runs for every process at every sample.
    let mut rest = [""; 40];
    let mut count = 0;
    for (slot, f) in rest.iter_mut().zip(after.split_ascii_whitespace()) {
        *slot = f;
        count += 1;
    }
    // rest[0] is field 3 (state): field N is rest[N - 3].
    let field = |n: usize| -> Option<&str> { (n - 3 < count).then(|| rest[n - 3]) };
    let num = |n: usize| -> Option<u64> { field(n)?.parse().ok() };
    let signed = |n: usize| -> Option<i64> { field(n)?.parse().ok() };
    Some(PsRecord {
        pid,
        comm,
        state: field(3)?.chars().next()?,
        ppid: num(4)? as u32,
        utime: num(14)?,
        stime: num(15)?,
        priority: signed(18)?,
        nice: signed(19)?,
        num_threads: num(20)?,
        starttime: num(22)?,
        rss: num(24).unwrap_or(0),
        blkio_ticks: num(42).unwrap_or(0),
    })
}

/// A process is "quiet" after this many samples in a row with no change in CPU time, state,
/// parent or command.
const QUIET_AFTER: u32 = 5;
/// A quiet process is read at one sample in this many; a change puts it back to every sample.
const QUIET_EVERY: u64 = 5;
/// A quiet kernel thread (a child of kthreadd) is read at one sample in this many: a
/// booted kernel has dozens, nearly all asleep for good, and they were half the reads of a
/// sample (docs/recorder.md, "Cost").
const QUIET_EVERY_KTHREAD: u64 = 25;

/// How a sample knows which processes there are.
#[derive(Debug, Clone, Copy)]
pub enum Listing<'a> {
    /// The processes of the last sample (nothing was forked since: `/proc/stat`'s fork
    /// counter did not move).
    Known,
    /// List /proc first: new processes join and vanished ones leave at once.
    Rescan,
    /// The kernel's process events since the last sample, complete (none lost): `born`
    /// join unless also `gone`; `gone` are read a last time and leave. No listing.
    Events {
        /// Processes forked since the last sample.
        born: &'a [u32],
        /// Processes ended since the last sample.
        gone: &'a [u32],
    },
}

struct Tracked {
    fd: Option<OwnedFd>,
    last: PsRecord,
    quiet: u32,
}

/// Samples every process's `/proc/PID/stat`. Each file is kept open between samples, so a read
/// costs one `pread` instead of open+read+close; and a process that has been quiet (sleeping,
/// no CPU used) for a few samples is read only at every fifth sample, its last values standing
/// in between. CPU times are cumulative counters, so totals stay exact; only the moment a
/// quiet process wakes up is known to within five samples. Under emulation a /proc/PID/stat
/// read costs tens of microseconds, and most processes of a boot sleep most of the time.
pub struct ProcessTable {
    proc: ProcFs,
    /// Sorted by pid.
    tracked: Vec<(u32, Tracked)>,
    /// See [`ProcessTable::fresh`].
    fresh: Vec<usize>,
    /// Above this many cached descriptors, files are opened per read instead.
    max_cached_fds: usize,
    tick: u64,
    buf: Vec<u8>,
    /// /proc, kept open for listing.
    dir: Option<OwnedFd>,
    /// getdents64's buffer.
    dirents: Vec<u8>,
    /// Reads of /proc/PID/stat done so far (for the recorder's statistics).
    pub reads: u64,
    /// CPU time spent listing /proc (ns), when `time_listing`.
    pub list_ns: u64,
    /// Whether to time the listing (two clock reads, system calls, per listing).
    pub time_listing: bool,
}

impl ProcessTable {
    /// A table over `proc`.
    pub fn new(proc: ProcFs) -> ProcessTable {
        ProcessTable {
            proc,
            tracked: Vec::new(),
            fresh: Vec::new(),
            max_cached_fds: 768,
            tick: 0,
            buf: vec![0; 1024],
            dir: None,
            dirents: vec![0; 32 * 1024],
            reads: 0,
            list_ns: 0,
            time_listing: false,
        }
    }

    /// Samples every process, in pid order; `listing` says how the set of processes is
    /// known (see [`Listing`]). A process that exited and is not named gone leaves when its
    /// next read fails. Afterwards [`ProcessTable::fresh`] holds the indices in `out` of the
    /// processes seen for the first time or changed by an exec (another `comm`) or a reused
    /// pid (another start time).
    pub fn sample(&mut self, listing: Listing, out: &mut Vec<PsRecord>) {
        out.clear();
        self.fresh.clear();
        self.tick += 1;
        let rescan = matches!(listing, Listing::Rescan);
        let t0 = if self.time_listing && rescan {
            ::sys::thread_cpu_ns()
        } else {
            0
        };
        let listed = if rescan { self.list().ok() } else { None };
        if self.time_listing && rescan {
            self.list_ns += ::sys::thread_cpu_ns().saturating_sub(t0);
        }
        let mut gone: &[u32] = &[];
        let mut pids: Vec<u32> = match (listed, listing) {
            (Some(listed), _) => listed,
            (None, Listing::Events { born, gone: ended }) => {
                gone = ended;
                let mut pids: Vec<u32> = self.tracked.iter().map(|(pid, _)| *pid).collect();
                // A process born and gone between two samples is never read.
                pids.extend(born.iter().filter(|p| !ended.contains(p)));
                pids
            }
            (None, _) => self.tracked.iter().map(|(pid, _)| *pid).collect(),
        };
        pids.sort_unstable();
        pids.dedup();
        // Both lists are sorted by pid: a merge, no hashing, no map rebuilt per sample.
        let mut old = std::mem::take(&mut self.tracked).into_iter().peekable();
        let mut next = Vec::with_capacity(pids.len());
        let mut cached_fds = 0;
        for pid in pids {
            while old.next_if(|(p, _)| *p < pid).is_some() {} // gone: descriptors close
            let mut entry = old.next_if(|(p, _)| *p == pid).map(|(_, e)| e);
            let skip = entry.as_ref().is_some_and(|e| {
                let every = if e.last.ppid == 2 {
                    QUIET_EVERY_KTHREAD
                } else {
                    QUIET_EVERY
                };
                e.quiet >= QUIET_AFTER
                    && !(self.tick + pid as u64).is_multiple_of(every)
                    && !gone.contains(&pid)
            });
            if skip {
                let e = entry.take().expect("checked above");
                out.push(e.last.clone());
                cached_fds += e.fd.is_some() as usize;
                next.push((pid, e));
                continue;
            }
            let known = entry.is_some();
            let Some(rec) = self.read_one(pid, &mut entry) else {
                continue; // exited
            };
            let (fd, quiet, fresh) = match entry {
                Some(e) => (
                    e.fd,
                    if same_activity(&e.last, &rec) {
                        e.quiet + 1
                    } else {
                        0
                    },
                    !known || e.last.comm != rec.comm || e.last.starttime != rec.starttime,
                ),
                None => (None, 0, true),
            };
            let fd = fd.or_else(|| {
                (cached_fds < self.max_cached_fds)
                    .then(|| sys::open_read(&self.stat_path(pid)).ok())
                    .flatten()
            });
            cached_fds += fd.is_some() as usize;
            if fresh {
                self.fresh.push(out.len());
            }
            if gone.contains(&pid) {
                // Read one last time (a zombie still shows its final times), then it leaves.
                out.push(rec);
                continue;
            }
            out.push(rec.clone());
            next.push((
                pid,
                Tracked {
                    fd,
                    last: rec,
                    quiet,
                },
            ));
        }
        self.tracked = next;
    }

    /// Indices (in the last [`ProcessTable::sample`]'s output) of the processes new since
    /// the sample before, or changed by an exec or a reused pid.
    pub fn fresh(&self) -> &[usize] {
        &self.fresh
    }

    /// Lists the processes through the /proc descriptor kept open (opened at first use).
    fn list(&mut self) -> io::Result<Vec<u32>> {
        if self.dir.is_none() {
            self.dir = Some(sys::open_dir(&self.proc.path(""))?);
        }
        let dir = self.dir.as_ref().expect("opened above");
        let mut pids = Vec::with_capacity(self.tracked.len() + 16);
        sys::numeric_entries(dir, &mut self.dirents, &mut pids)?;
        Ok(pids)
    }

    fn stat_path(&self, pid: u32) -> std::path::PathBuf {
        self.proc.path(&format!("{pid}/stat"))
    }

    /// Reads one process through its cached descriptor, or by opening the file.
    fn read_one(&mut self, pid: u32, entry: &mut Option<Tracked>) -> Option<PsRecord> {
        self.reads += 1;
        let n = match entry.as_ref().and_then(|e| e.fd.as_ref()) {
            Some(fd) => sys::pread_start(fd, &mut self.buf).ok()?,
            None => {
                let fd = sys::open_read(&self.stat_path(pid)).ok()?;
                let n = sys::pread_start(&fd, &mut self.buf).ok()?;
                if let Some(e) = entry.as_mut() {
                    e.fd = Some(fd);
                } else {
                    *entry = Some(Tracked {
                        fd: Some(fd),
                        last: PsRecord::default(),
                        quiet: 0,
                    });
                }
                n
            }
        };
        let rec = parse_stat_line(trim_newline(&self.buf[..n]))?;
        (rec.pid == pid && n > 0).then_some(rec)
    }

    /// The /proc this table reads.
    pub fn procfs(&self) -> &ProcFs {
        &self.proc
    }
}

/// Whether a process did nothing between two reads.
fn same_activity(a: &PsRecord, b: &PsRecord) -> bool {
    a.utime == b.utime
        && a.stime == b.stime
        && a.state == b.state
        && a.ppid == b.ppid
        && a.comm == b.comm
        && a.blkio_ticks == b.blkio_ticks
        && matches!(b.state, 'S' | 'I' | 'Z' | 'T' | 't')
}

fn trim_newline(b: &[u8]) -> &[u8] {
    b.strip_suffix(b"\n").unwrap_or(b)
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn mount_fields_are_unescaped_up_to_a_byte() {
        assert_eq!(unescape_mount_field("a\\134b"), PathBuf::from("a\\b"));
        assert_eq!(
            unescape_mount_field("/my\\040dir"),
            PathBuf::from("/my dir")
        );
        assert_eq!(unescape_mount_field("tail\\04"), PathBuf::from("tail\\04"));
        // Not a byte: kept as written, no overflow.
        assert_eq!(unescape_mount_field("x\\777y"), PathBuf::from("x\\777y"));
    }
    use std::os::unix::ffi::OsStrExt;

    /// The getdents64 listing finds exactly the numeric names, again after a change, on a
    /// directory with more entries than one read of its buffer holds.
    #[test]
    fn lists_numeric_entries_with_a_kept_descriptor() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut want = Vec::new();
        for pid in 1..=600u32 {
            fs::create_dir(dir.join(pid.to_string())).unwrap();
            want.push(pid);
        }
        for other in ["self", "abc", "12a", "99999999999"] {
            fs::create_dir(dir.join(other)).unwrap();
        }
        let fd = sys::open_dir(dir).unwrap();
        let mut buf = vec![0u8; 1024]; // a few dozen entries per getdents64
        let mut got = Vec::new();
        sys::numeric_entries(&fd, &mut buf, &mut got).unwrap();
        got.sort_unstable();
        assert_eq!(got, want);
        fs::remove_dir(dir.join("7")).unwrap();
        fs::create_dir(dir.join("4242")).unwrap();
        got.clear();
        sys::numeric_entries(&fd, &mut buf, &mut got).unwrap();
        got.sort_unstable();
        assert!(!got.contains(&7) && got.contains(&4242) && got.len() == 600);
    }

    #[test]
    fn parses_stat_with_awkward_comm() {
        let line = b"1234 (a) b (c)) S 1 1234 1234 0 -1 4194304 100 0 0 0 7 8 0 0 20 0 1 0 555 1000 50 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 9 0 0";
        let r = parse_stat_line(line).unwrap();
        assert_eq!(r.pid, 1234);
        assert_eq!(r.comm, "a) b (c)");
        assert_eq!(r.state, 'S');
        assert_eq!(r.ppid, 1);
        assert_eq!((r.utime, r.stime), (7, 8));
        assert_eq!(r.starttime, 555);
        assert_eq!(r.rss, 50);
        assert_eq!(r.blkio_ticks, 9);
        assert!(parse_stat_line(b"12 (x) S").is_none());
        assert!(parse_stat_line(b"garbage").is_none());
    }

    /// Defect 5: a process whose name is not UTF-8 was silently left out of the trace; one
    /// with a newline in its name broke it. Both are kept, escaped.
    #[test]
    fn defect5_names_not_utf8_or_with_newlines_are_kept_escaped() {
        let tail = b") S 1 0 0 0 0 0 0 0 0 0 3 4 0 0 20 0 1 0 99 0 12";
        let mut line = b"7 (a\xffb".to_vec();
        line.extend_from_slice(tail);
        let r = parse_stat_line(&line).expect("a comm that is not UTF-8 is kept");
        assert_eq!((r.pid, r.comm.as_str(), r.starttime), (7, "a\\xffb", 99));
        let mut line = b"8 (x\ny) z".to_vec();
        line.extend_from_slice(tail);
        let r = parse_stat_line(&line).unwrap();
        assert_eq!((r.pid, r.comm.as_str(), r.state), (8, "x\\x0ay) z", 'S'));

        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::create_dir_all(dir.join("9")).unwrap();
        let mut stat = b"9 (\xe9vil\n".to_vec();
        stat.extend_from_slice(tail);
        stat.push(b'\n');
        fs::write(dir.join("9/stat"), stat).unwrap();
        fs::write(dir.join("9/cmdline"), b"/tmp/\xe9\nx\0-a\0").unwrap();
        std::os::unix::fs::symlink(
            std::ffi::OsStr::from_bytes(b"/tmp/\xe9\nx"),
            dir.join("9/exe"),
        )
        .unwrap();
        let mut table = ProcessTable::new(ProcFs::new(dir));
        let mut out = Vec::new();
        table.sample(Listing::Rescan, &mut out);
        assert_eq!(out.len(), 1, "the process is sampled");
        assert_eq!(out[0].comm, "\\xe9vil\\x0a");
        let proc = ProcFs::new(dir);
        assert_eq!(proc.cmdline(9), vec!["/tmp/\\xe9\\x0ax", "-a"]);
        assert_eq!(proc.exe(9), "/tmp/\\xe9\\x0ax");
    }

    #[test]
    fn writer_output_parses_back() {
        let line = b"77 (sh) R 1 0 0 0 0 0 0 0 0 0 3 4 0 0 20 0 1 0 99 0 12 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 6 0 0";
        let r = parse_stat_line(line).unwrap();
        let mut buf = Vec::new();
        r.write_line(&mut buf).unwrap();
        assert_eq!(parse_stat_line(trim_newline(&buf)), Some(r));
    }

    #[test]
    fn forks_at_the_ends_after_a_long_intr_line_or_absent() {
        assert_eq!(forks(b""), None);
        assert_eq!(forks(b"cpu  1 2 3 4\nctxt 9\n"), None);
        assert_eq!(forks(b"processes 7"), Some(7), "first line, no newline");
        assert_eq!(
            forks(b"ctxt 9\nprocesses 8"),
            Some(8),
            "last line, no newline"
        );
        assert_eq!(forks(b"ctxt 9\nprocesses 8\n"), Some(8));
        assert_eq!(forks(b"ctxt 9\nprocesses \n"), None, "no number");
        assert_eq!(
            forks(b"ctxt 9\nprocesses x\nprocesses 3\n"),
            None,
            "the first one"
        );
        assert_eq!(forks(b"xprocesses 5\nnot processes 6\n"), None, "mid-line");
        let mut big = b"cpu  1 2 3 4\nintr".to_vec();
        for i in 0..20_000 {
            big.extend_from_slice(format!(" {i}").as_bytes());
        }
        big.extend_from_slice(b"\nctxt 9\nbtime 1\nprocesses 12345\nprocs_running 2\n");
        assert_eq!(forks(&big), Some(12345));
    }

    #[test]
    fn filters_keep_what_analysis_reads() {
        let stat = b"cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 1 2 3\nctxt 9\nprocesses 42\nprocs_running 2\nsoftirq 1 2\n";
        let f = String::from_utf8(filter_stat(stat)).unwrap();
        assert!(!f.contains("intr") && !f.contains("softirq"));
        assert!(f.contains("procs_running 2") && f.starts_with("cpu  1"));
        assert_eq!(forks(stat), Some(42));
        // busy = user+nice+system+irq+softirq+steal = 1+2+3+6+7+8
        assert_eq!(cpu_totals(stat), Some((27, 4, 5, 36)));

        let disk = b"   1       0 ram0 0 0 0 0 0 0 0 0 0 0 0\n   7       0 loop0 1 0 0 0 0 0 0 0 0 0 0\n 254       0 vda 10 0 20 30 0 0 0 0 0 40 50\n 254       1 vda1 5 0 10 15 0 0 0 0 0 20 25\n";
        let d = String::from_utf8(filter_diskstats(disk)).unwrap();
        assert!(!d.contains("ram0") && !d.contains("loop0") && d.contains("vda1"));
        let vda = DiskCounters {
            io_ms: 40,
            bytes: 20 * 512,
        };
        assert_eq!(disk_counters(disk), vec![("vda".to_string(), vda)]);
        let written = b" 254       0 vda 10 0 20 30 4 0 16 0 0 40 50\n";
        assert_eq!(disk_counters(written)[0].1.bytes, (20 + 16) * 512);
        let io = "rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 0\nread_bytes: 40960\nwrite_bytes: 0\n";
        assert_eq!(parse_read_bytes(io), Some(40960));
        assert_eq!(parse_read_bytes("rchar: 1\n"), None);

        let mem =
            b"MemTotal: 100 kB\nMemFree: 50 kB\nActive: 3 kB\nCached: 7 kB\nSwapCached: 1 kB\n";
        let m = String::from_utf8(filter_meminfo(mem)).unwrap();
        assert_eq!(m, "MemTotal: 100 kB\nMemFree: 50 kB\nCached: 7 kB\n");
    }

    #[test]
    fn cached_file_reads_whole_and_current_content() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let path = dir.join("stat");
        let long = "x".repeat(10_000);
        fs::write(&path, &long).unwrap();
        let mut f = CachedFile::new(path.clone());
        assert_eq!(f.read().len(), 10_000);
        fs::write(&path, "short").unwrap(); // same inode, rewritten in place
        assert_eq!(f.read(), b"short");
        let mut real = CachedFile::new(PathBuf::from("/proc/stat"));
        assert!(real.read().starts_with(b"cpu "));
        assert!(cpu_totals(real.read()).is_some());
    }

    #[test]
    fn nvme_and_mmc_partitions_are_not_disks() {
        let line = |name: &str| format!(" 259 0 {name} 1 0 8 1 2 0 8 3 0 4 5\n");
        let text: String = [
            "nvme0n1",
            "nvme0n1p1",
            "mmcblk0",
            "mmcblk0p2",
            "sda",
            "sda3",
            "dm-0",
        ]
        .iter()
        .map(|n| line(n))
        .collect();
        let names: Vec<String> = disk_counters(text.as_bytes())
            .into_iter()
            .map(|(n, c)| {
                assert_eq!(
                    c,
                    DiskCounters {
                        io_ms: 4,
                        bytes: 16 * 512
                    }
                );
                n
            })
            .collect();
        assert_eq!(names, ["nvme0n1", "mmcblk0", "sda"]);
    }

    /// A quiet kernel thread is read at one sample in QUIET_EVERY_KTHREAD, a quiet user
    /// process at one in QUIET_EVERY; both are read again at once after a change is seen.
    #[test]
    fn quiet_kernel_threads_are_read_least() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        for (pid, ppid, comm) in [(10u32, 2u32, "kworker/0:1"), (20, 1, "cron")] {
            fs::create_dir_all(dir.join(pid.to_string())).unwrap();
            fs::write(
                dir.join(format!("{pid}/stat")),
                format!("{pid} ({comm}) S {ppid} 0 0 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 0 0\n"),
            )
            .unwrap();
        }
        let mut table = ProcessTable::new(ProcFs::new(dir));
        let mut out = Vec::new();
        table.sample(Listing::Rescan, &mut out);
        assert_eq!(table.fresh(), [0, 1], "every process is fresh at first");
        table.sample(Listing::Rescan, &mut out);
        assert!(table.fresh().is_empty(), "and then no longer");
        // An exec changes the name: fresh again (its command line is read again).
        fs::write(
            dir.join("20/stat"),
            "20 (sh) S 1 0 0 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 0 0\n",
        )
        .unwrap();
        table.sample(Listing::Known, &mut out);
        assert_eq!(table.fresh(), [1]);
        for _ in 0..QUIET_AFTER {
            table.sample(Listing::Known, &mut out);
        }
        let before = table.reads;
        let n = 100u64;
        for _ in 0..n {
            table.sample(Listing::Known, &mut out);
            assert_eq!(out.len(), 2, "a skipped process is still in every sample");
        }
        let reads = table.reads - before;
        let want = n / QUIET_EVERY + n / QUIET_EVERY_KTHREAD;
        assert!(
            reads <= want + 2,
            "{reads} reads in {n} samples, expected about {want}"
        );
    }

    /// With the kernel's process events, born processes join without a listing, one born
    /// and gone between samples is never read, and a gone one is read a last time.
    #[test]
    fn table_follows_process_events_without_listing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let stat = |pid: u32, comm: &str| {
            fs::create_dir_all(dir.join(pid.to_string())).unwrap();
            fs::write(
                dir.join(format!("{pid}/stat")),
                format!("{pid} ({comm}) S 1 1 1 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 {pid} 0 3\n"),
            )
            .unwrap();
        };
        stat(1, "init");
        stat(22, "getty");
        let mut table = ProcessTable::new(ProcFs::new(dir));
        let mut out = Vec::new();
        let pids = |out: &[PsRecord]| out.iter().map(|r| r.pid).collect::<Vec<_>>();
        table.sample(Listing::Rescan, &mut out);
        assert_eq!(pids(&out), vec![1, 22]);
        // 33 is on disk but not yet announced: an event-driven sample does not list.
        stat(33, "sh");
        table.sample(
            Listing::Events {
                born: &[],
                gone: &[],
            },
            &mut out,
        );
        assert_eq!(pids(&out), vec![1, 22]);
        table.sample(
            Listing::Events {
                born: &[33],
                gone: &[],
            },
            &mut out,
        );
        assert_eq!(pids(&out), vec![1, 22, 33]);
        assert_eq!(table.fresh(), &[2]);
        stat(44, "sed");
        let before = table.reads;
        table.sample(
            Listing::Events {
                born: &[44],
                gone: &[44, 22],
            },
            &mut out,
        );
        assert_eq!(
            pids(&out),
            vec![1, 22, 33],
            "44 never read, 22 read a last time"
        );
        assert_eq!(table.reads - before, 3);
        table.sample(
            Listing::Events {
                born: &[],
                gone: &[],
            },
            &mut out,
        );
        assert_eq!(pids(&out), vec![1, 33], "22 left");
    }

    #[test]
    fn table_samples_fake_proc_and_real_proc() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::create_dir_all(dir.join("1")).unwrap();
        fs::create_dir_all(dir.join("22")).unwrap();
        fs::create_dir_all(dir.join("self")).unwrap();
        fs::write(
            dir.join("1/stat"),
            "1 (init) S 0 1 1 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 1 0 3\n",
        )
        .unwrap();
        fs::write(
            dir.join("22/stat"),
            "22 (getty) S 1 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 900 0 3\n",
        )
        .unwrap();
        fs::write(dir.join("22/cmdline"), b"/sbin/getty\0-L\0ttyS0\0").unwrap();
        let mut table = ProcessTable::new(ProcFs::new(dir));
        let mut out = Vec::new();
        table.sample(Listing::Rescan, &mut out);
        assert_eq!(out.iter().map(|r| r.pid).collect::<Vec<_>>(), vec![1, 22]);
        assert_eq!(out[1].comm, "getty");
        assert_eq!(
            table.procfs().cmdline(22),
            vec!["/sbin/getty", "-L", "ttyS0"]
        );
        // Without a rescan the cached descriptors are read again.
        table.sample(Listing::Known, &mut out);
        assert_eq!(out.len(), 2);

        // A quiet process is read less often, but a change is seen within QUIET_EVERY samples.
        let reads_before = table.reads;
        for _ in 0..20 {
            table.sample(Listing::Known, &mut out);
            assert_eq!(out.len(), 2);
        }
        let reads = table.reads - reads_before;
        assert!(
            reads < 20,
            "{reads} reads for 20 samples of 2 quiet processes"
        );
        fs::write(
            dir.join("22/stat"),
            "22 (getty) R 1 1 1 0 -1 0 0 0 0 0 9 1 0 0 20 0 1 0 900 0 3\n",
        )
        .unwrap();
        let mut seen_at = None;
        for i in 0..QUIET_EVERY {
            table.sample(Listing::Known, &mut out);
            if out[1].state == 'R' {
                seen_at = Some(i);
                break;
            }
        }
        assert!(
            seen_at.is_some(),
            "change not seen within {QUIET_EVERY} samples"
        );
        // A process that vanished leaves at the next rescan.
        fs::remove_dir_all(dir.join("22")).unwrap();
        table.sample(Listing::Rescan, &mut out);
        assert_eq!(out.iter().map(|r| r.pid).collect::<Vec<_>>(), vec![1]);

        // The real /proc: this test process must be there, with its own pid.
        let mut real = ProcessTable::new(ProcFs::default());
        real.sample(Listing::Rescan, &mut out);
        let me = std::process::id();
        assert!(out.iter().any(|r| r.pid == me), "own pid {me} not sampled");
        assert!(out.iter().any(|r| r.pid == 1));
    }
}
