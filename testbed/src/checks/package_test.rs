//! `package`: bootprint installed as a user installs it, on a machine GRUB boots from its own
//! disk (grub_disk.rs; docs/testbed.md, "`package`: the package test"). Seven boots through the
//! firmware and GRUB, each from the disk the one before left:
//!
//! 1. stock: `dpkg -i` the .deb (the next boot's files must not change), `bootprint enable
//!    --all`;
//! 2. bootprint on: the recorder's trace of this boot (copied out, read by the host's
//!    `bootprint report`), `bootprint status`, then the kernel upgrade: `dpkg -i` the image's
//!    kernel ABI, after which bootprint's initramfs must exist for it and GRUB must offer it;
//!    `enable --all --default` makes that entry GRUB's default;
//! 3. the new kernel through bootprint's initramfs: its trace; then two disables that fail on purpose (the
//!    security issue's fault cases): with update-grub failing nothing may change, with
//!    dpkg-divert failing the wrapper must stay at /bin/startpar and GRUB lose bootprint;
//!    3b. stock (the wrapper runs Debian's startpar); a disable with dpkg's database
//!    immutable: Debian's startpar must be back at its name; 3c. stock; `bootprint
//!    disable`: nothing of bootprint left in what decides the next boot;
//! 4. stock again (no trace of this boot), then `enable --all` and `apt-get purge bootprint`:
//!    the package's files, state and traces gone, the boot files as after `disable`;
//! 5. stock: the machine boots as before bootprint.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::checks::checklist::{self, Checks};
use crate::checks::late_test::{section, sections};
use crate::vm::fsimage::Mounted;
use crate::vm::grub_disk::{self, Generator, GrubDisk, Loader, Root};
use crate::vm::image;
use crate::vm::qemu::{self, BootOpts, BootResult, Profile, RebootOpts};
use crate::vm::util::{io_err, run_logged, Error, Paths, Result};

/// Where the .deb goes in the guest.
const GUEST_DEB: &str = "/root/bootprint-testbed/bootprint.deb";
/// The kernel command-line word that says bootprint's recorder runs.
pub(crate) const INIT_WORD: &str = "init=/usr/lib/bootprint/bootprint-boot";

