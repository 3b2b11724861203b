//! Learning: which files a boot opens and reads (fanotify, in first-access order), then which
//! of their pages it used, into a [`Pack`]. The pages come from the kernel's filemap
//! tracepoints where it has them ([`crate::filemap`], exact), else from mincore when the boot
//! is done. Preload asks instead, where the access tracepoints are missing, for the pages
//! added to the page cache (`AddedPages`): what a login read from disk.
//!
//! With mincore, the root disk's `read_ahead_kb` is lowered while learning so that the
//! kernel's own readahead does not make mincore report pages nobody asked for; a
//! [`KnobGuard`] puts it back when the [`Learner`] ends, however it ends. With the
//! tracepoints it is left alone.

use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::filemap::{FilemapTrace, PageMap, TraceStats};
use crate::pack::{Entry, Header, Pack, Range};
use crate::plan::{self, Candidate};
use crate::system::{self, Paths};
use crate::{metadata, sys};
use sample::knob::KnobGuard;
use sample::sys as fan;

/// How to learn.
#[derive(Debug, Clone)]
pub struct LearnConfig {
    /// Kernel paths.
    pub paths: Paths,
    /// Keep only files under these directories (empty: every file). The boot path leaves
    /// this empty; tests use it to ignore the rest of the machine.
    pub only_under: Vec<PathBuf>,
    /// `read_ahead_kb` of the root disk while learning; `None` leaves it alone. Default 16:
    /// low enough that mincore sees roughly what was read, high enough not to slow the
    /// learning boot much.
    pub read_ahead_kb: Option<u32>,
    /// Override of the filesystems to mark (default: local disk filesystems from
    /// `<proc>/self/mountinfo`).
    pub marks: Option<Vec<PathBuf>>,
    /// Where tracefs is (or is mounted) for the filemap tracepoints; `None`: use mincore.
    pub tracefs: Option<PathBuf>,
    /// Events caused by these processes are not recorded: preload prefetches while it
    /// learns, and its own opens must not teach it that the session used a file.
    pub ignore_pids: Vec<i32>,
    /// When to trace the pages added to the page cache by other processes than
    /// `ignore_pids` (what they read from disk) rather than the pages used.
    pub added_pages: AddedPages,
}

/// When learning traces the pages added to the page cache (`mm_filemap_add_to_page_cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AddedPages {
    /// Never: the access tracepoints, else mincore. A boot's learning, until a benchmark
    /// says otherwise.
    #[default]
    Never,
    /// Where the access tracepoints are missing (before Linux 6.10), instead of mincore.
    /// Preload: a session's cache misses are what is worth prefetching for it.
    WithoutAccessEvents,
    /// Always (tests of this path on a kernel that has the access tracepoints).
    Always,
}

impl Default for LearnConfig {
    fn default() -> LearnConfig {
        LearnConfig {
            paths: Paths::default(),
            only_under: Vec::new(),
            read_ahead_kb: Some(16),
            marks: None,
            tracefs: Some(PathBuf::from(crate::filemap::TRACEFS)),
            ignore_pids: Vec::new(),
            added_pages: AddedPages::Never,
        }
    }
}

/// A file the learned boot opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnedFile {
    /// Path, as `/proc/self/fd` showed it.
    pub path: PathBuf,
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
}

/// What a learning session saw.
#[derive(Debug, Clone, Default)]
pub struct Learned {
    /// Regular files, deduplicated by (device, inode), in first-access order.
    pub files: Vec<LearnedFile>,
    /// fanotify events read.
    pub events: u64,
    /// Whether the kernel's event queue overflowed (some files may be missing).
    pub overflowed: bool,
    /// The filesystems that were marked.
    pub marks: Vec<PathBuf>,
    /// The pages the filemap tracepoints saw, when they were used.
    pub pages: Option<PageMap>,
    /// What tracing saw (events, events lost).
    pub trace_stats: TraceStats,
}

impl Learned {
    /// Where the pages come from: `filemap` (the access tracepoints), `added` (the pages
    /// added to the page cache), both only when no event was lost, or `mincore`.
    pub fn page_source(&self) -> &'static str {
        if self.pages.is_some() && self.trace_stats.lost == 0 {
            self.trace_stats.source.word()
        } else {
            "mincore"
        }
    }
}

