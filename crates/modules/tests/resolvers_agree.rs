//! The initramfs build resolves modules itself (`initramfs::plan::ModIndex`, text index
//! files, so the boot path needs no libkmod); the module loader asks libkmod. Two resolvers
//! can disagree, and then the initramfs would lack a module the loader expects. This test
//! holds them to the same answers on Debian's whole kernel tree (the test bed's kernel;
//! tests/fixtures/modules/make-tree.sh, named by BOOTPRINT_MODULES_TREE, as in live.rs):
//! every module's dependencies and soft dependencies, and the modules each real device's
//! modalias resolves to.

use std::collections::BTreeSet;
use std::path::Path;

use modules::kmod::{self, KmodIndex, Paths};
use modules::plan::Index;

fn set(v: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    v.into_iter().collect()
}

#[test]
fn initramfs_and_libkmod_resolve_the_same_on_the_full_tree() {
    let Some(tree) = std::env::var_os("BOOTPRINT_MODULES_TREE") else {
        testkit::skip(
            "resolver agreement: BOOTPRINT_MODULES_TREE not set (make unit sets it; \
             tests/fixtures/modules/make-tree.sh makes the tree)",
        );
        return;
    };
    let tree = Path::new(&tree);
    let release = kmod::detect_release(tree, "").unwrap();
    let paths = Paths::new(tree, &release);
    let mut kmod = KmodIndex::open(&paths).unwrap();
    // No modprobe.d on either side: the tree has none, and the initramfs build is given the
    // target's own directories.
    let ours = initramfs::plan::ModIndex::read(&paths.modules_dir(), &[]).unwrap();
    assert!(ours.deps.len() > 3000, "{} modules", ours.deps.len());

    let mut names: Vec<&String> = ours.deps.keys().collect();
    names.sort();
    let mut differ = Vec::new();
    for name in names {
        let info = kmod.module(name).unwrap();
        let (_, deps) = &ours.deps[name];
        if set(info.deps.clone()) != set(deps.iter().cloned()) {
            differ.push(format!(
                "{name} deps: libkmod {:?}, ours {deps:?}",
                info.deps
            ));
        }
        // Soft dependencies as the modules they stand for (a softdep may name an alias:
        // `crypto-crc32c`, `platform:idma64`), loadable ones only.
        let loadable = |m: &String| ours.deps.contains_key(m);
        let theirs_soft: BTreeSet<String> = info
            .pre
            .iter()
            .chain(&info.post)
            .filter(|m| loadable(m))
            .cloned()
            .collect();
        let ours_soft: BTreeSet<String> = ours
            .softdeps
            .get(name)
            .into_iter()
            .flatten()
            .flat_map(|s| ours.resolve(s))
            .filter(|m| loadable(m))
            .collect();
        if theirs_soft != ours_soft {
            differ.push(format!(
                "{name} softdeps: libkmod {theirs_soft:?}, ours {ours_soft:?}"
            ));
        }
    }

    // Real devices' modaliases: the fixture machine's, and the ones live.rs checks against
    // modprobe.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/modules/root");
    let mut aliases: Vec<String> = modules::input::read_modaliases(&fixture.join("sys/devices"))
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    aliases.extend(
        [
            "virtio:d00000001v00001AF4",
            "virtio:d00000002v00001AF4",
            "pci:v00008086d0000100Esv00001AF4sd00001100bc02sc00i00",
            "pci:v00008086d00002922sv00001AF4sd00001100bc01sc06i01",
            "usb:v0781p5567d0100dc00dsc00dp00ic08isc06ip50in00",
            "platform:rtc_cmos",
            "ext4",
            "crc32c",
        ]
        .map(String::from),
    );
    let mut resolving = 0;
    for a in &aliases {
        let theirs = set(kmod.lookup(a).unwrap());
        // libkmod also answers for modules built into the kernel (modules.builtin.alias.bin);
        // the initramfs build needs no file for those, so only loadable ones are compared.
        let theirs: BTreeSet<String> = theirs
            .into_iter()
            .filter(|m| ours.deps.contains_key(m))
            .collect();
        let ours_mods: BTreeSet<String> = set(ours.resolve(a))
            .into_iter()
            .filter(|m| ours.deps.contains_key(m))
            .collect();
        if !theirs.is_empty() {
            resolving += 1;
        }
        if theirs != ours_mods {
            differ.push(format!("{a}: libkmod {theirs:?}, ours {ours_mods:?}"));
        }
    }
    assert!(
        differ.is_empty(),
        "{} differences, the first: {:#?}",
        differ.len(),
        &differ[..differ.len().min(10)]
    );
    assert!(resolving >= 6, "only {resolving} aliases resolve");
    eprintln!(
        "{} modules and {} aliases ({resolving} resolving): the same answers",
        ours.deps.len(),
        aliases.len()
    );
}