/// Shell functions the guest scripts share. `snap` prints what decides the next boot (GRUB's
/// configuration and its inputs, /boot, the diversions, the init, the startpar the rc script
/// runs), one sorted line each.
const PRELUDE: &str = r#"d=/root/bootprint-testbed
# The kernel's messages would land between the script's lines on the serial console (seen:
# a device-mapper line inside a snapshot): only emergencies from here on.
dmesg -n 1
snap() {
  {
    md5sum /boot/grub/grub.cfg /etc/default/grub
    for f in /etc/default/grub.d/* /etc/grub.d/* /boot/* /etc/kernel/*.d/* /etc/initramfs-tools/conf.d/*; do
      [ -e "$f" ] && echo "file $f"
    done
    dpkg-divert --list | sed 's/^/divert /'
    echo "init $(readlink -f /sbin/init)"
    ls -l /bin/startpar* 2>&1 | awk '{print "startpar", $1, $NF}'
  } | sort
}
section() { echo "== $1"; }
"#;

pub fn run(
    paths: &Paths,
    deb: &Path,
    loader: Loader,
    generator: Generator,
    root: Root,
    cargo: bool,
) -> Result<()> {
    checklist::run("package", |c| match (loader, generator) {
        (Loader::Grub, Generator::InitramfsTools) if root.stacked() => {
            crate::checks::package_stacked::package(paths, deb, cargo, root, c)
        }
        (Loader::Grub, Generator::InitramfsTools) => package(paths, deb, cargo, root, c),
        (Loader::SystemdBoot, generator) => {
            crate::checks::package_sdboot::package(paths, deb, cargo, generator, c)
        }
        (Loader::Grub, Generator::Dracut) => {
            crate::checks::package_dracut::package(paths, deb, cargo, root, c)
        }
    })
}

fn package(paths: &Paths, deb: &Path, cargo: bool, root: Root, c: &mut Checks) -> Result<()> {
    let p = Prepared::new(
        paths,
        deb,
        cargo,
        Loader::Grub,
        Generator::InitramfsTools,
        root,
    )?;
    let (m, disk) = (p.machine(paths), &p.first);
    let r1 = install_and_enable(&m, disk, c)?;
    let r2 = bootprint_on_and_kernel_upgrade(&m, &after(&r1, disk), c)?;
    let r3 = new_kernel_and_failing_disables(&m, &after(&r2, disk), c)?;
    let r3b = stock_with_the_wrapper(&m, &after(&r3, disk), c)?;
    let (r3c, disabled) = stock_and_disable(&m, &after(&r3b, disk), c)?;
    let r4 = enable_and_purge(&m, &after(&r3c, disk), c, &disabled)?;
    let r5 = stock_as_before(&m, &after(&r4, disk), c)?;
    p.clean_up(&r5);
    Ok(())
}

/// What a package test starts from: the image, the loader's disk, and a copy of that disk
/// with the .deb in it (the first boot's), or beside it where the host cannot write the root.
pub(crate) struct Prepared {
    img: image::Image,
    disk: GrubDisk,
    pub(crate) first: PathBuf,
    /// A small ext4 disk holding the .deb (`bootprint.deb`), for the first boot's `vdb`,
    /// when the root is encrypted.
    pub(crate) deb_disk: Option<PathBuf>,
}

impl Prepared {
    pub(crate) fn new(
        paths: &Paths,
        deb: &Path,
        cargo: bool,
        loader: Loader,
        generator: Generator,
        root: Root,
    ) -> Result<Prepared> {
        if !deb.is_file() {
            return Err(Error::fail(format!(
                "{}: no such .deb (build it with `make deb`)",
                deb.display()
            )));
        }
        let img = image::ensure(paths, cargo)?;
        let disk = grub_disk::ensure(paths, &img, loader, generator, root)?;
        println!(
            "package: {} on the {} disk with {}, the root on {} (linux-image-{}, upgraded to {} in boot 2)",
            deb.display(),
            loader.name(),
            generator.name(),
            root.name(),
            disk.old_release,
            disk.new_release
        );
        let (first, deb_disk) = with_deb(paths, &disk, deb)?;
        Ok(Prepared {
            img,
            disk,
            first,
            deb_disk,
        })
    }

    pub(crate) fn machine<'a>(&'a self, paths: &'a Paths) -> Machine<'a> {
        Machine {
            paths,
            img: &self.img,
            old: &self.disk.old_release,
            new: &self.disk.new_release,
            fs_offset: self.disk.fs_offset,
            deb_disk: self.deb_disk.as_deref(),
        }
    }

    /// Removes the disk the last boot kept (each boot removed the one it started from).
    pub(crate) fn clean_up(&self, last: &BootResult) {
        if let Some(d) = last.kept_disk() {
            let _ = std::fs::remove_file(d);
        }
        let _ = std::fs::remove_file(&self.first);
        if let Some(d) = &self.deb_disk {
            let _ = std::fs::remove_file(d);
        }
    }
}

/// A guest script's `== name` sections (`late_test::sections`).
type Sections = Vec<(String, BTreeSet<String>)>;

/// What every boot of the package test shares: the image (its kernel boots the GRUB disk's
/// setup) and the two kernel releases.
pub(crate) struct Machine<'a> {
    pub(crate) paths: &'a Paths,
    pub(crate) img: &'a image::Image,
    pub(crate) old: &'a String,
    pub(crate) new: &'a String,
    /// Where the GRUB disk's root file system starts; `None`: the host cannot read it
    /// (LUKS), the guest reads its traces.
    pub(crate) fs_offset: Option<u64>,
    /// [`Prepared::deb_disk`].
    pub(crate) deb_disk: Option<&'a Path>,
}

/// The disk a boot kept, for the next one (the first's when it kept none).
pub(crate) fn after(r: &BootResult, first: &Path) -> PathBuf {
    r.kept_disk().unwrap_or_else(|| first.to_path_buf())
}

/// 1. Stock: `dpkg -i` the .deb (the next boot's files must not change), `bootprint enable --all`.
fn install_and_enable(m: &Machine, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let r1 = boot(
        m,
        disk,
        false,
        r#"section cmdline; cat /proc/cmdline
section before; snap
dpkg -i /root/bootprint-testbed/bootprint.deb > /tmp/dpkg.log 2>&1; rc=$?
section install; echo "rc=$rc"; tail -n 20 /tmp/dpkg.log
section after-install; snap
bootprint enable --all > /tmp/enable.log 2>&1; rc=$?
section enable; echo "rc=$rc"; cat /tmp/enable.log
section grub-cmdline; grep -o 'init=[^ ]*' /boot/grub/grub.cfg | sort -u
"#,
    )?;
    let s1 = sections(&out(&r1));
    let cmdline = lines(&s1, "cmdline");
    c.check(
        !cmdline.iter().any(|l| l.contains("bootprint")),
        &format!("boot 1 is stock: {}", cmdline.join(" ")),
    );
    check_installed(c, &s1);
    c.check(
        rc0(&s1, "enable"),
        &format!(
            "bootprint enable --all: {}",
            lines(&s1, "enable").join(" | ")
        ),
    );
    check_grub_init(c, &s1);
    Ok(r1)
}

/// 2. bootprint on: its trace, `bootprint status`, then the kernel upgrade.
fn bootprint_on_and_kernel_upgrade(m: &Machine, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let (old, new) = (m.old, m.new);
    let r2 = boot(
        m,
        disk,
        true,
        &format!(
            r#"section cmdline; cat /proc/cmdline
section release; uname -r
section status; bootprint status > /tmp/status.log 2>&1; echo "rc=$?"; cat /tmp/status.log
{}"#,
            upgrade_and_default(new)
        ),
    )?;
    let s2 = sections(&out(&r2));
    c.check(
        lines(&s2, "cmdline").iter().any(|l| l.contains(INIT_WORD)),
        &format!("boot 2 runs bootprint: {}", lines(&s2, "cmdline").join(" ")),
    );
    check_trace(c, m.paths, "boot 2", &r2, old);
    c.check(
        rc0(&s2, "status"),
        &format!("bootprint status: {}", lines(&s2, "status").join(" | ")),
    );
    check_upgrade_and_default(c, &s2, new);
    let ours: Vec<String> = lines(&s2, "boot-files")
        .into_iter()
        .filter(|f| f.contains("bootprint") && f.contains(new.as_str()))
        .collect();
    c.check(
        !ours.is_empty(),
        &format!(
            "bootprint's initramfs followed the kernel upgrade: {:?} in /boot ({})",
            ours,
            lines(&s2, "boot-files").join(" ")
        ),
    );
    let entries = lines(&s2, "grub-entries");
    c.check(
        ours.iter().any(|f| {
            entries
                .iter()
                .any(|e| e.starts_with("initrd") && e.contains(f.as_str()))
        }),
        &format!(
            "GRUB offers {new} with bootprint's initramfs ({} entry lines)",
            entries.len()
        ),
    );
    Ok(r2)
}

/// The GRUB tests' boot 2 ends so: the kernel upgrade (sections `kernel`, `boot-files`,
/// `grub-entries`), then bootprint's initramfs made GRUB's default (section `default`).
pub(crate) fn upgrade_and_default(new: &str) -> String {
    format!(
        r#"dpkg -i $d/debs/linux-image-{new}_*.deb > /tmp/kernel.log 2>&1; rc=$?
section kernel; echo "rc=$rc"; tail -n 20 /tmp/kernel.log
section boot-files; ls -1 /boot
section grub-entries; grep -E '^[[:space:]]*(menuentry|linux|initrd)' /boot/grub/grub.cfg | sed 's/^[[:space:]]*//'
bootprint enable --all --default > /tmp/default.log 2>&1; rc=$?
section default; echo "rc=$rc"; cat /tmp/default.log
bootprint reboot --kexec --dry-run > /tmp/kexec.log 2>&1; rc=$?
section kexec-next; echo "rc=$rc"; cat /tmp/kexec.log
"#
    )
}

