//! Replay: load a pack the boot path may trust, then read its ranges into the page cache in
//! pack order with readahead(2), at idle I/O priority, within a time limit; and, when boot
//! is done, how much of it was used (the hit rate).

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::pack::{self, Entry, Pack, PackError, PackErrorKind, RootId};
use crate::yield_io::{CpuWatch, Gate};
use crate::{inode_table, metadata, plan, sys, system, Error};

/// How to replay.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Threads reading at once on a non-rotating device (a rotating one gets one thread, so
    /// the head moves in one sweep).
    pub threads: usize,
    /// Replay gives up after this long; what it has not read by then the boot reads itself.
    pub time_limit: Duration,
    /// Put the reading threads in the idle I/O class.
    pub idle_io: bool,
    /// After asking for everything, wait (within the time limit) until it is in the page
    /// cache, to report when the reads completed (`settled_ns`): readahead(2) returns once
    /// the reads are queued, not when they are done.
    pub wait_settled: bool,
    /// Replay stops once it has asked for this many bytes (0: no cap). A pack can claim
    /// anything (a 64 GiB sparse file reads as holes that fill the page cache with zeros):
    /// by default half the machine's memory.
    pub max_bytes: u64,
    /// Ranges of a file closer than this many bytes are read as one ([`plan::MERGE_GAP`]).
    pub merge_gap: u64,
    /// Where the devices' `queue/read_ahead_kb` and `queue/max_sectors_kb` are read (each
    /// file is read in pieces of its device's [`system::device_request_bytes`]).
    pub sys: PathBuf,
    /// Read only while each file's disk is otherwise idle ([`crate::yield_io`]): one
    /// thread, one piece in flight at a time. `None`: read as fast as the disk takes it
    /// (the boot's replay, which must run ahead of the boot).
    pub yield_to_others: Option<YieldTo>,
    /// Before the files, read the metadata opening them needs from `root`'s block device
    /// ([`preread_metadata`]): the pack's metadata ranges, or for a pack without them the
    /// entries' inode-table blocks. ext4 otherwise reads each on the spot, a small
    /// synchronous read away from the replay's stream. Not with `yield_to_others`: that
    /// read does not yield. `None` (the default): when the pack was learned on a rotating
    /// device that the boot waited on ([`ReplayOptions::reads_metadata`]): on the test bed
    /// it made the login much earlier on the time-scaled laptop disk but later on the
    /// time-scaled card and on the unscaled disk (docs/readahead.md, "Measured").
    pub metadata: Option<bool>,
    /// The directory whose filesystem's metadata is read (`/`: a pack's files are the root
    /// filesystem's; entries learned on another device are left out).
    pub root: PathBuf,
    /// Where block device nodes are (`/dev`; devtmpfs has them before udev runs).
    pub dev: PathBuf,
}

impl ReplayOptions {
    /// Whether replaying `p` reads the metadata first: as [`ReplayOptions::metadata`] says,
    /// or when `p` was learned on a rotating device and its boot waited on that device
    /// (the read saves seeks, which cost only where the disk sets the pace; a card or SSD
    /// pays for the extra requests and saves no seek; where the CPU sets the pace the read
    /// only comes first).
    pub fn reads_metadata(&self, p: &Pack) -> bool {
        self.metadata
            .unwrap_or(p.header.rotational && p.header.disk_bound)
    }
}

/// How a replay yields the disk to others ([`ReplayOptions::yield_to_others`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct YieldTo {
    /// A piece is read only after the disk did no one else's I/O for this long.
    pub quiet: Duration,
    /// Pieces at most this big (bytes): what someone else's read may have to wait behind.
    pub max_piece: u64,
    /// Also wait until others used at most this share of all CPUs' time over the quiet
    /// period ([`crate::yield_io::CpuWatch`]); `None`: the disk alone decides.
    pub cpu_max_share: Option<f64>,
}

impl Default for YieldTo {
    fn default() -> YieldTo {
        YieldTo {
            quiet: Duration::from_millis(250),
            max_piece: 256 << 10,
            cpu_max_share: None,
        }
    }
}

