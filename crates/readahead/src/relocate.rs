//! Relocation: moves the blocks of a pack's files into one contiguous region of their ext4
//! filesystem, in the order the learning boot first opened them, so that replay (of the pack
//! rewritten in that order) reads one sequential run instead of seeking between scattered
//! pieces, and the boot finds what it needs next right behind what replay has read. Not on
//! the boot path: `bootprint readahead relocate` runs it (a user, or later an idle hook).
//!
//! How (docs/readahead.md, "Relocation"): one donor file, opened with O_TMPFILE (it has no
//! name, so a relocation killed at any point leaves nothing behind: the kernel frees it),
//! is given room with fallocate(2), and the region is the longest runs of what ext4 gave;
//! then, file by file in first-access order, ext4's EXT4_IOC_MOVE_EXT swaps the file's
//! blocks with pieces of the region: what replay reads of each file to the region's hot
//! part (every file's in that order, so replay reads one stream), the rest of a file moved
//! whole to its cold part. The ioctl moves data, never changes it, and swaps each piece in
//! one journalled step, so every file is whole at every moment. The old blocks go with the
//! donor when it is closed. A running program cannot be opened for writing, which the
//! ioctl needs: a moved copy of it takes its name instead (renameat2's exchange), as a
//! package manager replaces a running program (`replace_running`).
//!
//! Rules: ext4 only (statfs magic, and the mount's type); never read-only, never when less
//! than [`MIN_FREE_SHARE`] of the filesystem would stay free; only on rotating disks and
//! SD/MMC cards unless forced; at idle I/O priority; a file that changed since the pack was
//! learned (inode, size, mtime) or during the run is skipped.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::pack::{Entry, Pack, Range};
use crate::replay::{self, Skip};
use crate::{plan, sys, system};

/// Relocation refuses a filesystem on which less than this share of its size would stay
/// free with the region allocated: ext4's allocator finds long free runs only with room to
/// spare, and a relocation must not be what fills a disk.
pub const MIN_FREE_SHARE: f64 = 0.10;

/// Files up to this size are moved whole (their layout only improves): what replay reads of
/// them to the region's hot part, the rest to its cold part. A larger file moves only the
/// pack's ranges of it (merged as replay merges them), so a big file the boot reads little
/// of does not fill the region.
pub const WHOLE_FILE_MAX: u64 = 16 << 20;

/// Relocation asks ext4 for up to this many times the region's bytes and keeps the longest
/// runs of what it gets: asked for just the region, ext4's allocator hands out the free
/// space it meets first, which on an aged filesystem is small holes (a test-bed image gave
/// a 91 MB region in 1,367 pieces while its longest free runs were 40 and 22 MB). The rest
/// is given back at once, and at least [`MIN_FREE_SHARE`] stays free throughout.
pub const REGION_CHOICE: u64 = 4;

/// How to relocate.
#[derive(Debug, Clone)]
pub struct Options {
    /// Say what would be moved, move nothing.
    pub dry_run: bool,
    /// Relocate on devices that neither rotate nor are SD/MMC cards.
    pub force_media: bool,
    /// What the device is, where the configuration says so (`[readahead] media`, for
    /// drivers that say otherwise); `None`: as [`media_of`] finds it.
    pub media: Option<Media>,
    /// `/sys` (the device's `queue/rotational`, request size and name).
    pub sys: PathBuf,
    /// `/proc/self/mountinfo` (the filesystem's type and mount point).
    pub mountinfo: PathBuf,
    /// Replay's merge gap ([`plan::MERGE_GAP`]), for the request counts.
    pub merge_gap: u64,
    /// How many times the region to allocate and choose its runs from
    /// ([`REGION_CHOICE`]; 1: take the region as the allocator gives it).
    pub region_choice: u64,
    /// Where a running program's copy is noted while it has a name of its own
    /// ([`pending_path`] of the pack): a run killed then leaves that name, and the next run
    /// (or the next boot) removes it ([`clean_leftover`]). `None`: not noted.
    pub pending: Option<PathBuf>,
    /// Called between the steps of replacing a running program (tests drive races there).
    pub hook: Option<Hook>,
}

/// A point between the steps of replacing a running program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The copy is made, moved and given the original's metadata; it has no name yet.
    Copied,
    /// The copy has its temporary name beside the original ([`copy_name`]).
    Linked,
    /// The names are exchanged: the program's name holds the copy.
    Exchanged,
}

/// A function called at each [`Step`] with the program's path, for tests that change the
/// file or its directory between two steps.
#[derive(Clone)]
pub struct Hook(pub std::sync::Arc<HookFn>);

/// The function behind a [`Hook`].
pub type HookFn = dyn Fn(Step, &Path) + Send + Sync;

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hook")
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            dry_run: false,
            force_media: false,
            media: None,
            sys: "/sys".into(),
            mountinfo: "/proc/self/mountinfo".into(),
            merge_gap: plan::MERGE_GAP,
            region_choice: REGION_CHOICE,
            pending: None,
            hook: None,
        }
    }
}

/// The kind of device a filesystem lives on, as far as relocation cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Media {
    /// `queue/rotational` is 1.
    Rotating,
    /// An `mmcblk` device: an SD card or eMMC (they report 0, yet count requests).
    SdMmc,
    /// Anything else (SSD, NVMe, virtual disks that say they do not rotate).
    SolidState,
    /// No sysfs entry for the device.
    Unknown,
}

impl Media {
    /// The kind `[readahead] media` names (`rotating`, `card`, `solid-state`); `None` for
    /// `auto` (the driver says) or anything else.
    pub fn from_setting(word: &str) -> Option<Media> {
        match word {
            "rotating" => Some(Media::Rotating),
            "card" => Some(Media::SdMmc),
            "solid-state" => Some(Media::SolidState),
            _ => None,
        }
    }

    /// Whether it is learned as a rotating device (physical order, one replay thread, and
    /// the metadata read by default if the boot also waited on it); `None` where the device
    /// must be asked.
    pub fn setting_rotates(word: &str) -> Option<bool> {
        Media::from_setting(word).map(|m| m == Media::Rotating)
    }

    /// A word for the text view.
    pub fn name(self) -> &'static str {
        match self {
            Media::Rotating => "rotating",
            Media::SdMmc => "SD/MMC",
            Media::SolidState => "solid state",
            Media::Unknown => "unknown",
        }
    }
}

