//! Inputs the fuzz runner (`fuzz/`, docs/fuzzing.md) found, each shrunk by hand to what
//! triggers it.

/// fuzz target kernel_dmesg: initcall durations near u64::MAX (a corrupt `after N usecs`)
/// overflowed the per-thread and per-module sums (a panic with overflow checks, a wrong
/// small total without).
#[test]
fn fuzz_kernel_dmesg_huge_initcall_durations_saturate() {
    let text = "\
[    0.100000] calling  foo_init+0x0/0x10 [foo] @ 1
[    0.100010] initcall foo_init+0x0/0x10 [foo] returned 0 after 18446744073709551615 usecs
[    0.100020] calling  bar_init+0x0/0x10 [foo] @ 1
[    0.100030] initcall bar_init+0x0/0x10 [foo] returned 0 after 18446744073709551615 usecs
[99999999999.000000] Run /sbin/init as init process
";
    let r = kernel::Report::from_text("fuzz", text);
    let foo = r
        .modules
        .iter()
        .find(|m| m.module == "foo")
        .expect("module foo");
    assert_eq!(foo.initcalls, 2);
    assert_eq!(foo.duration_us, u64::MAX);
    let pid1 = r.boot.threads.iter().find(|t| t.pid == 1).expect("pid 1");
    assert_eq!(pid1.busy_us, u64::MAX);
}

/// fuzz target kernel_dmesg: a probe that "took" u64::MAX microseconds in a log with
/// initcall_debug is a finding whose gain is u64::MAX; sorting the findings by gain + 1
/// overflowed. The input as found (the hazards fixture, mutated).
#[test]
fn fuzz_kernel_dmesg_finding_gain_of_u64_max_sorts() {
    let raw = include_bytes!("../../../fuzz/regressions/kernel_dmesg-3db0bd8ae30ca246");
    let r = kernel::Report::from_text("fuzz", &String::from_utf8_lossy(raw));
    assert!(
        r.findings.iter().any(|f| f.gain_us == Some(u64::MAX)),
        "{:?}",
        r.findings
            .iter()
            .map(|f| (f.id, f.gain_us))
            .collect::<Vec<_>>()
    );
}
