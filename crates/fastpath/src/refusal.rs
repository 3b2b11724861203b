//! Why a fast path is not taken. Each check reads the system under a root directory (`/` on
//! a real machine) and says what it found and what to do; an empty list means the path is
//! safe to take. A kexec must boot what a reset would boot, under the same trust; a soft
//! reboot must not keep a kernel, modules or initramfs the machine no longer boots.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::{cmp_release, release_of, BootEntry};

/// The EFI global variables' vendor GUID (UEFI 2.10, 3.3 "Globally Defined Variables").
const EFI_GLOBAL: &str = "8be4df61-93ca-11d2-aa0d-00e098032b8c";
/// fwupd's UEFI capsule plugin keeps a pending update in `fwupd-*` variables of this GUID
/// (fwupd, plugins/uefi-capsule: FU_EFIVARS_GUID_FWUPDATE).
const FWUPD_GUID: &str = "0abba7dc-e516-4167-bbf5-4d9d1c739416";
/// OsIndications bits that ask the firmware to act at the next reset: boot to its setup
/// (EFI_OS_INDICATIONS_BOOT_TO_FW_UI) and deliver a capsule from disk
/// (EFI_OS_INDICATIONS_FILE_CAPSULE_DELIVERY_SUPPORTED), UEFI 2.10, 8.5.4.
const OS_INDICATIONS_AT_RESET: u64 = 0x1 | 0x4;
/// The first systemd with `systemctl soft-reboot` (NEWS, v254).
pub const SOFT_REBOOT_SINCE: u32 = 254;

fn efivar(root: &Path, name: &str) -> PathBuf {
    root.join(crate::EFIVARS).join(name)
}

/// An EFI variable's value (efivarfs puts 4 bytes of attributes first).
fn efivar_value(root: &Path, name: &str) -> Option<Vec<u8>> {
    let bytes = fs::read(efivar(root, name)).ok()?;
    (bytes.len() > 4).then(|| bytes[4..].to_vec())
}

/// Why the kernel cannot kexec at all, or must not here.
pub fn kexec_kernel(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if !root.join("sys/kernel/kexec_loaded").exists() {
        out.push(
            "this kernel has no kexec (no /sys/kernel/kexec_loaded: CONFIG_KEXEC_CORE is off)"
                .to_string(),
        );
        return out;
    }
    if fs::read_to_string(root.join("proc/sys/kernel/kexec_load_disabled"))
        .is_ok_and(|s| s.trim() == "1")
    {
        out.push(
            "kexec is switched off until the next boot (kernel.kexec_load_disabled = 1)".into(),
        );
    }
    if let Ok(s) = fs::read_to_string(root.join("sys/kernel/security/lockdown")) {
        let chosen = s
            .split_whitespace()
            .find(|w| w.starts_with('['))
            .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string());
        if let Some(mode) = chosen.filter(|m| m != "none") {
            out.push(format!(
                "the kernel is locked down ({mode}, /sys/kernel/security/lockdown): a kexec'd \
                 kernel would have to pass the signature check the firmware and shim make, \
                 which bootprint does not take on; reboot normally"
            ));
        }
    }
    if efivar_value(root, &format!("SecureBoot-{EFI_GLOBAL}")).is_some_and(|v| v[0] == 1) {
        out.push(
            "Secure Boot is on (EFI variable SecureBoot = 1): a kexec would bypass the \
             firmware's signature chain; reboot normally"
                .into(),
        );
    }
    out
}

/// Why the next reset must go through the firmware: it has something to do then.
pub fn firmware_pending(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(v) = efivar_value(root, &format!("OsIndications-{EFI_GLOBAL}")) {
        let mut b = [0u8; 8];
        let n = v.len().min(8);
        b[..n].copy_from_slice(&v[..n]);
        let bits = u64::from_le_bytes(b) & OS_INDICATIONS_AT_RESET;
        if bits != 0 {
            out.push(format!(
                "the firmware is asked to act at the next reset (EFI OsIndications {bits:#x}: \
                 its setup screen or a capsule update); reboot normally"
            ));
        }
    }
    if let Ok(names) = fs::read_dir(root.join(crate::EFIVARS)) {
        let mut pending: Vec<String> = names
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with("fwupd-") && n.ends_with(FWUPD_GUID))
            .collect();
        pending.sort();
        if let Some(first) = pending.first() {
            out.push(format!(
                "fwupd has a firmware update waiting for the next reset (EFI variable \
                 {first}); reboot normally"
            ));
        }
    }
    out
}

