//! `bench readahead-pages`: the readahead learner's two ways of finding the pages a boot
//! used, on one image: the filemap tracepoints (each page as the boot uses it; Linux 6.10 and
//! later, so Debian 13's kernel: `--release 13`) and mincore(2) at boot done (every page of
//! the opened files still in the page cache then, read by the boot or not). Each source
//! learns its own pack in a learning boot of its own (`bootprint.readahead_pages=`), whose
//! figures go into the result (`learning`: the pack's size, how many pages the tracepoints
//! saw and lost); then the boots replaying each pack are measured against boots without
//! readahead: how much each replays, how much of it the boot used (`hit`), what the disk
//! read, and the login.

use std::fs;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::bench::figures::{event_field, event_fields};
use crate::bench::rabench::{bench_append, learned_disk, readahead_figures};
use crate::bench::registry::Request;
use crate::bench::runner::{self, Benchmark, Figures, Variant};
use crate::vm::image;
use crate::vm::qemu::{BootOpts, BootResult, Profile};
use crate::vm::util::{Paths, Result};

/// The learner's page sources, as `bootprint.readahead_pages=` names them: `auto` is the
/// filemap tracepoints where the kernel has them.
pub const SOURCES: [(&str, &str); 2] = [("filemap", "auto"), ("mincore", "mincore")];

/// A boot with readahead and the recorder, no control boots (every boot replays).
fn readahead_opts(profile: Profile, pages: &str) -> BootOpts {
    let mut o = BootOpts::new(profile);
    o.record = true;
    o.append = format!(
        "{} bootprint.readahead=1 bootprint.readahead_compare_every=0 bootprint.readahead_pages={pages}",
        bench_append(profile)
    );
    o
}

/// What a learning boot's trace says of its pack: where its pages came from (1 when the
/// tracepoints, as asked), its size, and the tracepoints' event and loss counts.
pub fn learning_figures(events: &str) -> Figures {
    let mut f = Figures::new();
    let from_filemap = event_fields(events, "readahead_learn").map(|fields| {
        if fields
            .iter()
            .any(|(k, v)| k == "pages_from" && v == "filemap")
        {
            1.0
        } else {
            0.0
        }
    });
    f.insert("pages_from_filemap".into(), from_filemap);
    for (figure, field) in [
        ("pack_files", "entries"),
        ("trace_events", "events"),
        ("trace_lost", "trace_lost"),
    ] {
        f.insert(figure.into(), event_field(events, "readahead_learn", field));
    }
    f.insert(
        "pack_mb".into(),
        event_field(events, "readahead_learn", "bytes").map(|b| crate::vm::qemu::round3(b / 1e6)),
    );
    f
}

/// A replaying boot's figures, and whether it learned again (1: the pack was replaced, so
/// later boots of the variant replay another pack): `pack_mb` is the size of a pack the
/// boot learned, which every `readahead_learn` event gives.
fn replay_figures(r: &BootResult) -> Figures {
    let mut f = readahead_figures(r);
    let learned = f.get("pack_mb").is_some_and(Option::is_some);
    f.insert(
        "learned_again".into(),
        Some(if learned { 1.0 } else { 0.0 }),
    );
    f
}

/// The variants: no readahead (the baseline), then each source's pack replayed from its
/// learning boot's disk.
pub fn variants(profile: Profile, learned: &[PathBuf]) -> Vec<Variant> {
    let mut none = BootOpts::new(profile);
    none.record = true;
    none.append = bench_append(profile);
    let mut v = vec![Variant {
        name: "none",
        opts: none,
        extra: replay_figures,
        image: None,
    }];
    for ((name, pages), disk) in SOURCES.iter().zip(learned) {
        let mut o = readahead_opts(profile, pages);
        o.disk_from = Some(disk.clone());
        v.push(Variant {
            name,
            opts: o,
            extra: replay_figures,
            image: None,
        });
    }
    v
}

