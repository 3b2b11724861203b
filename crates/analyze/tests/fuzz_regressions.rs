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