/// The kernel releases installed in /boot (`vmlinuz-RELEASE`), newest first, with their
/// images.
pub fn installed_kernels(root: &Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = fs::read_dir(root.join("boot"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-"))
        })
        .filter_map(|p| Some((release_of(&p)?, p)))
        .collect();
    out.sort_by(|a, b| cmp_release(&b.0, &a.0));
    out
}

/// Why the boot loader's next entry is not what the user expects a reboot to boot: a newer
/// kernel is installed than the one it boots, or the loader's configuration was written
/// before the newest kernel arrived.
pub fn stale_entry(root: &Path, entry: &BootEntry, config: Option<&Path>) -> Vec<String> {
    let mut out = Vec::new();
    let installed = installed_kernels(root);
    if let (Some((newest, _)), Some(rel)) = (installed.first(), entry.release()) {
        if cmp_release(newest, &rel).is_gt() {
            out.push(format!(
                "kernel {newest} is installed but the boot loader's next entry boots {rel}: \
                 its entry is not the default yet (update-grub or kernel-install has not made \
                 it so, or another is chosen), or reboot normally"
            ));
        }
    }
    let mtime = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    if let Some(cfg_time) = config.and_then(mtime) {
        if let Some((rel, img)) = installed
            .iter()
            .filter(|(_, img)| mtime(img).is_some_and(|t| t > cfg_time))
            .max_by(|a, b| cmp_release(&a.0, &b.0))
        {
            out.push(format!(
                "{} changed after {} was written ({rel}'s image): the boot loader's menu may \
                 not be what it boots now; run update-grub, or reboot normally",
                img.display(),
                config.map(|c| c.display().to_string()).unwrap_or_default()
            ));
        }
    }
    out
}

