//! `bench`: boots variants of the image interleaved (A B A B ...) after one discarded warm-up
//! boot, and compares medians. A benchmark is a list of variants (name, boot options, extra
//! figures), so later benchmarks (readahead, rc, modules) add a list, not code paths.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::bench::figures::{event_seconds, milestone_figures, recorder_stats};
use crate::vm::image;
use crate::vm::qemu::{self, round3, BootOpts, BootResult, Profile};
use crate::vm::util::{io_err, median, today, Error, Paths, Result};

/// Figures of one run, by name; `None` when a figure could not be measured.
pub type Figures = BTreeMap<String, Option<f64>>;

/// One variant of a benchmark.
pub struct Variant {
    pub name: &'static str,
    pub opts: BootOpts,
    /// Figures beyond the boot's own (host_login_s, firmware_load_s).
    pub extra: fn(&BootResult) -> Figures,
    /// Booted on this image instead of the benchmark's (the systemd reference of the
    /// desktop image, which cannot share one image with sysvinit).
    pub image: Option<image::Image>,
}

pub struct Benchmark {
    pub name: &'static str,
    pub about: &'static str,
    /// The first variant is the baseline the ratios are against.
    pub variants: Vec<Variant>,
    /// When set, the warm-up boot is of this variant, keeps its disk, and every measured
    /// boot starts from a copy of that disk: a machine that has booted before, so state
    /// learned on a boot (the rc runner's durations) is there, the same for every variant.
    pub seasoned_by: Option<usize>,
    /// Every variant is seasoned by a boot of its own (its own learned state: a readahead
    /// pack, late units, durations), and its measured boots start from copies of that disk.
    pub season_each: bool,
}

/// The figure the ratios compare.
pub const PRIMARY: &str = "host_login_s";

fn no_extra(_: &BootResult) -> Figures {
    Figures::new()
}

fn recorder_figures(r: &BootResult) -> Figures {
    let mut f = Figures::new();
    let stats = trace_file(r, "events.log").and_then(|t| recorder_stats(&t));
    f.insert(
        "recorder_cpu_s".into(),
        stats.as_ref().and_then(|s| s.get("cpu_s").copied()),
    );
    f.insert(
        "recorder_maxrss_kb".into(),
        stats.as_ref().and_then(|s| s.get("maxrss_kb").copied()),
    );
    f
}

/// Guest figures from the run's events.log: the text-login milestone and boot done, in
/// seconds of CLOCK_BOOTTIME.
fn rc_figures(r: &BootResult) -> Figures {
    let events = trace_file(r, "events.log").unwrap_or_default();
    let mut f = milestone_figures(&events);
    // The runner's own marks, when the recorder copied its span log into the trace (only
    // the bootprint-rc variant has one): runlevel 2's login path done, and all of it done.
    let rc_log = trace_file(r, "rc.log");
    if let Some(rc_log) = rc_log {
        f.insert(
            "rc_reached_s".into(),
            event_seconds(&rc_log, "rc_reached", Some("runlevel=2")),
        );
        f.insert(
            "rc_done_s".into(),
            event_seconds(&rc_log, "rc_done", Some("runlevel=2")),
        );
    }
    f
}

/// A file of the boot's trace, when it has a trace and the file.
pub fn trace_file(r: &BootResult, name: &str) -> Option<String> {
    r.trace_dir
        .as_ref()
        .and_then(|d| fs::read_to_string(d.join(name)).ok())
}

/// Guest figures of a whole boot: the milestones (text login, graphical login, boot done)
/// and what the recorder cost (its CPU seconds and share of the boot's CPU).
fn whole_figures(r: &BootResult) -> Figures {
    let events = trace_file(r, "events.log").unwrap_or_default();
    let mut f = milestone_figures(&events);
    let stats = recorder_stats(&events);
    for (key, stat) in [
        ("recorder_cpu_s", "cpu_s"),
        ("recorder_share_pct", "share_pct"),
    ] {
        f.insert(
            key.into(),
            stats.as_ref().and_then(|s| s.get(stat).copied()),
        );
    }
    f
}

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
                let mut v = recorded(name, profile, append, whole_figures);
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

