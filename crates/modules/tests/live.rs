//! libkmod against real, complete module trees. Two checks, each skipped with a message when
//! its tree is absent (this container's kernel has no /lib/modules):
//! - the running kernel: every modalias under /sys/devices resolves through /lib/modules;
//! - Debian's whole bookworm kernel tree, extracted and depmod-ed by
//!   tests/fixtures/modules/make-tree.sh, named by BOOTPRINT_MODULES_TREE.
//!
//! Nothing here loads or unloads a module.

use std::path::Path;

use modules::kmod::{self, KmodIndex, Paths};
use modules::plan::Index;

#[test]
fn running_kernel_resolves_its_devices() {
    let release = kmod::running_release();
    let paths = Paths::new(Path::new("/"), &release);
    if !paths.modules_dir().join("modules.dep.bin").exists() {
        // A fact of the machine (a kernel built without modules), not an install step CI
        // could add: not a failure under CI=true.
        testkit::not_here(&format!(
            "{} has no modules.dep.bin (no modules for the running kernel {release:?} on this \
             machine); the fixture and BOOTPRINT_MODULES_TREE checks stand in",
            paths.modules_dir().display()
        ));
        return;
    }
    let mut index = KmodIndex::open(&paths).expect("libkmod on the running kernel");
    let reqs = modules::input::read_modaliases(&paths.sys_devices()).unwrap();
    let mut resolved = 0;
    for r in &reqs {
        if !index.lookup(&r.name).unwrap().is_empty() {
            resolved += 1;
        }
    }
    eprintln!(
        "{resolved} of {} modaliases resolve to a module",
        reqs.len()
    );
    // The plan builds (this reads /proc/modules and modules.builtin of the running system).
    let plan = kmod::plan_system(&paths).unwrap();
    assert_eq!(plan.order().len(), plan.modules.len());
}

#[test]
fn full_debian_tree_resolves_like_modprobe() {
    let Some(root) = std::env::var_os("BOOTPRINT_MODULES_TREE") else {
        testkit::skip(
            "full-tree check: set BOOTPRINT_MODULES_TREE to a root made by \
             tests/fixtures/modules/make-tree.sh (make unit does)",
        );
        return;
    };
    let root = Path::new(&root);
    let release = kmod::detect_release(root, "").unwrap();
    let mut index = KmodIndex::open(&Paths::new(root, &release)).unwrap();
    // Expected answers from `modprobe --show-depends` on the same tree (kmod 30).
    let cases = [
        ("virtio:d00000001v00001AF4", vec!["virtio_net"]),
        (
            "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00",
            vec!["e1000"],
        ),
        (
            "pci:v00008086d00002922sv00001AF4sd00001100bc01sc06i01",
            vec!["ahci"],
        ),
        (
            "usb:v0781p5567d0100dc00dsc00dp00ic08isc06ip50in00",
            vec!["usb_storage", "uas"],
        ),
        (
            "pci:v00008086d0000293Esv00001AF4sd00001100bc04sc03i00",
            vec!["snd_hda_intel"],
        ),
        (
            "pci:v00008086d00002918sv00001AF4sd00001100bc06sc01i00",
            vec!["lpc_ich"],
        ),
        ("platform:rtc_cmos", vec!["rtc_cmos"]),
        ("acpi:PNP0A03:", vec![]),
    ];
    for (alias, want) in cases {
        let mut got = index.lookup(alias).unwrap();
        got.sort();
        let mut want: Vec<String> = want.into_iter().map(String::from).collect();
        want.sort();
        assert_eq!(got, want, "{alias}");
    }
    let e4 = index.module("ext4").unwrap();
    for d in ["jbd2", "mbcache", "crc16"] {
        assert!(e4.deps.contains(&d.to_string()), "ext4 deps {:?}", e4.deps);
    }
    assert!(
        e4.pre.contains(&"crc32c_generic".to_string()),
        "ext4 pre {:?}",
        e4.pre
    );
}

/// The whole set for the fixture's devices, planned over Debian's full tree, is exactly the
/// union of what `modprobe --show-depends` (kmod 30, from the same tree) would insert for
/// each modalias: dependencies and `modules.softdep` included, no configuration on either
/// side. Skipped without the tree or its extracted modprobe.
#[test]
fn full_tree_set_equals_modprobe_show_depends() {
    let Some(tree) = std::env::var_os("BOOTPRINT_MODULES_TREE") else {
        testkit::skip("modprobe comparison: BOOTPRINT_MODULES_TREE not set (make unit sets it)");
        return;
    };
    let tree = Path::new(&tree);
    let modprobe = tree.join(".kmod/modprobe");
    if !modprobe.exists() {
        testkit::skip(&format!(
            "modprobe comparison: {} missing",
            modprobe.display()
        ));
        return;
    }
    let release = kmod::detect_release(tree, "").unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/modules/root");
    // A root with the full tree's modules, the fixture's devices, nothing else.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::os::unix::fs::symlink(tree.join("lib"), root.join("lib")).unwrap();
    std::os::unix::fs::symlink(
        fixture.canonicalize().unwrap().join("sys"),
        root.join("sys"),
    )
    .unwrap();
    let plan = kmod::plan_system(&Paths::new(root, &release)).unwrap();
    let empty = root.join("no-config");
    std::fs::create_dir_all(&empty).unwrap();

    let mut want = std::collections::BTreeSet::new();
    for r in modules::input::read_modaliases(&root.join("sys/devices")).unwrap() {
        let out = std::process::Command::new(&modprobe)
            .arg("-d")
            .arg(tree)
            .args(["-S", &release, "-C"])
            .arg(&empty)
            .args(["--show-depends", "--", &r.name])
            .output()
            .unwrap();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(path) = line.strip_prefix("insmod ") {
                let file = Path::new(path.trim())
                    .file_name()
                    .unwrap()
                    .to_string_lossy();
                let name = file.split(".ko").next().unwrap().replace('-', "_");
                want.insert(name);
            }
        }
    }
    let got: std::collections::BTreeSet<String> =
        plan.modules.iter().map(|m| m.name.clone()).collect();
    assert_eq!(got, want);
    eprintln!("{} modules, same set as modprobe --show-depends", got.len());
}