/// What [`upgrade_and_default`] must have done: the kernel's `dpkg -i` and the `enable
/// --default` exited 0, and the fast path reads the entry GRUB now boots next from the
/// grub.cfg update-grub wrote (docs/reboot.md): the new kernel, nothing refused.
pub(crate) fn check_upgrade_and_default(
    c: &mut Checks,
    s: &[(String, BTreeSet<String>)],
    new: &str,
) {
    c.check(
        rc0(s, "kernel"),
        &format!(
            "dpkg -i linux-image-{new}: {}",
            lines(s, "kernel").join(" | ")
        ),
    );
    c.check(
        rc0(s, "default"),
        &format!(
            "bootprint enable --all --default (bootprint's initramfs GRUB's default): {}",
            lines(s, "default").join(" | ")
        ),
    );
    let kexec = lines(s, "kexec-next");
    c.check(
        rc0(s, "kexec-next")
            && kexec.iter().any(|l| {
                l.trim_start().starts_with("kernel") && l.ends_with(&format!("vmlinuz-{new}"))
            }),
        &format!(
            "bootprint reboot --kexec --dry-run reads GRUB's next entry, {new}: {}",
            kexec.join(" | ")
        ),
    );
}

/// 3. The new kernel through bootprint's initramfs, and two disables that fail on purpose.
fn new_kernel_and_failing_disables(m: &Machine, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let r3 = boot(
        m,
        disk,
        true,
        r#"section cmdline; cat /proc/cmdline
section release; uname -r
section initramfs; test -e /run/bootprint/initramfs.log && echo ran
section enabled; snap
printf '#!/bin/sh\necho "99_fault: failing on purpose" >&2\nexit 1\n' > /etc/grub.d/99_fault
chmod 755 /etc/grub.d/99_fault
bootprint disable > /tmp/d1.log 2>&1; rc=$?
rm -f /etc/grub.d/99_fault
section disable-update-grub-fails; echo "rc=$rc"; cat /tmp/d1.log
section after-update-grub-fails; snap
printf '#!/bin/sh\nfor a; do [ "$a" = --remove ] && { echo "fail-remove: failing on purpose" >&2; exit 2; }; done\nexec dpkg-divert "$@"\n' > /tmp/fail-remove
chmod 755 /tmp/fail-remove
BOOTPRINT_DPKG_DIVERT=/tmp/fail-remove bootprint disable > /tmp/d2.log 2>&1; rc=$?
section disable-dpkg-divert-fails; echo "rc=$rc"; cat /tmp/d2.log
section startpar-after; grep -ac startpar.distrib /bin/startpar; ls /bin/startpar.distrib
section grub-bootprint; grep -v '^#' /boot/grub/grub.cfg | grep -c bootprint-boot
"#,
    )?;
    let s3 = sections(&out(&r3));
    check_ours_on_new(c, m, &s3, &r3, "GRUB's default");
    let d1 = lines(&s3, "disable-update-grub-fails");
    c.check(
        d1.iter().any(|l| l == "rc=1") && d1.iter().any(|l| l.contains("nothing was undone")),
        &format!(
            "disable with update-grub failing exits 1 and says why: {}",
            d1.join(" | ")
        ),
    );
    same(
        c,
        "a disable whose update-grub failed changed nothing (the machine boots as in boot 3)",
        &s3,
        "enabled",
        &s3,
        "after-update-grub-fails",
    );
    let d2 = lines(&s3, "disable-dpkg-divert-fails");
    c.check(
        d2.iter().any(|l| l == "rc=1") && d2.iter().any(|l| l.contains("fail-remove")),
        &format!(
            "disable with dpkg-divert failing exits 1 and says why: {}",
            d2.join(" | ")
        ),
    );
    c.check(
        lines(&s3, "startpar-after").contains(&"/bin/startpar.distrib".to_string())
            && lines(&s3, "startpar-after").first().map(String::as_str) != Some("0"),
        &format!(
            "the wrapper is back at /bin/startpar over Debian's: {:?}",
            lines(&s3, "startpar-after")
        ),
    );
    c.check(
        lines(&s3, "grub-bootprint").first().map(String::as_str) == Some("0"),
        &format!(
            "and GRUB no longer boots bootprint: {:?}",
            lines(&s3, "grub-bootprint")
        ),
    );
    Ok(r3)
}

