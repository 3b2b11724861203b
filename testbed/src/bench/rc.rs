//! `bench rc`: LSB service start: Debian's startpar, serial, bootprint's runner, systemd.

use crate::bench::figures::{event_seconds, milestone_figures};
use crate::bench::registry::Request;
use crate::bench::runner::{self, recorded, trace_file, Benchmark, Figures};
use crate::vm::image::{self, Flavor};
use crate::vm::qemu::{BootResult, Profile};
use crate::vm::util::{Paths, Result};

/// Service start (issue 4): Debian's startpar, serial, bootprint's runner, systemd.
/// All recorded (init=bootprint-boot) so each run has boot_done and text_login from
/// its own trace; the variants differ only in the kernel command line.
/// The desktop image is the same benchmark with a graphical login (`--desktop`).
/// Seasoned by a bootprint-rc boot: the runner orders by durations it learned then.
pub fn benchmark(profile: Profile) -> Benchmark {
    Benchmark {
        name: "rc",
        about: "LSB service start: startpar against concurrency=none, bootprint rc and systemd",
        seasoned_by: Some(2),
        season_each: false,
        variants: [
            ("startpar", ""),
            ("serial", "concurrency=none"),
            ("bootprint-rc", "bootprint.rc=1"),
            ("systemd", "bootprint.init=/lib/systemd/systemd"),
        ]
        .into_iter()
        .map(|(name, append)| recorded(name, profile, append.to_string(), rc_figures))
        .collect(),
    }
}

/// `bench rc` as the command line asks it; `--desktop`: on the desktop image, its systemd
/// variant on the desktop-systemd image.
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    let mut bench = benchmark(req.profile());
    if req.flavor == Flavor::Desktop {
        // Its own result file: the figures are not comparable with the text image's.
        bench.name = "rc-desktop";
    }
    let img = image::ensure_flavor(paths, req.cargo, req.flavor)?;
    if req.flavor == Flavor::Desktop {
        // elogind (for LightDM under sysvinit) removes systemd from the desktop image: the
        // systemd reference boots the same desktop installed Debian's default way.
        let systemd = image::ensure_flavor(paths, false, Flavor::DesktopSystemd)?;
        for v in bench.variants.iter_mut().filter(|v| v.name == "systemd") {
            v.opts.append.clear(); // /sbin/init is systemd there
            v.image = Some(systemd.clone());
        }
    }
    runner::run_built(paths, &img, &bench, req.runs, req.profile(), req.json)
}

/// Guest figures from the run's events.log: the text-login milestone and boot done, in
/// seconds of CLOCK_BOOTTIME.
fn rc_figures(r: &BootResult) -> Figures {
    let events = trace_file(r, "events.log").unwrap_or_default();
    let mut f = milestone_figures(&events);
    // The runner's own marks, when the recorder copied its span log into the trace (only
    // the bootprint-rc variant has one): runlevel 2's login path done, and all of it done.
    let rc_log = trace_file(r, "rc.log");
    if let Some(rc_log) = rc_log {
        f.insert(
            "rc_reached_s".into(),
            event_seconds(&rc_log, "rc_reached", Some("runlevel=2")),
        );
        f.insert(
            "rc_done_s".into(),
            event_seconds(&rc_log, "rc_done", Some("runlevel=2")),
        );
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_differ_only_in_the_command_line() {
        let b = benchmark(Profile::Fast);
        let cmd: Vec<String> = b.variants.iter().map(|v| v.opts.cmdline()).collect();
        assert!(cmd[1].contains("concurrency=none") && cmd[2].contains("bootprint.rc=1"));
        assert!(cmd[3].contains("bootprint.init=/lib/systemd/systemd"));
        assert!(b.variants.iter().all(|v| v.opts.record));
    }
}
