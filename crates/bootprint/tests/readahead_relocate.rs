//! `bootprint readahead relocate` for real: the binary on a loop-mounted ext4 image
//! (testkit's `Ext4Image`, root only). A run killed with SIGKILL part-way leaves every file
//! whole and the filesystem clean (e2fsck -fn); a dry run moves nothing; tmpfs is refused
//! by name; a running program is replaced by its moved copy, whole and with its owner,
//! mode, attributes and times. `bootprint readahead replay`, run by hand on a cold mount, reads the pack into
//! the page cache and says so.

use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use readahead::pack::{Entry, Header, Pack, Range, RootId};
use readahead::sys;
use testkit::ext4::{checksum, interleaved_files, Ext4Image};

/// A pack of `paths` in that order, read whole; the boot first opened them in the reverse
/// order (their first-access ranks), so relocation lays them out backwards.
fn pack_file(paths: &[PathBuf], at: &Path) {
    let entries = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let md = fs::metadata(p).unwrap();
            let mut e = Entry::of_file(
                p.clone(),
                &md,
                vec![Range {
                    offset: 0,
                    len: md.len(),
                }],
            );
            e.first_access = (paths.len() - 1 - i) as u32;
            e
        })
        .collect();
    Pack {
        header: Header {
            created_unix_s: 1,
            kernel_release: "test".into(),
            root: RootId::default(),
            rotational: true,
            relocated: false,
            disk_bound: false,
            budget_bytes: 1 << 30,
            metadata: Vec::new(),
        },
        entries,
    }
    .write_file(at)
    .unwrap();
}

fn extents(p: &Path) -> usize {
    let f = File::open(p).unwrap();
    sys::fiemap(&f, 0, f.metadata().unwrap().len())
        .unwrap()
        .len()
}

