//! `age`: an aged copy of the image's root filesystem, as years of package updates leave a
//! disk. A fresh `mke2fs -d` lays every file out whole and in directory order, so a boot's
//! reads are nearly sequential and a throttled drive hardly slows it (TESTBED-NOTES.md);
//! readahead can only be judged where the reads are scattered. Here the system's files are
//! rewritten, in a shuffled order, into free space first cut into small holes, with fresh
//! small files written between them: files end up split into pieces and spread over the
//! disk. Deterministic (fixed seed), done once per image and cached beside it
//! (`rootfs-aged.ext4`), with the figures in `rootfs-aged.txt`.
//!
//! How (loop mount, `nodelalloc` so blocks are allocated in write order, not at writeback):
//! 1. fill the free space with filler files of 4-128 KiB (zeros, so sparse copies stay
//!    small) until 64 MiB are left;
//! 2. delete a random half of them: the free space is now holes of 4-128 KiB;
//! 3. rewrite every regular file with one link (copy, same owner, mode, times and extended
//!    attributes, rename over the original) in shuffled order, writing a small filler after
//!    one in three;
//! 4. delete all fillers; `e2fsck -fn` reports the share of non-contiguous files.

use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::vm::image::{self, Image};
use crate::vm::util::{io_err, output_logged, run_logged, Error, Lock, Paths, Result};

/// The aged root filesystem's file name in the image directory.
pub const AGED_ROOTFS: &str = "rootfs-aged.ext4";
const SEED: u64 = 0x2026_1122_b007_0001;
/// Free space left when filling, so the rewrites never run out.
const KEEP_FREE: u64 = 64 << 20;

/// A small deterministic generator (xorshift64*): the aging must be the same every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// The image with its root filesystem replaced by the aged copy (made when missing), with
/// the current bootprint binaries installed in it (built first when `cargo`).
pub fn aged(paths: &Paths, img: &Image, cargo: bool) -> Result<Image> {
    let aged = Image {
        dir: img.dir.clone(),
        rootfs: img.dir.join(AGED_ROOTFS),
        kernel: img.kernel.clone(),
        initrd: img.initrd.clone(),
        desktop: img.desktop,
    };
    let _lock = Lock::acquire(&aged.lock_path())?;
    if !aged.rootfs.is_file() {
        let t = Instant::now();
        let report = make_aged(&img.rootfs, &aged.rootfs, &img.dir)?;
        let text = format!("{report}aging took {:.1} s\n", t.elapsed().as_secs_f64());
        eprint!("age: {text}");
        let _ = fs::write(img.dir.join("rootfs-aged.txt"), text);
    }
    let bins = image::host_binaries(paths, cargo)?;
    if image::update_binaries(&aged, &bins)? {
        eprintln!("age: bootprint binaries updated in the aged copy");
    }
    Ok(aged)
}

/// Unmounts on drop, whatever happened in between.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn make_aged(rootfs: &Path, aged: &Path, dir: &Path) -> Result<String> {
    let log = dir.join("age.log");
    let work = aged.with_extension("tmp");
    let mnt = dir.join("age-mnt");
    // A mount an interrupted run left behind (quietly: usually there is none).
    let _ = Command::new("umount")
        .arg(&mnt)
        .stderr(std::process::Stdio::null())
        .status();
    fs::create_dir_all(&mnt).map_err(|e| io_err("cannot create", &mnt, e))?;
    eprintln!(
        "age: copying {} and aging it (log {})",
        rootfs.display(),
        log.display()
    );
    run_logged(
        Command::new("cp")
            .arg("--sparse=always")
            .arg(rootfs)
            .arg(&work),
        &log,
    )?;
    let report;
    {
        run_logged(
            Command::new("mount")
                .args(["-o", "loop,nodelalloc"])
                .arg(&work)
                .arg(&mnt),
            &log,
        )?;
        let _m = Mounted(mnt.clone());
        report = age_tree(&mnt)?;
        run_logged(&mut Command::new("sync"), &log)?;
        // Give the deleted fillers' blocks back to the sparse image file (loop passes discard).
        let _ = run_logged(Command::new("fstrim").arg(&mnt), &log);
    }
    // e2fsck -n exits 0 when clean; its summary line says how many files are fragmented.
    let fsck = output_logged(Command::new("e2fsck").args(["-fn"]).arg(&work), &log)?;
    let summary = fsck
        .lines()
        .find(|l| l.contains("non-contiguous"))
        .unwrap_or("")
        .trim()
        .to_string();
    fs::rename(&work, aged).map_err(|e| io_err("cannot rename into place", aged, e))?;
    Ok(format!("{report}e2fsck: {summary}\n"))
}

