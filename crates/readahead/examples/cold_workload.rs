//! Benchmark (not a test; `make bench` runs it): a workload that reads scattered pieces of a
//! few thousand files, from a cold page cache, with and without a replay of the pack learned
//! from it, on this machine's real filesystem and disk. Needs root (fanotify filesystem
//! marks).
//!
//! ```text
//! cargo run --release -p bootprint-readahead --example cold_workload -- [FILES] [ROUNDS] [DIR]
//! ```
//!
//! Defaults: 3000 files (4-64 KiB each, written in a shuffled order so they are not laid out
//! in the order they are read), 5 rounds, a directory under /var/tmp (a disk filesystem; /tmp
//! may be tmpfs, where nothing is ever cold). The page cache is emptied with
//! posix_fadvise(DONTNEED) on these files only, so the rest of the machine is not disturbed.
//! Each round: cold workload; then cold replay followed by the workload. Prints the medians
//! and the ratio (replay + workload) / cold.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use readahead::learn::{self, LearnConfig, PackOptions};
use readahead::replay::{self, ReplayOptions};
use readahead::sys;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 17
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Files of 4-64 KiB, created in a shuffled order and synced.
fn setup(dir: &Path, n: usize) -> Vec<PathBuf> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).expect("create the bench directory");
    let mut rng = Rng(7);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, (rng.next() as usize) % (i + 1));
    }
    let files: Vec<PathBuf> = (0..n)
        .map(|i| dir.join(format!("d{:02}/f{i:05}", i % 64)))
        .collect();
    for i in order {
        let p = &files[i];
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        let size = 4096 * (1 + rng.next() % 16) as usize;
        let buf: Vec<u8> = (0..size).map(|b| (b as u64 ^ rng.0) as u8).collect();
        let mut f = File::create(p).unwrap();
        f.write_all(&buf).unwrap();
        f.sync_all().unwrap();
    }
    files
}

fn drop_cache(files: &[PathBuf]) {
    for p in files {
        if let Ok(f) = File::open(p) {
            let _ = sys::fadvise_dontneed(&f, 0, 0);
        }
    }
}

/// Opens every file in a fixed scattered order and reads 1 KiB at two places in it.
fn workload(files: &[PathBuf]) {
    let mut rng = Rng(99);
    let mut buf = [0u8; 1024];
    for _ in 0..files.len() {
        let p = &files[(rng.next() as usize) % files.len()];
        let f = File::open(p).unwrap();
        let len = f.metadata().unwrap().len();
        let _ = f.read_at(&mut buf, 0);
        let _ = f.read_at(&mut buf, (rng.next() % len) & !1023);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(3000);
    let rounds: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let dir = args
        .get(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/var/tmp/bp-cold-{}", std::process::id())));
    if ::sys::euid() != 0 {
        eprintln!("cold_workload: needs root (fanotify filesystem marks)");
        std::process::exit(2);
    }
    eprintln!("cold_workload: writing {n} files under {}", dir.display());
    let files = setup(&dir, n);
    drop_cache(&files);

    let learner = learn::LearnThread::spawn(&LearnConfig {
        only_under: vec![dir.clone()],
        ..LearnConfig::default()
    })
    .expect("fanotify");
    workload(&files);
    std::thread::sleep(Duration::from_millis(300));
    let (pack, _) = learn::build_pack(&learner.stop(), &PackOptions::default());

    let (mut cold, mut rep, mut after) = (vec![], vec![], vec![]);
    for _ in 0..rounds {
        drop_cache(&files);
        let t = Instant::now();
        workload(&files);
        cold.push(t.elapsed().as_secs_f64());

        drop_cache(&files);
        let t = Instant::now();
        let st = replay::replay(&pack, &ReplayOptions::default());
        rep.push(st.settled_ns as f64 / 1e9);
        let t2 = Instant::now();
        workload(&files);
        after.push(t2.elapsed().as_secs_f64());
        let _ = t;
    }
    let (c, r, a) = (median(cold), median(rep), median(after));
    println!(
        "cold_workload: {n} files, pack {} entries {:.1} MB ({} order); medians of {rounds}: \
         cold workload {c:.3} s; replay {r:.3} s then workload {a:.3} s; \
         (replay + workload) / cold = {:.3}",
        pack.entries.len(),
        pack.bytes() as f64 / 1e6,
        if pack.header.rotational {
            "disk"
        } else {
            "first-access"
        },
        (r + a) / c
    );
    let _ = fs::remove_dir_all(&dir);
}