/// 3b. Stock, the wrapper running Debian's startpar; dpkg's database immutable.
fn stock_with_the_wrapper(m: &Machine, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let r3b = boot(
        m,
        disk,
        false,
        r#"section cmdline; cat /proc/cmdline
chattr +i /var/lib/dpkg/diversions
bootprint disable > /tmp/d3.log 2>&1; rc=$?
chattr -i /var/lib/dpkg/diversions
section disable-dpkg-db-fails; echo "rc=$rc"; cat /tmp/d3.log
section startpar-after; ls /bin/startpar /bin/startpar.distrib 2>&1 | sed 's/^ls: //'; grep -ac startpar.distrib /bin/startpar
"#,
    )?;
    let s3b = sections(&out(&r3b));
    c.check(
        !lines(&s3b, "cmdline")
            .iter()
            .any(|l| l.contains("bootprint")),
        &format!(
            "boot 3b reached the login, stock, after the failed disable: {}",
            lines(&s3b, "cmdline").join(" ")
        ),
    );
    let d3 = lines(&s3b, "disable-dpkg-db-fails");
    c.check(
        d3.iter().any(|l| l == "rc=1") && d3.iter().any(|l| l.contains("dpkg-divert")),
        &format!(
            "disable with dpkg's database immutable exits 1 and says why: {}",
            d3.join(" | ")
        ),
    );
    let sp = lines(&s3b, "startpar-after");
    c.check(
        sp.contains(&"/bin/startpar".to_string()) && sp.contains(&"0".to_string()),
        &format!("Debian's startpar is back at /bin/startpar: {sp:?}"),
    );
    Ok(r3b)
}

