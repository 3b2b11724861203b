//! Plan building through libkmod over the fixture root (tests/fixtures/modules/root): real
//! index files from Debian's linux-image-6.1.0-56-amd64 (a subset, see its README), the
//! modprobe.d file Debian's kmod package ships, and a fake sysfs of a QEMU machine.

use std::fs;
use std::path::{Path, PathBuf};

use modules::kmod::{self, Paths};
use modules::plan::{EdgeKind, SkipReason};
use modules::Plan;

const RELEASE: &str = "6.1.0-56-amd64";

fn fixture_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/modules/root")
        .canonicalize()
        .unwrap()
}

fn plan_of(root: &Path) -> Plan {
    kmod::plan_system(&Paths::new(root, RELEASE)).expect("plan of the fixture root")
}

fn idx(plan: &Plan, name: &str) -> usize {
    plan.find(name)
        .unwrap_or_else(|| panic!("{name} not planned; planned: {:?}", names(plan)))
}

fn names(plan: &Plan) -> Vec<&str> {
    plan.modules.iter().map(|m| m.name.as_str()).collect()
}

fn has_edge(plan: &Plan, module: &str, after: &str, kind: EdgeKind) -> bool {
    let a = idx(plan, after);
    plan.modules[idx(plan, module)]
        .after
        .iter()
        .any(|e| e.module == a && e.kind == kind)
}

/// A temporary root sharing the fixture's sysfs, modules and lists, with its own modprobe.d
/// and state: the fixture stays read-only.
/// Removed when dropped.
struct TempRoot(tempfile::TempDir);

impl TempRoot {
    fn path(&self) -> &Path {
        self.0.path()
    }

    fn new(modprobe_conf: &str) -> TempRoot {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let fx = fixture_root();
        for d in ["sys", "lib", "proc", "usr"] {
            std::os::unix::fs::symlink(fx.join(d), root.join(d)).unwrap();
        }
        fs::create_dir_all(root.join("etc/modprobe.d")).unwrap();
        fs::copy(fx.join("etc/modules"), root.join("etc/modules")).unwrap();
        fs::write(root.join("etc/modprobe.d/test.conf"), modprobe_conf).unwrap();
        TempRoot(tmp)
    }
}

#[test]
fn the_set_from_modaliases_and_lists() {
    let plan = plan_of(&fixture_root());
    let n = names(&plan);
    for m in [
        "virtio_pci",
        "virtio_net",
        "virtio_blk",
        "ahci",
        "snd_hda_intel",
        "uhci_hcd",
        "usb_storage",
        "uas",
        "ext4",
        "ehci_hcd",
    ] {
        assert!(n.contains(&m), "{m} missing from {n:?}");
    }
    // Dependencies from modules.dep come in too.
    for m in [
        "virtio_ring",
        "virtio",
        "libahci",
        "libata",
        "scsi_mod",
        "usbcore",
        "snd_pcm",
        "jbd2",
    ] {
        assert!(n.contains(&m), "dependency {m} missing from {n:?}");
    }
    // A module is planned once however often it is asked for.
    let mut sorted = n.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), n.len());
    let blk = &plan.modules[idx(&plan, "virtio_blk")];
    assert_eq!(
        blk.wanted_by,
        vec![
            "modalias virtio:d00000002v00001AF4 (/sys/devices/pci0000:00/0000:00:03.0/virtio1/modalias)",
            "/etc/modules-load.d/virtio.conf:2",
        ]
    );
    // virtio_pci matches two devices' modaliases.
    assert_eq!(plan.modules[idx(&plan, "virtio_pci")].wanted_by.len(), 2);
    // Paths come from modules.dep under the root.
    assert!(plan.modules[idx(&plan, "ahci")]
        .path
        .ends_with("lib/modules/6.1.0-56-amd64/kernel/drivers/ata/ahci.ko"));
}

