//! `package --loader systemd-boot` (with `--firmware uefi`): the package test on a machine
//! systemd-boot boots, its entries written by kernel-install (grub_disk.rs, "systemd-boot"
//! layout; docs/testbed.md, "`package`: the package test"). Five boots through OVMF and
//! systemd-boot, each from the disk the one before left:
//!
//! 1. stock: `dpkg -i` the .deb, `bootprint enable --all`: the kernel's entry gets the
//!    levers' parameters, bootprint's initramfs entry appears beside it;
//! 2. bootprint on (its trace read by the host's `bootprint report`; systemd-boot's firmware
//!    and loader times, where it set them, read from it by `bootprint kernel`), then the kernel
//!    upgrade: Debian's hooks (zz-bootprint, then zz-systemd-boot's kernel-install) give the
//!    new kernel both entries; the test makes bootprint's entry of the new kernel the next
//!    boot's default (loader.conf: OVMF keeps no EFI variable from one boot to the next, so
//!    `bootctl set-oneshot` cannot); then boot 2b: that entry through the firmware, and
//!    `bootprint reboot --kexec` into it again: the fast path reads systemd-boot's default
//!    from its files (as `bootctl` does) and boots it without the firmware;
//! 3. the new kernel through bootprint's initramfs entry (its /init ran, its trace), then
//!    the default put back and `bootprint disable`: every entry as kernel-install alone
//!    writes it (the old kernel's byte for byte as before enable), bootprint's gone;
//! 4. stock on the new kernel; `apt-get purge bootprint`: the plugin gone with it.
//!
//! With `--generator dracut` the machine runs systemd and dracut's kernel-install plugin
//! sits beside bootprint's: the same five boots pass (`make matrix`); a new kernel's stock
//! entry has two `initrd` lines (Debian's dracut hook and kernel-install's each built one),
//! bootprint's entry one, its own.

use std::path::Path;

use crate::checks::checklist::Checks;
use crate::checks::late_test::sections;
use crate::checks::package_test::{
    after, boot, boot_rebooting, check_ours_on_new, check_trace, lines, out, rc0, Machine,
    Prepared, INIT_WORD,
};
use crate::vm::grub_disk::{Generator, Loader, Root};
use crate::vm::qemu::BootResult;
use crate::vm::util::{Paths, Result};

/// Where kernel-install puts the entries on the test bed's systemd-boot disk (the ESP at
/// /boot/efi, entry token `debian`).
const ENTRIES: &str = "/boot/efi/loader/entries";

pub fn package(
    paths: &Paths,
    deb: &Path,
    cargo: bool,
    generator: Generator,
    c: &mut Checks,
) -> Result<()> {
    let p = Prepared::new(
        paths,
        deb,
        cargo,
        Loader::SystemdBoot,
        generator,
        Root::Ext4,
    )?;
    let (m, first) = (p.machine(paths), &p.first);
    let (r1, stock_entry) = install_and_enable(&m, first, c)?;
    let r2 = on_and_kernel_upgrade(&m, &after(&r1, first), c)?;
    let fast = fast_path(&m, &after(&r2, first), c)?;
    let r3 = ours_and_disable(&m, &after(&fast, first), &stock_entry, c)?;
    let r4 = stock_and_purge(&m, &after(&r3, first), c)?;
    p.clean_up(&r4);
    Ok(())
}

