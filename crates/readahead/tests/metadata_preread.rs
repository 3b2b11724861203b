//! Replay's metadata pre-read for real: on a loop-mounted ext4 image (testkit's
//! `Ext4Image`, root only), after a fresh mount, `stat` of a pack's files by path reads
//! directory and inode-table blocks from the device; after `replay::preread_metadata` of
//! the ranges `metadata::learn` listed it reads none, because ext4 finds them in the block
//! device's page cache where the pre-read put them.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use readahead::inode_table::Geometry;
use readahead::metadata;
use readahead::pack::{Entry, Header, Pack, Range};
use readahead::replay::{self, ReplayOptions};
use testkit::ext4::Ext4Image;

/// Reads completed by the device holding `dir` (field 1 of its `stat` in sysfs).
fn device_reads(dir: &Path) -> u64 {
    let dev = fs::metadata(dir).unwrap().dev();
    let stat = fs::read_to_string(format!(
        "/sys/dev/block/{}:{}/stat",
        libc::major(dev),
        libc::minor(dev)
    ))
    .unwrap();
    stat.split_whitespace().next().unwrap().parse().unwrap()
}

/// Waits until the device holding `dir` has no read in flight (`inflight` in sysfs).
fn wait_idle(dir: &Path) {
    let dev = fs::metadata(dir).unwrap().dev();
    let inflight = format!(
        "/sys/dev/block/{}:{}/inflight",
        libc::major(dev),
        libc::minor(dev)
    );
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let text = fs::read_to_string(&inflight).unwrap();
        if text.split_whitespace().next() == Some("0") {
            return;
        }
        assert!(Instant::now() < until, "reads still in flight: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Mounts the image afresh: nothing of it cached, and none of ext4's background reads to
/// add I/O of its own.
fn fresh_mount(img: &mut Ext4Image) {
    img.mount_afresh_quiet("rw");
    wait_idle(img.path());
}

/// Device reads made by `stat` of every file.
fn reads_of_stat(dir: &Path, files: &[PathBuf]) -> u64 {
    let before = device_reads(dir);
    for f in files {
        fs::metadata(f).unwrap();
    }
    device_reads(dir) - before
}

#[test]
fn after_the_preread_opening_the_packs_files_reads_nothing() {
    let Some(mut img) = Ext4Image::new(512) else {
        return;
    };
    // Files of the pack between others, 16 to a 4 KiB inode block (256-byte inodes), so
    // that each lies in a block of its own, in directories ext4 spreads over its groups.
    let mut files = Vec::new();
    for d in 0..6 {
        let dir = img.path().join(format!("d{d}"));
        fs::create_dir(&dir).unwrap();
        for i in 0..12 {
            for j in 0..15 {
                fs::write(dir.join(format!("other-{i}-{j}")), b"o").unwrap();
            }
            let p = dir.join(format!("f{i}"));
            fs::write(&p, vec![b'x'; 4096]).unwrap();
            files.push(p);
        }
    }
    // Made before the fresh mounts below: making an entry stats its file, learning reads
    // the directories.
    let entries: Vec<Entry> = files
        .iter()
        .map(|p| {
            let range = Range {
                offset: 0,
                len: 4096,
            };
            Entry::of_file(p.clone(), &fs::metadata(p).unwrap(), vec![range])
        })
        .collect();
    let g = Geometry::read(&fs::File::open(img.image()).unwrap()).unwrap();
    let learn_dev = fs::metadata(img.path()).unwrap().dev();
    let learned = metadata::learn(
        entries.iter().map(|e| (e.path.as_path(), e.dev, e.ino)),
        learn_dev,
        &g,
    );
    // The blocks the files' inodes are in, by the geometry on the image itself.
    let inode_blocks = g.inode_blocks(entries.iter().map(|e| e.ino));
    let inode_bytes: u64 = inode_blocks.iter().map(|r| r.len).sum();
    assert!(
        inode_bytes >= 60 * 4096,
        "{inode_bytes} bytes of inode blocks, 72 files"
    );
    // The learned ranges hold every one of those, and the directories' blocks besides
    // (seven directories: the six and the image's root, one block each at least).
    let holds = |r: &Range| {
        learned
            .iter()
            .any(|l| l.offset <= r.offset && r.end() <= l.end())
    };
    assert!(inode_blocks.iter().all(holds), "{learned:?}");
    let learned_bytes: u64 = learned.iter().map(|r| r.len).sum();
    assert!(learned_bytes >= inode_bytes + 7 * 4096, "{learned:?}");
    assert_eq!(metadata::join(learned.clone()), learned);

    // The pack with its entries on device `dev` (a mount's number may change), with the
    // learned metadata or without (a pack before format 1.2).
    let pack = |dev, with_metadata: bool| Pack {
        header: Header {
            budget_bytes: 1 << 30,
            metadata: if with_metadata {
                learned.clone()
            } else {
                Vec::new()
            },
            ..Header::default()
        },
        entries: entries
            .iter()
            .cloned()
            .map(|e| Entry { dev, ..e })
            .collect(),
    };
    let opts = ReplayOptions {
        root: img.path().to_path_buf(),
        metadata: Some(true),
        ..ReplayOptions::default()
    };

    // Without a pre-read, stat reads directories and inode tables.
    fresh_mount(&mut img);
    let without = reads_of_stat(img.path(), &files);
    assert!(without > 0, "stat read nothing after a fresh mount");

    // With the inode-table blocks alone (what an older pack gets), the directories are
    // still read.
    fresh_mount(&mut img);
    let dev = fs::metadata(img.path()).unwrap().dev();
    let pre = replay::preread_metadata(&pack(dev, false), &opts);
    assert_eq!(pre.bytes, inode_bytes, "{pre:?}");
    wait_idle(img.path());
    let inodes_only = reads_of_stat(img.path(), &files);
    assert!(
        inodes_only > 0 && inodes_only < without,
        "stat read {inodes_only} times after the inode tables alone, {without} without"
    );

    // With the learned metadata, nothing at all.
    fresh_mount(&mut img);
    let dev = fs::metadata(img.path()).unwrap().dev();
    let full = pack(dev, true);
    let pre = replay::preread_metadata(&full, &opts);
    assert_eq!(pre.bytes, learned_bytes, "{pre:?}");
    assert!(
        pre.requests >= 1 && pre.read_bytes >= learned_bytes,
        "{pre:?}"
    );
    wait_idle(img.path());
    let with = reads_of_stat(img.path(), &files);
    assert_eq!(
        with, 0,
        "stat read {with} times after the pre-read ({without} without)"
    );

    // An older pack's entries learned on another device are not this filesystem's.
    let elsewhere = pack(dev + 1, false);
    let other = replay::preread_metadata(&elsewhere, &opts);
    assert_eq!(other.bytes, 0, "{other:?}");

    replay_reads_the_metadata_as_asked(&full, &opts, learned_bytes);
}

/// `replay()` pre-reads the pack's metadata first and says so; switched off, it does not;
/// `auto` (the default) only for a pack learned on a rotating device the boot waited on.
fn replay_reads_the_metadata_as_asked(full: &Pack, opts: &ReplayOptions, learned_bytes: u64) {
    let st = replay::replay(full, opts);
    assert_eq!(
        (st.metadata_bytes, st.files_read),
        (learned_bytes, 72),
        "{st:?}"
    );
    let off = ReplayOptions {
        metadata: Some(false),
        ..opts.clone()
    };
    let st = replay::replay(full, &off);
    assert_eq!((st.metadata_bytes, st.metadata_requests), (0, 0), "{st:?}");

    let auto = ReplayOptions {
        metadata: None,
        ..opts.clone()
    };
    // `auto` (the default): only for a pack learned on a rotating device the boot waited on.
    for (rotational, disk_bound, reads) in [
        (true, true, true),
        (true, false, false),
        (false, true, false),
        (false, false, false),
    ] {
        let mut p = full.clone();
        p.header.rotational = rotational;
        p.header.disk_bound = disk_bound;
        let st = replay::replay(&p, &auto);
        let expect = if reads { learned_bytes } else { 0 };
        assert_eq!(
            st.metadata_bytes, expect,
            "rotational {rotational}, disk bound {disk_bound}: {st:?}"
        );
    }
}

/// Remounting read-only drops the block device's cache (what Debian's `checkroot.sh` does
/// to a read-write root before its fsck); the watch sees the metadata gone and reads it
/// again, and after the remount back to read-write `stat` of every file reads nothing.
#[test]
fn the_watch_reads_the_metadata_again_after_a_read_only_remount() {
    let Some(mut img) = Ext4Image::new(256) else {
        return;
    };
    let mut files = Vec::new();
    for d in 0..4 {
        let dir = img.path().join(format!("d{d}"));
        fs::create_dir(&dir).unwrap();
        for i in 0..10 {
            for j in 0..15 {
                fs::write(dir.join(format!("other-{i}-{j}")), b"o").unwrap();
            }
            let p = dir.join(format!("f{i}"));
            fs::write(&p, b"x").unwrap();
            files.push(p);
        }
    }
    let g = Geometry::read(&fs::File::open(img.image()).unwrap()).unwrap();
    let dev = fs::metadata(img.path()).unwrap().dev();
    let seen: Vec<(&Path, u64, u64)> = files
        .iter()
        .map(|p| (p.as_path(), dev, fs::metadata(p).unwrap().ino()))
        .collect();
    let learned = metadata::learn(seen, dev, &g);
    fresh_mount(&mut img);
    let p = Pack {
        header: Header {
            metadata: learned,
            ..Header::default()
        },
        entries: Vec::new(),
    };
    let opts = ReplayOptions {
        root: img.path().to_path_buf(),
        ..ReplayOptions::default()
    };
    let (dev_file, ranges, request) = replay::metadata_source(&p, &opts).expect("the loop device");
    metadata::preread(&dev_file, &ranges, opts.merge_gap, request)
        .1
        .unwrap();
    wait_idle(img.path());
    let mut watch = metadata::Watch::new(dev_file, ranges).expect("a mapping of the device");
    assert_eq!(
        watch.check(opts.merge_gap, request),
        None,
        "nothing dropped yet"
    );
    assert!(watch.armed(), "the pre-read pages are cached");
    assert_eq!(watch.sample_share(), 1.0);
    assert_eq!(watch.check(opts.merge_gap, request), None, "still cached");

    img.remount("ro");
    let left = watch.sample_share();
    assert!(
        left <= 0.25,
        "a read-only remount left {left} of the metadata cached"
    );
    let (again, share) = watch
        .check(opts.merge_gap, request)
        .expect("the watch reads the metadata again");
    assert_eq!((again.bytes, share), (p.header.metadata_bytes(), left));
    assert_eq!(watch.rereads, 1);
    wait_idle(img.path());
    img.remount("rw");
    let reads = reads_of_stat(img.path(), &files);
    assert_eq!(
        reads, 0,
        "stat read {reads} times after the metadata was read again"
    );
    // Once read again it is armed anew, but no more than MAX_REREADS times in all.
    for _ in 1..metadata::MAX_REREADS {
        assert_eq!(watch.check(opts.merge_gap, request), None);
        assert!(watch.armed());
        img.remount("ro");
        assert!(watch.check(opts.merge_gap, request).is_some());
        wait_idle(img.path());
        img.remount("rw");
    }
    assert_eq!(watch.check(opts.merge_gap, request), None);
    assert!(watch.armed());
    img.remount("ro");
    assert_eq!(
        watch.check(opts.merge_gap, request),
        None,
        "past MAX_REREADS"
    );
    img.remount("rw");
}

/// A root that is no block device's (tmpfs): no pre-read, and no error.
#[test]
fn no_block_device_no_preread() {
    let dir = Path::new("/dev/shm");
    if !dir.is_dir() {
        return;
    }
    let f = dir.join(format!("bootprint-preread-{}", std::process::id()));
    fs::write(&f, b"x").unwrap();
    let md = fs::metadata(&f).unwrap();
    let p = Pack {
        header: Header::default(),
        entries: vec![Entry::of_file(
            f.clone(),
            &md,
            vec![Range { offset: 0, len: 1 }],
        )],
    };
    let opts = ReplayOptions {
        root: dir.to_path_buf(),
        ..ReplayOptions::default()
    };
    let pre = replay::preread_metadata(&p, &opts);
    fs::remove_file(&f).unwrap();
    assert_eq!(pre, Default::default());
}
