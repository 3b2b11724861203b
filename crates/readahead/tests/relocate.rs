//! Relocation for real on this host: an ext4 image loop-mounted under the temporary
//! directory (testkit's `Ext4Image`, root only), files written interleaved so their blocks
//! interleave, a pack naming them, and EXT4_IOC_MOVE_EXT moving them. Checked with FIEMAP
//! (fewer extents, one run in pack order), checksums after a fresh mount (the data came back
//! from the image), and e2fsck.

use std::fs::{self, File};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

mod common;

use common::relocation_pack as pack;
use readahead::pack::{Entry, Range};
use readahead::relocate::{self, Options, Outcome, Refusal};
use readahead::{replay, sys};
use testkit::ext4::{checksum, interleaved_files, Ext4Image};

fn entry(p: &Path, ranges: &[(u64, u64)]) -> Entry {
    let md = fs::metadata(p).unwrap();
    Entry {
        path: p.to_path_buf(),
        dev: md.dev(),
        ino: md.ino(),
        size: md.size(),
        mtime_s: md.mtime(),
        mtime_ns: md.mtime_nsec() as u32,
        ranges: ranges
            .iter()
            .map(|&(offset, len)| Range { offset, len })
            .collect(),
        first_access: 0,
    }
}

fn extents(p: &Path) -> Vec<sys::Extent> {
    let f = File::open(p).unwrap();
    sys::fiemap(&f, 0, f.metadata().unwrap().len()).unwrap()
}

fn forced() -> Options {
    // A loop device says what its backing file's disk says: force, to test the mechanism.
    Options {
        force_media: true,
        ..Options::default()
    }
}

#[test]
fn relocation_lays_the_files_out_in_first_access_order_and_keeps_their_data() {
    let Some(mut img) = Ext4Image::new(96) else {
        return;
    };
    let paths = interleaved_files(img.path(), 12, 512 * 1024);
    // Pack order (as a rotating disk's pack is, by where the files lie): every third file
    // first. First-access order, the one the region is laid out in: another, the reverse
    // of the order written. One file only half used (it still moves whole: it is under
    // WHOLE_FILE_MAX).
    let mut order: Vec<usize> = (0..12).filter(|i| i % 3 == 0).collect();
    order.extend((0..12).filter(|i| i % 3 != 0));
    let entries: Vec<Entry> = order
        .iter()
        .map(|&i| {
            let mut e = if i == 4 {
                entry(&paths[i], &[(0, 128 * 1024), (256 * 1024, 64 * 1024)])
            } else {
                entry(&paths[i], &[(0, 512 * 1024)])
            };
            e.first_access = 11 - i as u32;
            e
        })
        .collect();
    let p = pack(entries);
    let sums: Vec<u64> = paths.iter().map(|p| checksum(p)).collect();
    let before: Vec<usize> = paths.iter().map(|p| extents(p).len()).collect();
    let total_before: usize = before.iter().sum();
    assert!(
        total_before >= 2 * paths.len(),
        "the set-up did not fragment the files: {before:?}"
    );

    // A dry run says what it would do and moves nothing.
    let mut seen = 0;
    let dry = relocate::relocate(
        &p,
        &Options {
            dry_run: true,
            ..forced()
        },
        &mut |_| seen += 1,
    )
    .unwrap();
    assert_eq!(seen, 12);
    assert!(
        dry.files.iter().all(|f| f.outcome == Outcome::Planned),
        "{dry:?}"
    );
    assert_eq!(dry.region_bytes, 12 * 512 * 1024);
    assert!(dry.requests_after < dry.requests_before, "{dry:?}");
    assert_eq!(
        dry.files
            .iter()
            .map(|f| f.extents_before as usize)
            .sum::<usize>(),
        total_before
    );
    let now: Vec<usize> = paths.iter().map(|p| extents(p).len()).collect();
    assert_eq!(now, before, "a dry run moved something");

    let r = relocate::relocate(&p, &forced(), &mut |_| {}).unwrap();
    eprintln!(
        "extents before {before:?}; requests {} -> {}; region {} bytes in {} runs",
        r.requests_before, r.requests_after, r.region_bytes, r.region_runs
    );
    for f in &r.files {
        assert!(matches!(f.outcome, Outcome::Moved { .. }), "{f:?}");
    }
    assert!(r.requests_after < r.requests_before, "{r:?}");
    for (i, n) in before.iter().enumerate() {
        let x = extents(&paths[i]).len();
        assert!(
            x <= (*n).max(1) && x < total_before,
            "file {i}: {x} extents, {n} before"
        );
    }
    // The report is in first-access order.
    let reported: Vec<&Path> = r.files.iter().map(|f| f.path.as_path()).collect();
    let backwards: Vec<&Path> = paths.iter().rev().map(|p| p.as_path()).collect();
    assert_eq!(reported, backwards);
    // What replay reads, in first-access order, on the device: one run (or the few the
    // region came in); in pack order it would be many. File 4's unread middle and tail went
    // to the region's cold part, after the rest.
    let mut runs = 0;
    let mut end = None;
    for e in &p.in_access_order().entries {
        let x = extents(&e.path);
        for range in &e.ranges {
            for piece in &x {
                let s = piece.logical.max(range.offset);
                let t = (piece.logical + piece.length).min(range.offset + range.len);
                if s >= t {
                    continue;
                }
                let phys = piece.physical + (s - piece.logical);
                if end != Some(phys) {
                    runs += 1;
                }
                end = Some(phys + (t - s));
            }
        }
    }
    assert!(
        runs as u64 <= r.region_runs.max(1),
        "{runs} runs in first-access order, the region came in {}",
        r.region_runs
    );
    assert!(runs <= 3, "{runs} runs: not contiguous ({r:?})");
    eprintln!("after: {runs} runs through what replay reads, in first-access order");
    // File 4: its two read ranges one after the other, its unread pieces after all of that.
    let x4 = extents(&paths[4]);
    let at = |off: u64| {
        x4.iter()
            .find(|x| x.logical <= off && off < x.logical + x.length)
            .map(|x| x.physical + (off - x.logical))
            .unwrap()
    };
    assert_eq!(at(256 * 1024), at(0) + 128 * 1024, "{x4:?}");
    assert!(at(128 * 1024) > at(256 * 1024), "{x4:?}");

    // The data is the data, read back from the image after a fresh mount; the pack still
    // matches every file (inode, size, mtime unchanged); the filesystem is clean.
    img.unmount();
    img.mount();
    for (i, path) in paths.iter().enumerate() {
        assert_eq!(checksum(path), sums[i], "{} changed", path.display());
    }
    for e in &p.entries {
        assert!(
            replay::check_entry(e).is_ok(),
            "{} no longer matches",
            e.path.display()
        );
    }
    let out = img.fsck();
    assert!(out.is_ok(), "e2fsck: {out:?}");
}

