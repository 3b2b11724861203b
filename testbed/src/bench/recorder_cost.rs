//! `bench recorder-cost`: the recorder's own CPU on systemd, as it was against today's.

use crate::bench::registry::Request;
use crate::bench::runner::{self, recorded, whole_figures, Benchmark};
use crate::vm::qemu::Profile;
use crate::vm::util::{Paths, Result};

/// What the recorder costs (issue 15 part 6), on systemd, every boot recorded; the
/// figures are recorder_stats'. First the recorder as it was before 2026-11-26's
/// changes (10 Hz, fanotify exec events, /proc listed at every fork, its parts
/// timed), then today's at that rate, then at its default rate.
pub fn benchmark(profile: Profile) -> Benchmark {
    Benchmark {
        name: "recorder-cost",
        about: "the recorder's own CPU: as it was (10 Hz, fanotify, parts timed) against \
                today's at 10 Hz and at the default rate",
        seasoned_by: None,
        season_each: false,
        variants: [
            (
                "as-was-10hz",
                "bootprint.hz=10 bootprint.exec_events=fanotify bootprint.cost_detail=1",
            ),
            ("now-10hz", "bootprint.hz=10"),
            ("now", ""),
        ]
        .into_iter()
        .map(|(name, extra)| {
            let append = format!("bootprint.init=/lib/systemd/systemd {extra}");
            recorded(name, profile, append, whole_figures)
        })
        .collect(),
    }
}

/// `bench recorder-cost` as the command line asks it (on the desktop image its result file
/// is named as `profiles`' there, as it always was).
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    runner::run_on_flavor(paths, req, benchmark(req.profile()), "profiles-desktop")
}