fn free_bytes(path: &Path) -> Result<u64> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| Error::fail("NUL in path"))?;
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid C string and s a valid out-pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(io_err(
            "cannot statvfs",
            path,
            std::io::Error::last_os_error(),
        ));
    }
    Ok(s.f_bavail as u64 * s.f_frsize as u64)
}

fn write_filler(path: &Path, bytes: u64) -> Result<()> {
    let mut f = fs::File::create(path).map_err(|e| io_err("cannot create", path, e))?;
    let zeros = vec![0u8; bytes as usize];
    f.write_all(&zeros)
        .map_err(|e| io_err("cannot write", path, e))
}

fn system_files(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(root) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let Ok(md) = fs::symlink_metadata(&p) else {
            continue;
        };
        if md.is_dir() {
            if e.file_name() != "lost+found" {
                system_files(&p, out);
            }
        } else if md.is_file() && md.nlink() == 1 && md.len() > 0 {
            out.push(p);
        }
    }
}

fn age_tree(mnt: &Path) -> Result<String> {
    let mut rng = Rng(SEED);
    let mut files = Vec::new();
    system_files(mnt, &mut files);
    files.sort();
    rng.shuffle(&mut files);
    let fill = mnt.join(".bootprint-age");
    fs::create_dir_all(&fill).map_err(|e| io_err("cannot create", &fill, e))?;

    // 1. Fill the free space with small files.
    let mut fillers = Vec::new();
    while free_bytes(mnt)? > KEEP_FREE {
        let p = fill.join(format!("f{}", fillers.len()));
        write_filler(&p, 4096 * (1 + rng.below(32)))?;
        fillers.push(p);
    }
    // 2. Holes: delete a random half.
    rng.shuffle(&mut fillers);
    let kept = fillers.split_off(fillers.len() / 2);
    for p in &fillers {
        let _ = fs::remove_file(p);
    }
    // 3. Rewrite the system's files in shuffled order, with churn between them.
    let mut rewritten = 0usize;
    let mut churn = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if rewrite(p)? {
            rewritten += 1;
        }
        if rng.below(3) == 0 && free_bytes(mnt)? > KEEP_FREE {
            let c = fill.join(format!("c{i}"));
            write_filler(&c, 4096 * (1 + rng.below(16)))?;
            churn.push(c);
        }
    }
    // 4. The fillers go; the files stay where they landed.
    let _ = fs::remove_dir_all(&fill);
    Ok(format!(
        "{} files rewritten of {} found; {} fillers, half removed before rewriting; {} churn files\n",
        rewritten,
        files.len(),
        fillers.len() + kept.len(),
        churn.len()
    ))
}

/// Copies `p` to a new file beside it with the same owner, mode, times and extended
/// attributes, and renames it over `p`. `false` when it was left alone (unreadable).
fn rewrite(p: &Path) -> Result<bool> {
    let md = match fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(_) => return Ok(false),
    };
    let mut tmp = p.as_os_str().to_owned();
    tmp.push(".bp-age");
    let tmp = PathBuf::from(tmp);
    if fs::copy(p, &tmp).is_err() {
        let _ = fs::remove_file(&tmp);
        return Ok(false);
    }
    std::os::unix::fs::lchown(&tmp, Some(md.uid()), Some(md.gid()))
        .map_err(|e| io_err("cannot chown", &tmp, e))?;
    // chown clears set-id bits: set the mode again after it.
    fs::set_permissions(&tmp, md.permissions()).map_err(|e| io_err("cannot chmod", &tmp, e))?;
    copy_xattrs(p, &tmp)?;
    set_times(&tmp, &md)?;
    fs::rename(&tmp, p).map_err(|e| io_err("cannot rename over", p, e))?;
    Ok(true)
}

