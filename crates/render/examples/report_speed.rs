//! Benchmark of `bootprint report` (not a test): `cargo run --release -p bootprint-render
//! --example report_speed [-- RUNS]`.
//!
//! Synthesises a 10-minute trace at 50 Hz with 2,000 processes (60 alive throughout, among
//! them the recorder; 1,940 more living 15 s each, started evenly; a getty at 60 s so the
//! budgets and the boot-done view have a login), then runs what the text report does (open,
//! analyse, phases against budgets, boot-done view, text) RUNS times (default 5) and prints the
//! median; `advise` (used by `--html` and `bootprint advise`) is timed beside it. The goal is
//! at most 1 s for the report.
//!
//! `BOOTPRINT_BENCH_DIR=DIR` puts the trace in DIR and keeps it (and reuses it when DIR
//! already holds one, so old and new builds can be timed on the same file, and `bootprint
//! report --json DIR` compared); `BOOTPRINT_BENCH_KEEP` keeps the default temporary one.

use std::io::Write;
use std::time::Instant;

use trace::writer::{write_block, PsRecord};

fn synthesise(dir: &std::path::Path) -> (u64, u64) {
    std::fs::create_dir_all(dir).unwrap();
    let blocks = 10 * 60 * 50u64;
    let file = |n: &str| std::io::BufWriter::new(std::fs::File::create(dir.join(n)).unwrap());
    let (mut ps, mut stat, mut disk) = (
        file("proc_ps.log"),
        file("proc_stat.log"),
        file("proc_diskstats.log"),
    );
    let short = 1940u64;
    let mut lines = 0u64;
    let mut body = Vec::with_capacity(64 * 1024);
    for b in 0..blocks {
        let t_cs = 500 + b * 2;
        body.clear();
        let mut add = |pid: u32, comm: &str, ppid: u32, start_cs: u64| {
            let r = PsRecord {
                pid,
                comm: comm.to_string(),
                state: if b % 7 == 0 { 'D' } else { 'S' },
                ppid,
                utime: (t_cs - start_cs) / 10,
                stime: (t_cs - start_cs) / 20,
                priority: 20,
                nice: 0,
                num_threads: 1,
                starttime: start_cs,
                rss: 100,
                blkio_ticks: (t_cs - start_cs) / 50,
            };
            r.write_line(&mut body).unwrap();
            lines += 1;
        };
        add(1, "init", 0, 100);
        add(2, "bootprint-boot", 1, 100);
        for pid in 3..=59u32 {
            add(pid, "daemon", 1, 100);
        }
        if t_cs >= 6000 {
            add(60, "getty", 1, 6000);
        }
        for k in 0..short {
            let start = 500 + k * (blocks * 2) / short;
            if start <= t_cs && t_cs < start + 1500 {
                add(1000 + k as u32, "worker", 3 + (k % 50) as u32, start);
            }
        }
        write_block(&mut ps, t_cs, &body).unwrap();
        let busy = b * 3;
        let cpu = format!(
            "cpu  {busy} 0 {busy} {} 10 0 0 0 0 0\ncpu0 0\ncpu1 0\n",
            b * 4
        );
        write_block(&mut stat, t_cs, cpu.as_bytes()).unwrap();
        let d = format!("   8 0 sda {b} 0 {} 0 0 0 {b} 0 0 {} 0\n", b * 8, b);
        write_block(&mut disk, t_cs, d.as_bytes()).unwrap();
    }
    ps.flush().unwrap();
    stat.flush().unwrap();
    disk.flush().unwrap();
    std::fs::write(
        dir.join("header"),
        "bootprint.format = 1\nbootprint.clk_tck = 100\nbootprint.ncpus = 2\n",
    )
    .unwrap();
    (
        lines,
        std::fs::metadata(dir.join("proc_ps.log")).unwrap().len(),
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let given = std::env::var_os("BOOTPRINT_BENCH_DIR").map(std::path::PathBuf::from);
    // Removed on drop unless the trace is kept below.
    let scratch = tempfile::Builder::new()
        .prefix("bootprint-report-speed-")
        .tempdir()
        .unwrap();
    let dir = given
        .clone()
        .unwrap_or_else(|| scratch.path().to_path_buf());
    let (lines, size) = match &given {
        Some(d) if d.join("header").exists() => {
            let ps = std::fs::read(d.join("proc_ps.log")).unwrap();
            let lines = ps
                .split(|&b| b == b'\n')
                .filter(|l| l.contains(&b'('))
                .count();
            (lines as u64, ps.len() as u64)
        }
        _ => synthesise(&dir),
    };
    let mut report = Vec::new();
    let mut advise = Vec::new();
    let mut procs = 0;
    for _ in 0..runs {
        let t0 = Instant::now();
        let trace = trace::Trace::open(&dir).unwrap();
        let model = analyze::analyze(&trace).unwrap();
        let phases = analyze::budget::phases(&model, &analyze::budget::Budgets::default());
        let settle = analyze::settle::settle(&model);
        let mut sink = std::io::sink();
        render::text::write(&model, &trace.origin, &mut sink).unwrap();
        render::judge::write_budgets(&mut sink, &phases, "defaults").unwrap();
        render::judge::write_settle(&mut sink, &settle).unwrap();
        report.push(t0.elapsed().as_secs_f64());
        let t1 = Instant::now();
        let findings = analyze::advise::advise(&model, None);
        advise.push(t1.elapsed().as_secs_f64());
        procs = model.processes.len();
        assert!(findings.iter().all(|f| !f.evidence.is_empty()));
    }
    // BOOTPRINT_BENCH_KEEP keeps the trace for profiling (`perf record`, ...).
    if given.is_some() || std::env::var_os("BOOTPRINT_BENCH_KEEP").is_some() {
        println!("report_speed: trace kept in {}", dir.display());
        if given.is_none() {
            let _ = scratch.keep();
        }
    }
    println!(
        "report_speed: 10 min at 50 Hz, {procs} processes, {lines} proc_ps lines ({} MB), {runs} runs",
        size / 1_000_000
    );
    println!(
        "report_speed: report median {:.3} s (min {:.3}, max {:.3}); advise median {:.3} s",
        median(report.clone()),
        report.iter().cloned().fold(f64::MAX, f64::min),
        report.iter().cloned().fold(0.0, f64::max),
        median(advise)
    );
}
