//! The runner's built-ins (`rc::builtin`): which scripts they recognise, and what they do
//! for real, in a private mount and UTS namespace (`unshare`), checked in the kernel's own
//! mount table.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use rc::builtin::{self, Builtin, Env};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/initscripts/builtin-root")
}

/// Copies the tree `from` into `to`, replacing files there (regular files and directories
/// only).
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap().flatten() {
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// A scratch copy of the fixture.
fn copy_fixture() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture(), tmp.path());
    tmp
}

fn recognise(root: &Path, b: Builtin) -> Result<Builtin, rc::Error> {
    let script = root.join("etc/init.d").join(b.script());
    builtin::recognise(root, b.script(), &script, b.action())
}

/// Lays Debian 13's changed files (tests/fixtures/initscripts/trixie-changed; the others
/// are byte-equal to 12's) over the tree at `root`.
fn make_trixie(root: &Path) {
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/initscripts/trixie-changed"),
        root,
    );
}

/// Debian 13's copies are recognised as 12's are; a file that is neither release's is
/// refused, named, with both releases in the message.
#[test]
fn on_debian_13_every_builtin_recognises_its_scripts() {
    let tmp = copy_fixture();
    let root = tmp.path();
    make_trixie(root);
    // The fixture's fstab asks for a check of the root; no check: every built-in applies.
    fs::write(root.join("etc/fstab"), "/dev/vda / ext4 defaults 0 0\n").unwrap();
    for b in Builtin::ALL {
        assert_eq!(recognise(root, b), Ok(b), "{}", b.script());
    }
    // 13's vars.sh with an edited checkroot.sh: checkroot.sh alone steps aside.
    let script = root.join("etc/init.d/checkroot.sh");
    let mut text = fs::read(&script).unwrap();
    text.extend_from_slice(b"# local change\n");
    fs::write(&script, text).unwrap();
    let e = recognise(root, Builtin::CheckRoot).unwrap_err();
    assert_eq!(e.kind(), rc::ErrorKind::Refused);
    assert_eq!(e.path(), Some(script.as_path()));
    assert!(e.to_string().contains("not Debian 12's or 13's"), "{e}");
    assert_eq!(recognise(root, Builtin::CheckFs), Ok(Builtin::CheckFs));
}

#[test]
fn debian_12s_own_scripts_are_recognised() {
    let root = fixture();
    for b in Builtin::ALL {
        if matches!(b, Builtin::CheckRoot | Builtin::CheckFs) {
            continue; // the fixture's fstab asks for a check: below
        }
        assert_eq!(recognise(&root, b), Ok(b), "{}", b.script());
    }
    let e =
        builtin::recognise(&root, "urandom", &root.join("etc/init.d/urandom"), "stop").unwrap_err();
    assert!(e.to_string().contains("only start"), "{e}");
    assert_eq!(e.kind(), rc::ErrorKind::Refused);
    // The shutdown's scripts: only stop.
    let e = builtin::recognise(
        &root,
        "umountfs",
        &root.join("etc/init.d/umountfs"),
        "start",
    )
    .unwrap_err();
    assert!(e.to_string().contains("only stop"), "{e}");
    let e =
        builtin::recognise(&root, "udev", &root.join("etc/init.d/urandom"), "start").unwrap_err();
    assert!(e.to_string().contains("no built-in"), "{e}");
}

#[test]
fn an_edited_script_or_library_runs_as_a_script() {
    let root_tmp = copy_fixture();
    let root = root_tmp.path();
    let script = root.join("etc/init.d/mountkernfs.sh");
    let mut text = fs::read(&script).unwrap();
    text.extend_from_slice(b"# local change\n");
    fs::write(&script, text).unwrap();
    let e = recognise(root, Builtin::MountKernFs).unwrap_err();
    assert!(e.to_string().contains("not Debian 12's"), "{e}");
    assert_eq!(recognise(root, Builtin::Urandom), Ok(Builtin::Urandom));
    fs::copy(fixture().join("etc/init.d/mountkernfs.sh"), &script).unwrap();
    // A sourced library edited: every script that sources it declines.
    fs::write(root.join("lib/init/vars.sh"), "VERBOSE=yes\n").unwrap();
    for b in Builtin::ALL {
        if matches!(b, Builtin::SendSigs | Builtin::Reboot | Builtin::Halt) {
            // They do not source it.
            assert_eq!(recognise(root, b), Ok(b));
            continue;
        }
        let e = recognise(root, b).unwrap_err();
        assert!(e.to_string().contains("vars.sh"), "{}: {e}", b.script());
    }
}

