//! `bench readahead`: boots of the aged image (see `age`) without readahead and with its
//! replay (every range alone, ranges merged, and after relocation), interleaved, per drive
//! profile. Before the rounds of a profile, one learning boot under that profile keeps its
//! disk, and one boot of that disk relocates the pack (`bootprint readahead relocate`) and
//! keeps its disk too: every replay boot starts from a copy of one of the two, so each
//! replays the same pack (and `bootprint.readahead_compare_every=0` keeps the replay boots
//! from turning into comparison boots). All boots record, so the trace gives the
//! milestones, what the boot read and what the replay did; the goals are printed
//! beside the figures.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::bench::figures::event_field;
use crate::bench::registry::Request;
use crate::bench::runner::{self, Benchmark, Figures, Variant};
use crate::vm::age;
use crate::vm::image::{self, Image};
use crate::vm::qemu::{self, round3, BootOpts, BootResult, Profile};
use crate::vm::util::{Error, Paths, Result};
use trace::procfs::DiskStat;

/// Bytes read from the guest's disk (`vda`) by the last sample of `proc_diskstats.log`.
pub fn disk_read_bytes(diskstats_log: &str) -> Option<u64> {
    diskstats_log
        .lines()
        .rev()
        .filter_map(DiskStat::split)
        .find(|d| d.name() == "vda")
        .and_then(|d| d.read_sectors())
        .map(|sectors| sectors * 512)
}

/// What the guest's disk (`vda`) did between two times of a boot: every reader's bytes and
/// requests and its busy time, from the samples of `proc_diskstats.log` nearest outside the
/// times (fields 4, 6 and 13 of the disk's line: reads completed, sectors read, milliseconds
/// doing I/O; Documentation/admin-guide/iostats.rst).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskWindow {
    /// Between the two samples used, s.
    pub secs: f64,
    pub read_bytes: u64,
    pub reads: u64,
    /// Share of the time the disk had a request in flight (0..1).
    pub busy: f64,
}

/// (reads completed, bytes read, milliseconds doing I/O) from a `/proc/diskstats` line of
/// the guest's disk (`vda`): fields 4, 6 and 13 (`trace::procfs::DiskStat`); `None` for
/// another disk's line.
fn vda_counters(line: &str) -> Option<(u64, u64, u64)> {
    let d = DiskStat::split(line).filter(|d| d.name() == "vda")?;
    Some((d.field(4)?, d.read_sectors()? * 512, d.io_ms()?))
}

/// [`DiskWindow`] from `from_s` (or the first sample, when there is none before it) to `to_s`
/// (uptime seconds); `None` without a sample at or after `to_s`.
pub fn disk_window(diskstats_log: &str, from_s: f64, to_s: f64) -> Option<DiskWindow> {
    let blocks = trace::bootchart::blocks("proc_diskstats.log", diskstats_log).ok()?;
    // (time s, reads, bytes, io ms) per sample that lists the disk.
    let samples: Vec<(f64, u64, u64, u64)> = blocks
        .iter()
        .filter_map(|b| {
            b.body.lines().find_map(|l| {
                let (reads, bytes, io_ms) = vda_counters(l)?;
                Some((b.t_cs as f64 / 100.0, reads, bytes, io_ms))
            })
        })
        .collect();
    // The recorder may start sampling after the replay started: then from its first sample.
    let a = samples
        .iter()
        .rev()
        .find(|s| s.0 <= from_s)
        .or(samples.first())?;
    let b = samples.iter().find(|s| s.0 >= to_s)?;
    let secs = b.0 - a.0;
    (secs > 0.0).then(|| DiskWindow {
        secs,
        read_bytes: b.2.saturating_sub(a.2),
        reads: b.1.saturating_sub(a.1),
        busy: (b.3.saturating_sub(a.3) as f64 / 1000.0 / secs).min(1.0),
    })
}

/// What one boot's trace says about readahead.
pub fn figures_from_trace(dir: &Path) -> Figures {
    let events = fs::read_to_string(dir.join("events.log")).unwrap_or_default();
    let diskstats = fs::read_to_string(dir.join("proc_diskstats.log")).unwrap_or_default();
    let mb = |b: Option<f64>| b.map(|x| round3(x / 1e6));
    let mut f = crate::bench::figures::milestone_figures(&events);
    f.insert(
        "read_mb".into(),
        mb(disk_read_bytes(&diskstats).map(|b| b as f64)),
    );
    let replay_bytes = event_field(&events, "readahead_replay", "bytes");
    // Until the reads completed (settled_ns), not until they were queued (duration_ns).
    let replay_s = event_field(&events, "readahead_replay", "settled_ns")
        .filter(|n| *n > 0.0)
        .or_else(|| event_field(&events, "readahead_replay", "duration_ns"))
        .map(|n| n / 1e9);
    f.insert("replay_mb".into(), mb(replay_bytes));
    f.insert("replay_s".into(), replay_s.map(round3));
    f.insert(
        "replay_mb_s".into(),
        match (replay_bytes, replay_s) {
            (Some(b), Some(s)) if s > 0.0 => Some(round3(b / 1e6 / s)),
            _ => None,
        },
    );
    // The disk while the replay ran, everyone's reads included: whether the replay kept the
    // drive busy (then the drive's cost per request bounds it, not the replay) and in what
    // size of request the drive was read.
    let window = crate::bench::figures::event_seconds(&events, "readahead_replay_start", None)
        .zip(replay_s)
        .and_then(|(start, s)| disk_window(&diskstats, start, start + s));
    f.insert(
        "replay_disk_mb_s".into(),
        window.map(|w| round3(w.read_bytes as f64 / 1e6 / w.secs)),
    );
    f.insert("replay_disk_busy".into(), window.map(|w| round3(w.busy)));
    f.insert(
        "replay_disk_req_kb".into(),
        window
            .filter(|w| w.reads > 0)
            .map(|w| round3(w.read_bytes as f64 / w.reads as f64 / 1024.0)),
    );
    f.insert(
        "metadata_mb".into(),
        mb(event_field(&events, "readahead_replay", "metadata_bytes")),
    );
    f.insert(
        "metadata_requests".into(),
        event_field(&events, "readahead_replay", "metadata_requests"),
    );
    f.insert("hit".into(), event_field(&events, "readahead_hit", "ratio"));
    f.insert(
        "missed_mb".into(),
        mb(event_field(&events, "readahead_replay", "missed_bytes")),
    );
    f.insert(
        "pack_mb".into(),
        mb(event_field(&events, "readahead_learn", "bytes")),
    );
    f
}