#[test]
fn refuses_tmpfs_and_read_only_filesystems_by_name() {
    // tmpfs: /dev/shm where there is one, else a tmpfs mounted for the test.
    let shm = Path::new("/dev/shm");
    if ::sys::statfs(shm).map(|s| s.fs_type).ok() != Some(0x0102_1994) {
        testkit::skip("no tmpfs at /dev/shm");
        return;
    }
    let t = tempfile::tempdir_in(shm).unwrap();
    let f = t.path().join("x");
    fs::write(&f, vec![1u8; 8192]).unwrap();
    let e = relocate::relocate(&pack(vec![entry(&f, &[(0, 8192)])]), &forced(), &mut |_| {})
        .unwrap_err();
    assert!(
        matches!(&e, Refusal::NotExt4 { fs, .. } if fs == "tmpfs"),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with(&format!("{} is on tmpfs, not ext4", f.display())),
        "{e}"
    );

    let Some(mut img) = Ext4Image::new(32) else {
        return;
    };
    let f = img.path().join("y");
    fs::write(&f, vec![2u8; 65536]).unwrap();
    let p = pack(vec![entry(&f, &[(0, 65536)])]);
    img.unmount();
    img.mount_with("ro");
    let e = relocate::relocate(&p, &forced(), &mut |_| {}).unwrap_err();
    assert_eq!(
        e,
        Refusal::ReadOnly {
            mount: img.path().to_path_buf()
        }
    );
    assert!(e.to_string().contains("mounted read-only"), "{e}");
}

/// btrfs and XFS, made and loop-mounted here: refused before anything is written, with the
/// reason for each (the host's kernel must have both).
#[test]
fn refuses_btrfs_and_xfs_saying_why() {
    for (fstype, mb, why) in [
        ("btrfs", 128, "BTRFS_IOC_DEFRAG_RANGE"),
        ("xfs", 300, "XFS_IOC_EXCHANGE_RANGE"),
    ] {
        let Some(img) = testkit::ext4::LoopFs::with_type(fstype, mb) else {
            return;
        };
        let f = img.path().join("z");
        fs::write(&f, vec![3u8; 65536]).unwrap();
        let before = extents(&f);
        let e = relocate::relocate(
            &pack(vec![entry(&f, &[(0, 65536)])]),
            &forced(),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(
            matches!(&e, Refusal::NotExt4 { fs, .. } if fs == fstype),
            "{e:?}"
        );
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("{} is on {fstype}, not ext4", f.display())),
            "{text}"
        );
        assert!(text.contains(why), "{text}");
        assert!(
            text.ends_with("Readahead's replay works on it as on ext4"),
            "{text}"
        );
        assert_eq!(extents(&f), before, "nothing moved on {fstype}");
        assert_eq!(fs::read(&f).unwrap(), vec![3u8; 65536]);
    }
}

