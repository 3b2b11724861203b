//! The next entry of a grub.cfg in the shape Debian 12's grub-mkconfig writes (00_header,
//! 10_linux; tests/fixtures/debian12-grub.cfg, written for these tests to that shape, the
//! kernels' names and the UUID invented), under every way GRUB's default can be given.

use std::fs;
use std::path::Path;

use fastpath::grub::next_entry;

const CFG: &str = include_str!("fixtures/debian12-grub.cfg");

/// A root with the fixture's kernels and initramfs images in /boot.
fn root() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for f in [
        "vmlinuz-6.1.0-13-amd64",
        "initrd.img-6.1.0-13-amd64",
        "vmlinuz-6.1.0-9-amd64",
        "initrd.img-6.1.0-9-amd64",
        "intel-ucode.img",
    ] {
        fs::create_dir_all(d.path().join("boot")).unwrap();
        fs::write(d.path().join("boot").join(f), f).unwrap();
    }
    d
}

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn the_first_entry_by_default() {
    let r = root();
    let e = next_entry(r.path(), CFG, None, false).unwrap();
    assert_eq!(e.kernel, r.path().join("boot/vmlinuz-6.1.0-13-amd64"));
    assert_eq!(
        e.initrds,
        vec![r.path().join("boot/initrd.img-6.1.0-13-amd64")]
    );
    assert_eq!(
        e.cmdline,
        "root=UUID=2f8a0d5c-1d1e-4b7a-9f0e-5d1c6a7b8c9d ro quiet"
    );
    assert!(e.source.contains("grub.cfg:94"), "{}", e.source);
    assert_eq!(e.release().as_deref(), Some("6.1.0-13-amd64"));
}

#[test]
fn a_submenu_path_an_id_and_a_title_from_saved_entry() {
    let r = root();
    let with_saved = CFG.replace("   set default=\"0\"", "   set default=\"${saved_entry}\"");
    for saved in [
        "1>2",
        "gnulinux-advanced-2f8a0d5c-1d1e-4b7a-9f0e-5d1c6a7b8c9d>gnulinux-6.1.0-9-amd64-advanced-2f8a0d5c-1d1e-4b7a-9f0e-5d1c6a7b8c9d",
        "Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux 6.1.0-9-amd64",
    ] {
        let env = format!("# GRUB Environment Block\nsaved_entry={saved}\n#####\n");
        let e = next_entry(r.path(), &with_saved, Some(&env), false).unwrap();
        assert_eq!(name(&e.kernel), "vmlinuz-6.1.0-9-amd64", "{saved}");
        // Two images on one `initrd` line, in order.
        let initrds: Vec<String> = e.initrds.iter().map(|p| name(p)).collect();
        assert_eq!(initrds, ["intel-ucode.img", "initrd.img-6.1.0-9-amd64"]);
    }
    // saved_entry unset: GRUB boots the first entry.
    let e = next_entry(r.path(), &with_saved, Some("saved_entry=\n"), false).unwrap();
    assert_eq!(name(&e.kernel), "vmlinuz-6.1.0-13-amd64");
}

#[test]
fn a_one_time_next_entry_wins() {
    let r = root();
    let env = "next_entry=1>1\n";
    let e = next_entry(r.path(), CFG, Some(env), false).unwrap();
    assert!(e.cmdline.ends_with("ro single"), "{}", e.cmdline);
    assert!(e.source.contains("next_entry"), "{}", e.source);
}

#[test]
fn a_separate_boot_maps_paths_under_boot() {
    let r = root();
    let cfg = CFG
        .replace("/boot/vmlinuz", "/vmlinuz")
        .replace("/boot/initrd", "/initrd");
    let e = next_entry(r.path(), &cfg, None, true).unwrap();
    assert_eq!(e.kernel, r.path().join("boot/vmlinuz-6.1.0-13-amd64"));
}

#[test]
fn what_grub_would_compute_is_an_error_with_its_line() {
    let r = root();
    let cases = [
        (
            CFG.replace(" ro  quiet\n\techo", " ro quiet $vt_handoff\n\techo"),
            ":107: `$vt_handoff` is a GRUB variable",
        ),
        (
            CFG.replace("   set default=\"0\"", "   set default=\"7\""),
            ":19: no menu entry `7`",
        ),
        (
            CFG.replace("   set default=\"0\"", "   set default=\"1\""),
            "names a submenu",
        ),
        (
            CFG.replace(
                "linux_gfx_mode=\n",
                "linux_gfx_mode=\nset default=\"1>0\"\n",
            ),
            "`set default` is `1>0` here and `0` on line 19",
        ),
        (
            CFG.replace(
                "\tlinux\t/boot/vmlinuz-6.1.0-13-amd64 root",
                "\tlinux\t/boot/vmlinuz-6.1.0-99-amd64 root",
            ),
            "`/boot/vmlinuz-6.1.0-99-amd64` is not a file here",
        ),
        (
            CFG.replace("### END /etc/grub.d/10_linux ###", "}"),
            "`}` closes no block",
        ),
    ];
    for (cfg, want) in cases {
        let e = next_entry(r.path(), &cfg, None, false)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/boot/grub/grub.cfg"), "{e}");
        assert!(e.contains(want), "{e}\nwanted: {want}");
    }
}
