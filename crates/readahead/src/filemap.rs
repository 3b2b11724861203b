//! The exact pages a boot used, from the kernel's filemap tracepoints
//! (`mm_filemap_get_pages`: the pages a read() asked for; `mm_filemap_map_pages`: pages
//! mapped by a fault-around; `mm_filemap_fault`: a page faulted in), where the kernel has
//! them (Linux 6.10 and later). Unlike mincore at boot done, they do not count the pages the
//! kernel's own readahead brought in but nobody used, they keep pages that were evicted
//! before boot done, and they need no lowered `read_ahead_kb`. Where they are missing, learning
//! falls back to mincore (see [`crate::learn`]).
//!
//! Where the access events are missing (Debian 12's 6.1), [`FilemapTrace::start_added`]
//! traces `mm_filemap_add_to_page_cache` instead, in every kernel bootprint supports: the
//! pages read from disk into the page cache (the cache misses, with what the kernel read
//! ahead of them), each charged to the task that caused it, so a process's own reads can
//! be left out (preload prefetches while it learns). It does not see a read of a page that
//! was already cached; preload, which wants what a session would read from disk, uses it
//! for exactly that.
//!
//! The events go to a tracing instance of our own (`instances/bootprint-readahead-<pid>-<filemap|added>`),
//! so the global trace buffer and anyone using it are left alone; the instance is removed
//! when tracing stops. Lines of its `trace_pipe` look like
//! `cat-1234 [001] ..... 12.345678: mm_filemap_get_pages: dev=254:0 ino=1a2b ofs=0-8191`.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::pack::Range;

/// The tracepoints used, under `events/filemap/`.
pub const EVENTS: [&str; 3] = [
    "mm_filemap_get_pages",
    "mm_filemap_map_pages",
    "mm_filemap_fault",
];

/// The event [`FilemapTrace::start_added`] traces, under `events/filemap/`.
pub const ADDED_EVENT: &str = "mm_filemap_add_to_page_cache";

/// Where tracefs is normally mounted.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// One traced access: a byte range `[start, end)` of inode `ino` on device `major:minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Device major number.
    pub major: u32,
    /// Device minor number.
    pub minor: u32,
    /// Inode number.
    pub ino: u64,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

/// Parses one `trace_pipe` line of a filemap event (`dev=M:m ino=HEX ofs=A-B`, or
/// `ofs=A` for a fault, which covers one page of `page` bytes). Other lines: `None`.
pub fn parse_line(line: &str, page: u64) -> Option<Access> {
    if !EVENTS.iter().any(|e| line.contains(e)) {
        return None;
    }
    let (mut dev, mut ino, mut ofs) = (None, None, None);
    for w in line.split_whitespace() {
        if let Some(v) = w.strip_prefix("dev=") {
            let (ma, mi) = v.split_once(':')?;
            dev = Some((ma.parse().ok()?, mi.parse().ok()?));
        } else if let Some(v) = w.strip_prefix("ino=") {
            ino = Some(u64::from_str_radix(v, 16).ok()?);
        } else if let Some(v) = w.strip_prefix("ofs=") {
            ofs = Some(match v.split_once('-') {
                // The end is the last byte, inclusive.
                Some((a, b)) => (
                    a.parse::<u64>().ok()?,
                    b.parse::<u64>().ok()?.checked_add(1)?,
                ),
                None => {
                    let a: u64 = v.parse().ok()?;
                    (a, a.checked_add(page)?)
                }
            });
        }
    }
    let ((major, minor), ino, (start, end)) = (dev?, ino?, ofs?);
    (end > start).then_some(Access {
        major,
        minor,
        ino,
        start,
        end,
    })
}