pub fn readahead_figures(r: &BootResult) -> Figures {
    r.trace_dir
        .as_deref()
        .map(figures_from_trace)
        .unwrap_or_default()
}

/// Boots a learning boot with `learn`'s options, keeping its disk; returns the disk and
/// the boot (its trace says what was learned).
pub fn learned_disk(paths: &Paths, img: &Image, learn: &BootOpts) -> Result<(PathBuf, BootResult)> {
    eprintln!(
        "bench readahead: learning boot ({}, {}) whose disk replay boots start from",
        learn.profile.name(),
        learn.append
    );
    let mut keep = learn.clone();
    keep.keep_disk = true;
    let learned = qemu::boot(paths, img, &keep)?;
    eprintln!("bench readahead: learned {:?}", readahead_figures(&learned));
    let disk = learned
        .kept_disk()
        .ok_or_else(|| Error::fail("the learning boot kept no disk"))?;
    Ok((disk, learned))
}

/// On every boot of the bench: the recorder's default hard stop (240 s of uptime) ends a
/// `hdd-scaled` learning boot before its login (about 285 s), and the pack would lack the
/// login's files. With it every boot records until boot done.
pub const RECORD_TO_BOOT_DONE: &str = "bootprint.timeout_s=900";

/// What every boot of the bench on `profile` appends: [`RECORD_TO_BOOT_DONE`], and what the
/// modelled drive is ([`Profile::media`]), since the test bed's virtio disk says it rotates
/// on every profile where a real card or SSD says it does not.
pub fn bench_append(profile: Profile) -> String {
    match profile.media() {
        Some(m) => format!("{RECORD_TO_BOOT_DONE} bootprint.readahead_media={m}"),
        None => RECORD_TO_BOOT_DONE.into(),
    }
}

/// The guest script of the relocation boot: each replay variant alone on the learned
/// layout, the relocation and its exit status, then the relocated variants alone; each
/// twice: from a cold cache (`drop_caches` 3: the page cache, dentries and inodes) and with
/// only the page cache dropped (1: the files' inodes and paths still known, so only their
/// data is read), named `NAME` and `NAME/data` (see [`alone_figures`]).
pub const RELOCATE_SCRIPT: &str =
    "mkdir -p /run/bpx; mount -t tmpfs -o exec,size=64m bpx /run/bpx; \
     cp \"$(command -v bootprint)\" /run/bpx/bootprint\n\
     alone() { drop=$1; name=$2; shift 2; sync; echo $drop > /proc/sys/vm/drop_caches; \
     sleep 2; echo \"BP_ALONE_DISK0 $name $(grep ' vda ' /proc/diskstats)\"; \
     j=$(/run/bpx/bootprint readahead replay --json --time-limit 900 \"$@\" | tr -d '\\n'); \
     echo \"BP_ALONE_DISK1 $name $(grep ' vda ' /proc/diskstats)\"; \
     echo \"BP_ALONE_JSON $name $j\"; }\n\
     both() { name=$1; shift; alone 3 $name \"$@\"; alone 1 $name/data \"$@\"; }\n\
     both replay --merge-gap-kb 0 --metadata off\n\
     both replay-merged --metadata off\n\
     bootprint readahead relocate --force-media 2>&1; echo BP_RELOCATE_RC=$?; sync\n\
     both replay-relocated --metadata off\n\
     both replay-relocated-metadata --metadata on\n";

