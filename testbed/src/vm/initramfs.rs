//! bootprint's own initramfs for an image, built inside the guest and cached, and a boot
//! with a given initramfs: what `bench initramfs`, `bench whole`, `parity`, `soak`, `faults`,
//! `verdict` and the `initramfs` test all boot.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::vm::image::Image;
use crate::vm::qemu::{self, BootOpts, Profile};
use crate::vm::serial::kernel_timestamp;
use crate::vm::util::{io_err, run_logged, Error, Fnv, Paths, Result};

/// Where the guest writes the image.
const GUEST_IMAGE: &str = "/boot/bootprint-initrd.img";

/// Our initramfs for `img`, built in the guest (or from the cache when the image and its
/// bootprint binaries are the same as last time). Returns the image file.
pub fn ensure_ours(paths: &Paths, img: &Image) -> Result<PathBuf> {
    let stamp = fs::read_to_string(img.rootfs.with_extension("binaries")).unwrap_or_default();
    let mut h = Fnv::new();
    h.update(img.dir.to_string_lossy().as_bytes());
    h.update(stamp.as_bytes());
    let dir = paths.cache.join(format!("initramfs-ours-{}", h.hex()));
    let out = dir.join("initrd.img");
    if out.is_file() {
        eprintln!("initramfs: ours from the cache: {}", out.display());
        return Ok(out);
    }
    fs::create_dir_all(&dir).map_err(|e| io_err("cannot create", &dir, e))?;
    let mut opts = BootOpts::new(Profile::Fast);
    opts.keep_disk = true;
    opts.guest_script = Some(format!(
        "bootprint initramfs build --out {GUEST_IMAGE}; echo BP\"\"RC=$?; sync\n"
    ));
    eprintln!("initramfs: building ours inside the guest");
    let t = Instant::now();
    let res = qemu::boot(paths, img, &opts)?;
    let output = res.guest_output.clone().unwrap_or_default();
    let _ = fs::write(dir.join("build.out"), &output);
    let disk = res.kept_disk();
    let result = (|| {
        if !output.contains("BPRC=0") {
            return Err(Error::fail(format!(
                "`bootprint initramfs build` failed in the guest:\n{output}"
            )));
        }
        let disk = disk
            .as_ref()
            .ok_or_else(|| Error::fail("the guest's disk was not kept"))?;
        let log = dir.join("debugfs.log");
        let _ = qemu::replay_journal(disk, &log);
        let tmp = dir.join("initrd.img.tmp");
        run_logged(
            Command::new("debugfs")
                .arg("-R")
                .arg(format!("dump {GUEST_IMAGE} {}", tmp.display()))
                .arg(disk),
            &log,
        )?;
        let n = fs::metadata(&tmp).map(|m| m.len()).unwrap_or(0);
        if n < 1024 {
            return Err(Error::fail(format!(
                "{GUEST_IMAGE} copied out of the guest is {n} bytes (log {})",
                log.display()
            )));
        }
        fs::rename(&tmp, &out).map_err(|e| io_err("cannot rename", &tmp, e))?;
        Ok(())
    })();
    if let Some(d) = disk {
        let _ = fs::remove_file(d);
    }
    result?;
    eprintln!(
        "initramfs: built in the guest and copied out in {:.1} s: {}",
        t.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(out)
}

/// The options of a boot with `initrd` instead of the image's, `append` after the base
/// kernel arguments.
pub fn boot_opts_with(initrd: &Path, append: &str) -> BootOpts {
    let mut opts = BootOpts::new(Profile::Fast);
    opts.initrd = Some(initrd.to_path_buf());
    opts.append = append.to_string();
    // Every initramfs mounts the root rw: none should wait for the host's write-back of
    // the fresh disk copy.
    opts.sync_disk = true;
    opts
}

/// The kernel time of a console line containing `pat`, if it has a kernel timestamp.
pub fn kernel_time_of(lines: &[(f64, String)], pat: &str) -> Option<f64> {
    lines
        .iter()
        .find(|(_, l)| l.contains(pat))
        .and_then(|(_, l)| kernel_timestamp(l))
}
