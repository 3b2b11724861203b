//! Files as root must touch them: every path resolved once, without following a symlink
//! anywhere in it, and every later step done relative to the descriptor that resolution
//! gave, so that no one can swap a directory of the path for a symlink between two steps.
//!
//! - [`open_nofollow`], [`open_regular`], [`open_dir`]: open a path without following any
//!   symlink in it (openat2(2) with `RESOLVE_NO_SYMLINKS` since Linux 5.6; before it, a
//!   walk of the path one component at a time with `O_NOFOLLOW`).
//! - [`open_beneath`]: the same, relative to a directory, never leaving it (a `--root`).
//! - [`Dir`]: a directory held open; its `*_at` steps (stat, unlink, rmdir, mkdir, rename)
//!   name entries of that very directory.
//! - [`write_atomic`]: the one hardened atomic write of a whole file.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name holds a NUL byte"))
}

/// Set once openat2(2) said ENOSYS (a kernel before 5.6, or a filter that hides it): the
/// walk is used from then on.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// The open flags every open here adds: never a controlling terminal, never inherited by a
/// child, never the final component's symlink.
const ALWAYS: libc::c_int = libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NOFOLLOW;

fn openat2(dir: RawFd, path: &CString, flags: libc::c_int, resolve: u64) -> io::Result<File> {
    // SAFETY: open_how is plain data; all-zero is valid and the fields are set below.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC | libc::O_NOCTTY) as u64;
    how.resolve = resolve;
    // SAFETY: `path` is NUL-terminated and `how` a valid open_how whose size is passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor the kernel just gave us.
    Ok(unsafe { File::from_raw_fd(rc as RawFd) })
}

fn openat(dir: RawFd, name: &CString, flags: libc::c_int) -> io::Result<File> {
    // SAFETY: `name` is NUL-terminated; the mode is only read with O_CREAT (0 otherwise).
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | ALWAYS, 0o600 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor the kernel just gave us.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// How a walk starts and what it may not do.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// From the process's root (absolute) or working directory (relative).
    Anywhere,
    /// From a directory, never above it (`..` and absolute paths refused).
    Beneath,
    /// From a directory taken as the root, as chroot(2) would resolve the path: symlinks
    /// (absolute ones from that root) followed, never out of it. The walk, without
    /// openat2, follows none.
    InRoot,
}

/// Resolves `path` one component at a time from `start` (a directory descriptor, or
/// AT_FDCWD), each directory opened O_PATH|O_DIRECTORY|O_NOFOLLOW (a symlink there is
/// ENOTDIR... reported as ELOOP, as openat2 does), the last one opened with `flags`.
fn walk(start: RawFd, path: &Path, flags: libc::c_int, how: Walk) -> io::Result<File> {
    let eloop = || io::Error::from_raw_os_error(libc::ELOOP);
    let mut held: Option<File> = None;
    let mut comps: Vec<Component> = path.components().collect();
    if comps.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    if comps[0] == Component::RootDir {
        if how == Walk::Beneath {
            return Err(io::Error::from_raw_os_error(libc::EXDEV));
        }
        held = Some(openat(
            libc::AT_FDCWD,
            &c_name(OsStr::new("/"))?,
            libc::O_PATH | libc::O_DIRECTORY,
        )?);
        comps.remove(0);
    }
    // The last component is opened with the caller's flags: `/` alone means the root.
    let last = match comps.pop() {
        Some(c) => c,
        None => {
            return openat(
                held.as_ref().map_or(start, |f| f.as_raw_fd()),
                &c_name(OsStr::new("."))?,
                flags,
            )
        }
    };
    for c in comps {
        let name = match c {
            Component::CurDir => continue,
            Component::ParentDir if how == Walk::Beneath => {
                return Err(io::Error::from_raw_os_error(libc::EXDEV))
            }
            Component::ParentDir => OsStr::new(".."),
            Component::Normal(n) => n,
            Component::RootDir | Component::Prefix(_) => continue,
        };
        let at = held.as_ref().map_or(start, |f| f.as_raw_fd());
        let next = openat(at, &c_name(name)?, libc::O_PATH | libc::O_DIRECTORY).map_err(|e| {
            if e.raw_os_error() == Some(libc::ENOTDIR) {
                eloop()
            } else {
                e
            }
        })?;
        held = Some(next);
    }
    let name = match last {
        Component::CurDir => OsStr::new("."),
        Component::ParentDir if how == Walk::Beneath => {
            return Err(io::Error::from_raw_os_error(libc::EXDEV))
        }
        Component::ParentDir => OsStr::new(".."),
        Component::Normal(n) => n,
        Component::RootDir | Component::Prefix(_) => OsStr::new("."),
    };
    let at = held.as_ref().map_or(start, |f| f.as_raw_fd());
    openat(at, &c_name(name)?, flags)
}