/// Parses one `trace_pipe` line of `mm_filemap_add_to_page_cache` into the task that added
/// the page (its thread id) and the bytes added. Two formats: since folios (5.18)
/// `dev 254:0 ino 2a01b pfn=0x1234 ofs=8192 order=2` (`page << order` bytes), before that
/// `dev 254:0 ino 2a01b page=000000001234abcd pfn=4660 ofs=8192` (one page). The task is the
/// `comm-TID` before the `[CPU]` field (a comm may hold spaces or dashes; with the
/// `record-tgid` option a `(TGID)` stands between them). Other lines: `None`.
pub fn parse_added_line(line: &str, page: u64) -> Option<(i32, Access)> {
    let marker = format!(": {ADDED_EVENT}: ");
    let at = line.find(&marker)?;
    let (head, body) = (&line[..at], &line[at + marker.len()..]);
    let words: Vec<&str> = head.split_whitespace().collect();
    let cpu = words.iter().position(|w| {
        w.len() > 2
            && w.starts_with('[')
            && w.ends_with(']')
            && w[1..w.len() - 1].bytes().all(|b| b.is_ascii_digit())
    })?;
    let mut i = cpu.checked_sub(1)?;
    if words[i].ends_with(')') {
        // `(TGID)`, padded with spaces inside: back to the word that opens it.
        while !words[i].starts_with('(') {
            i = i.checked_sub(1)?;
        }
        i = i.checked_sub(1)?;
    }
    let task = words[i];
    let tid: i32 = task.rsplit_once('-')?.1.parse().ok()?;
    let (mut dev, mut ino, mut ofs, mut order) = (None, None, None, 0u32);
    let mut it = body.split_whitespace();
    while let Some(w) = it.next() {
        if w == "dev" {
            let (ma, mi) = it.next()?.split_once(':')?;
            dev = Some((ma.parse().ok()?, mi.parse().ok()?));
        } else if w == "ino" {
            ino = Some(u64::from_str_radix(it.next()?, 16).ok()?);
        } else if let Some(v) = w.strip_prefix("ofs=") {
            ofs = Some(v.parse::<u64>().ok()?);
        } else if let Some(v) = w.strip_prefix("order=") {
            // A folio is at most a PMD (order 9 with 4 KiB pages); more is not this format.
            order = v.parse().ok().filter(|&o| o <= 20)?;
        }
    }
    let ((major, minor), ino, start) = (dev?, ino?, ofs?);
    let end = start.checked_add(page.checked_shl(order)?)?;
    Some((
        tid,
        Access {
            major,
            minor,
            ino,
            start,
            end,
        },
    ))
}

/// Which tasks' page-cache additions are left out: those of the thread groups in `tgids`
/// (looked up once per thread in `<proc>/<tid>/status`; a thread gone before its first
/// event was read counts as someone else's).
#[derive(Debug)]
struct IgnoreTasks {
    tgids: Vec<i32>,
    proc: PathBuf,
    known: HashMap<i32, bool>,
}

impl IgnoreTasks {
    fn ignores(&mut self, tid: i32) -> bool {
        if self.tgids.contains(&tid) {
            return true;
        }
        if let Some(&v) = self.known.get(&tid) {
            return v;
        }
        let v = fs::read_to_string(self.proc.join(tid.to_string()).join("status"))
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("Tgid:"))
                    .and_then(|v| v.trim().parse::<i32>().ok())
            })
            .is_some_and(|tgid| self.tgids.contains(&tgid));
        self.known.insert(tid, v);
        v
    }
}

/// What a trace records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PageSource {
    /// The pages used: read, mapped or faulted ([`EVENTS`], Linux 6.10+).
    #[default]
    Access,
    /// The pages added to the page cache by other tasks than the ignored ones ([`ADDED_EVENT`]).
    Added,
}

impl PageSource {
    /// The word reports use: `filemap` or `added`.
    pub fn word(self) -> &'static str {
        match self {
            PageSource::Access => "filemap",
            PageSource::Added => "added",
        }
    }
}

/// The byte ranges seen per file, merged.
#[derive(Debug, Clone, Default)]
pub struct PageMap {
    files: HashMap<(u32, u32, u64), Vec<(u64, u64)>>,
}

impl PageMap {
    /// Adds one access.
    pub fn add(&mut self, a: &Access) {
        self.files
            .entry((a.major, a.minor, a.ino))
            .or_default()
            .push((a.start, a.end));
    }

    /// Files with at least one access.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether nothing was seen.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The ranges used of a file of `size` bytes: widened to whole pages, cut at the file's
    /// end, sorted and merged. Empty when it was never traced.
    pub fn ranges(&self, major: u32, minor: u32, ino: u64, size: u64, page: u64) -> Vec<Range> {
        let Some(v) = self.files.get(&(major, minor, ino)) else {
            return Vec::new();
        };
        let mut spans: Vec<(u64, u64)> = v
            .iter()
            .map(|&(s, e)| (s / page * page, e.div_ceil(page) * page))
            .map(|(s, e)| (s.min(size), e.min(size)))
            .filter(|(s, e)| e > s)
            .collect();
        spans.sort_unstable();
        let mut out: Vec<Range> = Vec::new();
        for (s, e) in spans {
            match out.last_mut() {
                Some(r) if s <= r.end() => r.len = r.len.max(e - r.offset),
                _ => out.push(Range {
                    offset: s,
                    len: e - s,
                }),
            }
        }
        out
    }
}