/// A running learning session: fanotify marks on the local disk filesystems.
pub struct Learner {
    fan: OwnedFd,
    seen: HashSet<(u64, u64)>,
    learned: Learned,
    proc_fd: PathBuf,
    only_under: Vec<PathBuf>,
    buf: Vec<fan::RawFanEvent>,
    ignore_pids: Vec<i32>,
    filemap: Option<FilemapTrace>,
    _knob: Option<KnobGuard>,
}

/// The fanotify events learning asks for.
pub const MASK: u64 = libc::FAN_OPEN | libc::FAN_OPEN_EXEC | libc::FAN_ACCESS;

impl Learner {
    /// Lowers `read_ahead_kb`, creates the fanotify group and marks the filesystems. Fails
    /// when fanotify is unavailable or no filesystem could be marked.
    pub fn start(cfg: &LearnConfig) -> io::Result<Learner> {
        let mountinfo_path = cfg.paths.proc.join("self/mountinfo");
        let mounts = std::fs::read_to_string(&mountinfo_path)
            .ok()
            .and_then(|t| system::parse_mountinfo(&t, &mountinfo_path.to_string_lossy()).ok())
            .unwrap_or_default();
        // The tracepoints first: when they work, read_ahead_kb can stay as it is.
        let filemap = cfg.tracefs.as_deref().and_then(|t| {
            let added = || FilemapTrace::start_added(t, &cfg.ignore_pids, &cfg.paths.proc).ok();
            match cfg.added_pages {
                AddedPages::Never => FilemapTrace::start(t).ok(),
                AddedPages::WithoutAccessEvents => FilemapTrace::start(t).ok().or_else(added),
                AddedPages::Always => added(),
            }
        });
        let knob = match (
            cfg.read_ahead_kb.filter(|_| filemap.is_none()),
            system::root_mount(&mounts),
        ) {
            (Some(kb), Some(root)) => Some(KnobGuard::set(
                &system::queue_file(&cfg.paths.sys, root.major, root.minor, "read_ahead_kb"),
                &kb.to_string(),
            )),
            _ => None,
        };
        let wanted = match &cfg.marks {
            Some(m) => m.clone(),
            None => system::learn_marks(&mounts),
        };
        let fan = fan::fanotify_init()?;
        let mut marks = Vec::new();
        let mut last_err = None;
        for m in wanted {
            // FAN_OPEN_EXEC needs Linux 5.0: retry without it.
            let r = fan::fanotify_mark(&fan, MASK, &m)
                .or_else(|_| fan::fanotify_mark(&fan, MASK & !libc::FAN_OPEN_EXEC, &m));
            match r {
                Ok(()) => marks.push(m),
                Err(e) => last_err = Some(e),
            }
        }
        if marks.is_empty() {
            return Err(last_err.unwrap_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, "no local disk filesystem to watch")
            }));
        }
        Ok(Learner {
            fan,
            seen: HashSet::new(),
            learned: Learned {
                marks,
                ..Learned::default()
            },
            proc_fd: cfg.paths.proc.join("self/fd"),
            only_under: cfg.only_under.clone(),
            buf: Vec::new(),
            ignore_pids: cfg.ignore_pids.clone(),
            filemap,
            _knob: knob,
        })
    }

    /// Waits up to `timeout_ms` for events and records every queued one.
    pub fn poll(&mut self, timeout_ms: i32) -> io::Result<()> {
        if ::sys::poll_readable(self.fan.as_raw_fd(), timeout_ms)? {
            self.drain()?;
        }
        Ok(())
    }

    /// Records every queued event without waiting.
    pub fn drain(&mut self) -> io::Result<()> {
        let mut buf = std::mem::take(&mut self.buf);
        fan::fanotify_read(&self.fan, &mut buf)?;
        for ev in buf.drain(..) {
            self.learned.events += 1;
            if ev.mask & libc::FAN_Q_OVERFLOW != 0 {
                self.learned.overflowed = true;
            }
            if self.ignore_pids.contains(&ev.pid) {
                continue;
            }
            if let Some(fd) = ev.file {
                self.record(&File::from(fd));
            }
        }
        self.buf = buf;
        Ok(())
    }

    fn record(&mut self, f: &File) {
        let Ok(md) = f.metadata() else { return };
        if !md.file_type().is_file() || !self.seen.insert((md.dev(), md.ino())) {
            return;
        }
        let Ok(path) = std::fs::read_link(self.proc_fd.join(f.as_raw_fd().to_string())) else {
            return;
        };
        if !path.is_absolute() || path.to_string_lossy().ends_with(" (deleted)") {
            return;
        }
        if !self.only_under.is_empty() && !self.only_under.iter().any(|d| path.starts_with(d)) {
            // Left in `seen`, so its later events cost no readlink.
            return;
        }
        self.learned.files.push(LearnedFile {
            path,
            dev: md.dev(),
            ino: md.ino(),
        });
    }

    /// The files seen so far.
    pub fn files(&self) -> &[LearnedFile] {
        &self.learned.files
    }

    /// Reads what is still queued, stops watching and restores `read_ahead_kb`.
    pub fn finish(mut self) -> Learned {
        let _ = self.drain();
        if let Some(t) = self.filemap.take() {
            let (pages, stats) = t.stop();
            self.learned.pages = Some(pages);
            self.learned.trace_stats = stats;
        }
        std::mem::take(&mut self.learned)
    }
}

