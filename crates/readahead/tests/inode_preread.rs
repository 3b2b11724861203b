//! Replay's inode-table pre-read for real: on a loop-mounted ext4 image (testkit's
//! `Ext4Image`, root only), after a fresh mount, `stat` of a pack's files reads inode-table
//! blocks from the device; after `replay::preread_inodes` it reads none, because ext4 finds
//! them in the block device's page cache where the pre-read put them.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use readahead::inode_table::Geometry;
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

/// Mounts the image afresh (nothing of it cached; no lazy inode-table zeroing to add I/O
/// of its own) and lists every directory, so that later lookups read no directory block:
/// what `stat` then reads is inodes.
fn fresh_mount(img: &mut Ext4Image, dirs: &[PathBuf]) {
    img.unmount();
    img.mount_with("rw,noinit_itable");
    for d in dirs {
        assert!(fs::read_dir(d).unwrap().count() > 0);
    }
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
fn after_the_preread_opening_the_packs_files_reads_no_inode() {
    let Some(mut img) = Ext4Image::new(512) else {
        return;
    };
    // Files of the pack between others, 16 to a 4 KiB inode block (256-byte inodes), so
    // that each lies in a block of its own, in directories ext4 spreads over its groups.
    let mut dirs = Vec::new();
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
        dirs.push(dir);
    }
    // Made before the fresh mounts below: making an entry stats its file.
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
    // The pack with its entries on device `dev` (a mount's number may change).
    let pack = |dev| Pack {
        header: Header {
            budget_bytes: 1 << 30,
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
        ..ReplayOptions::default()
    };

    // The blocks the files' inodes are in, by the geometry on the image itself.
    let g = Geometry::read(&fs::File::open(img.image()).unwrap()).unwrap();
    let inos: Vec<u64> = files
        .iter()
        .map(|p| fs::metadata(p).unwrap().ino())
        .collect();
    let want_blocks: u64 = g
        .inode_blocks(inos.iter().copied())
        .iter()
        .map(|r| r.len / g.block_size)
        .sum();
    assert!(want_blocks >= 60, "{want_blocks} inode blocks for 72 files");

    // Without the pre-read, stat reads the inode tables.
    fresh_mount(&mut img, &dirs);
    let without = reads_of_stat(img.path(), &files);
    assert!(without > 0, "stat read nothing after a fresh mount");

    // With it, nothing: every inode block is in the device's page cache.
    fresh_mount(&mut img, &dirs);
    let dev = fs::metadata(img.path()).unwrap().dev();
    let pack = pack(dev);
    let pre = replay::preread_inodes(&pack, &opts);
    assert_eq!(pre.blocks, want_blocks, "{pre:?}");
    assert!(
        pre.requests >= 1 && pre.bytes >= want_blocks * 4096,
        "{pre:?}"
    );
    wait_idle(img.path());
    let with = reads_of_stat(img.path(), &files);
    assert_eq!(
        with, 0,
        "stat read {with} times after the pre-read ({without} without)"
    );

    // Entries learned on another device are not this filesystem's: nothing is read.
    let elsewhere = Pack {
        entries: pack
            .entries
            .iter()
            .cloned()
            .map(|e| Entry { dev: dev + 1, ..e })
            .collect(),
        ..pack.clone()
    };
    let other = replay::preread_inodes(&elsewhere, &opts);
    assert_eq!(other.blocks, 0, "{other:?}");

    // replay() does it first and says so; switched off, it does not.
    let st = replay::replay(&pack, &opts);
    assert_eq!(
        (st.inode_blocks, st.files_read),
        (want_blocks, 72),
        "{st:?}"
    );
    let off = ReplayOptions {
        inode_tables: false,
        ..opts.clone()
    };
    let st = replay::replay(&pack, &off);
    assert_eq!((st.inode_blocks, st.inode_requests), (0, 0), "{st:?}");
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
    let pre = replay::preread_inodes(&p, &opts);
    fs::remove_file(&f).unwrap();
    assert_eq!(pre, Default::default());
}
