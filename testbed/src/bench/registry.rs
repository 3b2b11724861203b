//! Every benchmark `bench NAME` runs, listed once: its name, what it measures (the command
//! line's choices and their help, and docs/testbed.md's list) and the function that runs it.
//! A new benchmark is one file in bench/ and one line here.

use std::path::PathBuf;

use crate::bench::runner::Benchmark;
use crate::bench::{
    builtins, desktop_bench, fleet_view, irbench, modbench, profiles, rabench, rapages, rc, reboot,
    record, recorder_cost, whole,
};
use crate::vm::image::Flavor;
use crate::vm::qemu::Profile;
use crate::vm::util::{Error, Paths, Result};

/// What `bench NAME` was asked: the command line's options; each benchmark reads those it
/// has.
pub struct Request {
    /// Boots of each variant (`--runs`).
    pub runs: usize,
    /// The drive profile, when given (`--profile`).
    pub profile: Option<Profile>,
    /// Print the result as one JSON object (`--json`).
    pub json: bool,
    /// Build the bootprint binaries first (not `--no-cargo`).
    pub cargo: bool,
    /// Another built image (`--image`, readahead).
    pub image: Option<PathBuf>,
    /// Only this login (`--login`, desktop).
    pub login: Option<String>,
    /// Only these variants besides the baseline (`--variants`, reboot); empty: all.
    pub variants: Vec<String>,
    /// Which image (`--desktop`, `--desktop-systemd`).
    pub flavor: Flavor,
}

impl Request {
    /// The drive profile, `fast` when not given.
    pub fn profile(&self) -> Profile {
        self.profile.unwrap_or(Profile::Fast)
    }

    /// Keeps the baseline (the first variant) and those `--variants` names; all when it
    /// names none. A name the benchmark does not have is a usage error listing its own.
    pub fn select(&self, bench: &mut Benchmark) -> Result<()> {
        if self.variants.is_empty() {
            return Ok(());
        }
        let known: Vec<&str> = bench.variants.iter().map(|v| v.name).collect();
        if let Some(bad) = self.variants.iter().find(|n| !known.contains(&n.as_str())) {
            return Err(Error::Usage(format!(
                "--variants: {bad:?} is not a variant of bench {}: known: {}",
                bench.name,
                known.join(", ")
            )));
        }
        let mut first = true;
        bench.variants.retain(|v| {
            let keep = first || self.variants.iter().any(|n| n == v.name);
            first = false;
            keep
        });
        Ok(())
    }
}

/// One benchmark of the registry.
pub struct Entry {
    /// What it measures, in one line.
    pub about: &'static str,
    /// Runs it.
    pub run: fn(&Paths, &Request) -> Result<()>,
    /// Without `--profile` it runs every drive profile, the time-scaled ones too.
    pub every_profile: bool,
}

/// The registry: every benchmark, by name.
pub const BENCHMARKS: &[(&str, Entry)] = &[
    (
        "record",
        Entry {
            about: "the recorder's cost: boots without it against boots with init=bootprint-boot",
            run: record::bench,
            every_profile: false,
        },
    ),
    (
        "reboot",
        Entry {
            about: "the reboot cycle on the host's clock: Debian's default, systemd, sysvinit + \
                    bootprint's runner, and bootprint reboot --kexec under the runner and systemd",
            run: reboot::bench,
            every_profile: false,
        },
    ),
    (
        "recorder-cost",
        Entry {
            about: "the recorder's own CPU on systemd: as it was (10 Hz, fanotify) against today's",
            run: recorder_cost::bench,
            every_profile: false,
        },
    ),
    (
        "profiles",
        Entry {
            about: "the drive profiles against each other (--profile is the variable, so ignored)",
            run: profiles::bench,
            every_profile: true,
        },
    ),
    (
        "rc",
        Entry {
            about: "service start: startpar, serial, bootprint's runner, systemd (--desktop: on \
                    the desktop image, to the graphical login too)",
            run: rc::bench,
            every_profile: false,
        },
    ),
    (
        "readahead",
        Entry {
            about: "no readahead, learning and replaying boots on the aged image, every drive \
                    profile unless --profile (--image DIR: another built image)",
            run: rabench::bench,
            every_profile: true,
        },
    ),
    (
        "readahead-alone",
        Entry {
            about: "each readahead replay variant alone, from a cold page cache, with nothing \
                    else reading (the learning and relocation boots of readahead only), every \
                    drive profile unless --profile",
            run: rabench::bench_alone,
            every_profile: true,
        },
    ),
    (
        "readahead-pages",
        Entry {
            about: "the readahead learner's page sources: a pack learned with the filemap \
                    tracepoints (Linux 6.10 and later: --release 13) and one learned with \
                    mincore, each replayed, against no readahead",
            run: rapages::bench,
            every_profile: false,
        },
    ),
    (
        "modules",
        Entry {
            about: "the parallel module loader against serial modprobe in the guest, and boots \
                    with bootprint.modules=1",
            run: modbench::bench,
            every_profile: false,
        },
    ),
    (
        "whole",
        Entry {
            about: "every lever on against systemd and Debian's default (--desktop: on the \
                    desktop images)",
            run: whole::bench,
            every_profile: false,
        },
    ),
    (
        "builtins",
        Entry {
            about: "the sysvinit chain: scripts, fsck in the initramfs, built-ins, udev beside, \
                    one graph for S and 2",
            run: builtins::bench,
            every_profile: false,
        },
    ),
    (
        "initramfs",
        Entry {
            about: "bootprint's initramfs against Debian's initramfs-tools, dracut host-only and \
                    tiny-initramfs",
            run: irbench::bench,
            every_profile: false,
        },
    ),
    (
        "fleet-view",
        Entry {
            about: "bootprint fleet over 10,000 boots (1,000 machines' records, 10 planted \
                    regressions) on the host, no VM: median wall time, peak RSS, goal < 10 s",
            run: fleet_view::bench,
            every_profile: false,
        },
    ),
    (
        "desktop",
        Entry {
            about: "the desktop start on the aged desktop image without preload, learning and \
                    prefetching; autologin and the greeter login unless --login",
            run: desktop_bench::bench,
            every_profile: false,
        },
    ),
];