impl Default for ReplayOptions {
    fn default() -> ReplayOptions {
        ReplayOptions {
            threads: 4,
            time_limit: Duration::from_secs(30),
            idle_io: true,
            wait_settled: true,
            max_bytes: sys::total_ram_bytes() / 2,
            merge_gap: plan::MERGE_GAP,
            sys: PathBuf::from("/sys"),
            yield_to_others: None,
            metadata: None,
            root: PathBuf::from("/"),
            dev: PathBuf::from("/dev"),
        }
    }
}

/// What a replay did, for the trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayStats {
    /// Bytes asked of readahead(2).
    pub bytes_requested: u64,
    /// Ranges asked.
    pub ranges: u64,
    /// Files whose ranges were read.
    pub files_read: u64,
    /// Files skipped, all reasons.
    pub files_skipped: u64,
    /// ... because the path no longer exists (or cannot be opened).
    pub skipped_missing: u64,
    /// ... because it is no longer a regular file (a directory, a symlink, ...).
    pub skipped_not_regular: u64,
    /// ... because its inode, size or mtime changed.
    pub skipped_changed: u64,
    /// ... because readahead(2) failed on it.
    pub skipped_error: u64,
    /// Files not reached before the time limit.
    pub files_not_reached: u64,
    /// Wall time of the replay in nanoseconds.
    pub duration_ns: u64,
    /// Whether the time limit cut the replay short.
    pub timed_out: bool,
    /// Reading threads used.
    pub threads: u64,
    /// From the start until what was asked was in the page cache (or stopped growing for
    /// half a second, or the time limit); 0 when not waited for.
    pub settled_ns: u64,
    /// Bytes of the pack in the page cache at that point.
    pub resident: u64,
    /// Whether the byte cap ([`ReplayOptions::max_bytes`]) cut the replay short.
    pub capped: bool,
    /// readahead(2) calls made (ranges merged across small gaps, in request-sized pieces).
    pub requests: u64,
    /// The calls the same ranges took before (each range alone, in 128 KiB pieces).
    pub requests_unmerged: u64,
    /// Bytes read in the gaps between merged ranges (not in `bytes_requested`).
    pub gap_bytes: u64,
    /// The largest request size used (bytes; the devices' `max(read_ahead_kb,
    /// max_sectors_kb)`).
    pub request_bytes: u64,
    /// Pieces held back because someone else used the disk ([`ReplayOptions::yield_to_others`]).
    pub yield_waits: u64,
    /// Time spent waiting for the disk to be idle (nanoseconds).
    pub yielded_ns: u64,
    /// Bytes the disk moved for others while the replay watched it.
    pub others_bytes: u64,
    /// Of `yield_waits`, the pieces held back because others kept the CPUs busy
    /// ([`YieldTo::cpu_max_share`]).
    pub yield_cpu_waits: u64,
    /// Bytes of filesystem metadata read before the files ([`ReplayOptions::metadata`];
    /// 0: none, also when the root's block device or filesystem could not be read).
    pub metadata_bytes: u64,
    /// The reads those took.
    pub metadata_requests: u64,
    /// The bytes read for them, gaps between joined ranges included (not in
    /// `bytes_requested`).
    pub metadata_read_bytes: u64,
}