/// 3c. Stock again, Debian's startpar in place; disable finishes: returns the sections (`after-disable`).
fn stock_and_disable(m: &Machine, disk: &Path, c: &mut Checks) -> Result<(BootResult, Sections)> {
    let r3c = boot(
        m,
        disk,
        false,
        &format!("section cmdline; cat /proc/cmdline\n{DISABLE}"),
    )?;
    let s3 = sections(&out(&r3c));
    c.check(
        !lines(&s3, "cmdline")
            .iter()
            .any(|l| l.contains("bootprint")),
        &format!(
            "boot 3c reached the login, stock: {}",
            lines(&s3, "cmdline").join(" ")
        ),
    );
    check_disable(c, &s3);
    // Nor, on this sysvinit machine, the runner's diversion of startpar.
    let diverted: Vec<String> = lines(&s3, "after-disable")
        .into_iter()
        .filter(|l| l.starts_with("divert") && l.contains("startpar"))
        .collect();
    c.check(
        diverted.is_empty(),
        &format!("disable left no diversion of startpar: {diverted:?}"),
    );
    Ok((r3c, s3))
}

/// 4. Stock; enable again, then purge; the boot files as after `disable` (`disabled`).
fn enable_and_purge(
    m: &Machine,
    disk: &Path,
    c: &mut Checks,
    disabled: &Sections,
) -> Result<BootResult> {
    let r4 = boot(
        m,
        disk,
        false,
        r#"section cmdline; cat /proc/cmdline
section id; cat /proc/sys/kernel/random/boot_id
section traces; ls /var/log/bootprint
bootprint enable --all > /tmp/enable.log 2>&1; rc=$?
section enable; echo "rc=$rc"
DEBIAN_FRONTEND=noninteractive apt-get purge -y bootprint > /tmp/purge.log 2>&1; rc=$?
section purge; echo "rc=$rc"; tail -n 20 /tmp/purge.log
section after-purge; snap
section left; ls -d /var/log/bootprint /var/lib/bootprint /etc/bootprint /usr/lib/bootprint /usr/bin/bootprint 2>/dev/null
# grub.cfg's `### BEGIN /etc/grub.d/42_bootprint ###` comments stay while the package does.
section grub-bootprint; grep -v '^#' /boot/grub/grub.cfg | grep -c bootprint
"#,
    )?;
    let s4 = sections(&out(&r4));
    c.check(
        !lines(&s4, "cmdline")
            .iter()
            .any(|l| l.contains("bootprint")),
        &format!("boot 4 is stock: {}", lines(&s4, "cmdline").join(" ")),
    );
    let id4 = lines(&s4, "id").first().cloned().unwrap_or_default();
    c.check(
        !id4.is_empty() && !lines(&s4, "traces").contains(&id4),
        &format!("no trace of the stock boot {id4}"),
    );
    c.check(
        rc0(&s4, "enable") && rc0(&s4, "purge"),
        &format!(
            "enable --all, then apt-get purge bootprint: {}",
            lines(&s4, "purge").join(" | ")
        ),
    );
    c.check(
        lines(&s4, "left").is_empty(),
        &format!(
            "purge removed the package, its state and traces: {:?}",
            lines(&s4, "left")
        ),
    );
    same(
        c,
        "after purge the boot files are as after disable",
        disabled,
        "after-disable",
        &s4,
        "after-purge",
    );
    Ok(r4)
}

/// 5. Stock, as before bootprint.
fn stock_as_before(m: &Machine, disk: &Path, c: &mut Checks) -> Result<BootResult> {
    let new = m.new;
    let r5 = boot(
        m,
        disk,
        false,
        "section cmdline; cat /proc/cmdline\nsection release; uname -r\n",
    )?;
    let s5 = sections(&out(&r5));
    c.check(
        !lines(&s5, "cmdline")
            .iter()
            .any(|l| l.contains("bootprint"))
            && lines(&s5, "release").first() == Some(new),
        &format!(
            "boot 5 reached the login, stock, on {}: {}",
            lines(&s5, "release").join(""),
            lines(&s5, "cmdline").join(" ")
        ),
    );
    Ok(r5)
}

