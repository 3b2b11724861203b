//! `bootprint-testbed bench desktop`: the third boot time, from the session's start to the
//! desktop being ready, without preload, with preload learning and with preload prefetching
//! (issue 18, part 4), on the aged desktop image, per login kind (LightDM's autologin; the
//! password typed after a wait at the greeter, the idle time preload prefetches in).

use crate::bench::figures::event_seconds;
use crate::bench::registry::Request;
use crate::bench::runner::{self, trace_file, Benchmark, Figures, Variant};
use crate::vm::age;
use crate::vm::desktop_session::GREETER_WAIT_S;
use crate::vm::desktop_session::{guest_script, section, RECORD_LIMIT_S};
use crate::vm::desktop_session::{LOGIN_WORD, PRELOAD_WORD};
use crate::vm::hostload::tcg_slowdown;
use crate::vm::image::{self, Flavor};
use crate::vm::qemu::{BootOpts, BootResult, Profile};
use crate::vm::util::{Error, Paths, Result};

/// The benchmark of one login kind (`auto` or `greeter:N`) on `profile`. The warm-up boot
/// is the learning variant's and keeps its disk: every measured boot starts from a machine
/// that has had one session (Firefox's profile made, preload's model learned), and the
/// variants differ only in the test bed's preload word.
pub fn benchmark(profile: Profile, login: &str) -> Benchmark {
    let variant = |name: &'static str, preload: &str| {
        let mut o = BootOpts::new(profile);
        o.record = true;
        o.trace_wait_s = RECORD_LIMIT_S;
        o.append = format!(
            "{LOGIN_WORD}={login} {PRELOAD_WORD}={preload} bootprint.timeout_s={RECORD_LIMIT_S} \
             bootprint.desktop_timeout_s={RECORD_LIMIT_S}"
        );
        o.guest_script = Some(guest_script());
        Variant {
            name,
            opts: o,
            extra: desktop_figures,
            image: None,
        }
    };
    Benchmark {
        name: if login == "auto" {
            "desktop-auto"
        } else {
            "desktop-greeter"
        },
        about: "the desktop start (session start to desktop ready) on the aged desktop image: \
                preload off, learning (no model), prefetching (the warm-up boot's model)",
        variants: vec![
            variant("none", "off"),
            variant("learn", "learn"),
            variant("prefetch", "prefetch"),
        ],
        seasoned_by: Some(1),
        season_each: false,
    }
}

/// `bench desktop` as the command line asks it.
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    let login = req.login.as_deref();
    let (runs, profile) = (req.runs, req.profile());
    run(
        paths,
        runs,
        profile,
        login,
        GREETER_WAIT_S,
        req.json,
        req.cargo,
    )
}

/// Runs the benchmark for each login kind (both unless `only`), on `profile`.
pub fn run(
    paths: &Paths,
    runs: usize,
    profile: Profile,
    only: Option<&str>,
    greeter_wait_s: u32,
    as_json: bool,
    cargo: bool,
) -> Result<()> {
    let img = image::ensure_flavor(paths, cargo, Flavor::Desktop)?;
    let aged = age::aged(paths, &img, cargo)?;
    // A person waits the same seconds at the greeter whatever the machine; on a
    // time-scaled profile the whole machine is slowed tcg_slowdown() times, so the person is
    // too, or the wait (preload's idle time) would be a thirteenth of the one modelled.
    let greeter_wait_s = if profile.is_scaled() {
        (f64::from(greeter_wait_s) * tcg_slowdown()).round() as u32
    } else {
        greeter_wait_s
    };
    let mut failed = vec![];
    for login in ["auto".to_string(), format!("greeter:{greeter_wait_s}")]
        .into_iter()
        .filter(|l| only.is_none_or(|o| l.starts_with(o)))
    {
        let b = benchmark(profile, &login);
        if let Err(e) = runner::run_built(paths, &aged, &b, runs, profile, as_json) {
            eprintln!("bench {}: {e}", b.name);
            failed.push(b.name);
        }
        let limit = if profile == Profile::Fast { 1.02 } else { 0.8 };
        println!(
            "{} ({}): goal: prefetch desktop_start_s at most {limit}x of none{}",
            b.name,
            profile.name(),
            if login == "auto" {
                " (autologin: never slower)"
            } else {
                ""
            }
        );
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::fail(format!(
            "bench {}: boots failed",
            failed.join(", ")
        )))
    }
}