fn resolve(start: RawFd, path: &Path, flags: libc::c_int, how: Walk) -> io::Result<File> {
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
        let resolve = match how {
            Walk::Anywhere => libc::RESOLVE_NO_SYMLINKS,
            Walk::Beneath => libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_BENEATH,
            Walk::InRoot => libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS,
        };
        // The last component is never followed, but a directory in a root may be a link
        // of that system's own (`/bin -> usr/bin`): resolved in the root like the rest.
        let last = if how == Walk::InRoot && flags & libc::O_DIRECTORY != 0 {
            0
        } else {
            libc::O_NOFOLLOW
        };
        match openat2(start, &c, flags | last, resolve) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                NO_OPENAT2.store(true, Ordering::Relaxed)
            }
            // Ours: RESOLVE_BENEATH refuses `..` and absolute paths with EXDEV.
            other => return other,
        }
    }
    if how == Walk::InRoot {
        // In the root's terms: `/etc` is the root's etc.
        let rel = path.strip_prefix("/").unwrap_or(path);
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        return walk(start, rel, flags, Walk::Beneath);
    }
    walk(start, path, flags, how)
}

/// Opens `path` with `flags` (O_RDONLY, O_RDWR, O_PATH, O_DIRECTORY, O_NONBLOCK...) without
/// following a symlink in any of its components, the last included: a symlink anywhere is
/// ELOOP. O_CLOEXEC and O_NOCTTY are always added. A learned path (from /proc/self/fd) has
/// none, so this opens exactly the file that was seen, or fails.
pub fn open_nofollow(path: &Path, flags: libc::c_int) -> io::Result<File> {
    resolve(libc::AT_FDCWD, path, flags, Walk::Anywhere)
}

/// [`open_nofollow`] by the component walk alone (what kernels before 5.6 get), for tests.
pub fn open_nofollow_by_walk(path: &Path, flags: libc::c_int) -> io::Result<File> {
    walk(libc::AT_FDCWD, path, flags, Walk::Anywhere)
}

/// Opens the regular file at `path` read-only without following any symlink, and checks on
/// the descriptor that it is one: a FIFO or a device at that path is opened non-blocking
/// and closed again unread (ErrorKind::InvalidInput, "not a regular file"). A user who can
/// write a directory of the path can at most put there a file they could open themselves
/// (a hard link needs the target's owner or read-write access, fs.protected_hardlinks):
/// never a symlink to /dev.
pub fn open_regular(path: &Path) -> io::Result<File> {
    regular(open_nofollow(path, libc::O_RDONLY | libc::O_NONBLOCK)?)
}

fn regular(f: File) -> io::Result<File> {
    if f.metadata()?.file_type().is_file() {
        Ok(f)
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ))
    }
}

/// Opens the directory at `path` without following any symlink (O_RDONLY|O_DIRECTORY: it
/// can be listed and fsynced, and is a base for the `*at` calls of [`Dir`]).
pub fn open_dir(path: &Path) -> io::Result<Dir> {
    open_nofollow(path, libc::O_RDONLY | libc::O_DIRECTORY).map(Dir)
}