impl ReplayStats {
    /// The statistics as `key=value` fields, for an `events.log` line.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("bytes", self.bytes_requested.to_string()),
            ("ranges", self.ranges.to_string()),
            ("files", self.files_read.to_string()),
            ("skipped", self.files_skipped.to_string()),
            ("skipped_missing", self.skipped_missing.to_string()),
            ("skipped_not_regular", self.skipped_not_regular.to_string()),
            ("skipped_changed", self.skipped_changed.to_string()),
            ("skipped_error", self.skipped_error.to_string()),
            ("not_reached", self.files_not_reached.to_string()),
            ("duration_ns", self.duration_ns.to_string()),
            ("timed_out", u8::from(self.timed_out).to_string()),
            ("threads", self.threads.to_string()),
            ("settled_ns", self.settled_ns.to_string()),
            ("resident", self.resident.to_string()),
            ("capped", u8::from(self.capped).to_string()),
            ("requests", self.requests.to_string()),
            ("requests_unmerged", self.requests_unmerged.to_string()),
            ("gap_bytes", self.gap_bytes.to_string()),
            ("request_bytes", self.request_bytes.to_string()),
            ("yield_waits", self.yield_waits.to_string()),
            ("yielded_ns", self.yielded_ns.to_string()),
            ("others_bytes", self.others_bytes.to_string()),
            ("yield_cpu_waits", self.yield_cpu_waits.to_string()),
            ("metadata_bytes", self.metadata_bytes.to_string()),
            ("metadata_requests", self.metadata_requests.to_string()),
            ("metadata_read_bytes", self.metadata_read_bytes.to_string()),
        ]
    }

    /// One line of `key=value` fields (how a replay child reports to its parent).
    pub fn to_line(&self) -> String {
        let f: Vec<String> = self
            .fields()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        f.join(" ")
    }

    /// Parses [`ReplayStats::to_line`]; unknown keys are ignored, bad values are `None`.
    pub fn from_line(line: &str) -> Option<ReplayStats> {
        let mut s = ReplayStats::default();
        for kv in line.split_whitespace() {
            let (k, v) = kv.split_once('=')?;
            let n: u64 = v.parse().ok()?;
            match k {
                "bytes" => s.bytes_requested = n,
                "ranges" => s.ranges = n,
                "files" => s.files_read = n,
                "skipped" => s.files_skipped = n,
                "skipped_missing" => s.skipped_missing = n,
                "skipped_not_regular" => s.skipped_not_regular = n,
                "skipped_changed" => s.skipped_changed = n,
                "skipped_error" => s.skipped_error = n,
                "not_reached" => s.files_not_reached = n,
                "duration_ns" => s.duration_ns = n,
                "timed_out" => s.timed_out = n != 0,
                "threads" => s.threads = n,
                "settled_ns" => s.settled_ns = n,
                "resident" => s.resident = n,
                "capped" => s.capped = n != 0,
                "requests" => s.requests = n,
                "requests_unmerged" => s.requests_unmerged = n,
                "gap_bytes" => s.gap_bytes = n,
                "request_bytes" => s.request_bytes = n,
                "yield_waits" => s.yield_waits = n,
                "yielded_ns" => s.yielded_ns = n,
                "others_bytes" => s.others_bytes = n,
                "yield_cpu_waits" => s.yield_cpu_waits = n,
                "metadata_bytes" => s.metadata_bytes = n,
                "metadata_requests" => s.metadata_requests = n,
                "metadata_read_bytes" => s.metadata_read_bytes = n,
                _ => {}
            }
        }
        Some(s)
    }

    fn add(&mut self, o: &ReplayStats) {
        self.bytes_requested += o.bytes_requested;
        self.ranges += o.ranges;
        self.files_read += o.files_read;
        self.files_skipped += o.files_skipped;
        self.skipped_missing += o.skipped_missing;
        self.skipped_not_regular += o.skipped_not_regular;
        self.skipped_changed += o.skipped_changed;
        self.skipped_error += o.skipped_error;
        self.files_not_reached += o.files_not_reached;
        self.timed_out |= o.timed_out;
        self.capped |= o.capped;
        self.requests += o.requests;
        self.requests_unmerged += o.requests_unmerged;
        self.gap_bytes += o.gap_bytes;
        self.request_bytes = self.request_bytes.max(o.request_bytes);
        self.yield_waits += o.yield_waits;
        self.yielded_ns += o.yielded_ns;
        self.others_bytes += o.others_bytes;
        self.yield_cpu_waits += o.yield_cpu_waits;
        self.metadata_bytes += o.metadata_bytes;
        self.metadata_requests += o.metadata_requests;
        self.metadata_read_bytes += o.metadata_read_bytes;
    }
}

pub use crate::pack::MAX_PACK_BYTES;

/// Loads the pack at `path` for replay, refusing it (with the reason) when it is not a
/// regular file owned by `trusted_uid` (0 on the boot path) or is writable by group or
/// others, when it fails [`pack::check`], or when it was learned on another root
/// filesystem than `ours`. The error's [`crate::ErrorKind`] is what the caller acts on: nothing
/// learned yet (no pack), unsafe (a symlink there included), a bad file, a foreign root.
pub fn load(path: &Path, ours: &RootId, trusted_uid: u32) -> Result<Pack, Error> {
    let p = load_trusted(path, trusted_uid)?;
    if !p.header.root.matches(ours) {
        return Err(Error::from(PackError {
            path: Some(path.to_path_buf()),
            offset: None,
            kind: PackErrorKind::ForeignRoot {
                pack: p.header.root.clone(),
                ours: ours.clone(),
            },
        }));
    }
    Ok(p)
}