/// A copy of the GRUB disk with the .deb in it (the root file system copied out of the disk,
/// the .deb written into it by debugfs on ext4, through a loop mount on btrfs and XFS, and
/// the file system put back); on an encrypted root, which the host cannot write, the copy
/// and beside it a small ext4 disk holding the .deb (`mke2fs -d`), which the first boot
/// gets as `vdb` and copies from.
fn with_deb(paths: &Paths, grub: &GrubDisk, deb: &Path) -> Result<(PathBuf, Option<PathBuf>)> {
    let run = crate::vm::util::fresh_dir(&paths.cache.join("runs"))?;
    let disk = run.join("package-disk.raw");
    let log = run.join("host.log");
    run_logged(
        Command::new("cp")
            .arg("--sparse=always")
            .arg(&grub.disk)
            .arg(&disk),
        &log,
    )?;
    let deb = deb
        .canonicalize()
        .map_err(|e| io_err("cannot resolve", deb, e))?;
    let Some(fs_offset) = grub.fs_offset else {
        let dir = run.join("deb");
        fs::create_dir_all(&dir).map_err(|e| io_err("cannot create", &dir, e))?;
        let to = dir.join("bootprint.deb");
        fs::copy(&deb, &to).map_err(|e| io_err("cannot copy the .deb to", &to, e))?;
        let size_mb = fs::metadata(&deb)
            .map_err(|e| io_err("cannot stat", &deb, e))?
            .len()
            / (1 << 20)
            + 16;
        let image = run.join("deb.ext4");
        run_logged(
            Command::new("mke2fs")
                .args(["-q", "-t", "ext4", "-d"])
                .arg(&dir)
                .arg(&image)
                .arg(format!("{size_mb}M")),
            &log,
        )?;
        return Ok((disk, Some(image)));
    };
    // The disk's last boot ended with `poweroff -f`: metadata still in the journal would be
    // replayed by the guest over what debugfs writes. So: the file system out, its journal
    // replayed, the .deb written, the file system back.
    let fs = run.join("fs.img");
    qemu::extract_fs(&disk, fs_offset, &fs, &log)?;
    if grub.root.made_as() == Root::Ext4 {
        qemu::replay_journal(&fs, &log)?;
        run_logged(
            Command::new("debugfs")
                .arg("-w")
                .arg("-R")
                .arg(format!("write {} {GUEST_DEB}", deb.display()))
                .arg(&fs),
            &log,
        )?;
    } else {
        let m = Mounted::new(&fs, &run.join("fs-mnt"), &log)?;
        let to = m.system_root().join(GUEST_DEB.trim_start_matches('/'));
        fs::copy(&deb, &to).map_err(|e| io_err("cannot copy the .deb to", &to, e))?;
    }
    qemu::write_back_fs(&fs, &disk, fs_offset, &log)?;
    fs::remove_file(&fs).map_err(|e| io_err("cannot remove", &fs, e))?;
    Ok((disk, None))
}

pub(crate) fn boot(m: &Machine, disk: &Path, record: bool, script: &str) -> Result<BootResult> {
    boot_with(m, disk, record, script, None)
}

/// [`boot`], with `second` as the guest's `vdb` (the .deb's disk, [`Prepared::deb_disk`]).
pub(crate) fn boot_with(
    m: &Machine,
    disk: &Path,
    record: bool,
    script: &str,
    second: Option<&Path>,
) -> Result<BootResult> {
    let mut o = chained_opts(m, disk, record);
    o.second_disk = second.map(Path::to_path_buf);
    o.guest_script = Some(format!("{PRELUDE}{script}"));
    boot_chained(m, disk, &o)
}

/// A boot of the chain that reboots once inside QEMU by `command`: `before` runs just
/// before the request, `after` after the next login (each with the test's prelude; the
/// prelude's `dmesg -n 1` holds until the request, so `before` must give the console back
/// the kernel's lines that mark the reboot's stages, `vm::cycle`).
pub(crate) fn boot_rebooting(
    m: &Machine,
    disk: &Path,
    before: &str,
    command: &str,
    after: &str,
) -> Result<BootResult> {
    let mut o = chained_opts(m, disk, true);
    o.reboot = Some(RebootOpts {
        command: command.to_string(),
        before: Some(format!("{PRELUDE}{before}")),
        after: Some(format!("{PRELUDE}{after}")),
        copy_log_dir: false,
    });
    boot_chained(m, disk, &o)
}