/// Each variant's replay run alone (`bootprint readahead replay`, after `drop_caches`, with
/// nothing else reading; the binary runs from a tmpfs (/run is mounted noexec) so loading
/// it reads nothing from the disk), from the relocation boot's output: by variant name (`NAME/data`: the page cache
/// dropped but not the dentries and inodes), the replay's own figures
/// (`mb_s` is the pack's bytes over the time until they were in the page cache, the
/// figure the goal of 80 % of the drive is about) and the disk's over the same command
/// (`disk_mb`, `disk_reads`, `disk_busy`: fields 4, 6 and 13 of its `/proc/diskstats` line).
pub fn alone_figures(output: &str) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    let disk = |tag: &str, name: &str| -> Option<(u64, u64, u64)> {
        output.lines().find_map(|l| {
            let rest = l.trim().strip_prefix(tag)?.trim_start();
            vda_counters(rest.strip_prefix(name)?.strip_prefix(' ')?)
        })
    };
    for l in output.lines() {
        let Some(rest) = l.trim().strip_prefix("BP_ALONE_JSON ") else {
            continue;
        };
        let Some((name, json)) = rest.split_once(' ') else {
            continue;
        };
        let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(json) else {
            continue;
        };
        let secs = m.get("seconds").and_then(Value::as_f64).unwrap_or(0.0);
        if let (Some(a), Some(b)) = (disk("BP_ALONE_DISK0", name), disk("BP_ALONE_DISK1", name)) {
            m.insert("disk_reads".into(), (b.0.saturating_sub(a.0)).into());
            m.insert(
                "disk_mb".into(),
                round3(b.1.saturating_sub(a.1) as f64 / 1e6).into(),
            );
            if secs > 0.0 {
                // The busy time covers the whole command (its start and the wait included).
                m.insert(
                    "disk_busy".into(),
                    round3((b.2.saturating_sub(a.2) as f64 / 1000.0 / secs).min(1.0)).into(),
                );
            }
        }
        m.remove("pack");
        out.insert(name.to_string(), Value::Object(m));
    }
    out
}

/// How many files `bootprint readahead relocate` says it moved (`moved N files (...`), or
/// an error with its output when it moved none or failed.
pub fn relocated_files(output: &str) -> Result<u64> {
    let rc = output
        .lines()
        .find_map(|l| l.trim().strip_prefix("BP_RELOCATE_RC="))
        .map(str::trim);
    let moved = output.lines().find_map(|l| {
        l.trim()
            .strip_prefix("moved ")
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
    });
    let tail = |t: &str| {
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    };
    match (rc, moved) {
        (Some("0"), Some(n)) if n > 0 => Ok(n),
        (Some("0"), Some(_)) => Err(Error::fail(format!(
            "bench readahead: the relocation moved no file, so its variant would measure \
             nothing; its output:\n{}",
            tail(output)
        ))),
        _ => Err(Error::fail(format!(
            "bench readahead: `bootprint readahead relocate --force-media` failed (exit {}); \
             its output:\n{}",
            rc.unwrap_or("unknown"),
            tail(output)
        ))),
    }
}

/// Boots the learned disk once (without bootprint at boot, so nothing learns or replays),
/// replays its pack alone before and after relocating it as root after login; returns the
/// kept disk and the replays alone ([`alone_figures`]).
fn relocated_disk(
    paths: &Paths,
    img: &Image,
    profile: Profile,
    learned: &Path,
) -> Result<(PathBuf, serde_json::Map<String, Value>)> {
    eprintln!("bench readahead: relocation boot ({})", profile.name());
    let mut o = BootOpts::new(profile);
    o.disk_from = Some(learned.to_path_buf());
    o.keep_disk = true;
    o.guest_script = Some(RELOCATE_SCRIPT.into());
    let r = qemu::boot(paths, img, &o)?;
    let out = r.guest_output.clone().unwrap_or_default();
    let disk = r
        .kept_disk()
        .ok_or_else(|| Error::fail("the relocation boot kept no disk"))?;
    // The boot ended with `poweroff -f`, so the relocation's metadata may still be only in
    // the journal, and every boot of this disk would replay it first (4 s on `sd-scaled`).
    // The learned disk had its journal replayed when its trace was copied out; this one is
    // treated the same, so the variants differ only in the pack's layout.
    let log = r.serial_log.with_file_name("host.log");
    if let Err(e) = qemu::replay_journal(&disk, &log) {
        let _ = fs::remove_file(&disk);
        return Err(e);
    }
    match relocated_files(&out) {
        Ok(n) => {
            let summary: Vec<&str> = out
                .lines()
                .filter(|l| {
                    l.contains("moved ") && l.contains("files")
                        || l.starts_with("the region:")
                        || l.contains("requests:")
                })
                .collect();
            eprintln!(
                "bench readahead: relocated {n} files: {}",
                summary.join("; ")
            );
            let alone = alone_figures(&out);
            eprintln!(
                "bench readahead: replays alone: {}",
                Value::Object(alone.clone())
            );
            Ok((disk, alone))
        }
        Err(e) => {
            let _ = fs::remove_file(&disk);
            Err(e)
        }
    }
}

