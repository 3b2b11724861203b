//! `bench initramfs`: the initramfs phase of a boot with Debian's initramfs-tools image (the
//! image's initrd as is), dracut in host-only mode, tiny-initramfs and bootprint's own,
//! interleaved, `--runs` boots each. Per boot, from the serial console with `loglevel=7`:
//! kernel start to `Run /init` (kernel timestamp), kernel start to the real init (its
//! `INIT: version` line, placed on the kernel clock with the host-minus-guest offset of the
//! kernel lines just before it), the initramfs phase between the two, and kernel start to
//! `login:` (host time minus the firmware estimate). Results in
//! testbed/results/DATE-initramfs.json and a table of medians.
//!
//! dracut and tiny-initramfs conflict with initramfs-tools, so they are never installed in
//! the shared image: their .debs (downloaded on the host with `apt-get download`) are
//! written into a throwaway copy of the disk with debugfs, unpacked in a booted copy
//! (`dpkg-deb -x`, no maintainer scripts), and the images generated there so they see the
//! guest's hardware; then copied out and cached under cache/initramfs-gen-<key>/.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::bench::registry::Request;
use crate::vm::image::{self, Image};
use crate::vm::initramfs::{boot_with, ensure_ours, kernel_time_of};
use crate::vm::qemu::{self, round3, BootOpts, Profile};
use crate::vm::serial::{clock_offset_before, firmware_estimate};
use crate::vm::util::{io_err, median, run_logged, today, Error, Fnv, Paths, Result};

/// The extra kernel arguments of every bench boot: `Run /init` is an info line; `init=`
/// because dracut's systemd would otherwise switch to the root's systemd, not its sysvinit.
const APPEND: &str = "loglevel=7 init=/sbin/init";
/// The packages the other generators need: dracut-core has dracut without the `dracut`
/// package's conflict with initramfs-tools; tiny-initramfs-core has mktirfs (the
/// tiny-initramfs package only hooks it into kernel updates, and conflicts); cpio for both.
/// The rest of their dependencies are in the image already.
const DEBS: [&str; 3] = ["dracut-core", "tiny-initramfs-core", "cpio"];

/// One boot's figures, in seconds on the kernel clock.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    pub run_init_s: Option<f64>,
    pub real_init_s: Option<f64>,
    pub initramfs_s: Option<f64>,
    pub login_s: Option<f64>,
}

/// Reads a serial log written by the test bed (`HOST | TEXT` lines).
pub fn read_serial(path: &Path) -> Vec<(f64, String)> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (h, t) = l.split_once(" | ")?;
            Some((h.trim().parse().ok()?, t.to_string()))
        })
        .collect()
}

/// The figures of one boot from its console lines and host login time.
pub fn figures(lines: &[(f64, String)], host_login_s: f64) -> Figures {
    let run_init_s = kernel_time_of(lines, "Run /init as init process");
    let real_init_s = lines
        .iter()
        .find(|(_, l)| l.contains("INIT: version"))
        .and_then(|(h, _)| clock_offset_before(lines, *h).map(|o| h - o));
    let login_s = firmware_estimate(lines).map(|f| host_login_s - f);
    Figures {
        run_init_s,
        real_init_s,
        initramfs_s: match (run_init_s, real_init_s) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        },
        login_s,
    }
}

/// The .debs, downloaded once into the cache.
fn debs(paths: &Paths) -> Result<Vec<PathBuf>> {
    let dir = paths.cache.join("initramfs-debs");
    fs::create_dir_all(&dir).map_err(|e| io_err("cannot create", &dir, e))?;
    let have = |dir: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = fs::read_dir(dir)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        v.retain(|p| p.extension().is_some_and(|x| x == "deb"));
        v.sort();
        v
    };
    let missing: Vec<&str> = DEBS
        .iter()
        .copied()
        .filter(|d| {
            !have(&dir).iter().any(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{d}_")))
            })
        })
        .collect();
    if !missing.is_empty() {
        run_logged(
            Command::new("apt-get")
                .arg("download")
                .args(&missing)
                .current_dir(&dir),
            &dir.join("download.log"),
        )?;
    }
    Ok(have(&dir))
}