/// Why relocation refuses to run at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The pack has no file that can be relocated.
    NothingToMove,
    /// The files are on a filesystem that is not ext4.
    NotExt4 {
        /// A file of the pack on it.
        file: PathBuf,
        /// Its type (from mountinfo), or its statfs magic in hex.
        fs: String,
    },
    /// The filesystem is mounted read-only.
    ReadOnly {
        /// Its mount point.
        mount: PathBuf,
    },
    /// Too little free space.
    NearlyFull {
        /// Its mount point.
        mount: PathBuf,
        /// Bytes free.
        free: u64,
        /// Bytes the region needs.
        need: u64,
        /// The filesystem's size.
        size: u64,
    },
    /// The region ext4 gave came in so many pieces (its free space is fragmented) that
    /// replay would need as many device requests after the move as before: nothing moved.
    Fragmented {
        /// Its mount point.
        mount: PathBuf,
        /// Physical runs the region came in.
        runs: u64,
        /// Requests replay needs as the files lie now.
        before: u64,
        /// Requests it would need with the files in this region.
        after: u64,
    },
    /// The device is solid state (or unknown) and `force_media` is off.
    Media {
        /// The device's name (`sda`, `vda`, `loop3`...) or number.
        device: String,
        /// What it is.
        media: Media,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NothingToMove => write!(
                f,
                "no file of the pack can be relocated (all changed, gone or empty)"
            ),
            Refusal::NotExt4 { file, fs } => {
                write!(
                    f,
                    "{} is on {fs}, not ext4: relocation needs ext4's move-extent ioctl \
                     (EXT4_IOC_MOVE_EXT)",
                    file.display()
                )?;
                // Where a filesystem has a call that comes near, say why it is not used.
                match fs.as_str() {
                    "btrfs" => f.write_str(
                        "; btrfs has none that places a file's blocks: its defragment \
                         (BTRFS_IOC_DEFRAG_RANGE) rewrites each file wherever its allocator \
                         chooses, in no order across files, and unshares snapshot and \
                         reflink extents",
                    ),
                    "xfs" => f.write_str(
                        "; XFS's XFS_IOC_SWAPEXT swaps whole files only, and its range \
                         exchange (XFS_IOC_EXCHANGE_RANGE, Linux 6.10; checked against \
                         changes with XFS_IOC_COMMIT_RANGE, 6.12) is not used by bootprint \
                         yet",
                    ),
                    _ => Ok(()),
                }?;
                f.write_str(". Readahead's replay works on it as on ext4")
            }
            Refusal::ReadOnly { mount } => write!(
                f,
                "the filesystem at {} is mounted read-only: relocation writes",
                mount.display()
            ),
            Refusal::NearlyFull {
                mount,
                free,
                need,
                size,
            } => write!(
                f,
                "the filesystem at {} is nearly full: {free} bytes free, the region needs \
                 {need}, and at least {:.0} % of its {size} bytes must stay free",
                mount.display(),
                MIN_FREE_SHARE * 100.0
            ),
            Refusal::Fragmented {
                mount,
                runs,
                before,
                after,
            } => write!(
                f,
                "the free space of the filesystem at {} is fragmented: the region came in \
                 {runs} pieces, and replay would need {after} device requests with the files \
                 moved there against {before} as they lie now; nothing was moved (free space \
                 in long runs first: e4defrag, or fewer files on the filesystem)",
                mount.display()
            ),
            Refusal::Media { device, media } => write!(
                f,
                "device {device} is {}: relocation only helps where seeks or requests are \
                 dear (rotating disks, SD/MMC cards); --force-media to relocate anyway",
                media.name()
            ),
        }
    }
}

impl std::error::Error for Refusal {}

/// What became of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Would be moved (a dry run).
    Planned,
    /// Moved: its extent count now.
    Moved {
        /// FIEMAP extents of the file after the move.
        extents_after: u64,
    },
    /// A running program (which cannot be opened for writing): a copy of it was moved and
    /// took its name; the pack's entry must take the copy's inode number.
    Replaced {
        /// FIEMAP extents of the copy.
        extents_after: u64,
        /// The copy's inode number.
        ino: u64,
    },
    /// Not moved, and why.
    Skipped(String),
}

/// One file of the pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// Its path.
    pub path: PathBuf,
    /// Bytes it moves into the region (block-rounded).
    pub bytes: u64,
    /// FIEMAP extents of the whole file before (0 when not measured).
    pub extents_before: u64,
    /// What happened.
    pub outcome: Outcome,
}

/// What a relocation did or would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// A dry run.
    pub dry_run: bool,
    /// The filesystem's mount point.
    pub mount: PathBuf,
    /// Its device's name.
    pub device: String,
    /// Its kind.
    pub media: Media,
    /// The device's request size (replay's pieces).
    pub request_bytes: u64,
    /// Every entry of the pack, in first-access order.
    pub files: Vec<FileReport>,
    /// Bytes of the region (the sum of the files' `bytes`).
    pub region_bytes: u64,
    /// Device requests replay needs for the pack's ranges as the files lie now.
    pub requests_before: u64,
    /// ... after relocation: expected (a dry run, or before moving) or measured (after).
    pub requests_after: u64,
    /// The physical runs the region came in (0: not allocated, a dry run).
    pub region_runs: u64,
    /// Bytes allocated to choose the region from (0: a dry run).
    pub allocated_bytes: u64,
    /// The physical runs those came in.
    pub allocated_runs: u64,
}

/// A piece of the region: `len` bytes at byte `donor` of the donor file, lying at device
/// byte `physical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Offset in the donor file.
    pub donor: u64,
    /// Offset on the device.
    pub physical: u64,
    /// Length in bytes.
    pub len: u64,
}

/// A file planned for the move.
struct Planned {
    idx: usize,
    file: File,
    /// The file's ranges to move (block-aligned, within the file's blocks), each with its
    /// byte offset in the region: the ranges replay reads first, in the region's hot part,
    /// then the rest of a file moved whole, in its cold part.
    moves: Vec<(Range, u64)>,
    /// The pack's ranges merged as replay reads them.
    reads: Vec<Range>,
}

/// Relocates the files of `p` (see the module's rules) in first-access order
/// ([`Pack::in_access_order`]: a rotating disk's pack is in the order its files lay before,
/// which is not the order the boot wants them in). `progress` is called once per entry as
/// it is done, in that order, and the report lists the files in it. A caller that moved
/// files rewrites the pack in that order, for replay to read the region as one stream.
/// Err: a [`Refusal`] (nothing was moved).
pub fn relocate(
    p: &Pack,
    opts: &Options,
    progress: &mut dyn FnMut(&FileReport),
) -> Result<Report, Refusal> {
    // `pack_place[i]`: where entry `i` of the access-ordered pack is in `p`, whose order
    // replay reads today (the requests before are counted in it).
    let pack_place = p.access_order();
    let p = &p.in_access_order();
    let (mut files, mut planned, dev) = check_files(p);
    let (Some(dev), Some(first)) = (dev, planned.first()) else {
        return Err(Refusal::NothingToMove);
    };
    let target = check_target(&p.entries[first.idx].path, dev, opts)?;
    let page = ::sys::page_size();
    let layout = lay_out(
        p,
        &mut planned,
        &mut files,
        &pack_place,
        opts.merge_gap,
        page,
    );
    let need = layout.region;
    let vfs = &target.vfs;
    if (vfs.avail_bytes.saturating_sub(need) as f64) < MIN_FREE_SHARE * vfs.total_bytes as f64 {
        return Err(Refusal::NearlyFull {
            mount: target.mount_point,
            free: vfs.avail_bytes,
            need,
            size: vfs.total_bytes,
        });
    }
    let request = target.request;
    let mut report = planned_report(opts.dry_run, &target, &layout, page);
    if opts.dry_run {
        return Ok(report_all(report, files, progress));
    }

    let _ = ::sys::ioprio_idle();
    if let Some(p) = &opts.pending {
        clean_leftover(p);
    }
    let donor = match allocate_donor(p, &planned, &target, need, opts.region_choice, page) {
        Ok(d) => d,
        Err(e) => {
            // No region, nothing moved: every file says why.
            for pl in &planned {
                files[pl.idx].outcome = Outcome::Skipped(format!("no region: {e}"));
            }
            report.requests_after = report.requests_before;
            return Ok(report_all(report, files, progress));
        }
    };
    let unit = block_unit(&planned[0].file, page);
    // The region as chosen, not the contiguous one the plan assumed: where even the longest
    // free runs are short, moving the files there makes replay no better (an aged image
    // gave 777 pieces, before the region was chosen), so nothing moves (the donor is freed
    // when it is closed).
    let fits = |pieces: &[Piece]| {
        let runs: Vec<(u64, u64)> = layout
            .in_region
            .iter()
            .flat_map(|r| donor_pieces(pieces, r.offset, r.len))
            .map(|p| (p.physical, p.len))
            .collect();
        let short = pieces.iter().map(|p| p.len).sum::<u64>() < need;
        (!short, requests(&runs, page, request))
    };
    let mut donor = donor;
    let mut pieces = choose_pieces(&donor, need, unit, &mut report);
    let (mut whole, mut expected) = fits(&pieces);
    // The allocator hands out the free space near its goal first, and that goal moves with
    // the process (ext4 colours a file's goal by pid without delayed allocation): when what
    // it gave holds no long runs, ask once more for all the room there is, which holds the
    // longest runs wherever they lie.
    if (!whole || expected >= report.requests_before) && opts.region_choice > 1 {
        drop(donor);
        if let Ok(d) = allocate_donor(p, &planned, &target, need, u64::MAX, page) {
            donor = d;
            pieces = choose_pieces(&donor, need, unit, &mut report);
            (whole, expected) = fits(&pieces);
        } else {
            return Err(Refusal::Fragmented {
                mount: target.mount_point,
                runs: report.region_runs,
                before: report.requests_before,
                after: expected,
            });
        }
    }
    if !whole || expected >= report.requests_before {
        return Err(Refusal::Fragmented {
            mount: target.mount_point,
            runs: report.region_runs,
            before: report.requests_before,
            after: expected,
        });
    }
    report.requests_after = expected;
    let runs_after = move_all(p, &planned, &mut files, &donor, &pieces, opts, progress);
    report.requests_after = requests(&runs_after, page, request);
    report.files = files;
    Ok(report)
}