/// A [`Learner`] on its own thread, for the recorder: start it, let the boot run, stop it
/// when boot is done.
pub struct LearnThread {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Learned>,
}

impl LearnThread {
    /// Starts learning (see [`Learner::start`]) on a new thread.
    pub fn spawn(cfg: &LearnConfig) -> io::Result<LearnThread> {
        let mut learner = Learner::start(cfg)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("bp-learn".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    if learner.poll(50).is_err() {
                        break;
                    }
                }
                learner.finish()
            })?;
        Ok(LearnThread { stop, handle })
    }

    /// Stops learning and returns what was seen.
    pub fn stop(self) -> Learned {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// A learning boot whose root device was busy for at least this share of the boot (from
/// boot to the pack's building: `/proc/diskstats` time doing I/O over `/proc/uptime`) waited
/// on its disk ([`crate::pack::Header::disk_bound`]). Chosen between the test bed's two
/// rotating profiles (docs/readahead.md, "Metadata"): 0.93 on the time-scaled laptop disk,
/// where reading the metadata first brought the login from 0.604x to 0.355x of no
/// readahead, and 0.49 on the unscaled one, where the emulated CPU, not the disk, sets the
/// pace and it made the login later (0.750x to 0.795x).
pub const DISK_BOUND_SHARE: f64 = 0.75;

/// How to turn what was learned into a pack.
#[derive(Debug, Clone)]
pub struct PackOptions {
    /// Kernel paths.
    pub paths: Paths,
    /// Whether the root device rotates; `None`: from `queue/rotational`.
    pub rotational: Option<bool>,
    /// Whether the boot waited on its root device; `None`: from `/proc/diskstats` and
    /// `/proc/uptime` ([`DISK_BOUND_SHARE`]).
    pub disk_bound: Option<bool>,
    /// Byte budget; `None`: what the root device reads in `target_s` (see
    /// [`system::default_budget`]).
    pub budget_bytes: Option<u64>,
    /// Seconds of reading the default budget allows.
    pub target_s: f64,
    /// Order by physical address (`Some(true)`), by first access (`Some(false)`), or by
    /// whether the device rotates (`None`).
    pub disk_order: Option<bool>,
    /// List the root filesystem's metadata the learned files need ([`metadata::learn`]),
    /// for replay to read first.
    pub metadata: bool,
    /// Where block device nodes are (`/dev`), to read the root's filesystem geometry.
    pub dev: PathBuf,
}

impl Default for PackOptions {
    fn default() -> PackOptions {
        PackOptions {
            paths: Paths::default(),
            rotational: None,
            disk_bound: None,
            budget_bytes: None,
            target_s: 3.0,
            disk_order: None,
            metadata: true,
            dev: PathBuf::from("/dev"),
        }
    }
}

/// What [`build_pack`] did with each learned file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildStats {
    /// Files learned.
    pub files_learned: usize,
    /// Files gone or changed (other inode, not a regular file) by the time of packing.
    pub files_gone: usize,
    /// Files with no page in the cache.
    pub files_empty: usize,
    /// Bytes resident before the budget was applied.
    pub bytes_resident: u64,
    /// Entries left out (the last the boot opened) so the pack stays within
    /// [`crate::pack::MAX_PACK_BYTES`].
    pub entries_capped: usize,
}