/// The dracut and tiny-initramfs images, generated in a throwaway copy of the guest.
/// Returns (name, image or why not).
fn ensure_others(
    paths: &Paths,
    img: &Image,
) -> Vec<(&'static str, std::result::Result<PathBuf, String>)> {
    let mut h = Fnv::new();
    h.update(img.dir.to_string_lossy().as_bytes());
    let dir = paths.cache.join(format!("initramfs-gen-{}", h.hex()));
    let want = [
        ("dracut", dir.join("dracut.img")),
        ("tiny", dir.join("tiny.img")),
    ];
    if want.iter().all(|(_, p)| p.is_file()) {
        return want.into_iter().map(|(n, p)| (n, Ok(p))).collect();
    }
    let r = generate(paths, img, &dir);
    want.into_iter()
        .map(|(n, p)| {
            let r = match &r {
                Err(e) => Err(e.to_string()),
                Ok(out) if p.is_file() => {
                    let _ = out;
                    Ok(p)
                }
                Ok(out) => Err(format!("not generated; guest output:\n{out}")),
            };
            (n, r)
        })
        .collect()
}

fn generate(paths: &Paths, img: &Image, dir: &Path) -> Result<String> {
    fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
    let debs = debs(paths)?;
    let disk = dir.join("disk.raw");
    let log = dir.join("host.log");
    run_logged(
        Command::new("cp")
            .arg("--sparse=always")
            .arg(&img.rootfs)
            .arg(&disk),
        &log,
    )?;
    let mut script = String::from("mkdir /root/bp-debs\ncd /root/bp-debs\n");
    for d in &debs {
        let name = d.file_name().unwrap_or_default().to_string_lossy();
        script.push_str(&format!("write {} {name}\n", d.display()));
    }
    let cmd = dir.join("debugfs.cmd");
    fs::write(&cmd, script).map_err(|e| io_err("cannot write", &cmd, e))?;
    run_logged(
        Command::new("debugfs")
            .arg("-w")
            .arg("-f")
            .arg(&cmd)
            .arg(&disk),
        &log,
    )?;
    let mut opts = BootOpts::new(Profile::Fast);
    opts.disk_from = Some(disk.clone());
    opts.keep_disk = true;
    // dpkg, not `dpkg-deb -x`: extracting over / replaces the merged-/usr symlinks (/bin,
    // /lib) with directories. --force-depends: dracut-core's kpartx is not needed here.
    opts.guest_script = Some(
        "cd /root/bp-debs && dpkg -i --force-depends *.deb > /root/bp-dpkg.log 2>&1; echo BP\"\"DPKG=$?\n\
         tail -3 /root/bp-dpkg.log\n\
         K=$(uname -r)\n\
         dracut --hostonly --no-hostonly-cmdline --force /boot/bp-dracut.img $K > /root/bp-dracut.log 2>&1; echo BP\"\"DRACUT=$?\n\
         tail -5 /root/bp-dracut.log\n\
         mktirfs -o /boot/bp-tiny.img --include-modules=virtio_pci,virtio_blk,ext4,crc32c_generic $K > /root/bp-tiny.log 2>&1; echo BP\"\"TINY=$?\n\
         tail -5 /root/bp-tiny.log\n\
         ls -l /boot; sync\n"
            .to_string(),
    );
    eprintln!(
        "bench initramfs: generating dracut and tiny-initramfs images in a copy of the guest"
    );
    let res = qemu::boot(paths, img, &opts);
    let _ = fs::remove_file(&disk);
    let res = res?;
    let out = res.guest_output.clone().unwrap_or_default();
    let _ = fs::write(dir.join("guest.out"), &out);
    if let Some(kept) = res.kept_disk() {
        let _ = crate::vm::qemu::replay_journal(&kept, &log);
        for (guest, host) in [
            ("/boot/bp-dracut.img", "dracut.img"),
            ("/boot/bp-tiny.img", "tiny.img"),
        ] {
            let tmp = dir.join(format!("{host}.tmp"));
            let _ = run_logged(
                Command::new("debugfs")
                    .arg("-R")
                    .arg(format!("dump {guest} {}", tmp.display()))
                    .arg(&kept),
                &log,
            );
            if fs::metadata(&tmp).map(|m| m.len() > 1024).unwrap_or(false) {
                let _ = fs::rename(&tmp, dir.join(host));
            } else {
                let _ = fs::remove_file(&tmp);
            }
        }
        let _ = fs::remove_file(&kept);
    }
    Ok(out)
}

