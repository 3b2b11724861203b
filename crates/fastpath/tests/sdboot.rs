//! systemd-boot's next entry on an EFI system partition laid out as Debian 13's
//! kernel-install (systemd 257, 90-loaderentry.install, entry token `debian`) and
//! bootprint's kernel-install plugin leave it: two kernels' entries and bootprint's entry
//! beside the newer one. The entries are written for these tests in that shape (the
//! command line and the kernels' names invented; `testbed package --loader systemd-boot`
//! reads the real ones).

use std::fs;
use std::path::Path;

use fastpath::sdboot::{entries, next_entry, VENDOR};

const OLD: &str = "6.12.110+deb13-amd64";
const NEW: &str = "6.12.117+deb13-amd64";
const CMDLINE: &str = "root=UUID=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 ro quiet";

fn entry(release: &str) -> String {
    format!(
        "# Boot Loader Specification type#1 entry\n\
         # File created by /usr/lib/kernel/install.d/90-loaderentry.install (systemd 257.9-1~deb13u1)\n\
         title      Debian GNU/Linux 13 (trixie)\n\
         version    {release}\n\
         sort-key   debian\n\
         options    {CMDLINE}\n\
         linux      /debian/{release}/linux\n\
         initrd     /debian/{release}/initrd.img-{release}\n"
    )
}

/// A root whose ESP (/boot/efi) holds both kernels, their entries and bootprint's.
fn root() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let esp = d.path().join("boot/efi");
    fs::create_dir_all(esp.join("loader/entries")).unwrap();
    fs::write(esp.join("loader/loader.conf"), "timeout 0\n").unwrap();
    for rel in [OLD, NEW] {
        let dir = esp.join("debian").join(rel);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("linux"), "kernel").unwrap();
        fs::write(dir.join(format!("initrd.img-{rel}")), "initrd").unwrap();
        fs::write(
            esp.join(format!("loader/entries/debian-{rel}.conf")),
            entry(rel),
        )
        .unwrap();
    }
    fs::write(
        esp.join("debian").join(NEW).join("bootprint-initrd"),
        "ours",
    )
    .unwrap();
    fs::write(
        esp.join(format!("loader/entries/debian-{NEW}-bootprint.conf")),
        format!(
            "# Written by bootprint's kernel-install plugin (91-bootprint.install).\n\
             title Debian GNU/Linux 13 (trixie), with bootprint's initramfs\n\
             version {NEW}\nsort-key debian-bootprint\noptions {CMDLINE} init=/usr/lib/bootprint/bootprint-boot\n\
             linux /debian/{NEW}/linux\ninitrd /debian/{NEW}/bootprint-initrd\n"
        ),
    )
    .unwrap();
    d
}

/// Sets systemd-boot's EFI variable `name` under `root` as efivarfs shows it.
fn set_var(root: &Path, name: &str, value: &str) {
    let dir = root.join("sys/firmware/efi/efivars");
    fs::create_dir_all(&dir).unwrap();
    let mut data = vec![7u8, 0, 0, 0];
    for u in value.encode_utf16().chain([0]) {
        data.extend(u.to_le_bytes());
    }
    fs::write(dir.join(format!("{name}-{VENDOR}")), data).unwrap();
}

fn loader_conf(root: &Path, text: &str) {
    fs::write(root.join("boot/efi/loader/loader.conf"), text).unwrap();
}

#[test]
fn the_newest_kernels_own_entry_by_default() {
    let r = root();
    let (list, _) = entries(r.path()).unwrap();
    let ids: Vec<&str> = list.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            format!("debian-{NEW}.conf"),
            format!("debian-{OLD}.conf"),
            format!("debian-{NEW}-bootprint.conf")
        ]
    );
    let (e, file) = next_entry(r.path()).unwrap();
    let esp = r.path().join("boot/efi");
    assert_eq!(e.kernel, esp.join(format!("debian/{NEW}/linux")));
    assert_eq!(
        e.initrds,
        [esp.join(format!("debian/{NEW}/initrd.img-{NEW}"))]
    );
    assert_eq!(e.cmdline, CMDLINE);
    assert_eq!(e.release().as_deref(), Some(NEW));
    assert_eq!(file, esp.join(format!("loader/entries/debian-{NEW}.conf")));
    assert!(
        e.source.starts_with(&format!(
            "/boot/efi/loader/entries/debian-{NEW}.conf `Debian GNU/Linux 13 (trixie)` (the first"
        )),
        "{}",
        e.source
    );
}

