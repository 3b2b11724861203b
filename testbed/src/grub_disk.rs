//! The package test's disk: the text image as a PC has it, booted by GRUB from its own disk
//! (BIOS, a partition table, no `-kernel`), with Debian's kernel from the ABI before the
//! image's and no trace of bootprint, so the test can install the .deb, enable, upgrade the
//! kernel to the image's ABI, disable and purge as a user would (docs/testbed.md, "The
//! package test").
//!
//! Derived from the text image and cached beside it (`grub-<key>/disk.raw`): the image's
//! root file system grown by [`GROW_MB`] behind an MBR partition table, the .debs the image
//! build downloaded ([`image::EXTRA_DEBS_DIR`]) written into it with debugfs, then one boot
//! with the image's kernel (`root=/dev/vda1`) runs [`SETUP_SCRIPT`] in the guest: Debian's
//! own dpkg, grub-install and update-grub do the rest. A second boot, through the firmware
//! and GRUB, must reach the login before the disk is kept.

use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::image::{self, Image};
use crate::qemu::{self, BootOpts, Profile};
use crate::util::{io_err, run_logged, Error, Fnv, Lock, Paths, Result};

/// Bumped when the derivation changes in a way the hashed texts below do not show.
const DISK_VERSION: &str = "bootprint-testbed grub disk 1";
/// Where the root partition starts (sectors of 512 bytes): 1 MiB, as installers do, which
/// leaves GRUB's core image the gap after the MBR.
const PART_START_SECTOR: u64 = 2048;
/// Where the root file system starts on the disk, in bytes.
pub const FS_OFFSET: u64 = PART_START_SECTOR * 512;
/// Room for a second kernel, two initramfs generators' images and the traces.
const GROW_MB: u64 = 1024;
/// Where the .debs go in the guest.
pub const GUEST_DEBS: &str = "/root/bootprint-testbed/debs";

/// What the test bed's image has that a machine without bootprint does not (the binaries
/// `update_binaries` writes, the late-unit generator link, the startpar wrapper and its
/// diversion) goes; GRUB and the older kernel come in from the .debs; the image's own kernel
/// goes (the test installs it again as the upgrade). GRUB on the serial console, no menu
/// delay, no os-prober.
const SETUP_SCRIPT: &str = r#"set -e
export DEBIAN_FRONTEND=noninteractive
d=/root/bootprint-testbed/debs
rm -f /usr/bin/bootprint /usr/lib/systemd/system-generators/bootprint-late-generator
rm -rf /usr/lib/bootprint /var/log/bootprint /var/lib/bootprint /etc/bootprint
if dpkg-divert --list /bin/startpar | grep -q .; then
  rm -f /bin/startpar
  dpkg-divert --local --rename --remove /bin/startpar