/// The goals (issue 19) for one profile's figures: each replay variant's login time
/// against no readahead's (at most 0.75x on a slow drive, at most 1.02x on the fast one),
/// and its replay throughput against the drive's limit (at least 80 %).
pub fn goal_lines(profile: Profile, doc: &Value) -> Vec<String> {
    let slow = profile != Profile::Fast;
    let ratio_goal = if slow { 0.75 } else { 1.02 };
    let bw = profile.bandwidth().map(|b| b / 1e6);
    let mut lines = vec![format!(
        "goals ({}): login at most {ratio_goal:.2}x of none{}",
        profile.name(),
        match bw {
            Some(bw) => format!(
                "; replay at least {:.1} MB/s (80 % of {bw:.1} MB/s)",
                0.8 * bw
            ),
            None => String::new(),
        }
    )];
    let Some(vs) = doc["variants"].as_array() else {
        return lines;
    };
    for v in vs.iter().filter(|v| v["name"] != "none") {
        let name = v["name"].as_str().unwrap_or("?");
        let ratio = v["ratio_host_login_s"].as_f64();
        let mb_s = v["median"]["replay_mb_s"].as_f64();
        let mut l = format!("  {name:<26}");
        match ratio {
            Some(r) => {
                let range = v["ratio_range_host_login_s"]
                    .as_array()
                    .and_then(|a| Some((a.first()?.as_f64()?, a.get(1)?.as_f64()?)));
                l.push_str(&format!(
                    " login {r:.3}x {}",
                    runner::goal_verdict(r, range, ratio_goal)
                ))
            }
            None => l.push_str(" login -"),
        }
        match (mb_s, bw) {
            (Some(m), Some(bw)) => l.push_str(&format!(
                "; replay {m:.1} MB/s = {:.0} % of the drive {}",
                100.0 * m / bw,
                if m >= 0.8 * bw { "met" } else { "missed" }
            )),
            (Some(m), None) => l.push_str(&format!("; replay {m:.1} MB/s (no drive limit)")),
            _ => {}
        }
        let disk = &v["median"];
        if let (Some(busy), Some(mb_s), Some(kb)) = (
            disk["replay_disk_busy"].as_f64(),
            disk["replay_disk_mb_s"].as_f64(),
            disk["replay_disk_req_kb"].as_f64(),
        ) {
            l.push_str(&format!(
                "; meanwhile the disk was busy {:.0} % and read {mb_s:.1} MB/s for everyone, \
                 in {kb:.0} KiB requests",
                100.0 * busy
            ));
        }
        if let Some(a) = doc["replay_alone"][name].as_object() {
            l.push_str(&format!("; alone from a cold cache {}", alone_rate(a, bw)));
        }
        if let Some(a) = doc["replay_alone"][format!("{name}/data")].as_object() {
            l.push_str(&format!(
                "; alone, its data only (inodes and paths cached) {}",
                alone_rate(a, bw)
            ));
        }
        lines.push(l);
    }
    lines
}

/// `12.3 MB/s = 62 % of the drive missed` for one replay alone (`met` at 80 % or more), and
/// what the disk itself read over the same time (` (the disk 55 %)`): pages running programs
/// map stay cached through drop_caches, so the pack's bytes can come faster than the drive.
fn alone_rate(a: &serde_json::Map<String, Value>, bw_mb_s: Option<f64>) -> String {
    let mb_s = a.get("mb_s").and_then(Value::as_f64).unwrap_or(0.0);
    let mut t = format!("{mb_s:.1} MB/s");
    if let Some(bw) = bw_mb_s {
        t.push_str(&format!(
            " = {:.0} % of the drive {}",
            100.0 * mb_s / bw,
            if mb_s >= 0.8 * bw { "met" } else { "missed" }
        ));
        let n = |k: &str| a.get(k).and_then(Value::as_f64);
        if let (Some(disk), Some(secs)) = (n("disk_mb"), n("seconds").filter(|s| *s > 0.0)) {
            t.push_str(&format!(" (the disk {:.0} %)", 100.0 * disk / secs / bw));
        }
    }
    if a.get("timed_out").and_then(Value::as_u64) == Some(1) {
        t.push_str(" (stopped at its time limit)");
    }
    t
}

/// The replays alone of one profile, a line each: the rate against the drive's, and what
/// the replay and the disk did.
pub fn alone_lines(profile: Profile, alone: &serde_json::Map<String, Value>) -> Vec<String> {
    let bw = profile.bandwidth().map(|b| b / 1e6);
    let mut lines = vec![format!(
        "replays alone ({}), from a cold page cache with nothing else reading{}:",
        profile.name(),
        bw.map_or(String::new(), |bw| format!(
            "; goal at least {:.1} MB/s (80 % of {bw:.1} MB/s)",
            0.8 * bw
        ))
    )];
    for (name, a) in alone {
        let Some(a) = a.as_object() else { continue };
        let n = |k: &str| a.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let mut l = format!(
            "  {name:<26} {:.1} MB in {:.2} s = {}; {} requests",
            n("bytes") / 1e6,
            n("seconds"),
            alone_rate(a, bw),
            n("requests")
        );
        if a.contains_key("disk_mb") {
            // Pages a running program maps stay cached through drop_caches, so the disk can
            // read less than the pack; and its counters cover the command's start too.
            l.push_str(&format!(
                "; the disk read {:.1} MB in {} reads ({:.1} MB/s), busy {:.0} %",
                n("disk_mb"),
                n("disk_reads"),
                if n("seconds") > 0.0 {
                    n("disk_mb") / n("seconds")
                } else {
                    0.0
                },
                100.0 * n("disk_busy")
            ));
        }
        lines.push(l);
    }
    lines
}

