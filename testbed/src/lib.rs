//! The test bed of bootprint (docs/testbed.md): it builds a Debian 12 or 13 image, boots it
//! under QEMU (TCG) with Debian's own kernel, measures boots, runs the benchmarks and the real-boot
//! tests, and writes their results under testbed/results/. The binary (main.rs) only parses
//! the command line and calls [`run`].
//!
//! Layers, each a directory, from the bottom:
//! - [`vm`]: the machine under test: the image and its variants, QEMU, the drives, the serial
//!   console, a hung boot's diagnosis, and the shared helpers (errors, paths, commands, locks);
//! - [`bench`]: the benchmarks: the shared variant runner and results schema, the figures read
//!   from a boot's logs, one file per benchmark, and the registry that lists each once;
//! - [`checks`]: the real-boot tests (smoke, faults, soak, package, desktop, ...);
//! - [`cli`]: the command line (with its man pages and completions), and [`run`], which
//!   dispatches a verb to the layer that does it.
//!
//! A layer imports only the layers below it: `vm` nothing of `bench`, `checks` or `cli`;
//! `bench` only `vm`; `checks` `vm` and `bench` (its result files and figures); `cli` any.
//! tests/layers.rs checks this.

pub mod bench;
pub mod checks;
pub mod cli;
pub mod vm;

use checks::{
    desktop_test, faults, fleet, initramfs_test, late_test, otlp, package_test, parity, reboot,
    selfoff, smoke, soak, stall_repro, verdict,
};
use cli::Verb;
use vm::util::{self, Error};
use vm::{age, cpuscale, deps, image, qemu, seekdisk};

/// Runs one verb of the command line.
pub fn run(verb: Verb) -> Result<(), Error> {
    // The verbs that only print what the command line is need no repository or cache.
    match &verb {
        Verb::Completions(a) => return cli::completions::run(a),
        Verb::Man(a) => return cli::man::run(a),
        _ => {}
    }
    let paths = util::Paths::from_env()?;
    match verb {
        Verb::Deps => deps::install(&paths),
        Verb::Image(a) => {
            let img = image::ensure_flavor(&paths, a.build.cargo(), a.flavor.flavor())?;
            println!("image ready: {}", img.rootfs.display());
            Ok(())
        }
        Verb::Boot(a) => {
            let boot = a.opts.boot_opts()?;
            let mut img = match a.image {
                Some(dir) => image::Image::open(dir)?,
                None => image::Image::current_flavor(&paths, a.flavor.flavor())?,
            };
            if a.aged {
                img = age::aged(&paths, &img, false)?;
            }
            let res = qemu::boot(&paths, &img, &boot)?;
            if a.json {
                println!("{}", res.to_json());
            } else {
                res.print_text();
            }
            Ok(())
        }
        Verb::Bench(a) => bench::registry::run(&paths, &a.name, &a.request()),
        Verb::Initramfs(a) => initramfs_test::run(&paths, a.cargo()),
        Verb::Faults(a) => faults::run(&paths, a.all, a.case.as_deref(), a.build.cargo()),
        Verb::Soak(a) => {
            if a.config == cli::SOAK_LIST {
                for c in soak::configs() {
                    println!("{}", soak::describe(&c));
                }
                return Ok(());
            }
            let cfg = soak::config(&a.config)?;
            let o = soak::SoakOpts {
                boots: a.boots,
                hold: a.hold,
                until: a.until,
                fresh_copy: a.fresh_copy,
                append: a.append.unwrap_or_default(),
            };
            soak::run(&paths, &cfg, &o, a.build.cargo())
        }
        Verb::StallRepro(a) => {
            let o = stall_repro::ReproOpts {
                flip: !a.no_flip,
                seconds: a.seconds as u64,
            };
            stall_repro::run(&paths, &o, a.build.cargo())
        }
        Verb::Smoke(a) => smoke::run(&paths, a.cargo()),
        Verb::Parity(a) => parity::run(&paths, a.cargo()),
        Verb::Reboot(a) => reboot::run(&paths, a.init.as_deref(), a.build.cargo()),
        Verb::Late(a) => late_test::run(&paths, a.cargo()),
        Verb::SelfOff(a) => selfoff::run(&paths, a.cargo()),
        Verb::Fleet(a) => {
            // The CLI the live machines' textfiles come from (built unless --no-cargo).
            image::host_binaries(&paths, a.build.cargo())?;
            fleet::run(
                &paths,
                fleet::FleetSize {
                    machines: a.machines,
                    live: a.live.min(a.machines),
                    days: a.days as usize,
                },
            )
        }
        Verb::Otlp(a) => {
            image::host_binaries(&paths, a.cargo())?;
            otlp::run(&paths)
        }
        Verb::Package(a) => package_test::run(
            &paths,
            &a.deb,
            a.loader,
            a.generator,
            a.root,
            a.build.cargo(),
        ),
        Verb::Desktop(a) => desktop_test::run(
            &paths,
            a.systemd,
            a.greeter_wait,
            a.login.as_deref(),
            a.build.cargo(),
        ),
        Verb::Verdict(a) => verdict::run(&paths, a.boots, a.build.cargo()),
        Verb::Seekcheck(a) => {
            use clap::ValueEnum;
            for p in qemu::Profile::value_variants() {
                let Some(model) = p.seek_model().filter(|_| !p.is_scaled()) else {
                    continue;
                };
                if a.profile.as_deref().is_some_and(|want| want != p.name()) {
                    continue;
                }
                let dir = util::fresh_dir(&paths.cache.join("runs"))?;
                let rows = seekdisk::seekcheck(&dir, model, a.reads)?;
                seekdisk::print_rows(p.name(), &rows);
                let _ = std::fs::remove_dir_all(&dir);
            }
            Ok(())
        }
        Verb::Cpuscale(a) => cpuscale::run(&paths, a.build.cargo(), a.json),
        Verb::Completions(_) | Verb::Man(_) => Ok(()), // done above
    }
}
