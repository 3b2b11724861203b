//! `bootprint initramfs build|plan|install`: a host-only initramfs whose /init is
//! bootprint-boot (the work is in the initramfs crate; docs/initramfs.md).

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

use ::initramfs::build::{self, Options, RootChoice};
use ::initramfs::compress::Method;

use crate::Outcome;

const HELP: &str = "\
usage: bootprint initramfs build [--out FILE] [--root-from-running | --root DEV]
                                 [--kernel RELEASE] [--compression auto|none|gzip|xz|zstd|lz4]
                                 [--init PATH] [--workers N]
       bootprint initramfs plan [--root-from-running | --root DEV] [--kernel RELEASE]
       bootprint initramfs install [--image FILE] [--kernel RELEASE] [--dry-run] [--once]

build    writes a host-only initramfs: bootprint-boot as /init with its shared libraries,
         the modules that reach the root file system (from sysfs and modules.dep, so no
         libkmod at boot) and a plan file; compression chosen by measurement among what the
         kernel unpacks (CONFIG_RD_*) and this host produces. The measurements go to
         FILE.txt beside the image.
plan     prints the plan only: root, file system, modules in dependency order.
install  adds an extra GRUB boot entry with the image beside the distribution's
         (/etc/grub.d/42_bootprint, then update-grub); the default entry is not changed.
         --once boots the new entry at the next boot only (grub-reboot); --dry-run prints
         the snippet.

--out FILE           default /boot/bootprint-initrd.img-RELEASE
--root-from-running  the root of the running system (the default)
--root DEV           a root device (/dev/vda1, /dev/disk/by-uuid/...)
--kernel RELEASE     default: the running kernel's
--init PATH          the program to make /init (default /usr/lib/bootprint/bootprint-boot)
--workers N          module-loading workers at boot (default: one per CPU)
-h, --help           this help

Roots on LVM, dm-crypt, md RAID or the network are refused with the reason.
";

#[derive(Debug, Default)]
struct Args {
    verb: String,
    out: Option<PathBuf>,
    root: Option<String>,
    kernel: Option<String>,
    compression: Option<Method>,
    init: Option<PathBuf>,
    workers: Option<usize>,
    image: Option<PathBuf>,
    dry_run: bool,
    once: bool,
}

fn parse(args: &[OsString]) -> Result<Option<Args>, String> {
    let mut it = args.iter();
    let verb = it.next().map(|a| crate::args::lossy(a));
    let verb = match verb.as_deref() {
        Some("-h" | "--help") => return Ok(None),
        Some(v @ ("build" | "plan" | "install")) => v.to_string(),
        Some(other) => {
            return Err(format!(
                "unknown subcommand {other:?}: expected build, plan or install"
            ))
        }
        None => return Err("a subcommand is required: build, plan or install".into()),
    };
    let mut a = Args {
        verb,
        ..Args::default()
    };
    while let Some(w) = it.next() {
        let w = crate::args::lossy(w);
        let mut value = |what: &str| it.next().ok_or_else(|| format!("{w} needs {what}"));
        // A value that must be text (a device, a release), or a usage error naming it.
        let text = |v: &OsString| crate::args::text(v, &w).map(String::from);
        match w.as_ref() {
            "-h" | "--help" => return Ok(None),
            "--out" if a.verb == "build" => a.out = Some(PathBuf::from(value("a FILE")?)),
            "--root-from-running" if a.verb != "install" => a.root = None,
            "--root" if a.verb != "install" => a.root = Some(text(value("a DEV")?)?),
            "--kernel" => a.kernel = Some(text(value("a RELEASE")?)?),
            "--init" if a.verb == "build" => a.init = Some(PathBuf::from(value("a PATH")?)),
            "--compression" if a.verb == "build" => {
                let v = text(value("auto, none, gzip, xz, zstd or lz4")?)?;
                a.compression = match v.as_str() {
                    "auto" => None,
                    s => Some(Method::parse(s).ok_or_else(|| {
                        format!("--compression {s:?}: expected auto, none, gzip, xz, zstd or lz4")
                    })?),
                };
            }
            "--workers" if a.verb != "install" => {
                let v = text(value("a number from 1 to 64")?)?;
                a.workers = match v.parse::<usize>() {
                    Ok(n) if (1..=64).contains(&n) => Some(n),
                    _ => return Err(format!("--workers {v:?}: expected a number from 1 to 64")),
                };
            }
            "--image" if a.verb == "install" => a.image = Some(PathBuf::from(value("a FILE")?)),
            "--dry-run" if a.verb == "install" => a.dry_run = true,
            "--once" if a.verb == "install" => a.once = true,
            other => return Err(format!("initramfs {}: unknown option {other:?}", a.verb)),
        }
    }
    Ok(Some(a))
}

/// Runs `bootprint initramfs ...`.
pub fn run(args: &[OsString]) -> Outcome {
    let a = match parse(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{HELP}");
            return Outcome::Ok;
        }
        Err(e) => return Outcome::Usage(e),
    };
    let release = match &a.kernel {
        Some(k) => k.clone(),
        None => match build::running_release(Path::new("/proc")) {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(e.to_string()),
        },
    };
    let mut o = Options::new(
        a.out
            .clone()
            .unwrap_or_else(|| build::default_out(&release)),
    );
    o.kernel = Some(release.clone());
    o.root = match &a.root {
        Some(d) => RootChoice::Dev(d.clone()),
        None => RootChoice::Running,
    };
    o.compression = a.compression;
    o.workers = a.workers;
    if let Some(i) = &a.init {
        o.init = i.clone();
    }
    match a.verb.as_str() {
        "plan" => match build::make_plan(&o) {
            Ok(p) => {
                print!("{}", p.to_text());
                for n in &p.notes {
                    println!("# note: {n}");
                }
                Outcome::Ok
            }
            Err(e) => Outcome::Failed(format!("initramfs plan: {e}")),
        },
        "build" => match build::build(&o) {
            Ok(r) => {
                print!("{}", r.text(&o.out));
                Outcome::Ok
            }
            Err(e) => Outcome::Failed(format!("initramfs build: {e}")),
        },
        _ => install(&a, &release),
    }
}