/// Opens `rel` (relative; `..` and absolute paths refused with EXDEV) beneath the directory
/// `base` with `flags`, following no symlink.
pub fn open_beneath(base: &Dir, rel: &Path, flags: libc::c_int) -> io::Result<File> {
    resolve(base.0.as_raw_fd(), rel, flags, Walk::Beneath)
}

/// Opens `rel` in the system whose root directory is `root`, as that system would resolve
/// it (chroot(2) semantics: `/bin -> usr/bin` and absolute links are followed from `root`),
/// never reaching a file outside `root`: what a `--root DIR` needs. The final component is
/// not followed (O_NOFOLLOW) unless a directory is asked for (O_DIRECTORY). Without openat2
/// (Linux before 5.6) no symlink is followed.
pub fn open_in_root(root: &Dir, rel: &Path, flags: libc::c_int) -> io::Result<File> {
    resolve(root.0.as_raw_fd(), rel, flags, Walk::InRoot)
}

/// [`open_in_root`] of the directory `rel` (links followed in the root, the last one too).
pub fn open_dir_in_root(root: &Dir, rel: &Path) -> io::Result<Dir> {
    open_in_root(root, rel, libc::O_RDONLY | libc::O_DIRECTORY).map(Dir)
}

/// What fstatat(2) says of a directory entry (never following a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryStat {
    /// `st_mode`: type and permission bits.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Device of the file system.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Hard links.
    pub nlink: u64,
    /// Size in bytes.
    pub size: u64,
}

impl EntryStat {
    fn of(st: &libc::stat) -> EntryStat {
        EntryStat {
            mode: st.st_mode,
            uid: st.st_uid,
            gid: st.st_gid,
            dev: st.st_dev,
            ino: st.st_ino,
            nlink: st.st_nlink,
            size: st.st_size as u64,
        }
    }

    /// A regular file.
    pub fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }

    /// A directory.
    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }

    /// A symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFLNK
    }

    /// Whether only root can change what the directory holds: owned by uid 0, and no write
    /// bit for group or others.
    pub fn only_root_writes(&self) -> bool {
        self.uid == 0 && self.mode & 0o022 == 0
    }
}