/// Checks every entry against its file: the files as learned, on the filesystem of the
/// first one (a pack is learned on one root; files elsewhere are skipped). Returns a report
/// per entry (the skipped ones saying why), the files planned, and their device.
fn check_files(p: &Pack) -> (Vec<FileReport>, Vec<Planned>, Option<u64>) {
    let mut files: Vec<FileReport> = p
        .entries
        .iter()
        .map(|e| FileReport {
            path: e.path.clone(),
            bytes: 0,
            extents_before: 0,
            outcome: Outcome::Planned,
        })
        .collect();
    let mut planned: Vec<Planned> = Vec::new();
    let mut dev: Option<u64> = None;
    for (i, e) in p.entries.iter().enumerate() {
        let f = match replay::check_entry(e) {
            Ok(f) => f,
            Err(s) => {
                files[i].outcome = Outcome::Skipped(skip_reason(s).into());
                continue;
            }
        };
        let Ok(md) = f.metadata() else {
            files[i].outcome = Outcome::Skipped("cannot stat".into());
            continue;
        };
        if e.size == 0 || e.ranges.is_empty() {
            files[i].outcome = Outcome::Skipped("empty".into());
            continue;
        }
        match dev {
            None => dev = Some(md.dev()),
            Some(d) if d != md.dev() => {
                files[i].outcome = Outcome::Skipped("on another filesystem".into());
                continue;
            }
            Some(_) => {}
        }
        planned.push(Planned {
            idx: i,
            file: f,
            moves: Vec::new(),
            reads: Vec::new(),
        });
    }
    (files, planned, dev)
}

/// The filesystem and device relocation would write to, as checked.
struct Target {
    mount_point: PathBuf,
    vfs: ::sys::VfsStat,
    device: String,
    media: Media,
    /// The device's request size.
    request: u64,
}

/// Checks the filesystem of `first_path` (on device `dev`): ext4, writable, and on media
/// where relocation helps (unless forced).
fn check_target(first_path: &Path, dev: u64, opts: &Options) -> Result<Target, Refusal> {
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let mounts = std::fs::read_to_string(&opts.mountinfo)
        .ok()
        .and_then(|t| system::parse_mountinfo(&t, &opts.mountinfo.display().to_string()).ok())
        .unwrap_or_default();
    let mount = mounts
        .iter()
        .rev()
        .find(|m| m.major == major && m.minor == minor);
    let magic = ::sys::statfs(first_path).map_or(0, |s| s.fs_type);
    let fstype = mount.map(|m| m.fstype.clone());
    if magic != ::sys::fs_magic::EXT4 || fstype.as_deref().is_some_and(|t| t != "ext4") {
        return Err(Refusal::NotExt4 {
            file: first_path.to_path_buf(),
            fs: fstype
                .or_else(|| ::sys::fs_magic::name(magic).map(str::to_string))
                .unwrap_or_else(|| format!("a filesystem of magic {magic:#x}")),
        });
    }
    let mount_point = mount.map_or_else(
        || first_path.parent().unwrap_or(Path::new("/")).to_path_buf(),
        |m| m.mount_point.clone(),
    );
    let vfs = ::sys::statvfs(first_path).map_err(|_| Refusal::NotExt4 {
        file: first_path.to_path_buf(),
        fs: "a filesystem statvfs cannot read".into(),
    })?;
    if vfs.read_only {
        return Err(Refusal::ReadOnly { mount: mount_point });
    }
    let (device, found) = media_of(&opts.sys, major, minor);
    let media = opts.media.unwrap_or(found);
    if !opts.force_media && !matches!(media, Media::Rotating | Media::SdMmc) {
        return Err(Refusal::Media { device, media });
    }
    let request = system::device_request_bytes(&opts.sys, major, minor);
    Ok(Target {
        mount_point,
        vfs,
        device,
        media,
        request,
    })
}

/// Where the planned files' pieces lie now and where they would lie in the region.
struct Layout {
    /// The physical runs of each entry's reads, by its place in the pack as read today.
    runs_before: Vec<Vec<(u64, u64)>>,
    /// Where each read lies in the region (its offset there).
    in_region: Vec<Range>,
    /// The region's bytes.
    region: u64,
}

/// The plan: what each file moves (filled into `planned`, with its bytes and extents in
/// `files`), where its pieces lie now, where they would lie.
fn lay_out(
    p: &Pack,
    planned: &mut [Planned],
    files: &mut [FileReport],
    pack_place: &[usize],
    merge_gap: u64,
    page: u64,
) -> Layout {
    let mut runs_before: Vec<Vec<(u64, u64)>> = vec![Vec::new(); p.entries.len()];
    // Where each read lies in the region (its offset there): on the device too if the
    // region is one run, as the plan assumes; step 4 maps them through the region it gets.
    // The region's hot part holds what replay reads, every file's in order, so that
    // replay reads one stream; the cold part after it the rest of the files moved whole
    // (each then lies in its hot and cold pieces, both in order).
    let mut in_region: Vec<Range> = Vec::new();
    let mut hot_end = 0u64;
    let mut colds: Vec<Vec<Range>> = Vec::new();
    for pl in planned.iter_mut() {
        let e = &p.entries[pl.idx];
        let md = pl.file.metadata().ok();
        // Block and page: the ioctl wants the two offsets congruent within a page, so the
        // region is laid out in whole pages (and blocks).
        let unit = md.map_or(4096, |m| m.blksize()).max(page);
        let end = e.size.div_ceil(unit) * unit;
        pl.reads = plan::merge_gaps(&e.ranges, merge_gap)
            .into_iter()
            .map(|m| m.range)
            .collect();
        let hot = align(&pl.reads, unit, end);
        let cold = if e.size <= WHOLE_FILE_MAX {
            complement(&hot, end)
        } else {
            Vec::new()
        };
        let extents = sys::fiemap(&pl.file, 0, e.size).unwrap_or_default();
        files[pl.idx].extents_before = extents.len() as u64;
        files[pl.idx].bytes = hot.iter().chain(&cold).map(|r| r.len).sum();
        for r in &pl.reads {
            runs_before[pack_place[pl.idx]].extend(physical_runs(&extents, r));
            in_region.push(Range {
                offset: hot_end + new_offset(&hot, r.offset),
                len: r.len,
            });
        }
        for r in hot {
            pl.moves.push((r, hot_end));
            hot_end += r.len;
        }
        colds.push(cold);
    }
    let mut region = hot_end;
    for (pl, cold) in planned.iter_mut().zip(colds) {
        for r in cold {
            pl.moves.push((r, region));
            region += r.len;
        }
    }
    Layout {
        runs_before,
        in_region,
        region,
    }
}

/// The report of the plan, before anything is allocated or moved: the requests replay
/// needs as the files lie now and, expected, with them in one contiguous region.
fn planned_report(dry_run: bool, target: &Target, layout: &Layout, page: u64) -> Report {
    let request = target.request;
    Report {
        dry_run,
        mount: target.mount_point.clone(),
        device: target.device.clone(),
        media: target.media,
        request_bytes: request,
        files: Vec::new(),
        region_bytes: layout.region,
        requests_before: requests(&layout.runs_before.concat(), page, request),
        requests_after: requests(
            &layout
                .in_region
                .iter()
                .map(|r| (r.offset, r.len))
                .collect::<Vec<_>>(),
            page,
            request,
        ),
        region_runs: 0,
        allocated_bytes: 0,
        allocated_runs: 0,
    }
}

