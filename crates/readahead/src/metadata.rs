//! The filesystem metadata that opening a pack's files needs, read before the files: their
//! inodes' blocks in ext4's inode tables, and the blocks and inodes of the directories on
//! their paths. Each is a small read the boot otherwise makes on the spot, synchronously,
//! wherever on the device it lies: on the test bed's laptop disk a boot without readahead
//! spent 1.2 s of drive time on 128 inode-table reads and 1.7 s on 226 directory reads
//! (docs/readahead.md, "Metadata").
//!
//! ext4 keeps both in the block device's page cache (its buffer heads), not in the files'
//! own: a read of the device there is what ext4 finds, and with the buffer up to date it
//! reads nothing, neither the block nor the 128 KiB window it would read around an inode.
//!
//! [`learn`] finds the ranges when the pack is built (they go in the pack, format 1.2);
//! [`from_entries`] works the inode-table blocks out from an older pack's entries;
//! [`preread`] reads them from the device; a [`Watch`] reads them again when something
//! drops them from the cache during the boot.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::inode_table::Geometry;
use crate::pack::{Entry, Range};

/// A directory larger than this has only its inode read early: a lookup reads a few of a
/// large (hashed) directory's blocks, and reading all of them would cost more than it saves.
pub const MAX_DIR_BYTES: u64 = 256 << 10;

/// The most metadata a pack lists (and replay reads): the boot's own metadata is a few MB.
pub const MAX_BYTES: u64 = 32 << 20;

/// The metadata ranges of device `dev` (an ext2/3/4 filesystem of geometry `g`) for the
/// files `files` (path, device, inode): the inode-table blocks of every file on `dev` and
/// of every directory on their paths, and those directories' blocks (FIEMAP), sorted,
/// overlapping and adjacent ranges joined, at most [`MAX_BYTES`] (the rest dropped from the
/// end). Directories that cannot be opened, or lie on another device, are left out.
pub fn learn<'a>(
    files: impl IntoIterator<Item = (&'a Path, u64, u64)>,
    dev: u64,
    g: &Geometry,
) -> Vec<Range> {
    let mut inos = Vec::new();
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    for (path, file_dev, ino) in files {
        if file_dev != dev {
            continue;
        }
        inos.push(ino);
        for a in path.ancestors().skip(1) {
            // Ancestors are shared: once one is known, so are all above it.
            if !dirs.insert(a.to_path_buf()) {
                break;
            }
        }
    }
    let mut ranges = Vec::new();
    for d in &dirs {
        let Some(f) = open_dir(d) else { continue };
        let Ok(md) = f.metadata() else { continue };
        if md.dev() != dev {
            continue;
        }
        inos.push(md.ino());
        if md.size() > MAX_DIR_BYTES {
            continue;
        }
        ranges.extend(dir_blocks(&f, md.size(), g.block_size));
    }
    ranges.extend(g.inode_blocks(inos));
    cap(join(ranges), MAX_BYTES)
}

/// The inode-table blocks of `entries` on device `dev` (what a pack before format 1.2,
/// which lists no metadata, lets replay read first).
pub fn from_entries(entries: &[Entry], dev: u64, g: &Geometry) -> Vec<Range> {
    g.inode_blocks(entries.iter().filter(|e| e.dev == dev).map(|e| e.ino))
}

/// A directory of a learned path, opened without following a symlink anywhere in it.
fn open_dir(path: &Path) -> Option<File> {
    ::sys::open_nofollow(path, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NONBLOCK).ok()
}

/// A directory's blocks on the device, whole blocks.
fn dir_blocks(f: &File, size: u64, block: u64) -> Vec<Range> {
    const UNKNOWN_OR_INLINE: u32 = 0x2 | 0x200;
    let Ok(extents) = crate::sys::fiemap(f, 0, size.max(1)) else {
        return Vec::new();
    };
    extents
        .iter()
        .filter(|e| e.flags & UNKNOWN_OR_INLINE == 0 && e.length > 0)
        .map(|e| {
            let start = e.physical / block * block;
            let end = (e.physical + e.length).div_ceil(block) * block;
            Range {
                offset: start,
                len: end - start,
            }
        })
        .collect()
}