#[test]
fn configuration_other_than_the_default_runs_the_script() {
    let root_tmp = copy_fixture();
    let root = root_tmp.path();
    // /etc/default/rcS setting anything (VERBOSE changes what every script prints).
    fs::write(root.join("etc/default/rcS"), "# comment\n\nVERBOSE=yes\n").unwrap();
    let e = recognise(root, Builtin::Hostname).unwrap_err();
    assert!(e.to_string().contains("/etc/default/rcS:3"), "{e}");
    assert_eq!((e.kind(), e.line()), (rc::ErrorKind::Refused, Some(3)));
    assert_eq!(e.path(), Some(root.join("etc/default/rcS").as_path()));
    fs::write(root.join("etc/default/rcS"), "#VERBOSE=no\n").unwrap();
    assert_eq!(recognise(root, Builtin::Hostname), Ok(Builtin::Hostname));
    // A tmpfs size changes mountkernfs.sh's /run/lock and mountdevsubfs.sh's /dev/shm.
    fs::write(root.join("etc/default/tmpfs"), "SHM_SIZE=1G\n").unwrap();
    assert!(recognise(root, Builtin::MountDevSubFs).is_err());
    assert!(recognise(root, Builtin::MountKernFs).is_err());
    assert_eq!(recognise(root, Builtin::Urandom), Ok(Builtin::Urandom));
    fs::write(root.join("etc/default/tmpfs"), "").unwrap();
    // An fstab entry for a point one of them mounts: only that one declines.
    let fstab = root.join("etc/fstab");
    let mut t = fs::read_to_string(&fstab).unwrap();
    t.push_str("tmpfs /dev/shm tmpfs defaults,size=64m 0 0\n");
    fs::write(&fstab, &t).unwrap();
    let e = recognise(root, Builtin::MountDevSubFs).unwrap_err();
    assert!(e.to_string().contains("/dev/shm"), "{e}");
    assert_eq!(
        recognise(root, Builtin::MountKernFs),
        Ok(Builtin::MountKernFs)
    );
    // devpts settings the script would source as shell.
    fs::write(&fstab, "/dev/vda / ext4 defaults 0 1\n").unwrap();
    fs::write(root.join("etc/default/devpts"), "TTYGRP=$(id -g tty)\n").unwrap();
    let e = recognise(root, Builtin::MountDevSubFs).unwrap_err();
    assert!(e.to_string().contains("/etc/default/devpts:1"), "{e}");
    assert_eq!((e.kind(), e.line()), (rc::ErrorKind::Parse, Some(1)));
    fs::write(root.join("etc/default/devpts"), "TTYGRP=5\nTTYMODE=620\n").unwrap();
    assert_eq!(
        recognise(root, Builtin::MountDevSubFs),
        Ok(Builtin::MountDevSubFs)
    );
    // An unknown init-functions hook; SELinux.
    fs::write(root.join("lib/lsb/init-functions.d/50-local"), "echo hi\n").unwrap();
    let e = recognise(root, Builtin::Urandom).unwrap_err();
    assert!(e.to_string().contains("50-local"), "{e}");
    fs::remove_file(root.join("lib/lsb/init-functions.d/50-local")).unwrap();
    fs::create_dir_all(root.join("sbin")).unwrap();
    fs::write(root.join("sbin/restorecon"), "").unwrap();
    assert!(recognise(root, Builtin::MountKernFs).is_err());
    assert_eq!(recognise(root, Builtin::Urandom), Ok(Builtin::Urandom));
}