#[test]
fn a_relocation_killed_part_way_leaves_every_file_whole() {
    let Some(mut img) = Ext4Image::new(256) else {
        return;
    };
    let paths = interleaved_files(img.path(), 40, 1 << 20);
    let sums: Vec<u64> = paths.iter().map(|p| checksum(p)).collect();
    let before: Vec<usize> = paths.iter().map(|p| extents(p)).collect();
    assert!(
        before.iter().all(|&n| n > 1),
        "the set-up did not fragment the files: {before:?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let pack = tmp.path().join("readahead.pack");
    pack_file(&paths, &pack);

    let mut child = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(["readahead", "relocate", "--force-media", "--pack"])
        .arg(&pack)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill it once it has reported five files done: it is then moving the sixth (or
    // between files).
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while seen.len() < 5 {
        match lines.next() {
            Some(Ok(l)) => seen.push(l),
            _ => break,
        }
    }
    ::sys::kill(child.id() as i32, libc::SIGKILL).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(seen.len(), 5, "it ended before five files: {seen:?}");
    assert!(seen.iter().all(|l| l.contains("moved")), "{seen:?}");
    assert!(!status.success(), "it finished before the kill: {status:?}");
    assert!(
        !Pack::read_file(&pack).unwrap().header.relocated,
        "a killed run marked the pack relocated"
    );

    // Clean, whole, and part of the work done.
    let out = img.fsck();
    assert!(out.is_ok(), "e2fsck after the kill: {out:?}");
    img.mount();
    for (i, p) in paths.iter().enumerate() {
        assert_eq!(checksum(p), sums[i], "{} changed", p.display());
    }
    // It went in first-access order: the last five files first.
    let after: Vec<usize> = paths.iter().map(|p| extents(p)).collect();
    assert!(
        after[35..].iter().all(|&n| n == 1),
        "the first five were reported moved: {after:?}"
    );
    assert!(
        after[..30].iter().zip(&before[..30]).all(|(a, b)| a == b),
        "files after the kill moved: {after:?} (before {before:?})"
    );
    // The donor had no name: nothing but the files and lost+found is left.
    let names: Vec<String> = fs::read_dir(img.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 41, "{names:?}");

    // Run again to the end: every file in one extent, the data unchanged.
    let o = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(["readahead", "relocate", "--force-media", "--pack"])
        .arg(&pack)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("moved 40 files"), "{text}");
    // The pack now says so, and lists the files in the order they now lie in: replay reads
    // it with one thread, as one stream.
    let relocated = Pack::read_file(&pack).unwrap();
    assert!(relocated.header.relocated);
    let listed: Vec<&Path> = relocated.entries.iter().map(|e| e.path.as_path()).collect();
    let backwards: Vec<&Path> = paths.iter().rev().map(|p| p.as_path()).collect();
    assert_eq!(listed, backwards);
    let ranks: Vec<u32> = relocated.entries.iter().map(|e| e.first_access).collect();
    assert_eq!(ranks, (0..40).collect::<Vec<u32>>());
    img.unmount();
    img.mount();
    for (i, p) in paths.iter().enumerate() {
        assert_eq!(checksum(p), sums[i], "{} changed", p.display());
        assert_eq!(extents(p), 1, "{}", p.display());
    }
    let out = img.fsck();
    assert!(out.is_ok(), "e2fsck: {out:?}");
}

#[test]
fn a_running_program_is_replaced_by_its_moved_copy() {
    use std::os::unix::fs::MetadataExt;
    let Some(img) = Ext4Image::new(64) else {
        return;
    };
    let mut paths = interleaved_files(img.path(), 6, 256 * 1024);
    let prog = img.path().join("prog");
    testkit::copy_program(std::path::Path::new("/bin/sleep"), &prog, 0o4751);
    let cpath = std::ffi::CString::new(prog.as_os_str().as_encoded_bytes()).unwrap();
    let attr = c"user.bootprint-test";
    // SAFETY: NUL-terminated path and name; the value's pointer and length agree.
    let rc =
        unsafe { libc::setxattr(cpath.as_ptr(), attr.as_ptr(), b"kept".as_ptr().cast(), 4, 0) };
    assert_eq!(rc, 0, "setxattr: {}", std::io::Error::last_os_error());
    // Set through the path: a descriptor open for writing here could be inherited by another
    // test thread's child and make the program busy (see testkit::copy_program).
    let times = [libc::timespec {
        tv_sec: 1_500_000_000,
        tv_nsec: 123_456_789,
    }; 2];
    // SAFETY: NUL-terminated path; two timespecs, as utimensat reads.
    let rc = unsafe { libc::utimensat(libc::AT_FDCWD, cpath.as_ptr(), times.as_ptr(), 0) };
    assert_eq!(rc, 0, "utimensat: {}", std::io::Error::last_os_error());
    paths.insert(2, prog.clone());
    let sum = checksum(&prog);
    let before = fs::metadata(&prog).unwrap();
    let mut running = Command::new(&prog).arg("60").spawn().unwrap();
    // The kernel refuses to open it for writing while it runs.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let busy = File::options().write(true).open(&prog).unwrap_err();
    assert_eq!(busy.raw_os_error(), Some(libc::ETXTBSY));
    let tmp = tempfile::tempdir().unwrap();
    let pack = tmp.path().join("readahead.pack");
    pack_file(&paths, &pack);

    let o = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(["readahead", "relocate", "--force-media", "--json", "--pack"])
        .arg(&pack)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    let files = j["files"].as_array().unwrap();
    let entry = files
        .iter()
        .find(|f| f["path"] == prog.display().to_string())
        .unwrap();
    assert_eq!(entry["outcome"], "replaced", "{entry}");
    assert_eq!(entry["extents_after"], 1, "{entry}");
    assert!(files.iter().all(|f| f["outcome"] != "skipped"), "{j}");

    // The name holds a new inode with the same bytes, owner, mode, times and attributes;
    // the program still runs (on the old inode), and nothing else is left in the directory.
    let after = fs::metadata(&prog).unwrap();
    assert_ne!(after.ino(), before.ino());
    assert_eq!(entry["new_ino"], after.ino());
    assert_eq!(checksum(&prog), sum);
    assert_eq!(after.mode(), before.mode(), "{:o}", after.mode());
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    assert_eq!(
        (after.mtime(), after.mtime_nsec()),
        (1_500_000_000, 123_456_789)
    );
    let mut value = [0u8; 16];
    // SAFETY: as above; `value` has room for its length.
    let n = unsafe {
        libc::getxattr(
            cpath.as_ptr(),
            attr.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    assert_eq!(n, 4, "getxattr: {}", std::io::Error::last_os_error());
    assert_eq!(&value[..4], b"kept");
    assert!(running.try_wait().unwrap().is_none(), "the program stopped");
    running.kill().unwrap();
    let _ = running.wait();
    assert!(
        !fs::read_dir(img.path()).unwrap().any(|d| d
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("bootprint-relocate")),
        "the copy's temporary name was left"
    );
    // The rewritten pack names the copy's inode: replay takes every entry.
    let p = Pack::read_file(&pack).unwrap();
    assert!(p
        .entries
        .iter()
        .any(|e| e.path == prog && e.ino == after.ino()));
    let o = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(["readahead", "replay", "--json", "--pack"])
        .arg(&pack)
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["skipped"], 0, "{r}");
    assert_eq!(r["files"], 7, "{r}");
}

#[test]
fn a_replay_by_hand_reads_the_pack_into_the_page_cache() {
    let Some(mut img) = Ext4Image::new(64) else {
        return;
    };
    let paths = interleaved_files(img.path(), 12, 96 * 1024);
    let tmp = tempfile::tempdir().unwrap();
    let pack = tmp.path().join("readahead.pack");
    pack_file(&paths, &pack);
    let resident = |p: &Path| {
        let f = File::open(p).unwrap();
        let pages = sys::mincore(&f, f.metadata().unwrap().len()).unwrap();
        pages.iter().filter(|&&r| r).count()
    };
    // A fresh mount: nothing of the files is cached.
    img.unmount();
    img.mount();
    let cold: usize = paths.iter().map(|p| resident(p)).sum();
    assert_eq!(cold, 0, "pages cached after a fresh mount");

    let o = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args([
            "readahead",
            "replay",
            "--json",
            "--merge-gap-kb",
            "0",
            "--pack",
        ])
        .arg(&pack)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(j["files"], 12, "{j}");
    assert_eq!(j["bytes"], 12 * 96 * 1024, "{j}");
    assert_eq!(j["skipped"], 0, "{j}");
    assert_eq!(j["resident"], 12 * 96 * 1024, "{j}");
    assert!(j["mb_s"].as_f64().is_some_and(|r| r > 0.0), "{j}");
    for p in &paths {
        assert_eq!(resident(p), 96 / 4, "{} not all cached", p.display());
    }

    // The text names the pack and the rate; a pack others can write is refused, as the boot
    // refuses it.
    let o = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(["readahead", "replay", "--pack"])
        .arg(&pack)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with(&format!("{}: 12 files", pack.display())),
        "{text}"
    );
    assert!(text.contains(" MB/s"), "{text}");
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&pack, fs::Permissions::from_mode(0o666)).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(["readahead", "replay", "--pack"])
        .arg(&pack)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("lets group or others write it"), "{err}");
}

