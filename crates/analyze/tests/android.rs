//! Android's bootchart logs (tests/fixtures/android-phone, hand-written after AOSP's
//! `init/bootchart.cpp`): the platform is recognised, each Android milestone is found at its
//! time by its rule, and a cut or garbled log is refused naming the file and line.

use std::fs;
use std::path::{Path, PathBuf};

use analyze::{BootModel, Platform};
use trace::Trace;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/android-phone")
}

fn model_of(path: &Path) -> BootModel {
    analyze::analyze(&Trace::open(path).expect("Android log parses")).expect("analyses")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// A copy of the fixture's four files, each passed through `edit(name, text)`.
fn copy_with(edit: impl Fn(&str, String) -> String) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "header",
        "proc_stat.log",
        "proc_diskstats.log",
        "proc_ps.log",
    ] {
        let text = fs::read_to_string(dir().join(name)).unwrap();
        fs::write(tmp.path().join(name), edit(name, text)).unwrap();
    }
    tmp
}

/// Why the log at `path` is refused: by the reader, or by the analysis (a directory's
/// proc_ps.log is streamed then).
fn refusal(path: &Path) -> String {
    match Trace::open(path) {
        Err(e) => e.to_string(),
        Ok(t) => match analyze::analyze(&t) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{} was not refused", path.display()),
        },
    }
}

/// The text up to (not including) the block starting with the time line `t_cs`.
fn cut_before(text: &str, t_cs: u64) -> String {
    let at = text
        .find(&format!("\n\n{t_cs}\n"))
        .expect("block in the log");
    text[..at + 2].to_string()
}

#[test]
fn the_platform_is_recognised_from_the_header() {
    let m = model_of(&dir());
    assert_eq!(m.platform, Platform::Android);
    assert_eq!(m.platform_rule, "header: version = Android init 0.8");
    // Android's header: the fingerprint as the release, uname's machine as the CPU, the
    // kernel command line (followed by an empty line) read whole; 4 CPUs from proc_stat.log.
    assert_eq!(
        m.system.release.as_deref(),
        Some("google/sdk_gphone64_arm64/emu64a:14/UE1A.230829.036/10943200:userdebug/test-keys")
    );
    assert_eq!(m.system.cpu_model.as_deref(), Some("aarch64"));
    assert_eq!(m.system.ncpus, 4);
    assert_eq!(
        m.system.kernel_options.as_deref(),
        Some("console=ttyAMA0 androidboot.hardware=ranchu loop.max_part=7 printk.devkmsg=on")
    );
    assert!(close(m.system.sample_interval_s, 0.2));
}

#[test]
fn without_the_header_the_processes_say_android() {
    let mut t = Trace::open(&dir()).unwrap();
    for (k, v) in &mut t.header {
        if k == "version" {
            *v = "0.14.9".into();
        }
        if k == "title" {
            *v = "Boot chart for yocto".into();
        }
    }
    let m = analyze::analyze(&t).unwrap();
    assert_eq!(m.platform, Platform::Android);
    assert_eq!(
        m.platform_rule,
        "processes zygote64 (under pid 1) and system_server ran"
    );
    assert!(m.milestones.graphical_login.is_some());

    // A bootprint trace stays Linux: an Android container may run a zygote on a desktop.
    t.header.push(("bootprint.format".into(), "1".into()));
    let m = analyze::analyze(&t).unwrap();
    assert_eq!(m.platform, Platform::Linux);
    assert_eq!(m.platform_rule, "a bootprint trace (bootprint.format)");
    assert!(m.milestones.platform.is_empty());
    assert_eq!(m.milestones.graphical_login, None);
}

#[test]
fn each_android_milestone_is_found_at_its_time_by_its_rule() {
    let m = model_of(&dir());
    let ms = &m.milestones;
    let kernel = ms.kernel.as_ref().unwrap();
    assert!(close(kernel.t_s, 1.52), "{kernel:?}");
    assert_eq!(
        kernel.source,
        "no dmesg: the first user-space process, /system/bin/ueventd (pid 160), started"
    );
    assert_eq!(ms.init_exec, None);
    assert_eq!(ms.text_login, None);
    let anim = ms.graphical_login.as_ref().unwrap();
    assert!(close(anim.t_s, 16.40), "{anim:?}");
    assert_eq!(
        anim.source,
        "boot animation exited: process /system/bin/bootanimation (pid 470) last seen at 16.40 s"
    );
    // The log ends 2.6 s after the animation, 1.6 s of them idle: too short to settle, so
    // boot done is the last sample, where Android's init stopped bootcharting.
    assert!(close(ms.boot_done.t_s, 19.0), "{:?}", ms.boot_done);
    assert_eq!(ms.boot_done.source, analyze::platform::ANDROID_LAST_SAMPLE);
    assert!(m.notes.iter().any(|n| n.contains("sys.boot_completed")));

    let got: Vec<(&str, f64, &str)> = ms
        .platform
        .iter()
        .map(|p| (p.name.as_str(), p.t_s, p.source.as_str()))
        .collect();
    let want = [
        (
            "surfaceflinger",
            6.40,
            "process /system/bin/surfaceflinger (pid 430) started",
        ),
        ("zygote", 6.62, "process zygote64 (pid 440) started"),
        (
            "boot_animation",
            7.05,
            "process /system/bin/bootanimation (pid 470) started",
        ),
        (
            "system_server",
            9.21,
            "process system_server (pid 520) started",
        ),
        (
            "launcher",
            15.22,
            "process com.android.launcher3 (pid 700) started",
        ),
    ];
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((g.0, g.2), (w.0, w.2));
        assert!(close(g.1, w.1), "{g:?} vs {w:?}");
    }
    // The 70-byte argv[0] (longer than any kernel comm) was read whole.
    assert!(m.processes.iter().any(|p| p.pid == 420
        && p.name == "/vendor/bin/hw/android.hardware.biometrics.fingerprint-service.example"));
}