/// Reports every file as it stands (a dry run, or no region): the report with them.
fn report_all(
    mut report: Report,
    files: Vec<FileReport>,
    progress: &mut dyn FnMut(&FileReport),
) -> Report {
    for f in &files {
        progress(f);
    }
    report.files = files;
    report
}

/// The unit the region is laid out in: the file's block, at least a page.
fn block_unit(f: &File, page: u64) -> u64 {
    f.metadata().map_or(4096, |m| m.blksize()).max(page)
}

/// The donor: no name, so nothing is left behind whatever happens; on the filesystem of
/// the files (the ioctl works within one filesystem); given room to choose the region from,
/// up to `region_choice` times the `need`ed bytes, leaving the free share.
fn allocate_donor(
    p: &Pack,
    planned: &[Planned],
    target: &Target,
    need: u64,
    region_choice: u64,
    page: u64,
) -> std::io::Result<File> {
    let dir = p.entries[planned[0].idx]
        .path
        .parent()
        .unwrap_or(&target.mount_point)
        .to_path_buf();
    let donor = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(&dir);
    let unit = block_unit(&planned[0].file, page);
    let vfs = &target.vfs;
    let room = vfs
        .avail_bytes
        .saturating_sub((MIN_FREE_SHARE * vfs.total_bytes as f64) as u64);
    let ask = (need.saturating_mul(region_choice.max(1)).min(room) / unit * unit).max(need);
    donor.and_then(|d| {
        // Less when the filesystem cannot give that much (reserved blocks, quotas).
        match sys::fallocate(&d, ask) {
            Err(_) if ask > need => sys::fallocate(&d, need),
            r => r,
        }
        .map(|()| d)
    })
}

/// The region: the longest runs of what the donor was given, `need` bytes of them; the rest
/// goes back to the filesystem now, not when the donor is closed. Notes what was allocated
/// and the region's runs in `report`.
fn choose_pieces(donor: &File, need: u64, unit: u64, report: &mut Report) -> Vec<Piece> {
    let allocated = donor.metadata().map_or(need, |m| m.len());
    let donor_map = sys::fiemap(donor, 0, allocated).unwrap_or_default();
    report.allocated_bytes = allocated;
    report.allocated_runs = plan::device_requests(&extent_runs(&donor_map), u64::MAX);
    let pieces = choose_region(&donor_runs(&donor_map, unit), need);
    for r in unchosen(&pieces, allocated) {
        let _ = sys::punch_hole(donor, r.offset, r.len);
    }
    let region_runs: Vec<(u64, u64)> = pieces.iter().map(|p| (p.physical, p.len)).collect();
    report.region_runs = plan::device_requests(&region_runs, u64::MAX).max(1);
    pieces
}

/// Moves the planned files into the region, one by one in first-access order, reporting
/// every entry in that order (those not planned as they come). Returns the physical runs of
/// the reads afterwards.
fn move_all(
    p: &Pack,
    planned: &[Planned],
    files: &mut [FileReport],
    donor: &File,
    pieces: &[Piece],
    opts: &Options,
    progress: &mut dyn FnMut(&FileReport),
) -> Vec<(u64, u64)> {
    let mut next = 0usize;
    let mut runs_after = Vec::new();
    for pl in planned {
        // Entries before this one that were not planned are reported as they come.
        while next < pl.idx {
            progress(&files[next]);
            next += 1;
        }
        let e = &p.entries[pl.idx];
        let (outcome, copy) = move_file(e, pl, donor, pieces, opts);
        // Where its reads lie now, moved or not (in the copy that took its name, if one did).
        let map = sys::fiemap(copy.as_ref().unwrap_or(&pl.file), 0, e.size).unwrap_or_default();
        for r in &pl.reads {
            runs_after.extend(physical_runs(&map, r));
        }
        files[pl.idx].outcome = match outcome {
            Outcome::Moved { .. } => Outcome::Moved {
                extents_after: map.len() as u64,
            },
            Outcome::Replaced { ino, .. } => Outcome::Replaced {
                extents_after: map.len() as u64,
                ino,
            },
            other => other,
        };
        progress(&files[pl.idx]);
        next = pl.idx + 1;
    }
    while next < files.len() {
        progress(&files[next]);
        next += 1;
    }
    runs_after
}

fn skip_reason(s: Skip) -> &'static str {
    match s {
        Skip::Missing => "gone",
        Skip::NotRegular => "not a regular file",
        Skip::Changed => "changed since the pack was learned",
    }
}

/// Whether `f` is still the file `e` was learned from: inode, size and mtime.
fn same_as_learned(f: &File, e: &Entry) -> bool {
    f.metadata().is_ok_and(|md| {
        md.ino() == e.ino
            && md.size() == e.size
            && md.mtime() == e.mtime_s
            && md.mtime_nsec() as u32 == e.mtime_ns
    })
}

/// Moves one file's ranges to their places in the donor's `region`: its outcome, and the
/// file as it is now when a copy took its name ([`replace_running`]).
fn move_file(
    e: &Entry,
    pl: &Planned,
    donor: &File,
    region: &[Piece],
    opts: &Options,
) -> (Outcome, Option<File>) {
    let skipped = |why: String| (Outcome::Skipped(why), None);
    // The ioctl wants the file open for reading and writing: the very file planned (opened
    // without following a symlink, checked as learned), opened again through its
    // descriptor, never by its path. A running program cannot be (ETXTBSY): a moved copy
    // takes its place instead.
    let rw = match reopen_rw(&pl.file) {
        Ok(f) => f,
        Err(err) if err.raw_os_error() == Some(libc::ETXTBSY) => {
            return match replace_running(e, pl, donor, region, opts) {
                Ok((copy, ino)) => (
                    Outcome::Replaced {
                        extents_after: 0,
                        ino,
                    },
                    Some(copy),
                ),
                Err(why) => skipped(format!("a running program (ETXTBSY): {why}")),
            };
        }
        Err(err) => return skipped(format!("cannot open read-write: {err}")),
    };
    // Unchanged since the pack was learned: checked on the descriptor the ioctl uses, just
    // before it.
    if !same_as_learned(&rw, e) {
        return skipped("changed during the run".into());
    }
    if let Err(why) = move_pieces(&rw, e, pl, donor, region) {
        return skipped(why);
    }
    // On the device before the next file: done means done even after a power cut.
    let _ = sys::fdatasync(&rw);
    if !same_as_learned(&rw, e) {
        // The ioctl kept its data whole; it was written meanwhile and is reported so.
        return skipped("changed during the run (its data is whole)".into());
    }
    (Outcome::Moved { extents_after: 0 }, None)
}

/// `f` opened again read-write through /proc/self/fd: the same inode, whatever its path
/// leads to now.
fn reopen_rw(f: &File) -> std::io::Result<File> {
    use std::os::fd::AsRawFd;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{}", f.as_raw_fd()))
}

/// Moves the planned ranges of `file` (the entry's file, or its copy) into the region.
fn move_pieces(
    file: &File,
    e: &Entry,
    pl: &Planned,
    donor: &File,
    region: &[Piece],
) -> Result<(), String> {
    let bs = file.metadata().map_or(4096, |m| m.blksize()).max(1);
    // The ioctl cuts a move at the file's last block and refuses one that starts past it
    // (a range rounded out to a page can end beyond it when blocks are smaller).
    let eof = e.size.div_ceil(bs);
    for &(r, at) in &pl.moves {
        let mut orig = r.offset / bs;
        for piece in donor_pieces(region, at, r.len) {
            let blocks = piece.len / bs;
            let left = blocks.min(eof.saturating_sub(orig));
            move_blocks(file, donor, orig, piece.donor / bs, left)?;
            orig += blocks;
        }
    }
    Ok(())
}