/// [`load`] without the root filesystem's check: the pack at `path`, opened once without
/// following a symlink, a regular file of `trusted_uid`'s that group and others cannot
/// write, no larger than [`MAX_PACK_BYTES`], and one [`pack::check`] accepts (what
/// `bootprint readahead relocate` and `replay` act on as root).
pub fn load_trusted(path: &Path, trusted_uid: u32) -> Result<Pack, Error> {
    let err = |kind| {
        Error::from(PackError {
            path: Some(path.to_path_buf()),
            offset: None,
            kind,
        })
    };
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| err(PackErrorKind::Io(e)))?;
    let md = f.metadata().map_err(|e| err(PackErrorKind::Io(e)))?;
    if !md.file_type().is_file() {
        return Err(err(PackErrorKind::Unsafe("not a regular file".into())));
    }
    if md.uid() != trusted_uid {
        return Err(err(PackErrorKind::Unsafe(format!(
            "owned by uid {}, expected uid {trusted_uid}",
            md.uid()
        ))));
    }
    if md.mode() & 0o022 != 0 {
        return Err(err(PackErrorKind::Unsafe(format!(
            "mode {:o} lets group or others write it",
            md.mode() & 0o7777
        ))));
    }
    // The size is the file's claim (a sparse or corrupt file can claim anything): no
    // allocation from it, and nothing past the cap is read.
    if md.len() > MAX_PACK_BYTES {
        return Err(err(PackErrorKind::Unsafe(format!(
            "{} bytes, more than a pack may have ({MAX_PACK_BYTES})",
            md.len()
        ))));
    }
    let mut bytes = Vec::new();
    (&mut f)
        .take(MAX_PACK_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(PackErrorKind::Io(e)))?;
    if bytes.len() as u64 > MAX_PACK_BYTES {
        return Err(err(PackErrorKind::Unsafe(format!(
            "grew past {MAX_PACK_BYTES} bytes while read"
        ))));
    }
    Ok(pack::check(&bytes).map_err(|e| e.in_file(path))?)
}

/// Why an entry was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Gone, or cannot be opened.
    Missing,
    /// No longer a regular file.
    NotRegular,
    /// Inode, size or mtime differ.
    Changed,
}

/// Checks an entry against the file now at its path and returns it opened: opened without
/// following a symlink anywhere in the path (`sys::open_regular`: a learned path comes from
/// /proc/self/fd and has none), non-blocking, and checked on the descriptor to be a regular
/// file with the same inode, size and mtime. Nothing else is ever opened: a directory of the
/// path swapped for a link to /dev makes the open fail, not open a device.
pub fn check_entry(e: &Entry) -> Result<File, Skip> {
    let f = ::sys::open_regular(&e.path).map_err(|err| {
        // Not a regular file, or a symlink in the path (ELOOP).
        if err.kind() == std::io::ErrorKind::InvalidInput || err.raw_os_error() == Some(libc::ELOOP)
        {
            Skip::NotRegular
        } else {
            Skip::Missing
        }
    })?;
    let md = f.metadata().map_err(|_| Skip::Missing)?;
    if md.ino() != e.ino
        || md.size() != e.size
        || md.mtime() != e.mtime_s
        || md.mtime_nsec() as u32 != e.mtime_ns
    {
        return Err(Skip::Changed);
    }
    Ok(f)
}

/// The piece every range was read in before request-sized replay (the kernel's default
/// `read_ahead_kb`); only counted now, for [`ReplayStats::requests_unmerged`].
const OLD_CHUNK: u64 = 128 * 1024;

/// Request sizes by device number, looked up once per device per thread.
#[derive(Default)]
struct RequestSizes(Vec<(u64, u64)>);

impl RequestSizes {
    fn of(&mut self, sys_dir: &Path, dev: u64) -> u64 {
        if let Some(&(_, n)) = self.0.iter().find(|(d, _)| *d == dev) {
            return n;
        }
        let n = system::device_request_bytes(sys_dir, libc::major(dev), libc::minor(dev));
        self.0.push((dev, n));
        n
    }
}

