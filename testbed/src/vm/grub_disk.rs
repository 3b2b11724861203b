//! The package test's disk: the text image as a PC has it, booted by GRUB from its own disk
//! (BIOS, a partition table, no `-kernel`), with Debian's kernel from the ABI before the
//! image's and no trace of bootprint, so the test can install the .deb, enable, upgrade the
//! kernel to the image's ABI, disable and purge as a user would (docs/testbed.md, "The
//! package test").
//!
//! Derived from the text image when the test first needs it, and cached (`grub-<key>/`):
//! a copy of the image's root file system, grown, is loop-mounted on the host and changed in
//! a chroot at the host's speed ([`ROOT_SCRIPT`]: dpkg and mkinitramfs take many minutes
//! under emulation), put behind an MBR partition table, and booted once with the image's
//! kernel (`root=/dev/vda1`) to run [`SETUP_SCRIPT`]: Debian's own grub-install and
//! update-grub, which need the disk. A second boot, through the firmware and GRUB, must run
//! the older kernel before the disk is kept. Only `package` pays for this: `make test`
//! never builds it.

use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::vm::image::{self, Image};
use crate::vm::qemu::{self, BootOpts, Profile};
use crate::vm::util::{io_err, output_logged, run_logged, Error, Fnv, Lock, Paths, Result};

