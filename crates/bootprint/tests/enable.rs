//! `bootprint enable`, `disable` and `status`, the real binary on a fake root: the tree after
//! enable and disable is the tree before, byte for byte and mode for mode; enable and disable
//! are idempotent; levers that cannot work are refused with nothing changed; a failure half
//! way is undone. dpkg-divert is the real one (`--root`); update-grub and the initramfs build
//! are test doubles (`BOOTPRINT_UPDATE_GRUB`, `BOOTPRINT_INITRAMFS_BUILD`), since neither can
//! run on a fake tree. The packaged scripts (packaging/) run under `sh` against the same tree,
//! the GRUB script's output goes through GRUB's own `grub-script-check`, and all of them pass
//! shellcheck. On systemd-boot, kernel-install is a double that writes an entry as
//! 90-loaderentry.install does and runs the packaged plugin (`BOOTPRINT_KERNEL_INSTALL`,
//! `BOOTPRINT_BOOTCTL`).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const KERNEL: &str = "6.1.0-9-amd64";
const BIN: &str = env!("CARGO_BIN_EXE_bootprint");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn packaging(name: &str) -> PathBuf {
    repo().join("packaging").join(name)
}

fn write(path: &Path, text: &str, mode: u32) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// A machine under a temporary directory, with the doubles beside it.
struct Fake {
    dir: tempfile::TempDir,
}

#[derive(Clone, Copy, PartialEq)]
enum Init {
    Sysvinit,
    Systemd,
}

impl Fake {
    fn new(init: Init) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let f = Fake { dir };
        let r = f.root();
        fs::create_dir_all(&r).unwrap();
        fs::create_dir_all(r.join("usr/bin")).unwrap();
        symlink(BIN, r.join("usr/bin/bootprint")).unwrap();
        write(
            &r.join("usr/lib/bootprint/bootprint-boot"),
            "#!/bin/sh\n",
            0o755,
        );
        let wrapper = fs::read_to_string(packaging("startpar-wrapper")).unwrap();
        write(
            &r.join("usr/lib/bootprint/startpar-wrapper"),
            &wrapper,
            0o755,
        );
        match init {
            Init::Sysvinit => {
                write(&r.join("sbin/init"), "sysvinit\n", 0o755);
                write(&r.join("lib/init/rc"), "#!/bin/sh\n", 0o755);
            }
            Init::Systemd => {
                fs::create_dir_all(r.join("sbin")).unwrap();
                symlink("/lib/systemd/systemd", r.join("sbin/init")).unwrap();
            }
        }
        write(&r.join("bin/startpar"), "Debian's startpar\n", 0o755);
        write(&r.join("var/lib/dpkg/diversions"), "", 0o644);
        write(&r.join("var/lib/dpkg/status"), "", 0o644);
        fs::create_dir_all(r.join("var/lib/dpkg/info")).unwrap();
        write(
            &r.join("etc/default/grub"),
            "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX=\"console=ttyS0\"\n",
            0o644,
        );
        f.add_kernel(KERNEL);
        // The doubles: update-grub notes each run; the build writes the image it is asked for
        // and its summary beside it, as the real one does (and fails when the file `fail-build` exists).
        let d = f.doubles();
        write(
            &d.join("update-grub"),
            &format!(
                "#!/bin/sh\necho run >> {}\n",
                d.join("update-grub.log").display()
            ),
            0o755,
        );
        write(
            &d.join("initramfs-build"),
            &format!(
                "#!/bin/sh\n[ -e {} ] && {{ echo 'build refused: root on LVM' >&2; exit 1; }}\n\
                 while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; shift; done\n\
                 echo image > \"$BOOTPRINT_ROOT$out\"\n\
                 echo summary > \"$BOOTPRINT_ROOT$out.txt\"\n",
                d.join("fail-build").display()
            ),
            0o755,
        );
        f
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn doubles(&self) -> PathBuf {
        self.dir.path().join("doubles")
    }

    fn add_kernel(&self, release: &str) {
        let r = self.root();
        write(
            &r.join(format!("boot/vmlinuz-{release}")),
            "kernel\n",
            0o644,
        );
        fs::create_dir_all(r.join(format!("lib/modules/{release}"))).unwrap();
    }

    fn bootprint(&self, args: &[&str]) -> Output {
        self.bootprint_env(args, &[])
    }

    /// [`Fake::bootprint`] with more of the environment (another double).
    fn bootprint_env(&self, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let root = self.root();
        let mut c = Command::new(BIN);
        c.args(args)
            .arg("--root")
            .arg(&root)
            .env("BOOTPRINT_UPDATE_GRUB", self.doubles().join("update-grub"))
            .env(
                "BOOTPRINT_INITRAMFS_BUILD",
                self.doubles().join("initramfs-build"),
            );
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let o = self.bootprint(args);
        assert!(
            o.status.success(),
            "bootprint {args:?}: {}\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    /// Fails with exit 1; returns the message.
    fn fails(&self, args: &[&str]) -> String {
        let o = self.bootprint(args);
        assert_eq!(o.status.code(), Some(1), "bootprint {args:?}");
        String::from_utf8(o.stderr).unwrap()
    }

    fn update_grub_runs(&self) -> usize {
        fs::read_to_string(self.doubles().join("update-grub.log")).map_or(0, |t| t.lines().count())
    }

    fn read(&self, p: &str) -> String {
        fs::read_to_string(self.root().join(p)).unwrap()
    }

    /// Runs a packaged script under sh against the fake root.
    fn script(&self, name: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = Command::new("sh");
        c.arg(packaging(name))
            .args(args)
            .env("BOOTPRINT_ROOT", self.root())
            .env("BOOTPRINT_UPDATE_GRUB", self.doubles().join("update-grub"))
            .env(
                "BOOTPRINT_INITRAMFS_BUILD",
                self.doubles().join("initramfs-build"),
            );
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }
}

/// Every file, directory and link under `root`: kind, mode and content. dpkg's own backup of
/// its diversions list (`diversions-old`, which dpkg-divert writes on each change) is left
/// out: it is dpkg's, not a change bootprint makes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            if rel == Path::new("var/lib/dpkg/diversions-old") {
                continue;
            }
            let md = fs::symlink_metadata(&p).unwrap();
            let content = if md.file_type().is_symlink() {
                fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if md.is_dir() {
                stack.push(p.clone());
                Vec::new()
            } else {
                fs::read(&p).unwrap()
            };
            out.insert(rel, (md.mode(), content));
        }
    }
    out
}