/// The name a running program's copy has between linkat(2) and the exchange, and the
/// original has after it: hidden, beside it, and recognisable (a run killed in between
/// leaves it; the next run, or the next boot, removes it: [`clean_leftover`]).
pub fn copy_name(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_string_lossy();
    Some(path.with_file_name(format!(".{name}.bootprint-relocate")))
}

/// Whether `name` is one [`copy_name`] gives.
fn is_copy_name(name: &std::ffi::OsStr) -> bool {
    let n = name.to_string_lossy();
    n.len() > ".x.bootprint-relocate".len() - 1
        && n.starts_with('.')
        && n.ends_with(".bootprint-relocate")
        && !n.contains('/')
}

/// The note of a running program's copy in flight, beside the pack at `pack`.
pub fn pending_path(pack: &Path) -> PathBuf {
    pack.with_file_name("relocate-pending")
}

/// Removes what a relocation killed while a running program's copy had its temporary name
/// left: the file the note at `pending` names (only a [`copy_name`], only a regular file,
/// found in its directory without following a symlink), then the note. The note is trusted
/// only when root (or this user) owns it and no one else can write it. Returns what was
/// removed.
pub fn clean_leftover(pending: &Path) -> Option<PathBuf> {
    let f = ::sys::open_regular(pending).ok()?;
    let st = ::sys::fstat(&f).ok()?;
    let trusted = (st.uid == 0 || st.uid == ::sys::euid()) && st.mode & 0o022 == 0;
    let text = ::sys::read_capped(f, 4096)
        .ok()
        .and_then(|b| String::from_utf8(b).ok());
    let _ = std::fs::remove_file(pending);
    if !trusted {
        return None;
    }
    let left = PathBuf::from(text?.trim_end_matches('\n'));
    let (Some(parent), Some(name)) = (left.parent(), left.file_name()) else {
        return None;
    };
    if !left.is_absolute() || !is_copy_name(name) {
        return None;
    }
    let dir = ::sys::open_dir(parent).ok()?;
    if !dir.stat_at(name).ok().flatten()?.is_file() {
        return None;
    }
    dir.unlink_at(name).ok()?;
    let _ = dir.sync();
    Some(left)
}

/// Inode flags a program's file may carry that its copy must carry too (chattr's `s`, `u`,
/// `c`, `S`, `d`, `A`, `m`, `j`, `t`).
const COPIED_FLAGS: u32 = 0x1 | 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x400 | 0x4000 | 0x8000;
/// Immutable (`i`) and append-only (`a`): such a file is never replaced.
const FIXED_FLAGS: u32 = 0x10 | 0x20;

/// What a file is besides its bytes and times, all of which its copy must carry: owner,
/// mode, every extended attribute (capabilities, ACLs, labels), the inode flags that mean
/// something for it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Meta {
    uid: u32,
    gid: u32,
    mode: u32,
    xattrs: Vec<(Vec<u8>, Vec<u8>)>,
    flags: u32,
}

impl Meta {
    fn of(f: &File) -> std::io::Result<Meta> {
        let md = f.metadata()?;
        Ok(Meta {
            uid: md.uid(),
            gid: md.gid(),
            mode: md.mode() & 0o7777,
            xattrs: sys::xattrs(f)?,
            flags: sys::inode_flags(f)? & COPIED_FLAGS,
        })
    }

    /// Makes `f`'s metadata exactly this: owner first (a chown clears set-id bits and file
    /// capabilities), then the attributes (those `f` has and this has not removed: an ACL
    /// it inherited from its directory's default ACL), the flags, the mode last (it agrees
    /// with an access ACL); then read back.
    fn apply(&self, f: &File) -> Result<(), String> {
        let io = |what: &str, err: std::io::Error| format!("{what}: {err}");
        std::os::unix::fs::fchown(f, Some(self.uid), Some(self.gid))
            .map_err(|err| io("cannot set the owner", err))?;
        for (name, _) in sys::xattrs(f).map_err(|err| io("cannot list the attributes", err))? {
            if !self.xattrs.iter().any(|(n, _)| *n == name) {
                sys::remove_xattr(f, &name).map_err(|err| io("cannot remove an attribute", err))?;
            }
        }
        for (name, value) in &self.xattrs {
            sys::set_xattr(f, name, value).map_err(|err| io("cannot copy the attributes", err))?;
        }
        let flags = sys::inode_flags(f).map_err(|err| io("cannot read the flags", err))?;
        let want = (flags & !COPIED_FLAGS) | self.flags;
        if want != flags {
            sys::set_inode_flags(f, want).map_err(|err| io("cannot set the flags", err))?;
        }
        f.set_permissions(std::fs::Permissions::from_mode(self.mode))
            .map_err(|err| io("cannot set the mode", err))?;
        match Meta::of(f) {
            Ok(m) if m == *self => Ok(()),
            Ok(_) => Err(
                "the copy's owner, mode, attributes or flags cannot be made the original's".into(),
            ),
            Err(err) => Err(io("cannot stat the copy", err)),
        }
    }
}

