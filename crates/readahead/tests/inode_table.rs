//! Inode locations for real: files written on an ext4 image (testkit's `Ext4Image`, root
//! only) in both of its block groups, the geometry read from the image file, and at each computed offset the file's own
//! inode record (its size, mtime and link count as `stat` gives them), at the block and
//! offset `debugfs -R imap` names.

use std::fs::{self, File};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::process::Command;

use readahead::inode_table::Geometry;
use testkit::ext4::Ext4Image;

#[test]
fn every_files_inode_is_where_the_geometry_says() {
    let Some(img) = Ext4Image::new(1024) else {
        return;
    };
    // The image has eight block groups of 8192 inodes, in one flex group, so every directory
    // starts in group 0: empty files fill most of it first, so that the files measured lie
    // in both groups. A hard link gives one of them a link count of 2.
    let fill = img.path().join("fill");
    fs::create_dir(&fill).unwrap();
    for i in 0..8100 {
        File::create(fill.join(i.to_string())).unwrap();
    }
    let mut files = Vec::new();
    for d in 0..6 {
        let dir = img.path().join(format!("d{d}"));
        fs::create_dir(&dir).unwrap();
        for i in 0..40 {
            let p = dir.join(format!("f{i}"));
            fs::write(&p, vec![b'x'; 100 * (d * 40 + i + 1)]).unwrap();
            files.push(p);
        }
    }
    fs::hard_link(&files[7], img.path().join("link")).unwrap();
    let status = Command::new("sync")
        .arg("-f")
        .arg(img.path())
        .status()
        .unwrap();
    assert!(status.success());

    let dev = File::open(img.image()).unwrap();
    let g = Geometry::read(&dev).unwrap();
    assert_eq!(g.block_size, 4096);
    assert!(g.inode_tables.len() >= 2, "{g:?}");
    let mut groups = std::collections::BTreeSet::new();
    for p in &files {
        let md = fs::metadata(p).unwrap();
        let at = g.inode_offset(md.ino()).expect("an inode in a group");
        groups.insert((md.ino() - 1) / u64::from(g.inodes_per_group));
        let mut rec = vec![0u8; usize::from(g.inode_size)];
        dev.read_exact_at(&mut rec, at).unwrap();
        let size = u32::from_le_bytes(rec[0x04..0x08].try_into().unwrap());
        let mtime = u32::from_le_bytes(rec[0x10..0x14].try_into().unwrap());
        let links = u16::from_le_bytes(rec[0x1A..0x1C].try_into().unwrap());
        assert_eq!(
            (u64::from(size), i64::from(mtime), u64::from(links)),
            (md.size(), md.mtime(), md.nlink()),
            "{}: inode {} at byte {at}",
            p.display(),
            md.ino()
        );
    }
    assert!(groups.len() >= 2, "every inode in one group: {groups:?}");

    // debugfs agrees, for a few of them.
    if testkit::have_tool_or_skip("debugfs") {
        for p in files.iter().step_by(37) {
            let ino = fs::metadata(p).unwrap().ino();
            let out = Command::new("debugfs")
                .arg("-R")
                .arg(format!("imap <{ino}>"))
                .arg(img.image())
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let at = g.inode_offset(ino).unwrap();
            let want = format!(
                "located at block {}, offset {:#06x}",
                at / g.block_size,
                at % g.block_size
            );
            assert!(text.contains(&want), "inode {ino}: {want:?} not in {text}");
        }
    }

    // All 240 inodes in few blocks: 16 records of 256 bytes to a block.
    let blocks: u64 = g
        .inode_blocks(files.iter().map(|p| fs::metadata(p).unwrap().ino()))
        .iter()
        .map(|r| r.len / g.block_size)
        .sum();
    assert!((15..=60).contains(&blocks), "{blocks} inode-table blocks");
}