#[test]
fn a_dry_run_lists_the_files_and_moves_nothing() {
    let Some(img) = Ext4Image::new(64) else {
        return;
    };
    let paths = interleaved_files(img.path(), 6, 256 * 1024);
    let before: Vec<usize> = paths.iter().map(|p| extents(p)).collect();
    let tmp = tempfile::tempdir().unwrap();
    let pack = tmp.path().join("readahead.pack");
    pack_file(&paths, &pack);
    let o = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args([
            "readahead",
            "relocate",
            "--dry-run",
            "--force-media",
            "--pack",
        ])
        .arg(&pack)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // In first-access order: the last file first.
    for (i, p) in paths.iter().enumerate() {
        let line = format!(
            "[{}/6] 0.3 MB in {} extents: would move  {}",
            6 - i,
            before[i],
            p.display()
        );
        assert!(text.contains(&line), "no {line:?} in\n{text}");
    }
    assert!(
        text.contains("dry run: would move 6 files (1.6 MB)"),
        "{text}"
    );
    let after: Vec<usize> = paths.iter().map(|p| extents(p)).collect();
    assert_eq!(after, before);

    let o = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args([
            "readahead",
            "relocate",
            "--dry-run",
            "--force-media",
            "--json",
            "--pack",
        ])
        .arg(&pack)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["files"].as_array().unwrap().len(), 6);
    assert!(
        v["requests_after"].as_u64() < v["requests_before"].as_u64(),
        "{v}"
    );
}

#[test]
fn tmpfs_is_refused_by_name() {
    let shm = Path::new("/dev/shm");
    if ::sys::statfs(shm).map(|s| s.fs_type).ok() != Some(0x0102_1994) {
        testkit::skip("no tmpfs at /dev/shm");
        return;
    }
    let t = tempfile::tempdir_in(shm).unwrap();
    let f = t.path().join("x");
    fs::write(&f, vec![1u8; 8192]).unwrap();
    let pack = t.path().join("p.pack");
    pack_file(std::slice::from_ref(&f), &pack);
    let o = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(["readahead", "relocate", "--pack"])
        .arg(&pack)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{} is on tmpfs, not ext4", f.display())),
        "{err}"
    );
}

/// The files a pack names are opened read-write: a pack others can write is refused, as the
/// boot path refuses it.
#[test]
fn a_pack_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let f = t.path().join("x");
    fs::write(&f, vec![1u8; 8192]).unwrap();
    let pack = t.path().join("p.pack");
    pack_file(std::slice::from_ref(&f), &pack);
    fs::set_permissions(&pack, fs::Permissions::from_mode(0o666)).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bootprint"))
        .args(["readahead", "relocate", "--dry-run", "--pack"])
        .arg(&pack)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("mode 666 lets group or others write it"),
        "{err}"
    );
}