/// fstat(2) of an open file, as an [`EntryStat`].
pub fn fstat(f: &impl AsRawFd) -> io::Result<EntryStat> {
    // SAFETY: an all-zero stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is writable; the descriptor is open.
    if unsafe { libc::fstat(f.as_raw_fd(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(EntryStat::of(&st))
}

/// A directory held open: every step names an entry of this very directory, whatever
/// happens to the path it was opened by.
#[derive(Debug)]
pub struct Dir(File);

impl Dir {
    /// Takes an exclusive `flock` on this directory, held until the `Dir` is dropped (or
    /// the process dies): writers that read a file in it, change it and write it back take
    /// turns instead of writing over each other's changes. Blocks while another holds it.
    pub fn lock_exclusive(&self) -> io::Result<()> {
        use std::os::unix::io::AsRawFd;
        loop {
            // SAFETY: flock on a descriptor this Dir owns; no memory is passed.
            if unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Opens the directory at `path` as the caller gives it, symlinks followed (a `--root`
    /// the admin named, say); the steps after it are relative to what it opened.
    pub fn open_following(path: &Path) -> io::Result<Dir> {
        let f = File::open(path)?;
        if !f.metadata()?.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        Ok(Dir(f))
    }

    /// The directory as a file (to fsync, list or pass to a `*at` call).
    pub fn file(&self) -> &File {
        &self.0
    }

    /// Its own fstat.
    pub fn stat(&self) -> io::Result<EntryStat> {
        fstat(&self.0)
    }

    /// fstatat(2) of `name` in it, never following a symlink; `Ok(None)` when missing.
    pub fn stat_at(&self, name: &OsStr) -> io::Result<Option<EntryStat>> {
        let c = c_name(name)?;
        // SAFETY: an all-zero stat is a valid out-parameter.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is NUL-terminated and `st` writable.
        let rc = unsafe {
            libc::fstatat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::NotFound {
                Ok(None)
            } else {
                Err(e)
            };
        }
        Ok(Some(EntryStat::of(&st)))
    }

    /// Opens `name` in it with `flags`, not following a symlink there.
    pub fn open_at(&self, name: &OsStr, flags: libc::c_int) -> io::Result<File> {
        openat(self.0.as_raw_fd(), &c_name(name)?, flags)
    }

    /// Opens the subdirectory `name`, not following a symlink there.
    pub fn dir_at(&self, name: &OsStr) -> io::Result<Dir> {
        self.open_at(name, libc::O_RDONLY | libc::O_DIRECTORY)
            .map(Dir)
    }

    /// Removes the entry `name` (a file or a symlink itself, never what a link points to).
    pub fn unlink_at(&self, name: &OsStr) -> io::Result<()> {
        self.unlinkat(name, 0)
    }

    /// Removes the empty directory `name`.
    pub fn rmdir_at(&self, name: &OsStr) -> io::Result<()> {
        self.unlinkat(name, libc::AT_REMOVEDIR)
    }

    fn unlinkat(&self, name: &OsStr, flags: libc::c_int) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: `c` is NUL-terminated.
        if unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), flags) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Creates the directory `name` with `mode` (less the umask).
    pub fn mkdir_at(&self, name: &OsStr, mode: u32) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: `c` is NUL-terminated.
        if unsafe { libc::mkdirat(self.0.as_raw_fd(), c.as_ptr(), mode as libc::mode_t) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Renames `from` to `to`, both in this directory (replacing `to`, never following it).
    pub fn rename_at(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (f, t) = (c_name(from)?, c_name(to)?);
        let d = self.0.as_raw_fd();
        // SAFETY: both names are NUL-terminated.
        if unsafe { libc::renameat(d, f.as_ptr(), d, t.as_ptr()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// fsync(2) of the directory: the names created, renamed and removed in it are on disk.
    /// A file system that cannot sync a directory (EINVAL) is not an error.
    pub fn sync(&self) -> io::Result<()> {
        match self.0.sync_all() {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
            other => other,
        }
    }

    /// The names it holds (`.` and `..` left out).
    pub fn names(&self) -> io::Result<Vec<std::ffi::OsString>> {
        // Listed through a descriptor of its own: reading moves the offset.
        let again = self.open_at(OsStr::new("."), libc::O_RDONLY | libc::O_DIRECTORY)?;
        let path = PathBuf::from(format!("/proc/self/fd/{}", again.as_raw_fd()));
        let mut out = Vec::new();
        for e in std::fs::read_dir(path)? {
            out.push(e?.file_name());
        }
        Ok(out)
    }
}

/// Writes `bytes` to `path` atomically and durably, mode 0644: see [`write_atomic_mode`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_mode(path, bytes, 0o644)
}

/// Temporary names taken by this process (with its pid, unique among writers).
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` whole or not at all, with `mode` (set exactly, whatever the
/// umask): the directory (created when missing) is opened once and every step is relative
/// to it; a temporary file of a name no other writer uses (`.NAME.PID.N.tmp`) is created
/// new (O_EXCL|O_NOFOLLOW: never through a planted symlink, never truncating anyone's
/// file), written and fsynced, renamed over `path` (which replaces a symlink there rather
/// than following it), and the directory fsynced so the rename is on disk. On any error the
/// old file is left as it was and the temporary file removed. A crash leaves at most a
/// dot-file `.NAME.*.tmp` beside it.
pub fn write_atomic_mode(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let dir_path = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir_path)?;
    Dir::open_following(dir_path)?.write_atomic_at(name, bytes, mode)
}

impl Dir {
    /// [`write_atomic_mode`] of the entry `name` of this directory.
    pub fn write_atomic_at(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.write_atomic_at_mode(name, bytes, mode, true)
    }

    /// The same, the mode asked for only where the filesystem takes it: FAT (an EFI system
    /// partition) has no modes of its own and refuses a chmod to any but its mount options'.
    pub fn write_atomic_at_fs_mode(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.write_atomic_at_mode(name, bytes, mode, false)
    }

    fn write_atomic_at_mode(
        &self,
        name: &OsStr,
        bytes: &[u8],
        mode: u32,
        strict: bool,
    ) -> io::Result<()> {
        use std::io::Write;
        let (tmp, mut f) = loop {
            let n = TEMP_SEQ.fetch_add(1, Ordering::Relaxed);
            let mut tmp = std::ffi::OsString::from(".");
            tmp.push(name);
            tmp.push(format!(".{}.{n}.tmp", std::process::id()));
            match self.open_at(
                &tmp,
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NONBLOCK,
            ) {
                Ok(f) => break (tmp, f),
                // Left by an earlier process of this pid (a crash, pids reused): another name.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n % 1000 != 999 => continue,
                Err(e) => return Err(e),
            }
        };
        let written = (|| {
            use std::os::unix::fs::PermissionsExt;
            match f.set_permissions(std::fs::Permissions::from_mode(mode)) {
                Err(e) if !strict && e.raw_os_error() == Some(libc::EPERM) => {}
                other => other?,
            }
            f.write_all(bytes)?;
            f.sync_all()?;
            self.rename_at(&tmp, name)
        })();
        drop(f);
        if let Err(e) = written {
            let _ = self.unlink_at(&tmp);
            return Err(e);
        }
        self.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn both(path: &Path, flags: libc::c_int) -> [io::Result<File>; 2] {
        [
            open_nofollow(path, flags),
            open_nofollow_by_walk(path, flags),
        ]
    }

    #[test]
    fn no_symlink_is_followed_anywhere_in_the_path() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("f"), "x").unwrap();
        symlink(&real, t.path().join("link")).unwrap();
        symlink(real.join("f"), real.join("flink")).unwrap();
        // The temp dir itself may lie under a symlink (/tmp on some systems): resolve it.
        let base = std::fs::canonicalize(t.path()).unwrap();
        for f in both(&base.join("real/f"), libc::O_RDONLY) {
            assert!(f.is_ok());
        }
        for p in ["link/f", "real/flink"] {
            for r in both(&base.join(p), libc::O_RDONLY) {
                assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::ELOOP), "{p}");
            }
        }
        // `.` and `..` resolve as the kernel resolves them.
        for f in both(&base.join("real/../real/./f"), libc::O_RDONLY) {
            assert!(f.is_ok());
        }
        assert!(open_dir(&base.join("real")).is_ok());
        assert!(open_dir(&base.join("link")).is_err());
    }

    #[test]
    fn a_fifo_is_opened_without_blocking_and_refused() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        let fifo = base.join("fifo");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_regular(&fifo).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        std::fs::write(base.join("f"), "x").unwrap();
        assert!(open_regular(&base.join("f")).is_ok());
    }

    #[test]
    fn beneath_a_directory_never_leaves_it() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::fs::write(t.path().join("outside"), "x").unwrap();
        std::fs::write(root.join("etc/inside"), "x").unwrap();
        symlink("/", root.join("etc/up")).unwrap();
        let base = open_dir(&std::fs::canonicalize(&root).unwrap()).unwrap();
        assert!(open_beneath(&base, Path::new("etc/inside"), libc::O_RDONLY).is_ok());
        for p in [
            "../outside",
            "etc/../../outside",
            "/etc/inside",
            "etc/up/etc",
        ] {
            assert!(
                open_beneath(&base, Path::new(p), libc::O_RDONLY).is_err(),
                "{p}"
            );
            assert!(
                walk(
                    base.file().as_raw_fd(),
                    Path::new(p),
                    libc::O_RDONLY,
                    Walk::Beneath
                )
                .is_err(),
                "walk: {p}"
            );
        }
    }

    #[test]
    fn in_a_root_links_resolve_as_its_system_would_and_never_out_of_it() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap().join("root");
        std::fs::create_dir_all(root.join("usr/bin")).unwrap();
        std::fs::create_dir_all(root.join("etc/real")).unwrap();
        std::fs::write(root.join("usr/bin/startpar"), "wrapper").unwrap();
        std::fs::write(root.join("etc/real/f"), "in").unwrap();
        std::fs::write(t.path().join("host-file"), "host").unwrap();
        symlink("usr/bin", root.join("bin")).unwrap();
        symlink("/etc/real", root.join("etc/abs")).unwrap();
        symlink("../../..", root.join("etc/up")).unwrap();
        let r = open_dir(&root).unwrap();
        let read = |p: &str| {
            open_in_root(&r, Path::new(p), libc::O_RDONLY)
                .map(|f| std::io::read_to_string(f).unwrap())
        };
        assert_eq!(read("/bin/startpar").unwrap(), "wrapper");
        assert_eq!(read("/etc/abs/f").unwrap(), "in");
        // `..` and a link upwards stop at the root: the host's file is never reached.
        assert!(read("/../host-file").is_err());
        assert!(read("/etc/up/host-file").is_err());
        // The last component is never followed.
        symlink("/etc/real/f", root.join("etc/last")).unwrap();
        assert_eq!(
            read("/etc/last").unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
    }

    #[test]
    fn directory_steps_name_entries_of_the_directory_held() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        std::fs::create_dir(&a).unwrap();
        let d = open_dir(&std::fs::canonicalize(&a).unwrap()).unwrap();
        // The path now leads elsewhere: the steps still act in the directory held.
        std::fs::rename(&a, t.path().join("moved")).unwrap();
        std::fs::create_dir(&a).unwrap();
        d.mkdir_at(OsStr::new("sub"), 0o755).unwrap();
        assert!(t.path().join("moved/sub").is_dir() && !a.join("sub").exists());
        assert!(d.stat_at(OsStr::new("sub")).unwrap().unwrap().is_dir());
        assert_eq!(d.stat_at(OsStr::new("none")).unwrap(), None);
        symlink("/etc/passwd", t.path().join("moved/l")).unwrap();
        assert!(d.stat_at(OsStr::new("l")).unwrap().unwrap().is_symlink());
        d.unlink_at(OsStr::new("l")).unwrap();
        assert!(std::fs::metadata("/etc/passwd").is_ok());
        d.rmdir_at(OsStr::new("sub")).unwrap();
        assert!(d.names().unwrap().is_empty());
    }

    #[test]
    fn write_atomic_replaces_whole_with_the_mode_asked() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let f = d.join("sub/state");
        write_atomic(&f, b"one").unwrap();
        write_atomic_mode(&f, b"two", 0o600).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read_dir(d.join("sub")).unwrap().count(), 1);
    }

    /// Defect 8 of the reliability issue: a symlink planted at the old temporary name
    /// (`PATH.tmp`) was followed and its target truncated.
    #[test]
    fn write_atomic_never_writes_through_a_planted_link() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let victim = d.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let path = d.join("state");
        for name in ["state.tmp", ".state.tmp"] {
            symlink(&victim, d.join(name)).unwrap();
        }
        // At the name itself: replaced, not followed.
        symlink(&victim, &path).unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }

    /// Two writers at once never share a temporary file: each result is one writer's whole.
    #[test]
    fn concurrent_writers_each_leave_a_whole_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("state");
        let bodies: Vec<Vec<u8>> = (0..4u8).map(|i| vec![b'a' + i; 200_000]).collect();
        std::thread::scope(|s| {
            for b in &bodies {
                let path = &path;
                s.spawn(move || {
                    for _ in 0..20 {
                        write_atomic(path, b).unwrap();
                    }
                });
            }
            for _ in 0..200 {
                if let Ok(got) = std::fs::read(&path) {
                    assert!(bodies.contains(&got), "a mixed or partial file");
                }
            }
        });
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }
}
