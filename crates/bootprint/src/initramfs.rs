//! `bootprint initramfs build|plan|install`: a host-only initramfs whose /init is
//! bootprint-boot (the work is in the initramfs crate; docs/initramfs.md).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use ::initramfs::build::{self, Options, RootChoice};
use render::initramfs_plan;

use crate::cli;
use crate::output::print;
use crate::Outcome;

/// Runs `bootprint initramfs ...`.
pub fn run(cmd: &cli::Initramfs) -> Outcome {
    let kernel = match cmd {
        cli::Initramfs::Build(a) => &a.target.kernel,
        cli::Initramfs::Plan(a) => &a.target.kernel,
        cli::Initramfs::Install(a) => &a.kernel,
    };
    let release = match kernel {
        Some(k) => k.clone(),
        None => match build::running_release(Path::new("/proc")) {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(e.to_string()),
        },
    };
    match cmd {
        cli::Initramfs::Plan(a) => {
            let o = options(&release, None, &a.target);
            match build::make_plan(&o) {
                Ok(p) => print("the plan", |out| initramfs_plan::text(out, &p)),
                Err(e) => Outcome::Failed(format!("initramfs plan: {e}")),
            }
        }
        cli::Initramfs::Build(a) => {
            let mut o = options(&release, a.out.clone(), &a.target);
            o.compression = a.compression.and_then(|c| c.0);
            if let Some(i) = &a.init {
                o.init = i.clone();
            }
            match build::build(&o) {
                // The report's text is the build's own (it is also written beside the image).
                Ok(r) => print("the report", |out| out.write_all(r.text(&o.out).as_bytes())),
                Err(e) => Outcome::Failed(format!("initramfs build: {e}")),
            }
        }
        cli::Initramfs::Install(a) => install(a, &release),
    }
}

/// The build options `build` and `plan` share.
fn options(release: &str, out: Option<PathBuf>, t: &cli::InitramfsTarget) -> Options {
    let mut o = Options::new(out.unwrap_or_else(|| build::default_out(release)));
    o.kernel = Some(release.to_string());
    o.root = match &t.root {
        Some(d) => RootChoice::Dev(d.clone()),
        None => RootChoice::Running,
    };
    o.workers = t.workers;
    o
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

fn install(a: &cli::InitramfsInstall, release: &str) -> Outcome {
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