/// `bench initramfs` as the command line asks it.
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    run(paths, req.runs, req.cargo)
}

pub fn run(paths: &Paths, runs: usize, cargo: bool) -> Result<()> {
    let img = image::ensure(paths, cargo)?;
    let (variants, skipped) = initrds(paths, &img)?;
    // A discarded first boot warms the host's page cache for the kernel and the image.
    eprintln!("bench initramfs: warm-up boot");
    let _ = boot_with(paths, &img, &img.initrd, APPEND);
    let (results, figs) = rounds(paths, &img, &variants, runs);
    let summary = print_and_summarize(&variants, &results, &figs);
    for (name, why) in &skipped {
        println!("{name:<10} skipped: {}", why.lines().next().unwrap_or(""));
    }
    let out = json!({
        "bench": "initramfs",
        "date": today(),
        "runs": runs,
        "append": APPEND,
        "measure": "kernel clock: Run /init (kernel timestamp) to INIT: version (host time minus the guest clock offset); login: host time minus the firmware estimate",
        "load_after": host_load(),
        "variants": summary,
        "skipped": skipped.iter().map(|(n, w)| json!({"name": n, "why": w})).collect::<Vec<_>>(),
    });
    let dir = paths.repo.join("testbed/results");
    fs::create_dir_all(&dir).map_err(|e| io_err("cannot create", &dir, e))?;
    let file = dir.join(format!("{}-initramfs.json", today()));
    fs::write(
        &file,
        serde_json::to_string_pretty(&out).unwrap_or_default() + "\n",
    )
    .map_err(|e| io_err("cannot write", &file, e))?;
    println!("results: {}", file.display());
    if figs.iter().all(|f| f.is_empty()) {
        return Err(Error::fail("no boot gave figures"));
    }
    Ok(())
}