fn have(tool: &str) -> bool {
    testkit::have_tool_or_skip(tool)
}

#[test]
fn enable_all_then_disable_leaves_the_tree_as_it_was() {
    if !have("dpkg-divert") {
        return;
    }
    let f = Fake::new(Init::Sysvinit);
    let before = snapshot(&f.root());
    let out = f.ok(&["enable", "--all", "--default"]);
    assert!(out.contains("update-grub: done"), "{out}");
    assert_eq!(f.update_grub_runs(), 1);
    let dropin = f.read("etc/default/grub.d/bootprint.cfg");
    assert!(
        dropin.contains(
            "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT init=/usr/lib/bootprint/bootprint-boot \
             bootprint.readahead=1 bootprint.modules=1 bootprint.rc=1\"\n"
        ),
        "{dropin}"
    );
    assert!(
        dropin.contains("\nGRUB_DEFAULT=bootprint-initramfs\n"),
        "{dropin}"
    );
    // The runner's hook: Debian's startpar moved aside by dpkg, the wrapper in its place.
    assert_eq!(f.read("bin/startpar.distrib"), "Debian's startpar\n");
    assert_eq!(
        f.read("bin/startpar"),
        fs::read_to_string(packaging("startpar-wrapper")).unwrap()
    );
    let mode = fs::metadata(f.root().join("bin/startpar")).unwrap().mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(
        f.read("var/lib/dpkg/diversions"),
        "/bin/startpar\n/bin/startpar.distrib\nbootprint\n"
    );
    assert_eq!(
        f.read(&format!("boot/bootprint-initrd.img-{KERNEL}")),
        "image\n"
    );
    let manifest = f.read("var/lib/bootprint/enabled");
    for l in [
        "lever record",
        "lever readahead",
        "lever modules",
        "lever rc",
        "lever initramfs",
        "default initramfs",
    ] {
        assert!(manifest.lines().any(|x| x == l), "{l} in {manifest}");
    }
    assert!(
        !manifest.contains("lever late"),
        "sysvinit: no late units: {manifest}"
    );

    // Twice is once.
    let after = snapshot(&f.root());
    let out = f.ok(&["enable", "--all", "--default"]);
    assert!(out.contains("nothing changed"), "{out}");
    assert_eq!(snapshot(&f.root()), after);
    assert_eq!(f.update_grub_runs(), 1);

    let out = f.ok(&["disable"]);
    assert!(
        out.contains("undid the diversion of /bin/startpar"),
        "{out}"
    );
    assert_eq!(f.update_grub_runs(), 2);
    assert_eq!(snapshot(&f.root()), before);
    // Again: nothing to do, exit 0, no update-grub.
    let out = f.ok(&["disable"]);
    assert!(out.contains("nothing to disable"), "{out}");
    assert_eq!(f.update_grub_runs(), 2);
    assert_eq!(snapshot(&f.root()), before);
}

/// Debian 13: /usr is merged by base-files and the startpar package ships
/// `/usr/bin/startpar`, which dpkg's database names. The diversion is of that path (a
/// diversion of `/bin/startpar` would not stop an upgrade of startpar writing over the
/// wrapper), and disable undoes it exactly.
#[test]
fn on_debian_13_the_path_dpkg_names_is_diverted() {
    if !have("dpkg-divert") || !have("dpkg-query") {
        return;
    }
    let f = Fake::new(Init::Sysvinit);
    let r = f.root();
    fs::remove_dir_all(r.join("bin")).unwrap();
    symlink("usr/bin", r.join("bin")).unwrap();
    write(&r.join("usr/bin/startpar"), "Debian's startpar\n", 0o755);
    write(
        &r.join("var/lib/dpkg/status"),
        "Package: startpar\nStatus: install ok installed\nPriority: optional\n\
         Section: admin\nMaintainer: x <x@example.org>\nArchitecture: amd64\n\
         Version: 0.66-1\nDescription: x\n\n",
        0o644,
    );
    write(
        &r.join("var/lib/dpkg/info/startpar.list"),
        "/.\n/usr\n/usr/bin\n/usr/bin/startpar\n",
        0o644,
    );
    let before = snapshot(&r);
    let out = f.ok(&["enable", "--rc"]);
    assert!(
        out.contains("rc: diverted /usr/bin/startpar to /usr/bin/startpar.distrib"),
        "{out}"
    );
    assert_eq!(
        f.read("var/lib/dpkg/diversions"),
        "/usr/bin/startpar\n/usr/bin/startpar.distrib\nbootprint\n"
    );
    let wrapper = fs::read_to_string(packaging("startpar-wrapper")).unwrap();
    assert_eq!(f.read("usr/bin/startpar"), wrapper);
    // The wrapper runs /bin/startpar.distrib: on a merged /usr that is the diverted file.
    assert!(wrapper.contains("exec /bin/startpar.distrib"), "{wrapper}");
    assert_eq!(f.read("bin/startpar.distrib"), "Debian's startpar\n");
    let manifest = f.read("var/lib/bootprint/enabled");
    assert!(
        manifest.contains(
            "diverted /usr/bin/startpar /usr/bin/startpar.distrib\ncreated /usr/bin/startpar\n"
        ),
        "{manifest}"
    );
    // Twice is once: the diversion is found again under the same path.
    let enabled = snapshot(&r);
    assert!(f.ok(&["enable", "--rc"]).contains("nothing changed"));
    assert_eq!(snapshot(&r), enabled);
    let out = f.ok(&["disable"]);
    assert!(
        out.contains("undid the diversion of /usr/bin/startpar"),
        "{out}"
    );
    assert_eq!(snapshot(&r), before);
}