/// A running program cannot be opened for writing (ETXTBSY), so the ioctl cannot move its
/// blocks: a copy of it is made instead, unnamed (O_TMPFILE) beside it; its blocks are
/// moved into the region as any file's; its content is compared with the original's; it is
/// given exactly the original's owner, mode, extended attributes (file capabilities, ACLs)
/// and inode flags, and its times; and it takes the original's name (renameat2's exchange),
/// as a package manager replaces a running program. The program running keeps the old
/// inode until it exits; every later open gets the copy. At every moment the name holds the
/// original or the whole copy.
///
/// Every step is done in the program's directory, opened once without following a symlink
/// and required to be writable by root alone, so no one can move a step elsewhere by
/// swapping a directory of the path. After the exchange, the name's old file must be the
/// original with its metadata as copied (an admin's `chmod u-s` or `setcap -r` meanwhile
/// undoes the exchange). The copy's temporary name is noted first (`opts.pending`), so a
/// run killed before it is removed leaves nothing the next run or boot does not remove. A
/// file with other hard links is not replaced (they would keep the old inode). Ok: the copy
/// and its inode number.
fn replace_running(
    e: &Entry,
    pl: &Planned,
    donor: &File,
    region: &[Piece],
    opts: &Options,
) -> Result<(File, u64), String> {
    use std::io::{Read, Seek, SeekFrom};
    let io = |what: &str, err: std::io::Error| format!("{what}: {err}");
    let hook = |step| {
        if let Some(h) = &opts.hook {
            (h.0)(step, &e.path)
        }
    };
    let (Some(parent), Some(name), Some(tmp_path)) =
        (e.path.parent(), e.path.file_name(), copy_name(&e.path))
    else {
        return Err("no directory".into());
    };
    let tmp = tmp_path.file_name().unwrap_or_default().to_os_string();
    let dir = ::sys::open_dir(parent).map_err(|err| io("cannot open its directory", err))?;
    let dst = dir
        .stat()
        .map_err(|err| io("cannot stat its directory", err))?;
    if !dst.only_root_writes() {
        return Err(format!(
            "its directory can be written by others than root (owner uid {}, mode {:o}): \
             no copy is made there",
            dst.uid,
            dst.mode & 0o7777
        ));
    }
    // The name in that directory is the file planned (opened by check_entry, as learned).
    let src = &pl.file;
    let md = src.metadata().map_err(|err| io("cannot stat", err))?;
    let in_dir = dir.stat_at(name).map_err(|err| io("cannot stat", err))?;
    if !in_dir.is_some_and(|s| s.is_file() && s.ino == md.ino() && s.dev == md.dev())
        || !same_as_learned(src, e)
    {
        return Err("changed during the run".into());
    }
    if md.nlink() != 1 {
        return Err(format!("{} hard links", md.nlink()));
    }
    let meta = Meta::of(src).map_err(|err| io("cannot read its attributes", err))?;
    if sys::inode_flags(src).unwrap_or(0) & FIXED_FLAGS != 0 {
        return Err("immutable or append-only".into());
    }
    let mut copy = dir
        .open_at(std::ffi::OsStr::new("."), libc::O_RDWR | libc::O_TMPFILE)
        .map_err(|err| io("cannot make the copy", err))?;
    let mut reader = src;
    reader
        .seek(SeekFrom::Start(0))
        .map_err(|err| io("seek", err))?;
    std::io::copy(&mut reader, &mut copy).map_err(|err| io("cannot copy", err))?;
    // Its blocks allocated and on the device before they move.
    sys::fdatasync(&copy).map_err(|err| io("cannot sync the copy", err))?;
    move_pieces(&copy, e, pl, donor, region)?;
    sys::fdatasync(&copy).map_err(|err| io("cannot sync the copy", err))?;
    // Byte for byte the original's, read back after the move.
    let mut a = src;
    let mut b = &copy;
    a.seek(SeekFrom::Start(0)).map_err(|err| io("seek", err))?;
    b.seek(SeekFrom::Start(0)).map_err(|err| io("seek", err))?;
    let differs = || "the copy differs from the original".to_string();
    let (mut x, mut y) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = a.read(&mut x).map_err(|err| io("cannot read", err))?;
        if n == 0 {
            // Both end here: the copy is no longer than the original.
            if b.read(&mut y).map_err(|err| io("cannot read", err))? != 0 {
                return Err(differs());
            }
            break;
        }
        match b.read_exact(&mut y[..n]) {
            Ok(()) if x[..n] == y[..n] => {}
            Ok(()) => return Err(differs()),
            Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return Err(differs()),
            Err(err) => return Err(io("cannot read", err)),
        }
    }
    meta.apply(&copy)?;
    let times = std::fs::FileTimes::new()
        .set_accessed(md.accessed().map_err(|err| io("atime", err))?)
        .set_modified(md.modified().map_err(|err| io("mtime", err))?);
    copy.set_times(times)
        .map_err(|err| io("cannot set the times", err))?;
    hook(Step::Copied);
    let unchanged = |f: &File| same_as_learned(f, e) && Meta::of(f).is_ok_and(|m| m == meta);
    if !unchanged(src) {
        return Err("changed during the run".into());
    }
    // Left by a run killed between the link and the removal below (the copy, or after the
    // exchange the original: the same bytes either way).
    if dir
        .stat_at(&tmp)
        .ok()
        .flatten()
        .is_some_and(|s| s.is_file())
    {
        let _ = dir.unlink_at(&tmp);
    }
    if let Some(p) = &opts.pending {
        ::sys::write_atomic_mode(p, format!("{}\n", tmp_path.display()).as_bytes(), 0o600)
            .map_err(|err| io("cannot note the copy's name", err))?;
    }
    let forget = || {
        if let Some(p) = &opts.pending {
            let _ = std::fs::remove_file(p);
        }
    };
    if let Err(err) = sys::link_unnamed_at(&copy, &dir, &tmp) {
        forget();
        return Err(io("cannot name the copy", err));
    }
    hook(Step::Linked);
    // Exchanged, not renamed over: what the name held is checked after the swap, so a
    // program a package manager put there meanwhile, or the original's metadata changed
    // meanwhile, is put back, not overwritten.
    if let Err(err) = sys::exchange_at(&dir, &tmp, name) {
        let _ = dir.unlink_at(&tmp);
        forget();
        return Err(io("cannot put the copy in its place", err));
    }
    hook(Step::Exchanged);
    let was = dir.stat_at(&tmp).ok().flatten();
    let ok = was.is_some_and(|w| w.ino == e.ino && w.dev == md.dev()) && unchanged(src);
    if !ok {
        let _ = sys::exchange_at(&dir, &tmp, name);
        let _ = dir.unlink_at(&tmp);
        let _ = dir.sync();
        forget();
        return Err("replaced or changed by someone else during the run (put back)".into());
    }
    let _ = dir.unlink_at(&tmp);
    // The new name on the device before the next file.
    let _ = dir.sync();
    forget();
    let ino = copy.metadata().map_err(|err| io("cannot stat", err))?.ino();
    Ok((copy, ino))
}

/// Moves `left` blocks of `orig` at block `orig_at` to the donor's block `donor_at`, as
/// many ioctls as the kernel needs; Err: why the file is skipped.
fn move_blocks(
    orig: &File,
    donor: &File,
    mut orig_at: u64,
    mut donor_at: u64,
    mut left: u64,
) -> Result<(), String> {
    while left > 0 {
        match sys::move_extents(orig, donor, orig_at, donor_at, left) {
            Ok(0) => break,
            Ok(n) => {
                orig_at += n;
                donor_at += n;
                left = left.saturating_sub(n);
            }
            Err(err) => {
                return Err(match err.raw_os_error() {
                    Some(libc::EOPNOTSUPP) => "not movable (no extents, inline data, a quota \
                                               file, or a feature the ioctl does not support)"
                        .to_string(),
                    Some(libc::EPERM) => "immutable or append-only".to_string(),
                    Some(libc::ETXTBSY) => "a swap file".to_string(),
                    Some(libc::EBUSY) => "busy (its pages in use); try again".to_string(),
                    _ => format!("the move failed: {err}"),
                })
            }
        }
    }
    Ok(())
}

/// The donor's extents joined into runs (extents that continue one another both in the
/// file and on the device), each cut to whole `unit`s of the file (the ioctl wants the two
/// files' offsets congruent within a page), in file order.
pub fn donor_runs(extents: &[sys::Extent], unit: u64) -> Vec<Piece> {
    let mut joined: Vec<Piece> = Vec::new();
    for x in extents {
        match joined.last_mut() {
            Some(p) if p.donor + p.len == x.logical && p.physical + p.len == x.physical => {
                p.len += x.length
            }
            _ => joined.push(Piece {
                donor: x.logical,
                physical: x.physical,
                len: x.length,
            }),
        }
    }
    let unit = unit.max(1);
    joined
        .into_iter()
        .filter_map(|p| {
            let start = p.donor.div_ceil(unit) * unit;
            let end = (p.donor + p.len) / unit * unit;
            (end > start).then(|| Piece {
                donor: start,
                physical: p.physical + (start - p.donor),
                len: end - start,
            })
        })
        .collect()
}

/// The region: the fewest of the donor's `runs` that hold `need` bytes (the longest first,
/// the last cut to what is left), in device order so that replay reads them ascending.
/// Shorter than `need` when the runs do not hold it.
pub fn choose_region(runs: &[Piece], need: u64) -> Vec<Piece> {
    let mut by_len = runs.to_vec();
    by_len.sort_by_key(|p| (std::cmp::Reverse(p.len), p.physical));
    let mut chosen = Vec::new();
    let mut have = 0u64;
    for p in by_len {
        if have >= need {
            break;
        }
        let len = p.len.min(need - have);
        have += len;
        chosen.push(Piece { len, ..p });
    }
    chosen.sort_by_key(|p| p.physical);
    chosen
}

/// The donor's byte ranges `[0, allocated)` that the region does not use.
fn unchosen(region: &[Piece], allocated: u64) -> Vec<Range> {
    let mut used: Vec<Range> = region
        .iter()
        .map(|p| Range {
            offset: p.donor,
            len: p.len,
        })
        .collect();
    used.sort_unstable_by_key(|r| r.offset);
    complement(&used, allocated)
}

/// Bytes `[at, at + len)` of the region (its pieces laid end to end) as pieces of the donor.
pub fn donor_pieces(region: &[Piece], at: u64, len: u64) -> Vec<Piece> {
    let mut out = Vec::new();
    let (mut at, end) = (at, at + len);
    let mut start = 0u64;
    for p in region {
        let stop = start + p.len;
        if at < stop && at < end {
            let skip = at - start;
            let take = (stop - at).min(end - at);
            out.push(Piece {
                donor: p.donor + skip,
                physical: p.physical + skip,
                len: take,
            });
            at += take;
        }
        start = stop;
    }
    out
}

