//! Inputs the fuzz runner (`fuzz/`, docs/fuzzing.md) found, each shrunk by hand to what
//! triggers it.

use std::path::Path;
use std::time::Duration;

use rc::run::Config;

/// fuzz target rc_conf: `timeout = 1e300` is a finite, non-negative number of seconds that
/// no Duration holds, and `Duration::from_secs_f64` panicked on it.
#[test]
fn fuzz_rc_conf_seconds_too_large_for_a_duration() {
    for key in ["timeout", "flush", "idle-window", "late-max-wait"] {
        let (c, diags) = Config::parse(&format!("{key} = 1e300\n"), Path::new("rc.conf"));
        assert_eq!(diags.len(), 1, "{key}: {diags:?}");
        assert!(diags[0].message.contains("seconds"), "{:?}", diags[0]);
        assert_eq!(c.timeout, Duration::from_secs(120));
    }
}

/// fuzz target rc_durations: recording a run of a script whose stored time is near
/// u64::MAX overflowed the weighted mean.
#[test]
fn fuzz_rc_durations_record_after_a_huge_stored_time() {
    let (mut d, diags) = rc::durations::Durations::parse(
        "# bootprint rc durations 1\nssh start 18446744073709551615 2\n",
        Path::new("rc-durations"),
    );
    assert!(diags.is_empty(), "{diags:?}");
    d.record("ssh", "start", 4);
    assert_eq!(d.get("ssh", "start"), 13_835_058_055_282_163_712);
}

/// fuzz target rc_proc_stat: CPU counters whose sum does not fit a u64 overflowed the
/// runner's totals.
#[test]
fn fuzz_rc_proc_stat_huge_counters() {
    let s = rc::run::ProcStat::parse("cpu  18446744073709551615 1 0 0 0 0 0 0\n");
    assert_eq!(s.total, u64::MAX);
    assert_eq!(s.busy, u64::MAX);
}