/// Boot 1: stock; install, enable. Returns the boot and the old kernel's entry as
/// kernel-install wrote it (its md5sum line), for the disable.
fn install_and_enable(m: &Machine, disk: &Path, c: &mut Checks) -> Result<(BootResult, String)> {
    let old = m.old;
    let r = boot(
        m,
        disk,
        false,
        &format!(
            r#"section cmdline; cat /proc/cmdline
section stock-entry; md5sum {ENTRIES}/debian-{old}.conf
dpkg -i $d/bootprint.deb > /tmp/dpkg.log 2>&1; rc=$?
section install; echo "rc=$rc"; tail -n 20 /tmp/dpkg.log
bootprint enable --all > /tmp/enable.log 2>&1; rc=$?
section enable; echo "rc=$rc"; cat /tmp/enable.log
section entry; cat {ENTRIES}/debian-{old}.conf
section entries; ls -1 {ENTRIES}
section status; bootprint status > /tmp/status.log 2>&1; echo "rc=$?"; cat /tmp/status.log
"#
        ),
    )?;
    let s = sections(&out(&r));
    let cmdline = lines(&s, "cmdline");
    c.check(
        !cmdline.iter().any(|l| l.contains("bootprint")) && !cmdline.is_empty(),
        &format!("boot 1 (systemd-boot) is stock: {}", cmdline.join(" ")),
    );
    c.check(
        rc0(&s, "install"),
        &format!("dpkg -i the .deb: {}", lines(&s, "install").join(" | ")),
    );
    c.check(
        rc0(&s, "enable")
            && lines(&s, "enable")
                .iter()
                .any(|l| l.contains("kernel-install add")),
        &format!(
            "bootprint enable --all: {}",
            lines(&s, "enable").join(" | ")
        ),
    );
    let entry = lines(&s, "entry");
    c.check(
        entry
            .iter()
            .any(|l| l.starts_with("options") && l.contains(INIT_WORD)),
        &format!("the kernel's entry boots bootprint: {entry:?}"),
    );
    let ours = format!("debian-{old}-bootprint.conf");
    c.check(
        lines(&s, "entries").contains(&ours),
        &format!(
            "bootprint's initramfs entry {ours} beside it: {:?}",
            lines(&s, "entries")
        ),
    );
    c.check(
        rc0(&s, "status")
            && lines(&s, "status")
                .iter()
                .any(|l| l.starts_with("boot loader: systemd-boot")),
        &format!("bootprint status: {}", lines(&s, "status").join(" | ")),
    );
    let stock = lines(&s, "stock-entry").join("");
    Ok((r, stock))
}

/// Boot 2: bootprint on; the kernel upgrade; bootprint's entry of the new kernel made the default.
fn on_and_kernel_upgrade(m: &Machine, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let (old, new) = (m.old, m.new);
    let r = boot(
        m,
        disk,
        true,
        &format!(
            r#"section cmdline; cat /proc/cmdline
dpkg -i $d/debs/linux-image-{new}_*.deb > /tmp/kernel.log 2>&1; rc=$?
section kernel; echo "rc=$rc"; tail -n 20 /tmp/kernel.log
section entries; ls -1 {ENTRIES}
section new-entry; cat {ENTRIES}/debian-{new}.conf
section new-files; ls -1 /boot/efi/debian/{new}
section loader-times
for v in LoaderTimeInitUSec LoaderTimeExecUSec; do
  f=/sys/firmware/efi/efivars/$v-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f
  [ -e $f ] && echo "$v $(tail -c +5 $f | tr -d '\000')"
done
echo end
echo "default debian-{new}-bootprint.conf" >> /boot/efi/loader/loader.conf
"#
        ),
    )?;
    let s = sections(&out(&r));
    c.check(
        lines(&s, "cmdline").iter().any(|l| l.contains(INIT_WORD)),
        &format!("boot 2 runs bootprint: {}", lines(&s, "cmdline").join(" ")),
    );
    check_trace(c, m.paths, "boot 2", &r, old);
    let guest = |v: &str| {
        lines(&s, "loader-times")
            .iter()
            .find_map(|l| l.strip_prefix(v)?.trim().parse::<u64>().ok())
    };
    loader_times(
        c,
        m.paths,
        &r,
        (guest("LoaderTimeInitUSec"), guest("LoaderTimeExecUSec")),
    );
    c.check(
        rc0(&s, "kernel"),
        &format!(
            "dpkg -i linux-image-{new}: {}",
            lines(&s, "kernel").join(" | ")
        ),
    );
    c.check(
        lines(&s, "new-entry")
            .iter()
            .any(|l| l.starts_with("options") && l.contains(INIT_WORD)),
        &format!(
            "the new kernel's entry carries the levers: {:?}",
            lines(&s, "new-entry")
        ),
    );
    let ours = format!("debian-{new}-bootprint.conf");
    c.check(
        lines(&s, "entries").contains(&ours)
            && lines(&s, "new-files")
                .iter()
                .any(|f| f == "bootprint-initrd"),
        &format!(
            "the kernel hooks gave the new kernel bootprint's entry and image: {:?}, {:?}",
            lines(&s, "entries"),
            lines(&s, "new-files")
        ),
    );
    Ok(r)
}

