//! `bench initramfs`: the initramfs phase of a boot with Debian's initramfs-tools image (the
//! image's initrd as is), dracut in host-only mode, tiny-initramfs and bootprint's own,
//! interleaved, `--runs` boots each. Per boot, from the serial console with `loglevel=7`:
//! kernel start to `Run /init` (kernel timestamp), kernel start to the real init (its
//! `INIT: version` line, placed on the kernel clock with the host-minus-guest offset of the
//! kernel lines just before it), the initramfs phase between the two, and kernel start to
//! `login:` (host time minus the firmware estimate). The images are the variants of a
//! benchmark on the shared runner (bench/runner.rs: a warm-up boot, interleaved rounds,
//! medians, testbed/results/DATE-initramfs.json); the generators skipped and the goal's
//! verdict are added to its result.
//!
//! dracut and tiny-initramfs conflict with initramfs-tools, so they are never installed in
//! the shared image: their .debs (downloaded on the host with `apt-get download`) are
//! written into a throwaway copy of the disk with debugfs, unpacked in a booted copy
//! (`dpkg-deb -x`, no maintainer scripts), and the images generated there so they see the
//! guest's hardware; then copied out and cached under cache/initramfs-gen-<key>/.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::bench::registry::Request;
use crate::bench::runner::{self, Benchmark, Figures, Variant};
use crate::vm::image::{self, Image};
use crate::vm::initramfs::{boot_opts_with, ensure_ours, kernel_time_of};
use crate::vm::qemu::{self, round3, BootOpts, BootResult, Profile};
use crate::vm::serial::{clock_offset_before, firmware_estimate, read_log};
use crate::vm::util::{io_err, run_logged, Fnv, Paths, Result};

/// The extra kernel arguments of every bench boot: `Run /init` is an info line; `init=`
/// because dracut's systemd would otherwise switch to the root's systemd, not its sysvinit.
const APPEND: &str = "loglevel=7 init=/sbin/init";
/// The packages the other generators need: dracut-core has dracut without the `dracut`
/// package's conflict with initramfs-tools; tiny-initramfs-core has mktirfs (the
/// tiny-initramfs package only hooks it into kernel updates, and conflicts); cpio for both.
/// The rest of their dependencies are in the image already.
const DEBS: [&str; 3] = ["dracut-core", "tiny-initramfs-core", "cpio"];
/// The goal: bootprint's initramfs phase at most this share of Debian's.
pub const GOAL_RATIO: f64 = 0.2;

/// One boot's initramfs phase, in seconds on the kernel clock.
#[derive(Debug, Clone, Default)]
pub struct Phase {
    pub run_init_s: Option<f64>,
    pub real_init_s: Option<f64>,
    pub initramfs_s: Option<f64>,
    pub login_s: Option<f64>,
}

/// The phase of one boot from its console lines and host login time.
pub fn phase(lines: &[(f64, String)], host_login_s: f64) -> Phase {
    let run_init_s = kernel_time_of(lines, "Run /init as init process");
    let real_init_s = lines
        .iter()
        .find(|(_, l)| l.contains("INIT: version"))
        .and_then(|(h, _)| clock_offset_before(lines, *h).map(|o| h - o));
    let login_s = firmware_estimate(lines).map(|f| host_login_s - f);
    Phase {
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

/// A boot's figures for the runner: the phase, from its serial log.
fn initramfs_figures(r: &BootResult) -> Figures {
    let p = phase(&read_log(&r.serial_log), r.host_login_s);
    [
        ("run_init_s", p.run_init_s),
        ("real_init_s", p.real_init_s),
        ("initramfs_s", p.initramfs_s),
        ("login_s", p.login_s),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.map(round3)))
    .collect()
}

/// The benchmark: one variant per initramfs image, Debian's first (the baseline).
fn benchmark(initrds: &[Initrd]) -> Benchmark {
    let variants = initrds
        .iter()
        .map(|(name, initrd)| Variant {
            name,
            opts: boot_opts_with(initrd, APPEND),
            extra: initramfs_figures,
            image: None,
        })
        .collect();
    Benchmark {
        name: "initramfs",
        about: "the initramfs phase (kernel clock: Run /init to the real init's INIT: version, placed with the host-minus-guest offset) with Debian's initramfs-tools, dracut host-only, tiny-initramfs and bootprint's; login_s: host time to login: minus the firmware estimate",
        variants,
        seasoned_by: None,
        season_each: false,
    }
}

/// `bench initramfs` as the command line asks it: `--runs` boots of each image.
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    let img = image::ensure(paths, req.cargo)?;
    let (initrds, skipped) = initrds(paths, &img)?;
    let mut m = runner::measure(paths, &img, &benchmark(&initrds), req.runs, Profile::Fast)?;
    m.doc["append"] = json!(APPEND);
    m.doc["goal_ratio_initramfs_s"] = json!(GOAL_RATIO);
    m.doc["skipped"] = skipped
        .iter()
        .map(|(n, w)| json!({"name": n, "why": w}))
        .collect();
    m.notes = goal_lines(&m.doc);
    for (name, why) in &skipped {
        m.notes.push(format!(
            "{name}: skipped: {}",
            why.lines().next().unwrap_or("")
        ));
    }
    runner::finish(paths, m, req.json).map(|_| ())
}

/// The images' sizes and bootprint's phase against the goal.
fn goal_lines(doc: &serde_json::Value) -> Vec<String> {
    let mut lines = vec![];
    for v in doc["variants"].as_array().into_iter().flatten() {
        let name = v["name"].as_str().unwrap_or("?");
        let kib = v["initrd_bytes"].as_u64().unwrap_or(0) / 1024;
        lines.push(format!("{name}: image {kib} KiB"));
    }
    let verdict = match runner::figure_ratio(doc, "bootprint", "initramfs_s") {
        Some((r, range)) => format!("{r:.3}x: {}", runner::goal_verdict(r, range, GOAL_RATIO)),
        None => "not measured".to_string(),
    };
    lines.push(format!(
        "goal: bootprint's initramfs phase at most {GOAL_RATIO}x Debian's: {verdict}"
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_from_console_lines() {
        let lines = vec![
            (3.0, "[    0.000000] Linux version 6.1".to_string()),
            (10.2, "[    7.100000] Run /init as init process".to_string()),
            (
                10.9,
                "[    7.800000] EXT4-fs (vda): mounted filesystem".to_string(),
            ),
            (11.5, "INIT: version 3.06 booting".to_string()),
        ];
        let f = phase(&lines, 40.0);
        assert_eq!(f.run_init_s, Some(7.1));
        // Offset 3.0 (the smallest host-minus-kernel of the last lines): 11.5 - 3.0.
        assert!((f.real_init_s.unwrap() - 8.5).abs() < 1e-9);
        assert!((f.initramfs_s.unwrap() - 1.4).abs() < 1e-9);
        assert!((f.login_s.unwrap() - 37.0).abs() < 1e-9);
        assert!(phase(&lines[..2], 40.0).initramfs_s.is_none());
    }
}