/// Defect 3 of the security issue: disable removed bootprint's images before update-grub,
/// so a failing update-grub left GRUB's default entry loading an initrd that was gone. Now
/// a disable whose update-grub fails changes nothing at all (the machine boots as before),
/// and says so; run again once update-grub works, it undoes everything.
#[test]
fn a_failed_update_grub_in_disable_changes_nothing_and_can_be_retried() {
    if !have("dpkg-divert") {
        return;
    }
    let f = Fake::new(Init::Sysvinit);
    let before = snapshot(&f.root());
    f.ok(&["enable", "--all", "--default"]);
    let enabled = snapshot(&f.root());
    let grub = f.doubles().join("update-grub");
    let good = fs::read_to_string(&grub).unwrap();
    write(
        &grub,
        "#!/bin/sh
exit 1
",
        0o755,
    );
    let e = f.fails(&["disable"]);
    assert!(
        e.contains("nothing was undone") && e.contains("the machine boots as before"),
        "{e}"
    );
    // Byte for byte as enabled: the images GRUB's default entry loads, the drop-in, the
    // wrapper and its diversion, the manifest.
    assert_eq!(snapshot(&f.root()), enabled);
    write(&grub, &good, 0o755);
    let out = f.ok(&["disable"]);
    assert!(out.contains("update-grub: done"), "{out}");
    assert_eq!(snapshot(&f.root()), before);
}

/// Defect 4 of the security issue: with `dpkg-divert --remove` failing, disable left
/// /bin/startpar missing (the wrapper removed, Debian's startpar still diverted). Now the
/// wrapper is put back, the manifest keeps both lines, and GRUB no longer passes
/// bootprint.rc=1, so the wrapper runs Debian's startpar: the next boot is Debian's own.
#[test]
fn a_failed_dpkg_divert_in_disable_puts_the_wrapper_back() {
    if !have("dpkg-divert") {
        return;
    }
    let f = Fake::new(Init::Sysvinit);
    let before = snapshot(&f.root());
    f.ok(&["enable", "--rc"]);
    let wrapper = fs::read_to_string(packaging("startpar-wrapper")).unwrap();
    let divert = f.doubles().join("dpkg-divert");
    write(
        &divert,
        "#!/bin/sh
for a; do [ \"$a\" = --remove ] && { echo 'dpkg-divert: error: locked' >&2; exit 2; }; done
exec dpkg-divert \"$@\"
",
        0o755,
    );
    let o = f.bootprint_env(&["disable"], &[("BOOTPRINT_DPKG_DIVERT", &divert)]);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("failed") && e.contains("lists what is left to undo"),
        "{e}"
    );
    assert_eq!(f.read("bin/startpar"), wrapper);
    let mode = fs::metadata(f.root().join("bin/startpar")).unwrap().mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(f.read("bin/startpar.distrib"), "Debian's startpar\n");
    let manifest = f.read("var/lib/bootprint/enabled");
    assert!(
        manifest.contains("diverted /bin/startpar /bin/startpar.distrib\ncreated /bin/startpar\n"),
        "{manifest}"
    );
    assert!(!manifest.contains("lever "), "{manifest}");
    assert!(!f.root().join("etc/default/grub.d/bootprint.cfg").exists());
    // With dpkg-divert working again, the rest is undone.
    f.ok(&["disable"]);
    assert_eq!(snapshot(&f.root()), before);
}

/// Defect 4 again, with the real dpkg-divert failing the way it does when its database
/// cannot be written (here: made immutable): it moves Debian's startpar back to its name,
/// then fails to record that. Debian's startpar stays at /bin/startpar (not overwritten by
/// the wrapper, not listed for removal), and a later disable finishes the job.
#[test]
fn a_dpkg_divert_that_fails_after_moving_startpar_back_leaves_debians() {
    if !have("dpkg-divert") || !have("chattr") {
        return;
    }
    if !testkit::is_root() {
        return testkit::skip("needs root to make a file immutable (chattr +i)");
    }
    let f = Fake::new(Init::Sysvinit);
    let before = snapshot(&f.root());
    f.ok(&["enable", "--rc"]);
    let db = f.root().join("var/lib/dpkg/diversions");
    let chattr = |flag: &str| {
        assert!(Command::new("chattr")
            .arg(flag)
            .arg(&db)
            .status()
            .unwrap()
            .success());
    };
    chattr("+i");
    let e = f.fails(&["disable"]);
    chattr("-i");
    assert!(
        e.contains("dpkg-divert") && e.contains("lists what is left to undo"),
        "{e}"
    );
    assert_eq!(f.read("bin/startpar"), "Debian's startpar\n");
    assert!(!f.root().join("bin/startpar.distrib").exists());
    let manifest = f.read("var/lib/bootprint/enabled");
    assert!(manifest.contains("diverted /bin/startpar"), "{manifest}");
    assert!(!manifest.contains("created /bin/startpar"), "{manifest}");
    f.ok(&["disable"]);
    assert_eq!(f.read("bin/startpar"), "Debian's startpar\n");
    let mut after = snapshot(&f.root());
    // dpkg's backup of its database is dpkg's; the rest is as before.
    after.remove(Path::new("var/lib/dpkg/diversions-old"));
    assert_eq!(after, before);
}

/// Defect 6 of the security issue: disable deleted whatever the manifest named, outside
/// `--root` too. A manifest naming anything enable does not create is refused (the line
/// named) and nothing is deleted; a link inside the root is resolved in the root.
#[test]
fn disable_deletes_only_what_enable_creates_and_only_in_the_root() {
    let f = Fake::new(Init::Systemd);
    let host = f.dir.path().join("host");
    write(&host.join("file"), "host's\n", 0o644);
    write(&host.join("bootprint.cfg"), "host's\n", 0o644);
    write(
        &f.root().join("etc/passwd"),
        "root:x:0:0::/root:/bin/sh\n",
        0o644,
    );
    for line in [
        "created /../host/file",
        "created /etc/passwd",
        "built 6.1 /../host/file",
        "created-dir /../host",
    ] {
        write(
            &f.root().join("var/lib/bootprint/enabled"),
            &format!("lever record\n{line}\n"),
            0o644,
        );
        let e = f.fails(&["disable"]);
        assert!(e.contains("enabled:2: expected"), "{line}: {e}");
        assert_eq!(f.read("etc/passwd"), "root:x:0:0::/root:/bin/sh\n");
        assert!(host.join("file").exists(), "{line}");
    }
    // An absolute link inside the root: the root's own path, not the host's.
    fs::remove_dir_all(f.root().join("etc/default/grub.d")).ok();
    symlink(&host, f.root().join("etc/default/grub.d")).unwrap();
    write(
        &f.root().join("var/lib/bootprint/enabled"),
        "lever record\ncreated /etc/default/grub.d/bootprint.cfg\n",
        0o644,
    );
    f.ok(&["disable"]);
    assert_eq!(
        fs::read_to_string(host.join("bootprint.cfg")).unwrap(),
        "host's\n"
    );
    assert!(!f.root().join("var/lib/bootprint/enabled").exists());
}