/// The kernel command line without what a loader adds of its own (systemd-boot's
/// `initrd=` for the EFI stub, GRUB's `BOOT_IMAGE=`), as a set of words.
fn entry_words(cmdline: &str) -> std::collections::BTreeSet<&str> {
    cmdline
        .split_whitespace()
        .filter(|w| !w.starts_with("initrd=") && !w.starts_with("BOOT_IMAGE="))
        .collect()
}

/// Boot 2b: the fast path on systemd-boot. Through the firmware and systemd-boot into
/// loader.conf's default (bootprint's entry of the new kernel, boot 2 chose it);
/// `bootprint reboot --kexec --dry-run` must read that same entry from systemd-boot's files
/// (and agree with `bootctl`, where it names a default), then `bootprint reboot --kexec`
/// goes there by kexec, no firmware between: the same kernel, bootprint's initramfs again,
/// the entry's command line. The disk is left as boot 2 left it for boot 3.
fn fast_path(m: &Machine, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let new = m.new;
    let ours = format!("debian-{new}-bootprint.conf");
    let r = boot_rebooting(
        m,
        disk,
        r#"section first-cmdline; cat /proc/cmdline
section first-release; uname -r
bootprint reboot --kexec --dry-run > /tmp/kexec.log 2>&1; rc=$?
section kexec-plan; echo "rc=$rc"; cat /tmp/kexec.log
section bootctl
bootctl list --json=short --no-pager 2>/dev/null | tr '{' '
' | grep '"isDefault":true' | grep -o '"id":"[^"]*"'
echo end
dmesg -n 6
"#,
        "bootprint reboot --kexec",
        r#"section cmdline; cat /proc/cmdline
section release; uname -r
section initramfs; test -e /run/bootprint/initramfs.log && echo ran
"#,
    )?;
    let before = sections(r.before_reboot_output.as_deref().unwrap_or_default());
    let after_kexec = sections(r.after_reboot_output.as_deref().unwrap_or_default());
    let plan = lines(&before, "kexec-plan");
    let kernel = format!("/boot/efi/debian/{new}/linux");
    let initrd = format!("/boot/efi/debian/{new}/bootprint-initrd");
    c.check(
        rc0(&before, "kexec-plan")
            && plan
                .iter()
                .any(|l| l.trim_start() == format!("kernel   {kernel}"))
            && plan
                .iter()
                .any(|l| l.trim_start() == format!("initrd   {initrd}"))
            && plan
                .iter()
                .any(|l| l.trim_start().starts_with("from") && l.contains(&ours)),
        &format!(
            "bootprint reboot --kexec --dry-run reads systemd-boot's default, {ours}: {}",
            plan.join(" | ")
        ),
    );
    let bootctl = lines(&before, "bootctl");
    let said = bootctl.iter().find(|l| l.starts_with("\"id\""));
    c.check(
        said.is_none_or(|l| l.contains(&format!("\"{ours}\""))),
        &format!(
            "bootctl's default is the same entry ({})",
            said.map_or("bootctl names no default here".to_string(), |l| l
                .to_string())
        ),
    );
    let by_kexec = r.cycle.as_ref().is_some_and(|c| c.by_kexec);
    c.check(
        by_kexec && r.qemu_exit == "clean",
        &format!(
            "bootprint reboot --kexec went by kexec, no firmware between (by kexec: {by_kexec}, \
             qemu_exit {})",
            r.qemu_exit
        ),
    );
    let first = lines(&before, "first-cmdline").join(" ");
    let second = lines(&after_kexec, "cmdline").join(" ");
    c.check(
        lines(&after_kexec, "release") == [new.to_string()]
            && lines(&after_kexec, "initramfs") == ["ran"]
            && !second.is_empty()
            && entry_words(&first) == entry_words(&second),
        &format!(
            "the kexec booted what systemd-boot booted: {new} ({:?}), bootprint's initramfs \
             ({:?}), the entry's command line ({second:?} against {first:?})",
            lines(&after_kexec, "release"),
            lines(&after_kexec, "initramfs")
        ),
    );
    Ok(r)
}