/// Builds the pack from a finished learning session: mincore of every learned file (the
/// pages the boot used), FIEMAP of the first range on rotating disks, order, budget.
pub fn build_pack(learned: &Learned, opts: &PackOptions) -> (Pack, BuildStats) {
    let page = ::sys::page_size();
    let mountinfo = opts.paths.proc.join("self/mountinfo");
    let mounts = std::fs::read_to_string(&mountinfo)
        .ok()
        .and_then(|t| system::parse_mountinfo(&t, &mountinfo.to_string_lossy()).ok())
        .unwrap_or_default();
    let root = system::root_mount(&mounts);
    let rotational = opts.rotational.unwrap_or_else(|| {
        root.and_then(|r| {
            std::fs::read_to_string(system::queue_file(
                &opts.paths.sys,
                r.major,
                r.minor,
                "rotational",
            ))
            .ok()
            .and_then(|t| system::parse_rotational(&t))
        })
        .unwrap_or(true)
    });
    // /proc/diskstats, read once for both figures it gives when they are not given: the
    // device's read rate (the budget) and how busy it was (disk_bound).
    let diskstats = (opts.budget_bytes.is_none() || opts.disk_bound.is_none())
        .then(|| std::fs::read_to_string(opts.paths.proc.join("diskstats")).ok())
        .flatten();
    let budget = opts.budget_bytes.unwrap_or_else(|| {
        let bw = root
            .zip(diskstats.as_deref())
            .and_then(|(r, t)| system::read_bandwidth(t, r.major, r.minor));
        system::default_budget(rotational, bw, opts.target_s)
    });
    let disk_bound = opts.disk_bound.unwrap_or_else(|| {
        root.zip(diskstats.as_deref())
            .and_then(|(r, t)| {
                let uptime = std::fs::read_to_string(opts.paths.proc.join("uptime")).ok()?;
                system::busy_share(t, &uptime, r.major, r.minor)
            })
            .is_some_and(|share| share >= DISK_BOUND_SHARE)
    });
    let mut stats = BuildStats {
        files_learned: learned.files.len(),
        ..BuildStats::default()
    };
    let mut cands = Vec::new();
    let disk_order = opts.disk_order.unwrap_or(rotational);
    // Traced pages only when no event was lost; else what is resident now.
    let traced = learned
        .pages
        .as_ref()
        .filter(|_| learned.trace_stats.lost == 0);
    for (rank, lf) in learned.files.iter().enumerate() {
        match measure(lf, page, disk_order, traced) {
            Some(c) if c.entry.ranges.is_empty() => stats.files_empty += 1,
            Some(mut c) => {
                c.entry.first_access = rank as u32;
                stats.bytes_resident += c.entry.bytes();
                cands.push(c);
            }
            None => stats.files_gone += 1,
        }
    }
    plan::order(&mut cands, disk_order);
    let entries = plan::apply_budget(cands, budget, page);
    let metadata = match root {
        Some(r) if opts.metadata => learn_metadata(learned, r, opts),
        _ => Vec::new(),
    };
    let created_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut pack = Pack {
        header: Header {
            created_unix_s,
            kernel_release: ::sys::kernel_release().unwrap_or_default(),
            root: system::root_id(&opts.paths, root),
            rotational,
            relocated: false,
            disk_bound,
            budget_bytes: budget,
            metadata,
        },
        entries,
    };
    // Never written larger than replay loads.
    stats.entries_capped = pack.fit(crate::pack::MAX_PACK_BYTES);
    (pack, stats)
}

