//! `package --generator dracut` (GRUB, under either firmware): the package test on a machine
//! as Fedora and RHEL have it, systemd as init and dracut's initramfs with systemd inside
//! (grub_disk.rs, `Generator::Dracut`; docs/testbed.md, "`package`: the package test"). Four
//! boots through the firmware and GRUB, each from the disk the one before left:
//!
//! 1. stock (dracut's systemd ran in the initramfs): `dpkg -i` the .deb (the next boot's
//!    files must not change), `bootprint enable --all` (the sysvinit runner left out, with
//!    its reason);
//! 2. bootprint on through dracut's initramfs: systemd there hands over to bootprint's
//!    recorder (`init=` on the command line), whose trace the host's `bootprint report` and
//!    `bootprint kernel` read (the initramfs phase ends at systemd's switch root); the kernel
//!    upgrade: Debian's dracut hook builds the new kernel's initramfs, bootprint's hook its
//!    own, GRUB offers both; `enable --default` makes bootprint's entry GRUB's default;
//! 3. the new kernel through bootprint's initramfs (its /init ran, its trace); `bootprint
//!    disable`: nothing of bootprint left in what decides the next boot;
//! 4. stock on the new kernel through its dracut initramfs (built in the guest, host-only);
//!    `apt-get purge bootprint`: the boot files as after `disable`.

use std::path::Path;

use crate::checks::checklist::Checks;
use crate::checks::late_test::sections;
use crate::checks::package_test::{
    after, boot, check_disable, check_grub_init, check_installed, check_ours_on_new, check_purge,
    check_trace, check_upgrade_and_default, lines, out, rc0, upgrade_and_default, Machine,
    Prepared, DISABLE, INIT_WORD, PURGE,
};
use crate::vm::grub_disk::{Generator, Loader, Root};
use crate::vm::qemu::BootResult;
use crate::vm::util::{Paths, Result};

/// Prints `Running in initrd` when systemd ran in this boot's initramfs (its first lines go
/// to the kernel's log before journald runs; journald keeps the rest).
const SYSTEMD_IN_INITRD: &str =
    "{ dmesg; journalctl -b -q -o cat 2>/dev/null; } | grep -m1 -o 'Running in initrd'";

pub fn package(paths: &Paths, deb: &Path, cargo: bool, root: Root, c: &mut Checks) -> Result<()> {
    let p = Prepared::new(paths, deb, cargo, Loader::Grub, Generator::Dracut, root)?;
    let (m, first) = (p.machine(paths), &p.first);
    let r1 = install_and_enable(&m, first, c)?;
    let r2 = through_dracut_and_kernel_upgrade(&m, &after(&r1, first), c)?;
    let r3 = ours_and_disable(&m, &after(&r2, first), c)?;
    let r4 = stock_and_purge(&m, &after(&r3, first), &r3, c)?;
    p.clean_up(&r4);
    Ok(())
}

/// Whether the boot's `initrd` section says systemd ran in the initramfs.
fn systemd_in_initrd(s: &[(String, std::collections::BTreeSet<String>)]) -> bool {
    lines(s, "initrd").iter().any(|l| l == "Running in initrd")
}

/// Boot 1: stock; install, enable.
fn install_and_enable(m: &Machine, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let r = boot(
        m,
        disk,
        false,
        &format!(
            r#"section cmdline; cat /proc/cmdline
section init; readlink -f /sbin/init
section initrd; {SYSTEMD_IN_INITRD}
section before; snap
dpkg -i $d/bootprint.deb > /tmp/dpkg.log 2>&1; rc=$?
section install; echo "rc=$rc"; tail -n 20 /tmp/dpkg.log
section after-install; snap
bootprint enable --all > /tmp/enable.log 2>&1; rc=$?
section enable; echo "rc=$rc"; cat /tmp/enable.log
section grub-cmdline; grep -o 'init=[^ ]*' /boot/grub/grub.cfg | sort -u
"#
        ),
    )?;
    let s = sections(&out(&r));
    let cmdline = lines(&s, "cmdline");
    c.check(
        !cmdline.is_empty() && !cmdline.iter().any(|l| l.contains("bootprint")),
        &format!("boot 1 (dracut) is stock: {}", cmdline.join(" ")),
    );
    c.check(
        lines(&s, "init").first().map(String::as_str) == Some("/usr/lib/systemd/systemd")
            && systemd_in_initrd(&s),
        &format!(
            "systemd is init, and ran in dracut's initramfs first: {:?}, {:?}",
            lines(&s, "init"),
            lines(&s, "initrd")
        ),
    );
    check_installed(c, &s);
    let enable = lines(&s, "enable");
    c.check(
        rc0(&s, "enable") && enable.iter().any(|l| l.starts_with("--all: rc left out:")),
        &format!(
            "bootprint enable --all, the sysvinit runner left out with its reason: {}",
            enable.join(" | ")
        ),
    );
    check_grub_init(c, &s);
    Ok(r)
}