/// checkroot.sh is a built-in only once nothing is left for the console: the root checked
/// (the initramfs's flag), `fastboot`, or no check asked for in fstab.
#[test]
fn checkroot_is_built_in_only_once_the_root_is_checked() {
    let root_tmp = copy_fixture();
    let root = root_tmp.path();
    let e = recognise(root, Builtin::CheckRoot).unwrap_err();
    assert!(e.to_string().contains("not checked yet"), "{e}");
    // Checked by the initramfs: then the device must be the one mounted on / (here the
    // fixture has no /dev/vda, so the script's own rootdev logic would run).
    fs::create_dir_all(root.join("run/initramfs")).unwrap();
    fs::write(root.join("run/initramfs/fsck-root"), "").unwrap();
    let e = recognise(root, Builtin::CheckRoot).unwrap_err();
    assert!(e.to_string().contains("/dev/vda"), "{e}");
    fs::write(root.join("etc/fstab"), "/dev/vda / ext4 defaults 0 0\n").unwrap();
    assert_eq!(recognise(root, Builtin::CheckRoot), Ok(Builtin::CheckRoot));
    // checkfs.sh: nothing to check when no file system asks for it (or all are mounted).
    assert_eq!(recognise(root, Builtin::CheckFs), Ok(Builtin::CheckFs));
    fs::write(
        root.join("etc/fstab"),
        "/dev/vda / ext4 defaults 0 0\n/dev/vdb /home ext4 defaults 0 2\n",
    )
    .unwrap();
    assert!(recognise(root, Builtin::CheckFs).is_err());
    fs::write(root.join("etc/fstab"), "UUID=0a / ext4 defaults 0 0\n").unwrap();
    assert!(recognise(root, Builtin::CheckRoot)
        .unwrap_err()
        .to_string()
        .contains("findfs"));
    fs::write(root.join("etc/fstab"), "/dev/vda / ext4 defaults 0 0\n").unwrap();
    // It runs mountkernfs.sh and mountdevsubfs.sh again: those must be Debian's too.
    fs::write(root.join("etc/init.d/mountdevsubfs.sh"), "#!/bin/sh\n").unwrap();
    assert!(recognise(root, Builtin::CheckRoot)
        .unwrap_err()
        .to_string()
        .contains("mountdevsubfs.sh"));
}

/// Set by the outer test for the inner one, which runs in its own namespaces.
const INNER: &str = "BOOTPRINT_BUILTIN_TEST_INNER";

#[test]
fn builtins_mount_and_write_as_the_scripts_do_in_a_private_namespace() {
    if !testkit::is_root() {
        testkit::skip("needs root (mount(2) in a private mount namespace)");
        return;
    }
    if !testkit::have_tool_or_skip("unshare") {
        return;
    }
    let out = Command::new("unshare")
        .args(["--mount", "--uts", "--propagation", "private"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "inner_builtins_in_namespace",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(INNER, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "inner test failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "the inner test did not run:\n{text}"
    );
}

/// (fstype, options, super options) of the mount at `point`, from mountinfo.
fn mount_of(proc_dir: &Path, point: &Path) -> Option<(String, String, String)> {
    let info = fs::read_to_string(proc_dir.join("self/mountinfo")).unwrap();
    let p = point.to_string_lossy();
    info.lines().rev().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        let dash = f.iter().position(|x| *x == "-")?;
        (f[4] == p).then(|| {
            (
                f[dash + 1].to_string(),
                f[5].to_string(),
                f[dash + 3].to_string(),
            )
        })
    })
}

fn mount_count(proc_dir: &Path) -> usize {
    fs::read_to_string(proc_dir.join("self/mountinfo"))
        .unwrap()
        .lines()
        .count()
}

fn sh_mount(src: &str, point: &Path, fstype: &str, opts: &str) {
    fs::create_dir_all(point).unwrap();
    let st = Command::new("mount")
        .args(["-t", fstype, "-o", opts, src])
        .arg(point)
        .status()
        .unwrap();
    assert!(st.success(), "mount {fstype} on {}", point.display());
}