#[test]
fn refuses_a_nearly_full_filesystem() {
    let Some(img) = Ext4Image::new(32) else {
        return;
    };
    let f = img.path().join("big");
    // 15 MiB of a 32 MiB filesystem: moving it (whole: under WHOLE_FILE_MAX) needs as much
    // again, and the rest would be below 10 % of the filesystem.
    fs::write(&f, vec![3u8; 15 << 20]).unwrap();
    let p = pack(vec![entry(&f, &[(0, 1 << 20)])]);
    let e = relocate::relocate(&p, &forced(), &mut |_| {}).unwrap_err();
    assert!(matches!(e, Refusal::NearlyFull { .. }), "{e:?}");
    assert!(e.to_string().contains("nearly full"), "{e}");
}

/// Free space only in 4 KiB holes (a file filling the filesystem, every other block punched
/// out): the region ext4 gives comes in hundreds of pieces, moving the pack's files (in
/// 16 KiB pieces now) there would make replay worse, so relocation refuses and moves
/// nothing.
#[test]
fn refuses_when_the_region_comes_in_pieces_smaller_than_the_files_have() {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let Some(img) = Ext4Image::new(48) else {
        return;
    };
    let paths = interleaved_files(img.path(), 4, 256 * 1024);
    // Fill every free block: a file written until ENOSPC, closed and synced (which gives
    // back what ext4 had reserved or preallocated for it), then another, until not even
    // 4 KiB more fits.
    let mut fillers = Vec::new();
    for n in 0..64 {
        let path = img.path().join(format!("filler{n}"));
        let mut f = File::create(&path).unwrap();
        let mut wrote = 0u64;
        for chunk in [1 << 20, 4096] {
            let buf = vec![9u8; chunk];
            while f.write_all(&buf).is_ok() {
                wrote += chunk as u64;
            }
        }
        // What a last partial write left is of no matter: the disk is full.
        let _ = f.sync_all();
        drop(f);
        fillers.push(path);
        if wrote == 0 {
            break;
        }
    }
    // Every other block of them punched out: free space in 4 KiB holes only.
    for path in &fillers {
        let f = fs::OpenOptions::new().write(true).open(path).unwrap();
        let len = f.metadata().unwrap().len();
        let mut off = 0;
        while off + 8192 <= len {
            // SAFETY: no pointers; the fd is open.
            let rc = unsafe {
                libc::fallocate(
                    f.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    off as libc::off_t,
                    4096,
                )
            };
            assert_eq!(
                rc,
                0,
                "punching a hole: {}",
                std::io::Error::last_os_error()
            );
            off += 8192;
        }
        f.sync_all().unwrap();
    }
    let p = pack(paths.iter().map(|q| entry(q, &[(0, 256 * 1024)])).collect());
    let sums: Vec<u64> = paths.iter().map(|q| checksum(q)).collect();
    let before: Vec<Vec<sys::Extent>> = paths.iter().map(|q| extents(q)).collect();
    let mut seen = 0;
    let e = relocate::relocate(&p, &forced(), &mut |_| seen += 1).unwrap_err();
    let Refusal::Fragmented {
        runs,
        before: req_before,
        after,
        ..
    } = &e
    else {
        panic!("not refused as fragmented: {e:?}");
    };
    assert!(*runs > 8, "the region came in only {runs} pieces: {e}");
    assert!(after >= req_before, "{e}");
    assert!(e.to_string().contains("fragmented"), "{e}");
    assert_eq!(seen, 0, "a refusal reports no file");
    for (i, q) in paths.iter().enumerate() {
        assert_eq!(checksum(q), sums[i], "{q:?} changed");
        assert_eq!(extents(q), before[i], "{q:?} moved");
    }
}

