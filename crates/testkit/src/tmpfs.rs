//! A small tmpfs for tests that need a file system to fill (a write that fails half way
//! for want of space): mounted under the system's temporary directory (root only),
//! unmounted and removed on drop, panics included.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// A mounted tmpfs of a fixed size; unmounted on drop.
#[derive(Debug)]
pub struct Tmpfs {
    mnt: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size_kb` KiB; `None` (and a skip, see [`crate::skip`]) when not
    /// root.
    #[track_caller]
    pub fn new(size_kb: u64) -> Option<Tmpfs> {
        if !crate::is_root() {
            crate::skip("needs root to mount a tmpfs");
            return None;
        }
        static N: AtomicU32 = AtomicU32::new(0);
        let mnt = std::env::temp_dir().join(format!(
            "bootprint-tmpfs-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&mnt).expect("mount point");
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size_kb}k,mode=0755"),
                "tmpfs",
            ])
            .arg(&mnt)
            .status()
            .expect("mount runs")
            .success();
        assert!(ok, "mount -t tmpfs on {}", mnt.display());
        Some(Tmpfs { mnt })
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.mnt
    }

    /// Fills what is left of it with one file (`name`), so the next write fails (ENOSPC).
    pub fn fill(&self, name: &str) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.mnt.join(name)).expect("filler");
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
        let _ = std::fs::remove_dir(&self.mnt);
    }
}