/// The aged copy of `base` (or of the built image) that every boot of the bench starts from.
fn aged_image(paths: &Paths, base: Option<Image>, cargo: bool) -> Result<Image> {
    let base = match base {
        Some(img) => img,
        None => image::ensure(paths, cargo)?,
    };
    age::aged(paths, &base, cargo)
}

/// One profile's learning boot and relocation boot: the disks they kept (removed when the
/// first value is dropped, however the profile ends), the learned and the relocated disk,
/// and the replays alone.
fn learned_and_relocated(
    paths: &Paths,
    aged: &Image,
    profile: Profile,
) -> Result<(
    RemovedOnDrop,
    PathBuf,
    PathBuf,
    serde_json::Map<String, Value>,
)> {
    let mut learn = BootOpts::new(profile);
    learn.record = true;
    learn.append = format!("{} bootprint.readahead=1", bench_append(profile));
    let mut disks = RemovedOnDrop::default();
    let learned = disks.add(learned_disk(paths, aged, &learn)?.0);
    let (relocated, alone) = relocated_disk(paths, aged, profile, &learned)?;
    let relocated = disks.add(relocated);
    Ok((disks, learned, relocated, alone))
}

/// The drive profiles `bench readahead` runs: `--profile`'s, else every one.
fn profiles(req: &Request) -> Vec<Profile> {
    match req.profile {
        Some(p) => vec![p],
        None => {
            use clap::ValueEnum;
            Profile::value_variants().to_vec()
        }
    }
}

/// `bench readahead` as the command line asks it.
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    let profiles = profiles(req);
    let base = req.image.clone().map(Image::open).transpose()?;
    run(paths, req.runs, &profiles, req.json, req.cargo, base)
}

/// `bench readahead-alone` as the command line asks it.
pub fn bench_alone(paths: &Paths, req: &Request) -> Result<()> {
    let profiles = profiles(req);
    let base = req.image.clone().map(Image::open).transpose()?;
    run_alone(paths, &profiles, req.json, req.cargo, base)
}

/// `bench readahead-alone`: per profile, the learning boot and the relocation boot of
/// [`run`] only, for the replays alone; a result file per profile.
pub fn run_alone(
    paths: &Paths,
    profiles: &[Profile],
    as_json: bool,
    cargo: bool,
    base: Option<Image>,
) -> Result<()> {
    let aged = aged_image(paths, base, cargo)?;
    for &profile in profiles {
        let (_disks, _, _, alone) = learned_and_relocated(paths, &aged, profile)?;
        let doc = serde_json::json!({
            "benchmark": "readahead-alone",
            "about": "each replay variant of bench readahead run alone (bootprint readahead replay) after drop_caches, in the relocation boot: replay and replay-merged before the relocation, replay-relocated and replay-relocated-metadata after it",
            "date": crate::vm::util::today(),
            "release": paths.release.number(),
        "firmware": paths.firmware.name(),
            "host": crate::vm::hostload::host_facts(&paths.cache),
            "profile": profile.name(),
            "drive_mb_s": profile.bandwidth().map(|b| round3(b / 1e6)),
            "replay_alone": alone,
        });
        let file = runner::write_result(paths, "readahead-alone", Some(profile), &doc)?;
        if as_json {
            println!("{doc}");
        } else {
            if let Some(a) = doc["replay_alone"].as_object() {
                alone_lines(profile, a).iter().for_each(|l| println!("{l}"));
            }
            println!("result: {}", crate::vm::util::shown_path(&file));
        }
    }
    Ok(())
}

/// The variants of one profile, from the learned and the relocated disks, each with the
/// metadata read set (`readahead_metadata`, `auto` by default: on when the pack was learned
/// on a rotating device its boot waited on):
/// - `none`: no readahead;
/// - `replay`: replay with every range alone (`merge_gap_kb=0`, as before issue 19);
/// - `replay-merged`: ranges merged across 32 KiB gaps (the default);
/// - `replay-merged-metadata`: the same with the filesystem metadata opening the files
///   needs read first (inode-table and directory blocks), and again after a read-only
///   remount drops it;
/// - `replay-relocated`, `replay-relocated-metadata`: the same two after
///   `bootprint readahead relocate` moved the pack's files into one region in the order the
///   learning boot first opened them (the pack's ranks).
pub fn variants(profile: Profile, learned: &Path, relocated: &Path) -> Vec<Variant> {
    let mut none = BootOpts::new(profile);
    none.record = true;
    none.append = bench_append(profile);
    let mut merged = BootOpts::new(profile);
    merged.record = true;
    merged.append = format!(
        "{} bootprint.readahead=1 bootprint.readahead_compare_every=0",
        bench_append(profile)
    );
    merged.disk_from = Some(learned.to_path_buf());
    let with = |opts: &BootOpts, disk: &Path, more: &str| {
        let mut o = opts.clone();
        o.disk_from = Some(disk.to_path_buf());
        o.append.push(' ');
        o.append.push_str(more);
        o
    };
    [
        ("none", none),
        (
            "replay",
            with(
                &merged,
                learned,
                "bootprint.readahead_merge_gap_kb=0 bootprint.readahead_metadata=0",
            ),
        ),
        (
            "replay-merged",
            with(&merged, learned, "bootprint.readahead_metadata=0"),
        ),
        (
            "replay-merged-metadata",
            with(&merged, learned, "bootprint.readahead_metadata=1"),
        ),
        (
            "replay-relocated",
            with(&merged, relocated, "bootprint.readahead_metadata=0"),
        ),
        (
            "replay-relocated-metadata",
            with(&merged, relocated, "bootprint.readahead_metadata=1"),
        ),
    ]
    .into_iter()
    .map(|(name, opts)| Variant {
        name,
        opts,
        extra: readahead_figures,
        image: None,
    })
    .collect()
}