/// `bench readahead-pages` as the command line asks it.
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    let profile = req.profile();
    let img = image::ensure(paths, req.cargo)?;
    let mut disks = Vec::new();
    let mut learning = serde_json::Map::new();
    let mut failed = None;
    for (name, pages) in SOURCES {
        match learned_disk(paths, &img, &readahead_opts(profile, pages)) {
            Ok((disk, r)) => {
                let events = runner::trace_file(&r, "events.log").unwrap_or_default();
                learning.insert(name.into(), json!(learning_figures(&events)));
                disks.push(disk);
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let outcome = match failed {
        Some(e) => Err(e),
        None => {
            let b = Benchmark {
                name: "readahead-pages",
                about: "the readahead learner's page sources on one image: no readahead; the pack learned with the filemap tracepoints, replayed; the pack learned with mincore, replayed",
                variants: variants(profile, &disks),
                seasoned_by: None,
                season_each: false,
            };
            runner::measure(paths, &img, &b, req.runs, profile).and_then(|mut m| {
                m.notes = learning_lines(&learning);
                m.doc["learning"] = Value::Object(learning);
                runner::finish(paths, m, req.json)
            })
        }
    };
    for d in &disks {
        let _ = fs::remove_file(d);
    }
    outcome.map(|_| ())
}

/// One line per learning boot, for the printed result.
pub fn learning_lines(learning: &serde_json::Map<String, Value>) -> Vec<String> {
    let num = |v: &Value, k: &str| v[k].as_f64().map_or("-".into(), |x| format!("{x}"));
    learning
        .iter()
        .map(|(name, v)| {
            format!(
                "learning {name}: pack {} MB in {} files; pages from the tracepoints {}; trace events {}, lost {}",
                num(v, "pack_mb"),
                num(v, "pack_files"),
                if v["pages_from_filemap"].as_f64() == Some(1.0) { "yes" } else { "no" },
                num(v, "trace_events"),
                num(v, "trace_lost"),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_learning_boot_says_where_its_pages_came_from() {
        let ev = "# events\n6580433147 readahead_learn_start why=io\n\
                  45192654928 readahead_learn files=471 entries=451 bytes=56393760 metadata_bytes=1200128 rotational=1 disk_bound=0 budget=278170350 events=10236 overflowed=0 pages_from=filemap trace_lost=0\n";
        let f = learning_figures(ev);
        assert_eq!(f["pages_from_filemap"], Some(1.0));
        assert_eq!(f["pack_files"], Some(451.0));
        assert_eq!(f["pack_mb"], Some(56.394));
        assert_eq!(f["trace_events"], Some(10236.0));
        assert_eq!(f["trace_lost"], Some(0.0));
        let f = learning_figures(&ev.replace("pages_from=filemap", "pages_from=mincore"));
        assert_eq!(f["pages_from_filemap"], Some(0.0));
        // No learning at all: nothing claimed.
        assert_eq!(learning_figures("# events\n")["pages_from_filemap"], None);
    }

    #[test]
    fn each_source_replays_its_own_pack() {
        let disks = [
            PathBuf::from("/d/filemap.raw"),
            PathBuf::from("/d/mincore.raw"),
        ];
        let v = variants(Profile::Fast, &disks);
        let names: Vec<&str> = v.iter().map(|v| v.name).collect();
        assert_eq!(names, ["none", "filemap", "mincore"]);
        assert!(!v[0].opts.append.contains("bootprint.readahead=1"));
        assert_eq!(v[1].opts.disk_from.as_deref(), Some(disks[0].as_path()));
        assert!(v[1].opts.append.contains("bootprint.readahead_pages=auto"));
        assert!(v[2]
            .opts
            .append
            .contains("bootprint.readahead_pages=mincore"));
        assert_eq!(v[2].opts.disk_from.as_deref(), Some(disks[1].as_path()));
    }
}
