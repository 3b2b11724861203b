//! Inputs the fuzz runner (`fuzz/`, docs/fuzzing.md) found, each shrunk by hand to what
//! triggers it.

/// fuzz target analyze_trace: a proc_ps.log whose last block is older than its first made
/// bootchart2's sample period underflow.
#[test]
fn fuzz_analyze_ps_stats_blocks_going_back_in_time() {
    let line = "1 (init) S 0 0 0 0 0 0 0 0 0 0 10 0 0 0 20 0 1 0 90 0 100";
    let log = trace::bootchart::parse_proc_ps(&format!("500\n{line}\n\n100\n{line}\n")).unwrap();
    let s = analyze::bootchart::ps_stats(&log);
    assert_eq!(s.sample_period, 0.0);
}

/// The mini trace with its proc_ps.log replaced and, when `events` is false, without its
/// events.log and cmdline2.log.
fn mini_trace_with_ps(ps: &str) -> trace::Trace {
    mini_trace_with(ps, true)
}

fn mini_trace_with(ps: &str, events: bool) -> trace::Trace {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/mini-trace");
    let mut raw = trace::reader::RawTrace::from_dir(&dir).unwrap();
    if !events {
        raw.files
            .retain(|(n, _)| n != "events.log" && n != "cmdline2.log");
    }
    raw.proc_ps_path = None;
    raw.files
        .push(("proc_ps.log".into(), ps.as_bytes().to_vec()));
    trace::Trace::parse(raw).unwrap()
}

/// fuzz target analyze_trace: utime + stime of a process overflowed (a wrapped sum made a
/// busy process look idle).
#[test]
fn fuzz_analyze_cpu_ticks_overflow() {
    let line = "7 (busy) R 1 0 0 0 0 0 0 0 0 0 18446744073709551615 1 0 0 20 0 1 0 90 0 100";
    let t = mini_trace_with_ps(&format!("500\n{line}\n\n600\n{line}\n"));
    let m = analyze::analyze(&t).unwrap();
    let p = m.processes.iter().find(|p| p.pid == 7).unwrap();
    assert!(p.cpu_s > 1e16, "{}", p.cpu_s);
}

/// fuzz target render_report: a proc_ps.log block at 10^17 s made advise walk the boot in
/// half-second pieces, where past 2^53 `t + 0.5 == t`: it never ended.
#[test]
fn fuzz_analyze_advise_on_a_boot_of_astronomic_length() {
    let t = mini_trace_with(
        "10943593523749381566\n\
         6 (kworker/0:1) D 11 0 0 0 0 0 0 0 0 0 256 4487 0 0 -3652934659207732351 -4 485 0 3310 0 3064\n\
         11 (init) I 8 0 0 0 0 0 0 0 0 0 18446744073709551615 4857 0 0 5743165584311531061 -13 18446744073709551615 0 3699 0 3233\n",
        false,
    );
    let done = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let m = analyze::analyze(&t).unwrap();
        let _ = analyze::advise::advise(&m, None);
        let _ = done.0.send(());
    });
    assert!(
        done.1
            .recv_timeout(std::time::Duration::from_secs(60))
            .is_ok(),
        "advise did not end within a minute"
    );
}

/// fuzz target analyze_trace: the CPU counters of a proc_stat.log block overflowed their
/// total.
#[test]
fn fuzz_analyze_cpu_total_overflow() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/mini-trace");
    let mut raw = trace::reader::RawTrace::from_dir(&dir).unwrap();
    raw.files.retain(|(n, _)| n != "proc_stat.log");
    raw.files.push((
        "proc_stat.log".into(),
        b"500\ncpu  18446744073709551615 1 1 1 1 1 1 1\n\n600\ncpu  18446744073709551615 1 1 1 1 1 1 1\n".to_vec(),
    ));
    let m = analyze::analyze(&trace::Trace::parse(raw).unwrap()).unwrap();
    assert!(m.cpu.iter().all(|s| s.user.is_finite()));
}

/// fuzz target analyze_trace (the 1 M-input run): the input as found (gzipped; files in
/// the fuzz runner's container form, `@@ NAME` before each): a boot done centuries after
/// thousands of disk samples. It took 2.6 s of CPU in `advise` (fuzz profile, ~1 min in a
/// debug build): each of up to a million pieces of its stretches walked every CPU and disk
/// sample. Now the series are in time order and each window bisects them.
#[test]
fn fuzz_analyze_advise_on_a_long_boot_with_many_samples_is_not_quadratic() {
    use std::io::Read;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz-advise-slow.container.gz");
    let mut data = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut data)
        .unwrap();
    let text = String::from_utf8_lossy(&data).into_owned();
    let mut raw = trace::reader::RawTrace {
        origin: "fuzz input".into(),
        files: Vec::new(),
        proc_ps_path: None,
    };
    for part in text.split("\n@@ ") {
        let part = part.strip_prefix("@@ ").unwrap_or(part);
        let (name, body) = part.split_once('\n').unwrap_or((part, ""));
        raw.files
            .push((name.trim().to_string(), body.as_bytes().to_vec()));
    }
    let m = analyze::analyze(&trace::Trace::parse(raw).unwrap()).unwrap();
    let t = std::time::Instant::now();
    let _ = analyze::advise::advise(&m, None);
    // Before: 11 s in a debug build, 2.6 s optimised; after: 0.2 s and 0.04 s.
    let bound = if cfg!(debug_assertions) { 5.0 } else { 1.0 };
    assert!(t.elapsed().as_secs_f64() < bound, "{:?}", t.elapsed());
}