#[test]
#[ignore = "run by builtins_mount_and_write_as_the_scripts_do_in_a_private_namespace"]
fn inner_builtins_in_namespace() {
    if std::env::var_os(INNER).is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // The scratch root as an initramfs leaves it: /run, /proc, /sys, /dev mounted.
    sh_mount("tmpfs", root, "tmpfs", "mode=755");
    let root = fs::canonicalize(root).unwrap();
    sh_mount(
        "tmpfs",
        &root.join("run"),
        "tmpfs",
        "nosuid,nodev,noexec,size=10%,mode=755",
    );
    sh_mount("proc", &root.join("proc"), "proc", "nosuid,nodev,noexec");
    sh_mount("sysfs", &root.join("sys"), "sysfs", "nosuid,nodev,noexec");
    sh_mount("udev", &root.join("dev"), "tmpfs", "nosuid,mode=755");
    fs::create_dir_all(root.join("etc/default")).unwrap();
    fs::create_dir_all(root.join("var/lib/urandom")).unwrap();
    fs::copy(
        fixture().join("etc/default/devpts"),
        root.join("etc/default/devpts"),
    )
    .unwrap();
    fs::write(root.join("etc/hostname"), "bp-builtin-test\n").unwrap();
    let proc_dir = root.join("proc");
    let env = Env {
        root: root.to_path_buf(),
        proc_dir: proc_dir.clone(),
        urandom: PathBuf::from("/dev/urandom"),
        fault: false,
    };

    // The fault switch: the first step is done, then the built-in fails.
    let faulty = Env {
        fault: true,
        ..env.clone()
    };
    let e = builtin::run(Builtin::MountKernFs, &faulty).unwrap_err();
    assert!(e.to_string().contains(builtin::FAULT_ENV), "{e}");
    assert_eq!(e.kind(), rc::ErrorKind::BuiltinFailed);
    assert!(root.join("run/sendsigs.omit.d").is_dir());
    assert_eq!(mount_of(&proc_dir, &root.join("run/lock")), None);

    builtin::run(Builtin::MountKernFs, &env).unwrap();
    let (t, o, s) = mount_of(&proc_dir, &root.join("run/lock")).expect("/run/lock mounted");
    assert_eq!(t, "tmpfs");
    for flag in ["nosuid", "nodev", "noexec"] {
        assert!(o.split(',').any(|x| x == flag), "{o}");
    }
    // tmpfs shows its mode only when it is not the default 1777: look at the directory.
    assert!(s.contains("size=5120k"), "{s}");
    let mode = |p: &str| fs::metadata(root.join(p)).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode("run/lock"), 0o1777);
    assert!(root.join("run/.tmpfs").is_file() && root.join("run/lock/.tmpfs").is_file());
    assert_eq!(mode("run/sendsigs.omit.d"), 0o755);
    let has = |fs_name: &str| {
        fs::read_to_string(proc_dir.join("filesystems"))
            .unwrap()
            .lines()
            .any(|l| l.ends_with(fs_name))
    };
    if has("securityfs") && root.join("sys/kernel/security").is_dir() {
        let m = mount_of(&proc_dir, &root.join("sys/kernel/security"));
        assert_eq!(m.map(|m| m.0).as_deref(), Some("securityfs"));
    }

    builtin::run(Builtin::MountDevSubFs, &env).unwrap();
    let (t, o, s) = mount_of(&proc_dir, &root.join("dev/shm")).expect("/dev/shm mounted");
    assert_eq!(t, "tmpfs");
    assert!(
        o.contains("nosuid") && o.contains("nodev") && o.contains("noexec"),
        "{o}"
    );
    let meminfo = fs::read_to_string(proc_dir.join("meminfo")).unwrap();
    let kib = builtin::shm_size_kib(&meminfo).unwrap();
    // The kernel rounds the size to whole pages.
    assert!(
        s.contains(&format!("size={}k", kib / 4 * 4)),
        "{s} vs {kib}k"
    );
    assert_eq!(mode("dev/shm"), 0o1777);
    let (t, o, s) = mount_of(&proc_dir, &root.join("dev/pts")).expect("/dev/pts mounted");
    assert_eq!(t, "devpts");
    assert!(o.contains("nosuid") && o.contains("noexec"), "{o}");
    // Debian's /etc/default/devpts: TTYGRP=5, TTYMODE=600.
    assert!(s.contains("gid=5") && s.contains("mode=600"), "{s}");
    for (link, target) in [
        ("dev/fd", "/proc/self/fd"),
        ("dev/stdin", "fd/0"),
        ("dev/stdout", "fd/1"),
        ("dev/stderr", "fd/2"),
        ("run/shm", "/dev/shm"),
    ] {
        assert_eq!(
            fs::read_link(root.join(link)).unwrap(),
            Path::new(target),
            "{link}"
        );
    }

    // Idempotent, as the scripts are: a second run mounts nothing more.
    let before = mount_count(&proc_dir);
    builtin::run(Builtin::MountKernFs, &env).unwrap();
    builtin::run(Builtin::MountDevSubFs, &env).unwrap();
    assert_eq!(mount_count(&proc_dir), before);

    checkroot_remounts_what_is_mounted(&env, &root, &proc_dir, before);
    urandom_and_hostname(&env, &root, &proc_dir);

    // umountroot: the root read-only, by the script's `mount -n -o remount,ro ...`, its
    // other mounts left as they were; again, and nothing changes.
    let rw = |p: &Path| mount_of(&proc_dir, p).map(|m| m.1.split(',').next() == Some("rw"));
    assert_eq!(rw(&root), Some(true));
    builtin::run(Builtin::UmountRoot, &env).unwrap();
    assert_eq!(rw(&root), Some(false));
    assert_eq!(rw(&root.join("run")), Some(true));
    builtin::run(Builtin::UmountRoot, &env).unwrap();
    assert_eq!(rw(&root), Some(false));
    assert_eq!(mount_count(&proc_dir), before);

    // /run not mounted yet: the script's job, so the built-in declines.
    let tmp = tempfile::tempdir().unwrap();
    let bare = tmp.path();
    fs::create_dir_all(bare.join("run")).unwrap();
    let bare_env = Env {
        root: fs::canonicalize(bare).unwrap(),
        ..env.clone()
    };
    let e = builtin::run(Builtin::MountKernFs, &bare_env).unwrap_err();
    assert!(e.to_string().contains("/run is not mounted"), "{e}");
}

