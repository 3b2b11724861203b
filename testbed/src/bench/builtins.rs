//! `bench builtins`: what cutting the sysvinit chain is worth, one step at a time.

use std::path::PathBuf;

use crate::bench::registry::Request;
use crate::bench::runner::{self, recorded, whole_figures, Benchmark};
use crate::vm::image::{self, Flavor};
use crate::vm::initramfs::ensure_ours;
use crate::vm::qemu::Profile;
use crate::vm::util::{Paths, Result};

/// `bench builtins`: what cutting the sysvinit chain is worth (issue 15, part 2): the
/// scripts and checkroot.sh's own root check (`bootprint.rc.builtins=0
/// bootprint.initramfs.fsck=0`, the baseline), the root checked in the initramfs, and the
/// runner's built-ins on top, then udev beside the path (rc::udev), then one graph for the
/// boot (rc::boot: rcS returns before udev ends); every other sysvinit lever on in all, each
/// variant seasoned by a boot of its own.
pub fn builtins(profile: Profile, ours: PathBuf) -> Benchmark {
    let levers = "bootprint.rc=1 bootprint.modules=1 bootprint.readahead=1";
    let whole_s = "bootprint.rc.one-graph=0";
    Benchmark {
        name: "builtins",
        about: "runlevel S as before (Debian's scripts, the root checked by checkroot.sh: \
                udev alone: the baseline), with the root checked in bootprint's initramfs, \
                with the runner's built-ins too, with udev beside the path too, and with \
                one graph for S and 2 too (each step adds one); every sysvinit lever on (bootprint's initramfs, runner, \
                module loader, readahead)",
        seasoned_by: None,
        season_each: true,
        variants: [
            (
                "scripts",
                format!(
                    "{levers} bootprint.rc.builtins=0 bootprint.initramfs.fsck=0 \
                     bootprint.rc.udev-off-path=0 {whole_s}"
                ),
            ),
            (
                "fsck",
                format!(
                    "{levers} bootprint.rc.builtins=0 bootprint.rc.udev-off-path=0 {whole_s}"
                ),
            ),
            (
                "builtins",
                format!("{levers} bootprint.rc.udev-off-path=0 {whole_s}"),
            ),
            ("udev", format!("{levers} {whole_s}")),
            ("one-graph", levers.to_string()),
        ]
        .into_iter()
        .map(|(name, append)| {
            let mut v = recorded(name, profile, append, whole_figures);
            v.opts.sync_disk = true;
            v.opts.initrd = Some(ours.clone());
            v
        })
        .collect(),
    }
}

/// `bench builtins` as the command line asks it (on the text image).
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    let img = image::ensure_flavor(paths, req.cargo, Flavor::Text)?;
    let ours = ensure_ours(paths, &img)?;
    let bench = builtins(req.profile(), ours);
    runner::run_built(paths, &img, &bench, req.runs, req.profile(), req.json)
}