#[test]
fn loader_conf_then_the_default_variable_then_the_one_shot_choose() {
    let r = root();
    loader_conf(
        r.path(),
        "timeout 0\n# a comment\ndefault DEBIAN-*-BOOTPRINT.CONF\n",
    );
    let (e, _) = next_entry(r.path()).unwrap();
    assert!(e.initrds[0].ends_with("bootprint-initrd"), "{e}");
    assert!(e
        .cmdline
        .ends_with("init=/usr/lib/bootprint/bootprint-boot"));
    assert!(
        e.source
            .contains("loader.conf:3 `default DEBIAN-*-BOOTPRINT.CONF`"),
        "{}",
        e.source
    );
    set_var(
        r.path(),
        "LoaderEntryDefault",
        &format!("debian-{OLD}.conf"),
    );
    let (e, _) = next_entry(r.path()).unwrap();
    assert_eq!(e.release().as_deref(), Some(OLD));
    assert!(e.source.contains("LoaderEntryDefault"), "{}", e.source);
    set_var(
        r.path(),
        "LoaderEntryOneShot",
        &format!("debian-{NEW}.conf"),
    );
    let (e, _) = next_entry(r.path()).unwrap();
    assert_eq!(e.release().as_deref(), Some(NEW));
    assert!(e.source.contains("LoaderEntryOneShot"), "{}", e.source);
    // A name that matches no entry falls through to the next way of choosing.
    set_var(r.path(), "LoaderEntryOneShot", "gone.conf");
    let (e, _) = next_entry(r.path()).unwrap();
    assert_eq!(e.release().as_deref(), Some(OLD));
}

#[test]
fn a_pattern_that_matches_nothing_leaves_the_first() {
    let r = root();
    loader_conf(r.path(), "default nothing-like-this*\n");
    let (e, _) = next_entry(r.path()).unwrap();
    assert_eq!(e.release().as_deref(), Some(NEW));
    assert!(e.initrds[0].ends_with(format!("initrd.img-{NEW}")));
}

/// Whatever systemd-boot would decide from something bootprint does not read is refused
/// with the file (and line) that says so.
#[test]
fn what_the_loader_decides_otherwise_is_refused() {
    let esp = |r: &tempfile::TempDir| r.path().join("boot/efi");
    type Case = (&'static str, fn(&Path), &'static str);
    let cases: [Case; 7] = [
        (
            "a unified kernel image",
            |esp| {
                fs::create_dir_all(esp.join("EFI/Linux")).unwrap();
                fs::write(esp.join("EFI/Linux/debian.efi"), "MZ").unwrap();
            },
            "/boot/efi/EFI/Linux/debian.efi is a unified kernel image",
        ),
        (
            "boot counting",
            |esp| {
                fs::write(esp.join("loader/entries/try+3-0.conf"), "linux /x\n").unwrap();
            },
            "boot counting",
        ),
        (
            "@saved",
            |esp| fs::write(esp.join("loader/loader.conf"), "default @saved\n").unwrap(),
            "/boot/efi/loader/loader.conf:1: `default @saved`",
        ),
        (
            "a tilde",
            |esp| {
                fs::write(
                    esp.join("loader/entries/rc.conf"),
                    "version 6.13~rc1\nlinux /x\n",
                )
                .unwrap();
            },
            "/boot/efi/loader/entries/rc.conf: its version has `~`",
        ),
        (
            "an EFI program",
            |esp| {
                fs::write(
                    esp.join("loader/entries/zzz-shell.conf"),
                    "sort-key aaa\nefi /shell.efi\n",
                )
                .unwrap();
            },
            "/boot/efi/loader/entries/zzz-shell.conf:2: the default entry has `efi`",
        ),
        (
            "a missing kernel",
            |esp| fs::remove_file(esp.join(format!("debian/{NEW}/linux"))).unwrap(),
            "is not a file here",
        ),
        (
            "no command line",
            |esp| {
                fs::write(
                    esp.join("loader/entries/zz.conf"),
                    format!("sort-key a\nlinux /debian/{NEW}/linux\n"),
                )
                .unwrap();
            },
            "/boot/efi/loader/entries/zz.conf: the default entry gives no command line",
        ),
    ];
    for (name, break_it, said) in cases {
        let r = root();
        break_it(&esp(&r));
        let why = next_entry(r.path()).unwrap_err();
        assert!(why.contains(said), "{name}: {why}");
    }
}

/// Where grub.cfg is absent and systemd-boot's entries are, the kexec plan boots systemd-boot's
/// default entry; with neither, it says where it looked.
#[test]
fn the_kexec_plan_reads_systemd_boot_where_grub_is_absent() {
    let r = root();
    let plan = fastpath::kexec_plan(r.path(), None);
    let e = plan.entry.expect("an entry");
    assert_eq!(e.release().as_deref(), Some(NEW));
    assert!(
        !plan.refusals.iter().any(|w| w.contains("systemd-boot")),
        "{:?}",
        plan.refusals
    );
    let empty = tempfile::tempdir().unwrap();
    let plan = fastpath::kexec_plan(empty.path(), None);
    assert!(plan.entry.is_none());
    assert!(
        plan.refusals
            .iter()
            .any(|w| w.contains("systemd-boot's loader/ under /efi, /boot, /boot/efi")),
        "{:?}",
        plan.refusals
    );
}