/// checkroot.sh with nothing to check: the root and every kernel file system remounted
/// with the same options, nothing mounted more (`before` mounts), /etc/mtab a link to
/// /proc/mounts.
fn checkroot_remounts_what_is_mounted(env: &Env, root: &Path, proc_dir: &Path, before: usize) {
    fs::write(
        root.join("etc/fstab"),
        "tmpfs / tmpfs defaults 0 0\nproc /proc proc defaults 0 0\n",
    )
    .unwrap();
    let options = |p: &str| mount_of(proc_dir, &root.join(p)).map(|m| (m.1, m.2));
    let before_opts: Vec<_> = ["run", "run/lock", "proc", "sys", "dev/shm", "dev/pts"]
        .iter()
        .map(|p| options(p))
        .collect();
    builtin::run(Builtin::CheckRoot, env).unwrap();
    assert_eq!(mount_count(proc_dir), before);
    let after_opts: Vec<_> = ["run", "run/lock", "proc", "sys", "dev/shm", "dev/pts"]
        .iter()
        .map(|p| options(p))
        .collect();
    assert_eq!(after_opts, before_opts);
    assert_eq!(
        fs::read_link(root.join("etc/mtab")).unwrap(),
        Path::new("/proc/mounts")
    );
}

/// urandom: a new seed of the pool's size, for root only, different each time;
/// hostname.sh: this namespace's own host name.
fn urandom_and_hostname(env: &Env, root: &Path, proc_dir: &Path) {
    builtin::run(Builtin::Urandom, env).unwrap();
    let seed = root.join("var/lib/urandom/random-seed");
    let pool: u64 = fs::read_to_string(proc_dir.join("sys/kernel/random/poolsize"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let m = fs::metadata(&seed).unwrap();
    assert_eq!(m.len(), pool.div_ceil(8));
    assert_eq!(m.mode() & 0o777, 0o600);
    let first = fs::read(&seed).unwrap();
    builtin::run(Builtin::Urandom, env).unwrap();
    assert_ne!(fs::read(&seed).unwrap(), first);

    // hostname.sh: this namespace's own host name.
    builtin::run(Builtin::Hostname, env).unwrap();
    let name = fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(name.trim(), "bp-builtin-test");
}

/// A copy of the Debian 12 fixture tree (scripts, insserv.conf, links) to plan runlevel S.
fn debian_tree() -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/initscripts/debian-bookworm");
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path();
    // `src/.`: the tree's contents into the (existing) temporary directory.
    let st = Command::new("cp")
        .arg("-a")
        .arg(src.join("."))
        .arg(dst)
        .status()
        .unwrap();
    assert!(st.success());
    tmp
}

/// (udev interactive, mountdevsubfs.sh waits for udev) in the runlevel S plan.
fn udev_in_plan(root: &Path, cfg: &rc::run::Config) -> (bool, bool) {
    let sys = rc::system::System::load(root).unwrap();
    let plan = rc::run::Plan::start(
        &sys,
        rc::system::Runlevel::S,
        cfg,
        &rc::durations::Durations::default(),
        None,
    );
    let id = |n: &str| plan.tasks.iter().position(|t| t.name == n).unwrap();
    let (udev, freed) = (id("udev"), id(rc::udev::FREED));
    (
        plan.tasks[udev].interactive,
        plan.tasks[freed].preds.contains(&udev),
    )
}

#[test]
fn udev_runs_beside_the_path_only_where_devtmpfs_is_enough() {
    let root_tmp = debian_tree();
    let root = root_tmp.path();
    let on = rc::run::Config::default();
    let off = rc::run::Config {
        udev_off_path: false,
        ..rc::run::Config::default()
    };
    // Debian's scripts, disks by kernel name: udev is neither alone nor waited for.
    fs::write(
        root.join("etc/fstab"),
        "/dev/vda / ext4 defaults 0 1\nproc /proc proc defaults 0 0\n",
    )
    .unwrap();
    assert_eq!(rc::udev::off_path(root), Ok(()));
    assert_eq!(udev_in_plan(root, &on), (false, false));
    // As Debian runs it: switched off, or wherever the path may need what udev makes.
    assert_eq!(udev_in_plan(root, &off), (true, true));
    fs::write(root.join("etc/fstab"), "UUID=0a1b / ext4 defaults 0 1\n").unwrap();
    let e = rc::udev::off_path(root).unwrap_err();
    assert!(e.to_string().contains("/etc/fstab:1: UUID=0a1b"), "{e}");
    assert_eq!((e.kind(), e.line()), (rc::ErrorKind::Refused, Some(1)));
    assert_eq!(udev_in_plan(root, &on), (true, true));
    fs::write(root.join("etc/fstab"), "/dev/sda1 / ext4 defaults 0 1\n").unwrap();
    fs::write(
        root.join("etc/crypttab"),
        "# none\nhome /dev/sda2 none luks\n",
    )
    .unwrap();
    assert!(rc::udev::off_path(root)
        .unwrap_err()
        .to_string()
        .contains("/etc/crypttab:2"));
    assert_eq!(udev_in_plan(root, &on), (true, true));
    fs::remove_file(root.join("etc/crypttab")).unwrap();
    let udev = root.join("etc/init.d/udev");
    let mut t = fs::read(&udev).unwrap();
    t.extend_from_slice(b"# edited\n");
    fs::write(&udev, t).unwrap();
    assert!(rc::udev::off_path(root)
        .unwrap_err()
        .to_string()
        .contains("not Debian 12's or 13's"));
    assert_eq!(udev_in_plan(root, &on), (true, true));
    // Debian 13's udev script (initscripts 3.14) runs beside the path as 12's does.
    make_trixie(root);
    assert_eq!(rc::udev::off_path(root), Ok(()));
    assert_eq!(udev_in_plan(root, &on), (false, false));
}

/// mountall.sh's run_migrate: an old directory becomes a link to its /run place; a link
/// pointing elsewhere is replaced; the right link is left alone.
#[test]
fn run_migrate_links_the_old_places_as_the_script_does() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::create_dir_all(root.join("var/run")).unwrap();
    fs::write(root.join("var/run/stale.pid"), "1").unwrap();
    fs::create_dir_all(root.join("run/lock")).unwrap();
    std::os::unix::fs::symlink("../run/lock", root.join("var/lock")).unwrap();
    std::os::unix::fs::symlink("/dev/shm", root.join("run/shm")).unwrap();
    let env = Env {
        root: root.to_path_buf(),
        proc_dir: PathBuf::from("/proc"),
        urandom: PathBuf::from("/dev/urandom"),
        fault: false,
    };
    for (old, run) in [
        ("/var/run", "/run"),
        ("/var/lock", "/run/lock"),
        ("/run/shm", "/dev/shm"),
    ] {
        builtin::mountall::run_migrate(&env, old, run).unwrap();
        assert_eq!(
            fs::read_link(root.join(&old[1..])).unwrap(),
            Path::new(run),
            "{old}"
        );
    }
    // The mountall built-in is recognised on Debian's files and default configuration.
    assert_eq!(
        recognise(&fixture(), Builtin::MountAll),
        Ok(Builtin::MountAll)
    );
    let copy_tmp = copy_fixture();
    let copy = copy_tmp.path();
    fs::write(copy.join("etc/fstab"), "/dev/vda / ext4 ro 0 1\n").unwrap();
    assert!(recognise(copy, Builtin::MountAll)
        .unwrap_err()
        .to_string()
        .contains("read-only"));
    fs::write(copy.join("etc/fstab"), "tmpfs /tmp tmpfs defaults 0 0\n").unwrap();
    assert!(recognise(copy, Builtin::MountAll).is_err());
}

