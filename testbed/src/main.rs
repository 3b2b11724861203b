//! `bootprint-testbed`: builds a Debian 12 image, boots it under QEMU (TCG), measures the
//! boot, runs benchmarks and the real-boot smoke test. See docs/testbed.md.
//!
//! This file only parses arguments and dispatches; each verb lives in its own module.

mod age;
mod bench;
mod checks;
mod deps;
mod faults;
mod image;
mod initramfs_test;
mod irbench;
mod late_test;
mod modbench;
mod modcheck;
mod parity;
mod qemu;
mod rabench;
mod serial;
mod smoke;
mod soak;
mod stall_repro;
mod util;
mod verdict;

use std::process::ExitCode;

use util::Error;

const USAGE: &str = "\
usage: bootprint-testbed <command> [options]

commands:
  deps      install the host packages the test bed needs (idempotent)
  image     build the Debian 12 image (cached) and install the current bootprint binaries
            [--no-cargo]  do not run `cargo build --release` first
            [--desktop]   the desktop image: the text one plus Xorg and LightDM (elogind)
            [--desktop-systemd]  the same desktop with systemd as init
  boot      boot the image once under QEMU and measure it
            [--profile fast|sd|hdd] [--append 'KERNEL ARGS'] [--record]
            [--trace-out DIR] [--keep-disk] [--disk-from DISK] [--image DIR] [--aged]
            [--desktop] [--json] [--guest-script FILE: run as root after login, output
            in the run directory's guest.out]
            [--initrd FILE: boot with this initramfs instead of the image's]
            [--sync-disk: fsync the disk copy before QEMU starts]
  bench     run a benchmark: NAME [--runs N] [--profile P] [--json] [--no-cargo] [--desktop]
            benchmarks: record (recorder cost), profiles (fast/sd/hdd drives),
            rc (service start), readahead (aged image; all profiles unless --profile;
            --image DIR: another built image), modules (parallel module loader vs
            serial modprobe in the guest, and boots with bootprint.modules=1),
            whole (every lever on against systemd and Debian's default), builtins
            (the sysvinit chain: scripts, fsck in the initramfs, built-ins, udev beside,
            one graph for S and 2)
  smoke     real-boot smoke test: boot with --record, check the trace and the report
            [--no-cargo]
  faults    the fault matrix: real boots with one thing broken on purpose, each must reach
            `login:` with a readable trace (or a clear reason why not): the cheap cases,
            [--all] every case, [--case NAME] one [--no-cargo]
  soak      boot one boot-path configuration many times in a row and count the boots that
            never reach the real init (or the login): CONFIG [--boots N] [--hold]
            [--until init|login] [--fresh-copy: each boot from a fresh fsynced disk
            copy, as the tests boot, instead of snapshot=on] [--append ARGS: more kernel
            arguments, e.g. bootprint.delayacct=1] [--no-cargo]; a hang is diagnosed
            (registers, SysRq) before QEMU stops, a boot whose kernel reported a stall on
            the way counts as failed; --hold leaves the first hung guest running. CONFIG
            `list` lists the configurations
  stall-repro
            the guest-kernel stall behind issue 14's hangs, on demand: flip
            kernel.task_delayacct for [--seconds N (default 120)] while two processes
            take copy-on-write faults; stops at the guest's first stall report [--no-flip:
            the control, the same load reading the switch] [--no-cargo]
  late      systemd late units (docs/systemd.md): a learning boot, a boot that defers what
            it learned, systemd's own boot and one with a bad state file; the machine after
            boot done must be the same in all [--no-cargo]
  parity    Debian's own sysvinit boot against one with every sysvinit lever of bootprint
            (its initramfs, runner, module loader, readahead): the machine after boot done
            must be the same [--no-cargo]
  verdict   a lever judging itself: boot again and again from the disk the last boot left,
            every sysvinit lever on, and show what the module loader and readahead did on
            each boot and what they concluded [--boots N (default 11)] [--no-cargo]
  initramfs bootprint's initramfs: build it in the guest, boot with it to login, and a
            wrong root= must stop cleanly [--no-cargo] (bench initramfs: against
            Debian's initramfs-tools, dracut host-only and tiny-initramfs)

environment:
  BOOTPRINT_TESTBED_CACHE   cache directory (default <repo>/testbed/cache)

exit codes: 0 ok, 1 failure, 2 usage
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
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

fn run(args: &[String]) -> Result<(), Error> {
    let Some(cmd) = args.first() else {
        return Err(Error::Usage("missing command".into()));
    };
    let mut opts = util::Args::new(&args[1..]);
    if cmd == "--help" || cmd == "-h" || cmd == "help" || opts.flag("--help") || opts.flag("-h") {
        print!("{USAGE}");
        return Ok(());
    }
    let paths = util::Paths::from_env()?;
    match cmd.as_str() {
        "deps" => {
            opts.finish()?;
            deps::install(&paths)
        }
        "image" => {
            let cargo = !opts.flag("--no-cargo");
            let flavor = flavor_flag(&mut opts);
            opts.finish()?;
            let img = image::ensure_flavor(&paths, cargo, flavor)?;
            println!("image ready: {}", img.rootfs.display());
            Ok(())
        }
        "boot" => {
            let boot = qemu::BootOpts::parse(&mut opts)?;
            let json = opts.flag("--json");
            let image_dir = opts.value("--image")?;
            let aged = opts.flag("--aged");
            let flavor = flavor_flag(&mut opts);
            opts.finish()?;
            let mut img = match image_dir {
                Some(dir) => image::Image::open(std::path::PathBuf::from(dir))?,
                None => image::Image::current_flavor(&paths, flavor)?,
            };
            if aged {
                img = age::aged(&paths, &img, false)?;
            }
            let res = qemu::boot(&paths, &img, &boot)?;
            if json {
                println!("{}", res.to_json());
            } else {
                res.print_text();
            }
            Ok(())
        }
        "bench" => {
            let name = opts
                .positional()
                .ok_or_else(|| Error::Usage("bench needs a NAME".into()))?;
            let runs = opts.positive("--runs")?.unwrap_or(3);
            let given_profile = match opts.value("--profile")? {
                Some(p) => Some(qemu::Profile::parse(&p)?),
                None => None,
            };
            let profile = given_profile.unwrap_or(qemu::Profile::Fast);
            let json = opts.flag("--json");
            let cargo = !opts.flag("--no-cargo");
            let image_dir = opts.value("--image")?;
            let flavor = flavor_flag(&mut opts);
            opts.finish()?;
            if name == "initramfs" {
                return irbench::run(&paths, runs, cargo);
            }
            if name == "modules" {
                // --runs: whole boots of each kind; in-guest rounds at least 5.
                return modbench::run(&paths, runs, runs.max(5), cargo);
            }
            if name == "readahead" {
                let profiles = match given_profile {
                    Some(p) => vec![p],
                    None => vec![qemu::Profile::Fast, qemu::Profile::Sd, qemu::Profile::Hdd],
                };
                let base = image_dir
                    .map(|d| image::Image::open(std::path::PathBuf::from(d)))
                    .transpose()?;
                return rabench::run(&paths, runs, &profiles, json, cargo, base);
            }
            bench::run(&paths, &name, runs, profile, json, cargo, flavor)
        }
        "initramfs" => {
            let cargo = !opts.flag("--no-cargo");
            opts.finish()?;
            initramfs_test::run(&paths, cargo)
        }
        "faults" => {
            let all = opts.flag("--all");
            let case = opts.value("--case")?;
            let cargo = !opts.flag("--no-cargo");
            opts.finish()?;
            faults::run(&paths, all, case.as_deref(), cargo)
        }
        "soak" => {
            let name = opts
                .positional()
                .ok_or_else(|| Error::Usage("soak needs a CONFIG (or `list`)".into()))?;
            if name == "list" {
                opts.finish()?;
                for c in soak::configs() {
                    println!("{}", soak::describe(&c));
                }
                return Ok(());
            }
            let cfg = soak::config(&name)?;
            let boots = opts.positive("--boots")?.unwrap_or(30);
            let until = match opts.value("--until")?.as_deref() {
                None => None,
                Some("init") => Some(soak::Until::Init),
                Some("login") => Some(soak::Until::Login),
                Some(other) => {
                    return Err(Error::Usage(format!(
                        "--until: expected init or login, got {other:?}"
                    )))
                }
            };
            let hold = opts.flag("--hold");
            let fresh_copy = opts.flag("--fresh-copy");
            let append = opts.value("--append")?.unwrap_or_default();
            let cargo = !opts.flag("--no-cargo");
            opts.finish()?;
            let o = soak::SoakOpts {
                boots,
                hold,
                until,
                fresh_copy,
                append,
            };
            soak::run(&paths, &cfg, &o, cargo)
        }
        "stall-repro" => {
            let flip = !opts.flag("--no-flip");
            let seconds = opts.positive("--seconds")?.unwrap_or(120) as u64;
            let cargo = !opts.flag("--no-cargo");
            opts.finish()?;
            stall_repro::run(&paths, &stall_repro::ReproOpts { flip, seconds }, cargo)
        }
        "smoke" => {
            let cargo = !opts.flag("--no-cargo");
            opts.finish()?;
            smoke::run(&paths, cargo)
        }
        "parity" => {
            let cargo = !opts.flag("--no-cargo");
            opts.finish()?;
            parity::run(&paths, cargo)
        }
        "late" => {
            let cargo = !opts.flag("--no-cargo");
            opts.finish()?;
            late_test::run(&paths, cargo)
        }
        "verdict" => {
            let boots = opts.positive("--boots")?.unwrap_or(11);
            let cargo = !opts.flag("--no-cargo");
            opts.finish()?;
            verdict::run(&paths, boots, cargo)
        }
        other => Err(Error::Usage(format!("unknown command {other:?}"))),
    }
}

/// `--desktop`: the image with Xorg and LightDM instead of the text one;
/// `--desktop-systemd`: the same with systemd as init (Debian's default).
fn flavor_flag(opts: &mut util::Args) -> image::Flavor {
    if opts.flag("--desktop-systemd") {
        image::Flavor::DesktopSystemd
    } else if opts.flag("--desktop") {
        image::Flavor::Desktop
    } else {
        image::Flavor::Text
    }
}