/// `ranges` sorted, overlapping and adjacent ones joined.
pub fn join(mut ranges: Vec<Range>) -> Vec<Range> {
    ranges.sort_by_key(|r| r.offset);
    let mut out: Vec<Range> = Vec::with_capacity(ranges.len());
    for r in ranges.into_iter().filter(|r| r.len > 0) {
        match out.last_mut() {
            Some(last) if r.offset <= last.end() => {
                last.len = last.len.max(r.end() - last.offset);
            }
            _ => out.push(r),
        }
    }
    out
}

/// The first `max` bytes of `ranges` (in order); the range crossing it is cut.
fn cap(ranges: Vec<Range>, max: u64) -> Vec<Range> {
    let mut left = max;
    let mut out = Vec::new();
    for mut r in ranges {
        if left == 0 {
            break;
        }
        r.len = r.len.min(left);
        left -= r.len;
        out.push(r);
    }
    out
}

/// What [`preread`] asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Preread {
    /// Bytes of the ranges.
    pub bytes: u64,
    /// Reads asked of the kernel (ranges closer than the gap joined, in request-sized
    /// pieces).
    pub requests: u64,
    /// Bytes asked, the gaps between joined ranges included.
    pub read_bytes: u64,
}

/// Starts reading `ranges` (ascending) of `dev`, the filesystem's block device, into its
/// page cache: ranges less than `gap` bytes apart read as one run, each run asked in pieces
/// of `request` bytes (posix_fadvise `WILLNEED`: readahead(2) is refused on a block device
/// by some kernels), at most [`MAX_BYTES`] of them. Returns once the reads are queued, with
/// what was asked and the error that stopped it, if one did.
pub fn preread(
    dev: &File,
    ranges: &[Range],
    gap: u64,
    request: u64,
) -> (Preread, Result<(), std::io::Error>) {
    let ranges = cap(ranges.to_vec(), MAX_BYTES);
    let mut done = Preread {
        bytes: ranges.iter().map(|r| r.len).sum(),
        ..Preread::default()
    };
    let request = request.max(4096);
    for m in crate::plan::merge_gaps(&ranges, gap) {
        let r = m.range;
        let mut off = r.offset;
        while off < r.end() {
            let len = request.min(r.end() - off);
            if let Err(e) = crate::sys::fadvise_willneed(dev, off, len) {
                return (done, Err(e));
            }
            done.requests += 1;
            done.read_bytes += len;
            off += len;
        }
    }
    (done, Ok(()))
}

/// Watches the metadata replay read first and reads it again once it has left the page
/// cache. Remounting a filesystem read-only drops its block device's clean cached pages
/// (Linux `fs/super.c`, `reconfigure_super`: "invalidate it to give a best effort at
/// coherency"), and Debian's `checkroot.sh` remounts a read-write root read-only for its
/// fsck: on the test bed every directory block the boot had read by then was read a second
/// time after it (docs/readahead.md, "Metadata").
///
/// What it looks at: pages of the ranges that mincore says are cached. Only pages read
/// through the page cache (as the pre-read reads them) say so: a block ext4 read through its
/// buffer heads alone has an up-to-date buffer on a page mincore counts as absent. So the
/// watch first waits until enough of the ranges' pages are cached (the pre-read landed),
/// keeps those as its sample, and reads the ranges again when most of the sample is gone.
#[derive(Debug)]
pub struct Watch {
    dev: File,
    map: crate::sys::Mapping,
    ranges: Vec<Range>,
    /// Pages of the ranges it may sample, spread over them.
    candidates: Vec<u64>,
    /// The cached candidates it watches; empty until armed.
    sample: Vec<u64>,
    /// Times it read the ranges again.
    pub rereads: u32,
}

