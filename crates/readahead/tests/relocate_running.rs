//! The security issue's relocation defects, for real: a running program (a copy of
//! /bin/sleep, running) on a loop-mounted ext4 image (testkit's `Ext4Image`, root only) is
//! replaced by its moved copy while the test changes its directory or its metadata between
//! two steps (relocation's `Hook`, called at each step: the races driven deterministically).
//!
//! - Defect 1: every step of the replacement acts in the directory opened at the start,
//!   whatever its path leads to later; a directory others can write is refused.
//! - Defect 5: the copy carries exactly the original's metadata (no ACL inherited from the
//!   directory, inode flags kept); a change to the original during the run is not reverted;
//!   a run killed while the copy has its temporary name leaves a note, and the copy is
//!   removed by the next run or the next boot (`clean_leftover`).

use std::fs::{self, File};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};

mod common;

use readahead::pack::{Entry, Pack, Range};
use readahead::relocate::{self, Hook, Options, Outcome, Step};
use readahead::sys;
use testkit::ext4::{checksum, interleaved_files, Ext4Image};

fn pack_of(paths: &[PathBuf]) -> Pack {
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
    common::relocation_pack(entries)
}

/// A running program at `dir/name` (a copy of /bin/sleep, mode `mode`), and the files of a
/// pack around it.
struct Running {
    prog: PathBuf,
    child: Child,
    paths: Vec<PathBuf>,
}

impl Running {
    fn start(img: &Ext4Image, dir: &Path, name: &str, mode: u32) -> Running {
        fs::create_dir_all(dir).unwrap();
        let mut paths = interleaved_files(img.path(), 4, 128 * 1024);
        let prog = dir.join(name);
        testkit::copy_program(Path::new("/bin/sleep"), &prog, mode);
        paths.insert(1, prog.clone());
        let child = Command::new(&prog).arg("60").spawn().unwrap();
        // Running: the kernel refuses it for writing.
        for _ in 0..100 {
            if File::options().write(true).open(&prog).is_err() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Running { prog, child, paths }
    }

    fn relocate(&self, opts: &Options) -> Outcome {
        let p = pack_of(&self.paths);
        let report = relocate::relocate(&p, opts, &mut |_| {}).unwrap();
        report
            .files
            .into_iter()
            .find(|f| f.path == self.prog)
            .unwrap()
            .outcome
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn options(hook: impl Fn(Step, &Path) + Send + Sync + 'static) -> Options {
    Options {
        force_media: true,
        hook: Some(Hook(Arc::new(hook))),
        ..Options::default()
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Defect 1: the directory of the program swapped for a symlink to another directory
/// (`etc`, holding a root-only file of the program's name) after the checks: the link and
/// the exchange must not land there. Every step acts in the directory opened first.
#[test]
fn defect1_a_directory_swapped_for_a_symlink_moves_nothing_elsewhere() {
    let Some(img) = Ext4Image::new(64) else {
        return;
    };
    let (bin, etc) = (img.path().join("bin"), img.path().join("etc"));
    fs::create_dir_all(&etc).unwrap();
    let secret = etc.join("shadow");
    fs::write(&secret, "root:secret\n").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o600)).unwrap();
    let secret_ino = fs::metadata(&secret).unwrap().ino();
    let run = Running::start(&img, &bin, "shadow", 0o755);
    let sum = checksum(&run.prog);
    let held = img.path().join("bin.held");
    let (bin2, etc2, held2) = (bin.clone(), etc.clone(), held.clone());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let opts = options(move |step, _| {
        if step == Step::Copied {
            fs::rename(&bin2, &held2).unwrap();
            std::os::unix::fs::symlink(&etc2, &bin2).unwrap();
        }
        // At every step after the swap, etc holds what it held.
        seen2.lock().unwrap().push((step, names(&etc2)));
    });
    let outcome = run.relocate(&opts);
    for (step, in_etc) in seen.lock().unwrap().iter() {
        assert_eq!(in_etc, &["shadow"], "after {step:?}");
    }
    let md = fs::metadata(&secret).unwrap();
    assert_eq!(
        (md.ino(), md.mode() & 0o7777, md.uid()),
        (secret_ino, 0o600, 0)
    );
    assert_eq!(fs::read_to_string(&secret).unwrap(), "root:secret\n");
    // The program's own directory got the copy (the very directory, wherever it is now).
    assert!(matches!(outcome, Outcome::Replaced { .. }), "{outcome:?}");
    assert_eq!(names(&held), ["shadow"]);
    assert_eq!(checksum(&held.join("shadow")), sum);
}

/// Defect 1's class: no copy is made in a directory anyone but root can write.
#[test]
fn defect1_a_directory_others_can_write_is_refused() {
    let Some(img) = Ext4Image::new(64) else {
        return;
    };
    let dir = img.path().join("var-tmp");
    let run = Running::start(&img, &dir, "job", 0o755);
    for (mode, uid) in [(0o1777, 0), (0o755, 1000)] {
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode)).unwrap();
        std::os::unix::fs::chown(&dir, Some(uid), None).unwrap();
        let before = fs::metadata(&run.prog).unwrap().ino();
        match run.relocate(&Options {
            force_media: true,
            ..Options::default()
        }) {
            Outcome::Skipped(why) => assert!(
                why.contains("its directory can be written by others than root"),
                "{why}"
            ),
            other => panic!("{mode:o} uid {uid}: {other:?}"),
        }
        assert_eq!(fs::metadata(&run.prog).unwrap().ino(), before);
        assert_eq!(names(&dir), ["job"]);
    }
}

/// `value` of the POSIX ACL xattr format (linux/posix_acl_xattr.h: version 2, then
/// tag/perm/id entries): user::rwx, user:65534:r-x, group::r-x, mask::r-x, other::---.
fn default_acl_for_nobody() -> Vec<u8> {
    let mut v = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (0x01u16, 7u16, u32::MAX),
        (0x02, 5, 65534),
        (0x04, 5, u32::MAX),
        (0x10, 5, u32::MAX),
        (0x20, 0, u32::MAX),
    ] {
        v.extend(tag.to_le_bytes());
        v.extend(perm.to_le_bytes());
        v.extend(id.to_le_bytes());
    }
    v
}