/// A replay's gates, one per whole disk (a file's device mapped to its disk once).
#[derive(Default)]
struct Gates {
    /// File device to its disk's gate (an index into `gates`), `None`: no gate possible.
    devs: Vec<(u64, Option<usize>)>,
    gates: Vec<((u32, u32), Gate)>,
}

impl Gates {
    fn of(&mut self, opts: &ReplayOptions, y: &YieldTo, dev: u64) -> Option<&mut Gate> {
        let i = match self.devs.iter().find(|(d, _)| *d == dev) {
            Some(&(_, i)) => i,
            None => {
                let disk =
                    crate::yield_io::whole_disk(&opts.sys, libc::major(dev), libc::minor(dev));
                let i = match self.gates.iter().position(|(d, _)| *d == disk) {
                    Some(i) => Some(i),
                    None => Gate::for_disk(Path::new("/proc"), disk.0, disk.1, y.quiet).map(|g| {
                        let g = match y.cpu_max_share {
                            Some(share) => {
                                g.with_cpu(CpuWatch::for_machine(Path::new("/proc"), share))
                            }
                            None => g,
                        };
                        self.gates.push((disk, g));
                        self.gates.len() - 1
                    }),
                };
                self.devs.push((dev, i));
                i
            }
        };
        i.map(|i| &mut self.gates[i].1)
    }

    fn add_to(&self, st: &mut ReplayStats) {
        for (_, g) in &self.gates {
            st.yield_waits += g.stats.waits;
            st.yielded_ns += g.stats.waited_ns;
            st.others_bytes += g.stats.others_bytes;
            st.yield_cpu_waits += g.stats.cpu_waits;
        }
    }
}

/// Reads one entry's ranges; false when the replay must stop (the time limit, or the byte
/// cap: `asked` counts every thread's bytes against `max_bytes`).
fn read_entry(
    e: &Entry,
    deadline: Instant,
    asked: &AtomicU64,
    opts: &ReplayOptions,
    sizes: &mut RequestSizes,
    gates: &mut Gates,
    st: &mut ReplayStats,
) -> bool {
    let max_bytes = opts.max_bytes;
    let f = match check_entry(e) {
        Ok(f) => f,
        Err(s) => {
            st.files_skipped += 1;
            match s {
                Skip::Missing => st.skipped_missing += 1,
                Skip::NotRegular => st.skipped_not_regular += 1,
                Skip::Changed => st.skipped_changed += 1,
            }
            return true;
        }
    };
    // The kernel cuts one readahead(2) call to the larger of the device's largest request
    // and the file's readahead window, silently: ask in pieces of exactly that.
    let dev = f.metadata().ok().map(|md| md.dev());
    let mut chunk = dev.map_or(system::DEFAULT_REQUEST, |d| sizes.of(&opts.sys, d));
    if let Some(y) = &opts.yield_to_others {
        chunk = chunk.min(y.max_piece.max(4096));
    }
    let mut gate = match (&opts.yield_to_others, dev) {
        (Some(y), Some(d)) => gates.of(opts, y, d),
        _ => None,
    };
    st.request_bytes = st.request_bytes.max(chunk);
    st.requests_unmerged += e
        .ranges
        .iter()
        .map(|r| plan::pieces(r, OLD_CHUNK))
        .sum::<u64>();
    for m in plan::merge_gaps(&e.ranges, opts.merge_gap) {
        let r = m.range;
        if Instant::now() >= deadline {
            st.timed_out = true;
            st.files_read += 1;
            return false;
        }
        let mut off = r.offset;
        while off < r.end() {
            let len = chunk.min(r.end() - off);
            // Checked per piece, not per range: one range can be gigabytes.
            if Instant::now() >= deadline {
                st.timed_out = true;
                st.files_read += 1;
                return false;
            }
            if let Some(g) = gate.as_deref_mut() {
                if !g.wait_turn(deadline) {
                    st.timed_out = true;
                    st.files_read += 1;
                    return false;
                }
            }
            if max_bytes > 0
                && asked.fetch_add(len, Ordering::Relaxed).saturating_add(len) > max_bytes
            {
                st.capped = true;
                st.files_read += 1;
                return false;
            }
            st.requests += 1;
            if sys::readahead(&f, off, len).is_err() {
                st.files_skipped += 1;
                st.skipped_error += 1;
                return true;
            }
            off += len;
        }
        st.ranges += m.parts;
        st.bytes_requested += m.used;
        st.gap_bytes += r.len - m.used;
    }
    st.files_read += 1;
    true
}

