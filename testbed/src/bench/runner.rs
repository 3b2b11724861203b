//! The benchmarks' runner: boots variants of the image interleaved (A B A B ...) after one
//! discarded warm-up boot, and compares medians; one results JSON per run. A benchmark is a
//! list of variants (name, boot options, extra figures), so a benchmark adds a list, not
//! code paths (bench/record.rs is the smallest).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::bench::figures::{milestone_figures, recorder_stats};
use crate::bench::registry::Request;
use crate::vm::hostload;
use crate::vm::image::{self, Release};
use crate::vm::qemu::{self, round3, BootOpts, BootResult, Profile};
use crate::vm::util::{io_err, median, span, today, Error, Paths, Result};

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

/// No figures beyond the boot's own.
pub fn no_extra(_: &BootResult) -> Figures {
    Figures::new()
}

/// A file of the boot's trace, when it has a trace and the file.
pub fn trace_file(r: &BootResult, name: &str) -> Option<String> {
    r.trace_dir
        .as_ref()
        .and_then(|d| fs::read_to_string(d.join(name)).ok())
}

/// Guest figures of a whole boot: the milestones (text login, graphical login, boot done)
/// and what the recorder cost (its CPU seconds and share of the boot's CPU).
pub fn whole_figures(r: &BootResult) -> Figures {
    events_figures(&trace_file(r, "events.log").unwrap_or_default())
}

/// [`whole_figures`] and, on a systemd boot, where its time to the login went
/// (`analyze::account`, docs/report.md "The login's account"): each segment's seconds as
/// `login_<segment>_s`, so `bench whole` has medians of each.
pub fn whole_account_figures(r: &BootResult) -> Figures {
    let mut f = whole_figures(r);
    let account = r
        .trace_dir
        .as_deref()
        .and_then(|d| trace::Trace::open(d).ok())
        .and_then(|t| analyze::report::Report::build(&t, &Default::default(), "defaults").ok())
        .and_then(|report| report.account);
    for s in account.iter().flat_map(|a| &a.segments) {
        f.insert(format!("login_{}_s", s.name), Some(round3(s.seconds())));
    }
    f
}

