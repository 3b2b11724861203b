//! The GRUB snippet `bootprint initramfs install` writes, checked by GRUB's own tools: the
//! script runs under `sh` as grub-mkconfig would run it, and what it prints must pass
//! `grub-script-check` (grub-common, installed by scripts/install-deps.sh). The test bed
//! boots QEMU's `-kernel` without GRUB, so this is where GRUB itself reads our entry.

use std::process::Command;

use initramfs::install::snippet;

/// `grub-script-check FILE`: Ok when GRUB parses it, Err with its message otherwise.
fn grub_check(text: &str, dir: &std::path::Path) -> Result<(), String> {
    let f = dir.join("entry.cfg");
    std::fs::write(&f, text).unwrap();
    let o = Command::new("grub-script-check").arg(&f).output().unwrap();
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr))
    }
}

#[test]
fn the_snippet_prints_one_entry_grub_accepts() {
    if Command::new("grub-script-check")
        .arg("--version")
        .output()
        .is_err()
    {
        testkit::skip(
            "grub-script-check is not installed (scripts/install-deps.sh installs grub-common)",
        );
        return;
    }
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    // The test bed's command line, with what GRUB itself adds.
    let script = snippet(
        "6.1.0-50-amd64",
        "/boot/bootprint-initrd.img-6.1.0-50-amd64",
        "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-amd64 console=ttyS0 root=/dev/vda rw quiet loglevel=6",
        "0f1e2d3c-4b5a-4697-8877-665544332211",
        "/boot",
    );
    let path = d.join("42_bootprint");
    std::fs::write(&path, &script).unwrap();
    let o = Command::new("sh").arg(&path).output().unwrap();
    assert!(o.status.success(), "the snippet failed under sh: {o:?}");
    let entry = String::from_utf8(o.stdout).unwrap();
    assert_eq!(entry.matches("menuentry ").count(), 1, "{entry}");
    assert!(
        entry.contains("\tlinux /boot/vmlinuz-6.1.0-50-amd64 console=ttyS0 root=/dev/vda rw quiet loglevel=6\n"),
        "{entry}"
    );
    assert!(entry.contains("--fs-uuid --set=root 0f1e2d3c-4b5a-4697-8877-665544332211"));
    assert!(!entry.contains("set default"), "never changes the default");
    grub_check(&entry, d).unwrap_or_else(|e| panic!("GRUB rejects our entry: {e}\n{entry}"));
    // The check can fail: the same entry without its closing brace is refused.
    let broken = entry.trim_end().trim_end_matches('}').to_string();
    assert!(grub_check(&broken, d).is_err(), "{broken}");
}