#[test]
fn skips_builtin_loaded_blacklisted_and_hidden_files() {
    let plan = plan_of(&fixture_root());
    let skips = plan.skip_reasons();
    assert_eq!(skips.get("e1000"), Some(&&SkipReason::Loaded));
    assert_eq!(skips.get("rtc_cmos"), Some(&&SkipReason::Builtin));
    assert_eq!(skips.get("pcspkr"), Some(&&SkipReason::Blacklisted));
    assert!(plan.find("pcspkr").is_none() && plan.find("e1000").is_none());
    // floppy is blacklisted (its modalias does not load it) but /etc/modules names it
    // outright, and modprobe loads a module named outright.
    let floppy = &plan.modules[idx(&plan, "floppy")];
    assert_eq!(floppy.wanted_by, vec!["/etc/modules:6"]);
    assert!(!skips.contains_key("floppy"));
    // usr/lib/modules-load.d/virtio.conf is hidden by the etc one of the same name.
    assert!(!skips.contains_key("not_a_module_hidden_by_etc"));
    // Devices no module drives; the symlinked directory is not walked.
    assert!(plan
        .unmatched
        .contains(&"pci:v00008086d000029C0sv00001AF4sd00001100bc06sc00i00".to_string()));
    assert!(!plan
        .unmatched
        .iter()
        .any(|a| a.contains("reached_through_a_symlink")));
    assert!(plan.dropped.is_empty());
}

#[test]
fn options_and_softdeps_from_modprobe_d_and_modules_softdep() {
    let plan = plan_of(&fixture_root());
    assert_eq!(
        plan.modules[idx(&plan, "snd_hda_intel")].options,
        "power_save=1"
    );
    assert_eq!(
        plan.modules[idx(&plan, "usb_storage")].options,
        "delay_use=1"
    );
    // modules.softdep: "softdep ext4 pre: crypto-crc32c", an alias of two modules.
    assert!(has_edge(&plan, "ext4", "crc32c_generic", EdgeKind::SoftPre));
    assert!(has_edge(&plan, "ext4", "crc32c_intel", EdgeKind::SoftPre));
    // Debian kmod's aliases.conf: "softdep uhci-hcd pre: ehci-hcd" (dashes).
    assert!(has_edge(&plan, "uhci_hcd", "ehci_hcd", EdgeKind::SoftPre));
    // fixture.conf: "softdep ahci post: sd_mod".
    assert!(has_edge(&plan, "sd_mod", "ahci", EdgeKind::SoftPost));
    assert!(has_edge(&plan, "ahci", "libahci", EdgeKind::Dep));
}

#[test]
fn order_respects_every_edge_and_puts_the_usb_storage_chain_first() {
    let plan = plan_of(&fixture_root());
    let order = plan.order();
    assert_eq!(order.len(), plan.modules.len());
    let mut pos = vec![usize::MAX; plan.modules.len()];
    for (p, &i) in order.iter().enumerate() {
        pos[i] = p;
    }
    for (i, m) in plan.modules.iter().enumerate() {
        for e in &m.after {
            assert!(
                pos[e.module] < pos[i],
                "{} before {}",
                m.name,
                plan.modules[e.module].name
            );
        }
    }
    // usb-storage and uas wait for the device to settle: they and what they need go first.
    let first: Vec<&str> = order[..6]
        .iter()
        .map(|&i| plan.modules[i].name.as_str())
        .collect();
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec![
            "scsi_common",
            "scsi_mod",
            "uas",
            "usb_common",
            "usb_storage",
            "usbcore"
        ],
        "order starts {first:?}"
    );
}

#[test]
fn learned_durations_reorder_the_plan() {
    let t = TempRoot::new("");
    fs::create_dir_all(t.path().join("var/lib/bootprint")).unwrap();
    fs::write(
        t.path().join("var/lib/bootprint/modules.durations"),
        "bootprint-module-durations 1\nsnd_hda_intel 3000000\nusb_storage 2000\nuas 2000\n",
    )
    .unwrap();
    let plan = plan_of(t.path());
    let order = plan.order();
    let pos = |n: &str| {
        order
            .iter()
            .position(|&i| plan.modules[i].name == n)
            .unwrap()
    };
    assert!(pos("snd_hda_intel") < pos("usb_storage"));
    assert!(pos("snd_hda_core") < pos("virtio"));
    assert_eq!(
        plan.modules[idx(&plan, "snd_hda_intel")].expected_us,
        3_000_000
    );
}