/// Defect 5: the copy inherited its directory's default ACL (a 0750 root program became
/// runnable by a user) and lost its inode flags. It carries exactly the original's now.
#[test]
fn defect5_the_copy_carries_exactly_the_originals_metadata() {
    let Some(img) = Ext4Image::new(64) else {
        return;
    };
    let dir = img.path().join("sbin");
    let run = Running::start(&img, &dir, "daemon", 0o4750);
    // The default ACL came later than the program: a new file there would get an ACL.
    let d = File::open(&dir).unwrap();
    sys::set_xattr(&d, b"system.posix_acl_default", &default_acl_for_nobody()).unwrap();
    let f = File::open(&run.prog).unwrap();
    // chattr +S +d +A, and an attribute of the user's.
    let flags = sys::inode_flags(&f).unwrap();
    sys::set_inode_flags(&f, flags | 0x8 | 0x40 | 0x80).unwrap();
    sys::set_xattr(&f, b"user.kept", b"yes").unwrap();
    let before = (sys::xattrs(&f).unwrap(), sys::inode_flags(&f).unwrap());
    assert!(
        !before
            .0
            .iter()
            .any(|(n, _)| n == b"system.posix_acl_access"),
        "the original has no ACL of its own"
    );
    let outcome = run.relocate(&options(|_, _| {}));
    assert!(matches!(outcome, Outcome::Replaced { .. }), "{outcome:?}");
    let g = File::open(&run.prog).unwrap();
    let md = g.metadata().unwrap();
    assert_ne!(md.ino(), f.metadata().unwrap().ino());
    assert_eq!(md.mode() & 0o7777, 0o4750);
    assert_eq!(
        sys::xattrs(&g).unwrap(),
        before.0,
        "no ACL inherited, the user's kept"
    );
    assert_eq!(
        sys::inode_flags(&g).unwrap() & 0xC8,
        0xC8,
        "S, d and A kept"
    );
}

