//! The thin layer over the raw system calls readahead needs (fanotify, mincore, readahead,
//! FIEMAP, ioprio_set, posix_fadvise, statfs, fork); every `unsafe` block of this crate
//! lives here.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// The page size of this kernel.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// mincore(2) over the first `size` bytes of `file`: one bool per page, true when the page
/// is in the page cache. Mapping a file reads nothing, so this does not change the answer.
pub fn mincore(file: &File, size: u64) -> io::Result<Vec<bool>> {
    if size == 0 {
        return Ok(Vec::new());
    }
    let page = page_size();
    let len = usize::try_from(size)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large to map"))?;
    let pages = size.div_ceil(page) as usize;
    // SAFETY: a fresh shared read-only mapping chosen by the kernel; it is only read by
    // mincore below and unmapped before returning.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let mut vec = vec![0u8; pages];
    // SAFETY: `addr` is a page-aligned mapping of `len` bytes and `vec` holds one byte per
    // page of it.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    let err = (rc < 0).then(io::Error::last_os_error);
    // SAFETY: unmapping exactly the mapping made above.
    unsafe { libc::munmap(addr, len) };
    match err {
        Some(e) => Err(e),
        None => Ok(vec.into_iter().map(|b| b & 1 != 0).collect()),
    }
}

/// readahead(2): starts reading `len` bytes at `offset` of `file` into the page cache.
pub fn readahead(file: &File, offset: u64, len: u64) -> io::Result<()> {
    // SAFETY: no pointers; the fd is open.
    let rc = unsafe { libc::readahead(file.as_raw_fd(), offset as i64, len as usize) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// posix_fadvise(POSIX_FADV_DONTNEED): drops the clean cached pages of a range.
pub fn fadvise_dontneed(file: &File, offset: u64, len: u64) -> io::Result<()> {
    // SAFETY: no pointers; the fd is open.
    let rc = unsafe {
        libc::posix_fadvise(
            file.as_raw_fd(),
            offset as i64,
            len as i64,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

/// FS_IOC_FIEMAP for the first extent at or after `offset`: its physical byte address on the
/// device, or `None` when the filesystem has no map (tmpfs, NFS), the range is a hole, or
/// the data is inline.
pub fn fiemap_physical(file: &File, offset: u64) -> Option<u64> {
    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct Extent {
        logical: u64,
        physical: u64,
        length: u64,
        reserved64: [u64; 2],
        flags: u32,
        reserved: [u32; 3],
    }
    #[repr(C)]
    #[derive(Default)]
    struct Fiemap {
        start: u64,
        length: u64,
        flags: u32,
        mapped_extents: u32,
        extent_count: u32,
        reserved: u32,
        extents: [Extent; 1],
    }
    // _IOWR('f', 11, struct fiemap): struct fiemap without extents is 32 bytes.
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    const FIEMAP_EXTENT_UNKNOWN: u32 = 0x2;
    const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x200;
    let mut m = Fiemap {
        start: offset,
        length: u64::MAX - offset,
        extent_count: 1,
        ..Default::default()
    };
    // SAFETY: `m` is a fiemap header followed by room for exactly `extent_count` (1)
    // extents, as the ioctl requires; the kernel writes only within it.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP as _, &mut m as *mut Fiemap) };
    let e = m.extents[0];
    if rc < 0
        || m.mapped_extents == 0
        || e.flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DATA_INLINE) != 0
    {
        return None;
    }
    // The extent may begin before `offset`: point at the byte itself.
    Some(e.physical + offset.saturating_sub(e.logical))
}

/// Puts the calling thread in the idle I/O class, so its reads are served only when no one
/// else waits for the disk (on schedulers that honour classes: BFQ, CFQ).
pub fn ioprio_idle() -> io::Result<()> {
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    const IOPRIO_CLASS_IDLE: libc::c_long = 3;
    const IOPRIO_CLASS_SHIFT: libc::c_long = 13;
    // SAFETY: plain syscall on the calling thread (who = 0); no pointers.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0 as libc::c_long,
            IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// ioprio_get(2) of the calling thread, raw (class << 13 | data); for tests.
pub fn ioprio_get() -> io::Result<i64> {
    // SAFETY: plain syscall on the calling thread; no pointers.
    let rc = unsafe { libc::syscall(libc::SYS_ioprio_get, 1 as libc::c_long, 0 as libc::c_long) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}

/// `f_fsid` of the filesystem holding `path`, both 32-bit halves as one number.
pub fn statfs_fsid(path: &Path) -> io::Result<u64> {
    let c = cstring(path)?;
    // SAFETY: an all-zero statfs is a valid out-parameter.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `s` writable.
    check(unsafe { libc::statfs(c.as_ptr(), &mut s) })?;
    // SAFETY: fsid_t is two c_ints (its field is private in the libc crate); reading it as
    // such is what the C definition says it is.
    let v: [i32; 2] = unsafe { std::mem::transmute_copy(&s.f_fsid) };
    Ok(((v[1] as u32 as u64) << 32) | v[0] as u32 as u64)
}

/// A pipe with both ends close-on-exec: (read end, write end).
pub fn pipe() -> io::Result<(File, File)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` holds room for the two descriptors.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both fds are fresh and owned by nobody else.
    Ok(unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) })
}

/// waitpid(2) for `pid`; returns the raw status.
pub fn waitpid(pid: i32) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is writable.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc >= 0 {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The machine's memory in bytes (sysinfo(2)); 0 when unknown.
pub fn total_ram_bytes() -> u64 {
    // SAFETY: zeroed sysinfo is a valid out-parameter.
    let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a sysinfo.
    if unsafe { libc::sysinfo(&mut si) } != 0 {
        return 0;
    }
    (si.totalram as u64).saturating_mul(u64::from(si.mem_unit.max(1)))
}

/// Sends `signal` to `pid` (a child of ours); failures (it is gone) are ignored.
pub fn kill(pid: i32, signal: libc::c_int) {
    // SAFETY: a plain signal; no memory is passed.
    unsafe { libc::kill(pid, signal) };
}

/// Whether `pid` has ended (reaping it when it has); for a non-blocking check.
pub fn try_wait(pid: i32) -> io::Result<bool> {
    let mut status = 0;
    // SAFETY: `status` is writable.
    let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc == pid)
}

/// Sets this process's name (`comm`, at most 15 bytes are kept).
pub fn set_process_name(name: &str) {
    let Ok(c) = std::ffi::CString::new(name) else {
        return;
    };
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of which the kernel keeps 15 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr() as libc::c_ulong, 0, 0, 0) };
}

/// The kernel release (`uname -r`).
pub fn kernel_release() -> String {
    // SAFETY: an all-zero utsname is a valid out-parameter.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is writable.
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let bytes: Vec<u8> = u
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Whether this process runs as root (the pack must be owned by the user replaying it).
pub fn euid() -> u32 {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() }
}

/// Writes `bytes` to `path` atomically: a temporary file beside it, fsync, rename; mode 0644.
/// The directory is created when missing.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)
}