/// Ranges rounded out to `unit` and cut at `end`, overlapping ones joined.
fn align(ranges: &[Range], unit: u64, end: u64) -> Vec<Range> {
    let mut out: Vec<Range> = Vec::new();
    for r in ranges {
        let s = r.offset / unit * unit;
        let e = r.end().div_ceil(unit).saturating_mul(unit).min(end);
        if e <= s {
            continue;
        }
        match out.last_mut() {
            Some(last) if s <= last.end() => last.len = e.max(last.end()) - last.offset,
            _ => out.push(Range {
                offset: s,
                len: e - s,
            }),
        }
    }
    out
}

/// The device requests replay needs for `runs` (device byte, length) read in that order:
/// [`plan::device_requests`] with each run's end rounded up to a whole page, as the kernel
/// reads it (a file's last range ends inside a page, and the next file's first then
/// continues it on the device).
fn requests(runs: &[(u64, u64)], page: u64, request: u64) -> u64 {
    let page = page.max(1);
    let whole: Vec<(u64, u64)> = runs
        .iter()
        .map(|&(at, len)| (at, (at + len).div_ceil(page) * page - at))
        .collect();
    plan::device_requests(&whole, request)
}

/// `[0, end)` less `ranges` (ascending, apart).
fn complement(ranges: &[Range], end: u64) -> Vec<Range> {
    let mut out = Vec::new();
    let mut at = 0;
    for r in ranges {
        if r.offset > at {
            out.push(Range {
                offset: at,
                len: r.offset - at,
            });
        }
        at = at.max(r.end());
    }
    if end > at {
        out.push(Range {
            offset: at,
            len: end - at,
        });
    }
    out
}

/// Where file offset `off` lands in the file's share of the region: its moves laid end to
/// end.
fn new_offset(moves: &[Range], off: u64) -> u64 {
    let mut before = 0;
    for m in moves {
        if off < m.end() {
            return before + off.saturating_sub(m.offset);
        }
        before += m.len;
    }
    before
}

/// The physical pieces (device byte, length) of file range `r`, from the file's extents;
/// holes are left out.
fn physical_runs(extents: &[sys::Extent], r: &Range) -> Vec<(u64, u64)> {
    extents
        .iter()
        .filter_map(|x| {
            let s = x.logical.max(r.offset);
            let e = (x.logical + x.length).min(r.end());
            (s < e).then(|| (x.physical + (s - x.logical), e - s))
        })
        .collect()
}

fn extent_runs(extents: &[sys::Extent]) -> Vec<(u64, u64)> {
    extents.iter().map(|x| (x.physical, x.length)).collect()
}