/// The shutdown's built-ins (`rc::builtin::shutdown`) on a scratch tree and a proc
/// directory of the test's own: each declines before doing anything where the script
/// would unmount something; umountnfs.sh removes the bootclean flags without following a
/// link (its `halt -w`, after the fault switch's failure here, runs only in the test bed's
/// reboot check: here it would write the host's wtmp); umountfs with nothing to unmount
/// only says so.
#[test]
fn the_shutdowns_builtins_decline_before_acting_where_the_script_would_unmount() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let proc_dir = root.join("fakeproc");
    for d in ["etc", "tmp", "run/lock", "fakeproc"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    let image = "/dev/vda / ext4 rw,relatime 0 0\n\
                 proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n\
                 sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n\
                 tmpfs /run tmpfs rw,nosuid,nodev,noexec,relatime 0 0\n\
                 tmpfs /run/lock tmpfs rw,nosuid,nodev,noexec,relatime 0 0\n\
                 devpts /dev/pts devpts rw,nosuid,noexec,relatime 0 0\n";
    let swaps_header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
    fs::write(proc_dir.join("mounts"), image).unwrap();
    fs::write(proc_dir.join("swaps"), swaps_header).unwrap();
    let env = Env {
        root: root.clone(),
        proc_dir: proc_dir.clone(),
        urandom: PathBuf::from("/dev/null"),
        fault: false,
    };
    // umountfs: nothing to unmount, no swap: done.
    builtin::run(Builtin::UmountFs, &env).unwrap();
    // A swap in use, or a tmpfs it would unmount: the script runs.
    fs::write(
        proc_dir.join("swaps"),
        format!("{swaps_header}/dev/vdb1 partition\t1048572\t0\t-2\n"),
    )
    .unwrap();
    let e = builtin::run(Builtin::UmountFs, &env).unwrap_err();
    assert!(e.to_string().contains("swap in use"), "{e}");
    fs::write(proc_dir.join("swaps"), swaps_header).unwrap();
    fs::write(
        proc_dir.join("mounts"),
        format!("{image}tmpfs /run/user/0 tmpfs rw 0 0\n"),
    )
    .unwrap();
    let e = builtin::run(Builtin::UmountFs, &env).unwrap_err();
    assert!(e.to_string().contains("/run/user/0 to unmount"), "{e}");
    assert_eq!(e.kind(), rc::ErrorKind::BuiltinFailed);

    // umountnfs.sh reads /etc/mtab: an NFS mount there, and nothing is removed.
    let victim = root.join("victim");
    fs::write(&victim, "keep me").unwrap();
    fs::write(root.join("tmp/.clean"), "").unwrap();
    fs::write(root.join("run/lock/.clean"), "").unwrap();
    std::os::unix::fs::symlink(&victim, root.join("run/.clean")).unwrap();
    fs::write(
        root.join("etc/mtab"),
        format!("{image}server:/export /srv/nfs nfs4 rw 0 0\n"),
    )
    .unwrap();
    let e = builtin::run(Builtin::UmountNfs, &env).unwrap_err();
    assert!(e.to_string().contains("/srv/nfs to unmount"), "{e}");
    assert!(root.join("tmp/.clean").exists() && root.join("run/.clean").is_symlink());
    // /sbin/initctl (upstart): the script emits its event.
    fs::write(root.join("etc/mtab"), image).unwrap();
    fs::create_dir_all(root.join("sbin")).unwrap();
    fs::write(root.join("sbin/initctl"), "").unwrap();
    let e = builtin::run(Builtin::UmountNfs, &env).unwrap_err();
    assert!(e.to_string().contains("initctl"), "{e}");
    fs::remove_file(root.join("sbin/initctl")).unwrap();
    // Nothing to unmount: the flags go (the link itself, not what it names); the fault
    // switch stops it before `halt -w`.
    let faulty = Env {
        fault: true,
        ..env.clone()
    };
    let e = builtin::run(Builtin::UmountNfs, &faulty).unwrap_err();
    assert!(e.to_string().contains(builtin::FAULT_ENV), "{e}");
    for flag in ["tmp/.clean", "run/.clean", "run/lock/.clean"] {
        assert!(fs::symlink_metadata(root.join(flag)).is_err(), "{flag}");
    }
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me");

    // sendsigs: only ever declined or failed here, before its `killall5 -15` (run for
    // real it would signal every process of the host): upstart's initctl, then the fault
    // switch after the sync.
    fs::write(root.join("sbin/initctl"), "").unwrap();
    let e = builtin::run(Builtin::SendSigs, &faulty).unwrap_err();
    assert!(e.to_string().contains("initctl"), "{e}");
    fs::remove_file(root.join("sbin/initctl")).unwrap();
    let e = builtin::run(Builtin::SendSigs, &faulty).unwrap_err();
    assert!(e.to_string().contains(builtin::FAULT_ENV), "{e}");
}

