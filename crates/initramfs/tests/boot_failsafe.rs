//! The initramfs /init's fail-safes (issue 14): a module whose init never returns, a
//! missing `init=`, a root that is not an initramfs. Each test failed before its fix.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use initramfs::boot::{check_initramfs_root, find_init};
use initramfs::loader::{Loader, Waited};
use initramfs::plan::{Plan, Planned};

fn module(name: &str, path: &str, deps: &[&str]) -> Planned {
    Planned {
        name: name.into(),
        path: path.into(),
        optional: false,
        deps: deps.iter().map(|d| d.to_string()).collect(),
        options: String::new(),
    }
}

/// Defect 8: /init joined the module loader with no limit, so a module whose init never
/// returns stalled the boot for ever. A FIFO as the module file stands in for it (opening
/// it blocks, as the kernel would block in the module's init). The wait ends at its
/// limit and names the module still loading.
#[test]
fn a_module_that_never_loads_does_not_hold_the_wait() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let fifo = d.join("lib/modules/x/stuck.ko");
    fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let plan = Plan {
        modules: vec![module("stuck", "/lib/modules/x/stuck.ko", &[])],
        ..Plan::default()
    };
    let mut loader = Loader::start(&plan, d).unwrap();
    let t = Instant::now();
    assert_eq!(loader.failed(), None);
    let waited = loader.wait(Duration::from_millis(800));
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(waited, Waited::Busy(vec!["stuck".to_string()]));
    // Unblock the stuck open so the loader process ends (then it fails: not a module).
    let _ = fs::OpenOptions::new().write(true).open(&fifo);
}

/// The loader's answer comes through: a required module that fails is an error naming it,
/// also seen by the root wait's early check.
#[test]
fn the_loaders_answer_comes_back_from_its_process() {
    let plan = Plan {
        modules: vec![module("nothere", "/lib/modules/x/nothere.ko", &[])],
        ..Plan::default()
    };
    let mut loader = Loader::start(&plan, Path::new("/nonexistent-root")).unwrap();
    match loader.wait(Duration::from_secs(30)) {
        Waited::Done(Err(e)) => assert!(e.contains("cannot load module nothere"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(loader.failed().unwrap().contains("nothere"));
    let empty = Plan::default();
    let mut loader = Loader::start(&empty, Path::new("/")).unwrap();
    assert!(matches!(
        loader.wait(Duration::from_secs(30)),
        Waited::Done(Ok(_))
    ));
}

/// Defect 12: `init=` naming a file missing on the root made /init fail and reboot, in a
/// loop. Like initramfs-tools, it falls back to /sbin/init, /etc/init, /bin/init, /bin/sh.
#[test]
fn a_missing_init_falls_back_to_the_systems_own() {
    let root_tmp = tempfile::tempdir().unwrap();
    let root = root_tmp.path();
    fs::create_dir_all(root.join("sbin")).unwrap();
    fs::create_dir_all(root.join("bin")).unwrap();
    fs::write(root.join("bin/sh"), "").unwrap();
    assert_eq!(
        find_init(root, Some("/usr/lib/bootprint/bootprint-boot")).unwrap(),
        "/bin/sh"
    );
    fs::write(root.join("sbin/init"), "").unwrap();
    assert_eq!(
        find_init(root, Some("/usr/lib/bootprint/bootprint-boot")).unwrap(),
        "/sbin/init"
    );
    assert_eq!(find_init(root, None).unwrap(), "/sbin/init");
    // A dangling absolute symlink is what the exec will resolve after the switch.
    std::os::unix::fs::symlink("/lib/systemd/systemd", root.join("bin/init")).unwrap();
    assert_eq!(find_init(root, Some("/bin/init")).unwrap(), "/bin/init");
    let empty_tmp = tempfile::tempdir().unwrap();
    let empty = empty_tmp.path();
    let e = find_init(empty, Some("/x")).unwrap_err();
    assert!(e.contains("neither /x nor any of /sbin/init"), "{e}");
}

/// Defect 2: the switch deleted the old root's files without checking that `/` was an
/// initramfs. On a disk file system it refuses.
#[test]
fn only_a_ramfs_or_tmpfs_root_is_switched_away_from() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let on_disk = check_initramfs_root(d);
    // The temp directory is on a disk file system on the machines we test on; where it is
    // a tmpfs the check below covers the other side.
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        check_initramfs_root(shm).expect("/dev/shm is a tmpfs");
    }
    let fs_of_tmp = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let tmp_is_tmpfs = fs_of_tmp
        .lines()
        .any(|l| l.contains(" /tmp ") && l.contains(" - tmpfs "));
    if !tmp_is_tmpfs {
        let e = on_disk.unwrap_err();
        assert!(e.contains("is not an initramfs"), "{e}");
    }
}