/// The device's name and kind: the disk's (a partition's parent's) name from sysfs,
/// `mmcblk*` is an SD/MMC card, else `queue/rotational` says.
pub fn media_of(sys_dir: &Path, major: u32, minor: u32) -> (String, Media) {
    let dev = sys_dir.join(format!("dev/block/{major}:{minor}"));
    let Ok(real) = std::fs::canonicalize(&dev) else {
        return (format!("{major}:{minor}"), Media::Unknown);
    };
    let disk = if real.join("partition").exists() {
        real.parent().map(Path::to_path_buf).unwrap_or(real.clone())
    } else {
        real.clone()
    };
    let name = disk.file_name().map_or_else(
        || format!("{major}:{minor}"),
        |n| n.to_string_lossy().into_owned(),
    );
    let media = if name.starts_with("mmcblk") {
        Media::SdMmc
    } else {
        match std::fs::read_to_string(disk.join("queue/rotational"))
            .ok()
            .and_then(|t| system::parse_rotational(&t))
        {
            Some(true) => Media::Rotating,
            Some(false) => Media::SolidState,
            None => Media::Unknown,
        }
    };
    (name, media)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(offset: u64, len: u64) -> Range {
        Range { offset, len }
    }

    #[test]
    fn a_copy_is_named_beside_its_program_and_exchanged_whole() {
        assert_eq!(
            copy_name(Path::new("/usr/sbin/sshd")),
            Some(PathBuf::from("/usr/sbin/.sshd.bootprint-relocate"))
        );
        assert_eq!(copy_name(Path::new("/")), None);
        assert!(is_copy_name(std::ffi::OsStr::new(
            ".sshd.bootprint-relocate"
        )));
        for n in [
            "sshd",
            ".bootprint-relocate",
            "x.bootprint-relocate",
            ".a/b.bootprint-relocate",
        ] {
            assert!(!is_copy_name(std::ffi::OsStr::new(n)), "{n}");
        }
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::write(&a, "old").unwrap();
        std::fs::write(&b, "new").unwrap();
        let ino_a = std::fs::metadata(&a).unwrap().ino();
        let dir = ::sys::Dir::open_following(tmp.path()).unwrap();
        let name = std::ffi::OsStr::new;
        sys::exchange_at(&dir, name("a"), name("b")).unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "old");
        assert_eq!(std::fs::metadata(&b).unwrap().ino(), ino_a);
        let gone = sys::exchange_at(&dir, name("a"), name("c")).unwrap_err();
        assert_eq!(gone.raw_os_error(), Some(libc::ENOENT));
    }

    /// A note left by a killed run: only a copy's name is removed, only when the note is
    /// trusted, and the note goes in every case.
    #[test]
    fn a_killed_runs_copy_is_removed_by_its_note() {
        let tmp = tempfile::tempdir().unwrap();
        let d = std::fs::canonicalize(tmp.path()).unwrap();
        let left = d.join(".prog.bootprint-relocate");
        std::fs::write(&left, "a set-uid copy").unwrap();
        std::fs::write(d.join("keep"), "x").unwrap();
        let note = d.join("relocate-pending");
        for (named, removed) in [
            (d.join("keep"), false),
            (PathBuf::from("relative/.prog.bootprint-relocate"), false),
            (left.clone(), true),
        ] {
            ::sys::write_atomic_mode(&note, format!("{}\n", named.display()).as_bytes(), 0o600)
                .unwrap();
            assert_eq!(
                clean_leftover(&note).is_some(),
                removed,
                "{}",
                named.display()
            );
            assert!(!note.exists());
        }
        assert!(!left.exists() && d.join("keep").exists());
        // Through a symlinked directory: nothing.
        let real = d.join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join(".p.bootprint-relocate"), "x").unwrap();
        std::os::unix::fs::symlink(&real, d.join("link")).unwrap();
        ::sys::write_atomic_mode(&note, b"", 0o600).unwrap();
        let via = d.join("link/.p.bootprint-relocate");
        ::sys::write_atomic_mode(&note, format!("{}\n", via.display()).as_bytes(), 0o600).unwrap();
        assert_eq!(clean_leftover(&note), None);
        assert!(real.join(".p.bootprint-relocate").exists());
        // A note others can write is not trusted.
        ::sys::write_atomic_mode(
            &note,
            format!("{}\n", real.join(".p.bootprint-relocate").display()).as_bytes(),
            0o666,
        )
        .unwrap();
        assert_eq!(clean_leftover(&note), None);
        assert!(real.join(".p.bootprint-relocate").exists() && !note.exists());
    }

    #[test]
    fn ranges_round_out_to_blocks_and_join() {
        // 100..5000 and 6000..9000 in 4 KiB units: 0..8192 and 4096..12288 join.
        assert_eq!(
            align(&[r(100, 4900), r(6000, 3000)], 4096, 1 << 20),
            vec![r(0, 12288)]
        );
        // Cut at the file's end (rounded up to a block by the caller).
        assert_eq!(align(&[r(8192, 100_000)], 4096, 16384), vec![r(8192, 8192)]);
        assert_eq!(
            align(&[r(0, 4096), r(65536, 4096)], 4096, 1 << 20),
            vec![r(0, 4096), r(65536, 4096)]
        );
    }

    #[test]
    fn a_range_that_ends_inside_a_page_is_read_to_its_end() {
        // Two files end to end on the device, the first 5000 bytes long: one stretch.
        assert_eq!(requests(&[(0, 5000), (8192, 4096)], 4096, 1 << 20), 1);
        assert_eq!(
            plan::device_requests(&[(0, 5000), (8192, 4096)], 1 << 20),
            2
        );
        // A real gap stays one.
        assert_eq!(requests(&[(0, 5000), (12288, 4096)], 4096, 1 << 20), 2);
    }

    #[test]
    fn what_a_file_does_not_read() {
        assert_eq!(
            complement(&[r(4096, 4096), r(16384, 8192)], 32768),
            vec![r(0, 4096), r(8192, 8192), r(24576, 8192)]
        );
        assert_eq!(complement(&[r(0, 8192)], 8192), vec![]);
        assert_eq!(complement(&[], 8192), vec![r(0, 8192)]);
    }

    #[test]
    fn offsets_in_the_region() {
        let moves = [r(0, 8192), r(65536, 4096), r(131072, 8192)];
        assert_eq!(new_offset(&moves, 4096), 4096);
        assert_eq!(new_offset(&moves, 65536), 8192);
        assert_eq!(new_offset(&moves, 131072 + 4096), 8192 + 4096 + 4096);
    }

    /// An extent as FIEMAP gives it (unwritten, as the donor's are).
    fn x(logical: u64, physical: u64, length: u64) -> sys::Extent {
        sys::Extent {
            logical,
            physical,
            length,
            flags: 0x800,
        }
    }

    #[test]
    fn physical_pieces_of_a_range() {
        let map = [
            x(0, 1 << 20, 8192),
            x(8192, 5 << 20, 8192),
            x(32768, 9 << 20, 4096),
        ];
        // 4096..20480 crosses the first two extents and ends in a hole.
        assert_eq!(
            physical_runs(&map, &r(4096, 16384)),
            vec![((1 << 20) + 4096, 4096), (5 << 20, 8192)]
        );
        assert!(physical_runs(&map, &r(20480, 4096)).is_empty());
    }

    fn piece(donor: u64, physical: u64, len: u64) -> Piece {
        Piece {
            donor,
            physical,
            len,
        }
    }

    #[test]
    fn the_donor_in_runs_of_whole_units() {
        let map = [
            // Two extents that continue one another on the device and in the file: one run.
            x(0, 1 << 20, 8192),
            x(8192, (1 << 20) + 8192, 4096),
            // In the file next, on the device not.
            x(12288, 9 << 20, 12288),
            // A run that begins and ends off the 8 KiB unit is cut to whole units.
            x(24576, 20 << 20, 4096),
            x(28672, 30 << 20, 16384),
        ];
        assert_eq!(
            donor_runs(&map, 4096),
            vec![
                piece(0, 1 << 20, 12288),
                piece(12288, 9 << 20, 12288),
                piece(24576, 20 << 20, 4096),
                piece(28672, 30 << 20, 16384),
            ]
        );
        assert_eq!(
            donor_runs(&map, 8192),
            vec![
                piece(0, 1 << 20, 8192),
                piece(16384, (9 << 20) + 4096, 8192),
                piece(32768, (30 << 20) + 4096, 8192),
            ]
        );
    }

    #[test]
    fn the_region_is_the_fewest_longest_runs_in_device_order() {
        let runs = [
            piece(0, 900, 10),
            piece(10, 100, 50),
            piece(60, 500, 30),
            piece(90, 300, 40),
        ];
        // 100 bytes: the 50 and the 40, then 10 of the 30; read ascending on the device.
        assert_eq!(
            choose_region(&runs, 100),
            vec![piece(10, 100, 50), piece(90, 300, 40), piece(60, 500, 10)]
        );
        assert_eq!(choose_region(&runs, 50), vec![piece(10, 100, 50)]);
        // More than there is: all of it, short.
        let all = choose_region(&runs, 1000);
        assert_eq!(all.iter().map(|p| p.len).sum::<u64>(), 130);
        assert_eq!(all[0].physical, 100);
        // What the region leaves of a donor of 130 bytes, and of one of 200.
        let region = choose_region(&runs, 100);
        assert_eq!(unchosen(&region, 130), vec![r(0, 10), r(70, 20)]);
        assert_eq!(
            unchosen(&region, 200),
            vec![r(0, 10), r(70, 20), r(130, 70)]
        );
    }

    #[test]
    fn region_bytes_through_its_pieces() {
        let region = [piece(10, 100, 50), piece(90, 300, 40), piece(60, 500, 10)];
        // Within one piece, across two, across all three.
        assert_eq!(donor_pieces(&region, 5, 10), vec![piece(15, 105, 10)]);
        assert_eq!(
            donor_pieces(&region, 45, 10),
            vec![piece(55, 145, 5), piece(90, 300, 5)]
        );
        assert_eq!(
            donor_pieces(&region, 0, 100),
            vec![piece(10, 100, 50), piece(90, 300, 40), piece(60, 500, 10)]
        );
        assert!(donor_pieces(&region, 100, 10).is_empty());
    }

    #[test]
    fn media_from_a_fake_sysfs() {
        let t = tempfile::tempdir().unwrap();
        let mk = |name: &str, rot: &str, num: &str| {
            let disk = t.path().join("devices").join(name);
            std::fs::create_dir_all(disk.join("queue")).unwrap();
            std::fs::write(disk.join("queue/rotational"), rot).unwrap();
            let part = disk.join(format!("{name}p1"));
            std::fs::create_dir_all(&part).unwrap();
            std::fs::write(part.join("partition"), "1\n").unwrap();
            std::fs::create_dir_all(t.path().join("dev/block")).unwrap();
            std::os::unix::fs::symlink(&part, t.path().join("dev/block").join(num)).unwrap();
        };
        mk("sda", "1\n", "8:1");
        mk("mmcblk0", "0\n", "179:1");
        mk("nvme0n1", "0\n", "259:1");
        assert_eq!(media_of(t.path(), 8, 1), ("sda".into(), Media::Rotating));
        assert_eq!(media_of(t.path(), 179, 1), ("mmcblk0".into(), Media::SdMmc));
        assert_eq!(
            media_of(t.path(), 259, 1),
            ("nvme0n1".into(), Media::SolidState)
        );
        assert_eq!(media_of(t.path(), 1, 1), ("1:1".into(), Media::Unknown));
    }

    #[test]
    fn the_configured_media_words() {
        assert_eq!(Media::from_setting("card"), Some(Media::SdMmc));
        assert_eq!(Media::from_setting("rotating"), Some(Media::Rotating));
        assert_eq!(Media::from_setting("solid-state"), Some(Media::SolidState));
        assert_eq!(Media::from_setting("auto"), None);
        assert_eq!(Media::setting_rotates("rotating"), Some(true));
        assert_eq!(Media::setting_rotates("card"), Some(false));
        assert_eq!(Media::setting_rotates("solid-state"), Some(false));
        assert_eq!(Media::setting_rotates("auto"), None);
    }

    #[test]
    fn refusals_name_the_problem() {
        let m = Refusal::NotExt4 {
            file: "/dev/shm/x".into(),
            fs: "tmpfs".into(),
        }
        .to_string();
        assert!(m.contains("/dev/shm/x is on tmpfs, not ext4"), "{m}");
        let m = Refusal::NearlyFull {
            mount: "/".into(),
            free: 1,
            need: 2,
            size: 100,
        }
        .to_string();
        assert!(m.contains("10 %"), "{m}");
        let m = Refusal::Media {
            device: "nvme0n1".into(),
            media: Media::SolidState,
        }
        .to_string();
        assert!(
            m.contains("nvme0n1 is solid state") && m.contains("--force-media"),
            "{m}"
        );
    }
}