/// Runs the benchmark for each profile (see `main` for the default list).
pub fn run(
    paths: &Paths,
    runs: usize,
    profiles: &[Profile],
    as_json: bool,
    cargo: bool,
    base: Option<Image>,
) -> Result<()> {
    let aged = aged_image(paths, base, cargo)?;
    for &profile in profiles {
        let (disks, learned, relocated, alone) = learned_and_relocated(paths, &aged, profile)?;
        let b = Benchmark {
            name: "readahead",
            about: "readahead on the aged image: no readahead; replay of every range alone; replay with ranges merged across small gaps (the default); the merged replay with the metadata read first; the same two after relocation",
            variants: variants(profile, &learned, &relocated),
            seasoned_by: None,
            season_each: false,
        };
        let outcome = runner::measure(paths, &aged, &b, runs, profile).and_then(|mut m| {
            // The replays alone go into the result file beside the boots.
            m.doc["replay_alone"] = Value::Object(alone);
            m.notes = goal_lines(profile, &m.doc);
            runner::finish(paths, m, as_json)
        });
        drop(disks);
        outcome?;
    }
    Ok(())
}

/// Files removed when this is dropped.
#[derive(Default)]
struct RemovedOnDrop(Vec<PathBuf>);

impl RemovedOnDrop {
    /// Adds `path`; returns it.
    fn add(&mut self, path: PathBuf) -> PathBuf {
        self.0.push(path.clone());
        path
    }
}

impl Drop for RemovedOnDrop {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_disk_reads() {
        let ev = "# events\n100 readahead_replay_start files=3 bytes=9\n2000000000 readahead_replay bytes=22000000 duration_ns=500000000 missed_bytes=1000000\n3000000000 readahead_hit replayed=5 resident=5 ratio=0.998\n";
        assert_eq!(event_field(ev, "readahead_replay", "bytes"), Some(22e6));
        assert_eq!(event_field(ev, "readahead_hit", "ratio"), Some(0.998));
        assert_eq!(event_field(ev, "readahead_learn", "bytes"), None);
        assert_eq!(
            event_field(ev, "readahead_replay_start", "duration_ns"),
            None
        );
        let ds = "1.00\n 254 0 vda 10 0 100 5 0 0 0 0 0 0 0\n\n2.00\n 254 0 vda 20 0 300 9 0 0 0 0 0 0 0\n 254 16 vdb 1 0 7 1 0 0 0 0 0 0 0\n";
        assert_eq!(disk_read_bytes(ds), Some(300 * 512));
        assert_eq!(disk_read_bytes("1.0\n"), None);
    }

    #[test]
    fn the_relocations_output_is_checked() {
        let ok = "[  1/3] 0.1 MB in 7 extents: moved, 1 extents now  /usr/bin/bash\nmoved 2 files (0.3 MB) into a region of 1 run; 1 skipped\nreplay's requests: 40 before, 3 after\nBP_RELOCATE_RC=0\n";
        assert_eq!(relocated_files(ok).unwrap(), 2);
        let none = "moved 0 files (0.0 MB) into a region of 0 runs; 3 skipped\nBP_RELOCATE_RC=0\n";
        let e = relocated_files(none).unwrap_err().to_string();
        assert!(
            e.contains("moved no file") && e.contains("3 skipped"),
            "{e}"
        );
        let refused = "bootprint: /var/lib is on tmpfs, not ext4\nBP_RELOCATE_RC=1\n";
        let e = relocated_files(refused).unwrap_err().to_string();
        assert!(e.contains("exit 1") && e.contains("tmpfs"), "{e}");
        assert!(relocated_files("").is_err());
    }

