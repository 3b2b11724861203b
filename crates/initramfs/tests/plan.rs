//! Plans and whole builds from fixture sysfs trees and a trimmed copy of Debian 12's
//! 6.1.0-50-amd64 module index (real lines of its modules.dep, modules.alias,
//! modules.softdep).

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use initramfs::build::{self, Options, RootChoice};
use initramfs::compress::{self, Method};
use initramfs::plan::{self, ModIndex, Plan};
use initramfs::ErrorKind;

const REL: &str = "6.1.0-50-amd64";

/// Removed when dropped.
struct Tmp(tempfile::TempDir);
impl Tmp {
    fn path(&self) -> &Path {
        self.0.path()
    }

    fn new() -> Tmp {
        let tmp = tempfile::tempdir().unwrap();
        let _p = tmp.path();
        Tmp(tmp)
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn index() -> ModIndex {
    ModIndex::read(&fixtures().join("lib/modules").join(REL), &[]).unwrap()
}

/// A device directory with a modalias and, optionally, a bound driver from `module`.
fn device(sys: &Path, dev: &Path, modalias: &str, driver: Option<(&str, &str, Option<&str>)>) {
    fs::create_dir_all(dev).unwrap();
    fs::write(dev.join("modalias"), format!("{modalias}\n")).unwrap();
    if let Some((bus, name, module)) = driver {
        let d = sys.join("bus").join(bus).join("drivers").join(name);
        fs::create_dir_all(&d).unwrap();
        if let Some(m) = module {
            let md = sys.join("module").join(m);
            fs::create_dir_all(&md).unwrap();
            let _ = symlink(&md, d.join("module"));
        }
        symlink(&d, dev.join("driver")).unwrap();
    }
}

fn block(sys: &Path, dir: &Path, name: &str, devnum: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("dev"), format!("{devnum}\n")).unwrap();
    fs::create_dir_all(sys.join("class/block")).unwrap();
    symlink(dir, sys.join("class/block").join(name)).unwrap();
    fs::create_dir_all(sys.join("dev/block")).unwrap();
    symlink(dir, sys.join("dev/block").join(devnum)).unwrap();
}

/// The test bed's guest: a virtio disk vda on a virtio PCI function, drivers bound.
fn virtio_tree(sys: &Path) {
    let pci = sys.join("devices/pci0000:00/0000:00:04.0");
    device(
        sys,
        &pci,
        "pci:v00001AF4d00001001sv00001AF4sd00000002bc01sc00i00",
        Some(("pci", "virtio-pci", Some("virtio_pci"))),
    );
    let vdev = pci.join("virtio1");
    device(
        sys,
        &vdev,
        "virtio:d00000002v00001AF4",
        Some(("virtio", "virtio_blk", Some("virtio_blk"))),
    );
    block(sys, &vdev.join("block/vda"), "vda", "254:0");
}

fn names(p: &Plan) -> Vec<&str> {
    p.modules.iter().map(|m| m.name.as_str()).collect()
}

#[test]
fn virtio_disk_with_ext4() {
    let t = Tmp::new();
    let sys = t.path().join("sys");
    virtio_tree(&sys);
    let chain = plan::root_chain(&sys, "vda").unwrap();
    assert_eq!(chain.len(), 2, "{chain:?}");
    assert_eq!(chain[0].module.as_deref(), Some("virtio_blk"));
    assert_eq!(chain[1].driver.as_deref(), Some("virtio-pci"));
    let p = plan::build(&index(), REL, "/dev/vda", "ext4", &chain, None).unwrap();
    assert_eq!(
        names(&p),
        [
            "virtio",
            "virtio_ring",
            "virtio_blk",
            "virtio_pci_modern_dev",
            "virtio_pci_legacy_dev",
            "virtio_pci",
            "crc32c_intel",
            "crc32c_generic",
            "jbd2",
            "mbcache",
            "crc16",
            "ext4"
        ]
    );
    let opt: Vec<&str> = p
        .modules
        .iter()
        .filter(|m| m.optional)
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(
        opt,
        ["crc32c_intel", "crc32c_generic"],
        "soft dependencies may fail"
    );
    let ext4 = p.modules.last().unwrap();
    assert_eq!(
        ext4.path,
        format!("/lib/modules/{REL}/kernel/fs/ext4/ext4.ko")
    );
    assert_eq!(ext4.deps, ["crc16", "mbcache", "jbd2"]);
    // Dependency order holds in the file and survives the round trip.
    let back = Plan::parse(&p.to_text(), Path::new("plan")).unwrap();
    assert_eq!(back.modules, p.modules);
    assert_eq!(back.workers, None);
    let mut one = p.clone();
    one.workers = Some(1);
    assert!(one.to_text().contains("\nworkers 1\n"));
    assert_eq!(
        Plan::parse(&one.to_text(), Path::new("plan"))
            .unwrap()
            .workers,
        Some(1)
    );
    let waves = back.waves();
    assert_eq!(waves.len(), 2, "{waves:?}");
    assert!(waves[1].iter().all(|&i| !back.modules[i].deps.is_empty()));
}

#[test]
fn a_soft_dependency_for_cpu_features_this_cpu_lacks_is_left_out() {
    let t = Tmp::new();
    let sys = t.path().join("sys");
    virtio_tree(&sys);
    let chain = plan::root_chain(&sys, "vda").unwrap();
    // The test bed's guest (QEMU's qemu64 CPU): no SSE4.2 (feature 0094), so crc32c_intel
    // would fail with ENODEV; seen at boot as `crc32c_intel:skipped(No such device)`.
    let qemu64 = "cpu:type:x86,ven0000fam0006mod0006:feature:,0000,0001,0002,0003,0004,0005,\
                  0006,0007,0008,0009,000B,000C,000D,000E,000F,0010,0011,0013,0017,0018,0019,\
                  001A,0058,0080,0081,00C0";
    let p = plan::build(&index(), REL, "/dev/vda", "ext4", &chain, Some(qemu64)).unwrap();
    let names: Vec<&str> = p.modules.iter().map(|m| m.name.as_str()).collect();
    assert!(!names.contains(&"crc32c_intel"), "{names:?}");
    assert!(names.contains(&"crc32c_generic"), "{names:?}");
    assert!(
        p.notes
            .iter()
            .any(|n| n.starts_with("crc32c_intel: left out")),
        "{:?}",
        p.notes
    );
    // A CPU with SSE4.2 keeps it, as does an unknown CPU (no modalias file).
    let with_sse42 = "cpu:type:x86,ven0000fam0006mod003F:feature:,0000,0001,0093,0094,0095";
    for cpu in [Some(with_sse42), None] {
        let p = plan::build(&index(), REL, "/dev/vda", "ext4", &chain, cpu).unwrap();
        assert!(
            p.modules.iter().any(|m| m.name == "crc32c_intel"),
            "{cpu:?}"
        );
    }
}

#[test]
fn sata_partition_resolved_by_modalias_with_xfs() {
    let t = Tmp::new();
    let sys = t.path().join("sys");
    // No driver bound to the controller (as when the module is not loaded yet): its
    // modalias is resolved through modules.alias.
    let pci = sys.join("devices/pci0000:00/0000:00:1f.2");
    device(
        &sys,
        &pci,
        "pci:v00008086d00002922sv00001AF4sd00001100bc01sc06i01",
        None,
    );
    let scsi = pci.join("ata1/host0/target0:0:0/0:0:0:0");
    device(
        &sys,
        &scsi,
        "scsi:t-0x00",
        Some(("scsi", "sd", Some("sd_mod"))),
    );
    let disk = scsi.join("block/sda");
    block(&sys, &disk, "sda", "8:0");
    block(&sys, &disk.join("sda2"), "sda2", "8:2");
    let chain = plan::root_chain(&sys, "sda2").unwrap();
    let p = plan::build(&index(), REL, "/dev/sda2", "xfs", &chain, None).unwrap();
    let n = names(&p);
    for want in [
        "sd_mod",
        "ahci",
        "libahci",
        "libata",
        "scsi_mod",
        "xfs",
        "libcrc32c",
    ] {
        assert!(n.contains(&want), "{want} missing from {n:?}");
    }
    // Each module comes after its planned dependencies.
    for (i, m) in p.modules.iter().enumerate() {
        for d in &m.deps {
            let j = n.iter().position(|x| x == d).unwrap();
            assert!(j < i, "{} before its dependency {d}", m.name);
        }
    }
    assert!(!n.contains(&"crc32"), "builtin left out");
}

/// A kernel without its module index: the I/O kind, naming the file, the OS error beneath.
#[test]
fn a_missing_module_index_is_an_io_error_naming_the_file() {
    let t = Tmp::new();
    let e = ModIndex::read(t.path(), &[]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert_eq!(e.path(), Some(t.path().join("modules.dep").as_path()));
    assert!(
        e.to_string().starts_with(&format!(
            "{}: cannot read: ",
            t.path().join("modules.dep").display()
        )),
        "{e}"
    );
    assert!(std::error::Error::source(&e).is_some());
    // A bad line names the file and the line.
    let mut ix = ModIndex::default();
    let e = ix
        .parse_dep("a.ko: b.ko\nnonsense\n", Path::new("modules.dep"))
        .unwrap_err();
    assert_eq!((e.kind(), e.line()), (ErrorKind::Parse, Some(2)));
    assert_eq!(
        e.to_string(),
        "modules.dep: line 2: expected `MODULE.ko: DEPENDENCIES`"
    );
}

#[test]
fn refuses_stacked_and_unknown_roots() {
    let t = Tmp::new();
    let sys = t.path().join("sys");
    let e = plan::root_chain(&sys, "dm-0").unwrap_err();
    assert!(e.to_string().contains("device-mapper"), "{e}");
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    let e = plan::root_chain(&sys, "md127").unwrap_err();
    assert!(e.to_string().contains("RAID"), "{e}");
    let dev = sys.join("devices/virtual/block/sdz");
    block(&sys, &dev, "sdz", "65:144");
    fs::create_dir_all(dev.join("slaves/sda3")).unwrap();
    let e = plan::root_chain(&sys, "sdz").unwrap_err();
    assert!(
        e.to_string()
            .contains("the root /dev/sdz (a stacked device) on /dev/sda3"),
        "{e}"
    );
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    let e = plan::root_chain(&sys, "nvme9n1").unwrap_err();
    assert!(e.to_string().contains("no such block device"), "{e}");
    assert_eq!(e.kind(), ErrorKind::Io);
    assert_eq!(e.path(), Some(sys.join("class/block/nvme9n1").as_path()));
    // A file system type the kernel has no module or builtin for.
    let e = plan::build(&index(), REL, "/dev/vda", "zfs", &[], None).unwrap_err();
    assert!(e.to_string().contains("\"zfs\""), "{e}");
    assert_eq!(e.kind(), ErrorKind::NotFound);
}

/// Debian's encrypted install: LVM inside LUKS on the disk's third partition, as the
/// kernel shows it in sysfs.
#[test]
fn a_root_on_lvm_in_luks_is_refused_naming_every_layer() {
    let t = Tmp::new();
    let sys = t.path().join("sys");
    let vda3 = sys.join("devices/pci0000:00/0000:00:04.0/virtio1/block/vda/vda3");
    block(&sys, &vda3, "vda3", "254:3");
    for (name, num, dm_name, uuid, under) in [
        (
            "dm-0",
            "253:0",
            "vda3_crypt",
            "CRYPT-LUKS2-0a1b-vda3_crypt",
            "vda3",
        ),
        ("dm-1", "253:1", "vg0-root", "LVM-Xy7Q", "dm-0"),
    ] {
        let dir = sys.join("devices/virtual/block").join(name);
        block(&sys, &dir, name, num);
        fs::create_dir_all(dir.join("dm")).unwrap();
        fs::write(dir.join("dm/name"), format!("{dm_name}\n")).unwrap();
        fs::write(dir.join("dm/uuid"), format!("{uuid}\n")).unwrap();
        fs::create_dir_all(dir.join("slaves")).unwrap();
        symlink(
            sys.join("class/block").join(under),
            dir.join("slaves").join(under),
        )
        .unwrap();
    }
    let e = plan::root_chain(&sys, "dm-1").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert_eq!(
        e.to_string(),
        "the root /dev/dm-1 (vg0-root, an LVM logical volume) on /dev/dm-0 (vda3_crypt, \
         a LUKS dm-crypt mapping) on /dev/vda3: bootprint's initramfs opens no LVM, dm-crypt \
         or md device (the distribution's initramfs does)"
    );
    // md: the level the kernel reports.
    let md = sys.join("devices/virtual/block/md0");
    block(&sys, &md, "md0", "9:0");
    fs::create_dir_all(md.join("md")).unwrap();
    fs::write(md.join("md/level"), "raid1\n").unwrap();
    for u in ["vda3", "vdb3"] {
        fs::create_dir_all(md.join("slaves").join(u)).unwrap();
    }
    let e = plan::root_chain(&sys, "md0").unwrap_err();
    assert!(
        e.to_string()
            .contains("/dev/md0 (a software RAID (raid1)) on /dev/vda3 and /dev/vdb3"),
        "{e}"
    );
}

#[test]
fn whole_build_from_a_fixture_system() {
    let t = Tmp::new();
    let root = t.path().join("root");
    let sys = t.path().join("sys");
    virtio_tree(&sys);
    // The system: the fixture index, fake .ko files, the kernel config, /init and its libs.
    let mdir = root.join("lib/modules").join(REL);
    fs::create_dir_all(&mdir).unwrap();
    for f in [
        "modules.dep",
        "modules.alias",
        "modules.softdep",
        "modules.builtin",
    ] {
        fs::copy(
            fixtures().join("lib/modules").join(REL).join(f),
            mdir.join(f),
        )
        .unwrap();
    }
    let ix = index();
    for (path, _) in ix.deps.values() {
        let p = mdir.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, format!("fake {path}")).unwrap();
    }
    fs::create_dir_all(root.join("boot")).unwrap();
    fs::copy(
        fixtures().join("boot").join(format!("config-{REL}")),
        root.join("boot").join(format!("config-{REL}")),
    )
    .unwrap();
    // A small dynamic executable keeps the (debug-build) compression quick.
    let exe = ["/usr/bin/true", "/bin/true"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| std::env::current_exe().unwrap());
    let init = root.join("usr/lib/bootprint/bootprint-boot");
    fs::create_dir_all(init.parent().unwrap()).unwrap();
    fs::copy(&exe, &init).unwrap();
    let libs = initramfs::elf::closure(Path::new("/"), &exe, &initramfs::elf::LIB_DIRS).unwrap();
    for l in &libs {
        let to = root.join(l.strip_prefix("/").unwrap());
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(l, &to).unwrap();
    }
    let proc_dir = t.path().join("proc");
    fs::create_dir_all(proc_dir.join("self")).unwrap();
    fs::create_dir_all(proc_dir.join("sys/kernel")).unwrap();
    fs::write(proc_dir.join("sys/kernel/osrelease"), format!("{REL}\n")).unwrap();
    fs::write(
        proc_dir.join("self/mountinfo"),
        "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n",
    )
    .unwrap();
    let out = t.path().join("initrd.img");
    let mut o = Options::new(out.clone());
    o.root = RootChoice::Running;
    o.fsroot = root.clone();
    o.sys = sys.clone();
    o.proc_dir = proc_dir;
    o.compression = Some(Method::Gzip);
    let r = build::build(&o).unwrap();
    assert_eq!(r.chosen, Method::Gzip);
    assert_eq!(r.plan.root, "/dev/vda");
    assert_eq!(r.plan.fstype, "ext4");
    let packed = fs::read(&out).unwrap();
    assert_eq!(packed.len(), r.image_bytes);
    let entries =
        initramfs::cpio::read(&compress::decompress(Method::Gzip, &packed).unwrap()).unwrap();
    let get = |n: &str| entries.iter().find(|e| e.name == n);
    assert_eq!(get("init").unwrap().data, fs::read(&exe).unwrap());
    assert_eq!(get("init").unwrap().mode, 0o100755);
    assert_eq!(get("dev/console").unwrap().rdev, (5, 1));
    let plan_text = String::from_utf8(get("bootprint/plan").unwrap().data.clone()).unwrap();
    assert_eq!(
        Plan::parse(&plan_text, Path::new("plan")).unwrap().modules,
        r.plan.modules
    );
    for m in &r.plan.modules {
        let e = get(m.path.trim_start_matches('/')).unwrap_or_else(|| panic!("{} missing", m.path));
        assert!(String::from_utf8_lossy(&e.data).starts_with("fake kernel/"));
    }
    for l in &libs {
        assert!(
            get(l.to_str().unwrap().trim_start_matches('/')).is_some(),
            "{l:?} missing"
        );
    }
    assert!(fs::read_to_string(format!("{}.txt", out.display()))
        .unwrap()
        .contains("<- written"));
    // Asking for a method the kernel lacks is refused by name.
    let cfg = root.join("boot").join(format!("config-{REL}"));
    fs::write(&cfg, "CONFIG_RD_GZIP=y\n").unwrap();
    o.compression = Some(Method::Zstd);
    let e = build::build(&o).unwrap_err();
    assert!(e.to_string().contains("CONFIG_RD_ZSTD"), "{e}");
    assert_eq!(e.kind(), ErrorKind::Compression);
    // Auto: only what the kernel unpacks (here gzip or none) is measured.
    o.compression = None;
    let r = build::build(&o).unwrap();
    assert!(r
        .measured
        .iter()
        .all(|m| matches!(m.0, Method::Gzip | Method::None)));
    assert_eq!(r.measured.len(), 2);

    // Debian 13's kernels ship every module xz-compressed (`.ko.xz`); the image carries them
    // as they are when the kernel unpacks them at load, and refuses at build time otherwise.
    let dep = fs::read_to_string(mdir.join("modules.dep")).unwrap();
    fs::write(mdir.join("modules.dep"), dep.replace(".ko", ".ko.xz")).unwrap();
    for (path, _) in ix.deps.values() {
        fs::rename(mdir.join(path), mdir.join(format!("{path}.xz"))).unwrap();
    }
    o.compression = Some(Method::Gzip);
    fs::write(&cfg, "CONFIG_RD_GZIP=y\nCONFIG_MODULE_COMPRESS_XZ=y\n").unwrap();
    let e = build::build(&o).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(
        e.to_string()
            .contains(".ko.xz) at boot: it is xz-compressed"),
        "{e}"
    );
    assert!(e.to_string().contains("CONFIG_MODULE_DECOMPRESS=y"), "{e}");
    fs::write(
        &cfg,
        "CONFIG_RD_GZIP=y\nCONFIG_MODULE_COMPRESS_XZ=y\nCONFIG_MODULE_DECOMPRESS=y\n",
    )
    .unwrap();
    let r = build::build(&o).unwrap();
    let entries = initramfs::cpio::read(
        &compress::decompress(Method::Gzip, &fs::read(&out).unwrap()).unwrap(),
    )
    .unwrap();
    assert!(!r.plan.modules.is_empty());
    for m in &r.plan.modules {
        assert!(m.path.ends_with(".ko.xz"), "{}", m.path);
        assert!(
            entries
                .iter()
                .any(|e| e.name == m.path.trim_start_matches('/')),
            "{} missing",
            m.path
        );
    }
}