#[test]
fn levers_add_up_and_disable_takes_them_all_back() {
    let f = Fake::new(Init::Systemd);
    let before = snapshot(&f.root());
    f.ok(&["enable", "--readahead"]);
    f.ok(&["enable", "--modules"]);
    let dropin = f.read("etc/default/grub.d/bootprint.cfg");
    assert!(
        dropin.contains("bootprint.readahead=1 bootprint.modules=1\""),
        "{dropin}"
    );
    assert!(
        !dropin.contains("GRUB_DEFAULT"),
        "the default is untouched: {dropin}"
    );
    assert_eq!(f.update_grub_runs(), 2);
    f.ok(&["disable"]);
    assert_eq!(snapshot(&f.root()), before);
}

#[test]
fn all_on_systemd_takes_late_units_instead_of_the_runner() {
    let f = Fake::new(Init::Systemd);
    let before = snapshot(&f.root());
    let out = f.ok(&["enable", "--all"]);
    assert!(out.contains("--all: rc left out: the init script runner replaces sysvinit's startpar, and this system boots systemd"), "{out}");
    let dropin = f.read("etc/default/grub.d/bootprint.cfg");
    assert!(dropin.contains("bootprint.late=1"), "{dropin}");
    assert!(!dropin.contains("bootprint.rc"), "{dropin}");
    assert_eq!(f.read("bin/startpar"), "Debian's startpar\n");
    f.ok(&["disable"]);
    assert_eq!(snapshot(&f.root()), before);
}

/// The root on LVM inside LUKS (Debian's encrypted install), as the root's /proc and /sys
/// show it: `--all` leaves bootprint's initramfs out, naming the layers, and turns every
/// other lever on; `--initramfs` alone is refused with nothing changed.
#[test]
fn all_on_a_root_in_lvm_and_luks_leaves_the_initramfs_out() {
    let f = Fake::new(Init::Sysvinit);
    let r = f.root();
    write(
        &r.join("proc/self/mountinfo"),
        "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/mapper/vg0-root rw\n",
        0o444,
    );
    let sys = r.join("sys");
    let vda3 = sys.join("devices/pci0000:00/0000:00:04.0/virtio1/block/vda/vda3");
    for (name, num, dir, dm) in [
        ("vda3", "254:3", vda3.clone(), None),
        (
            "dm-0",
            "253:0",
            sys.join("devices/virtual/block/dm-0"),
            Some(("vda3_crypt", "CRYPT-LUKS2-0a1b-vda3_crypt", "vda3")),
        ),
        (
            "dm-1",
            "253:1",
            sys.join("devices/virtual/block/dm-1"),
            Some(("vg0-root", "LVM-Xy7Q", "dm-0")),
        ),
    ] {
        write(&dir.join("dev"), &format!("{num}\n"), 0o444);
        for link in ["class/block", "dev/block"] {
            fs::create_dir_all(sys.join(link)).unwrap();
        }
        symlink(&dir, sys.join("class/block").join(name)).unwrap();
        symlink(&dir, sys.join("dev/block").join(num)).unwrap();
        if let Some((dm_name, uuid, under)) = dm {
            write(&dir.join("dm/name"), &format!("{dm_name}\n"), 0o444);
            write(&dir.join("dm/uuid"), &format!("{uuid}\n"), 0o444);
            fs::create_dir_all(dir.join("slaves")).unwrap();
            symlink(
                sys.join("class/block").join(under),
                dir.join("slaves").join(under),
            )
            .unwrap();
        }
    }
    let before = snapshot(&r);
    let e = f.fails(&["enable", "--initramfs"]);
    assert!(
        e.contains("--initramfs: bootprint's initramfs cannot mount this root: the root /dev/dm-1 (vg0-root, an LVM logical volume) on /dev/dm-0 (vda3_crypt, a LUKS dm-crypt mapping) on /dev/vda3"),
        "{e}"
    );
    assert!(e.contains("nothing changed"), "{e}");
    assert_eq!(snapshot(&r), before);
    let out = f.ok(&["enable", "--all"]);
    assert!(
        out.contains("--all: initramfs left out: bootprint's initramfs cannot mount this root: the root /dev/dm-1"),
        "{out}"
    );
    let dropin = f.read("etc/default/grub.d/bootprint.cfg");
    assert!(
        dropin.contains("bootprint.readahead=1 bootprint.modules=1 bootprint.rc=1"),
        "{dropin}"
    );
    assert!(!r
        .join(format!("boot/bootprint-initrd.img-{KERNEL}"))
        .exists());
    f.ok(&["disable"]);
    assert_eq!(snapshot(&r), before);
}