#[test]
fn the_archive_reads_as_the_directory() {
    let a = model_of(&dir());
    let mut b = model_of(&dir().join("bootchart.tgz"));
    assert_ne!(a.system.title, None);
    b.notes = a.notes.clone();
    assert_eq!(a.milestones, b.milestones);
    assert_eq!(a.processes, b.processes);
    assert_eq!(
        (a.platform, &a.platform_rule),
        (b.platform, &b.platform_rule)
    );
}

#[test]
fn a_boot_animation_still_running_gives_no_graphical_login_and_says_so() {
    // The log cut at 12.0 s: system_server is up, the animation still plays.
    let tmp = copy_with(|name, text| {
        if name == "header" {
            text
        } else {
            cut_before(&text, 1200)
        }
    });
    let m = model_of(tmp.path());
    assert_eq!(m.platform, Platform::Android);
    assert_eq!(m.milestones.graphical_login, None);
    assert!(
        m.notes.iter().any(|n| n
            == "Android: the boot animation (/system/bin/bootanimation, pid 470) still ran at \
                the last sample: no graphical login"),
        "{:?}",
        m.notes
    );
    assert!(m
        .notes
        .iter()
        .any(|n| n.starts_with("Android: no launcher process")));
    assert!(close(m.milestones.boot_done.t_s, 11.8));
    let names: Vec<&str> = m
        .milestones
        .platform
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "surfaceflinger",
            "zygote",
            "boot_animation",
            "system_server"
        ]
    );
}

#[test]
fn a_cut_or_garbled_log_is_refused_naming_file_and_line() {
    // Cut in the middle of a process line (a log pulled while init still wrote it).
    let tmp = copy_with(|name, text| {
        if name == "proc_ps.log" {
            let keep = cut_before(&text, 1000);
            let next = &text[keep.len()..];
            // The time line and the first 40 bytes of init's line.
            format!("{keep}{}", &next[.."1000\n".len() + 40])
        } else {
            text
        }
    });
    let err = refusal(tmp.path());
    let line = fs::read_to_string(tmp.path().join("proc_ps.log"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(
        err,
        format!("proc_ps.log:{line}: expected at least 20 fields after the command, found 7")
    );

    // A time line that is not a number.
    let tmp = copy_with(|name, text| {
        if name == "proc_stat.log" {
            text.replacen("\n\n640\n", "\n\n6x0\n", 1)
        } else {
            text
        }
    });
    let err = refusal(tmp.path());
    let line = 1
        + fs::read_to_string(dir().join("proc_stat.log"))
            .unwrap()
            .split("\n\n640\n")
            .next()
            .unwrap()
            .lines()
            .count()
        + 1;
    assert_eq!(
        err,
        format!(
            "proc_stat.log:{line}: expected a time in centiseconds starting a block, found \
             \"6x0\""
        )
    );
}

#[test]
fn a_debian_bootchart2_log_stays_linux_without_platform_milestones() {
    let m = model_of(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bootchart2-example1"),
    );
    assert_eq!(m.platform, Platform::Linux);
    assert!(m.milestones.platform.is_empty());
    assert!(m.milestones.text_login.is_some());
}

#[test]
fn diff_pairs_android_milestones_and_keeps_programs_apart() {
    // A: the log cut at 12.0 s; B: the whole log.
    let tmp = copy_with(|name, text| {
        if name == "header" {
            text
        } else {
            cut_before(&text, 1200)
        }
    });
    let (a, b) = (model_of(tmp.path()), model_of(&dir()));
    let d = analyze::diff::diff(&a, &b);
    let names: Vec<&str> = d.milestones.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "kernel",
            "init_exec",
            "text_login",
            "graphical_login",
            "surfaceflinger",
            "zygote",
            "boot_animation",
            "system_server",
            "launcher",
            "boot_done"
        ]
    );
    let launcher = d.milestones.iter().find(|p| p.name == "launcher").unwrap();
    assert_eq!((launcher.a_s, launcher.b_s), (None, Some(15.22)));
    let zygote = d.milestones.iter().find(|p| p.name == "zygote").unwrap();
    assert_eq!(zygote.delta_s, Some(0.0));
    // Every /system/bin/ program is its own: none is folded into another by a common prefix.
    let mut appeared: Vec<&str> = d.appeared.iter().map(|p| p.name.as_str()).collect();
    appeared.sort();
    assert_eq!(
        appeared,
        [
            "android.process.acore",
            "com.android.launcher3",
            "com.android.phone",
            "com.android.systemui"
        ]
    );
    for p in d.changed.iter().chain(&d.appeared) {
        assert_eq!(p.b.unwrap().count, 1, "{}", p.name);
    }
}