fn cpath(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Error::fail("NUL in path"))
}

fn set_times(p: &Path, md: &fs::Metadata) -> Result<()> {
    let c = cpath(p)?;
    let ts = [
        libc::timespec {
            tv_sec: md.atime(),
            tv_nsec: md.atime_nsec(),
        },
        libc::timespec {
            tv_sec: md.mtime(),
            tv_nsec: md.mtime_nsec(),
        },
    ];
    // SAFETY: valid path and a two-element timespec array.
    if unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), ts.as_ptr(), 0) } != 0 {
        return Err(io_err(
            "cannot set times",
            p,
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Extended attributes (file capabilities such as ping's `security.capability`) must
/// survive the rewrite, or the aged system would behave differently.
fn copy_xattrs(from: &Path, to: &Path) -> Result<()> {
    let (cf, ct) = (cpath(from)?, cpath(to)?);
    let mut names = vec![0u8; 4096];
    // SAFETY: valid path and buffer of the given length.
    let n = unsafe { libc::llistxattr(cf.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
    if n <= 0 {
        return Ok(());
    }
    for name in names[..n as usize]
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
    {
        let cname = CString::new(name).map_err(|_| Error::fail("bad xattr name"))?;
        let mut val = vec![0u8; 65536];
        // SAFETY: valid strings and buffer.
        let len = unsafe {
            libc::lgetxattr(
                cf.as_ptr(),
                cname.as_ptr(),
                val.as_mut_ptr().cast(),
                val.len(),
            )
        };
        if len < 0 {
            continue;
        }
        // SAFETY: valid strings and a buffer of `len` bytes.
        let rc = unsafe {
            libc::lsetxattr(
                ct.as_ptr(),
                cname.as_ptr(),
                val.as_ptr().cast(),
                len as usize,
                0,
            )
        };
        if rc != 0 {
            return Err(io_err(
                "cannot copy extended attributes to",
                to,
                std::io::Error::last_os_error(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_shuffles_everything() {
        let mut a = Rng(SEED);
        let mut b = Rng(SEED);
        let mut v: Vec<u32> = (0..100).collect();
        let mut w = v.clone();
        a.shuffle(&mut v);
        b.shuffle(&mut w);
        assert_eq!(v, w);
        assert_ne!(v, (0..100).collect::<Vec<_>>());
        let mut sorted = v.clone();
        sorted.sort();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
    }

    /// Real: rewrite keeps content, owner, mode (set-id bits too), times and xattrs, and
    /// gives a new inode.
    #[test]
    fn rewrite_keeps_everything_but_the_blocks() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let f = dir.join("tool");
        fs::write(&f, b"#!/bin/sh\necho hi\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&f, fs::Permissions::from_mode(0o4755)).unwrap();
        let c = cpath(&f).unwrap();
        let name = CString::new("user.bootprint").unwrap();
        // SAFETY: valid strings and buffer. tmpfs without user xattrs refuses: then skip it.
        let has_xattr =
            unsafe { libc::lsetxattr(c.as_ptr(), name.as_ptr(), b"x1".as_ptr().cast(), 2, 0) } == 0;
        let before = fs::metadata(&f).unwrap();
        assert!(rewrite(&f).unwrap());
        let after = fs::metadata(&f).unwrap();
        assert_ne!(before.ino(), after.ino());
        assert_eq!(fs::read(&f).unwrap(), b"#!/bin/sh\necho hi\n");
        assert_eq!(after.mode(), before.mode());
        assert_eq!(
            (after.mtime(), after.mtime_nsec()),
            (before.mtime(), before.mtime_nsec())
        );
        assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
        if has_xattr {
            let mut buf = [0u8; 8];
            let c = cpath(&f).unwrap();
            // SAFETY: valid strings and buffer.
            let n = unsafe {
                libc::lgetxattr(
                    c.as_ptr(),
                    name.as_ptr(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            };
            assert_eq!(&buf[..n as usize], b"x1");
        }
    }
}
