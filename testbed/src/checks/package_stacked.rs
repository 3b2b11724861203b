//! `package --root lvm|luks|luks-lvm`: the package test on a root bootprint's initramfs
//! cannot mount: ext4 on an LVM logical volume, on LUKS2, or on LVM inside LUKS2, /boot on
//! its own partition (grub_disk.rs, `Root::stacked`; docs/testbed.md, "`package`: the
//! package test"). Four boots through the BIOS and GRUB, each from the disk the one before
//! left, Debian's initramfs opening the root's devices every time (LUKS with the key file
//! it holds):
//!
//! 1. stock: the root is the stacked device; `dpkg -i` the .deb (on LUKS copied from a
//!    second disk: the host cannot write the root), the next boot's files unchanged;
//!    `bootprint initramfs plan` refuses, naming every layer down to the partition;
//!    `bootprint enable --all` leaves the initramfs lever out with that reason and turns
//!    the others on;
//! 2. bootprint on (`init=` after Debian's initramfs): its trace, read by `bootprint
//!    report` (the host's; on LUKS the guest's); readahead learns, the module loader and
//!    the LSB runner run;
//! 3. again: readahead replays what boot 2 learned, the module loader runs again; the
//!    kernel upgrade builds no bootprint image (the lever is off) and the new kernel's entry
//!    has `init=`; `bootprint disable`: nothing of bootprint left in the boot files;
//! 4. stock on the new kernel; `apt-get purge bootprint`: the boot files as after disable.

use std::collections::BTreeSet;
use std::path::Path;

use crate::checks::checklist::Checks;
use crate::checks::late_test::sections;
use crate::checks::package_test::{
    after, boot, boot_with, check_disable, check_grub_init, check_installed, check_purge,
    check_trace, lines, out, rc0, Machine, Prepared, DISABLE, INIT_WORD, PURGE,
};
use crate::vm::grub_disk::{Generator, Loader, Root};
use crate::vm::qemu::BootResult;
use crate::vm::util::{Paths, Result};

type Sections = [(String, BTreeSet<String>)];

/// The layout under test and what its boots share.
struct Stack<'a> {
    m: Machine<'a>,
    root: Root,
}

pub fn package(paths: &Paths, deb: &Path, cargo: bool, root: Root, c: &mut Checks) -> Result<()> {
    let p = Prepared::new(
        paths,
        deb,
        cargo,
        Loader::Grub,
        Generator::InitramfsTools,
        root,
    )?;
    let (t, first) = (
        Stack {
            m: p.machine(paths),
            root,
        },
        &p.first,
    );
    let r1 = install_and_enable(&t, first, c)?;
    let r2 = levers_learn(&t, &after(&r1, first), c)?;
    let r3 = levers_replay_upgrade_and_disable(&t, &after(&r2, first), c)?;
    let r4 = stock_and_purge(&t, &after(&r3, first), &r3, c)?;
    p.clean_up(&r4);
    Ok(())
}

/// In a recorded boot's script: this boot's trace as the guest's `bootprint report --json`
/// reads it (its text login and kernel lines: the whole report is some 200 kB for the
/// serial line), and the names of its events (`events.log`: `TIME NAME ...`).
const TRACE_IN_GUEST: &str = r#"t=/var/log/bootprint/$(cat /proc/sys/kernel/random/boot_id)
section trace-report; bootprint report --json $t 2>&1 | grep -E '^ *"(text_login_s|uname)":'
section events; cut -d' ' -f2 $t/events.log | sort -u
"#;

/// A value of [`TRACE_IN_GUEST`]'s report lines (`"NAME": VALUE,`), unquoted.
fn report_value(s: &Sections, name: &str) -> Option<String> {
    lines(s, "trace-report").iter().find_map(|l| {
        let v = l.trim().strip_prefix(&format!("\"{name}\":"))?;
        Some(v.trim().trim_end_matches(',').trim_matches('"').to_string())
    })
}

