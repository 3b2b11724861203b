//! The host's way into a guest's root file system image, copied out of its disk: ext4
//! through e2fsprogs (`debugfs`, `e2fsck`: no mount, no kernel driver), btrfs and XFS through
//! a loop mount of the copy (the host kernel's drivers replay their logs when they mount it;
//! a test-bed boot ends with `poweroff -f`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::vm::util::{io_err, output_logged, run_logged, Result};

/// The file system type of the image `image` (`ext4`, `btrfs`, `xfs`), as `blkid` probes it.
pub fn fs_type(image: &Path, log: &Path) -> Result<String> {
    let out = output_logged(
        Command::new("blkid")
            .args(["-p", "-o", "value", "-s", "TYPE"])
            .arg(image),
        log,
    )?;
    Ok(out.trim().to_string())
}

/// Whether the host reaches into `image` by mounting it (btrfs, XFS), not with e2fsprogs.
pub fn mounted_type(image: &Path, log: &Path) -> bool {
    matches!(fs_type(image, log).as_deref(), Ok("btrfs" | "xfs"))
}

/// An image loop-mounted read-write at a directory until dropped.
pub struct Mounted {
    dir: PathBuf,
    _unmount: Unmount,
}

impl Mounted {
    /// Mounts `image` at `dir` (created).
    pub fn new(image: &Path, dir: &Path, log: &Path) -> Result<Mounted> {
        Mounted::at_offset(image, 0, dir, log)
    }

    /// Mounts the file system that starts `offset` bytes into the disk image `image` at
    /// `dir` (created).
    pub fn at_offset(image: &Path, offset: u64, dir: &Path, log: &Path) -> Result<Mounted> {
        fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
        run_logged(
            Command::new("mount")
                .args(["-o", &format!("loop,offset={offset}")])
                .arg(image)
                .arg(dir),
            log,
        )?;
        Ok(Mounted {
            dir: dir.to_path_buf(),
            _unmount: Unmount(dir.to_path_buf()),
        })
    }

    /// Where the system's `/` is in it: the file system's top, or on btrfs the subvolume
    /// `@` when the system lives there (grub_disk's btrfs layout).
    pub fn system_root(&self) -> PathBuf {
        let sub = self.dir.join("@");
        if sub.join("etc").is_dir() {
            sub
        } else {
            self.dir.clone()
        }
    }
}

/// Gives the blocks the file system `offset` bytes into the disk image `disk` no longer uses
/// back to the sparse file (the loop device turns fstrim's discards into holes), mounting it
/// at `dir`: a copy of the disk then takes what its files take, not every block apt and the
/// guest ever wrote (a GRUB disk: 1.2 GB, not 1.9).
pub fn trim(disk: &Path, offset: u64, dir: &Path, log: &Path) -> Result<()> {
    let m = Mounted::at_offset(disk, offset, dir, log)?;
    run_logged(Command::new("fstrim").arg(&m.dir), log)
}

/// Unmounts a mount point when dropped (lazily if it is busy), so an error half-way leaves
/// no loop device behind.
pub struct Unmount(pub PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let ok = Command::new("umount").arg(&self.0).status();
        if !matches!(ok, Ok(s) if s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}
