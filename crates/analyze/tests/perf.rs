//! Speed check (ignored by default; run in release):
//! `cargo test --release -p bootprint-analyze --test perf -- --ignored --nocapture`
//! Builds a 10-minute trace at 50 Hz with 2,000 processes (about 100 alive at any time) and
//! times reading plus analysing it. The goal is about a second; the figure is printed, and
//! the test fails only far above it (shared machines are noisy).

use std::io::Write;
use std::time::Instant;

use trace::writer::{write_block, PsRecord};

#[test]
#[ignore]
fn ten_minutes_at_50_hz_with_2000_processes() {
    let dir = std::env::temp_dir().join(format!("bootprint-perf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let blocks = 10 * 60 * 50u64;
    let mut ps = std::io::BufWriter::new(std::fs::File::create(dir.join("proc_ps.log")).unwrap());
    let mut stat =
        std::io::BufWriter::new(std::fs::File::create(dir.join("proc_stat.log")).unwrap());
    let mut disk =
        std::io::BufWriter::new(std::fs::File::create(dir.join("proc_diskstats.log")).unwrap());
    // 60 processes live throughout; 1,940 more each live 15 s, started evenly over the trace.
    let short = 1940u64;
    let mut lines = 0u64;
    let mut body = Vec::with_capacity(64 * 1024);
    for b in 0..blocks {
        let t_cs = 500 + b * 2;
        body.clear();
        let mut add = |pid: u32, comm: &str, start_cs: u64| {
            let r = PsRecord {
                pid,
                comm: comm.to_string(),
                state: if b % 7 == 0 { 'D' } else { 'S' },
                ppid: 1,
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
        for pid in 1..=60u32 {
            add(pid, "daemon", 100);
        }
        for k in 0..short {
            let start = 500 + k * (blocks * 2) / short;
            if start <= t_cs && t_cs < start + 1500 {
                add(1000 + k as u32, "worker", start);
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
    drop((ps, stat, disk));
    std::fs::write(
        dir.join("header"),
        "bootprint.format = 1\nbootprint.clk_tck = 100\nbootprint.ncpus = 2\n",
    )
    .unwrap();
    let size = std::fs::metadata(dir.join("proc_ps.log")).unwrap().len();

    let t0 = Instant::now();
    let trace = trace::Trace::open(&dir).unwrap();
    let t1 = Instant::now();
    let model = analyze::analyze(&trace).unwrap();
    let t2 = Instant::now();
    let mut n = 0usize;
    trace.for_each_ps_block(|_, r| n += r.len()).unwrap();
    println!(
        "perf: parsing proc_ps.log alone: {:.2} s",
        t2.elapsed().as_secs_f64()
    );
    println!(
        "perf: {lines} proc_ps lines ({} MB), {} processes: read {:.2} s, analyse {:.2} s, total {:.2} s",
        size / 1_000_000,
        model.processes.len(),
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        (t2 - t0).as_secs_f64()
    );
    assert_eq!(model.processes.len(), 2000);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!((t2 - t0).as_secs_f64() < 10.0, "far too slow");
}