/// What tracing saw besides the pages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceStats {
    /// Filemap events parsed.
    pub events: u64,
    /// Events the kernel dropped because the buffer was full (`overrun` in the per-CPU
    /// stats): some pages may be missing.
    pub lost: u64,
    /// Which events were traced.
    pub source: PageSource,
    /// Page-cache additions left out as the ignored tasks' ([`PageSource::Added`]).
    pub ignored: u64,
}

/// A running trace of the filemap events in our own tracing instance.
pub struct FilemapTrace {
    instance: PathBuf,
    mounted: Option<PathBuf>,
    events: &'static [&'static str],
    source: PageSource,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<ReadResult>>,
}

/// What the reader thread returns: the pages, the events parsed, the events ignored.
type ReadResult = (PageMap, u64, u64);

fn write(path: &Path, value: &str) -> io::Result<()> {
    fs::write(path, value).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

impl FilemapTrace {
    /// Starts tracing the access events under `tracefs` (mounting it there when nothing
    /// is). Fails with `Unsupported` when the kernel has no such tracepoints.
    pub fn start(tracefs: &Path) -> io::Result<FilemapTrace> {
        Self::start_with(tracefs, &EVENTS, PageSource::Access, None)
    }

    /// Starts tracing the pages added to the page cache, leaving out those added by the
    /// thread groups `ignore_tgids` (threads looked up under `proc`). Fails with
    /// `Unsupported` when the kernel has no such tracepoint.
    pub fn start_added(
        tracefs: &Path,
        ignore_tgids: &[i32],
        proc: &Path,
    ) -> io::Result<FilemapTrace> {
        let ignore = IgnoreTasks {
            tgids: ignore_tgids.to_vec(),
            proc: proc.to_path_buf(),
            known: HashMap::new(),
        };
        Self::start_with(tracefs, &[ADDED_EVENT], PageSource::Added, Some(ignore))
    }

    fn start_with(
        tracefs: &Path,
        events: &'static [&'static str],
        source: PageSource,
        ignore: Option<IgnoreTasks>,
    ) -> io::Result<FilemapTrace> {
        let mut mounted = None;
        if !tracefs.join("instances").is_dir() {
            mount_tracefs(tracefs)?;
            mounted = Some(tracefs.to_path_buf());
        }
        let result = Self::start_mounted(tracefs, mounted.clone(), events, source, ignore);
        if result.is_err() {
            if let Some(m) = &mounted {
                unmount(m);
            }
        }
        result
    }

    fn start_mounted(
        tracefs: &Path,
        mounted: Option<PathBuf>,
        events: &'static [&'static str],
        source: PageSource,
        ignore: Option<IgnoreTasks>,
    ) -> io::Result<FilemapTrace> {
        if !events
            .iter()
            .all(|e| tracefs.join("events/filemap").join(e).is_dir())
        {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                match source {
                    PageSource::Access => {
                        "this kernel has no filemap access tracepoints (Linux 6.10+)"
                    }
                    PageSource::Added => {
                        "this kernel has no mm_filemap_add_to_page_cache tracepoint"
                    }
                },
            ));
        }
        // One instance per process and source: preload's learner may run beside another.
        let instance = tracefs.join(format!(
            "instances/bootprint-readahead-{}-{}",
            std::process::id(),
            source.word()
        ));
        if !instance.is_dir() {
            fs::create_dir(&instance)?;
        }
        let mut t = FilemapTrace {
            instance,
            mounted,
            events,
            source,
            stop: Arc::new(AtomicBool::new(false)),
            reader: None,
        };
        // A boot makes events in bursts; 4 MiB per CPU holds a few tens of thousands.
        let _ = write(&t.instance.join("buffer_size_kb"), "4096");
        for e in events {
            write(
                &t.instance.join("events/filemap").join(e).join("enable"),
                "1",
            )?;
        }
        let pipe = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(t.instance.join("trace_pipe"))?;
        let stop = t.stop.clone();
        t.reader = Some(
            std::thread::Builder::new()
                .name("bp-filemap".into())
                .spawn(move || read_pipe(pipe, &stop, ignore))?,
        );
        Ok(t)
    }

    fn disable(&self) {
        for e in self.events {
            let _ = fs::write(
                self.instance.join("events/filemap").join(e).join("enable"),
                "0",
            );
        }
    }

    /// Stops tracing, reads what is left and removes the instance.
    pub fn stop(mut self) -> (PageMap, TraceStats) {
        self.disable();
        let lost = overruns(&self.instance);
        self.stop.store(true, Ordering::Relaxed);
        let (map, events, ignored) = self
            .reader
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        (
            map,
            TraceStats {
                events,
                lost,
                source: self.source,
                ignored,
            },
        )
    }
}