/// The mount holding `path` (the longest mount point that is a prefix): (major, minor, mount
/// point).
fn mount_of(mountinfo: &str, path: &str) -> Option<(u32, u32, String)> {
    mountinfo
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let mp = f.get(4)?.to_string();
            let (a, b) = f.get(2)?.split_once(':')?;
            Some((a.parse().ok()?, b.parse().ok()?, mp))
        })
        .filter(|(_, _, mp)| path == mp || mp == "/" || path.starts_with(&format!("{mp}/")))
        .max_by_key(|(_, _, mp)| mp.len())
}

fn install(a: &Args, release: &str) -> Outcome {
    let image = a
        .image
        .clone()
        .unwrap_or_else(|| build::default_out(release));
    if !image.is_file() {
        return Outcome::Failed(format!(
            "{} does not exist: run `bootprint initramfs build` first",
            image.display()
        ));
    }
    let fail = |m: String| Outcome::Failed(format!("initramfs install: {m}"));
    let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let Some((maj, min, mp)) = mount_of(&mi, "/boot") else {
        return fail("cannot find the mount holding /boot in /proc/self/mountinfo".into());
    };
    let dev = std::fs::canonicalize(format!("/sys/dev/block/{maj}:{min}"))
        .ok()
        .and_then(|p| {
            p.file_name()
                .map(|n| format!("/dev/{}", n.to_string_lossy()))
        });
    let uuid = dev.as_ref().and_then(|d| {
        let mut b = vec![0u8; ::initramfs::probe::PROBE_BYTES];
        let n = std::fs::File::open(d).ok()?.read(&mut b).ok()?;
        ::initramfs::probe::superblock(&b[..n]).map(|i| i.uuid)
    });
    let Some(uuid) = uuid else {
        return fail(format!(
            "cannot read the file system UUID of /boot's device {dev:?}"
        ));
    };
    let prefix = if mp == "/boot" { "" } else { "/boot" };
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let text = ::initramfs::install::snippet(
        release,
        &image.to_string_lossy(),
        cmdline.trim(),
        &uuid,
        prefix,
    );
    if a.dry_run {
        print!("{text}");
        return Outcome::Ok;
    }
    let snippet = Path::new(::initramfs::install::SNIPPET);
    if let Err(e) = std::fs::write(snippet, &text) {
        return fail(format!("cannot write {}: {e}", snippet.display()));
    }
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(snippet, std::fs::Permissions::from_mode(0o755));
    println!(
        "wrote {} (an extra entry; the default is unchanged)",
        snippet.display()
    );
    match std::process::Command::new("update-grub").status() {
        Ok(s) if s.success() => println!("update-grub: done"),
        Ok(s) => return fail(format!("update-grub failed ({s}); the snippet is in place")),
        Err(e) => {
            println!("update-grub not run ({e}): run it (or grub-mkconfig -o /boot/grub/grub.cfg) yourself")
        }
    }
    if a.once {
        match std::process::Command::new("grub-reboot")
            .arg("bootprint-initramfs")
            .status()
        {
            Ok(s) if s.success() => {
                println!("the next boot only uses the bootprint initramfs entry")
            }
            _ => {
                return fail(
                    "grub-reboot bootprint-initramfs failed (is GRUB_DEFAULT=saved?)".into(),
                )
            }
        }
    }
    Outcome::Ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn arguments() {
        let a = parse(&words(
            "build --out /tmp/x --root /dev/vda --compression zstd --kernel 6.1",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(a.out, Some(PathBuf::from("/tmp/x")));
        assert_eq!(a.root.as_deref(), Some("/dev/vda"));
        assert_eq!(a.compression, Some(Method::Zstd));
        assert_eq!(a.kernel.as_deref(), Some("6.1"));
        let a = parse(&words(
            "build --root /dev/vda --root-from-running --compression auto",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(a.root, None);
        assert_eq!(a.compression, None);
        assert!(parse(&words("build --compression lzma"))
            .unwrap_err()
            .contains("expected auto"));
        assert!(parse(&words("install --out x"))
            .unwrap_err()
            .contains("unknown option"));
        assert_eq!(
            parse(&words("build --workers 1")).unwrap().unwrap().workers,
            Some(1)
        );
        assert!(parse(&words("build --workers 0"))
            .unwrap_err()
            .contains("expected a number from 1 to 64"));
        assert!(parse(&words("burn"))
            .unwrap_err()
            .contains("expected build, plan or install"));
        assert!(parse(&words("build --out"))
            .unwrap_err()
            .contains("--out needs a FILE"));
        assert!(parse(&words("--help")).unwrap().is_none());
    }

    #[test]
    fn boot_mount() {
        let mi =
            "22 1 254:1 / / rw - ext4 /dev/vda1 rw\n30 22 254:2 / /boot rw - ext2 /dev/vda2 rw\n\
                  31 22 254:3 / /bootx rw - ext4 /dev/vda3 rw\n";
        assert_eq!(mount_of(mi, "/boot"), Some((254, 2, "/boot".into())));
        let mi =
            "22 1 254:1 / / rw - ext4 /dev/vda1 rw\n31 22 254:3 / /bootx rw - ext4 /dev/vda3 rw\n";
        assert_eq!(mount_of(mi, "/boot"), Some((254, 1, "/".into())));
    }
}