/// Boot 2: bootprint on through dracut's initramfs; the kernel upgrade; bootprint's entry
/// made the default.
fn through_dracut_and_kernel_upgrade(
    m: &Machine,
    disk: &Path,
    c: &mut Checks,
) -> Result<BootResult> {
    let (old, new) = (m.old, m.new);
    let r = boot(
        m,
        disk,
        true,
        &format!(
            r#"section cmdline; cat /proc/cmdline
section initrd; {SYSTEMD_IN_INITRD}
section initramfs; test -e /run/bootprint/initramfs.log && echo ran
section status; bootprint status > /tmp/status.log 2>&1; echo "rc=$?"; cat /tmp/status.log
{}"#,
            upgrade_and_default(new)
        ),
    )?;
    let s = sections(&out(&r));
    c.check(
        lines(&s, "cmdline").iter().any(|l| l.contains(INIT_WORD))
            && systemd_in_initrd(&s)
            && lines(&s, "initramfs").is_empty(),
        &format!(
            "boot 2 runs bootprint after dracut's systemd ({:?}): {}",
            lines(&s, "initrd"),
            lines(&s, "cmdline").join(" ")
        ),
    );
    check_trace(c, m.paths, "boot 2", &r, old);
    initramfs_phase(c, m.paths, &r);
    c.check(
        rc0(&s, "status"),
        &format!("bootprint status: {}", lines(&s, "status").join(" | ")),
    );
    check_upgrade_and_default(c, &s, new);
    let files = lines(&s, "boot-files");
    let dracuts = format!("initrd.img-{new}");
    let ours = format!("bootprint-initrd.img-{new}");
    c.check(
        files.contains(&dracuts) && files.contains(&ours),
        &format!("the kernel upgrade built dracut's {dracuts} and bootprint's {ours}: {files:?}"),
    );
    let entries = lines(&s, "grub-entries");
    let initrd_of = |image: &str| {
        entries
            .iter()
            .any(|e| e.starts_with("initrd") && e.ends_with(&format!("/{image}")))
    };
    c.check(
        initrd_of(&dracuts) && initrd_of(&ours),
        &format!(
            "GRUB offers {new} with either initramfs ({} entry lines)",
            entries.len()
        ),
    );
    Ok(r)
}

/// The boot's kernel log as `bootprint kernel` reads it from the trace: systemd ran in the
/// initramfs, and the initramfs phase lasts until its switch root (the reader once ended it
/// at systemd's first line, ~0.01 s).
fn initramfs_phase(c: &mut Checks, paths: &Paths, r: &BootResult) {
    let Some(dir) = &r.trace_dir else {
        return;
    };
    let json = crate::checks::smoke::run_cli(paths, "kernel", dir).ok();
    let boot = json.as_ref().map(|j| j["boot"].clone());
    let init = boot
        .as_ref()
        .and_then(|b| b["initramfs_init"].as_str().map(str::to_string));
    let us = boot
        .as_ref()
        .and_then(|b| b["phases"]["initramfs_us"].as_u64());
    c.check(
        init.as_deref().is_some_and(|i| i.starts_with("systemd")) && us.unwrap_or(0) >= 100_000,
        &format!(
            "boot 2: `bootprint kernel` on the trace: {init:?} in the initramfs for {us:?} µs \
             (at least 0.1 s: until the switch root)"
        ),
    );
}

/// Boot 3: the new kernel through bootprint's initramfs (GRUB's default now); disable.
fn ours_and_disable(m: &Machine, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let r = boot(
        m,
        disk,
        true,
        &format!(
            r#"section release; uname -r
section cmdline; cat /proc/cmdline
section initramfs; test -e /run/bootprint/initramfs.log && echo ran
{DISABLE}"#
        ),
    )?;
    let s = sections(&out(&r));
    check_ours_on_new(c, m, &s, &r, "GRUB's default");
    check_disable(c, &s);
    Ok(r)
}

/// Boot 4: stock on the new kernel through its dracut initramfs; purge.
fn stock_and_purge(
    m: &Machine,
    disk: &Path,
    disabled: &BootResult,
    c: &mut Checks,
) -> Result<BootResult> {
    let new = m.new;
    let r = boot(
        m,
        disk,
        false,
        &format!(
            r#"section release; uname -r
section cmdline; cat /proc/cmdline
section initrd; {SYSTEMD_IN_INITRD}
{PURGE}"#
        ),
    )?;
    let s = sections(&out(&r));
    c.check(
        lines(&s, "release").first() == Some(new)
            && !lines(&s, "cmdline").iter().any(|l| l.contains("bootprint"))
            && systemd_in_initrd(&s),
        &format!(
            "boot 4 is stock on the new kernel, through its dracut initramfs ({:?}): {}",
            lines(&s, "initrd"),
            lines(&s, "cmdline").join(" ")
        ),
    );
    check_purge(c, &s, disabled);
    Ok(r)
}
