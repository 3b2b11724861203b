//! A small filesystem for tests: an image file under the system's temporary directory, made
//! with mkfs.ext4 (or mkfs.btrfs, mkfs.xfs) and loop-mounted (root only). The guard unmounts
//! it and removes the image whatever the test does, panics included.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// A mounted filesystem image; unmounted and removed on drop.
#[derive(Debug)]
pub struct LoopFs {
    /// `ext4`, `btrfs` or `xfs`.
    fstype: &'static str,
    dir: PathBuf,
    image: PathBuf,
    mnt: PathBuf,
    mounted: bool,
}

fn run(cmd: &str, args: &[&str]) -> Result<String, String> {
    let o = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    if o.status.success() {
        Ok(text)
    } else {
        Err(format!("{cmd} {}: {}: {text}", args.join(" "), o.status))
    }
}

/// The ext4 image relocation's tests use.
pub type Ext4Image = LoopFs;

impl LoopFs {
    /// Makes and mounts an ext4 image of `size_mb` MiB with 4 KiB blocks; `None` (and a skip,
    /// see [`crate::skip`]) when not root or a tool is missing.
    #[track_caller]
    pub fn new(size_mb: u64) -> Option<LoopFs> {
        LoopFs::with_type("ext4", size_mb)
    }

    /// The same with another filesystem: `ext4`, `btrfs` (at least 114 MiB) or `xfs` (at
    /// least 300 MiB), each with its tools' defaults.
    #[track_caller]
    pub fn with_type(fstype: &'static str, size_mb: u64) -> Option<LoopFs> {
        if !crate::is_root() {
            crate::skip(&format!("needs root to loop-mount an {fstype} image"));
            return None;
        }
        let mkfs = format!("mkfs.{fstype}");
        for tool in [mkfs.as_str(), "mount", "umount"] {
            if !crate::have_tool_or_skip(tool) {
                return None;
            }
        }
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "bootprint-{fstype}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(dir.join("mnt")).expect("temporary directory");
        let mut img = LoopFs {
            fstype,
            image: dir.join("fs.img"),
            mnt: dir.join("mnt"),
            dir,
            mounted: false,
        };
        let f = std::fs::File::create(&img.image).expect("image file");
        f.set_len(size_mb << 20).expect("image size");
        drop(f);
        let image = img.image.to_str().expect("UTF-8 path").to_string();
        let args: &[&str] = match fstype {
            "ext4" => &["-q", "-F", "-b", "4096", "-E", "nodiscard"],
            "btrfs" => &["-q", "-f", "--nodiscard"],
            "xfs" => &["-q", "-f", "-K"],
            other => panic!("LoopFs: no mkfs options for {other}"),
        };
        run(&mkfs, &[args, &[image.as_str()]].concat()).expect("mkfs");
        img.mount();
        Some(img)
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.mnt
    }

    /// The image file.
    pub fn image(&self) -> &Path {
        &self.image
    }

    /// Mounts it (again) with `options` (`-o`), e.g. `ro`.
    pub fn mount_with(&mut self, options: &str) {
        run(
            "mount",
            &[
                "-t",
                self.fstype,
                "-o",
                &format!("loop,{options}"),
                self.image.to_str().expect("UTF-8 path"),
                self.mnt.to_str().expect("UTF-8 path"),
            ],
        )
        .expect("mount");
        self.mounted = true;
    }

    /// Mounts it (again) read-write: a fresh mount also starts with an empty page cache for
    /// its files, so what is read comes from the image.
    pub fn mount(&mut self) {
        self.mount_with("rw");
    }

    /// Mounts it afresh (nothing of its files cached) with `options` plus what keeps ext4
    /// itself off the disk afterwards, for tests that count the device's reads: no lazy
    /// inode-table zeroing (`noinit_itable`) and no block-bitmap prefetch
    /// (`no_prefetch_block_bitmaps`: ext4lazyinit reads every group's bitmap at a random
    /// moment up to 5 s after the mount, 4 KiB here; CI saw it as another reader of the
    /// disk). ext4 only.
    pub fn mount_afresh_quiet(&mut self, options: &str) {
        assert_eq!(self.fstype, "ext4", "quiet mount options are ext4's");
        self.unmount();
        self.mount_with(&format!(
            "{options},noinit_itable,no_prefetch_block_bitmaps"
        ));
    }

    /// Remounts it in place with `options` (`remount,` is added), e.g. `ro`.
    pub fn remount(&mut self, options: &str) {
        run(
            "mount",
            &[
                "-o",
                &format!("remount,{options}"),
                self.mnt.to_str().expect("UTF-8 path"),
            ],
        )
        .expect("remount");
    }

    /// Unmounts it (it stays unmounted until [`Ext4Image::mount`]).
    pub fn unmount(&mut self) {
        if self.mounted {
            run("umount", &[self.mnt.to_str().expect("UTF-8 path")]).expect("umount");
            self.mounted = false;
        }
    }

    /// `e2fsck -fn` of the unmounted image (ext4 only): Ok(its output) when it reports the
    /// filesystem clean, Err(its output) otherwise.
    pub fn fsck(&mut self) -> Result<String, String> {
        self.unmount();
        run("e2fsck", &["-fn", self.image.to_str().expect("UTF-8 path")])
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if self.mounted {
            let mnt = self.mnt.to_str().unwrap_or_default().to_string();
            if run("umount", &[&mnt]).is_err() {
                // Still busy (a child of a failed test): detach it, the loop device follows.
                let _ = run("umount", &["-l", &mnt]);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Size of each write of [`interleaved_files`].
const PIECE: usize = 16 * 1024;

/// `n` files of `size` bytes of pseudo-random data in `dir`, written round-robin 16 KiB at a
/// time, each piece fsync'ed, so the allocator places the files' pieces in between each
/// other's: fragmented files for relocation tests.
pub fn interleaved_files(dir: &Path, n: usize, size: usize) -> Vec<PathBuf> {
    use std::io::Write;
    let paths: Vec<PathBuf> = (0..n).map(|i| dir.join(format!("f{i:03}"))).collect();
    let mut files: Vec<std::fs::File> = paths
        .iter()
        .map(|p| std::fs::File::create(p).unwrap())
        .collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..size / PIECE {
        for f in &mut files {
            let mut buf = vec![0u8; PIECE];
            for b in buf.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.copy_from_slice(&x.to_le_bytes()[..b.len()]);
            }
            f.write_all(&buf).unwrap();
            f.sync_all().unwrap();
        }
    }
    paths
}

/// FNV-1a of the file's bytes: whether a file's content changed.
pub fn checksum(p: &Path) -> u64 {
    std::fs::read(p)
        .unwrap()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
}