/// [`whole_figures`] from the text of a boot's `events.log`, for a benchmark that reads more
/// of it.
pub fn events_figures(events: &str) -> Figures {
    let mut f = milestone_figures(events);
    let stats = recorder_stats(events);
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

/// A variant whose boots are recorded (`init=bootprint-boot`), with `append` after the base
/// kernel arguments; `extra` reads its figures.
pub fn recorded(
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

/// Every guest milestone's (and the initramfs phase's) median over the baseline's, one row
/// per variant (the primary ratio in [`table`] is the host's time to `login:`).
pub fn ratio_table(summary: &[(String, Figures, Option<f64>)]) -> String {
    const MILESTONES: [&str; 6] = [
        "initramfs_s",
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

/// Runs `bench` on the image of `req`'s flavor; on the desktop image (`--desktop`) under
/// `desktop_name`: its own result file, the figures are not comparable with the text image's.
pub fn run_on_flavor(
    paths: &Paths,
    req: &Request,
    mut bench: Benchmark,
    desktop_name: &'static str,
) -> Result<()> {
    if req.flavor == image::Flavor::Desktop {
        bench.name = desktop_name;
    }
    let img = image::ensure_flavor(paths, req.cargo, req.flavor)?;
    run_built(paths, &img, &bench, req.runs, req.profile(), req.json)
}

/// Runs a benchmark already built, on `img`: [`measure`], then [`finish`].
pub fn run_built(
    paths: &Paths,
    img: &image::Image,
    bench: &Benchmark,
    runs: usize,
    profile: Profile,
    as_json: bool,
) -> Result<()> {
    finish(paths, measure(paths, img, bench, runs, profile)?, as_json).map(|_| ())
}

/// A benchmark's boots, measured: the result document, and what its text output needs. A
/// benchmark that measures more than boots (modules' loads in the guest, readahead's
/// replays alone) adds its sections to `doc` and its lines to `notes` before [`finish`]:
/// one schema, one file, one output for every benchmark.
pub struct Measured {
    /// The result file's document.
    pub doc: Value,
    /// Lines the text output prints after the tables (goals, what was skipped).
    pub notes: Vec<String>,
    name: &'static str,
    /// The drive profile in the file's name; `None` when the variants differ in it.
    file_profile: Option<Profile>,
    summary: Vec<(String, Figures, Option<f64>)>,
    counts: Vec<usize>,
}

/// One discarded warm-up boot of the first variant (or the seasoning boots), then the
/// variants interleaved for `runs` rounds.
pub fn measure(
    paths: &Paths,
    img: &image::Image,
    bench: &Benchmark,
    runs: usize,
    profile: Profile,
) -> Result<Measured> {
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
    let seasoned = warm_up(paths, img, bench)?;
    let bench = &from_disks(bench, &seasoned.disks);
    let results = rounds(paths, img, bench, runs);
    for d in &seasoned.kept {
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
    let doc = json!({
        "benchmark": bench.name,
        "about": bench.about,
        "date": today(),
        "release": paths.release.number(),
        "firmware": paths.firmware.name(),
        "host": crate::vm::hostload::host_facts(&paths.cache),
        "profile": profile_name,
        "runs_per_variant": runs,
        "order": order(bench),
        "baseline": bench.variants[0].name,
        "failed_runs": failed,
        "host_shared_boots": shared_boots(&results),
        "warmup": seasoned.warm,
        "variants": variants_json(bench, &results, &summary),
    });
    Ok(Measured {
        doc,
        notes: vec![],
        name: bench.name,
        file_profile: Some(profile).filter(|_| one_profile),
        summary,
        counts,
    })
}

/// Writes the result file and prints the tables (or the document, `as_json`); fails when a
/// boot failed. Returns the file.
pub fn finish(paths: &Paths, m: Measured, as_json: bool) -> Result<PathBuf> {
    let file = write_result(paths, m.name, m.file_profile, &m.doc)?;
    if as_json {
        println!("{}", m.doc);
    } else {
        let variants = m.doc["variants"].as_array().map_or(&[][..], Vec::as_slice);
        print_text(&m.summary, &m.counts, variants, &m.notes, &file);
    }
    let shared = m.doc["host_shared_boots"].as_u64().unwrap_or(0);
    if shared > 0 {
        eprintln!(
            "host: {shared} boot(s) shared the host (other work took more than {:.0} % of its CPU while they booted): their times are not comparable",
            100.0 * hostload::OTHERS_SHARE_LIMIT
        );
    }
    let failed = m.doc["failed_runs"].as_u64().unwrap_or(0);
    if failed > 0 {
        return Err(Error::fail(format!(
            "{failed} boot(s) failed; see {}",
            file.display()
        )));
    }
    Ok(file)
}

/// How many measured boots shared the host: other work took more than
/// [`hostload::OTHERS_SHARE_LIMIT`] of its CPU from QEMU's start to the login.
fn shared_boots(results: &[Vec<Run>]) -> usize {
    results
        .iter()
        .flatten()
        .filter(|r| hostload::shared_the_host(&r.detail["host_cpu"]))
        .count()
}

/// What the warm-up boots left: the first one's detail, the disk each variant's measured
/// boots start from, and the disks to remove at the end.
struct Seasoned {
    warm: Value,
    disks: Vec<Option<PathBuf>>,
    kept: Vec<PathBuf>,
}

/// The warm-up boots. Seasoning: one kept-disk boot per image (the seasoning variant's on
/// the main image; on another image, its own variant's), whose disk that image's runs start
/// from.
fn warm_up(paths: &Paths, img: &image::Image, bench: &Benchmark) -> Result<Seasoned> {
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
    Ok(Seasoned { warm, disks, kept })
}

/// `bench` with each variant starting from its seasoned disk, if it has one.
fn from_disks(bench: &Benchmark, disks: &[Option<PathBuf>]) -> Benchmark {
    let variants: Vec<Variant> = bench
        .variants
        .iter()
        .zip(disks)
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
    Benchmark {
        name: bench.name,
        about: bench.about,
        variants,
        seasoned_by: bench.seasoned_by,
        season_each: bench.season_each,
    }
}

/// `runs` rounds of every variant in order; each variant's runs.
fn rounds(paths: &Paths, img: &image::Image, bench: &Benchmark, runs: usize) -> Vec<Vec<Run>> {
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
    results
}

/// The result file's variants: each one's options, medians, maxima, ratio and runs.
fn variants_json(
    bench: &Benchmark,
    results: &[Vec<Run>],
    summary: &[(String, Figures, Option<f64>)],
) -> Vec<Value> {
    let base = results.first().map(|rs| extremes(rs, PRIMARY));
    bench
        .variants
        .iter()
        .zip(results)
        .zip(summary)
        .map(|((v, rs), (_, med, ratio))| {
            let (mins, maxes): (Figures, Figures) = med
                .keys()
                .map(|k| {
                    let (lo, hi) = extremes(rs, k).unzip();
                    ((k.clone(), lo), (k.clone(), hi))
                })
                .unzip();
            json!({
                "name": v.name,
                "profile": v.opts.profile.name(),
                "cmdline": v.opts.cmdline(),
                "initrd": v.opts.initrd.as_deref().map(crate::vm::util::shown_path),
                "initrd_bytes": v.opts.initrd.as_deref().and_then(|p| fs::metadata(p).ok()).map(|m| m.len()),
                "median": med,
                "min": mins,
                "max": maxes,
                "ratio_host_login_s": ratio.map(|r| (r * 10000.0).round() / 10000.0),
                "ratio_range_host_login_s": ratio_range(base.flatten(), extremes(rs, PRIMARY))
                    .map(|(lo, hi)| [round4(lo), round4(hi)]),
                "runs": rs.iter().map(|r| r.detail.clone()).collect::<Vec<_>>(),
            })
        })
        .collect()
}

fn round4(x: f64) -> f64 {
    (x * 10000.0).round() / 10000.0
}

/// The smallest and largest value of figure `key` over the runs.
fn extremes(rs: &[Run], key: &str) -> Option<(f64, f64)> {
    let values: Vec<f64> = rs
        .iter()
        .filter_map(|r| r.figures.get(key).copied().flatten())
        .collect();
    span(&values)
}

/// The ratio to the baseline as wide as the runs allow: the variant's fastest over the
/// baseline's slowest to its slowest over the baseline's fastest. A goal inside it is
/// neither met nor missed by these runs.
pub fn ratio_range(base: Option<(f64, f64)>, variant: Option<(f64, f64)>) -> Option<(f64, f64)> {
    let ((b_lo, b_hi), (v_lo, v_hi)) = (base?, variant?);
    (b_lo > 0.0).then(|| (v_lo / b_hi, v_hi / b_lo))
}

/// From a result document: `variant`'s median of `figure` over the baseline's, and the
/// spread its runs allow ([`ratio_range`], from the medians' minima and maxima).
pub fn figure_ratio(doc: &Value, variant: &str, figure: &str) -> Option<(f64, Option<(f64, f64)>)> {
    let variants = doc["variants"].as_array()?;
    let base = variants.first()?;
    let v = variants.iter().find(|v| v["name"] == variant)?;
    let (b, x) = (
        base["median"][figure].as_f64()?,
        v["median"][figure].as_f64()?,
    );
    let lo_hi = |v: &Value| Some((v["min"][figure].as_f64()?, v["max"][figure].as_f64()?));
    (b > 0.0).then(|| (x / b, ratio_range(lo_hi(base), lo_hi(v))))
}

/// Whether runs whose ratio to the baseline is `ratio` (median over median), spread over
/// `range` ([`ratio_range`]), meet a goal of at most `goal`: "met", "missed", or, when the
/// goal lies inside the spread, that the runs cannot say.
pub fn goal_verdict(ratio: f64, range: Option<(f64, f64)>, goal: f64) -> String {
    match range {
        Some((lo, hi)) if lo <= goal && goal < hi => format!(
            "not decided: the runs' spread ({lo:.3}x..{hi:.3}x) crosses the goal; more runs"
        ),
        _ if ratio <= goal => "met".to_string(),
        _ => "missed".to_string(),
    }
}

/// The result file's `order`: how the boots were ordered and seasoned.
fn order(bench: &Benchmark) -> String {
    match bench.seasoned_by {
        _ if bench.season_each => "one warm-up boot of each variant, whose disk its measured boots start from (fsynced copies), then variants interleaved per round".to_string(),
        Some(i) => format!("one warm-up boot of {} whose disk every measured boot starts from, then variants interleaved per round", bench.variants[i].name),
        None => "one discarded warm-up boot of the baseline, then variants interleaved per round".to_string(),
    }
}

/// The text output: the tables, the recorder's cost when measured, the benchmark's notes,
/// the result file.
fn print_text(
    summary: &[(String, Figures, Option<f64>)],
    counts: &[usize],
    variants_json: &[Value],
    notes: &[String],
    file: &Path,
) {
    print!("{}", table(summary, counts));
    print!("{}", ratio_table(summary));
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
    notes.iter().for_each(|l| println!("{l}"));
    println!("result: {}", file.display());
}

/// Writes `doc` to testbed/results/DATE-NAME[-debian13][-uefi][-PROFILE][-N].json (never
/// replacing a file): the release is named when it is not Debian 12 and the firmware when it
/// is not the BIOS, whose names are those from before either existed.
pub fn write_result(
    paths: &Paths,
    name: &str,
    profile: Option<Profile>,
    doc: &Value,
) -> Result<std::path::PathBuf> {
    let dir = paths.repo.join("testbed/results");
    fs::create_dir_all(&dir).map_err(|e| io_err("cannot create", &dir, e))?;
    let name = match paths.release {
        Release::Bookworm => name.to_string(),
        r => format!("{name}-debian{}", r.number()),
    };
    let name = match paths.firmware {
        crate::vm::qemu::Firmware::Bios => name,
        f => format!("{name}-{}", f.name()),
    };
    let base = match profile {
        None | Some(Profile::Fast) => format!("{}-{name}", today()),
        Some(p) => format!("{}-{name}-{}", today(), p.name()),
    };
    let path = crate::vm::util::unused_results_path(&dir, &base);
    let text = serde_json::to_string_pretty(doc).unwrap_or_default() + "\n";
    fs::write(&path, text).map_err(|e| io_err("cannot write", &path, e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::figures::event_seconds;

    /// A goal is met or missed only where the runs' spread does not cross it.
    #[test]
    fn a_goal_inside_the_spread_is_not_decided() {
        // Baseline 84.4 and 93.6 s, variant 72.5 and 73.0 s: 0.775x..0.865x.
        let range = ratio_range(Some((84.4, 93.6)), Some((72.5, 73.0))).unwrap();
        assert!((range.0 - 72.5 / 93.6).abs() < 1e-12 && (range.1 - 73.0 / 84.4).abs() < 1e-12);
        assert_eq!(goal_verdict(0.82, Some(range), 0.90), "met");
        assert_eq!(goal_verdict(0.82, Some(range), 0.75), "missed");
        assert!(goal_verdict(0.82, Some(range), 0.80).starts_with("not decided"));
        // Without a spread (an older result file), the median ratio decides.
        assert_eq!(goal_verdict(0.82, None, 0.80), "missed");
        assert_eq!(ratio_range(Some((0.0, 1.0)), Some((1.0, 2.0))), None);
        assert_eq!(ratio_range(None, Some((1.0, 2.0))), None);
    }

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
}