#[test]
fn levers_that_cannot_work_here_are_refused_and_nothing_changes() {
    let f = Fake::new(Init::Systemd);
    let before = snapshot(&f.root());
    let e = f.fails(&["enable", "--rc"]);
    assert!(e.contains("--rc: the init script runner replaces sysvinit's startpar, and this system boots systemd (its lever is --late)"), "{e}");
    assert!(e.contains("nothing changed"), "{e}");

    let s = Fake::new(Init::Sysvinit);
    let e = s.fails(&["enable", "--late"]);
    assert!(e.contains("late units are a systemd lever"), "{e}");

    // No kernel for the initramfs.
    fs::remove_file(f.root().join(format!("boot/vmlinuz-{KERNEL}"))).unwrap();
    let before_nokernel = snapshot(&f.root());
    let e = f.fails(&["enable", "--initramfs"]);
    assert!(e.contains("--initramfs: no kernel is installed"), "{e}");
    assert_eq!(snapshot(&f.root()), before_nokernel);
    fs::write(f.root().join(format!("boot/vmlinuz-{KERNEL}")), "kernel\n").unwrap();

    // No bootprint-boot: init= would name a missing program.
    let bin = f.root().join("usr/lib/bootprint/bootprint-boot");
    fs::remove_file(&bin).unwrap();
    let e = f.fails(&["enable", "--readahead"]);
    assert!(
        e.contains("bootprint-boot is not an executable file"),
        "{e}"
    );
    write(&bin, "#!/bin/sh\n", 0o755);

    // A drop-in bootprint did not write.
    write(
        &f.root().join("etc/default/grub.d/bootprint.cfg"),
        "# mine\n",
        0o644,
    );
    let e = f.fails(&["enable", "--record"]);
    assert!(e.contains("bootprint did not write it"), "{e}");
    fs::remove_file(f.root().join("etc/default/grub.d/bootprint.cfg")).unwrap();
    fs::remove_dir(f.root().join("etc/default/grub.d")).unwrap();

    // No GRUB: update-grub neither in the root nor given.
    let o = Command::new(BIN)
        .args(["enable", "--record", "--root"])
        .arg(f.root())
        .env_remove("BOOTPRINT_UPDATE_GRUB")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("update-grub is not installed"), "{e}");

    assert_eq!(snapshot(&f.root()), before);
    assert_eq!(f.update_grub_runs(), 0);
}

/// The kexec lever: never taken by `--all`; refused where the kernel has no kexec, and on
/// sysvinit without the runner; on with its parameter where it can work, and taken back by
/// disable.
#[test]
fn the_kexec_lever_is_asked_for_by_name_and_needs_the_runner_on_sysvinit() {
    let f = Fake::new(Init::Systemd);
    let before = snapshot(&f.root());
    let e = f.fails(&["enable", "--kexec"]);
    assert!(
        e.contains("--kexec: this kernel has no kexec (no /sys/kernel/kexec_loaded"),
        "{e}"
    );
    assert!(e.contains("nothing changed"), "{e}");
    assert_eq!(snapshot(&f.root()), before);
    write(&f.root().join("sys/kernel/kexec_loaded"), "0\n", 0o444);
    let before = snapshot(&f.root());
    f.ok(&["enable", "--all"]);
    let dropin = f.read("etc/default/grub.d/bootprint.cfg");
    assert!(
        !dropin.contains("bootprint.kexec"),
        "--all leaves it out: {dropin}"
    );
    f.ok(&["enable", "--kexec"]);
    let dropin = f.read("etc/default/grub.d/bootprint.cfg");
    assert!(dropin.contains(" bootprint.kexec=1\""), "{dropin}");
    assert!(f
        .read("var/lib/bootprint/enabled")
        .contains("lever kexec\n"));
    f.ok(&["disable"]);
    assert_eq!(snapshot(&f.root()), before);

    let s = Fake::new(Init::Sysvinit);
    write(&s.root().join("sys/kernel/kexec_loaded"), "0\n", 0o444);
    let before = snapshot(&s.root());
    let e = s.fails(&["enable", "--kexec"]);
    assert!(
        e.contains("--kexec: on sysvinit the kexec is made by bootprint's runner at the end of runlevel 6: turn the runner on too (--rc)"),
        "{e}"
    );
    assert_eq!(snapshot(&s.root()), before);
}

#[test]
fn a_failed_build_undoes_what_the_run_had_done() {
    if !have("dpkg-divert") {
        return;
    }
    let f = Fake::new(Init::Sysvinit);
    let before = snapshot(&f.root());
    write(&f.doubles().join("fail-build"), "", 0o644);
    let e = f.fails(&["enable", "--all"]);
    assert!(e.contains("failed"), "{e}");
    assert!(e.contains("what this run had changed is undone"), "{e}");
    // The diversion made before the build is gone again, the manifest too.
    assert_eq!(snapshot(&f.root()), before);
    assert_eq!(f.update_grub_runs(), 0);
}

