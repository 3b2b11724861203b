//! Inputs the fuzz runner (`fuzz/`, docs/fuzzing.md) found, each shrunk by hand to what
//! triggers it.

use sample::procfs;

/// fuzz target sample_proc_files: CPU counters whose sum does not fit a u64 overflowed the
/// total (and, wrapped, made busy time underflow).
#[test]
fn fuzz_sample_cpu_totals_of_huge_counters() {
    let stat = b"cpu  18446744073709551615 1 1 5 0 0 0 0\n";
    assert_eq!(
        procfs::cpu_totals(stat),
        Some((u64::MAX - 5, 5, 0, u64::MAX))
    );
}