impl Stack<'_> {
    /// Whether the `root` section names the stacked device.
    fn on_it(&self, s: &Sections) -> bool {
        let dev = self.root.stacked_device().unwrap_or_default();
        lines(s, "root").iter().any(|l| l == dev)
    }

    /// What `bootprint initramfs plan` must name: every layer down to the partition.
    fn layers(&self) -> &'static str {
        match self.root {
            Root::Luks => "(vda2_crypt, a LUKS dm-crypt mapping) on /dev/vda2",
            Root::LuksLvm => {
                "(vg0-root, an LVM logical volume) on /dev/dm-0 (vda2_crypt, a LUKS dm-crypt \
                 mapping) on /dev/vda2"
            }
            _ => "(vg0-root, an LVM logical volume) on /dev/vda2",
        }
    }

    /// The recorded boot's trace read by `bootprint report`: the host's copy where the host
    /// reads the root, else the guest's own report ([`TRACE_IN_GUEST`]).
    fn check_trace(&self, c: &mut Checks, label: &str, r: &BootResult, s: &Sections) {
        if r.trace_dir.is_some() {
            check_trace(c, self.m.paths, label, r, self.m.old);
            return;
        }
        let login = report_value(s, "text_login_s").and_then(|v| v.parse::<f64>().ok());
        let uname = report_value(s, "uname").unwrap_or_default();
        c.check(
            login.is_some() && uname.contains(self.m.old.as_str()),
            &format!(
                "{label}: the trace read by the guest's `bootprint report` (the host cannot \
                 read the root): text login {login:?} s, {uname}"
            ),
        );
    }
}

/// Boot 1: stock on the stacked root; install; the initramfs refuses; enable --all.
fn install_and_enable(t: &Stack, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let r = boot_with(
        &t.m,
        disk,
        false,
        r#"if [ -b /dev/vdb ]; then
  mkdir -p /run/deb && mount -o ro /dev/vdb /run/deb && cp /run/deb/bootprint.deb $d/ && umount /run/deb
fi
section cmdline; cat /proc/cmdline
section root; findmnt -no SOURCE /
section before; snap
dpkg -i $d/bootprint.deb > /tmp/dpkg.log 2>&1; rc=$?
section install; echo "rc=$rc"; tail -n 20 /tmp/dpkg.log
section after-install; snap
bootprint initramfs plan > /tmp/plan.log 2>&1; rc=$?
section plan; echo "rc=$rc"; cat /tmp/plan.log
bootprint enable --all > /tmp/enable.log 2>&1; rc=$?
section enable; echo "rc=$rc"; cat /tmp/enable.log
section grub-cmdline; grep -o 'init=[^ ]*' /boot/grub/grub.cfg | sort -u
section ours; ls /boot | grep -c '^bootprint-initrd'
"#,
        t.m.deb_disk,
    )?;
    let s = sections(&out(&r));
    let cmdline = lines(&s, "cmdline");
    c.check(
        !cmdline.is_empty() && !cmdline.iter().any(|l| l.contains("bootprint")) && t.on_it(&s),
        &format!(
            "boot 1 is stock, its root {:?} opened by Debian's initramfs: {}",
            lines(&s, "root"),
            cmdline.join(" ")
        ),
    );
    check_installed(c, &s);
    let plan = lines(&s, "plan");
    c.check(
        !rc0(&s, "plan") && plan.iter().any(|l| l.contains(t.layers())),
        &format!(
            "bootprint initramfs plan refuses the root, naming every layer: {}",
            plan.join(" | ")
        ),
    );
    let enable = lines(&s, "enable");
    c.check(
        rc0(&s, "enable")
            && enable
                .iter()
                .any(|l| l.starts_with("--all: initramfs left out:") && l.contains(t.layers()))
            && lines(&s, "ours").first().map(String::as_str) == Some("0"),
        &format!(
            "bootprint enable --all, bootprint's initramfs left out with its reason and not \
             built: {} (images: {:?})",
            enable.join(" | "),
            lines(&s, "ours")
        ),
    );
    check_grub_init(c, &s);
    Ok(r)
}

