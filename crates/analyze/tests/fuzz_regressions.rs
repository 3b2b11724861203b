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

/// The mini trace with its proc_ps.log replaced.
fn mini_trace_with_ps(ps: &str) -> trace::Trace {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/mini-trace");
    let mut raw = trace::reader::RawTrace::from_dir(&dir).unwrap();
    raw.proc_ps_path = None;
    raw.files.push(("proc_ps.log".into(), ps.as_bytes().to_vec()));
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