/// Candidate pages per watch, and how many of them are watched once cached.
const CANDIDATES: usize = 256;
const SAMPLE: usize = 32;
/// Cached candidates needed to arm: fewer says too little about a drop.
const MIN_SAMPLE: usize = 8;
/// At most this many reads again per boot (something that keeps dropping the cache is not
/// helped by reading into it).
pub const MAX_REREADS: u32 = 3;

impl Watch {
    /// A watch of `ranges` (ascending) of `dev`, the block device they were read from;
    /// `None` without ranges or when the device cannot be mapped.
    pub fn new(dev: File, ranges: Vec<Range>) -> Option<Watch> {
        let page = ::sys::page_size();
        let pages: Vec<u64> = ranges
            .iter()
            .flat_map(|r| (r.offset / page..r.end().div_ceil(page)).map(move |p| p * page))
            .collect();
        let step = pages.len().div_ceil(CANDIDATES).max(1);
        let candidates: Vec<u64> = pages.iter().copied().step_by(step).collect();
        let end = ranges.last()?.end();
        let map = crate::sys::Mapping::new(&dev, end).ok()?;
        Some(Watch {
            dev,
            map,
            ranges,
            candidates,
            sample: Vec::new(),
            rereads: 0,
        })
    }

    fn cached(&self, pages: &[u64]) -> Vec<u64> {
        pages
            .iter()
            .copied()
            .filter(|&o| self.map.resident(o) == Some(true))
            .collect()
    }

    /// Whether it watches a sample of cached pages (the pre-read, or the last read again,
    /// landed).
    pub fn armed(&self) -> bool {
        !self.sample.is_empty()
    }

    /// The share of the watched sample in the page cache now (0 when not armed).
    pub fn sample_share(&self) -> f64 {
        if self.sample.is_empty() {
            return 0.0;
        }
        self.cached(&self.sample).len() as f64 / self.sample.len() as f64
    }

    /// Looks once. Not armed: arms when at least `MIN_SAMPLE` (8) candidates (or all, when
    /// fewer) are cached, watching up to `SAMPLE` (32) of them. Armed: when at most a quarter
    /// of the sample is left, reads the ranges again as [`preread`] does, disarms, and
    /// returns what it read with the share that was left. At most [`MAX_REREADS`] times.
    pub fn check(&mut self, gap: u64, request: u64) -> Option<(Preread, f64)> {
        if self.sample.is_empty() {
            let cached = self.cached(&self.candidates);
            if cached.len() >= MIN_SAMPLE.min(self.candidates.len()) && !cached.is_empty() {
                let step = cached.len().div_ceil(SAMPLE).max(1);
                self.sample = cached.into_iter().step_by(step).collect();
            }
            return None;
        }
        let share = self.sample_share();
        if share > 0.25 || self.rereads >= MAX_REREADS {
            return None;
        }
        self.sample.clear();
        self.rereads += 1;
        Some((preread(&self.dev, &self.ranges, gap, request).0, share))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(offset: u64, len: u64) -> Range {
        Range { offset, len }
    }

    #[test]
    fn ranges_are_sorted_and_joined() {
        let got = join(vec![
            r(8192, 4096),
            r(0, 4096),
            r(4096, 4096),
            r(100, 50),
            r(20_000, 0),
        ]);
        assert_eq!(got, [r(0, 12288)]);
        let got = join(vec![r(0, 4096), r(8192, 4096), r(8192, 100)]);
        assert_eq!(got, [r(0, 4096), r(8192, 4096)]);
    }

    #[test]
    fn the_cap_cuts_from_the_end() {
        assert_eq!(cap(vec![r(0, 10), r(20, 10)], 15), [r(0, 10), r(20, 5)]);
        assert_eq!(cap(vec![r(0, 10)], 0), []);
    }
}