    /// What the guest prints for the replays alone: disk counters before and after each, its
    /// figures, a relocation between, and a line cut short.
    const ALONE_OUTPUT: &str = "\
BP_ALONE_DISK0 replay  254       0 vda 100 0 2000 50 0 0 0 0 0 1000 0 0 0 0 0 0 0
BP_ALONE_DISK1 replay  254       0 vda 350 0 90000 950 0 0 0 0 0 3500 0 0 0 0 0 0 0
BP_ALONE_JSON replay { \"pack\": \"/p\", \"seconds\": 5.0, \"mb_s\": 8.0, \"bytes\": 40000000, \"timed_out\": 0}
moved 2 files (0.3 MB) into a region of 1 run; 1 skipped
BP_RELOCATE_RC=0
BP_ALONE_JSON replay-relocated {\"seconds\": 1.0, \"mb_s\": 40.0}
BP_ALONE_DISK0 replay/data  254       0 vda 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
BP_ALONE_DISK1 replay/data  254       0 vda 2 0 8 0 0 0 0 0 0 10 0 0 0 0 0 0 0
BP_ALONE_JSON replay/data {\"seconds\": 0.5, \"mb_s\": 80.0}
BP_ALONE_JSON broken {\"seconds\":
";

    #[test]
    fn the_replays_alone_are_read_from_the_guests_output() {
        let a = alone_figures(ALONE_OUTPUT);
        assert_eq!(
            a.keys().collect::<Vec<_>>(),
            ["replay", "replay-relocated", "replay/data"],
            "{a:?}"
        );
        // A name that is the start of another's does not take the other's counters.
        assert_eq!(a["replay/data"]["disk_reads"], 1);
        assert_eq!(a["replay/data"]["disk_busy"], 0.02);
        let r = &a["replay"];
        assert_eq!(r["mb_s"], 8.0);
        assert_eq!(r["disk_reads"], 250);
        assert_eq!(r["disk_mb"], 45.056);
        assert_eq!(r["disk_busy"], 0.5);
        assert!(r.get("pack").is_none());
        // No counters for it: the replay's own figures alone.
        assert!(a["replay-relocated"].get("disk_mb").is_none());
    }

    #[test]
    fn goals_of_the_replays_alone() {
        let a = alone_figures(ALONE_OUTPUT);
        let doc = serde_json::json!({
            "variants": [{"name": "replay-relocated", "median": {"replay_mb_s": 20.0}, "ratio_host_login_s": 0.7}],
            "replay_alone": a,
        });
        let l = goal_lines(Profile::HddSeek, &doc);
        assert!(
            l[1].contains("alone from a cold cache 40.0 MB/s = 57 % of the drive missed"),
            "{}",
            l[1]
        );
        let data = serde_json::json!({"replay-relocated/data":
            {"mb_s": 60.0, "disk_mb": 100.0, "seconds": 2.0}});
        let doc = serde_json::json!({
            "variants": [{"name": "replay-relocated", "median": {}, "ratio_host_login_s": 0.7}],
            "replay_alone": data,
        });
        let l = goal_lines(Profile::HddSeek, &doc);
        assert!(
            l[1].contains(
                "its data only (inodes and paths cached) 60.0 MB/s = 86 % of the drive met \
                 (the disk 71 %)"
            ) && !l[1].contains("cold"),
            "{}",
            l[1]
        );
    }

    #[test]
    fn a_line_per_replay_alone() {
        let alone = serde_json::json!({
            "replay": {"bytes": 45e6, "seconds": 15.0, "mb_s": 3.0, "requests": 812,
                       "disk_mb": 47.1, "disk_reads": 900, "disk_busy": 0.97},
            "replay-relocated": {"bytes": 45e6, "seconds": 9.0, "mb_s": 5.0, "requests": 300,
                                 "timed_out": 1},
        });
        let l = alone_lines(Profile::HddSeek, alone.as_object().unwrap());
        assert_eq!(l.len(), 3, "{l:?}");
        assert!(l[0].contains("goal at least 56.0 MB/s"), "{}", l[0]);
        assert!(
            l[1].contains(
                "45.0 MB in 15.00 s = 3.0 MB/s = 4 % of the drive missed (the disk 4 %); 812 requests"
            )
                && l[1].contains("read 47.1 MB in 900 reads (3.1 MB/s), busy 97 %"),
            "{}",
            l[1]
        );
        assert!(l[2].contains("(stopped at its time limit)") && !l[2].contains("busy"));
        let f = alone_lines(Profile::Fast, alone.as_object().unwrap());
        assert!(
            !f[0].contains("goal") && f[1].contains("= 3.0 MB/s; 812"),
            "{f:?}"
        );
    }

    #[test]
    fn the_relocation_script_is_shell() {
        let o = std::process::Command::new("sh")
            .args(["-n", "-c", RELOCATE_SCRIPT])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(RELOCATE_SCRIPT.contains("readahead relocate --force-media"));
    }

    #[test]
    fn the_variants_and_their_switches() {
        let v = variants(Profile::HddSeek, Path::new("/l.raw"), Path::new("/r.raw"));
        let names: Vec<&str> = v.iter().map(|v| v.name).collect();
        assert_eq!(
            names,
            [
                "none",
                "replay",
                "replay-merged",
                "replay-merged-metadata",
                "replay-relocated",
                "replay-relocated-metadata"
            ]
        );
        assert!(!v[0].opts.append.contains("readahead=1") && v[0].opts.disk_from.is_none());
        assert!(v[1]
            .opts
            .append
            .contains("bootprint.readahead_merge_gap_kb=0"));
        assert!(v[1..].iter().all(|v| v.opts.append.contains("readahead=1")));
        assert!(!v[2].opts.append.contains("merge_gap"));
        for (i, disk, meta) in [
            (1, "/l.raw", "0"),
            (2, "/l.raw", "0"),
            (3, "/l.raw", "1"),
            (4, "/r.raw", "0"),
            (5, "/r.raw", "1"),
        ] {
            assert_eq!(v[i].opts.disk_from.as_deref(), Some(Path::new(disk)));
            assert!(v[i]
                .opts
                .append
                .ends_with(&format!("bootprint.readahead_metadata={meta}")));
        }
        assert_eq!(
            v[4].opts.append.replace("metadata=0", "metadata=1"),
            v[5].opts.append
        );
        assert!(v.iter().all(|v| v.opts.record
            && v.opts.profile == Profile::HddSeek
            && v.opts.append.starts_with(RECORD_TO_BOOT_DONE)
            && !v.opts.append.contains("readahead_media")));
        // A card says what it is, as the real one would.
        let v = variants(Profile::SdScaled, Path::new("/l.raw"), Path::new("/r.raw"));
        assert!(v
            .iter()
            .all(|v| v.opts.append.contains("bootprint.readahead_media=card")));
    }

    #[test]
    fn goals_beside_the_figures() {
        let doc = serde_json::json!({"variants": [
            {"name": "none", "median": {"replay_mb_s": null}, "ratio_host_login_s": 1.0},
            {"name": "replay", "median": {"replay_mb_s": 10.0}, "ratio_host_login_s": 0.9},
            {"name": "replay-relocated", "median": {"replay_mb_s": 60.0}, "ratio_host_login_s": 0.7},
        ]});
        let l = goal_lines(Profile::HddSeek, &doc);
        assert_eq!(l.len(), 3, "{l:?}");
        assert!(
            l[0].contains("0.75x") && l[0].contains("56.0 MB/s"),
            "{}",
            l[0]
        );
        assert!(
            l[1].contains("0.900x missed") && l[1].contains("14 % of the drive missed"),
            "{}",
            l[1]
        );
        assert!(
            l[2].contains("0.700x met") && l[2].contains("86 % of the drive met"),
            "{}",
            l[2]
        );
        let f = goal_lines(Profile::Fast, &doc);
        assert!(
            f[0].contains("1.02x")
                && f[1].contains("0.900x met")
                && f[1].contains("no drive limit"),
            "{f:?}"
        );
    }

    #[test]
    fn figures_from_a_written_trace() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::write(
            dir.join("events.log"),
            "5000000000 milestone name=text_login pid=9 comm=getty\n2000000000 readahead_replay bytes=20000000 duration_ns=1000000000\n",
        )
        .unwrap();
        let f = figures_from_trace(dir);
        assert_eq!(f["text_login_s"], Some(5.0));
        assert_eq!(f["replay_mb"], Some(20.0));
        assert_eq!(f["replay_mb_s"], Some(20.0));
        assert_eq!(f["read_mb"], None);
        assert_eq!(f["replay_disk_busy"], None);
    }

    // Three samples in the form of proc_diskstats.log (the disk's line only, the counts made
    // up); fields 4, 6, 13: reads, sectors read, io ms.
    const DISKSTATS: &str = "\
1196
 254       0 vda 2000 347 100000 6312 1 0 8 1439 0 12000 9182 0 0 0 0 1 1429

2000
 254       0 vda 2900 377 150000 6609 1 0 8 1439 2 20000 9478 0 0 0 0 1 1429

4000
 254       0 vda 3810 400 200000 6700 1 0 8 1439 2 40000 9500 0 0 0 0 1 1429
";

    #[test]
    fn what_the_disk_did_while_the_replay_ran() {
        // From the sample at or before 12.0 s (11.96) to the one at or after 30 s (40.00).
        let w = disk_window(DISKSTATS, 12.0, 30.0).unwrap();
        assert!((w.secs - 28.04).abs() < 1e-9, "{w:?}");
        assert_eq!((w.reads, w.read_bytes), (1810, 100_000 * 512));
        assert!((w.busy - 28.0 / 28.04).abs() < 1e-9, "{w:?}");
        // Sampling began after the start: from the first sample. None after the end.
        assert_eq!(disk_window(DISKSTATS, 5.0, 30.0), Some(w));
        assert_eq!(disk_window(DISKSTATS, 12.0, 50.0), None);
        assert_eq!(disk_window("", 12.0, 30.0), None);

        let tmp = tempfile::tempdir().unwrap();
        fs::write(
            tmp.path().join("events.log"),
            "11960000000 readahead_replay_start files=432 bytes=45176145\n\
             83306101340 readahead_replay bytes=45168081 duration_ns=28070540310 settled_ns=28000000000\n",
        )
        .unwrap();
        fs::write(tmp.path().join("proc_diskstats.log"), DISKSTATS).unwrap();
        let f = figures_from_trace(tmp.path());
        assert_eq!(f["replay_s"], Some(28.0));
        assert_eq!(f["replay_disk_busy"], Some(round3(28.0 / 28.04)));
        assert_eq!(f["replay_disk_mb_s"], Some(round3(51.2 / 28.04)));
        assert_eq!(
            f["replay_disk_req_kb"],
            Some(round3(51_200_000.0 / 1810.0 / 1024.0))
        );
        let doc = serde_json::json!({"variants": [
            {"name": "none", "median": {}, "ratio_host_login_s": 1.0},
            {"name": "replay", "median": {"replay_mb_s": 1.6, "replay_disk_busy": 0.998,
              "replay_disk_mb_s": 1.83, "replay_disk_req_kb": 27.6}, "ratio_host_login_s": 0.9},
        ]});
        let l = goal_lines(Profile::SdScaled, &doc);
        assert!(
            l[1].ends_with(
                "the disk was busy 100 % and read 1.8 MB/s for everyone, in 28 KiB requests"
            ),
            "{}",
            l[1]
        );
    }
}