/// Free space as an aged filesystem has it: mostly 64 KiB holes, a few runs of 2 MiB far
/// from where ext4 starts looking, none as long as the region. Asked for just the region,
/// ext4 gives it in dozens of holes (checked first, on a scratch file); relocation asks for
/// `REGION_CHOICE` times as much and keeps the longest runs, so the files end up in a few.
#[test]
fn the_region_is_made_of_the_longest_free_runs() {
    let Some(mut img) = Ext4Image::new(512) else {
        return;
    };
    // Blocks allocated as each file is written, in order: with delayed allocation they were
    // allocated at writeback, whose batches any other process's `sync` changes (`make unit`
    // runs other tests beside this one), and the holes below came out differently (once 7
    // region runs where alone it is 3 or 4).
    img.unmount();
    img.mount_with("rw,nodelalloc");
    let sync = || {
        std::process::Command::new("sync").status().unwrap();
    };
    let paths = interleaved_files(img.path(), 12, 512 * 1024);
    // Fill the filesystem with 64 KiB files, in order, until it is full.
    let buf = vec![7u8; 64 << 10];
    let mut fillers = Vec::new();
    loop {
        let path = img.path().join(format!("g{:05}", fillers.len()));
        if fs::write(&path, &buf).is_err() {
            let _ = fs::remove_file(&path);
            break;
        }
        fillers.push(path);
        if fillers.len() % 256 == 0 {
            sync();
        }
    }
    sync();
    let n = fillers.len();
    assert!(n > 4000, "only {n} filler files fit");
    // The holes are made by where the fillers lie on the disk, not by the order they were
    // written: without delayed allocation ext4 colours each write's goal by the writing
    // thread's id, so where the first filler went (and where the writing wrapped) moves from
    // run to run; by index, a "stretch" of 32 files could straddle that wrap and come out in
    // pieces (CI once saw a region of 7 runs where the same layout by disk gives 3 or 4).
    // Each filler by where it starts, with its length when it lies in one extent (a few
    // are split, around the block groups' metadata).
    let mut by_disk: Vec<(u64, Option<u64>, usize)> = fillers
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let x = extents(q);
            (x[0].physical, (x.len() == 1).then_some(x[0].length), i)
        })
        .collect();
    by_disk.sort_unstable();
    // The first window of 32 fillers end to end on the disk at or after `from`.
    let contiguous_from = |from: usize| {
        (from..by_disk.len() - 32)
            .find(|&j| {
                let w = &by_disk[j..j + 32];
                w[31].1.is_some()
                    && w.windows(2)
                        .all(|p| p[0].1.is_some_and(|len| p[0].0 + len == p[1].0))
            })
            .expect("32 fillers end to end")
    };
    // Every fourth one by disk order deleted (64 KiB holes everywhere), and four runs of 32
    // (2 MiB) in the filesystem's second half.
    let stretches: Vec<usize> = (0..4).map(|k| contiguous_from(n / 2 + k * n / 9)).collect();
    for (j, &(_, _, i)) in by_disk.iter().enumerate() {
        if j % 4 == 0 || stretches.iter().any(|&s| (s..s + 32).contains(&j)) {
            fs::remove_file(&fillers[i]).unwrap();
        }
    }
    sync();
    let need = 12 * 512 * 1024u64;
    let scratch = img.path().join("scratch");
    let f = File::create(&scratch).unwrap();
    sys::fallocate(&f, need).unwrap();
    let plain = relocate::donor_runs(&sys::fiemap(&f, 0, need).unwrap(), 4096).len();
    drop(f);
    fs::remove_file(&scratch).unwrap();
    sync();
    assert!(
        plain >= 10,
        "the set-up left free runs long enough: a plain allocation of the region came in \
         {plain} pieces"
    );

    // Pack order: the files backwards.
    let p = pack(
        paths
            .iter()
            .rev()
            .map(|q| entry(q, &[(0, 512 * 1024)]))
            .collect(),
    );
    let sums: Vec<u64> = paths.iter().map(|q| checksum(q)).collect();
    let r = relocate::relocate(&p, &forced(), &mut |_| {}).unwrap();
    eprintln!(
        "plain allocation: {plain} pieces; relocation: {} bytes allocated in {} runs, region \
         in {} runs; requests {} -> {}",
        r.allocated_bytes, r.allocated_runs, r.region_runs, r.requests_before, r.requests_after
    );
    for f in &r.files {
        assert!(matches!(f.outcome, Outcome::Moved { .. }), "{f:?}");
    }
    // REGION_CHOICE times the region, or, where that held no long runs (the allocator's goal
    // moves with the pid), all the room there is.
    assert!(r.allocated_bytes >= relocate::REGION_CHOICE * need, "{r:?}");
    assert!(r.allocated_runs > r.region_runs, "{r:?}");
    assert!(
        r.region_runs <= 6 && (r.region_runs as usize) * 8 <= plain,
        "region in {} runs, a plain allocation in {plain}",
        r.region_runs
    );
    assert!(r.requests_after < r.requests_before, "{r:?}");
    // Through the files in pack order, on the device: the region's runs, ascending.
    let mut runs = 0u64;
    let mut end = None;
    let mut last_start = 0;
    for q in paths.iter().rev() {
        for x in extents(q) {
            if end != Some(x.physical) {
                runs += 1;
                assert!(
                    x.physical > last_start,
                    "the region's runs are not ascending"
                );
                last_start = x.physical;
            }
            end = Some(x.physical + x.length);
        }
    }
    assert!(runs <= r.region_runs, "{runs} runs in pack order: {r:?}");
    img.unmount();
    img.mount();
    for (i, q) in paths.iter().enumerate() {
        assert_eq!(checksum(q), sums[i], "{} changed", q.display());
    }
    let out = img.fsck();
    assert!(out.is_ok(), "e2fsck: {out:?}");
}