/// Defect 5: owner, mode and attributes were read once at the start, so an admin's
/// `chmod u-s` or `setcap -r` during the copy was reverted. A change before the link or
/// before the exchange's check now leaves the original at its name, as changed.
#[test]
fn defect5_metadata_changed_during_the_run_is_not_reverted() {
    let Some(img) = Ext4Image::new(64) else {
        return;
    };
    let dir = img.path().join("bin");
    let run = Running::start(&img, &dir, "suid", 0o4755);
    let ino = fs::metadata(&run.prog).unwrap().ino();
    // `chmod u-s` just after the copy took the original's metadata.
    let opts = options(|step, p| {
        if step == Step::Copied {
            fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
        }
    });
    match run.relocate(&opts) {
        Outcome::Skipped(why) => assert!(why.contains("changed during the run"), "{why}"),
        other => panic!("{other:?}"),
    }
    let md = fs::metadata(&run.prog).unwrap();
    assert_eq!((md.ino(), md.mode() & 0o7777), (ino, 0o755));
    // `setcap -r`'s like: an attribute removed from the original between the link and the
    // exchange (through its descriptor: the name may hold either by then).
    fs::set_permissions(&run.prog, fs::Permissions::from_mode(0o4755)).unwrap();
    sys::set_xattr(&File::open(&run.prog).unwrap(), b"user.cap", b"x").unwrap();
    let original = File::open(&run.prog).unwrap();
    let opts = options(move |step, _| {
        if step == Step::Linked {
            sys::remove_xattr(&original, b"user.cap").unwrap();
        }
    });
    match run.relocate(&opts) {
        Outcome::Skipped(why) => assert!(why.contains("put back"), "{why}"),
        other => panic!("{other:?}"),
    }
    let g = File::open(&run.prog).unwrap();
    assert_eq!(
        g.metadata().unwrap().ino(),
        ino,
        "the original is back at its name"
    );
    assert!(sys::xattrs(&g).unwrap().is_empty(), "and keeps the change");
    assert_eq!(names(&dir), ["suid"], "no copy left");
}

/// Defect 5: a run killed between the link and the exchange left a set-uid root copy
/// `.NAME.bootprint-relocate` for good. The copy's name is noted before the link, so the
/// next run (or the recorder at the next boot done) removes it. The kill is a panic in the
/// hook: the run stops there as a SIGKILL would, its clean-up never reached.
#[test]
fn defect5_a_killed_run_leaves_no_privileged_copy() {
    let Some(img) = Ext4Image::new(64) else {
        return;
    };
    let dir = img.path().join("bin");
    let run = Running::start(&img, &dir, "suid", 0o4755);
    let state = tempfile::tempdir().unwrap();
    let note = relocate::pending_path(&state.path().join("readahead.pack"));
    let note2 = note.clone();
    let mut opts = options(move |step, p| {
        if step == Step::Linked {
            let text = fs::read_to_string(&note2).unwrap();
            assert_eq!(
                text.trim(),
                relocate::copy_name(p).unwrap().display().to_string()
            );
            panic!("killed");
        }
    });
    opts.pending = Some(note.clone());
    let killed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.relocate(&opts)));
    assert!(killed.is_err());
    let left = dir.join(".suid.bootprint-relocate");
    assert_eq!(fs::metadata(&left).unwrap().mode() & 0o7777, 0o4755);
    // The next run removes it first, and replaces the program.
    opts.hook = None;
    let outcome = run.relocate(&opts);
    assert!(matches!(outcome, Outcome::Replaced { .. }), "{outcome:?}");
    assert_eq!(names(&dir), ["suid"]);
    assert!(!note.exists());
    // The boot's clean-up, on the same leftover.
    fs::write(&left, "copy").unwrap();
    fs::write(&note, format!("{}\n", left.display())).unwrap();
    fs::set_permissions(&note, fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(relocate::clean_leftover(&note), Some(left.clone()));
    assert!(!left.exists() && !note.exists());
}