/// Boot 3: the new kernel through bootprint's initramfs entry; then disable.
fn ours_and_disable(
    m: &Machine,
    disk: &Path,
    stock_entry: &str,
    c: &mut Checks,
) -> Result<BootResult> {
    let (old, new) = (m.old, m.new);
    let r = boot(
        m,
        disk,
        true,
        &format!(
            r#"section release; uname -r
section cmdline; cat /proc/cmdline
section initramfs; test -e /run/bootprint/initramfs.log && echo ran
sed -i '/^default /d' /boot/efi/loader/loader.conf
bootprint disable > /tmp/disable.log 2>&1; rc=$?
section disable; echo "rc=$rc"; cat /tmp/disable.log
section entries; ls -1 {ENTRIES}
section options; grep -h '^options' {ENTRIES}/*.conf
section old-entry; md5sum {ENTRIES}/debian-{old}.conf
section files; ls -1 /boot/efi/debian/{old} /boot/efi/debian/{new}
"#
        ),
    )?;
    let s = sections(&out(&r));
    check_ours_on_new(c, m, &s, &r, "its own entry");
    c.check(
        rc0(&s, "disable"),
        &format!("bootprint disable: {}", lines(&s, "disable").join(" | ")),
    );
    let entries = lines(&s, "entries");
    c.check(
        !entries.iter().any(|e| e.contains("bootprint"))
            && !lines(&s, "options").iter().any(|l| l.contains("bootprint"))
            && !lines(&s, "files").iter().any(|f| f.contains("bootprint")),
        &format!(
            "after disable no entry, option or file of bootprint's: {entries:?}, {:?}",
            lines(&s, "options")
        ),
    );
    c.check(
        lines(&s, "old-entry").join("") == stock_entry,
        &format!(
            "the old kernel's entry is byte for byte as kernel-install wrote it before enable ({stock_entry})"
        ),
    );
    Ok(r)
}

/// Boot 4: stock on the new kernel; purge.
fn stock_and_purge(m: &Machine, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let new = m.new;
    let r = boot(
        m,
        disk,
        false,
        r#"section release; uname -r
section cmdline; cat /proc/cmdline
apt-get purge -y bootprint > /tmp/purge.log 2>&1; rc=$?
section purge; echo "rc=$rc"; tail -n 5 /tmp/purge.log
section left; ls /usr/lib/kernel/install.d /var/lib/bootprint /usr/bin/bootprint 2>&1
"#,
    )?;
    let s = sections(&out(&r));
    c.check(
        lines(&s, "release").first() == Some(new)
            && !lines(&s, "cmdline").iter().any(|l| l.contains("bootprint")),
        &format!(
            "boot 4 is stock on the new kernel: {}",
            lines(&s, "cmdline").join(" ")
        ),
    );
    let left = lines(&s, "left");
    c.check(
        rc0(&s, "purge") && !left.iter().any(|l| l.contains("91-bootprint")),
        &format!("apt-get purge bootprint, the plugin gone: {left:?}"),
    );
    Ok(r)
}

/// The firmware's and systemd-boot's own times, which systemd-boot leaves in EFI variables
/// (`LoaderTimeInitUSec`, `LoaderTimeExecUSec`: microseconds since the CPU's reset) and the
/// recorder copies into the trace: `bootprint kernel` must read from the trace what the
/// guest had (`guest`), and no times where it had none. systemd-boot reads the time-stamp
/// counter only outside a virtual machine (CPUID's hypervisor bit clear; systemd's
/// src/boot/ticks.c), and QEMU sets that bit, so here there are none (seen 2026-11-29).
fn loader_times(c: &mut Checks, paths: &Paths, r: &BootResult, guest: (Option<u64>, Option<u64>)) {
    let Some(dir) = &r.trace_dir else {
        return;
    };
    let json = crate::checks::smoke::run_cli(paths, "kernel", dir).ok();
    let loader = json.as_ref().map(|j| j["firmware"]["loader"].clone());
    let us = |k: &str| loader.as_ref().and_then(|l| l[k].as_u64());
    let read = (us("init_us"), us("exec_us"));
    let expected = match guest {
        (Some(i), Some(e)) => (Some(i), Some(e)),
        _ => (None, None),
    };
    c.check(
        json.is_some() && read == expected,
        &format!(
            "boot 2: `bootprint kernel` read from the trace the loader times the guest had \
             (LoaderTimeInitUSec, LoaderTimeExecUSec): {read:?}, the guest's {guest:?}"
        ),
    );
}
