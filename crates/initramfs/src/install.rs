//! Installing the image as an extra GRUB boot entry beside the distribution's: a
//! `/etc/grub.d/` snippet that `update-grub` turns into a menu entry. The default entry is
//! left alone; making ours the default is a separate, explicit step (docs/initramfs.md).

/// The snippet's file name: after 10_linux, so the distribution's entries come first.
pub const SNIPPET: &str = "/etc/grub.d/42_bootprint";

/// The text of the snippet: a shell script GRUB's grub-mkconfig runs; it prints one menu
/// entry that boots `kernel` with `initrd` and the running system's command line `cmdline`
/// (its `BOOT_IMAGE=` and `initrd=` words dropped). `boot_uuid` is the file system holding
/// /boot (for GRUB's `search`), `boot_prefix` its path on that file system (`/boot` when
/// /boot is on the root, empty when it is a partition of its own).
pub fn snippet(
    kernel: &str,
    initrd: &str,
    cmdline: &str,
    boot_uuid: &str,
    boot_prefix: &str,
) -> String {
    let args: Vec<&str> = cmdline
        .split_whitespace()
        .filter(|w| !w.starts_with("BOOT_IMAGE=") && !w.starts_with("initrd="))
        .collect();
    let file = |p: &str| format!("{boot_prefix}/{}", p.rsplit('/').next().unwrap_or(p));
    format!(
        "#!/bin/sh\n\
         # Written by `bootprint initramfs install`: an extra entry booting with bootprint's\n\
         # initramfs. The distribution's entries and the default are unchanged. Remove this\n\
         # file and run update-grub to drop it.\n\
         cat <<'EOF'\n\
         menuentry 'bootprint initramfs ({kernel})' --id bootprint-initramfs {{\n\
         \tsearch --no-floppy --fs-uuid --set=root {boot_uuid}\n\
         \tlinux {} {}\n\
         \tinitrd {}\n\
         }}\n\
         EOF\n",
        file(&format!("vmlinuz-{kernel}")),
        args.join(" "),
        file(initrd)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_keeps_the_command_line_and_names_our_initrd() {
        let s = snippet(
            "6.1.0-50-amd64",
            "/boot/bootprint-initrd.img-6.1.0-50-amd64",
            "BOOT_IMAGE=/boot/vmlinuz-6.1.0-50-amd64 root=UUID=ab-cd ro quiet",
            "ab-cd",
            "/boot",
        );
        assert!(s.starts_with("#!/bin/sh\n"));
        assert!(s.contains("--id bootprint-initramfs"));
        assert!(
            s.contains("\tlinux /boot/vmlinuz-6.1.0-50-amd64 root=UUID=ab-cd ro quiet\n"),
            "{s}"
        );
        assert!(s.contains("\tinitrd /boot/bootprint-initrd.img-6.1.0-50-amd64\n"));
        assert!(!s.contains("BOOT_IMAGE"));
        assert!(!s.contains("set default"), "never changes the default");
    }
}