/// A variant whose boots are recorded (`init=bootprint-boot`), with `append` after the base
/// kernel arguments; `extra` reads its figures.
fn recorded(
    name: &'static str,
    profile: Profile,
    append: String,
    extra: fn(&BootResult) -> Figures,
) -> Variant {
    let mut opts = BootOpts::new(profile);
    opts.append = append;
    opts.record = true;
    Variant {
        name,
        opts,
        extra,
        image: None,
    }
}

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

/// Every benchmark `bench NAME` runs, with what it measures: the command line's choices and
/// their help. [`benchmark`] builds record, recorder-cost, profiles and rc; [`run`] whole and
/// builtins; main.rs sends readahead, modules and initramfs to their own modules.
pub const BENCHMARKS: &[(&str, &str)] = &[
    (
        "record",
        "the recorder's cost: boots without it against boots with init=bootprint-boot",
    ),
    (
        "recorder-cost",
        "the recorder's own CPU on systemd: as it was (10 Hz, fanotify) against today's",
    ),
    (
        "profiles",
        "the drive profiles against each other (--profile is the variable, so ignored)",
    ),
    (
        "rc",
        "service start: startpar, serial, bootprint's runner, systemd (--desktop: on the \
         desktop image, to the graphical login too)",
    ),
    (
        "readahead",
        "no readahead, learning and replaying boots on the aged image, every drive profile \
         unless --profile (--image DIR: another built image)",
    ),
    (
        "readahead-alone",
        "each readahead replay variant alone, from a cold page cache, with nothing else \
         reading (the learning and relocation boots of readahead only), every drive profile \
         unless --profile",
    ),
    (
        "modules",
        "the parallel module loader against serial modprobe in the guest, and boots with \
         bootprint.modules=1",
    ),
    (
        "whole",
        "every lever on against systemd and Debian's default (--desktop: on the desktop images)",
    ),
    (
        "builtins",
        "the sysvinit chain: scripts, fsck in the initramfs, built-ins, udev beside, one \
         graph for S and 2",
    ),
    (
        "initramfs",
        "bootprint's initramfs against Debian's initramfs-tools, dracut host-only and \
         tiny-initramfs",
    ),
    (
        "desktop",
        "the desktop start on the aged desktop image without preload, learning and \
         prefetching; autologin and the greeter login unless --login",
    ),
];

