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