/// The options every boot of the chain shares: through the firmware, from `disk`, its disk
/// kept for the next.
fn chained_opts(m: &Machine, disk: &Path, record: bool) -> BootOpts {
    let mut o = BootOpts::new(Profile::Fast);
    o.firmware = true;
    o.fs_offset = m.fs_offset.unwrap_or(0);
    o.copy_trace = m.fs_offset.is_some();
    o.record = record;
    o.keep_disk = true;
    o.disk_from = Some(disk.to_path_buf());
    o
}

fn boot_chained(m: &Machine, disk: &Path, o: &BootOpts) -> Result<BootResult> {
    let r = qemu::boot(m.paths, m.img, o)?;
    // The boots form one chain, each starting from the disk the one before kept: once this
    // one booted, that disk is done with. Keeping every disk to the end took 2 GB a boot
    // (CI ran out of room in the second). A failed boot leaves its source for a rerun.
    let _ = fs::remove_file(disk);
    println!(
        "boot: login after {:.2} s, serial log {}",
        r.host_login_s,
        r.serial_log.display()
    );
    Ok(r)
}

/// The first boot's `dpkg -i` (sections `install`, and `before` and `after-install` from
/// `snap`): exit 0, and the files that decide the next boot unchanged by it.
pub(crate) fn check_installed(c: &mut Checks, s: &Sections) {
    c.check(
        rc0(s, "install"),
        &format!("dpkg -i the .deb: {}", lines(s, "install").join(" | ")),
    );
    same(
        c,
        "installing the package changes nothing about the next boot",
        s,
        "before",
        s,
        "after-install",
    );
}

/// `enable` on GRUB put bootprint's `init=` into grub.cfg (section `grub-cmdline`: the
/// `init=` words of grub.cfg).
pub(crate) fn check_grub_init(c: &mut Checks, s: &Sections) {
    c.check(
        lines(s, "grub-cmdline").iter().any(|l| l == INIT_WORD),
        &format!(
            "update-grub put {INIT_WORD} into grub.cfg: {:?}",
            lines(s, "grub-cmdline")
        ),
    );
}

/// `bootprint disable` on a GRUB machine (sections `disable`, `after-disable`,
/// `grub-bootprint`), for [`check_disable`]. grub.cfg's `### BEGIN /etc/grub.d/42_bootprint
/// ###` comments stay while the package does.
pub(crate) const DISABLE: &str = r#"bootprint disable > /tmp/disable.log 2>&1; rc=$?
section disable; echo "rc=$rc"; cat /tmp/disable.log
section after-disable; snap
section grub-bootprint; grep -v '^#' /boot/grub/grub.cfg | grep -c bootprint
"#;

/// What [`DISABLE`] must have done: exit 0, nothing of bootprint in the boot files but the
/// package's own hooks, no `bootprint` in grub.cfg.
pub(crate) fn check_disable(c: &mut Checks, s: &Sections) {
    c.check(
        rc0(s, "disable"),
        &format!("bootprint disable: {}", lines(s, "disable").join(" | ")),
    );
    let left: Vec<String> = lines(s, "after-disable")
        .into_iter()
        .filter(|l| l.contains("bootprint") && !package_file(l))
        .collect();
    c.check(
        left.is_empty() && lines(s, "grub-bootprint").first().map(String::as_str) == Some("0"),
        &format!(
            "disable left nothing of bootprint in the boot files ({left:?}) nor in grub.cfg ({:?})",
            lines(s, "grub-bootprint")
        ),
    );
}

/// The last boot's `apt-get purge bootprint` (sections `purge`, `after-purge`, `left`), for
/// [`check_purge`].
pub(crate) const PURGE: &str = r#"DEBIAN_FRONTEND=noninteractive apt-get purge -y bootprint > /tmp/purge.log 2>&1; rc=$?
section purge; echo "rc=$rc"; tail -n 5 /tmp/purge.log
section after-purge; snap
section left; ls -d /var/log/bootprint /var/lib/bootprint /etc/bootprint /usr/lib/bootprint /usr/bin/bootprint 2>/dev/null
"#;

/// What [`PURGE`] must have done: exit 0, none of the package's files, state or traces
/// left, the boot files as the boot `disabled` left them after `bootprint disable`.
pub(crate) fn check_purge(c: &mut Checks, s: &Sections, disabled: &BootResult) {
    c.check(
        rc0(s, "purge") && lines(s, "left").is_empty(),
        &format!(
            "apt-get purge bootprint: {}; left: {:?}",
            lines(s, "purge").join(" | "),
            lines(s, "left")
        ),
    );
    same(
        c,
        "after purge the boot files are as after disable",
        &sections(&out(disabled)),
        "after-disable",
        s,
        "after-purge",
    );
}