fi
printf '/dev/vda1 / ext4 defaults 0 1\nproc /proc proc defaults 0 0\n' > /etc/fstab
echo 'grub-pc grub-pc/install_devices multiselect /dev/vda' | debconf-set-selections
old=$(cat $d/old-release); new=$(cat $d/new-release)
dpkg -i $(ls $d/*.deb | grep -v "/linux-image-${new}_")
cat > /etc/default/grub <<'EOF'
# The bootprint test bed's GRUB: the serial console, no menu delay, no other systems.
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_RECORDFAIL_TIMEOUT=0
GRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`
GRUB_CMDLINE_LINUX_DEFAULT="quiet loglevel=6"
GRUB_CMDLINE_LINUX="console=ttyS0 sysrq_always_enabled"
GRUB_TERMINAL=serial
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
GRUB_DISABLE_OS_PROBER=true
EOF
grub-install /dev/vda
dpkg --purge linux-image-amd64 "linux-image-$new"
update-grub
ls /boot
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
    let debs_dir = img.dir.join(image::EXTRA_DEBS_DIR);
    let debs = list_debs(&debs_dir)?;
    let new_release = release_of_debs(&debs, true)?;
    let old_release = release_of_debs(&debs, false)?;
    let dir = paths.cache.join(format!("grub-{}", key(img)));
    let disk = dir.join("disk.raw");
    let _lock = Lock::acquire(&dir.with_extension("lock"))?;
    if !dir.join("ok").is_file() {
        derive(paths, img, &dir, &debs, &old_release, &new_release)?;
    }
    Ok(GrubDisk {
        disk,
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
        SETUP_SCRIPT,
    ] {
        h.update(part.as_bytes());
        h.update(b"\0");
    }
    h.update(&PART_START_SECTOR.to_le_bytes());
    h.update(&GROW_MB.to_le_bytes());
    h.hex()
}

fn list_debs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut debs: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| {
            Error::fail(format!(
                "{}: {e}; the text image was built before the package test existed: \
                 remove it and run `bootprint-testbed image`",
                dir.display()
            ))
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    debs.sort();
    Ok(debs)
}

/// The release of the newest (or oldest) `linux-image-RELEASE_*.deb` among `debs`.
fn release_of_debs(debs: &[PathBuf], newest: bool) -> Result<String> {
    let mut releases = kernel_releases(debs);
    releases.sort_by_key(|r| abi_of(r));
    let pick = if newest {
        releases.pop()
    } else {
        releases.into_iter().next()
    };
    pick.ok_or_else(|| {
        Error::fail(format!(
            "no linux-image-*.deb among the image's extra .debs ({} files)",
            debs.len()
        ))
    })
}

/// `linux-image-6.1.0-47-amd64_6.1.170-3_amd64.deb` -> `6.1.0-47-amd64`.
fn kernel_releases(debs: &[PathBuf]) -> Vec<String> {
    debs.iter()
        .filter_map(|p| p.file_name()?.to_str())
        .filter_map(|n| n.strip_prefix("linux-image-")?.split('_').next())
        .filter(|r| r.ends_with("-amd64") && r.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_string)
        .collect()
}

/// The ABI number of a release (`6.1.0-47-amd64` -> 47); 0 when it has none.
fn abi_of(release: &str) -> u32 {
    release
        .trim_end_matches("-amd64")
        .rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn derive(
    paths: &Paths,
    img: &Image,
    dir: &Path,
    debs: &[PathBuf],
    old_release: &str,
    new_release: &str,
) -> Result<()> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
    let log = dir.join("derive.log");
    eprintln!(
        "grub disk: deriving from {} in {} (log {})",
        img.dir.display(),
        dir.display(),
        log.display()
    );
    // The root file system, grown, with the .debs in it.
    let root = dir.join("root.ext4");
    let _img_lock = Lock::acquire(&img.lock_path())?;
    run_logged(
        Command::new("cp")
            .arg("--sparse=always")
            .arg(&img.rootfs)
            .arg(&root),
        &log,
    )?;
    drop(_img_lock);
    let root_bytes = fs::metadata(&root)
        .map_err(|e| io_err("cannot stat", &root, e))?
        .len();
    let grown_mb = root_bytes / (1 << 20) + GROW_MB;
    // resize2fs wants a freshly checked file system; 1 = errors fixed, also fine.
    let e2fsck_log = dir.join("e2fsck.log");
    let out = fs::File::create(&e2fsck_log).map_err(|e| io_err("cannot create", &e2fsck_log, e))?;
    let err = out
        .try_clone()
        .map_err(|e| io_err("cannot open", &e2fsck_log, e))?;
    let status = Command::new("e2fsck")
        .args(["-f", "-y"])
        .arg(&root)
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| Error::fail(format!("cannot run e2fsck: {e}")))?;
    if !matches!(status.code(), Some(0) | Some(1)) {
        return Err(Error::fail(format!(
            "e2fsck -f {} failed ({status}); see {}",
            root.display(),
            e2fsck_log.display()
        )));
    }
    run_logged(
        Command::new("resize2fs")
            .arg(&root)
            .arg(format!("{grown_mb}M")),
        &log,
    )?;
    let mut cmds = format!("mkdir /root/bootprint-testbed\nmkdir {GUEST_DEBS}\n");
    for deb in debs {
        let name = deb.file_name().unwrap_or_default().to_string_lossy();
        cmds.push_str(&format!("write {} {GUEST_DEBS}/{name}\n", deb.display()));
    }
    for (name, text) in [("old-release", old_release), ("new-release", new_release)] {
        let f = dir.join(name);
        fs::write(&f, format!("{text}\n")).map_err(|e| io_err("cannot write", &f, e))?;
        cmds.push_str(&format!("write {} {GUEST_DEBS}/{name}\n", f.display()));
    }
    let cmd_file = dir.join("debugfs.cmd");
    fs::write(&cmd_file, &cmds).map_err(|e| io_err("cannot write", &cmd_file, e))?;
    run_logged(
        Command::new("debugfs")
            .arg("-w")
            .arg("-f")
            .arg(&cmd_file)
            .arg(&root),
        &log,
    )?;
    // The disk: an MBR with one partition, the file system behind it.
    let work = dir.join("disk.tmp");
    write_disk(&work, &root)?;
    fs::remove_file(&root).map_err(|e| io_err("cannot remove", &root, e))?;

    eprintln!(
        "grub disk: setup boot (image's kernel, root=/dev/vda1): GRUB, linux-image-{old_release}"
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
        .ok_or_else(|| Error::fail("setup boot kept no disk"))?;
    if !out.contains("BPSETUP=ok") {
        return Err(Error::fail(format!(
            "the GRUB disk's setup failed in the guest (serial log {}); its output:\n{}",
            r.serial_log.display(),
            tail_lines(&out, 30)
        )));
    }
    fs::rename(&kept, &work).map_err(|e| io_err("cannot move", &kept, e))?;

    eprintln!("grub disk: first boot through the firmware and GRUB");
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
    fs::write(dir.join("ok"), format!("{old_release}\n"))
        .map_err(|e| io_err("cannot write", dir, e))?;
    eprintln!("grub disk: ready, {}", disk.display());
    Ok(())
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
    fn kernel_releases_and_their_order() {
        let debs: Vec<PathBuf> = [
            "grub-pc_2.06-13+deb12u2_amd64.deb",
            "linux-image-6.1.0-50-amd64_6.1.176-1_amd64.deb",
            "linux-image-6.1.0-47-amd64_6.1.170-3_amd64.deb",
            "linux-image-amd64_6.1.176-1_amd64.deb",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(
            kernel_releases(&debs),
            vec!["6.1.0-50-amd64".to_string(), "6.1.0-47-amd64".to_string()]
        );
        assert_eq!(release_of_debs(&debs, true).unwrap(), "6.1.0-50-amd64");
        assert_eq!(release_of_debs(&debs, false).unwrap(), "6.1.0-47-amd64");
        assert!(release_of_debs(&debs[..1], true).is_err());
    }
}