/// The benchmark called `name`.
pub fn find(name: &str) -> Result<&'static Entry> {
    match BENCHMARKS.iter().find(|(n, _)| *n == name) {
        Some((_, entry)) => Ok(entry),
        None => Err(Error::Usage(format!(
            "unknown benchmark {name:?}: known: {}",
            BENCHMARKS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// `bench NAME`: runs the benchmark called `name`.
/// A benchmark that boots a time-scaled profile first has this host's CPU slowdown
/// measured (once per host, kept in the cache: `cpuscale`), so that its drive follows the
/// machine that runs it.
pub fn run(paths: &Paths, name: &str, req: &Request) -> Result<()> {
    let entry = find(name)?;
    if !req.variants.is_empty() && name != "reboot" {
        return Err(Error::Usage(format!(
            "--variants is taken by bench reboot only, not {name}"
        )));
    }
    if req.profile.map_or(entry.every_profile, Profile::is_scaled) {
        let (slowdown, date) = crate::vm::cpuscale::ensure(paths, req.cargo)?;
        eprintln!("bench: the scaled profiles slow their drive {slowdown:.1} times (this host's CPU slowdown, measured {date})");
    }
    (entry.run)(paths, req)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_unknown_ones_a_usage_error() {
        for (i, (name, _)) in BENCHMARKS.iter().enumerate() {
            assert!(BENCHMARKS[..i].iter().all(|(n, _)| n != name), "{name}");
            assert!(find(name).is_ok(), "{name}");
        }
        assert!(matches!(find("nope"), Err(Error::Usage(_))));
    }

    /// `--variants` keeps the baseline and the names given, in the benchmark's order; a
    /// name it does not have is a usage error that lists its own.
    #[test]
    fn variants_keep_the_baseline_and_refuse_unknown_names() {
        let ask = |names: &[&str]| Request {
            runs: 1,
            profile: None,
            json: false,
            cargo: false,
            image: None,
            login: None,
            variants: names.iter().map(|s| s.to_string()).collect(),
            flavor: Flavor::Text,
        };
        let names = |b: &Benchmark| b.variants.iter().map(|v| v.name).collect::<Vec<_>>();
        let mut b = crate::bench::reboot::benchmark(Profile::Fast);
        ask(&["sysv+bp kexec", "sysv+bp"]).select(&mut b).unwrap();
        assert_eq!(names(&b), ["debian", "sysv+bp", "sysv+bp kexec"]);
        let mut b = crate::bench::reboot::benchmark(Profile::Fast);
        ask(&[]).select(&mut b).unwrap();
        assert_eq!(b.variants.len(), 7);
        match ask(&["sysv"]).select(&mut b) {
            Err(Error::Usage(m)) => {
                assert!(m.contains("\"sysv\"") && m.contains("known: debian"), "{m}")
            }
            other => panic!("{:?}", other.err()),
        }
    }

    /// docs/testbed.md's list of benchmarks is this registry.
    #[test]
    fn the_docs_list_every_benchmark() {
        let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/testbed.md");
        let text = std::fs::read_to_string(docs).unwrap();
        for (name, _) in BENCHMARKS {
            assert!(
                text.contains(&format!("| `{name}` |")),
                "{name} missing in {docs}"
            );
        }
    }
}