/// [`metadata::learn`] for every learned file on the root filesystem (read or not: the
/// boot opened it), from the root's block device; nothing when it cannot be read as
/// ext2/3/4.
fn learn_metadata(learned: &Learned, root: &system::Mount, opts: &PackOptions) -> Vec<Range> {
    let Some(dev) = system::open_block_device(&opts.paths.sys, &opts.dev, root.major, root.minor)
    else {
        return Vec::new();
    };
    let Ok(g) = crate::inode_table::Geometry::read(&dev) else {
        return Vec::new();
    };
    let files = learned
        .files
        .iter()
        .map(|f| (f.path.as_path(), f.dev, f.ino));
    metadata::learn(files, libc::makedev(root.major, root.minor), &g)
}

/// Opens a learned file (without following a symlink anywhere in its path:
/// `sys::open_regular`), checks it is still the same regular file, and reads its resident
/// pages.
fn measure(
    lf: &LearnedFile,
    page: u64,
    rotational: bool,
    traced: Option<&PageMap>,
) -> Option<Candidate> {
    let f = ::sys::open_regular(&lf.path).ok()?;
    let md = f.metadata().ok()?;
    if !md.file_type().is_file() || md.ino() != lf.ino || md.dev() != lf.dev {
        return None;
    }
    let ranges = match traced {
        Some(map) => map.ranges(
            libc::major(md.dev()),
            libc::minor(md.dev()),
            md.ino(),
            md.size(),
            page,
        ),
        None => {
            let resident = sys::mincore(&f, md.size()).ok()?;
            plan::ranges_from_pages(&resident, page, md.size())
        }
    };
    let physical = if rotational {
        ranges
            .first()
            .and_then(|r| sys::fiemap_physical(&f, r.offset))
    } else {
        None
    };
    Some(Candidate {
        entry: Entry::of_file(lf.path.clone(), &md, ranges),
        physical,
    })
}

#[cfg(test)]
mod disk_bound_tests {
    use super::*;

    /// The pack's `disk_bound` flag from a fake /proc: the root's mount, its device's line of
    /// `diskstats` and `uptime`; a device the disk was busy 3/4 of the boot or more.
    #[test]
    fn the_pack_says_whether_the_boot_waited_on_its_disk() {
        let t = tempfile::tempdir().unwrap();
        let proc = t.path().join("proc");
        std::fs::create_dir_all(proc.join("self")).unwrap();
        std::fs::write(
            proc.join("self/mountinfo"),
            "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n",
        )
        .unwrap();
        let opts = PackOptions {
            paths: Paths {
                proc: proc.clone(),
                sys: t.path().join("sys"),
                by_uuid: t.path().join("by-uuid"),
                root: t.path().to_path_buf(),
            },
            rotational: Some(true),
            budget_bytes: Some(1 << 20),
            ..PackOptions::default()
        };
        let flag = |busy_ms: u64, uptime: &str| {
            std::fs::write(
                proc.join("diskstats"),
                format!(" 254       0 vda 500 0 90000 9000 0 0 0 0 0 {busy_ms} 9000\n"),
            )
            .unwrap();
            std::fs::write(proc.join("uptime"), uptime).unwrap();
            build_pack(&Learned::default(), &opts).0.header.disk_bound
        };
        // The test bed's learning boots: the time-scaled laptop disk and the unscaled one.
        assert!(flag(430_000, "462.0 100.0\n"));
        assert!(!flag(31_000, "64.0 100.0\n"));
        assert!(flag(75_000, "100.0 1.0\n"), "exactly 3/4");
        assert!(!flag(74_000, "100.0 1.0\n"));
        // Unknown (no uptime): not bound, so `auto` does not read the metadata.
        std::fs::remove_file(proc.join("uptime")).unwrap();
        assert!(!build_pack(&Learned::default(), &opts).0.header.disk_bound);
        // Set by the caller.
        let given = PackOptions {
            disk_bound: Some(true),
            ..opts.clone()
        };
        assert!(build_pack(&Learned::default(), &given).0.header.disk_bound);
    }
}