/// Reads the pack's ranges into the page cache, in pack order, in this process: one thread
/// on a rotating device or for a relocated pack (its reads lie in pack order on the device:
/// threads taking the next entries would read it from several places at once, and every
/// request would start away from the last), `opts.threads` otherwise (each taking the next
/// entry in order).
/// Stops at the time limit. Never fails: what cannot be read is skipped and counted.
pub fn replay(p: &Pack, opts: &ReplayOptions) -> ReplayStats {
    let start = Instant::now();
    let deadline = start + opts.time_limit;
    let threads = if p.header.rotational || p.header.relocated || opts.yield_to_others.is_some() {
        1
    } else {
        opts.threads.clamp(1, 64)
    };
    let next = AtomicUsize::new(0);
    let asked = AtomicU64::new(0);
    let mut total = ReplayStats::default();
    if opts.reads_metadata(p) && opts.yield_to_others.is_none() {
        // First and on a thread of its own, for the idle I/O class as the files get.
        let pre = std::thread::scope(|s| {
            s.spawn(|| {
                if opts.idle_io {
                    let _ = ::sys::ioprio_idle();
                }
                preread_metadata(p, opts)
            })
            .join()
            .unwrap_or_default()
        });
        total.metadata_bytes = pre.bytes;
        total.metadata_requests = pre.requests;
        total.metadata_read_bytes = pre.read_bytes;
    }
    let work = || {
        if opts.idle_io {
            let _ = ::sys::ioprio_idle();
        }
        let mut st = ReplayStats::default();
        let mut sizes = RequestSizes::default();
        let mut gates = Gates::default();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(e) = p.entries.get(i) else { break };
            if Instant::now() >= deadline {
                st.timed_out = true;
                break;
            }
            if !read_entry(e, deadline, &asked, opts, &mut sizes, &mut gates, &mut st) {
                break;
            }
        }
        gates.add_to(&mut st);
        st
    };
    if threads == 1 {
        // The calling thread's own I/O class is changed, so run on a scoped thread.
        std::thread::scope(|s| total.add(&s.spawn(work).join().unwrap_or_default()));
    } else {
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
            for h in hs {
                total.add(&h.join().unwrap_or_default());
            }
        });
    }
    let handled = total.files_read + total.files_skipped;
    total.files_not_reached = (p.entries.len() as u64).saturating_sub(handled);
    total.threads = threads as u64;
    total.duration_ns = start.elapsed().as_nanos() as u64;
    if opts.wait_settled {
        let (settled, resident) = wait_settled(p, total.bytes_requested, start, deadline);
        total.settled_ns = settled;
        total.resident = resident;
    }
    total
}

/// The metadata opening the pack's files needs ([`ReplayOptions::metadata`]), and where to
/// read it: the block device of `opts.root`'s filesystem, the ranges (the pack's metadata,
/// or, for a pack without it (before format 1.2), the inode-table blocks of its entries on
/// that device) and the device's request size. `None` when the device has no node under
/// `opts.dev`, when an older pack's device holds no ext2/3/4 filesystem, or when there is
/// nothing to read (a pack's list is for the root filesystem the pack was checked against
/// when loaded).
pub fn metadata_source(p: &Pack, opts: &ReplayOptions) -> Option<(File, Vec<pack::Range>, u64)> {
    let dev = std::fs::metadata(&opts.root).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let f = system::open_block_device(&opts.sys, &opts.dev, major, minor)?;
    let ranges = if p.header.metadata.is_empty() {
        let g = inode_table::Geometry::read(&f).ok()?;
        metadata::from_entries(&p.entries, dev, &g)
    } else {
        p.header.metadata.clone()
    };
    let request = system::device_request_bytes(&opts.sys, major, minor);
    (!ranges.is_empty()).then_some((f, ranges, request))
}