#[test]
fn softdep_cycle_in_modprobe_d_is_broken() {
    let t =
        TempRoot::new("softdep virtio_net pre: virtio_blk\nsoftdep virtio_blk pre: virtio_net\n");
    let plan = plan_of(t.path());
    assert_eq!(plan.dropped.len(), 1, "{:?}", plan.dropped);
    let d = &plan.dropped[0];
    assert_eq!(d.kind, EdgeKind::SoftPre);
    let pair = [d.module.as_str(), d.after.as_str()];
    assert!(pair == ["virtio_net", "virtio_blk"] || pair == ["virtio_blk", "virtio_net"]);
    let order = plan.order();
    assert_eq!(
        order.len(),
        plan.modules.len(),
        "every module still scheduled"
    );
}

#[test]
fn install_commands_and_blacklist_from_another_file() {
    let t = TempRoot::new("install snd_hda_intel /bin/true\nblacklist uas\n");
    let plan = plan_of(t.path());
    let skips = plan.skip_reasons();
    assert_eq!(
        skips.get("snd_hda_intel"),
        Some(&&SkipReason::InstallCommand("/bin/true".into()))
    );
    assert_eq!(skips.get("uas"), Some(&&SkipReason::Blacklisted));
    assert!(plan.find("usb_storage").is_some());
    // The etc/modprobe.d of the fixture is not in this root: pcspkr is no longer blacklisted.
    assert!(plan.find("pcspkr").is_some());
}

#[test]
fn missing_index_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::create_dir_all(root.join("lib/modules/9.9.9")).unwrap();
    fs::create_dir_all(root.join("sys/devices")).unwrap();
    let e = kmod::plan_system(&Paths::new(root, "9.9.9"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("lib/modules/9.9.9") && e.contains("depmod"),
        "{e}"
    );
}

#[test]
fn release_detection() {
    let root = fixture_root();
    assert_eq!(
        kmod::detect_release(&root, "0.0-not-here").unwrap(),
        RELEASE
    );
    assert_eq!(kmod::detect_release(&root, RELEASE).unwrap(), RELEASE);
    let e = kmod::detect_release(Path::new("/nonexistent-root"), "x").unwrap_err();
    assert!(
        e.to_string().starts_with("/nonexistent-root/lib/modules:"),
        "{e}"
    );
}

#[test]
fn only_the_given_names_and_their_dependencies() {
    let root = fixture_root();
    let paths = Paths::new(&root, RELEASE);
    let origin = Path::new("--only");
    let wanted = vec![
        "usb-storage".to_string(),
        "e1000".to_string(),
        "nosuch".into(),
    ];
    let inputs = kmod::gather_only(&paths, &wanted, origin).unwrap();
    let plan = kmod::plan_inputs(&paths, &inputs).unwrap();
    let mut got = names(&plan);
    got.sort();
    // usb-storage with what modules.dep says it needs; nothing the fixture's sysfs asks for
    // (virtio_net, floppy, ...); e1000 is loaded already (fixture /proc/modules).
    assert_eq!(
        got,
        vec![
            "scsi_common",
            "scsi_mod",
            "usb_common",
            "usb_storage",
            "usbcore"
        ]
    );
    let skip = |n: &str| plan.skipped.iter().find(|s| s.name == n).map(|s| &s.reason);
    assert_eq!(skip("e1000"), Some(&SkipReason::Loaded));
    assert_eq!(skip("nosuch"), Some(&SkipReason::NotFound));
    assert_eq!(
        plan.modules[idx(&plan, "usb_storage")].wanted_by,
        vec!["--only:1".to_string()]
    );
}
