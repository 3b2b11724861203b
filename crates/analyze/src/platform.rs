//! Which kind of system a trace was recorded on, and the milestones only that kind has.
//!
//! Android's init writes bootchart logs of its own (docs/trace-format.md, "Android's
//! bootchart"): no getty and no display manager ever runs there, so the Linux rules find no
//! login. On a phone the boot is over for its user when the boot animation exits and the
//! launcher runs; the rules here find those from the process samples, and say which rule
//! found each (docs/report.md, "Platforms and their milestones").

use trace::Trace;

use crate::model::{Milestone, Platform, PlatformMilestone, Process};

/// The start of `version` in the header Android's init writes (`version = Android init 0.8`).
pub const ANDROID_VERSION_PREFIX: &str = "Android init";

/// The start of `title` in that header (`title = Boot chart for Android (DATE)`).
pub const ANDROID_TITLE_PREFIX: &str = "Boot chart for Android";

/// Names of Android's zygote (the Java runtime every app and system_server is forked from).
pub const ZYGOTE_NAMES: [&str; 2] = ["zygote64", "zygote"];

/// Home apps whose package name does not say `launcher` (the others are found by the word).
pub const HOME_APP_NAMES: [&str; 1] = ["com.miui.home"];

/// The platform and the rule that recognised it: the header first (Android's init writes
/// its own `version` and `title`), else the processes (a zygote started by pid 1 and
/// `system_server` both ran: a log from another Android collector), else Linux. A bootprint
/// trace (`bootprint.format`) is Linux whatever runs in it, and so is a zygote under another
/// parent: an Android container (Waydroid) on a Linux desktop runs both too.
pub fn detect(trace: &Trace, procs: &[Process]) -> (Platform, String) {
    if trace.header_value("bootprint.format").is_some() {
        return (
            Platform::Linux,
            "a bootprint trace (bootprint.format)".into(),
        );
    }
    if let Some(v) = trace
        .header_value("version")
        .filter(|v| v.starts_with(ANDROID_VERSION_PREFIX))
    {
        return (Platform::Android, format!("header: version = {v}"));
    }
    if let Some(t) = trace
        .header_value("title")
        .filter(|t| t.starts_with(ANDROID_TITLE_PREFIX))
    {
        return (Platform::Android, format!("header: title = {t}"));
    }
    let zygote =
        first_started(procs, |n| ZYGOTE_NAMES.contains(&n)).filter(|&z| procs[z].ppid == 1);
    let server = first_started(procs, |n| n == "system_server");
    if let (Some(z), Some(s)) = (zygote, server) {
        return (
            Platform::Android,
            format!(
                "processes {} (under pid 1) and {} ran",
                procs[z].name, procs[s].name
            ),
        );
    }
    (
        Platform::Linux,
        "no Android header (version, title) and no zygote with system_server".into(),
    )
}

