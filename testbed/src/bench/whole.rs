//! `bench whole`: the whole boot, every lever on, against systemd and Debian's default.

use std::path::PathBuf;

use crate::bench::registry::Request;
use crate::bench::runner::{self, recorded, whole_account_figures, Benchmark};
use crate::vm::image::{self, Flavor};
use crate::vm::initramfs::ensure_ours;
use crate::vm::qemu::Profile;
use crate::vm::util::{Paths, Result};

/// `bench whole`: the whole boot, every lever on, against what users run (issue 15). The
/// baseline is systemd: every speed claim is a ratio to it. Each variant is seasoned by a
/// boot of its own (readahead learns its pack, the runner its durations, systemd's late
/// units their set) and measured from copies of that disk. `systemd_image` is the image
/// the systemd variants boot (the desktop one differs from the sysvinit desktop image);
/// `ours`/`ours_systemd` are bootprint's initramfs built for each image.
pub fn whole(
    profile: Profile,
    systemd_image: Option<image::Image>,
    ours: PathBuf,
    ours_systemd: PathBuf,
) -> Benchmark {
    // On the text image one image has both inits: systemd is chosen on the command line.
    let sd = if systemd_image.is_some() {
        ""
    } else {
        "bootprint.init=/lib/systemd/systemd"
    };
    let variants = [
        ("systemd", sd.to_string(), None),
        ("debian", String::new(), None),
        (
            "sysv+bp",
            "bootprint.rc=1 bootprint.modules=1 bootprint.readahead=1".to_string(),
            Some(ours),
        ),
        (
            "systemd+bp",
            format!("{sd} bootprint.readahead=1 bootprint.late=1")
                .trim()
                .to_string(),
            Some(ours_systemd),
        ),
    ];
    Benchmark {
        name: "whole",
        about: "the whole boot, every lever on: systemd (the baseline), Debian's default \
                (sysvinit, startpar, initramfs-tools), sysvinit + bootprint (its initramfs, \
                runner, module loader, readahead) and systemd + bootprint (its initramfs, \
                readahead, late units)",
        seasoned_by: None,
        season_each: true,
        variants: variants
            .into_iter()
            .map(|(name, append, initrd)| {
                let mut v = recorded(name, profile, append, whole_account_figures);
                v.opts.sync_disk = true;
                v.opts.initrd = initrd;
                v.image = name
                    .starts_with("systemd")
                    .then(|| systemd_image.clone())
                    .flatten();
                v
            })
            .collect(),
    }
}

/// `bench whole` as the command line asks it; `--desktop` (or `--desktop-systemd`): on the
/// desktop images.
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    let (cargo, profile) = (req.cargo, req.profile());
    let desktop = req.flavor != Flavor::Text;
    let flavor = if desktop {
        Flavor::Desktop
    } else {
        Flavor::Text
    };
    let img = image::ensure_flavor(paths, cargo, flavor)?;
    let systemd = desktop
        .then(|| image::ensure_flavor(paths, cargo, Flavor::DesktopSystemd))
        .transpose()?;
    let ours = ensure_ours(paths, &img)?;
    let ours_systemd = match &systemd {
        Some(sd) => ensure_ours(paths, sd)?,
        None => ours.clone(),
    };
    let mut bench = whole(profile, systemd, ours, ours_systemd);
    if desktop {
        bench.name = "whole-desktop";
    }
    runner::run_built(paths, &img, &bench, req.runs, profile, req.json)
}
