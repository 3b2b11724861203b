//! `bootprint-boot rc` as /lib/init/rc runs it (through the startpar form): startpar's
//! answer on stdout, the process returns once the path to the login is done, and a detached
//! child starts the late services afterwards. Real scripts on a temporary root.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn script(root: &Path, name: &str, extra: &str, body: &str) {
    script_in(root, "rc2.d", 1, name, extra, body);
}

#[test]
fn startpar_form_returns_at_the_login_path_and_late_services_follow() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for d in ["etc/init.d", "etc/rc2.d", "etc/bootprint"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    fs::write(root.join("etc/insserv.conf"), "$syslog logger\n").unwrap();
    fs::write(
        root.join("etc/bootprint/rc.conf"),
        "late-max-wait = 0.2\nidle-window = 0.1\n",
    )
    .unwrap();
    script(root, "logger", "", "echo logger up");
    script(root, "bad", "# X-Start-Before: logger\n", "exit 1");
    // An interactive script has the console: its output must not land in the answer that
    // /lib/init/rc evaluates.
    script(
        root,
        "ask",
        "# X-Interactive: true\n# X-Start-Before: logger\n",
        "echo \"Starting ask: (fsck)\"",
    );
    script(root, "lateweb", "", "sleep 3\necho lateweb up");
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args([
            "rc",
            "--startpar",
            "-p",
            "4",
            "-t",
            "20",
            "-T",
            "3",
            "-M",
            "start",
        ])
        .args(["-P", "N", "-R", "2", "--root"])
        .arg(root)
        // The console: a file, as `$(...)` in /lib/init/rc only waits for stdout.
        .stderr(fs::File::create(root.join("console")).unwrap())
        .output()
        .unwrap();
    let took = t0.elapsed();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("failed_service='bad'"), "{stdout}");
    assert!(!stdout.contains("Starting"), "{stdout}");
    assert!(
        took < Duration::from_millis(3000),
        "returned after {took:?}: waited for the late service"
    );
    let log = root.join("run/bootprint/rc.log");
    let at_return = fs::read_to_string(&log).unwrap();
    assert!(at_return.contains(" rc_reached "), "{at_return}");
    assert!(!at_return.contains(" rc_done "), "{at_return}");
    // The detached child runs lateweb, finishes the log, then saves what it learned (after
    // rc_done, with fsyncs: wait for that too).
    let durations = root.join("var/lib/bootprint/rc-durations");
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let t = fs::read_to_string(&log).unwrap();
        if (t.contains(" rc_done ") && durations.is_file()) || Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        text.contains("rc_end script=lateweb action=start runlevel=2 late=1 exit=0 outcome=ok"),
        "{text}"
    );
    assert!(durations.is_file());
    let console = fs::read_to_string(root.join("console")).unwrap();
    assert!(console.contains("logger: logger up\n"), "{console}");
    assert!(console.contains("lateweb: lateweb up\n"), "{console}");
    assert!(console.contains("Starting ask: (fsck)\n"), "{console}");
}

