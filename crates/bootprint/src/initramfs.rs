//! `bootprint initramfs build|plan`: a host-only initramfs whose /init is bootprint-boot (the
//! work is in the initramfs crate; docs/initramfs.md). Its GRUB entry is
//! `bootprint enable --initramfs`'s (enablement.rs, packaging/grub.d).

use std::io::Write;
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
