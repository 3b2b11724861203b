//! `bootprint-testbed`: builds a Debian 12 image, boots it under QEMU (TCG), measures the
//! boot, runs benchmarks and the real-boot smoke test. See docs/testbed.md.
//!
//! This file only parses the command line (defined once in `cli`), dispatches to the verb's
//! module and turns the outcome into an exit code: 0 ok, 1 failure, 2 usage (clap's, for a
//! wrong command line).

mod age;
mod bench;
mod checks;
mod cli;
mod completions;
mod cpuscale;
mod deps;
mod desktop_bench;
mod desktop_session;
mod desktop_test;
mod faults;
mod figures;
mod grub_disk;
mod image;
mod initramfs_test;
mod irbench;
mod late_test;
mod man;
mod modbench;
mod modcheck;
mod package_test;
mod parity;
mod qemu;
mod rabench;
mod seekdisk;
mod seekmodel;
mod serial;
mod smoke;
mod soak;
mod stall_repro;
mod util;
mod verdict;

use std::process::ExitCode;

use cli::Verb;
use util::Error;

fn main() -> ExitCode {
    // Help and version print and exit 0; a wrong command line prints the error with the
    // verb's usage and exits 2.
    let cli = cli::parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit());
    match run(cli.verb) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Usage(msg)) => {
            eprintln!("bootprint-testbed: {msg} (see `bootprint-testbed --help`)");
            ExitCode::from(2)
        }
        Err(Error::Failed(msg)) => {
            eprintln!("bootprint-testbed: error: {msg}");
            ExitCode::from(1)
        }
    }
}

fn run(verb: Verb) -> Result<(), Error> {
    // The verbs that only print what the command line is need no repository or cache.
    match &verb {
        Verb::Completions(a) => return completions::run(a),
        Verb::Man(a) => return man::run(a),
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
            let boot = qemu::BootOpts::from_args(&a.opts)?;
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
        Verb::Bench(a) => {
            let (runs, cargo) = (a.runs, a.build.cargo());
            match a.name.as_str() {
                "initramfs" => irbench::run(&paths, runs, cargo),
                "desktop" => desktop_bench::run(
                    &paths,
                    runs,
                    a.profile.unwrap_or(qemu::Profile::Fast),
                    a.login.as_deref(),
                    desktop_session::GREETER_WAIT_S,
                    a.json,
                    cargo,
                ),
                // --runs: whole boots of each kind; in-guest rounds at least 5.
                "modules" => modbench::run(&paths, runs, runs.max(5), cargo),
                "readahead" | "readahead-alone" => {
                    let profiles = match a.profile {
                        Some(p) => vec![p],
                        None => {
                            use clap::ValueEnum;
                            qemu::Profile::value_variants().to_vec()
                        }
                    };
                    let base = a.image.map(image::Image::open).transpose()?;
                    if a.name == "readahead" {
                        rabench::run(&paths, runs, &profiles, a.json, cargo, base)
                    } else {
                        rabench::run_alone(&paths, &profiles, a.json, cargo, base)
                    }
                }
                name => {
                    let profile = a.profile.unwrap_or(qemu::Profile::Fast);
                    bench::run(
                        &paths,
                        name,
                        runs,
                        profile,
                        a.json,
                        cargo,
                        a.flavor.flavor(),
                    )
                }
            }
        }
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
        Verb::Late(a) => late_test::run(&paths, a.cargo()),
        Verb::Package(a) => package_test::run(&paths, &a.deb, a.build.cargo()),
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