/// A fake root with two scripts on the path (`bad` fails) and a fake /proc whose cmdline
/// holds `cmdline`.
fn fault_root(cmdline: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for d in ["etc/init.d", "etc/rc2.d", "proc"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    fs::write(root.join("etc/insserv.conf"), "$syslog logger\n").unwrap();
    fs::write(root.join("proc/cmdline"), format!("{cmdline}\n")).unwrap();
    script(root, "logger", "", "echo logger up");
    script(
        root,
        "bad",
        "# X-Start-Before: logger\n",
        "echo bad ran; exit 1",
    );
    tmp
}

fn startpar(root: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args([
            "rc",
            "--startpar",
            "-p",
            "4",
            "-t",
            "20",
            "-T",
            "3",
            "-M",
            "start",
        ])
        .args(["-P", "N", "-R", "2", "--root"])
        .arg(root)
        .arg("--proc")
        .arg(root.join("proc"))
        .stderr(fs::File::create(root.join("console")).unwrap())
        .output()
        .unwrap()
}

/// Issue defect 6 through the binary, as /lib/init/rc runs it: a failure forced in each
/// phase still runs every script, exits 0 and answers like startpar.
#[test]
fn startpar_form_with_a_fault_in_any_phase_runs_every_script_and_answers() {
    for fault in ["config", "load", "plan", "run", "panic"] {
        let root_tmp = fault_root(&format!("quiet bootprint.rc.fault={fault}"));
        let root = root_tmp.path();
        let out = startpar(root);
        let console = fs::read_to_string(root.join("console")).unwrap();
        assert!(out.status.success(), "fault={fault}: {out:?}\n{console}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("failed_service='bad'"),
            "fault={fault}: {stdout}\n{console}"
        );
        assert!(console.contains("logger up\n"), "fault={fault}: {console}");
        assert!(console.contains("bad ran\n"), "fault={fault}: {console}");
        assert!(
            console.contains(&format!("bootprint.rc.fault={fault}")),
            "fault={fault}: {console}"
        );
    }
}

/// What the startpar wrapper must take as "the runner did not do its job" (anything but
/// exit 0): `abort` dies by SIGABRT having run nothing; a usage error exits 2.
#[test]
fn the_runner_exits_non_zero_only_when_it_did_not_run_the_runlevel() {
    let root_tmp = fault_root("bootprint.rc.fault=abort");
    let root = root_tmp.path();
    let out = startpar(root);
    assert!(!out.status.success(), "{out:?}");
    assert!(!fs::read_to_string(root.join("console"))
        .unwrap()
        .contains("logger up"));
    let out = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args(["rc", "--startpar", "-M", "start"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// An LSB script started by `rc_dir` (`rcS.d`, `rc2.d`) with link number `seq`.
fn script_in(root: &Path, rc_dir: &str, seq: u8, name: &str, extra: &str, body: &str) {
    let text = format!(
        "#!/bin/sh\n### BEGIN INIT INFO\n# Provides: {name}\n{extra}### END INIT INFO\n[ \"$1\" = start ] || exit 0\n{body}\n"
    );
    let p = root.join("etc/init.d").join(name);
    testkit::write_program(&p, &text, 0o755);
    symlink(
        format!("../init.d/{name}"),
        root.join(format!("etc/{rc_dir}/S{seq:02}{name}")),
    )
    .unwrap();
}

/// One graph for the boot: runlevel S with `base` (on the login path: the logger needs it)
/// and `slowdev` then `devuser` beside the path; runlevel 2 with `logger` (the login path)
/// and `needsdev`, a late service that needs `devuser`. Marks go to `marks`.
fn one_graph_root(cmdline: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for d in [
        "etc/init.d",
        "etc/rcS.d",
        "etc/rc2.d",
        "etc/bootprint",
        "proc",
    ] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    fs::write(root.join("etc/insserv.conf"), "$syslog logger\n").unwrap();
    fs::write(
        root.join("etc/inittab"),
        "id:2:initdefault:\nsi::sysinit:/etc/init.d/rcS\n",
    )
    .unwrap();
    fs::write(root.join("proc/cmdline"), format!("{cmdline}\n")).unwrap();
    // The runner's settings in [rc] of bootprint.toml (rc.conf is deprecated).
    fs::write(
        root.join("etc/bootprint/bootprint.toml"),
        "[rc]\nfinish-in-s = []\nlate_max_wait = 0.2\nidle-window = 0.1\n",
    )
    .unwrap();
    let marks = root.join("marks").display().to_string();
    script_in(
        root,
        "rcS.d",
        1,
        "base",
        "",
        &format!("echo base >> {marks}"),
    );
    script_in(
        root,
        "rcS.d",
        2,
        "slowdev",
        "# Required-Start: base\n",
        &format!("sleep 3; echo slowdev >> {marks}"),
    );
    script_in(
        root,
        "rcS.d",
        3,
        "devuser",
        "# Required-Start: slowdev\n",
        &format!("echo devuser >> {marks}"),
    );
    script_in(
        root,
        "rc2.d",
        1,
        "logger",
        "# Required-Start: base\n",
        &format!("echo logger >> {marks}"),
    );
    script_in(
        root,
        "rc2.d",
        2,
        "needsdev",
        "# Required-Start: devuser\n",
        &format!("echo needsdev >> {marks}"),
    );
    tmp
}

/// `bootprint-boot rc --startpar` for `runlevel` (`-M boot` for S) on `root`.
fn startpar_rl(root: &Path, runlevel: &str) -> std::process::Output {
    let mode = if runlevel == "S" { "boot" } else { "start" };
    Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args(["rc", "--startpar", "-M", mode, "-P", "N", "-R", runlevel])
        .arg("--root")
        .arg(root)
        .arg("--proc")
        .arg(root.join("proc"))
        .stderr(
            fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(root.join("console"))
                .unwrap(),
        )
        .output()
        .unwrap()
}

/// Waits (at most 30 s) until `marks` holds `n` lines; returns them.
fn marks_when(root: &Path, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let m: Vec<String> = fs::read_to_string(root.join("marks"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect();
        if m.len() >= n || Instant::now() > deadline {
            return m;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// rcS returns once the S part of the login path is done (not after `slowdev`'s 3 s);
/// runlevel 2's path runs while S's rest goes on; its late service waits for the S script
/// it needs; S's worker ends the span log's runlevel S.
#[test]
fn runlevel_s_returns_at_its_part_of_the_path_and_the_rest_goes_on_beside() {
    let root_tmp = one_graph_root("quiet");
    let root = root_tmp.path();
    let s = startpar_rl(root, "S");
    let marks_at_return = fs::read_to_string(root.join("marks")).unwrap_or_default();
    let console = || fs::read_to_string(root.join("console")).unwrap_or_default();
    assert!(s.status.success(), "{s:?}\n{}", console());
    assert!(
        String::from_utf8_lossy(&s.stdout).contains("failed_service=''"),
        "{s:?}"
    );
    assert_eq!(
        marks_at_return, "base\n",
        "rcS waited for what is beside the path"
    );
    let two = startpar_rl(root, "2");
    assert!(two.status.success(), "{two:?}\n{}", console());
    let m = marks_when(root, 5);
    assert_eq!(m.len(), 5, "{m:?}\n{}", console());
    let at = |n: &str| {
        m.iter()
            .position(|x| x == n)
            .unwrap_or_else(|| panic!("{n}: {m:?}"))
    };
    assert_eq!(at("base"), 0, "{m:?}");
    assert!(
        at("logger") < at("slowdev"),
        "the login path waited for S's rest: {m:?}"
    );
    assert!(
        at("slowdev") < at("devuser") && at("devuser") < at("needsdev"),
        "{m:?}"
    );
    let log = root.join("run/bootprint/rc.log");
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let t = fs::read_to_string(&log).unwrap();
        if t.matches(" rc_done ").count() >= 2 || Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(text.contains(" rc_handoff runlevel=S "), "{text}");
    assert!(text.contains(" rc_done runlevel=S "), "{text}");
    assert!(
        text.contains("script=slowdev action=start runlevel=S late=0 beside=1"),
        "{text}"
    );
    // Both runners learned, neither wrote over the other: S's worker saved while runlevel
    // 2 ran, and runlevel 2's late child saved after it.
    let durations = root.join("var/lib/bootprint/rc-durations");
    let deadline = Instant::now() + Duration::from_secs(30);
    let names = ["base ", "slowdev ", "devuser ", "logger ", "needsdev "];
    let learned = loop {
        let t = fs::read_to_string(&durations).unwrap_or_default();
        if names.iter().all(|n| t.contains(n)) || Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    for n in names {
        assert!(learned.contains(n), "{n}not learned:\n{learned}");
    }
}

/// The worker dies before rcS may return (`worker`): the parent runs what it had not
/// started. It dies right after (`beside`): runlevel 2's runner runs S's scripts not
/// started before its own that need them. Either way every script runs once.
#[test]
fn a_lost_worker_of_runlevel_s_still_runs_every_script() {
    for fault in ["worker", "beside"] {
        let root_tmp = one_graph_root(&format!("bootprint.rc.fault={fault}"));
        let root = root_tmp.path();
        let console = || fs::read_to_string(root.join("console")).unwrap_or_default();
        let s = startpar_rl(root, "S");
        assert!(s.status.success(), "{fault}: {s:?}\n{}", console());
        assert!(
            String::from_utf8_lossy(&s.stdout).contains("failed_service="),
            "{fault}: {s:?}"
        );
        let two = startpar_rl(root, "2");
        assert!(two.status.success(), "{fault}: {two:?}\n{}", console());
        let mut m = marks_when(root, 5);
        assert!(console().contains("aborting"), "{fault}: {}", console());
        // Nothing runs twice: a moment for a stray second run to show.
        std::thread::sleep(Duration::from_millis(2500));
        m = marks_when(root, m.len());
        let mut sorted = m.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            ["base", "devuser", "logger", "needsdev", "slowdev"],
            "{fault}: {m:?}\n{}",
            console()
        );
        let at = |n: &str| m.iter().position(|x| x == n).unwrap();
        assert!(
            at("slowdev") < at("devuser") && at("devuser") < at("needsdev"),
            "{fault}: {m:?}"
        );
    }
}

/// Runlevel 0: before any stop, the runner and its parents (here this test) are listed in
/// sendsigs.omit.d, so Debian's sendsigs, which kills every process outside its own session,
/// leaves the runner alive to run what comes after it; a script that runs later sees it.
#[test]
fn runlevel_0_spares_the_runner_from_sendsigs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for d in ["etc/init.d", "etc/rc0.d", "run/sendsigs.omit.d"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    let seen = root.join("seen");
    let text = format!(
        "#!/bin/sh\n### BEGIN INIT INFO\n# Provides: sendsigs\n# Default-Stop: 0\n### END INIT INFO\n\
         [ \"$1\" = stop ] && cat {}/run/sendsigs.omit.d/bootprint-rc > {}\nexit 0\n",
        root.display(),
        seen.display()
    );
    let p = root.join("etc/init.d/sendsigs");
    testkit::write_program(&p, &text, 0o755);
    symlink("../init.d/sendsigs", root.join("etc/rc0.d/K01sendsigs")).unwrap();
    // Others sendsigs spares, as Debian's packages list them.
    fs::write(root.join("run/sendsigs.omit"), "77 78\n").unwrap();
    fs::write(root.join("run/sendsigs.omit.d/rsyslog"), "99\n").unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_bootprint-boot"))
        .args(["rc", "0", "--no-detach", "--root"])
        .arg(root)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let runner = child.id().to_string();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let pids = fs::read_to_string(&seen).unwrap();
    let pids: Vec<&str> = pids.lines().collect();
    assert_eq!(pids.first(), Some(&runner.as_str()), "{pids:?}");
    assert!(
        pids.contains(&std::process::id().to_string().as_str()),
        "its parent too: {pids:?}"
    );
    // The span log names whom sendsigs spared, the runner among them (for the shutdown's
    // trace: what outlived sendsigs because it was spared is not what it waited for).
    let log = fs::read_to_string(root.join("run/bootprint/rc.log")).unwrap();
    let start = log
        .lines()
        .find(|l| l.contains(" rc_start ") && l.contains("script=sendsigs"))
        .unwrap_or_else(|| panic!("no rc_start of sendsigs: {log}"));
    let spared = start
        .split(' ')
        .find_map(|f| f.strip_prefix("spared="))
        .unwrap_or_else(|| panic!("no spared= in {start}"));
    let spared: Vec<&str> = spared.split(',').collect();
    for pid in ["77", "78", "99", runner.as_str()] {
        assert!(spared.contains(&pid), "{pid} not in {spared:?}");
    }
}