/// Bumped when the derivation changes in a way the hashed texts below do not show.
const DISK_VERSION: &str = "bootprint-testbed grub disk 1";
/// Where the root partition starts (sectors of 512 bytes): 1 MiB, as installers do, which
/// leaves GRUB's core image the gap after the MBR.
const PART_START_SECTOR: u64 = 2048;
/// Where the root file system starts on the disk, in bytes.
pub const FS_OFFSET: u64 = PART_START_SECTOR * 512;
/// Room for the upgrade: a second kernel, its initramfs and bootprint's, the traces.
const GROW_MB: u64 = 1024;
/// Where the upgrade's kernel .deb waits in the guest.
pub const GUEST_DEBS: &str = "/root/bootprint-testbed/debs";
/// The GRUB disk's fstab: the root is the first partition.
const FSTAB: &str = "/dev/vda1 / ext4 defaults 0 1\nproc /proc proc defaults 0 0\n";
/// GRUB on the serial console, no menu delay, no other systems; Debian's kernel options.
const GRUB_DEFAULTS: &str =
    "# The bootprint test bed's GRUB: the serial console, no menu delay, no other systems.
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_RECORDFAIL_TIMEOUT=0
GRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`
GRUB_CMDLINE_LINUX_DEFAULT=\"quiet loglevel=6\"
GRUB_CMDLINE_LINUX=\"console=ttyS0 sysrq_always_enabled\"
GRUB_TERMINAL=serial
GRUB_SERIAL_COMMAND=\"serial --unit=0 --speed=115200\"
GRUB_DISABLE_OS_PROBER=true
";
/// initramfs-tools for the modules this machine needs (as on a machine set up by hand):
/// the upgrade's mkinitramfs in the guest takes far less than with `MODULES=most`.
const INITRAMFS_CONF: &str = "MODULES=dep\n";
/// In the chroot: what the test bed put in by hand goes (the bootprint binaries, the late
/// generator's link, the startpar wrapper and its diversion, of /bin/startpar on Debian 12,
/// /usr/bin/startpar on 13); GRUB (its install devices left
/// empty: grub-install runs in the guest, on the disk) and the previous kernel come in; the
/// image's kernel goes, its .deb kept for the upgrade.
const ROOT_SCRIPT: &str = "set -e
export DEBIAN_FRONTEND=noninteractive
rm -rf /usr/lib/bootprint /usr/bin/bootprint /var/log/bootprint /var/lib/bootprint /etc/bootprint
rm -f /usr/lib/systemd/system-generators/bootprint-late-generator
for p in /bin/startpar /usr/bin/startpar; do
  if dpkg-divert --list $p | grep -q .; then
    rm -f $p
    dpkg-divert --local --rename --remove $p
  fi
done
printf '%s\\n' 'grub-pc grub-pc/install_devices multiselect' \\
  'grub-pc grub-pc/install_devices_empty boolean true' | debconf-set-selections
apt-get update
apt-get install -y --no-install-recommends grub-pc linux-image-$OLD
apt-get purge -y linux-image-amd64 linux-image-$NEW
mkdir -p $DEBS
cd $DEBS
apt-get download linux-image-$NEW
apt-get clean
";
/// The kernel packages `apt-cache search` lists for the previous ABI: Debian 12's
/// `linux-image-6.1.0-50-amd64`, Debian 13's `linux-image-6.12.117+deb13-amd64`.
const KERNEL_PACKAGES: &str = "^linux-image-[0-9.]+(-[0-9]+|[+]deb[0-9]+)-amd64$";
/// grub-install on the disk (and remembered, so a grub-pc upgrade installs there too),
/// then grub.cfg from Debian's scripts.
const SETUP_SCRIPT: &str = r#"set -e
echo 'grub-pc grub-pc/install_devices multiselect /dev/vda' | debconf-set-selections
grub-install /dev/vda
update-grub
cat /root/bootprint-testbed/releases
echo BP""SETUP=ok
"#;

/// The GRUB disk and what the test needs to know about it.
pub struct GrubDisk {
    pub disk: PathBuf,
    /// The kernel release the disk boots (`6.1.0-47-amd64`).
    pub old_release: String,
    /// The release of the kernel .deb left in [`GUEST_DEBS`] for the upgrade.
    pub new_release: String,
}

/// The cached GRUB disk of `img` (the text image), derived first if missing.
pub fn ensure(paths: &Paths, img: &Image) -> Result<GrubDisk> {
    let dir = paths.cache.join(format!("grub-{}", key(img)));
    let _lock = Lock::acquire(&dir.with_extension("lock"))?;
    if !dir.join("ok").is_file() {
        derive(paths, img, &dir)?;
    }
    let releases =
        fs::read_to_string(dir.join("ok")).map_err(|e| io_err("cannot read", &dir, e))?;
    let (old_release, new_release) = parse_releases(&releases).ok_or_else(|| {
        Error::fail(format!(
            "{}: expected `old RELEASE` and `new RELEASE` lines, found {releases:?}",
            dir.join("ok").display()
        ))
    })?;
    Ok(GrubDisk {
        disk: dir.join("disk.raw"),
        old_release,
        new_release,
    })
}

/// The cache key: the image directory (itself a hash of the image's inputs) and the
/// derivation.
fn key(img: &Image) -> String {
    let mut h = Fnv::new();
    for part in [
        DISK_VERSION,
        &img.dir.file_name().unwrap_or_default().to_string_lossy(),
        FSTAB,
        GRUB_DEFAULTS,
        INITRAMFS_CONF,
        ROOT_SCRIPT,
        SETUP_SCRIPT,
    ] {
        h.update(part.as_bytes());
        h.update(b"\0");
    }
    h.update(&PART_START_SECTOR.to_le_bytes());
    h.update(&GROW_MB.to_le_bytes());
    h.hex()
}

/// `old 6.1.0-47-amd64` and `new 6.1.0-50-amd64` lines (the image build's `releases`).
fn parse_releases(text: &str) -> Option<(String, String)> {
    let field = |name: &str| {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(name)?.strip_prefix(' '))
            .map(|r| r.trim().to_string())
            .find(|r| !r.is_empty())
    };
    Some((field("old")?, field("new")?))
}

fn derive(paths: &Paths, img: &Image, dir: &Path) -> Result<()> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
    let log = dir.join("derive.log");
    eprintln!(
        "grub disk: deriving from {} in {} (log {})",
        img.rootfs.display(),
        dir.display(),
        log.display()
    );
    let root = dir.join("root.ext4");
    {
        let _img_lock = Lock::acquire(&img.lock_path())?;
        run_logged(
            Command::new("cp")
                .arg("--sparse=always")
                .arg(&img.rootfs)
                .arg(&root),
            &log,
        )?;
    }
    grow(&root, &log)?;
    make_root(&root, dir, &log)?;
    let work = dir.join("disk.tmp");
    write_disk(&work, &root)?;
    fs::remove_file(&root).map_err(|e| io_err("cannot remove", &root, e))?;

    eprintln!(
        "grub disk: setup boot (the image's kernel, root=/dev/vda1): grub-install, update-grub"
    );
    let mut o = BootOpts::new(Profile::Fast);
    o.root = Some("/dev/vda1".into());
    o.disk_from = Some(work.clone());
    o.keep_disk = true;
    o.guest_script = Some(SETUP_SCRIPT.to_string());
    let r = qemu::boot(paths, img, &o)?;
    let out = r.guest_output.clone().unwrap_or_default();
    fs::write(dir.join("setup.out"), &out).map_err(|e| io_err("cannot write", dir, e))?;
    let kept = r
        .kept_disk()
        .ok_or_else(|| Error::fail("the setup boot kept no disk"))?;
    let releases = parse_releases(&out);
    let Some((old_release, new_release)) = releases.filter(|_| out.contains("BPSETUP=ok")) else {
        return Err(Error::fail(format!(
            "the GRUB disk's setup failed in the guest (serial log {}); its output:\n{}",
            r.serial_log.display(),
            tail_lines(&out, 30)
        )));
    };
    fs::rename(&kept, &work).map_err(|e| io_err("cannot move", &kept, e))?;

    eprintln!("grub disk: a boot through the firmware and GRUB");
    let mut o = BootOpts::new(Profile::Fast);
    o.firmware = true;
    o.disk_from = Some(work.clone());
    o.guest_script = Some("uname -r; cat /proc/cmdline\n".into());
    let r = qemu::boot(paths, img, &o)?;
    let out = r.guest_output.unwrap_or_default();
    if !out.lines().any(|l| l.trim() == old_release) || !out.contains("BOOT_IMAGE=") {
        return Err(Error::fail(format!(
            "the GRUB disk did not boot linux-image-{old_release} through GRUB (serial log {}):\n{}",
            r.serial_log.display(),
            tail_lines(&out, 10)
        )));
    }
    let disk = dir.join("disk.raw");
    fs::rename(&work, &disk).map_err(|e| io_err("cannot move", &work, e))?;
    fs::write(
        dir.join("ok"),
        format!("old {old_release}\nnew {new_release}\n"),
    )
    .map_err(|e| io_err("cannot write", dir, e))?;
    eprintln!("grub disk: ready, {}", disk.display());
    Ok(())
}

/// Grows the file system image `root` by [`GROW_MB`] (resize2fs wants it checked first).
fn grow(root: &Path, log: &Path) -> Result<()> {
    let bytes = fs::metadata(root)
        .map_err(|e| io_err("cannot stat", root, e))?
        .len();
    qemu::e2fsck(&["-f", "-y"], root, log)?;
    run_logged(
        Command::new("resize2fs")
            .arg(root)
            .arg(format!("{}M", bytes / (1 << 20) + GROW_MB)),
        log,
    )
}

/// Loop-mounts `root` under `dir` and makes it the GRUB disk's root: [`ROOT_SCRIPT`] in a
/// chroot (the mirror from the root's own apt sources, as the image build used), then the
/// fstab, GRUB's defaults, initramfs-tools' setting and the releases file.
fn make_root(root: &Path, dir: &Path, log: &Path) -> Result<()> {
    let mnt = dir.join("mnt");
    fs::create_dir_all(&mnt).map_err(|e| io_err("cannot create", &mnt, e))?;
    run_logged(
        Command::new("mount")
            .args(["-o", "loop"])
            .arg(root)
            .arg(&mnt),
        log,
    )?;
    let _mounted = Unmount(mnt.clone());
    let installed = image::kernel_release(&mnt.join("boot"))?;
    let policy = mnt.join("usr/sbin/policy-rc.d");
    image::write(&policy, "#!/bin/sh\nexit 101\n")?;
    image::set_mode(&policy, 0o755)?;
    let proc_mount = image::ProcMount::mount(&mnt.join("proc"), log)?;
    run_logged(&mut image::chroot(&mnt, &["apt-get", "update"]), log)?;
    let listing = output_logged(
        &mut image::chroot(
            &mnt,
            &["apt-cache", "search", "--names-only", KERNEL_PACKAGES],
        ),
        log,
    )?;
    let previous = image::previous_kernel(&listing, &installed).ok_or_else(|| {
        Error::fail(format!(
            "no kernel ABI before {installed} in the mirror (apt-cache search found: {})",
            listing
                .lines()
                .filter_map(|l| l.split(' ').next())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    eprintln!(
        "grub disk: in a chroot: grub-pc, linux-image-{previous} in, linux-image-{installed} out (its .deb kept for the upgrade)"
    );
    let mut cmd = image::chroot(&mnt, &["sh", "-c", ROOT_SCRIPT]);
    cmd.env("OLD", &previous)
        .env("NEW", &installed)
        .env("DEBS", GUEST_DEBS);
    run_logged(&mut cmd, log)?;
    drop(proc_mount);
    fs::remove_file(&policy).map_err(|e| io_err("cannot remove", &policy, e))?;
    image::write(&mnt.join("etc/fstab"), FSTAB)?;
    image::write(&mnt.join("etc/default/grub"), GRUB_DEFAULTS)?;
    image::write(
        &mnt.join("etc/initramfs-tools/conf.d/bootprint-testbed"),
        INITRAMFS_CONF,
    )?;
    image::write(
        &mnt.join("root/bootprint-testbed/releases"),
        &format!("old {previous}\nnew {installed}\n"),
    )?;
    Ok(())
}

/// Unmounts a mount point when dropped (lazily if it is busy), so an error half-way leaves
/// no loop device behind.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let ok = Command::new("umount").arg(&self.0).status();
        if !matches!(ok, Ok(s) if s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Writes `disk`: an MBR partition table with one bootable Linux partition at
/// [`PART_START_SECTOR`] holding the file system image `root`.
fn write_disk(disk: &Path, root: &Path) -> Result<()> {
    let root_bytes = fs::metadata(root)
        .map_err(|e| io_err("cannot stat", root, e))?
        .len();
    let start = PART_START_SECTOR * 512;
    let _ = fs::remove_file(disk);
    run_logged(
        Command::new("dd")
            .arg(format!("if={}", root.display()))
            .arg(format!("of={}", disk.display()))
            .args(["bs=1M", "seek=1", "conv=sparse", "status=none"]),
        &disk.with_extension("log"),
    )?;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .open(disk)
        .map_err(|e| io_err("cannot open", disk, e))?;
    let mbr = mbr(PART_START_SECTOR, root_bytes / 512);
    f.seek(SeekFrom::Start(0))
        .and_then(|_| f.write_all(&mbr))
        .and_then(|_| f.set_len(start + root_bytes))
        .and_then(|_| f.sync_all())
        .map_err(|e| io_err("cannot write the partition table of", disk, e))
}

/// A classic MBR (no boot code: grub-install writes it) with one bootable partition of type
/// 0x83 (Linux) from sector `start` for `sectors` sectors; CHS fields saturated, as for any
/// partition past cylinder 1023 (firmware and GRUB use the LBA fields).
pub fn mbr(start: u64, sectors: u64) -> [u8; 512] {
    let mut m = [0u8; 512];
    // A disk signature, so the partition has a PARTUUID.
    m[440..444].copy_from_slice(&0x6270_7474u32.to_le_bytes());
    let e = &mut m[446..462];
    e[0] = 0x80; // bootable
    e[1..4].copy_from_slice(&[0xfe, 0xff, 0xff]);
    e[4] = 0x83;
    e[5..8].copy_from_slice(&[0xfe, 0xff, 0xff]);
    e[8..12].copy_from_slice(&(start as u32).to_le_bytes());
    e[12..16].copy_from_slice(&(sectors as u32).to_le_bytes());
    m[510] = 0x55;
    m[511] = 0xaa;
    m
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mbr_has_one_bootable_linux_partition() {
        let m = mbr(2048, 6_291_456);
        assert_eq!(&m[510..], &[0x55, 0xaa]);
        assert_eq!(m[446], 0x80);
        assert_eq!(m[450], 0x83);
        assert_eq!(u32::from_le_bytes(m[454..458].try_into().unwrap()), 2048);
        assert_eq!(
            u32::from_le_bytes(m[458..462].try_into().unwrap()),
            6_291_456
        );
        // The other three entries are empty, and no boot code is written.
        assert!(m[462..510].iter().all(|&b| b == 0));
        assert!(m[..440].iter().all(|&b| b == 0));
    }

    #[test]
    fn releases_file() {
        assert_eq!(
            parse_releases("old 6.1.0-47-amd64\nnew 6.1.0-50-amd64\n"),
            Some(("6.1.0-47-amd64".into(), "6.1.0-50-amd64".into()))
        );
        // In a guest's output, among other lines; a missing or empty field is no answer.
        assert_eq!(
            parse_releases("Generating grub configuration file ...\nnew 6.1.0-50-amd64\nold 6.1.0-47-amd64\nBPSETUP=ok\n"),
            Some(("6.1.0-47-amd64".into(), "6.1.0-50-amd64".into()))
        );
        assert_eq!(parse_releases("old 6.1.0-47-amd64\n"), None);
        assert_eq!(parse_releases("old \nnew 6.1.0-50-amd64\n"), None);
        assert_eq!(parse_releases("older 6.1.0-47-amd64\nnew x\n"), None);
    }
}