impl Drop for FilemapTrace {
    fn drop(&mut self) {
        // Also on a panic: never leave events enabled or the instance behind.
        self.disable();
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
        let _ = fs::remove_dir(&self.instance);
        if let Some(m) = &self.mounted {
            unmount(m);
        }
    }
}

fn mount_tracefs(at: &Path) -> io::Result<()> {
    sys::mount("tracefs", at, Some("tracefs"), 0, None)
}

fn unmount(at: &Path) {
    crate::sys::umount_detach(at);
}

/// Sum of `overrun:` over the instance's per-CPU stats.
fn overruns(instance: &Path) -> u64 {
    let Ok(rd) = fs::read_dir(instance.join("per_cpu")) else {
        return 0;
    };
    rd.flatten()
        .filter_map(|cpu| fs::read_to_string(cpu.path().join("stats")).ok())
        .flat_map(|t| {
            t.lines()
                .filter_map(|l| {
                    l.strip_prefix("overrun:")
                        .and_then(|v| v.trim().parse::<u64>().ok())
                })
                .collect::<Vec<_>>()
        })
        .sum()
}

fn read_pipe(mut pipe: fs::File, stop: &AtomicBool, mut ignore: Option<IgnoreTasks>) -> ReadResult {
    use std::os::fd::AsRawFd;
    let page = sys::page_size();
    let mut map = PageMap::default();
    let (mut events, mut ignored) = (0u64, 0u64);
    let mut buf = vec![0u8; 1 << 16];
    let mut partial = String::new();
    let mut quiet_after_stop = 0;
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        match pipe.read(&mut buf) {
            Ok(0) => {}
            Ok(n) => {
                quiet_after_stop = 0;
                partial.push_str(&String::from_utf8_lossy(&buf[..n]));
                let complete = partial.rfind('\n').map_or(0, |i| i + 1);
                for line in partial[..complete].lines() {
                    let access = match ignore.as_mut() {
                        None => parse_line(line, page),
                        Some(ig) => match parse_added_line(line, page) {
                            Some((tid, _)) if ig.ignores(tid) => {
                                ignored += 1;
                                None
                            }
                            other => other.map(|(_, a)| a),
                        },
                    };
                    if let Some(a) = access {
                        map.add(&a);
                        events += 1;
                    }
                }
                partial.drain(..complete);
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
        if stopping {
            // Empty twice in a row after the stop: everything written has been read.
            quiet_after_stop += 1;
            if quiet_after_stop >= 2 {
                break;
            }
        }
        let _ = sys::poll_readable(pipe.as_raw_fd(), 50);
    }
    (map, events, ignored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_events() {
        let l = "             cat-5313    [001] ..... 18331.503454: mm_filemap_get_pages: dev=254:0 ino=2a01b ofs=8192-16383";
        assert_eq!(
            parse_line(l, 4096),
            Some(Access {
                major: 254,
                minor: 0,
                ino: 0x2a01b,
                start: 8192,
                end: 16384
            })
        );
        let l = " sh-1 [000] ...1. 1.0: mm_filemap_map_pages: dev=8:1 ino=ff ofs=0-65535";
        assert_eq!(parse_line(l, 4096).unwrap().end, 65536);
        let l = " sh-1 [000] ...1. 1.0: mm_filemap_fault: dev=8:1 ino=ff ofs=12288";
        let a = parse_line(l, 4096).unwrap();
        assert_eq!((a.start, a.end), (12288, 16384));
        assert_eq!(parse_line("# tracer: nop", 4096), None);
        assert_eq!(
            parse_line(" x: mm_filemap_fault: dev=8:1 ino=zz ofs=1", 4096),
            None
        );
        assert_eq!(
            parse_line(" x: mm_filemap_get_pages: dev=8:1 ino=1 ofs=9-3", 4096),
            None
        );
    }

    #[test]
    fn parses_page_cache_additions_in_both_formats_with_the_task() {
        // Since folios (the format of Debian 12's 6.1 and of 6.18): order 2 is 4 pages.
        let l = "   Web Content-5313    [001] ..... 18331.503454: mm_filemap_add_to_page_cache: dev 254:0 ino 2a01b pfn=0x1234 ofs=8192 order=2";
        assert_eq!(
            parse_added_line(l, 4096),
            Some((
                5313,
                Access {
                    major: 254,
                    minor: 0,
                    ino: 0x2a01b,
                    start: 8192,
                    end: 8192 + 4 * 4096
                }
            ))
        );
        // Before folios: one page, and `record-tgid`'s `(TGID)` before the CPU.
        let l = " xfce4-panel-77 (   70) [000] d..1. 2.5: mm_filemap_add_to_page_cache: dev 8:1 ino ff page=00000000deadbeef pfn=4660 ofs=0";
        let (tid, a) = parse_added_line(l, 4096).unwrap();
        assert_eq!(
            (tid, a.major, a.minor, a.ino, a.start, a.end),
            (77, 8, 1, 0xff, 0, 4096)
        );
        // Not this event, or not what was expected in it.
        let l = " sh-1 [000] ...1. 1.0: mm_filemap_delete_from_page_cache: dev 8:1 ino ff pfn=0x1 ofs=0 order=0";
        assert_eq!(parse_added_line(l, 4096), None);
        let l = " sh-1 [000] ...1. 1.0: mm_filemap_add_to_page_cache: dev 8:1 ino zz pfn=0x1 ofs=0 order=0";
        assert_eq!(parse_added_line(l, 4096), None);
        let l = " sh-1 [000] ...1. 1.0: mm_filemap_add_to_page_cache: dev 8:1 ino ff pfn=0x1 ofs=0 order=99";
        assert_eq!(parse_added_line(l, 4096), None);
        let l = " sh [000] ...1. 1.0: mm_filemap_add_to_page_cache: dev 8:1 ino ff pfn=0x1 ofs=0 order=0";
        assert_eq!(parse_added_line(l, 4096), None, "no task id");
        // The access parser does not take it, nor this one an access event.
        let l = " sh-1 [000] ...1. 1.0: mm_filemap_add_to_page_cache: dev 8:1 ino ff pfn=0x1 ofs=0 order=0";
        assert_eq!(parse_line(l, 4096), None);
        let l = " sh-1 [000] ...1. 1.0: mm_filemap_fault: dev=8:1 ino=ff ofs=12288";
        assert_eq!(parse_added_line(l, 4096), None);
    }

    #[test]
    fn a_thread_of_an_ignored_process_is_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        for (tid, tgid) in [(10, 10), (11, 10), (12, 12)] {
            let d = tmp.path().join(tid.to_string());
            fs::create_dir(&d).unwrap();
            fs::write(
                d.join("status"),
                format!("Name:\tx\nTgid:\t{tgid}\nPid:\t{tid}\n"),
            )
            .unwrap();
        }
        let mut ig = IgnoreTasks {
            tgids: vec![10],
            proc: tmp.path().to_path_buf(),
            known: HashMap::new(),
        };
        assert!(ig.ignores(10));
        assert!(ig.ignores(11), "a thread of 10");
        assert!(!ig.ignores(12));
        assert!(
            !ig.ignores(13),
            "gone before it was looked up: someone else's"
        );
        // Looked up once: the answer stays when the thread is gone.
        fs::remove_dir_all(tmp.path().join("11")).unwrap();
        assert!(ig.ignores(11));
    }

    #[test]
    fn ranges_are_whole_pages_merged_and_cut_at_the_end() {
        let mut m = PageMap::default();
        let acc = |start, end| Access {
            major: 8,
            minor: 1,
            ino: 7,
            start,
            end,
        };
        for (s, e) in [
            (100, 200),
            (4096, 8192),
            (20000, 20001),
            (8192, 9000),
            (40000, 50000),
        ] {
            m.add(&acc(s, e));
        }
        let r: Vec<(u64, u64)> = m
            .ranges(8, 1, 7, 45000, 4096)
            .iter()
            .map(|r| (r.offset, r.len))
            .collect();
        assert_eq!(r, [(0, 12288), (16384, 4096), (36864, 45000 - 36864)]);
        assert!(m.ranges(8, 1, 8, 45000, 4096).is_empty());
        assert!(m.ranges(8, 2, 7, 45000, 4096).is_empty());
        assert_eq!(m.len(), 1);
    }
}