/// Reads the metadata of [`metadata_source`] ([`metadata::preread`]); nothing when there is
/// none: the files' own opens then read their metadata as without it.
pub fn preread_metadata(p: &Pack, opts: &ReplayOptions) -> metadata::Preread {
    match metadata_source(p, opts) {
        Some((f, ranges, request)) => metadata::preread(&f, &ranges, opts.merge_gap, request).0,
        None => metadata::Preread::default(),
    }
}

/// Polls the page cache every 50 ms until `asked` bytes of the pack are resident, the
/// resident bytes stop growing for half a second, or the deadline; returns (ns since
/// `start`, resident bytes).
fn wait_settled(p: &Pack, asked: u64, start: Instant, deadline: Instant) -> (u64, u64) {
    let mut last = 0;
    let mut last_growth = Instant::now();
    loop {
        let now = Instant::now();
        let resident = hit_rate(p).bytes_resident;
        if resident > last {
            last = resident;
            last_growth = now;
        }
        if resident >= asked
            || now >= deadline
            || now.duration_since(last_growth) >= Duration::from_millis(500)
        {
            // Stopped growing: it settled when it last grew.
            let at = if resident >= asked { now } else { last_growth };
            return (at.duration_since(start).as_nanos() as u64, resident);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// When a pack is learned again (see [`relearn_reason`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RelearnLimits {
    /// Older than this (seconds since it was made).
    pub max_age_s: u64,
    /// More than this share of the entries skipped as changed or gone.
    pub stale_share: f64,
    /// The boot read from disk more than this share of the pack's bytes beyond what the
    /// replay asked for (and more than [`MISSED_FLOOR`]).
    pub missed_share: f64,
}

/// Reads beyond the pack below this many bytes never make a relearn: metadata, logs and a
/// login shell read a few MiB on any boot.
pub const MISSED_FLOOR: u64 = 16 << 20;

impl Default for RelearnLimits {
    fn default() -> RelearnLimits {
        RelearnLimits {
            max_age_s: 30 * 24 * 3600,
            stale_share: 0.10,
            missed_share: 0.50,
        }
    }
}

/// What a replay boot saw, for [`relearn_reason`].
#[derive(Debug, Clone, Default)]
pub struct ReplayOutcome<'a> {
    /// The replay's statistics, when the child reported.
    pub stats: Option<&'a ReplayStats>,
    /// Bytes read from the root disk from the replay's start to boot done, minus what the
    /// replay asked for: what the boot read that the pack lacked (an over-estimate by the
    /// filesystem metadata read). `None`: not measured.
    pub missed_bytes: Option<u64>,
    /// The kernel release of this boot.
    pub kernel_release: &'a str,
    /// Now, seconds since the Unix epoch.
    pub now_unix_s: u64,
}

/// Why a pack should be learned again, if it should: `old` (the system changes under it;
/// Mandriva relearned monthly), `kernel` (the release changed: other modules and firmware),
/// `stale` (too many entries skipped as changed or gone in this replay), `missed` (the boot
/// read much that the pack lacks). `None`: keep it.
pub fn relearn_reason(
    p: &Pack,
    seen: &ReplayOutcome,
    limits: &RelearnLimits,
) -> Option<&'static str> {
    let header = &p.header;
    if seen.now_unix_s.saturating_sub(header.created_unix_s) > limits.max_age_s {
        return Some("old");
    }
    if header.kernel_release != seen.kernel_release {
        return Some("kernel");
    }
    if let Some(st) = seen.stats {
        let stale = st.skipped_changed + st.skipped_missing + st.skipped_not_regular;
        let entries = p.entries.len() as f64;
        if entries > 0.0 && stale as f64 > limits.stale_share * entries {
            return Some("stale");
        }
    }
    if let Some(missed) = seen.missed_bytes {
        if missed > MISSED_FLOOR && missed as f64 > limits.missed_share * p.bytes() as f64 {
            return Some("missed");
        }
    }
    None
}

/// A replay running in a child process.
#[derive(Debug)]
pub struct ReplayChild {
    pid: i32,
    report: File,
}