/// An initramfs image to compare: its name and file.
type Initrd = (&'static str, PathBuf);
/// A generator that was skipped, and why.
type Skipped = (String, String);

/// The initramfs images to compare: Debian's (the image's own), those of the other
/// generators that could be made, and bootprint's; and the generators skipped, with why.
fn initrds(paths: &Paths, img: &Image) -> Result<(Vec<Initrd>, Vec<Skipped>)> {
    let mut variants: Vec<Initrd> = vec![("debian", img.initrd.clone())];
    let mut skipped: Vec<Skipped> = Vec::new();
    for (name, r) in ensure_others(paths, img) {
        match r {
            Ok(p) => variants.push((name, p)),
            Err(e) => {
                eprintln!("bench initramfs: {name} skipped: {e}");
                skipped.push((name.to_string(), e));
            }
        }
    }
    variants.push(("bootprint", ensure_ours(paths, img)?));
    Ok((variants, skipped))
}

/// The host's 1-minute load average.
fn host_load() -> String {
    fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .next()
        .unwrap_or("?")
        .to_string()
}

/// `runs` rounds of boots with each initramfs in turn: each boot's JSON, and the figures of
/// those that gave some.
fn rounds(
    paths: &Paths,
    img: &Image,
    variants: &[(&str, PathBuf)],
    runs: usize,
) -> (Vec<Vec<Value>>, Vec<Vec<Figures>>) {
    let mut results: Vec<Vec<Value>> = vec![Vec::new(); variants.len()];
    let mut figs: Vec<Vec<Figures>> = vec![Vec::new(); variants.len()];
    for round in 0..runs {
        for (i, (name, initrd)) in variants.iter().enumerate() {
            eprintln!("bench initramfs: round {}/{runs}: {name}", round + 1);
            let load_before = host_load();
            match boot_with(paths, img, initrd, APPEND) {
                Ok(r) => {
                    let f = figures(&read_serial(&r.serial_log), r.host_login_s);
                    results[i].push(json!({
                        "round": round + 1,
                        "run_init_s": f.run_init_s.map(round3),
                        "real_init_s": f.real_init_s.map(round3),
                        "initramfs_s": f.initramfs_s.map(round3),
                        "login_s": f.login_s.map(round3),
                        "host_login_s": round3(r.host_login_s),
                        "load_before": load_before,
                        "serial_log": crate::vm::util::shown_path(&r.serial_log),
                    }));
                    figs[i].push(f);
                }
                Err(e) => {
                    eprintln!("bench initramfs: {name}: boot failed: {e}");
                    results[i].push(json!({"round": round + 1, "error": e.to_string()}));
                }
            }
        }
    }
    (results, figs)
}

/// Prints the table of medians and ratios to Debian's initramfs phase; returns the result
/// file's `variants`.
fn print_and_summarize(
    variants: &[(&str, PathBuf)],
    results: &[Vec<Value>],
    figs: &[Vec<Figures>],
) -> serde_json::Map<String, Value> {
    let med = |i: usize, get: fn(&Figures) -> Option<f64>| {
        median(&figs[i].iter().filter_map(get).collect::<Vec<_>>())
    };
    let deb_ir = med(0, |f| f.initramfs_s);
    println!(
        "{:<10} {:>9} {:>10} {:>11} {:>9} {:>9} {:>6}",
        "initramfs", "size_KiB", "run_init_s", "initramfs_s", "ratio", "real_init", "login"
    );
    let mut summary = serde_json::Map::new();
    for (i, (name, initrd)) in variants.iter().enumerate() {
        let size = fs::metadata(initrd).map(|m| m.len()).unwrap_or(0);
        let ir = med(i, |f| f.initramfs_s);
        let ratio = match (ir, deb_ir) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        let fmt = |x: Option<f64>| x.map(|v| format!("{v:.2}")).unwrap_or("-".into());
        println!(
            "{:<10} {:>9} {:>10} {:>11} {:>9} {:>9} {:>6}",
            name,
            size / 1024,
            fmt(med(i, |f| f.run_init_s)),
            fmt(ir),
            fmt(ratio),
            fmt(med(i, |f| f.real_init_s)),
            fmt(med(i, |f| f.login_s)),
        );
        summary.insert(
            name.to_string(),
            json!({
                "image": crate::vm::util::shown_path(initrd),
                "image_bytes": size,
                "median_run_init_s": med(i, |f| f.run_init_s).map(round3),
                "median_initramfs_s": ir.map(round3),
                "initramfs_ratio_to_debian": ratio.map(round3),
                "median_real_init_s": med(i, |f| f.real_init_s).map(round3),
                "median_login_s": med(i, |f| f.login_s).map(round3),
                "boots": results[i],
            }),
        );
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_from_console_lines() {
        let lines = vec![
            (3.0, "[    0.000000] Linux version 6.1".to_string()),
            (10.2, "[    7.100000] Run /init as init process".to_string()),
            (
                10.9,
                "[    7.800000] EXT4-fs (vda): mounted filesystem".to_string(),
            ),
            (11.5, "INIT: version 3.06 booting".to_string()),
        ];
        let f = figures(&lines, 40.0);
        assert_eq!(f.run_init_s, Some(7.1));
        // Offset 3.0 (the smallest host-minus-kernel of the last lines): 11.5 - 3.0.
        assert!((f.real_init_s.unwrap() - 8.5).abs() < 1e-9);
        assert!((f.initramfs_s.unwrap() - 1.4).abs() < 1e-9);
        assert!((f.login_s.unwrap() - 37.0).abs() < 1e-9);
        assert!(figures(&lines[..2], 40.0).initramfs_s.is_none());
    }
}
