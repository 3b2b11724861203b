//! kexec: loading an entry with kexec_file_load(2), the kernel's loaded state, the marker
//! that says bootprint loaded it for the coming reboot, and the reboot(2) into it. The only
//! system calls of this crate (`// SAFETY:` on each).

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::Path;

use crate::{BootEntry, Method};

/// `1` while a kexec image is loaded (present only in kernels with kexec).
pub const LOADED: &str = "/sys/kernel/kexec_loaded";
/// Written by `bootprint reboot` after it loaded the image, read by the runner's runlevel 6
/// and the shutdown's recorder: the method's word and when `bootprint reboot` started
/// (CLOCK_BOOTTIME ns: the request, since the load comes before the init hears of it). Only
/// a root-owned regular file counts.
pub const MARKER: &str = "/run/bootprint/fast-reboot";
/// GRUB loads several initramfs images one after the other, each padded to 4 bytes (its
/// `initrd` command, grub-core/loader/linux.c); the joined image is the same bytes.
const INITRD_ALIGN: usize = 4;

/// Whether the running kernel has a kexec image loaded.
pub fn loaded() -> bool {
    std::fs::read_to_string(LOADED).is_ok_and(|s| s.trim() == "1")
}

/// Loads `entry` for the next reboot(LINUX_REBOOT_CMD_KEXEC), replacing any image loaded
/// before. The kernel checks the image (and its signature where it must).
pub fn load(entry: &BootEntry) -> io::Result<()> {
    let kernel = File::open(&entry.kernel).map_err(|e| at(&entry.kernel, e))?;
    let initrd = match entry.initrds.as_slice() {
        [] => None,
        [one] => Some(File::open(one).map_err(|e| at(one, e))?),
        many => Some(joined(many)?),
    };
    let cmdline = CString::new(entry.cmdline.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the command line"))?;
    let flags = if initrd.is_none() {
        libc::KEXEC_FILE_NO_INITRAMFS
    } else {
        0
    };
    // SAFETY: the descriptors are open for the call; the command line is a NUL-terminated
    // buffer of the length passed (the length counts the NUL, as the call requires).
    let r = unsafe {
        libc::syscall(
            libc::SYS_kexec_file_load,
            kernel.as_raw_fd(),
            initrd.as_ref().map_or(-1, |f| f.as_raw_fd()),
            cmdline.as_bytes_with_nul().len(),
            cmdline.as_ptr(),
            flags,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Unloads the kexec image (nothing to do when none is loaded).
pub fn unload() -> io::Result<()> {
    // SAFETY: with KEXEC_FILE_UNLOAD the descriptors and the command line are ignored.
    let r = unsafe {
        libc::syscall(
            libc::SYS_kexec_file_load,
            -1,
            -1,
            0usize,
            std::ptr::null::<libc::c_char>(),
            libc::KEXEC_FILE_UNLOAD,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The initramfs images joined into one anonymous file, each padded as GRUB pads it.
fn joined(paths: &[std::path::PathBuf]) -> io::Result<File> {
    let name = CString::new("bootprint-initrd").expect("no NUL");
    // SAFETY: a NUL-terminated name; the flags are valid.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just created and is owned by nothing else.
    let mut out = unsafe { File::from_raw_fd(fd) };
    for p in paths {
        let mut f = File::open(p).map_err(|e| at(p, e))?;
        let len = io::copy(&mut f, &mut out)? as usize;
        let pad = (INITRD_ALIGN - len % INITRD_ALIGN) % INITRD_ALIGN;
        out.write_all(&[0u8; INITRD_ALIGN][..pad])?;
    }
    Ok(out)
}

fn at(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// What the marker says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The fast path the reboot takes.
    pub method: Method,
    /// When it was asked for (CLOCK_BOOTTIME ns), if the marker says.
    pub request_ns: Option<u64>,
}

/// Marks the coming reboot as `method`, asked for at `request_ns` (CLOCK_BOOTTIME).
pub fn mark(method: Method, request_ns: u64) -> io::Result<()> {
    let path = Path::new(MARKER);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = format!("{} {request_ns}\n", method.word());
    sys::write_atomic_mode(path, text.as_bytes(), 0o644)
}

/// Takes the mark back (none: nothing to do).
pub fn clear_mark() -> io::Result<()> {
    match std::fs::remove_file(MARKER) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// What the coming reboot was marked with: only a root-owned regular file, reached without
/// a symlink, counts.
pub fn marked() -> Option<Mark> {
    marked_at(Path::new(MARKER))
}

/// The mark, when it still holds: a kexec mark only while the kernel has the image it was
/// made for loaded (one whose load is gone is from an attempt that did not reboot).
pub fn mark_in_force() -> Option<Mark> {
    marked().filter(|m| m.method != Method::Kexec || loaded())
}

/// Whether the coming reboot is marked for kexec and the kernel has its image loaded: the
/// runner's runlevel 6 and systemd-shutdown's hook jump only then.
pub fn kexec_in_force() -> bool {
    mark_in_force().is_some_and(|m| m.method == Method::Kexec)
}

/// [`marked`] of the marker at `path`.
pub fn marked_at(path: &Path) -> Option<Mark> {
    let f = sys::open_regular(path).ok()?;
    let st = sys::fstat(&f).ok()?;
    if !st.only_root_writes() {
        return None;
    }
    let text = sys::read_capped(f, 64).ok()?;
    let mut words = std::str::from_utf8(&text).ok()?.split_whitespace();
    let method = match words.next()? {
        "kexec" => Method::Kexec,
        "soft" => Method::Soft,
        _ => return None,
    };
    Some(Mark {
        method,
        request_ns: words.next().and_then(|w| w.parse().ok()),
    })
}

/// Syncs and reboots into the loaded image; returns only on failure, with the error
/// (nothing loaded: EINVAL).
pub fn exec() -> io::Error {
    sys::sync();
    sys::reboot(libc::LINUX_REBOOT_CMD_KEXEC)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn joined_images_are_padded_as_grub_pads() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        let b = d.path().join("b");
        std::fs::write(&a, b"12345").unwrap();
        std::fs::write(&b, b"xyz").unwrap();
        let mut f = joined(&[a, b]).unwrap();
        let mut got = Vec::new();
        use std::io::Seek;
        f.seek(io::SeekFrom::Start(0)).unwrap();
        f.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"12345\0\0\0xyz\0");
    }

    #[test]
    fn a_marker_counts_only_when_root_writes_it_alone() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fast-reboot");
        std::fs::write(&p, "kexec 123456789\n").unwrap();
        let is_root = sys::euid() == 0;
        let want = Mark {
            method: Method::Kexec,
            request_ns: Some(123456789),
        };
        assert_eq!(marked_at(&p), is_root.then_some(want));
        std::fs::write(&p, "soft\n").unwrap();
        assert_eq!(marked_at(&p).map(|m| m.request_ns), is_root.then_some(None));
        std::fs::write(&p, "warp\n").unwrap();
        assert_eq!(marked_at(&p), None);
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        std::fs::write(&p, "soft\n").unwrap();
        assert_eq!(marked_at(&link), None, "a symlink is never followed");
        assert_eq!(marked_at(&d.path().join("none")), None);
    }
}
