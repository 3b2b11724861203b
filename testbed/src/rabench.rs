//! `bench readahead`: boots without readahead, learning boots and replay boots of the aged
//! image (see `age`), interleaved, per drive profile. Before the rounds of a profile, one
//! learning boot under that profile keeps its disk: every replay boot starts from a copy of
//! it, so each replays the same pack (and `bootprint.readahead_compare_every=0` keeps the
//! replay boots from turning into comparison boots). All boots record, so the trace gives the
//! milestones, what the boot read and what the replay did.

use std::fs;
use std::path::Path;

use crate::age;
use crate::bench::{self, Benchmark, Figures, Variant};
use crate::image::{self, Image};
use crate::qemu::{self, round3, BootOpts, BootResult, Profile};
use crate::util::{Paths, Result};

/// The value of `key=` in the first event of `kind`.
pub fn event_field(events: &str, kind: &str, key: &str) -> Option<f64> {
    let prefix = format!("{key}=");
    events
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some(kind))
        .find_map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix(&prefix))
                .and_then(|v| v.parse::<f64>().ok())
        })
}

/// Bytes read from the guest's disk (`vda`) by the last sample of `proc_diskstats.log`.
pub fn disk_read_bytes(diskstats_log: &str) -> Option<u64> {
    diskstats_log
        .lines()
        .rev()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 5 && f[2] == "vda")
                .then(|| f[5].parse::<u64>().ok())
                .flatten()
        })
        .map(|sectors| sectors * 512)
}

/// What one boot's trace says about readahead.
pub fn figures_from_trace(dir: &Path) -> Figures {
    let events = fs::read_to_string(dir.join("events.log")).unwrap_or_default();
    let diskstats = fs::read_to_string(dir.join("proc_diskstats.log")).unwrap_or_default();
    let mb = |b: Option<f64>| b.map(|x| round3(x / 1e6));
    let mut f = bench::milestone_figures(&events);
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

fn readahead_figures(r: &BootResult) -> Figures {
    r.trace_dir
        .as_deref()
        .map(figures_from_trace)
        .unwrap_or_default()
}

/// Boots a learning boot with `learn`'s options, keeping its disk; returns the disk.
fn learned_disk(paths: &Paths, img: &Image, learn: &BootOpts) -> Result<std::path::PathBuf> {
    eprintln!(
        "bench readahead: learning boot ({}, {}) whose disk replay boots start from",
        learn.profile.name(),
        learn.append
    );
    let mut keep = learn.clone();
    keep.keep_disk = true;
    let learned = qemu::boot(paths, img, &keep)?;
    eprintln!("bench readahead: learned {:?}", readahead_figures(&learned));
    learned
        .kept_disk()
        .ok_or_else(|| crate::util::Error::fail("the learning boot kept no disk"))
}

/// The profile's bandwidth limit in MB/s, if it has one.
fn bandwidth_mb_s(p: Profile) -> Option<f64> {
    p.limits().map(|(bps, _)| bps as f64 / 1e6)
}

/// Runs the benchmark for each profile (all three unless one is given).
pub fn run(
    paths: &Paths,
    runs: usize,
    profiles: &[Profile],
    as_json: bool,
    cargo: bool,
    base: Option<Image>,
) -> Result<()> {
    let base = match base {
        Some(img) => img,
        None => image::ensure(paths, cargo)?,
    };
    let aged = age::aged(paths, &base, cargo)?;
    for &profile in profiles {
        let mut learn = BootOpts::new(profile);
        learn.record = true;
        learn.append = "bootprint.readahead=1".into();
        let disk = learned_disk(paths, &aged, &learn)?;
        // On a throttled drive, also a pack in first-access order: the throttle counts
        // requests and models no head, so physical order may only delay what the boot
        // needs first (docs/readahead.md, Order).
        let access_disk = if profile != Profile::Fast {
            let mut l = learn.clone();
            l.append.push_str(" bootprint.readahead_order=access");
            Some(learned_disk(paths, &aged, &l)?)
        } else {
            None
        };
        let mut none = BootOpts::new(profile);
        none.record = true;
        let mut replay = BootOpts::new(profile);
        replay.record = true;
        replay.append = "bootprint.readahead=1 bootprint.readahead_compare_every=0".into();
        replay.disk_from = Some(disk.clone());
        let mut variants = vec![
            Variant {
                name: "none",
                opts: none,
                extra: readahead_figures,
                image: None,
            },
            Variant {
                name: "learn",
                opts: learn,
                extra: readahead_figures,
                image: None,
            },
            Variant {
                name: "replay",
                opts: replay.clone(),
                extra: readahead_figures,
                image: None,
            },
        ];
        // On a throttled drive, also the replay in the best-effort I/O class (earlier tools
        // chose it on rotating disks): does idle priority cost the replay its head start?
        if let Some(ad) = &access_disk {
            let mut be = replay.clone();
            be.append
                .push_str(" bootprint.readahead_io_class=best-effort");
            variants.push(Variant {
                name: "replay-be",
                opts: be,
                extra: readahead_figures,
                image: None,
            });
            let mut acc = replay;
            acc.disk_from = Some(ad.clone());
            variants.push(Variant {
                name: "replay-access",
                opts: acc,
                extra: readahead_figures,
                image: None,
            });
        }
        let b = Benchmark {
            name: "readahead",
            about: "readahead on the aged image: no readahead, learning boots, replay boots (idle and best-effort I/O class; physical and first-access order)",
            variants,
            seasoned_by: None,
            season_each: false,
        };
        let outcome = bench::run_built(paths, &aged, &b, runs, profile, as_json);
        if let Some(bw) = bandwidth_mb_s(profile) {
            println!(
                "readahead ({}): replay throughput goal: at least {:.1} MB/s (80% of {bw:.0} MB/s)",
                profile.name(),
                0.8 * bw
            );
        }
        let _ = fs::remove_file(&disk);
        if let Some(d) = &access_disk {
            let _ = fs::remove_file(d);
        }
        outcome?;
    }
    Ok(())
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
    }
}