/// Why a soft reboot (userspace only) is not safe on the system under `root` running
/// kernel `running` since `booted_at`: it is not systemd, or one too old, or the kernel
/// below userspace is no longer what the machine would boot.
pub fn soft_reboot(
    root: &Path,
    systemd_version: Option<u32>,
    running: &str,
    booted_at: SystemTime,
) -> Vec<String> {
    let mut out = Vec::new();
    if !root.join("run/systemd/system").is_dir() {
        out.push("a soft reboot is systemd's: this system is not running systemd".into());
        return out;
    }
    match systemd_version {
        Some(v) if v >= SOFT_REBOOT_SINCE => {}
        Some(v) => out.push(format!(
            "systemd {v} has no soft-reboot (it came in {SOFT_REBOOT_SINCE})"
        )),
        None => out.push("systemd's version is unknown (`systemctl --version`)".into()),
    }
    if !root.join("lib/modules").join(running).is_dir() {
        out.push(format!(
            "the running kernel's modules are gone (/lib/modules/{running}): userspace would \
             come back unable to load a module; reboot normally"
        ));
    }
    if let Some((newest, _)) = installed_kernels(root).first() {
        if cmp_release(newest, running).is_gt() {
            out.push(format!(
                "kernel {newest} is installed and newer than the running {running}: a soft \
                 reboot keeps {running}; reboot normally to boot {newest}"
            ));
        }
    }
    let initrd = root.join("boot").join(format!("initrd.img-{running}"));
    if fs::metadata(&initrd)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t > booted_at)
    {
        out.push(format!(
            "{} changed since this boot: a soft reboot would not run it; reboot normally",
            initrd.display()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn put(root: &Path, rel: &str, bytes: &[u8]) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
    }

    fn put_efivar(root: &Path, name: &str, bytes: &[u8]) {
        put(root, &format!("{}/{name}", crate::EFIVARS), bytes);
    }

    /// Makes the file at `path` an hour old.
    fn age(path: &Path) {
        let old = SystemTime::now() - Duration::from_secs(3600);
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }

    #[test]
    fn a_kernel_without_kexec_is_refused_and_nothing_else_said() {
        let d = tempfile::tempdir().unwrap();
        let r = kexec_kernel(d.path());
        assert_eq!(r.len(), 1);
        assert!(r[0].contains("CONFIG_KEXEC_CORE"), "{r:?}");
    }

    #[test]
    fn lockdown_secure_boot_and_disabled_kexec_are_refused() {
        let d = tempfile::tempdir().unwrap();
        put(d.path(), "sys/kernel/kexec_loaded", b"0\n");
        put(
            d.path(),
            "sys/kernel/security/lockdown",
            b"none integrity [confidentiality]\n",
        );
        put(d.path(), "proc/sys/kernel/kexec_load_disabled", b"1\n");
        put_efivar(
            d.path(),
            &format!("SecureBoot-{EFI_GLOBAL}"),
            &[6, 0, 0, 0, 1],
        );
        let r = kexec_kernel(d.path());
        assert_eq!(r.len(), 3, "{r:?}");
        assert!(r[0].contains("kexec_load_disabled"));
        assert!(r[1].contains("confidentiality"));
        assert!(r[2].contains("Secure Boot"));
        // The same machine unlocked: nothing to say.
        put(
            d.path(),
            "sys/kernel/security/lockdown",
            b"[none] integrity confidentiality\n",
        );
        put(d.path(), "proc/sys/kernel/kexec_load_disabled", b"0\n");
        put_efivar(
            d.path(),
            &format!("SecureBoot-{EFI_GLOBAL}"),
            &[6, 0, 0, 0, 0],
        );
        assert_eq!(kexec_kernel(d.path()), Vec::<String>::new());
    }

    #[test]
    fn firmware_work_at_the_reset_is_refused() {
        let d = tempfile::tempdir().unwrap();
        assert!(firmware_pending(d.path()).is_empty());
        put_efivar(
            d.path(),
            &format!("OsIndications-{EFI_GLOBAL}"),
            &[7, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0],
        );
        put_efivar(
            d.path(),
            &format!("fwupd-abc-0-{FWUPD_GUID}"),
            &[7, 0, 0, 0, 1],
        );
        let r = firmware_pending(d.path());
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r[0].contains("0x4"));
        assert!(r[1].contains("fwupd"));
        // OsIndications with only bits the reset does not act on.
        put_efivar(
            d.path(),
            &format!("OsIndications-{EFI_GLOBAL}"),
            &[7, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0],
        );
        assert_eq!(firmware_pending(d.path()).len(), 1);
    }

    #[test]
    fn a_newer_kernel_than_the_entry_is_refused() {
        let d = tempfile::tempdir().unwrap();
        put(d.path(), "boot/vmlinuz-6.1.0-9-amd64", b"k");
        put(d.path(), "boot/vmlinuz-6.1.0-13-amd64", b"k");
        let entry = |rel: &str| BootEntry {
            kernel: d.path().join(format!("boot/vmlinuz-{rel}")),
            initrds: vec![],
            cmdline: String::new(),
            source: "test".into(),
        };
        let r = stale_entry(d.path(), &entry("6.1.0-9-amd64"), None);
        assert_eq!(r.len(), 1);
        assert!(r[0].contains("6.1.0-13-amd64 is installed"), "{r:?}");
        assert!(stale_entry(d.path(), &entry("6.1.0-13-amd64"), None).is_empty());
        // A grub.cfg older than the newest image.
        let cfg = d.path().join("boot/grub/grub.cfg");
        put(d.path(), "boot/grub/grub.cfg", b"");
        age(&cfg);
        let r = stale_entry(d.path(), &entry("6.1.0-13-amd64"), Some(&cfg));
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(r[0].contains("run update-grub"));
    }

    #[test]
    fn soft_reboot_needs_systemd_and_the_kernel_it_keeps() {
        let d = tempfile::tempdir().unwrap();
        let t0 = SystemTime::now() - Duration::from_secs(600);
        let r = soft_reboot(d.path(), Some(257), "6.1.0-13-amd64", t0);
        assert_eq!(r.len(), 1);
        assert!(r[0].contains("not running systemd"));
        fs::create_dir_all(d.path().join("run/systemd/system")).unwrap();
        fs::create_dir_all(d.path().join("lib/modules/6.1.0-13-amd64")).unwrap();
        put(d.path(), "boot/vmlinuz-6.1.0-13-amd64", b"k");
        put(d.path(), "boot/initrd.img-6.1.0-13-amd64", b"i");
        age(&d.path().join("boot/initrd.img-6.1.0-13-amd64"));
        assert!(soft_reboot(d.path(), Some(257), "6.1.0-13-amd64", t0).is_empty());
        assert!(soft_reboot(d.path(), Some(252), "6.1.0-13-amd64", t0)[0].contains("252"));
        put(d.path(), "boot/vmlinuz-6.1.0-14-amd64", b"k");
        put(d.path(), "boot/initrd.img-6.1.0-13-amd64", b"i2");
        let r = soft_reboot(d.path(), Some(257), "6.1.0-13-amd64", t0);
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r[0].contains("6.1.0-14-amd64 is installed"));
        assert!(r[1].contains("changed since this boot"));
        fs::remove_dir(d.path().join("lib/modules/6.1.0-13-amd64")).unwrap();
        assert!(soft_reboot(d.path(), Some(257), "6.1.0-13-amd64", t0)
            .iter()
            .any(|r| r.contains("modules are gone")));
    }
}