/// Boot 2: bootprint on, after Debian's initramfs opened the volume: the trace, and the
/// levers' first boot (readahead and the module loader learn, the runner runs).
fn levers_learn(t: &Stack, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let r = boot(
        &t.m,
        disk,
        true,
        &format!(
            r#"section cmdline; cat /proc/cmdline
section root; findmnt -no SOURCE /
section rc; test -s /run/bootprint/rc.log && echo ran
section status; bootprint status > /tmp/status.log 2>&1; echo "rc=$?"; cat /tmp/status.log
{TRACE_IN_GUEST}"#
        ),
    )?;
    let s = sections(&out(&r));
    c.check(
        lines(&s, "cmdline").iter().any(|l| l.contains(INIT_WORD)) && t.on_it(&s),
        &format!(
            "boot 2 runs bootprint on the stacked root ({:?}): {}",
            lines(&s, "root"),
            lines(&s, "cmdline").join(" ")
        ),
    );
    t.check_trace(c, "boot 2", &r, &s);
    let events: BTreeSet<String> = lines(&s, "events").into_iter().collect();
    c.check(
        events.contains("readahead_learn") && events.contains("modules_plan"),
        &format!(
            "boot 2: readahead learned, the module loader loaded the modules (events: {events:?})"
        ),
    );
    c.check(
        lines(&s, "rc").first().map(String::as_str) == Some("ran"),
        "boot 2: the LSB runner ran the init scripts (/run/bootprint/rc.log)",
    );
    c.check(
        rc0(&s, "status"),
        &format!("bootprint status: {}", lines(&s, "status").join(" | ")),
    );
    Ok(r)
}

/// Boot 3: the levers' second boot (replay, the plan); the kernel upgrade; disable.
fn levers_replay_upgrade_and_disable(t: &Stack, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let new = t.m.new;
    let r = boot(
        &t.m,
        disk,
        true,
        &format!(
            r#"section root; findmnt -no SOURCE /
{TRACE_IN_GUEST}dpkg -i $d/debs/linux-image-{new}_*.deb > /tmp/kernel.log 2>&1; rc=$?
section kernel; echo "rc=$rc"; tail -n 20 /tmp/kernel.log
section ours; ls /boot | grep -c '^bootprint-initrd'
section new-entry; grep -F 'vmlinuz-{new} ' /boot/grub/grub.cfg | grep -c 'init=/usr/lib/bootprint/bootprint-boot'
{DISABLE}"#
        ),
    )?;
    let s = sections(&out(&r));
    let events: BTreeSet<String> = lines(&s, "events").into_iter().collect();
    c.check(
        t.on_it(&s) && events.contains("readahead_replay") && events.contains("modules_plan"),
        &format!(
            "boot 3: readahead replayed what boot 2 learned, the module loader ran again \
             (events: {events:?})"
        ),
    );
    c.check(
        rc0(&s, "kernel")
            && lines(&s, "ours").first().map(String::as_str) == Some("0")
            && lines(&s, "new-entry").first().is_some_and(|n| n != "0"),
        &format!(
            "dpkg -i linux-image-{new}: no bootprint image built ({:?}), the new kernel's \
             entry boots bootprint ({:?}): {}",
            lines(&s, "ours"),
            lines(&s, "new-entry"),
            lines(&s, "kernel").join(" | ")
        ),
    );
    check_disable(c, &s);
    Ok(r)
}

/// Boot 4: stock on the new kernel, the volume opened by its Debian initramfs; purge.
fn stock_and_purge(
    t: &Stack,
    disk: &Path,
    disabled: &BootResult,
    c: &mut Checks,
) -> Result<BootResult> {
    let new = t.m.new;
    let r = boot(
        &t.m,
        disk,
        false,
        &format!(
            r#"section release; uname -r
section cmdline; cat /proc/cmdline
section root; findmnt -no SOURCE /
{PURGE}"#
        ),
    )?;
    let s = sections(&out(&r));
    c.check(
        lines(&s, "release").first() == Some(new)
            && !lines(&s, "cmdline").iter().any(|l| l.contains("bootprint"))
            && t.on_it(&s),
        &format!(
            "boot 4 is stock on the new kernel and the stacked root ({:?}): {}",
            lines(&s, "root"),
            lines(&s, "cmdline").join(" ")
        ),
    );
    check_purge(c, &s, disabled);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guest's report lines as `bootprint report --json` prints them.
    #[test]
    fn report_lines_read() {
        let s = sections(
            "== trace-report\n    \"uname\": \"Linux 6.12.117+deb13-amd64 #1 SMP x86_64\"\n  \"text_login_s\": 35.49,\n",
        );
        assert_eq!(report_value(&s, "text_login_s").as_deref(), Some("35.49"));
        assert_eq!(
            report_value(&s, "uname").as_deref(),
            Some("Linux 6.12.117+deb13-amd64 #1 SMP x86_64")
        );
        assert_eq!(report_value(&s, "boot_done_s"), None);
    }
}
