//! `bench record`: what recording a boot costs: boots without the recorder against boots
//! with it (`init=bootprint-boot`).

use crate::bench::figures::recorder_stats;
use crate::bench::registry::Request;
use crate::bench::runner::{self, no_extra, recorded, trace_file, Benchmark, Figures, Variant};
use crate::vm::qemu::{BootOpts, BootResult, Profile};
use crate::vm::util::{Paths, Result};

/// The variants: no recorder (the baseline), then recorded.
pub fn benchmark(profile: Profile) -> Benchmark {
    Benchmark {
        name: "record",
        about: "cost of recording a boot: no recorder against init=bootprint-boot",
        seasoned_by: None,
        season_each: false,
        variants: vec![
            Variant {
                name: "baseline",
                opts: BootOpts::new(profile),
                extra: no_extra,
                image: None,
            },
            recorded("record", profile, String::new(), recorder_figures),
        ],
    }
}

/// `bench record` as the command line asks it.
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    runner::run_on_flavor(paths, req, benchmark(req.profile()), "record-desktop")
}

fn recorder_figures(r: &BootResult) -> Figures {
    let mut f = Figures::new();
    let stats = trace_file(r, "events.log").and_then(|t| recorder_stats(&t));
    f.insert(
        "recorder_cpu_s".into(),
        stats.as_ref().and_then(|s| s.get("cpu_s").copied()),
    );
    f.insert(
        "recorder_maxrss_kb".into(),
        stats.as_ref().and_then(|s| s.get("maxrss_kb").copied()),
    );
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_baseline_then_recorded() {
        let b = benchmark(Profile::Fast);
        assert_eq!(b.variants[0].name, "baseline");
        assert!(!b.variants[0].opts.record && b.variants[1].opts.record);
    }
}