/// reboot and halt source /etc/default/halt: a line other than `HALT=word` or
/// `NETDOWN=word` is a parse error naming the file and line, and the script runs.
#[test]
fn reboot_and_halt_read_etc_default_halt_or_leave_it_to_the_script() {
    let tmp = copy_fixture();
    let root = tmp.path();
    assert_eq!(recognise(root, Builtin::Reboot), Ok(Builtin::Reboot));
    let halt = root.join("etc/default/halt");
    fs::write(&halt, "HALT=halt\nNETDOWN=no\n").unwrap();
    assert_eq!(recognise(root, Builtin::Halt), Ok(Builtin::Halt));
    fs::write(&halt, "HALT=halt\n. /etc/halt.local\n").unwrap();
    for b in [Builtin::Reboot, Builtin::Halt] {
        let e = recognise(root, b).unwrap_err();
        assert_eq!((e.kind(), e.line()), (rc::ErrorKind::Parse, Some(2)));
        assert_eq!(e.path(), Some(halt.as_path()));
        assert!(e.to_string().contains("/etc/default/halt:2"), "{e}");
    }
    fs::remove_file(&halt).unwrap();
    assert_eq!(recognise(root, Builtin::Halt), Ok(Builtin::Halt));
}

/// The stop plans of runlevels 0 and 6 on Debian's own files (the bookworm tree with the
/// libraries the scripts source): the shutdown's ends are built-ins, the daemons' stops
/// scripts; with `builtins` off, none is.
#[test]
fn the_stop_plans_take_the_shutdowns_builtins() {
    let tmp = debian_tree();
    let root = tmp.path();
    copy_tree(&fixture(), root);
    let sys = rc::system::System::load(root).unwrap();
    let plan = |rl: u8, cfg: &rc::run::Config| {
        rc::run::Plan::stop(
            &sys,
            rc::system::Runlevel::Num(rl),
            cfg,
            &rc::durations::Durations::default(),
            None,
        )
    };
    let built_in = |p: &rc::run::Plan| -> Vec<(String, Builtin)> {
        p.tasks
            .iter()
            .filter_map(|t| Some((t.name.clone(), t.builtin?)))
            .collect()
    };
    let on = rc::run::Config::default();
    let six = built_in(&plan(6, &on));
    let names: Vec<&str> = six.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "reboot",
            "sendsigs",
            "umountfs",
            "umountnfs.sh",
            "umountroot"
        ]
    );
    assert!(six.iter().all(|(n, b)| b.script() == n));
    let zero = built_in(&plan(0, &on));
    assert!(zero.iter().any(|(_, b)| *b == Builtin::Halt), "{zero:?}");
    assert!(
        zero.iter().any(|(_, b)| *b == Builtin::SendSigs),
        "{zero:?}"
    );
    let off = rc::run::Config {
        builtins: false,
        ..Default::default()
    };
    assert!(built_in(&plan(6, &off)).is_empty());
}
