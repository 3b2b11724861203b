//! The raw system calls only readahead makes (mmap and mincore, readahead, posix_fadvise, FIEMAP,
//! sysinfo, umount2, and relocation's fallocate, fdatasync, EXT4_IOC_MOVE_EXT, the extended
//! attributes, the inode flags, linkat of an unnamed file and renameat2's exchange, both in a
//! directory held open); every
//! `unsafe` block of this crate lives here. Those other crates make
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
    Mapping::new(file, size)?.resident_pages()
}

/// A shared read-only mapping of the first `len` bytes of a file or block device, kept to
/// ask which of its pages are in the page cache ([`Mapping::resident`]). Mapping reads
/// nothing; only the address space is taken.
#[derive(Debug)]
pub struct Mapping {
    addr: usize,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of `file` from its start.
    pub fn new(file: &File, len: u64) -> io::Result<Mapping> {
        let len = usize::try_from(len.max(1))
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too large to map"))?;
        // SAFETY: a fresh shared read-only mapping chosen by the kernel; only mincore looks
        // at it, and Drop unmaps it.
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
        Ok(Mapping {
            addr: addr as usize,
            len,
        })
    }

    /// One bool per page of the whole mapping, true when the page is in the page cache.
    pub fn resident_pages(&self) -> io::Result<Vec<bool>> {
        let pages = self.len.div_ceil(::sys::page_size() as usize);
        let mut vec = vec![0u8; pages];
        // SAFETY: `addr` is a page-aligned mapping of `len` bytes and `vec` holds one byte
        // per page of it.
        let rc =
            unsafe { libc::mincore(self.addr as *mut libc::c_void, self.len, vec.as_mut_ptr()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(vec.into_iter().map(|b| b & 1 != 0).collect())
    }

    /// Whether the page holding byte `offset` is in the page cache (`None`: past the
    /// mapping, or mincore failed).
    pub fn resident(&self, offset: u64) -> Option<bool> {
        let page = ::sys::page_size();
        let at = usize::try_from(offset / page * page).ok()?;
        if at >= self.len {
            return None;
        }
        let mut v = 0u8;
        // SAFETY: `addr + at` is a page-aligned address inside the mapping, one page long,
        // and `v` holds the one byte mincore writes for it.
        let rc = unsafe { libc::mincore((self.addr + at) as *mut libc::c_void, 1, &mut v) };
        (rc == 0).then_some(v & 1 != 0)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping `new` made.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
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

/// posix_fadvise(POSIX_FADV_WILLNEED): starts reading `len` bytes at `offset` into the page
/// cache and returns. Unlike readahead(2), which some kernels refuse on anything but a
/// regular file, it reads a block device's own page cache too.
pub fn fadvise_willneed(file: &File, offset: u64, len: u64) -> io::Result<()> {
    fadvise(file, offset, len, libc::POSIX_FADV_WILLNEED)
}

/// posix_fadvise(POSIX_FADV_DONTNEED): drops the clean cached pages of a range.
pub fn fadvise_dontneed(file: &File, offset: u64, len: u64) -> io::Result<()> {
    fadvise(file, offset, len, libc::POSIX_FADV_DONTNEED)
}

fn fadvise(file: &File, offset: u64, len: u64, advice: libc::c_int) -> io::Result<()> {
    // SAFETY: no pointers; the fd is open.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), offset as i64, len as i64, advice) };
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

/// One extent of a file, from FIEMAP: `length` bytes at file offset `logical` lie at byte
/// `physical` of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// File offset in bytes.
    pub logical: u64,
    /// Device offset in bytes.
    pub physical: u64,
    /// Length in bytes.
    pub length: u64,
    /// `FIEMAP_EXTENT_*` flags (0x800: unwritten, 0x1: last).
    pub flags: u32,
}

/// FS_IOC_FIEMAP over `[start, start + len)` of `file`, every extent (asked 64 at a time),
/// with FIEMAP_FLAG_SYNC so data not yet allocated (delayed allocation) is written first and
/// the map is where the data really is. Err: the filesystem has no map (tmpfs, NFS).
pub fn fiemap(file: &File, start: u64, len: u64) -> io::Result<Vec<Extent>> {
    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct RawExtent {
        logical: u64,
        physical: u64,
        length: u64,
        reserved64: [u64; 2],
        flags: u32,
        reserved: [u32; 3],
    }
    const N: usize = 64;
    #[repr(C)]
    struct Fiemap {
        start: u64,
        length: u64,
        flags: u32,
        mapped_extents: u32,
        extent_count: u32,
        reserved: u32,
        extents: [RawExtent; N],
    }
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    const FIEMAP_FLAG_SYNC: u32 = 0x1;
    const FIEMAP_EXTENT_LAST: u32 = 0x1;
    let end = start.saturating_add(len);
    let mut out = Vec::new();
    let mut pos = start;
    while pos < end {
        let mut m = Fiemap {
            start: pos,
            length: end - pos,
            flags: FIEMAP_FLAG_SYNC,
            mapped_extents: 0,
            extent_count: N as u32,
            reserved: 0,
            extents: [RawExtent::default(); N],
        };
        // SAFETY: `m` is a fiemap header followed by room for exactly `extent_count` (N)
        // extents, as the ioctl requires; the kernel writes only within it.
        let rc =
            unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP as _, &mut m as *mut Fiemap) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let got = (m.mapped_extents as usize).min(N);
        if got == 0 {
            break;
        }
        let mut last = false;
        for e in &m.extents[..got] {
            out.push(Extent {
                logical: e.logical,
                physical: e.physical,
                length: e.length,
                flags: e.flags,
            });
            last |= e.flags & FIEMAP_EXTENT_LAST != 0;
        }
        let e = m.extents[got - 1];
        let next = e.logical.saturating_add(e.length);
        if last || next <= pos {
            break;
        }
        pos = next;
    }
    Ok(out)
}

/// fallocate(2) mode 0: allocates `len` bytes of `file` from offset 0 (unwritten extents,
/// read as zeros) and sets its size.
pub fn fallocate(file: &File, len: u64) -> io::Result<()> {
    // SAFETY: no pointers; the fd is open.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len as libc::off_t) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// fallocate(2) with FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE: frees the blocks of
/// `[offset, offset + len)` of `file` (a hole, read as zeros); the size stays.
pub fn punch_hole(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // SAFETY: no pointers; the fd is open.
    let rc = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            mode,
            offset as libc::off_t,
            len as libc::off_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// fdatasync(2): the file's data (and what is needed to read it back) is on the device.
pub fn fdatasync(file: &File) -> io::Result<()> {
    // SAFETY: no pointers; the fd is open.
    if unsafe { libc::fdatasync(file.as_raw_fd()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// EXT4_IOC_MOVE_EXT: swaps `len` blocks of `orig` at block `orig_start` with the blocks of
/// `donor` at `donor_start` (same ext4 filesystem; `orig` open read-write, `donor`
/// writable); the data of `orig` is unchanged, only where it lies. Returns the blocks
/// moved. The struct is the kernel's `struct move_extent` (fs/ext4/ext4.h: reserved,
/// donor_fd, orig_start, donor_start, len, moved_len; all in blocks), the ioctl
/// `_IOWR('f', 15, struct move_extent)`.
pub fn move_extents(
    orig: &File,
    donor: &File,
    orig_start: u64,
    donor_start: u64,
    len: u64,
) -> io::Result<u64> {
    #[repr(C)]
    struct MoveExtent {
        reserved: u32,
        donor_fd: u32,
        orig_start: u64,
        donor_start: u64,
        len: u64,
        moved_len: u64,
    }
    const EXT4_IOC_MOVE_EXT: libc::c_ulong = 0xC028_660F;
    let mut me = MoveExtent {
        reserved: 0,
        donor_fd: donor.as_raw_fd() as u32,
        orig_start,
        donor_start,
        len,
        moved_len: 0,
    };
    // SAFETY: `me` is a `struct move_extent` (40 bytes, the size encoded in the request
    // number) that the kernel reads and writes `moved_len` of; both fds are open.
    let rc = unsafe {
        libc::ioctl(
            orig.as_raw_fd(),
            EXT4_IOC_MOVE_EXT as _,
            &mut me as *mut MoveExtent,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(me.moved_len)
}

/// Every extended attribute of `f` (flistxattr, fgetxattr), `(name, value)` sorted by name:
/// security.capability, ACLs (system.posix_acl_access), SELinux labels, user attributes. A
/// filesystem without them has none.
pub fn xattrs(f: &File) -> io::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    // Sizes are asked first; a list or value that grows in between fails with ERANGE (the
    // caller skips the file).
    // SAFETY: a NULL buffer of size 0 asks for the size only.
    let n = unsafe { libc::flistxattr(f.as_raw_fd(), std::ptr::null_mut(), 0) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOTSUP) => Ok(Vec::new()),
            _ => Err(e),
        };
    }
    let mut list = vec![0u8; n as usize];
    // SAFETY: `list` has room for `list.len()` bytes.
    let n = unsafe { libc::flistxattr(f.as_raw_fd(), list.as_mut_ptr().cast(), list.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    list.truncate(n as usize);
    let mut out = Vec::new();
    for name in list.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let cname = CString::new(name)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "attribute name"))?;
        // SAFETY: size query as above; `cname` is NUL-terminated.
        let n = unsafe { libc::fgetxattr(f.as_raw_fd(), cname.as_ptr(), std::ptr::null_mut(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut value = vec![0u8; n as usize];
        // SAFETY: `value` has room for `value.len()` bytes.
        let n = unsafe {
            libc::fgetxattr(
                f.as_raw_fd(),
                cname.as_ptr(),
                value.as_mut_ptr().cast(),
                value.len(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        value.truncate(n as usize);
        out.push((name.to_vec(), value));
    }
    out.sort();
    Ok(out)
}

/// fsetxattr(2): sets the attribute `name` of `f` to `value` (created or replaced).
pub fn set_xattr(f: &File, name: &[u8], value: &[u8]) -> io::Result<()> {
    let cname = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "attribute name"))?;
    // SAFETY: `value` is initialised for its length; `cname` is NUL-terminated.
    let rc = unsafe {
        libc::fsetxattr(
            f.as_raw_fd(),
            cname.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// fremovexattr(2) of the attribute `name` of `f`.
pub fn remove_xattr(f: &File, name: &[u8]) -> io::Result<()> {
    let cname = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "attribute name"))?;
    // SAFETY: `cname` is NUL-terminated.
    if unsafe { libc::fremovexattr(f.as_raw_fd(), cname.as_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// FS_IOC_GETFLAGS (`_IOR('f', 1, long)`, which the kernel reads and writes as an int): the
/// inode's flags as lsattr(1) shows them (`FS_SYNC_FL`, `FS_NOATIME_FL`...); 0 where the
/// filesystem has none (ENOTTY, EINVAL).
pub fn inode_flags(f: &File) -> io::Result<u32> {
    const FS_IOC_GETFLAGS: libc::c_ulong = 0x8008_6601;
    let mut flags: libc::c_int = 0;
    // SAFETY: the kernel writes one int at the pointer.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_GETFLAGS as _, &mut flags) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOTTY) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) => Ok(0),
            _ => Err(e),
        };
    }
    Ok(flags as u32)
}

/// FS_IOC_SETFLAGS (`_IOW('f', 2, long)`, read by the kernel as an int): sets the inode's
/// flags (chattr(1)).
pub fn set_inode_flags(f: &File, flags: u32) -> io::Result<()> {
    const FS_IOC_SETFLAGS: libc::c_ulong = 0x4008_6602;
    let v = flags as libc::c_int;
    // SAFETY: the kernel reads one int at the pointer.
    if unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_SETFLAGS as _, &v) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Gives `file`, opened with O_TMPFILE (and without O_EXCL), the name `name` in the
/// directory `dir`: linkat(2) of its /proc/self/fd link, followed, into that directory's
/// descriptor. Fails when `name` exists.
pub fn link_unnamed_at(file: &File, dir: &::sys::Dir, name: &std::ffi::OsStr) -> io::Result<()> {
    let from = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "fd path"))?;
    let to = CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name holds a NUL byte"))?;
    // SAFETY: both strings are NUL-terminated and live across the call.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            dir.file().as_raw_fd(),
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Swaps what the names `a` and `b` of the directory `dir` point to, atomically:
/// renameat2(2) with RENAME_EXCHANGE, both relative to the directory's descriptor.
pub fn exchange_at(dir: &::sys::Dir, a: &std::ffi::OsStr, b: &std::ffi::OsStr) -> io::Result<()> {
    let c = |n: &std::ffi::OsStr| {
        CString::new(n.as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name holds a NUL byte"))
    };
    let (a, b) = (c(a)?, c(b)?);
    let d = dir.file().as_raw_fd();
    // SAFETY: both names are NUL-terminated and live across the call.
    let rc = unsafe { libc::renameat2(d, a.as_ptr(), d, b.as_ptr(), libc::RENAME_EXCHANGE) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
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