#[test]
fn a_startpar_hook_already_in_place_is_left_alone() {
    if !have("dpkg-divert") {
        return;
    }
    // The test bed's image: a local diversion and the wrapper already there.
    let f = Fake::new(Init::Sysvinit);
    let r = f.root();
    let o = Command::new("dpkg-divert")
        .arg("--root")
        .arg(&r)
        .args([
            "--local",
            "--rename",
            "--divert",
            "/bin/startpar.distrib",
            "--add",
            "/bin/startpar",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    fs::copy(packaging("startpar-wrapper"), r.join("bin/startpar")).unwrap();
    fs::set_permissions(r.join("bin/startpar"), fs::Permissions::from_mode(0o755)).unwrap();
    let before = snapshot(&r);
    let out = f.ok(&["enable", "--rc"]);
    assert!(
        out.contains(
            "already the wrapper over /bin/startpar.distrib (a local diversion): left as it is"
        ),
        "{out}"
    );
    assert!(f
        .read("etc/default/grub.d/bootprint.cfg")
        .contains("bootprint.rc=1"));
    f.ok(&["disable"]);
    assert_eq!(snapshot(&r), before);

    // Someone else's diversion to elsewhere: refused.
    let g = Fake::new(Init::Sysvinit);
    write(
        &g.root().join("var/lib/dpkg/diversions"),
        "/bin/startpar\n/bin/startpar.real\nother\n",
        0o644,
    );
    let e = g.fails(&["enable", "--rc"]);
    assert!(
        e.contains("already diverted to /bin/startpar.real by other"),
        "{e}"
    );
}

#[test]
fn kernel_hooks_keep_the_images_current() {
    let f = Fake::new(Init::Systemd);
    let before = snapshot(&f.root());
    // Off: the hooks do nothing.
    f.add_kernel("6.1.0-10-amd64");
    let with_new = snapshot(&f.root());
    let o = f.script("kernel-postinst", &["6.1.0-10-amd64"], &[]);
    assert!(o.status.success() && o.stdout.is_empty() && o.stderr.is_empty());
    assert_eq!(snapshot(&f.root()), with_new);
    fs::remove_file(f.root().join("boot/vmlinuz-6.1.0-10-amd64")).unwrap();
    fs::remove_dir(f.root().join("lib/modules/6.1.0-10-amd64")).unwrap();
    assert_eq!(snapshot(&f.root()), before);

    f.ok(&["enable", "--initramfs"]);
    assert_eq!(f.update_grub_runs(), 1);
    f.add_kernel("6.1.0-10-amd64");
    let o = f.script(
        "kernel-postinst",
        &["6.1.0-10-amd64", "/boot/vmlinuz-6.1.0-10-amd64"],
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        f.read("boot/bootprint-initrd.img-6.1.0-10-amd64"),
        "image\n"
    );
    assert!(f
        .read("var/lib/bootprint/enabled")
        .contains("built 6.1.0-10-amd64 /boot/bootprint-initrd.img-6.1.0-10-amd64\n"));
    // The hook leaves update-grub to Debian's zz-update-grub, which runs after it.
    assert_eq!(f.update_grub_runs(), 1);

    // A failed build does not fail the kernel's installation.
    write(&f.doubles().join("fail-build"), "", 0o644);
    f.add_kernel("6.1.0-11-amd64");
    let o = f.script("kernel-postinst", &["6.1.0-11-amd64"], &[]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("was not built"));
    fs::remove_file(f.doubles().join("fail-build")).unwrap();

    // The kernel goes: its image too.
    fs::remove_file(f.root().join("boot/vmlinuz-6.1.0-10-amd64")).unwrap();
    fs::remove_dir(f.root().join("lib/modules/6.1.0-10-amd64")).unwrap();
    let o = f.script("kernel-postrm", &["6.1.0-10-amd64"], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!f
        .root()
        .join("boot/bootprint-initrd.img-6.1.0-10-amd64")
        .exists());
    assert!(!f
        .read("var/lib/bootprint/enabled")
        .contains("6.1.0-10-amd64"));

    fs::remove_file(f.root().join("boot/vmlinuz-6.1.0-11-amd64")).unwrap();
    fs::remove_dir(f.root().join("lib/modules/6.1.0-11-amd64")).unwrap();
    // 6.1.0-11's build failed half way: its manifest line makes disable remove whatever it
    // left, so the tree is as before all the same.
    f.ok(&["disable"]);
    assert_eq!(snapshot(&f.root()), before);
}

/// A machine that boots systemd-boot (the firmware variable systemd-boot sets is there, and
/// `bootctl is-installed` says yes): bootprint's plugin installed where the package puts it,
/// and a kernel-install double that writes a kernel's entry as 90-loaderentry.install does
/// (from /etc/kernel/cmdline) and then runs the installed plugin as kernel-install would.
fn systemd_boot(f: &Fake) {
    let r = f.root();
    let d = f.doubles();
    let plugin = fs::read_to_string(packaging("kernel-install")).unwrap();
    write(
        &r.join("usr/lib/kernel/install.d/91-bootprint.install"),
        &plugin,
        0o755,
    );
    write(
        &r.join("sys/firmware/efi/efivars/LoaderInfo-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"),
        "systemd-boot 257",
        0o644,
    );
    write(
        &r.join("etc/kernel/cmdline"),
        "root=/dev/vda2 rw console=ttyS0\n",
        0o644,
    );
    write(&d.join("bootctl"), "#!/bin/sh\nexit 0\n", 0o755);
    write(
        &d.join("kernel-install"),
        &format!(
            "#!/bin/sh\nset -e\nR=$BOOTPRINT_ROOT\necho \"$*\" >> {log}\n\
             [ -e {fail} ] && {{ echo 'kernel-install: failed on purpose' >&2; exit 1; }}\n\
             cmd=$1 ver=$2\nboot=/boot/efi token=debian dir=/boot/efi/debian/$2\n\
             mkdir -p \"$R$dir\" \"$R$boot/loader/entries\"\n\
             echo kernel > \"$R$dir/linux\"\n\
             printf 'title Debian GNU/Linux 13 (trixie)\\nversion %s\\nsort-key debian\\noptions %s\\nlinux /debian/%s/linux\\ninitrd /debian/%s/initrd.img\\n' \
               \"$ver\" \"$(cat \"$R/etc/kernel/cmdline\")\" \"$ver\" \"$ver\" > \"$R$boot/loader/entries/$token-$ver.conf\"\n\
             KERNEL_INSTALL_BOOT_ROOT=$boot KERNEL_INSTALL_ENTRY_TOKEN=$token KERNEL_INSTALL_LAYOUT=bls \
               \"$R/usr/lib/kernel/install.d/91-bootprint.install\" \"$cmd\" \"$ver\" \"$dir\" \"/boot/vmlinuz-$ver\"\n",
            log = d.join("kernel-install.log").display(),
            fail = d.join("fail-kernel-install").display(),
        ),
        0o755,
    );
    // The kernel's entry as its installation left it.
    assert!(f
        .kernel_install(&["add", KERNEL, "/boot/vmlinuz-6.1.0-9-amd64"])
        .status
        .success());
}

impl Fake {
    /// The kernel-install double, as the kernel's packages run it.
    fn kernel_install(&self, args: &[&str]) -> Output {
        Command::new(self.doubles().join("kernel-install"))
            .args(args)
            .env("BOOTPRINT_ROOT", self.root())
            .output()
            .unwrap()
    }

    fn sd_env(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("BOOTPRINT_BOOTCTL", self.doubles().join("bootctl")),
            (
                "BOOTPRINT_KERNEL_INSTALL",
                self.doubles().join("kernel-install"),
            ),
        ]
    }

    fn sd(&self, args: &[&str]) -> Output {
        let env = self.sd_env();
        let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
        self.bootprint_env(args, &env)
    }
}

const SD_ENTRY: &str = "boot/efi/loader/entries/debian-6.1.0-9-amd64.conf";
const SD_OURS: &str = "boot/efi/loader/entries/debian-6.1.0-9-amd64-bootprint.conf";

#[test]
fn on_systemd_boot_the_entries_carry_the_levers_and_disable_gives_them_back() {
    if !have("dpkg-divert") {
        return;
    }
    let f = Fake::new(Init::Sysvinit);
    systemd_boot(&f);
    let before = snapshot(&f.root());
    let stock = f.read(SD_ENTRY);

    // --default has no systemd-boot form yet: refused, nothing changed.
    let o = f.sd(&["enable", "--initramfs", "--default"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--default: not on systemd-boot"));
    assert_eq!(snapshot(&f.root()), before);

    let o = f.sd(&["enable", "--all"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("kernel-install add 6.1.0-9-amd64: done"),
        "{out}"
    );
    assert_eq!(f.update_grub_runs(), 0, "GRUB is not this machine's loader");
    assert!(!f.root().join("etc/default/grub.d/bootprint.cfg").exists());
    assert!(f
        .read("var/lib/bootprint/enabled")
        .contains("\nloader systemd-boot\n"));
    let entry = f.read(SD_ENTRY);
    assert!(
        entry.contains(
            "options root=/dev/vda2 rw console=ttyS0 init=/usr/lib/bootprint/bootprint-boot \
             bootprint.readahead=1 bootprint.modules=1 bootprint.rc=1\n"
        ),
        "{entry}"
    );
    let ours = f.read(SD_OURS);
    assert!(
        ours.contains("initrd /debian/6.1.0-9-amd64/bootprint-initrd\n"),
        "{ours}"
    );
    assert!(ours.contains("sort-key debian-bootprint\n"), "{ours}");
    assert!(
        ours.contains("init=/usr/lib/bootprint/bootprint-boot"),
        "{ours}"
    );
    assert_eq!(
        f.read("boot/efi/debian/6.1.0-9-amd64/bootprint-initrd"),
        "image\n"
    );

    let st = String::from_utf8(f.sd(&["status"]).stdout).unwrap();
    assert!(st.contains("boot loader: systemd-boot"), "{st}");
    assert!(!st.contains("GRUB drop-in"), "{st}");

    // A kernel installed later gets both entries through the kernel hooks, as Debian runs
    // them: zz-bootprint builds the image, then zz-systemd-boot runs kernel-install.
    f.add_kernel("6.1.0-10-amd64");
    let o = f.script("kernel-postinst", &["6.1.0-10-amd64"], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = f.kernel_install(&["add", "6.1.0-10-amd64", "/boot/vmlinuz-6.1.0-10-amd64"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(f
        .read("boot/efi/loader/entries/debian-6.1.0-10-amd64.conf")
        .contains("bootprint.rc=1"));
    assert!(f
        .root()
        .join("boot/efi/loader/entries/debian-6.1.0-10-amd64-bootprint.conf")
        .is_file());
    // And goes: its entries with it (kernel-install's own `remove` deletes the rest).
    let o = f.kernel_install(&["remove", "6.1.0-10-amd64"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!f
        .root()
        .join("boot/efi/loader/entries/debian-6.1.0-10-amd64-bootprint.conf")
        .exists());
    assert!(!f
        .root()
        .join("boot/efi/debian/6.1.0-10-amd64/bootprint-initrd")
        .exists());
    fs::remove_file(
        f.root()
            .join("boot/efi/loader/entries/debian-6.1.0-10-amd64.conf"),
    )
    .unwrap();
    fs::remove_dir_all(f.root().join("boot/efi/debian/6.1.0-10-amd64")).unwrap();
    fs::remove_file(f.root().join("boot/vmlinuz-6.1.0-10-amd64")).unwrap();
    fs::remove_dir(f.root().join("lib/modules/6.1.0-10-amd64")).unwrap();
    let o = f.script("kernel-postrm", &["6.1.0-10-amd64"], &[]);
    assert!(o.status.success());

    // disable with kernel-install failing: nothing undone, the entries still boot bootprint.
    write(&f.doubles().join("fail-kernel-install"), "", 0o644);
    let o = f.sd(&["disable"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("nothing was undone") && err.contains("kernel-install"),
        "{err}"
    );
    assert!(f.read("var/lib/bootprint/enabled").contains("lever rc\n"));
    assert!(f.read(SD_ENTRY).contains("bootprint.rc=1"));
    fs::remove_file(f.doubles().join("fail-kernel-install")).unwrap();

    // disable: every entry as kernel-install alone writes it, ours gone; the tree as before.
    let o = f.sd(&["disable"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(f.read(SD_ENTRY), stock);
    assert_eq!(snapshot(&f.root()), before);
}

#[test]
fn scripts_do_nothing_once_bootprint_is_removed() {
    let f = Fake::new(Init::Systemd);
    f.ok(&["enable", "--initramfs", "--default"]);
    // apt remove: the program goes, the conffiles and the state stay (prerm's disable failed
    // or was skipped, the worst case).
    fs::remove_file(f.root().join("usr/bin/bootprint")).unwrap();
    let tree = snapshot(&f.root());
    for (name, args) in [
        ("kernel-postinst", vec!["6.1.0-10-amd64"]),
        ("kernel-postrm", vec![KERNEL]),
        ("grub.d", vec![]),
    ] {
        let o = f.script(name, &args, &[]);
        assert!(o.status.success(), "{name}");
        assert!(
            o.stdout.is_empty() && o.stderr.is_empty(),
            "{name} is silent"
        );
    }
    assert_eq!(snapshot(&f.root()), tree);
}

/// The GRUB script run as grub-mkconfig runs it, with the drop-in sourced the way
/// grub-mkconfig sources /etc/default/grub.d/*.cfg; grub-probe and grub-mkrelpath are
/// doubles (there is no GRUB disk here).
fn grub_script(f: &Fake) -> Output {
    let d = f.doubles();
    write(
        &d.join("grub-probe"),
        "#!/bin/sh\ncase \"$*\" in *partmap*) echo msdos;; *abstraction*) ;; *fs_uuid*) echo 1234-abcd;; \
         *target=fs*) echo ext2;; *device*) echo /dev/vda1;; esac\n",
        0o755,
    );
    write(&d.join("grub-mkrelpath"), "#!/bin/sh\necho \"$1\"\n", 0o755);
    let r = f.root();
    let sh = format!(
        ". {grub}; for c in {r}/etc/default/grub.d/*.cfg; do [ -f \"$c\" ] && . \"$c\"; done; \
         export GRUB_CMDLINE_LINUX GRUB_CMDLINE_LINUX_DEFAULT GRUB_DEFAULT; exec sh {script}",
        grub = r.join("etc/default/grub").display(),
        r = r.display(),
        script = packaging("grub.d").display()
    );
    Command::new("sh")
        .args(["-c", &sh])
        .env("BOOTPRINT_ROOT", &r)
        .env("grub_probe", d.join("grub-probe"))
        .env("grub_mkrelpath", d.join("grub-mkrelpath"))
        .env("GRUB_DISTRIBUTOR", "Debian")
        .env("GRUB_DEVICE", "/dev/vda1")
        .env("GRUB_DEVICE_BOOT", "/dev/vda1")
        .env("GRUB_DEVICE_UUID", "1234-abcd")
        .output()
        .unwrap()
}

#[test]
fn grub_script_prints_an_entry_per_kernel_with_our_image() {
    if !Path::new("/usr/share/grub/grub-mkconfig_lib").exists() {
        return testkit::skip("grub-common is not installed (grub-mkconfig_lib)");
    }
    let f = Fake::new(Init::Systemd);
    // Off: nothing.
    let o = grub_script(&f);
    assert!(o.status.success() && o.stdout.is_empty());

    f.add_kernel("6.1.0-10-amd64");
    f.ok(&["enable", "--initramfs"]);
    // A kernel without our image gets no entry of ours.
    f.add_kernel("6.1.0-11-amd64");
    // The root device by UUID, as 10_linux when /dev/disk/by-uuid has it.
    write(&f.root().join("dev/disk/by-uuid/1234-abcd"), "", 0o644);
    let o = grub_script(&f);
    let cfg = String::from_utf8(o.stdout).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let entries: Vec<&str> = cfg
        .lines()
        .filter(|l| l.starts_with("menuentry "))
        .collect();
    assert_eq!(entries.len(), 2, "{cfg}");
    // Newest first, and it alone has the fixed id GRUB_DEFAULT can name.
    assert!(entries[0].starts_with(
        "menuentry 'Debian GNU/Linux, with Linux 6.1.0-10-amd64, with bootprint'\\''s initramfs' \
         --class debian --class gnu-linux --class gnu --class os $menuentry_id_option 'bootprint-initramfs' {"
    ), "{cfg}");
    assert!(
        entries[1].contains("'bootprint-initramfs-6.1.0-9-amd64'"),
        "{cfg}"
    );
    assert!(cfg.contains(
        "\tlinux\t/boot/vmlinuz-6.1.0-10-amd64 root=UUID=1234-abcd ro console=ttyS0 quiet init=/usr/lib/bootprint/bootprint-boot\n"
    ), "{cfg}");
    assert!(
        cfg.contains("\tinitrd\t/boot/bootprint-initrd.img-6.1.0-10-amd64\n"),
        "{cfg}"
    );
    assert!(!cfg.contains("6.1.0-11"), "{cfg}");
    if have("grub-script-check") {
        let file = f.doubles().join("entries.cfg");
        fs::write(&file, &cfg).unwrap();
        let o = Command::new("grub-script-check")
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}\n{cfg}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn packaged_scripts_pass_shellcheck() {
    if !have("shellcheck") {
        return;
    }
    let o = Command::new("shellcheck")
        .args(["-s", "sh"])
        .args(
            [
                "startpar-wrapper",
                "kernel-postinst",
                "kernel-postrm",
                "grub.d",
                "kernel-install",
            ]
            .map(packaging),
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn status_says_what_is_on_and_the_last_boots_times() {
    let f = Fake::new(Init::Systemd);
    let out = f.ok(&["status"]);
    assert!(out.starts_with("enabled: nothing ("), "{out}");
    assert!(out.contains("last boot: no trace at "), "{out}");

    f.ok(&["enable", "--readahead"]);
    // The last boot: the mini-trace fixture (tests/fixtures/README.md) as `latest`.
    let log = f.root().join("var/log/bootprint");
    fs::create_dir_all(&log).unwrap();
    symlink(repo().join("tests/fixtures/mini-trace"), log.join("latest")).unwrap();
    let out = f.ok(&["status"]);
    assert!(out.starts_with("enabled: record readahead ("), "{out}");
    assert!(out.contains("this boot: not known (another root)"), "{out}");
    assert!(
        out.contains("  readahead  on   this boot: -    not judged yet"),
        "{out}"
    );
    assert!(
        out.contains("  modules    off  this boot: -    not judged yet"),
        "{out}"
    );
    assert!(
        out.contains("  created /etc/default/grub.d/bootprint.cfg\n"),
        "{out}"
    );
    assert!(out.contains("  kernel              4.200 s\n"), "{out}");

    let v: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(v["enabled"], true);
    assert_eq!(v["levers"][1]["name"], "readahead");
    assert_eq!(v["levers"][1]["enabled"], true);
    assert_eq!(v["levers"][2]["enabled"], false);
    assert_eq!(v["dropin"]["exists"], true);
    assert_eq!(v["last_boot"]["kernel_s"], 4.2);
    assert!(v["last_boot"]["boot_done_s"].as_f64().unwrap() > 4.2);

    // A broken manifest: the file, the line and what was expected.
    write(
        &f.root().join("var/lib/bootprint/enabled"),
        "lever record\nlever turbo\n",
        0o644,
    );
    let e = f.fails(&["status"]);
    assert!(
        e.contains("var/lib/bootprint/enabled:2: expected a lever"),
        "{e}"
    );
}

#[test]
fn usage_errors_exit_2() {
    let o = Command::new(BIN)
        .args(["enable", "--all", "--kernel-installed", KERNEL])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}