impl ReplayChild {
    /// The child's process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Waits for the child to end and returns its statistics (`None` when it died without
    /// reporting). Waits at most `limit` for its report (the replay stops itself at its
    /// time limit; a child stuck in the kernel on a dead disk must not hold the recorder):
    /// past it the child is killed and not waited for.
    pub fn wait(mut self, limit: Duration) -> Option<ReplayStats> {
        let deadline = Instant::now() + limit;
        let mut line = Vec::new();
        let mut buf = [0u8; 512];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ms = left.as_millis().min(i32::MAX as u128) as i32;
            match ::sys::poll_readable(self.report.as_raw_fd(), ms) {
                Ok(true) => match self.report.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) if line.len() < 4096 => line.extend_from_slice(&buf[..n]),
                    Ok(_) => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                },
                Ok(false) if left.is_zero() => {
                    let _ = ::sys::kill(self.pid, libc::SIGKILL);
                    // Not reaped: a process in uninterruptible sleep would block waitpid.
                    return None;
                }
                Ok(false) => {}
                Err(_) => break,
            }
        }
        let _ = ::sys::waitpid(self.pid);
        let text = String::from_utf8_lossy(&line);
        // An empty line would parse as all zeros: the child said nothing.
        (!text.trim().is_empty())
            .then(|| ReplayStats::from_line(text.trim()))
            .flatten()
    }
}

/// Forks a child that replays `p` (see [`replay`]) and reports its statistics through a
/// pipe, so the caller (the boot path, before it execs init) goes on at once. The caller
/// should be single-threaded at this point, as the boot path is.
pub fn spawn_child(p: &Pack, opts: &ReplayOptions) -> io::Result<ReplayChild> {
    spawn_child_with(|| replay(p, opts))
}

/// [`spawn_child`] with the child's work given: `work` runs in the child, whose statistics
/// line goes to the pipe. The child never returns into the caller's frame: a panic in
/// `work` is caught there and the child exits (without it, the panic would unwind into
/// PID 1's code in the child, which would go on to exec init a second time).
pub fn spawn_child_with(work: impl FnOnce() -> ReplayStats) -> io::Result<ReplayChild> {
    let (r, mut w) = ::sys::pipe()?;
    match ::sys::fork()? {
        0 => {
            drop(r);
            let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let st = work();
                let _ = writeln!(w, "{}", st.to_line());
            }));
            ::sys::exit_now(if done.is_ok() { 0 } else { 1 });
        }
        pid => {
            drop(w);
            Ok(ReplayChild { pid, report: r })
        }
    }
}

/// How much of a replayed pack was in the page cache when measured (at boot done): the
/// pages replay read that are still resident, over all it read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HitRate {
    /// Bytes of the ranges of entries that still match their file.
    pub bytes_replayed: u64,
    /// Of those, bytes whose pages are resident.
    pub bytes_resident: u64,
    /// Entries measured.
    pub files: u64,
}

impl HitRate {
    /// Resident over replayed, 0 when nothing was replayed.
    pub fn ratio(&self) -> f64 {
        if self.bytes_replayed == 0 {
            0.0
        } else {
            self.bytes_resident as f64 / self.bytes_replayed as f64
        }
    }
}

/// Measures the [`HitRate`] of `p` with mincore of each entry's ranges; entries that no
/// longer match their file are left out.
pub fn hit_rate(p: &Pack) -> HitRate {
    let page = ::sys::page_size();
    let mut h = HitRate::default();
    for e in &p.entries {
        let Ok(f) = check_entry(e) else { continue };
        let Ok(resident) = sys::mincore(&f, e.size) else {
            continue;
        };
        h.files += 1;
        for r in &e.ranges {
            h.bytes_replayed += r.len;
            h.bytes_resident += resident_bytes(&resident, page, r.offset, r.end());
        }
    }
    h
}

/// Bytes of `[start, end)` whose pages are marked resident.
pub(crate) fn resident_bytes(resident: &[bool], page: u64, start: u64, end: u64) -> u64 {
    let mut n = 0;
    let mut pos = start;
    while pos < end {
        let next = ((pos / page) + 1) * page;
        let upto = next.min(end);
        if resident
            .get((pos / page) as usize)
            .copied()
            .unwrap_or(false)
        {
            n += upto - pos;
        }
        pos = upto;
    }
    n
}
