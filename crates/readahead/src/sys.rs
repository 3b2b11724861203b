//! The raw system calls only readahead makes (mincore, readahead, posix_fadvise, FIEMAP,
//! sysinfo, umount2); every `unsafe` block of this crate lives here. Those other crates make
//! too (fork, pipe, waitpid, ioprio_set, statfs, uname...) are the `sys` crate's.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))
}

/// mincore(2) over the first `size` bytes of `file`: one bool per page, true when the page
/// is in the page cache. Mapping a file reads nothing, so this does not change the answer.
pub fn mincore(file: &File, size: u64) -> io::Result<Vec<bool>> {
    if size == 0 {
        return Ok(Vec::new());
    }
    let page = ::sys::page_size();
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

/// umount2(2) with MNT_DETACH (a lazy unmount); failures are ignored.
pub fn umount_detach(at: &Path) {
    if let Ok(c) = cstring(at) {
        // SAFETY: a valid NUL-terminated path.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
}
