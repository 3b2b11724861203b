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

/// fuzz target rc_spans (the 1 M-input run): a `%` followed by a character of several bytes
/// in a span log's value made the decoder slice the text inside that character (a panic in
/// release builds too: `bootprint rc services` on a hostile rc.log). The span log now shares
/// events.log's decoder, which reports such a value as a bad line.
#[test]
fn fuzz_rc_spans_escape_before_a_multibyte_character() {
    for value in ["%é", "a%\u{10ffff}%41", "%4"] {
        let text = format!("# bootprint rc 1\n1 rc_start script={value}\n2 rc_done\n");
        let (events, problems) = trace::rclog::parse(&text, "rc.log");
        assert_eq!(events.len(), 1, "{value:?}");
        assert_eq!(problems.len(), 1, "{value:?}");
        assert_eq!(problems[0].line, 2);
    }
}

/// fuzz target rc_proc_stat (the 1 M-input run): `procs_running` and `procs_blocked` near
/// u64::MAX overflowed the load the runner compares with its limit.
#[test]
fn fuzz_rc_may_start_with_huge_process_counts() {
    let s = rc::run::ProcStat::parse("cpu  1 0 0 0 0 0 0 0\nprocs_running 18446744073709551615\nprocs_blocked 18446744073709551615\n");
    let c = rc::run::Config::default();
    assert!(!rc::run::may_start(1, &s, &c, 2));
    assert!(
        rc::run::may_start(0, &s, &c, 2),
        "one script may always run"
    );
}

/// fuzz target rc_system: a facility line of insserv.conf repeated 1534 times made 1534
/// definitions of `$named`, each expanded again (with its `$network`) for every script that
/// names `$named`: planning took 1.5 s of CPU. A name given again adds nothing to the union
/// and is now kept once, where it was first given.
#[test]
fn fuzz_rc_system_repeated_facility_lines_are_kept_once() {
    let line = "$named\t\t+named +dnsmasq +bind9 $network\n";
    let text = format!("$network +networking\n{}", line.repeat(5000));
    let mut conf = rc::conf::Conf::default();
    let diags = conf.parse_into(&text, Path::new("insserv.conf"));
    assert!(diags.is_empty(), "{diags:?}");
    let named = &conf.facilities["$named"];
    assert_eq!(named.len(), 1, "one definition, not one per repeated line");
    assert_eq!(named[0].line, 2, "kept where it was first given");
    assert_eq!(named[0].names, ["+named", "+dnsmasq", "+bind9", "$network"]);
    // A later file's new names are still added (the union), its repeated ones are not.
    let diags = conf.parse_into(
        "$named +bind9 +unbound\n$named +bind9\n",
        Path::new("insserv.conf.d/unbound"),
    );
    assert!(diags.is_empty(), "{diags:?}");
    let named = &conf.facilities["$named"];
    assert_eq!(named.len(), 2);
    assert_eq!(named[1].names, ["+unbound"]);
    assert_eq!(named[1].line, 1);
    // An empty facility is still defined.
    conf.parse_into("$empty\n$empty\n", Path::new("insserv.conf.d/empty"));
    assert_eq!(conf.facilities["$empty"].len(), 1);
}