/// The name a rule matches: Android's init logs a process's whole `argv[0]`
/// (`/system/bin/bootanimation`), so the part after the last `/`.
fn base(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The first-started user-space process whose base name passes `pick`.
fn first_started(procs: &[Process], pick: impl Fn(&str) -> bool) -> Option<usize> {
    (0..procs.len())
        .filter(|&i| !procs[i].kernel_thread && pick(base(&procs[i].name)))
        .min_by(|&a, &b| procs[a].start_s.total_cmp(&procs[b].start_s))
}

/// Whether `name` is a home app (a launcher): a package name (dotted, no `/`), its main
/// process (no `:suffix`), with a part that says `launcher` or in [`HOME_APP_NAMES`].
pub fn is_launcher(name: &str) -> bool {
    if name.contains(['/', ':', ' ']) || !name.contains('.') {
        return false;
    }
    HOME_APP_NAMES.contains(&name)
        || name
            .split('.')
            .any(|part| part.to_ascii_lowercase().contains("launcher"))
}

/// A rule over a process's base name.
type NameRule = fn(&str) -> bool;

/// What the Android rules found.
#[derive(Debug, Default)]
pub struct AndroidMilestones {
    /// The kernel's end, bounded by the first user-space process (the log starts late).
    pub kernel: Option<Milestone>,
    /// The boot animation's exit: the phone shows its lock screen or launcher.
    pub animation_exit: Option<Milestone>,
    /// The rest, in time order.
    pub platform: Vec<PlatformMilestone>,
}

/// Android's milestones from the process samples. `notes` gets what could not be found.
pub fn android(procs: &[Process], notes: &mut Vec<String>) -> AndroidMilestones {
    let mut out = AndroidMilestones::default();
    let started = |i: usize, key: &str, label: &str| PlatformMilestone {
        name: key.into(),
        label: label.into(),
        t_s: procs[i].start_s,
        source: format!("process {} (pid {}) started", procs[i].name, procs[i].pid),
    };

    // The kernel hands over to init before any other user-space process starts. Init itself
    // (pid 1) shows the kernel thread's start, so it cannot say when.
    out.kernel = (0..procs.len())
        .filter(|&i| !procs[i].kernel_thread && procs[i].pid != 1 && procs[i].ppid != 0)
        .min_by(|&a, &b| procs[a].start_s.total_cmp(&procs[b].start_s))
        .map(|i| Milestone {
            t_s: procs[i].start_s,
            source: format!(
                "no dmesg: the first user-space process, {} (pid {}), started",
                procs[i].name, procs[i].pid
            ),
        });

    let rules: [(&str, &str, NameRule); 4] = [
        ("surfaceflinger", "surfaceflinger started", |n| {
            n == "surfaceflinger"
        }),
        ("zygote", "zygote started", |n| ZYGOTE_NAMES.contains(&n)),
        ("boot_animation", "boot animation started", |n| {
            n == "bootanimation"
        }),
        ("system_server", "system_server started", |n| {
            n == "system_server"
        }),
    ];
    for (key, label, pick) in rules {
        match first_started(procs, pick) {
            Some(i) => out.platform.push(started(i, key, label)),
            None => notes.push(format!("Android: no {key} process in the log")),
        }
    }
    match first_started(procs, is_launcher) {
        Some(i) => out
            .platform
            .push(started(i, "launcher", "launcher running")),
        None => notes.push(
            "Android: no launcher process (a package name with `launcher` in it) in the log".into(),
        ),
    }

    // The animation's last sighting, as AOSP's compare-bootcharts.py takes it; it exited
    // before the next sample. Restarted animations: the last one to go.
    let anims: Vec<&Process> = procs
        .iter()
        .filter(|p| !p.kernel_thread && base(&p.name) == "bootanimation")
        .collect();
    if let Some(p) = anims.iter().find(|p| p.alive_at_end) {
        notes.push(format!(
            "Android: the boot animation ({}, pid {}) still ran at the last sample: no \
             graphical login",
            p.name, p.pid
        ));
    } else if let Some(p) = anims.iter().max_by(|a, b| a.end_s.total_cmp(&b.end_s)) {
        out.animation_exit = Some(Milestone {
            t_s: p.end_s,
            source: format!(
                "boot animation exited: process {} (pid {}) last seen at {:.2} s",
                p.name, p.pid, p.end_s
            ),
        });
    }
    out.platform.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    out
}

/// Boot done's source on Android when CPU and disk never settled after the boot animation:
/// init stops bootcharting on `sys.boot_completed=1` (its `init.rc`), so the last sample is
/// when Android said the boot was complete.
pub const ANDROID_LAST_SAMPLE: &str =
    "last sample: Android's init stops bootcharting at sys.boot_completed=1";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launchers_are_package_names_that_say_so() {
        for yes in [
            "com.android.launcher3",
            "com.google.android.apps.nexuslauncher",
            "com.sec.android.app.launcher",
            "com.miui.home",
        ] {
            assert!(is_launcher(yes), "{yes}");
        }
        for no in [
            "com.android.launcher3:wallpaper_chooser",
            "/system/bin/launcherd",
            "launcher",
            "com.android.systemui",
        ] {
            assert!(!is_launcher(no), "{no}");
        }
    }

    #[test]
    fn base_names_drop_the_path() {
        assert_eq!(base("/system/bin/bootanimation"), "bootanimation");
        assert_eq!(base("zygote64"), "zygote64");
    }
}
