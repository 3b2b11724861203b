//! The runner's state files (`/var/lib/bootprint/rc-durations`, `rc-last.log`): written
//! whole or not at all, so a crash or power cut at any point leaves the old file or the new
//! one, never a mix, an empty file or a file written through someone's symlink.
//!
//! [`write_atomic`]: a temporary file in the same directory, created new (`O_EXCL`, never
//! through a symlink), written and fsynced, renamed over the file, then the directory
//! fsynced so the rename itself is on disk.

use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The temporary file [`write_atomic`] writes before renaming: `.<name>.tmp` beside `path`.
/// A dot file, so nothing that lists the directory takes it for state.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

fn create_new(tmp: &Path) -> io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        // O_EXCL already refuses an existing symlink; O_NOFOLLOW says so twice.
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o644)
        .open(tmp)
}

/// Writes `bytes` to `path` atomically and durably, creating the directory. On any error
/// the old file (if any) is left as it was and the temporary file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let tmp = temp_path(path);
    let mut f = match create_new(&tmp) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            // Left by a crash (or planted): unlink removes a symlink itself, never its
            // target. A directory there is not ours to remove: the error stands.
            std::fs::remove_file(&tmp)?;
            create_new(&tmp)?
        }
        Err(e) => return Err(e),
    };
    let written = f
        .write_all(bytes)
        .and_then(|_| f.sync_all())
        .and_then(|_| std::fs::rename(&tmp, path));
    drop(f);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    // The rename is durable only once the directory is on disk.
    std::fs::File::open(&dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_files_and_leaves_no_temporary() {
        let d_tmp = tempfile::tempdir().unwrap();
        let d = d_tmp.path();
        let p = d.join("sub/state");
        write_atomic(&p, b"one\n").unwrap();
        write_atomic(&p, b"two\n").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two\n");
        assert_eq!(std::fs::read_dir(d.join("sub")).unwrap().count(), 1);
    }
}