/// The session's figures from the trace (guest seconds) and what preload did, from the hook's
/// log the guest script printed: `desktop_start_s` only when the desktop was found ready by
/// the idle rule.
fn desktop_figures(r: &BootResult) -> Figures {
    let events = trace_file(r, "events.log").unwrap_or_default();
    let out = r.guest_output.clone().unwrap_or_default();
    figures(&events, &out)
}

/// The number that `text` starts with (up to the first blank).
fn leading_number(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

fn figures(events: &str, guest_output: &str) -> Figures {
    let mut f = crate::bench::figures::milestone_figures(events);
    let start = event_seconds(events, "milestone", Some("name=session_start"));
    let ready = event_seconds(events, "desktop_ready", Some("reason=idle"));
    f.insert("session_start_s".into(), start);
    f.insert("desktop_ready_s".into(), ready);
    f.insert(
        "desktop_start_s".into(),
        start
            .zip(ready)
            .map(|(s, r)| ((r - s) * 1000.0).round() / 1000.0),
    );
    // From the greeter's start (the graphical login milestone) to the desktop: what the
    // desktop start leaves out, the greeter's showing, the person's wait and the login's
    // processing, where a prefetch at the greeter competes with them for the disk. It
    // cannot be flattered by moving the session's reads before its start.
    let greeter = f.get("graphical_login_s").copied().flatten();
    f.insert(
        "greeter_to_desktop_s".into(),
        greeter
            .zip(ready)
            .map(|(g, r)| ((r - g) * 1000.0).round() / 1000.0),
    );
    // What the hook's log says, summed over its stages. A fold from +0.0: `sum` of nothing
    // is -0.0, which the JSON would show.
    let log = section(guest_output, "preload-log");
    let total =
        |pick: fn(&str) -> Option<f64>| log.iter().filter_map(|l| pick(l)).fold(0.0, |a, b| a + b);
    // "prefetch: 12.3 MB from 40 files in 1.20 s; ..." once per stage that prefetched.
    let prefetched = total(|l| leading_number(l.strip_prefix("prefetch: ")?));
    f.insert("prefetch_mb".into(), Some(prefetched));
    // "yielded:  3.50 s waiting for idle time, held back 7 times (2 for busy CPUs); ..." per
    // stage that had to wait.
    let yielded = total(|l| leading_number(l.strip_prefix("yielded: ")?));
    f.insert("prefetch_yielded_s".into(), Some(yielded));
    let cpu_waits =
        total(|l| leading_number(l.strip_prefix("yielded: ")?.split_once(" times (")?.1));
    f.insert("prefetch_cpu_waits".into(), Some(cpu_waits));
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_from_the_trace_and_the_hook_log() {
        let events = "# bootprint events 1\n\
            30000000000 milestone name=graphical_login pid=9 comm=lightdm-gtk-gre\n\
            41000000000 milestone name=session_start pid=500 comm=xfce4-session\n\
            45000000000 boot_done reason=idle\n\
            52500000000 desktop_ready reason=idle settle_s=3 session_pid=500\n";
        let out = "== preload-log\nlogin:    prefetch (budget 150.0 MB)\n\
            prefetch: 80.5 MB from 300 files in 9.10 s; skipped 0\n\
            yielded:  6.25 s waiting for idle time, held back 3 times (2 for busy CPUs); others moved 1.0 MB on the disk\n\
            login:    prefetch (budget 150.0 MB)\n\
            prefetch: 2.5 MB from 300 files in 0.40 s; skipped 0\n== preload-status\n";
        let f = figures(events, out);
        assert_eq!(f["session_start_s"], Some(41.0));
        assert_eq!(f["desktop_ready_s"], Some(52.5));
        assert_eq!(f["desktop_start_s"], Some(11.5));
        assert_eq!(f["graphical_login_s"], Some(30.0));
        assert_eq!(f["greeter_to_desktop_s"], Some(22.5));
        assert_eq!(f["prefetch_mb"], Some(83.0));
        assert_eq!(f["prefetch_yielded_s"], Some(6.25));
        assert_eq!(f["prefetch_cpu_waits"], Some(2.0));
        // Not found ready (a timeout): no desktop start.
        let timeout = events.replace("reason=idle settle_s", "reason=timeout settle_s");
        assert_eq!(figures(&timeout, "")["desktop_start_s"], None);
        let none = figures(&timeout, "")["prefetch_mb"].unwrap();
        assert!(none == 0.0 && none.is_sign_positive(), "{none}");
    }
}