pub(crate) fn out(r: &BootResult) -> String {
    r.guest_output.clone().unwrap_or_default()
}

/// Whether a section holds the line `rc=0` (the exit status the script printed).
pub(crate) fn rc0(s: &[(String, BTreeSet<String>)], name: &str) -> bool {
    section(s, name).is_some_and(|set| set.contains("rc=0"))
}

/// The lines of a section, in order of the sorted set.
pub(crate) fn lines(s: &[(String, BTreeSet<String>)], name: &str) -> Vec<String> {
    section(s, name)
        .map(|set| set.iter().cloned().collect())
        .unwrap_or_default()
}

/// A file the package itself installs (present until the purge, harmless to the boot while
/// disabled: each is a no-op unless `enable` turned its lever on), or the test bed's own.
pub(crate) fn package_file(line: &str) -> bool {
    [
        "file /etc/grub.d/42_bootprint",
        "file /etc/kernel/postinst.d/zz-bootprint",
        "file /etc/kernel/postrm.d/zz-bootprint",
        // Not the package's: the test bed's own, written with the GRUB disk (grub_disk.rs).
        "file /etc/initramfs-tools/conf.d/bootprint-testbed",
    ]
    .contains(&line)
}

/// Checks that two `snap` sections are equal, naming the lines that differ.
pub(crate) fn same(
    c: &mut Checks,
    what: &str,
    a: &[(String, BTreeSet<String>)],
    a_name: &str,
    b: &[(String, BTreeSet<String>)],
    b_name: &str,
) {
    let (x, y) = (section(a, a_name), section(b, b_name));
    let empty = BTreeSet::new();
    let (x, y) = (x.unwrap_or(&empty), y.unwrap_or(&empty));
    let strip = |s: &BTreeSet<String>| -> BTreeSet<String> {
        s.iter().filter(|l| !package_file(l)).cloned().collect()
    };
    let (x, y) = (strip(x), strip(y));
    let only_a: Vec<&String> = x.difference(&y).collect();
    let only_b: Vec<&String> = y.difference(&x).collect();
    c.check(
        !x.is_empty() && only_a.is_empty() && only_b.is_empty(),
        &format!(
            "{what} ({} lines; only before: {only_a:?}; only after: {only_b:?})",
            x.len()
        ),
    );
}

/// Boot 3 of every package test: the new kernel, through bootprint's
/// initramfs (its /init's log in /run, the recorder's `init=`; `how` says which entry), and
/// its trace read.
pub(crate) fn check_ours_on_new(
    c: &mut Checks,
    m: &Machine,
    s: &[(String, BTreeSet<String>)],
    r: &BootResult,
    how: &str,
) {
    c.check(
        lines(s, "release").first() == Some(m.new),
        &format!("boot 3 runs the new kernel: {:?}", lines(s, "release")),
    );
    c.check(
        lines(s, "initramfs").iter().any(|l| l == "ran")
            && lines(s, "cmdline").iter().any(|l| l.contains(INIT_WORD)),
        &format!(
            "boot 3 came through bootprint's initramfs, {how}: {}",
            lines(s, "cmdline").join(" ")
        ),
    );
    check_trace(c, m.paths, "boot 3", r, m.new);
}

/// The boot's trace was copied out, and the host's `bootprint report` reads it: a text
/// login, on kernel `release`.
pub(crate) fn check_trace(
    c: &mut Checks,
    paths: &Paths,
    label: &str,
    r: &BootResult,
    release: &str,
) {
    let Some(dir) = &r.trace_dir else {
        c.check(
            false,
            &format!("{label}: the recorder's trace of this boot"),
        );
        return;
    };
    let json = crate::checks::smoke::run_cli(paths, "report", dir).ok();
    let login = json.as_ref().and_then(|j| j["text_login_s"].as_f64());
    let uname = json
        .as_ref()
        .and_then(|j| j["system"]["uname"].as_str().map(str::to_string))
        .unwrap_or_default();
    c.check(
        login.is_some() && uname.contains(release),
        &format!(
            "{label}: trace {} read by `bootprint report`: text login {login:?} s, {uname}",
            dir.display()
        ),
    );
}