/// The benchmarks of [`BENCHMARKS`] that are lists of variants, by name.
pub fn benchmark(name: &str, profile: Profile) -> Result<Benchmark> {
    match name {
        "record" => Ok(Benchmark {
            name: "record",
            about: "cost of recording a boot: no recorder against init=bootprint-boot",
            seasoned_by: None,
            season_each: false,
            variants: vec![
                Variant {
                    name: "baseline",
                    opts: BootOpts::new(profile),
                    extra: no_extra,
                    image: None,
                },
                recorded("record", profile, String::new(), recorder_figures),
            ],
        }),
        // What the recorder costs (issue 15 part 6), on systemd, every boot recorded; the
        // figures are recorder_stats'. First the recorder as it was before 2026-11-26's
        // changes (10 Hz, fanotify exec events, /proc listed at every fork, its parts
        // timed), then today's at that rate, then at its default rate.
        "recorder-cost" => Ok(Benchmark {
            name: "recorder-cost",
            about: "the recorder's own CPU: as it was (10 Hz, fanotify, parts timed) against \
                    today's at 10 Hz and at the default rate",
            seasoned_by: None,
            season_each: false,
            variants: [
                (
                    "as-was-10hz",
                    "bootprint.hz=10 bootprint.exec_events=fanotify bootprint.cost_detail=1",
                ),
                ("now-10hz", "bootprint.hz=10"),
                ("now", ""),
            ]
            .into_iter()
            .map(|(name, extra)| {
                let append = format!("bootprint.init=/lib/systemd/systemd {extra}");
                recorded(name, profile, append, whole_figures)
            })
            .collect(),
        }),
        // The drive profiles against each other (`--profile` is ignored: it is the variable).
        "profiles" => Ok(Benchmark {
            seasoned_by: None,
            season_each: false,
            name: "profiles",
            about: "the drive profiles: fast against sd and hdd throttling",
            variants: [
                ("fast", Profile::Fast),
                ("sd", Profile::Sd),
                ("hdd", Profile::Hdd),
            ]
            .into_iter()
            .map(|(name, p)| Variant {
                name,
                opts: BootOpts::new(p),
                extra: no_extra,
                image: None,
            })
            .collect(),
        }),
        // Service start (issue 4): Debian's startpar, serial, bootprint's runner, systemd.
        // All recorded (init=bootprint-boot) so each run has boot_done and text_login from
        // its own trace; the variants differ only in the kernel command line.
        // The desktop image is the same benchmark with a graphical login (`--desktop`).
        // Seasoned by a bootprint-rc boot: the runner orders by durations it learned then.
        "rc" => Ok(Benchmark {
            name: "rc",
            about: "LSB service start: startpar against concurrency=none, bootprint rc and systemd",
            seasoned_by: Some(2),
            season_each: false,
            variants: [
                ("startpar", ""),
                ("serial", "concurrency=none"),
                ("bootprint-rc", "bootprint.rc=1"),
                ("systemd", "bootprint.init=/lib/systemd/systemd"),
            ]
            .into_iter()
            .map(|(name, append)| recorded(name, profile, append.to_string(), rc_figures))
            .collect(),
        }),
        _ => Err(Error::Usage(format!(
            "unknown benchmark {name:?}: known: {}",
            BENCHMARKS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// One run: its figures, or why it failed.
pub struct Run {
    pub figures: Figures,
    pub detail: Value,
}

/// Medians per figure, and the primary figure's median over the baseline's.
pub fn summarize(variants: &[(String, Vec<Figures>)]) -> Vec<(String, Figures, Option<f64>)> {
    let mut out = vec![];
    let mut base: Option<f64> = None;
    for (i, (name, runs)) in variants.iter().enumerate() {
        let mut keys: Vec<&String> = runs.iter().flat_map(|r| r.keys()).collect();
        keys.sort();
        keys.dedup();
        let mut med = Figures::new();
        for k in keys {
            let vals: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.get(k).copied().flatten())
                .collect();
            med.insert(k.clone(), median(&vals));
        }
        let primary = med.get(PRIMARY).copied().flatten();
        if i == 0 {
            base = primary;
        }
        let ratio = match (primary, base) {
            (Some(p), Some(b)) if b > 0.0 => Some(p / b),
            _ => None,
        };
        out.push((name.clone(), med, ratio));
    }
    out
}

/// Every guest milestone's median over the baseline's, one row per variant (the primary
/// ratio in [`table`] is the host's time to `login:`).
pub fn ratio_table(summary: &[(String, Figures, Option<f64>)]) -> String {
    const MILESTONES: [&str; 5] = [
        "text_login_s",
        "graphical_login_s",
        "boot_done_s",
        "desktop_start_s",
        "greeter_to_desktop_s",
    ];
    let Some((base_name, base, _)) = summary.first() else {
        return String::new();
    };
    let cols: Vec<&str> = MILESTONES
        .into_iter()
        .filter(|k| base.get(*k).copied().flatten().is_some())
        .collect();
    if cols.is_empty() {
        return String::new();
    }
    let mut s = format!("ratios to {base_name}:\n{:<12}", "variant");
    for c in &cols {
        s.push_str(&format!(" {c:>17}"));
    }
    s.push('\n');
    for (name, med, _) in summary {
        s.push_str(&format!("{name:<12}"));
        for c in &cols {
            let r = match (
                med.get(*c).copied().flatten(),
                base.get(*c).copied().flatten(),
            ) {
                (Some(x), Some(b)) if b > 0.0 => format!("{:.3}", x / b),
                _ => "-".into(),
            };
            s.push_str(&format!(" {r:>17}"));
        }
        s.push('\n');
    }
    s
}

/// The table of medians, one row per variant, one column per figure.
pub fn table(summary: &[(String, Figures, Option<f64>)], runs: &[usize]) -> String {
    let mut cols: Vec<String> = vec![PRIMARY.to_string()];
    for (_, med, _) in summary {
        for k in med.keys() {
            if !cols.contains(k) {
                cols.push(k.clone());
            }
        }
    }
    let mut s = format!("{:<12} {:>4} {:>7}", "variant", "runs", "ratio");
    for c in &cols {
        s.push_str(&format!(" {:>w$}", c, w = c.len().max(8)));
    }
    s.push('\n');
    for (i, (name, med, ratio)) in summary.iter().enumerate() {
        s.push_str(&format!(
            "{:<12} {:>4} {:>7}",
            name,
            runs.get(i).copied().unwrap_or(0),
            ratio
                .map(|r| format!("{r:.3}"))
                .unwrap_or_else(|| "-".into())
        ));
        for c in &cols {
            let v = med.get(c).copied().flatten();
            let text = match v {
                Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
                Some(x) => format!("{x:.3}"),
                None => "-".into(),
            };
            s.push_str(&format!(" {:>w$}", text, w = c.len().max(8)));
        }
        s.push('\n');
    }
    s
}

/// The guest kernel's stall report in a run's serial log, if any ([`serial::kernel_stall`]).
fn stall_of(r: &BootResult) -> Option<String> {
    let log = std::fs::read(&r.serial_log).ok()?;
    crate::vm::serial::kernel_stall(&String::from_utf8_lossy(&log))
}

fn one_run(paths: &Paths, img: &image::Image, v: &Variant) -> Run {
    match qemu::boot(paths, img, &v.opts) {
        Ok(r) if stall_of(&r).is_some() => {
            let stall = stall_of(&r).unwrap_or_default();
            let mut detail = r.to_json();
            detail["error"] = json!(format!("the guest kernel stalled: {stall}"));
            Run {
                figures: Figures::new(),
                detail,
            }
        }
        Ok(r) => {
            let mut figures = Figures::new();
            figures.insert("host_login_s".into(), Some(round3(r.host_login_s)));
            figures.insert("firmware_load_s".into(), r.firmware_load_s.map(round3));
            figures.extend((v.extra)(&r));
            let mut detail = r.to_json();
            detail["figures"] = json!(figures);
            Run { figures, detail }
        }
        Err(e) => Run {
            figures: Figures::new(),
            detail: json!({ "error": e.to_string() }),
        },
    }
}

pub fn run(
    paths: &Paths,
    name: &str,
    runs: usize,
    profile: Profile,
    as_json: bool,
    cargo: bool,
    flavor: image::Flavor,
) -> Result<()> {
    if name == "whole" {
        let desktop = flavor != image::Flavor::Text;
        let flavor = if desktop {
            image::Flavor::Desktop
        } else {
            image::Flavor::Text
        };
        let img = image::ensure_flavor(paths, cargo, flavor)?;
        let systemd = desktop
            .then(|| image::ensure_flavor(paths, cargo, image::Flavor::DesktopSystemd))
            .transpose()?;
        let ours = crate::vm::initramfs::ensure_ours(paths, &img)?;
        let ours_systemd = match &systemd {
            Some(sd) => crate::vm::initramfs::ensure_ours(paths, sd)?,
            None => ours.clone(),
        };
        let mut bench = whole(profile, systemd, ours, ours_systemd);
        if desktop {
            bench.name = "whole-desktop";
        }
        return run_built(paths, &img, &bench, runs, profile, as_json);
    }
    if name == "builtins" {
        let img = image::ensure_flavor(paths, cargo, image::Flavor::Text)?;
        let ours = crate::vm::initramfs::ensure_ours(paths, &img)?;
        return run_built(
            paths,
            &img,
            &builtins(profile, ours),
            runs,
            profile,
            as_json,
        );
    }
    let mut bench = benchmark(name, profile)?;
    if flavor == image::Flavor::Desktop {
        // Its own result file: the figures are not comparable with the text image's.
        bench.name = match bench.name {
            "rc" => "rc-desktop",
            "record" => "record-desktop",
            _ => "profiles-desktop",
        };
    }
    let img = image::ensure_flavor(paths, cargo, flavor)?;
    if flavor == image::Flavor::Desktop && name == "rc" {
        // elogind (for LightDM under sysvinit) removes systemd from the desktop image: the
        // systemd reference boots the same desktop installed Debian's default way.
        let systemd = image::ensure_flavor(paths, false, image::Flavor::DesktopSystemd)?;
        for v in bench.variants.iter_mut().filter(|v| v.name == "systemd") {
            v.opts.append.clear(); // /sbin/init is systemd there
            v.image = Some(systemd.clone());
        }
    }
    run_built(paths, &img, &bench, runs, profile, as_json)
}

/// Runs a benchmark already built, on `img`: one discarded warm-up boot of the first
/// variant, then the variants interleaved for `runs` rounds; prints the table and writes the
/// result file.
pub fn run_built(
    paths: &Paths,
    img: &image::Image,
    bench: &Benchmark,
    runs: usize,
    profile: Profile,
    as_json: bool,
) -> Result<()> {
    // A benchmark whose variants differ in drive profile ignores --profile.
    let one_profile = bench.variants.iter().all(|v| v.opts.profile == profile);
    let profile_name = if one_profile {
        profile.name()
    } else {
        "per variant"
    };
    eprintln!(
        "bench {}: {} variants x {runs} runs, profile {profile_name}, interleaved, after 1 warm-up boot",
        bench.name,
        bench.variants.len(),
    );
    // Seasoning: one kept-disk boot per image (the seasoning variant's on the main image;
    // on another image, its own variant's), whose disk that image's runs start from.
    let mut warm = json!(null);
    let mut disks: Vec<Option<PathBuf>> = vec![None; bench.variants.len()];
    let mut kept: Vec<PathBuf> = vec![];
    let season_main = bench.seasoned_by.unwrap_or(0);
    for (i, v) in bench.variants.iter().enumerate() {
        let main_image = v.image.is_none();
        let keep = bench.seasoned_by.is_some() || bench.season_each;
        if !bench.season_each && i != season_main && (main_image || bench.seasoned_by.is_none()) {
            continue;
        }
        let mut opts = v.opts.clone();
        opts.keep_disk = keep;
        let on = v.image.as_ref().unwrap_or(img);
        let (detail, disk) = match qemu::boot(paths, on, &opts) {
            Ok(r) => (r.to_json(), r.kept_disk()),
            Err(e) => (json!({ "error": e.to_string() }), None),
        };
        eprintln!("bench: warm-up {} (discarded): {detail}", v.name);
        if i == season_main {
            warm = detail.clone();
        }
        if bench.season_each {
            let Some(disk) = disk else {
                return Err(Error::fail(format!(
                    "bench {}: the seasoning boot of {} kept no disk: {detail}",
                    bench.name, v.name
                )));
            };
            disks[i] = Some(disk.clone());
            kept.push(disk);
        } else if bench.seasoned_by.is_some() {
            let Some(disk) = disk else {
                return Err(Error::fail(format!(
                    "bench {}: the seasoning boot ({}) kept no disk: {detail}",
                    bench.name, v.name
                )));
            };
            for (j, w) in bench.variants.iter().enumerate() {
                let same = match (&w.image, &v.image) {
                    (None, None) => true,
                    (Some(a), Some(b)) => a.dir == b.dir,
                    _ => false,
                };
                if same {
                    disks[j] = Some(disk.clone());
                }
            }
            kept.push(disk);
        }
    }
    let variants: Vec<Variant> = bench
        .variants
        .iter()
        .zip(&disks)
        .map(|(v, disk)| {
            let mut opts = v.opts.clone();
            if disk.is_some() {
                opts.disk_from = disk.clone();
            }
            Variant {
                name: v.name,
                opts,
                extra: v.extra,
                image: v.image.clone(),
            }
        })
        .collect();
    let bench = Benchmark {
        name: bench.name,
        about: bench.about,
        variants,
        seasoned_by: bench.seasoned_by,
        season_each: bench.season_each,
    };
    let bench = &bench;
    let mut results: Vec<Vec<Run>> = bench.variants.iter().map(|_| vec![]).collect();
    for round in 0..runs {
        for (i, v) in bench.variants.iter().enumerate() {
            let r = one_run(paths, v.image.as_ref().unwrap_or(img), v);
            eprintln!(
                "bench: round {} {}: {}",
                round + 1,
                v.name,
                json!(r.figures)
            );
            if let Some(e) = r.detail.get("error") {
                eprintln!("bench: round {} {} FAILED: {}", round + 1, v.name, e);
            }
            results[i].push(r);
        }
    }
    for d in &kept {
        let _ = fs::remove_file(d);
    }
    let figs: Vec<(String, Vec<Figures>)> = bench
        .variants
        .iter()
        .zip(&results)
        .map(|(v, rs)| {
            (
                v.name.to_string(),
                rs.iter()
                    .filter(|r| !r.figures.is_empty())
                    .map(|r| r.figures.clone())
                    .collect(),
            )
        })
        .collect();
    let summary = summarize(&figs);
    let counts: Vec<usize> = figs.iter().map(|(_, r)| r.len()).collect();
    let failed: usize = results
        .iter()
        .flatten()
        .filter(|r| r.figures.is_empty())
        .count();

    let variants_json: Vec<Value> = bench
        .variants
        .iter()
        .zip(&results)
        .zip(&summary)
        .map(|((v, rs), (_, med, ratio))| {
            let maxes: Figures = med
                .keys()
                .map(|k| {
                    let vals = rs
                        .iter()
                        .filter_map(|r| r.figures.get(k).copied().flatten());
                    (
                        k.clone(),
                        vals.fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x)))),
                    )
                })
                .collect();
            json!({
                "name": v.name,
                "profile": v.opts.profile.name(),
                "cmdline": v.opts.cmdline(),
                "initrd": v.opts.initrd.as_deref().map(crate::vm::util::shown_path),
                "median": med,
                "max": maxes,
                "ratio_host_login_s": ratio.map(|r| (r * 10000.0).round() / 10000.0),
                "runs": rs.iter().map(|r| r.detail.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let doc = json!({
        "benchmark": bench.name,
        "about": bench.about,
        "date": today(),
        "host": host_facts(),
        "profile": profile_name,
        "runs_per_variant": runs,
        "order": match bench.seasoned_by {
            _ if bench.season_each => "one warm-up boot of each variant, whose disk its measured boots start from (fsynced copies), then variants interleaved per round".to_string(),
            Some(i) => format!("one warm-up boot of {} whose disk every measured boot starts from, then variants interleaved per round", bench.variants[i].name),
            None => "one discarded warm-up boot of the baseline, then variants interleaved per round".to_string(),
        },
        "baseline": bench.variants[0].name,
        "failed_runs": failed,
        "warmup": warm,
        "variants": variants_json,
    });
    let file = write_result(
        &paths.repo.join("testbed/results"),
        bench.name,
        Some(profile).filter(|_| one_profile),
        &doc,
    )?;
    if as_json {
        println!("{doc}");
    } else {
        print!("{}", table(&summary, &counts));
        print!("{}", ratio_table(&summary));
        if let Some((_, med, _)) = summary.iter().find(|(n, _, _)| n == "record") {
            if let Some(Some(cpu)) = med.get("recorder_cpu_s") {
                println!("recorder: median {cpu:.3} s CPU per boot");
            }
        }
        if let Some(peak) = variants_json
            .iter()
            .filter_map(|v| v["max"]["recorder_maxrss_kb"].as_f64())
            .reduce(f64::max)
        {
            println!("recorder: peak memory {peak:.0} kB (max RSS)");
        }
        println!("result: {}", file.display());
    }
    if failed > 0 {
        return Err(Error::fail(format!(
            "{failed} boot(s) failed; see {}",
            file.display()
        )));
    }
    Ok(())
}

/// The host's CPU model and count, and the accelerator (for result files).
pub fn host_facts() -> Value {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default();
    let ncpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    json!({ "cpu": cpu, "ncpus": ncpus, "accel": "tcg" })
}

pub fn write_result(
    dir: &Path,
    name: &str,
    profile: Option<Profile>,
    doc: &Value,
) -> Result<std::path::PathBuf> {
    fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
    let base = match profile {
        None | Some(Profile::Fast) => format!("{}-{name}", today()),
        Some(p) => format!("{}-{name}-{}", today(), p.name()),
    };
    let path = crate::vm::util::unused_results_path(dir, &base);
    let text = serde_json::to_string_pretty(doc).unwrap_or_default() + "\n";
    fs::write(&path, text).map_err(|e| io_err("cannot write", &path, e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figs(pairs: &[(&str, Option<f64>)]) -> Figures {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn medians_and_ratios() {
        let v = vec![
            (
                "baseline".to_string(),
                vec![
                    figs(&[("host_login_s", Some(50.0))]),
                    figs(&[("host_login_s", Some(54.0))]),
                    figs(&[("host_login_s", Some(52.0))]),
                ],
            ),
            (
                "record".to_string(),
                vec![
                    figs(&[("host_login_s", Some(57.2)), ("recorder_cpu_s", Some(0.5))]),
                    figs(&[("host_login_s", Some(55.0)), ("recorder_cpu_s", None)]),
                ],
            ),
        ];
        let s = summarize(&v);
        assert_eq!(s[0].1["host_login_s"], Some(52.0));
        assert_eq!(s[0].2, Some(1.0));
        assert!((s[1].1["host_login_s"].unwrap() - 56.1).abs() < 1e-9);
        assert!((s[1].2.unwrap() - 56.1 / 52.0).abs() < 1e-9);
        // a figure missing in some runs: median of those that have it
        assert_eq!(s[1].1["recorder_cpu_s"], Some(0.5));
        let t = table(&s, &[3, 2]);
        assert!(t.lines().nth(1).unwrap().starts_with("baseline"), "{t}");
        assert!(t.contains("1.079"), "{t}");
    }

    #[test]
    fn ratios_of_guest_milestones() {
        let summary = summarize(&[
            (
                "startpar".into(),
                vec![figs(&[
                    ("host_login_s", Some(40.0)),
                    ("text_login_s", Some(30.0)),
                    ("boot_done_s", Some(50.0)),
                ])],
            ),
            (
                "bootprint-rc".into(),
                vec![figs(&[
                    ("host_login_s", Some(30.0)),
                    ("text_login_s", Some(21.0)),
                    ("boot_done_s", None),
                ])],
            ),
        ]);
        let t = ratio_table(&summary);
        assert!(t.starts_with("ratios to startpar:"), "{t}");
        // No graphical login in either: no column for it.
        assert!(!t.contains("graphical_login_s"), "{t}");
        let rc = t.lines().find(|l| l.starts_with("bootprint-rc")).unwrap();
        let cells: Vec<&str> = rc.split_whitespace().collect();
        assert_eq!(cells, ["bootprint-rc", "0.700", "-"], "{t}");
    }

    #[test]
    fn no_baseline_no_ratio() {
        let v = vec![
            ("a".to_string(), vec![figs(&[("host_login_s", None)])]),
            ("b".to_string(), vec![figs(&[("host_login_s", Some(3.0))])]),
        ];
        let s = summarize(&v);
        assert_eq!(s[1].2, None);
    }

    #[test]
    fn rc_event_seconds() {
        let ev = "# bootprint events 1\n1000000000 recorder_start pid=1\n\
                  41500000000 milestone name=text_login pid=9 comm=getty source=exec\n\
                  52000000000 boot_done reason=idle settle_s=2\n";
        assert_eq!(
            event_seconds(ev, "milestone", Some("name=text_login")),
            Some(41.5)
        );
        assert_eq!(event_seconds(ev, "boot_done", None), Some(52.0));
        assert_eq!(
            event_seconds(ev, "milestone", Some("name=graphical_login")),
            None
        );
        let rc_log = "# bootprint rc 1\n50000000000 rc_reached runlevel=S action=start\n\
                      55700000000 rc_reached runlevel=2 action=start\n";
        assert_eq!(
            event_seconds(rc_log, "rc_reached", Some("runlevel=2")),
            Some(55.7)
        );
        let b = benchmark("rc", Profile::Fast).unwrap();
        let cmd: Vec<String> = b.variants.iter().map(|v| v.opts.cmdline()).collect();
        assert!(cmd[1].contains("concurrency=none") && cmd[2].contains("bootprint.rc=1"));
        assert!(cmd[3].contains("bootprint.init=/lib/systemd/systemd"));
        assert!(b.variants.iter().all(|v| v.opts.record));
    }

    #[test]
    fn parses_recorder_stats() {
        let ev = "# bootprint events 1\n\
                  1000 recorder_start pid=1 hz=50 version=0.1.0\n\
                  9000 recorder_stats samples=2500 late_samples=3 cpu_s=0.84 maxrss_kb=4120 ps_lines=1\n";
        let s = recorder_stats(ev).unwrap();
        assert_eq!(s["cpu_s"], 0.84);
        assert_eq!(s["maxrss_kb"], 4120.0);
        assert_eq!(
            recorder_stats("# bootprint events 1\n1 recorder_start pid=1\n"),
            None
        );
    }

    /// Each benchmark the command line offers is run by someone: `benchmark`, `run` or
    /// main.rs.
    #[test]
    fn the_command_lines_benchmarks_exist() {
        for (name, _) in BENCHMARKS {
            let elsewhere = [
                "whole",
                "builtins",
                "readahead",
                "readahead-alone",
                "modules",
                "initramfs",
                "desktop",
            ];
            assert!(
                elsewhere.contains(name) || benchmark(name, Profile::Fast).is_ok(),
                "{name}"
            );
        }
    }

    #[test]
    fn known_benchmarks() {
        let b = benchmark("record", Profile::Fast).unwrap();
        assert_eq!(b.variants[0].name, "baseline");
        assert!(!b.variants[0].opts.record && b.variants[1].opts.record);
        let p = benchmark("profiles", Profile::Sd).unwrap();
        let profiles: Vec<Profile> = p.variants.iter().map(|v| v.opts.profile).collect();
        assert_eq!(profiles, [Profile::Fast, Profile::Sd, Profile::Hdd]);
        assert!(matches!(
            benchmark("nope", Profile::Fast),
            Err(Error::Usage(_))
        ));
    }
}
