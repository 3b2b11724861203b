//! The runner on a temporary root with real LSB shell scripts on real ptys: order, priority,
//! late services, whole prefixed output, timeouts, exit codes, interactive scripts alone.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, Instant};

use analyze::services::{ServicesView as Services, Span};
use rc::durations::Durations;
use rc::run::{Config, Options, Plan, Runner};
use rc::spans::SpanLog;
use rc::system::{Runlevel, System};
use trace::rclog;

/// Removed when dropped.
struct Root(tempfile::TempDir);

impl Root {
    fn path(&self) -> &Path {
        self.0.path()
    }

    fn new() -> Root {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path();
        fs::create_dir_all(p.join("etc/init.d")).unwrap();
        fs::create_dir_all(p.join("etc/rc2.d")).unwrap();
        fs::create_dir_all(p.join("run")).unwrap();
        fs::write(
            p.join("etc/insserv.conf"),
            "$syslog logger\n$remote_fs base\n",
        )
        .unwrap();
        Root(tmp)
    }

    /// An LSB script: `deps` its Required-Start, `body` its start action.
    fn script(&self, name: &str, header_extra: &str, body: &str) {
        let text = format!(
            "#!/bin/sh\n### BEGIN INIT INFO\n# Provides: {name}\n{header_extra}# Default-Start: 2\n# Default-Stop:\n### END INIT INFO\ncase \"$1\" in\nstart)\n{body}\n;;\nstop) echo stopping ;;\nesac\n"
        );
        let path = self.path().join("etc/init.d").join(name);
        testkit::write_program(&path, &text, 0o755);
        symlink(
            format!("../init.d/{name}"),
            self.path().join(format!("etc/rc2.d/S01{name}")),
        )
        .unwrap();
    }

    /// An LSB script of runlevel 0 (`K01NAME`): `extra` its header lines, its stop a mark.
    fn stop_script(&self, name: &str, extra: &str) {
        self.stop_script_after(name, extra, "true");
    }

    /// [`Root::stop_script`] whose stop runs `first` before it leaves its mark.
    fn stop_script_after(&self, name: &str, extra: &str, first: &str) {
        let m = self.mark();
        let text = format!(
            "#!/bin/sh\n### BEGIN INIT INFO\n# Provides: {name}\n{extra}# Default-Stop: 0\n### END INIT INFO\n[ \"$1\" = stop ] && {first} && echo {name} >> {m}\nexit 0\n"
        );
        let path = self.path().join("etc/init.d").join(name);
        testkit::write_program(&path, &text, 0o755);
        fs::create_dir_all(self.path().join("etc/rc0.d")).unwrap();
        symlink(
            format!("../init.d/{name}"),
            self.path().join(format!("etc/rc0.d/K01{name}")),
        )
        .unwrap();
    }

    fn mark(&self) -> String {
        self.path().join("marks").display().to_string()
    }
}

fn quick_config() -> Config {
    Config {
        login: vec!["$syslog".into()],
        load_per_cpu: 1000.0, // the host is shared: parallelism must not depend on its load
        timeout: Duration::from_secs(2),
        flush_after: Duration::from_secs(60),
        idle_window: Duration::from_millis(100),
        late_max_wait: Duration::from_millis(700),
        ..Config::default()
    }
}

fn run(
    root: &Root,
    cfg: &Config,
    durations: &Durations,
) -> (Services, String, Vec<trace::Event>, String) {
    let sys = System::load(root.path()).unwrap();
    let plan = Plan::start(&sys, Runlevel::Num(2), cfg, durations, None);
    let log_path = root.path().join("run/rc.log");
    let mut log = SpanLog::open(&log_path);
    let mut out: Vec<u8> = Vec::new();
    let summary;
    {
        let mut runner = Runner::new(&plan, cfg, Options::default(), &mut log, &mut out);
        runner.begin();
        runner.run_phase(false);
        summary = runner.startpar_summary();
        if runner.has_late() {
            runner.wait_idle();
            runner.run_phase(true);
        }
        runner.done();
    }
    let text = fs::read_to_string(&log_path).unwrap();
    let (events, diags) = rclog::parse(&text, &log_path.display().to_string());
    assert!(diags.is_empty(), "{diags:?}");
    (
        Services::from_events(&events),
        String::from_utf8(out).unwrap(),
        events,
        summary,
    )
}

fn span<'a>(v: &'a Services, name: &str) -> &'a Span {
    v.spans
        .iter()
        .find(|s| s.script == name)
        .unwrap_or_else(|| panic!("no span for {name}: {:?}", v.spans))
}

#[test]
fn graph_order_late_output_timeouts_and_exit_codes() {
    let root = Root::new();
    let m = root.mark();
    root.script(
        "base",
        "",
        &format!(
            "[ -t 1 ] && echo on a tty\necho base one\nsleep 0.3\necho base two\necho base >> {m}"
        ),
    );
    root.script(
        "logger",
        "# Required-Start: $remote_fs\n",
        &format!("grep -q base {m} && echo logger after base >> {m}\necho logger up"),
    );
    // Not on any path to the login target: learned late.
    root.script("web", "# Required-Start: $remote_fs\n", "echo web up");
    root.script("hang", "", "sleep 30");
    root.script(
        "afterhang",
        "# Required-Start: hang\n# X-Start-Before: logger\n",
        "echo afterhang ran",
    );
    root.script("fail", "# X-Start-Before: logger\n", "echo failing\nexit 1");
    root.script("notinst", "# X-Start-Before: logger\n", "exit 5");
    root.script("notconf", "# X-Start-Before: logger\n", "exit 6");
    // Configured late.
    root.script("mail", "", "echo mail up");
    let mut cfg = quick_config();
    cfg.late = vec!["mail".into()];
    let t0 = Instant::now();
    let (v, out, events, summary) = run(&root, &cfg, &Durations::default());
    let took = t0.elapsed();

    // Order respects the graph.
    let marks = fs::read_to_string(root.path().join("marks")).unwrap();
    assert!(marks.contains("logger after base"), "{marks}");
    let base = span(&v, "base");
    let logger = span(&v, "logger");
    assert!(logger.start_ns >= base.end_ns.unwrap());
    assert_eq!(
        logger.waited_for, "afterhang",
        "the last dependency to end released it"
    );
    let afterhang = span(&v, "afterhang");
    assert!(afterhang.start_ns >= span(&v, "hang").end_ns.unwrap());

    // The timeout fired, the boot went on, and it was recorded.
    let hang = span(&v, "hang");
    assert_eq!(hang.outcome, "timed_out");
    let secs = hang.duration_ns() as f64 / 1e9;
    assert!((1.9..5.0).contains(&secs), "hang ran {secs} s");
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert!(out.contains("hang: timed out after 2 s"), "{out}");
    assert_eq!(afterhang.outcome, "ok");

    // LSB exit codes.
    assert_eq!(span(&v, "fail").outcome, "failed");
    assert_eq!(span(&v, "fail").exit, Some(1));
    assert_eq!(span(&v, "notinst").outcome, "not_installed");
    assert_eq!(span(&v, "notconf").outcome, "not_configured");
    assert!(summary.contains("failed_service='fail hang'"), "{summary}");
    assert!(summary.contains("skipped_service_not_installed='notinst'"));
    assert!(summary.contains("skipped_service_not_configured='notconf'"));

    // Late services: web (learned) and mail (configured) start after the login path.
    let reached = events.iter().find(|e| e.kind == "rc_reached").unwrap().t_ns;
    let late_ev = events.iter().find(|e| e.kind == "rc_late").unwrap();
    for name in ["web", "mail"] {
        let s = span(&v, name);
        assert!(s.late, "{name} should be late");
        assert!(
            s.start_ns >= late_ev.t_ns && late_ev.t_ns >= reached,
            "{name}"
        );
        assert_eq!(s.outcome, "ok");
    }
    for name in ["base", "logger", "hang", "fail"] {
        assert!(!span(&v, name).late, "{name} is on the path");
    }

    // Output: whole, prefixed, on a pty.
    assert!(
        out.contains("base: on a tty\nbase: base one\nbase: base two\n"),
        "{out}"
    );
    assert!(out.contains("fail: failing\n"));
    assert!(out.contains("web: web up\n"));

    // The services view: the chain to the login ends at the last path script.
    let chain: Vec<&str> = v
        .critical_chain()
        .iter()
        .map(|s| s.script.as_str())
        .collect();
    assert_eq!(chain, ["hang", "afterhang", "logger"], "{chain:?}");
}

#[test]
fn priority_puts_the_longest_path_to_the_login_first() {
    let root = Root::new();
    // Both ready at once; with one slot, the one on the heavier path must go first even
    // though the other sorts first by name.
    root.script("aside", "", "sleep 0.2");
    root.script("zlong", "", "sleep 0.2");
    root.script("zmid", "# Required-Start: zlong\n", "sleep 0.1");
    root.script("logger", "# Required-Start: zmid aside\n", "echo logger up");
    let mut cfg = quick_config();
    cfg.max_parallel = 1;
    let mut d = Durations::default();
    d.record("aside", "start", 50);
    d.record("zlong", "start", 3000);
    d.record("zmid", "start", 3000);
    let (v, _, _, _) = run(&root, &cfg, &d);
    let order: Vec<&str> = v.spans.iter().map(|s| s.script.as_str()).collect();
    assert_eq!(order, ["zlong", "zmid", "aside", "logger"], "{order:?}");
    // One at a time.
    for w in v.spans.windows(2) {
        assert!(w[1].start_ns >= w[0].end_ns.unwrap());
    }
    // Without learned durations, unit weights: the two-script chain still goes first.
    let (v, _, _, _) = run(&Root::copy_of(&root), &cfg, &Durations::default());
    assert_eq!(v.spans[0].script, "zlong");
}

impl Root {
    fn copy_of(other: &Root) -> Root {
        let r = Root::new();
        for e in fs::read_dir(other.path().join("etc/init.d"))
            .unwrap()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            testkit::copy_program(&e.path(), &r.path().join("etc/init.d").join(&name), 0o755);
            symlink(
                format!("../init.d/{name}"),
                r.path().join(format!("etc/rc2.d/S01{name}")),
            )
            .unwrap();
        }
        r
    }
}

#[test]
fn scripts_run_in_parallel_and_an_interactive_one_runs_alone() {
    let root = Root::new();
    for n in ["p1", "p2", "p3"] {
        root.script(n, "", "sleep 0.6");
    }
    // Longer than the 2 s timeout: interactive scripts are not timed out.
    root.script("ask", "# X-Interactive: true\n", "sleep 2.3");
    root.script("logger", "# Required-Start: p1 p2 p3 ask\n", "true");
    let cfg = quick_config();
    let t0 = Instant::now();
    let (v, _, _, _) = run(&root, &cfg, &Durations::default());
    let took = t0.elapsed();
    let p: Vec<_> = ["p1", "p2", "p3"].iter().map(|n| span(&v, n)).collect();
    let latest_start = p.iter().map(|s| s.start_ns).max().unwrap();
    let earliest_end = p.iter().map(|s| s.end_ns.unwrap()).min().unwrap();
    assert!(latest_start < earliest_end, "p1..p3 overlapped");
    let ask = span(&v, "ask");
    assert_eq!(ask.outcome, "ok");
    for s in &v.spans {
        if s.script != "ask" {
            let overlap = s.start_ns < ask.end_ns.unwrap() && ask.start_ns < s.end_ns.unwrap();
            assert!(!overlap, "{} ran beside the interactive script", s.script);
        }
    }
    assert!(took < Duration::from_secs(6), "{took:?}");
}

/// What a stop plan's run left: the order the scripts stopped in (`marks`), the span log's
/// events and the console.
struct Stopped {
    marks: String,
    events: Vec<trace::Event>,
    console: String,
}

/// Runs runlevel 0's stop plan of `scripts` (name, extra header lines) under `root` with
/// `options`, begun as `run_runlevel` begins a run.
fn run_stops(root: &Root, scripts: &[(&str, &str)], options: Options) -> Stopped {
    for (name, extra) in scripts {
        root.stop_script(name, extra);
    }
    run_stop_plan(root, options, &quick_config())
}

/// Runs runlevel 0's stop plan of the scripts under `root` with `options` and `cfg`.
fn run_stop_plan(root: &Root, options: Options, cfg: &Config) -> Stopped {
    let sys = System::load(root.path()).unwrap();
    let plan = Plan::stop(
        &sys,
        Runlevel::Num(0),
        &Config::default(),
        &Durations::default(),
        None,
    );
    let log_path = root.path().join("run/rc.log");
    let mut log = SpanLog::open(&log_path);
    let mut out = Vec::new();
    let mut r = Runner::new(&plan, cfg, options, &mut log, &mut out);
    r.begin();
    r.run_phase(false);
    drop(r);
    drop(log);
    let (events, _) = rclog::parse(&fs::read_to_string(&log_path).unwrap(), "rc.log");
    Stopped {
        marks: fs::read_to_string(root.path().join("marks")).unwrap(),
        events,
        console: String::from_utf8_lossy(&out).into_owned(),
    }
}

#[test]
fn stop_plan_follows_required_stop_in_reverse() {
    let root = Root::new();
    let run = run_stops(
        &root,
        &[
            ("syslogd", ""),
            ("app", "# Required-Stop: syslogd\n"),
            ("web", "# Required-Stop: app\n"),
        ],
        Options::default(),
    );
    assert_eq!(run.marks, "web\napp\nsyslogd\n");
}

/// The run's `n` scripts all started before the first of them ended (they overlapped).
fn assert_all_started_before_any_ended(run: &Stopped, n: usize) {
    let kinds: Vec<&str> = run
        .events
        .iter()
        .filter(|e| e.kind == "rc_start" || e.kind == "rc_end")
        .map(|e| e.kind.as_str())
        .collect();
    let want: Vec<&str> = [vec!["rc_start"; n], vec!["rc_end"; n]].concat();
    assert_eq!(kinds, want, "{kinds:?}");
}

/// A stop plan is held by `max_parallel` only, never by the load: under a `/proc/stat` of
/// 100 runnable tasks (far above `load_per_cpu` 2 times 2 CPUs, which holds a start plan
/// to one script at a time) three independent stops all start before the first ends.
#[test]
fn a_stop_plan_is_not_held_back_by_the_load() {
    let root = Root::new();
    for name in ["a", "b", "c"] {
        root.stop_script_after(name, "", "sleep 0.5");
    }
    let proc_dir = root.path().join("proc");
    fs::create_dir_all(&proc_dir).unwrap();
    fs::write(
        proc_dir.join("stat"),
        "cpu  100 0 50 800 40 5 5 0 0 0\nprocs_running 101\nprocs_blocked 0\n",
    )
    .unwrap();
    let cfg = Config {
        load_per_cpu: 2.0,
        ..quick_config()
    };
    let stat = rc::run::ProcStat::read(&proc_dir);
    assert!(!rc::run::may_start(1, &stat, &cfg, 2), "a start plan waits");
    let run = run_stop_plan(
        &root,
        Options {
            proc_dir,
            cpus: 2,
            ..Options::default()
        },
        &cfg,
    );
    assert_eq!(run.marks.lines().count(), 3, "{}", run.marks);
    assert_all_started_before_any_ended(&run, 3);
}

/// A stop plan runs a script that is interactive for starting (`X-Interactive`, or
/// insserv.conf's `<interactive>`: udev) beside the others, as startpar's stop mode does:
/// run alone, it held everything after it in priority.
#[test]
fn an_interactive_scripts_stop_runs_beside_the_others() {
    let root = Root::new();
    root.stop_script_after("con", "# X-Interactive: true\n", "sleep 0.5");
    for name in ["a", "b"] {
        root.stop_script_after(name, "", "sleep 0.5");
    }
    let run = run_stop_plan(&root, Options::default(), &quick_config());
    assert_eq!(run.marks.lines().count(), 3, "{}", run.marks);
    assert_all_started_before_any_ended(&run, 3);
}

/// Runlevel 0 with a shutdown being recorded: the trace is saved after every service
/// stopped and umountfs ran, before umountroot remounts the root read-only, once.
#[test]
fn the_shutdown_is_saved_before_the_root_goes_read_only() {
    let root = Root::new();
    let m = root.mark();
    // Stands in for `bootprint-boot`: `PROGRAM shutdown --save --wait 10` leaves a mark.
    let saver = root.path().join("saver");
    testkit::write_program(
        &saver,
        &format!("#!/bin/sh\n[ \"$1 $2\" = \"shutdown --save\" ] && echo saved >> {m}\n"),
        0o755,
    );
    let run = run_stops(
        &root,
        &[
            ("app", "# Required-Stop: umountfs\n"),
            ("umountfs", "# Required-Stop: umountroot\n"),
            ("umountroot", "# Should-Stop: halt\n"),
            ("halt", ""),
        ],
        Options {
            save_shutdown: Some(saver),
            ..Options::default()
        },
    );
    assert_eq!(run.marks, "app\numountfs\nsaved\numountroot\nhalt\n");
    let saved: Vec<_> = run
        .events
        .iter()
        .filter(|e| e.kind == "rc_shutdown_saved")
        .collect();
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].get("ok"), Some("1"));
}

/// The kexec lever's load runs beside the stops and is waited for before anything
/// unmounts: its outcome is logged before umountfs starts. Under a test root nothing can be
/// loaded (no kexec under it), so the reboot script runs, as it must whenever the lever
/// does not load.
#[test]
fn the_kexec_levers_load_ends_before_anything_unmounts() {
    let root = Root::new();
    let run = run_stops(
        &root,
        &[
            ("app", "# Required-Stop: umountfs\n"),
            ("umountfs", "# Required-Stop: umountroot\n"),
            ("umountroot", "# Should-Stop: reboot\n"),
            ("reboot", ""),
        ],
        Options {
            root: root.path().to_path_buf(),
            prepare_kexec: true,
            ..Options::default()
        },
    );
    assert_eq!(run.marks, "app\numountfs\numountroot\nreboot\n");
    assert!(
        run.console
            .contains("bootprint rc: the reboot goes through the firmware"),
        "{}",
        run.console
    );
    let at = |kind: &str, script: Option<&str>| {
        run.events
            .iter()
            .position(|e| e.kind == kind && script.is_none_or(|s| e.get("script") == Some(s)))
    };
    let prepared = at("rc_kexec_prepared", None).expect("the load's outcome is logged");
    assert_ne!(run.events[prepared].get("outcome"), Some("loaded"));
    assert!(prepared < at("rc_start", Some("umountfs")).unwrap());
    assert!(at("rc_kexec", None).is_none(), "no jump without a load");
}

/// A display manager needs a logind its header does not name: with one in the runlevel,
/// elogind joins the path to the login; without one it stays late.
#[test]
fn a_display_manager_brings_its_logind_onto_the_path() {
    let root = Root::new();
    root.script("dbus", "", "true");
    root.script("elogind", "# Required-Start: dbus\n", "true");
    root.script("postgresql", "", "true");
    root.script("rmnologin", "", "true");
    let late_of = |root: &Root| {
        let sys = System::load(root.path()).unwrap();
        let cfg = Config {
            login: vec!["rmnologin".into(), "lightdm".into()],
            ..Config::default()
        };
        let plan = Plan::start(&sys, Runlevel::Num(2), &cfg, &Durations::default(), None);
        let mut late: Vec<String> = plan
            .tasks
            .iter()
            .filter(|t| t.late)
            .map(|t| t.name.clone())
            .collect();
        late.sort();
        late
    };
    assert_eq!(late_of(&root), ["dbus", "elogind", "postgresql"]);
    root.script(
        "lightdm",
        "# Required-Start: $remote_fs\n# Should-Start: dbus consolekit\n",
        "true",
    );
    assert_eq!(late_of(&root), ["postgresql"]);
}

#[test]
fn the_binary_answers_like_startpar_and_learns() {
    // run_runlevel without detaching: the whole runlevel, durations saved under the root.
    let root = Root::new();
    root.script("logger", "", "echo up");
    root.script("late1", "", "sleep 0.1");
    fs::create_dir_all(root.path().join("etc/bootprint")).unwrap();
    fs::write(
        root.path().join("etc/bootprint/rc.conf"),
        "login = $syslog\nlate-max-wait = 0.3\nidle-window = 0.1\n",
    )
    .unwrap();
    let mut req = rc::run::Request::new(Runlevel::Num(2));
    req.root = root.path().to_path_buf();
    req.spans = root.path().join("run/bootprint/rc.log");
    req.detach = false;
    // A dry run prints the plan and runs nothing.
    req.dry_run = true;
    let mut out = Vec::new();
    assert_eq!(rc::run::run_runlevel(&req, &mut out), 0);
    let plan = String::from_utf8(out).unwrap();
    assert!(plan.contains("runlevel 2 start: 2 tasks, 1 late"), "{plan}");
    assert!(
        plan.contains("  late       500 ms  prio     500  late1"),
        "{plan}"
    );
    assert!(!req.spans.exists() && !root.path().join("var").exists());
    req.dry_run = false;
    let mut out = Vec::new();
    assert_eq!(rc::run::run_runlevel(&req, &mut out), 0);
    let (d, diags) = Durations::load(&root.path().join("var/lib/bootprint/rc-durations"));
    assert!(diags.is_empty());
    assert_eq!(d.map.len(), 2, "{d:?}");
    let (v, _) = Services::from_text(&fs::read_to_string(&req.spans).unwrap(), "rc.log");
    let kept = fs::read_to_string(root.path().join("var/lib/bootprint/rc-last.log")).unwrap();
    assert!(kept.contains(" rc_done "), "{kept}");
    assert!(
        kept.contains(" learned=0"),
        "first run: nothing learned yet\n{kept}"
    );
    assert!(span(&v, "late1").late);
    // The next run orders by what this one learned, and says so.
    let mut out = Vec::new();
    assert_eq!(rc::run::run_runlevel(&req, &mut out), 0);
    let kept = fs::read_to_string(root.path().join("var/lib/bootprint/rc-last.log")).unwrap();
    assert!(kept.contains(" learned=2"), "{kept}");
}

/// `rc-last.log` is replaced whole (temp file, fsync, rename), never written in place: a
/// symlink planted there (or anything else) is replaced, its target left alone. Before, the
/// span log was copied onto it with `fs::copy`, through the symlink.
#[test]
fn state_files_are_replaced_whole_never_written_through() {
    let root = Root::new();
    root.script("logger", "", "echo up");
    let state = root.path().join("var/lib/bootprint");
    fs::create_dir_all(&state).unwrap();
    let victim = root.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    symlink(&victim, state.join("rc-last.log")).unwrap();
    symlink(&victim, state.join("rc-durations.tmp")).unwrap();
    let mut req = rc::run::Request::new(Runlevel::Num(2));
    req.root = root.path().to_path_buf();
    req.spans = root.path().join("run/bootprint/rc.log");
    req.detach = false;
    assert_eq!(rc::run::run_runlevel(&req, &mut Vec::new()), 0);
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    let kept = state.join("rc-last.log");
    assert!(fs::symlink_metadata(&kept).unwrap().is_file());
    assert!(fs::read_to_string(&kept).unwrap().contains(" rc_done "));
    let (d, diags) = Durations::load(&state.join("rc-durations"));
    assert!(diags.is_empty() && d.map.len() == 1, "{d:?} {diags:?}");
    // No temporary file is left behind.
    let names: Vec<String> = fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") && n.starts_with('.'))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

/// The processes of a group that are alive (not zombies), from /proc.
fn alive_in_group(pgid: i32) -> Vec<String> {
    let mut v = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...: comm may hold blanks, so split after the ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[2].parse::<i32>() == Ok(pgid) && f[0] != "Z" {
            v.push(stat.trim().to_string());
        }
    }
    v
}

/// Issue defect 11: a script that ignores SIGTERM and times out must not outlive the
/// runner when the runlevel ends within the kill delay (5 s): its whole process group is
/// SIGKILLed before the runner returns. Before, nothing sent SIGKILL: the runner returned
/// at once and the group lived on.
#[test]
fn a_timed_out_script_ignoring_sigterm_is_killed_before_the_runner_returns() {
    let root = Root::new();
    let pidfile = root.path().join("pid");
    // `trap '' TERM` is inherited by the sleep: the whole group ignores SIGTERM.
    root.script(
        "stubborn",
        "",
        &format!(
            "trap '' TERM\necho $$ > {}\nsleep 60\nsleep 60",
            pidfile.display()
        ),
    );
    root.script("logger", "", "true");
    let cfg = quick_config(); // timeout 2 s
    let t0 = Instant::now();
    let (v, _, _, _) = run(&root, &cfg, &Durations::default());
    let took = t0.elapsed();
    assert_eq!(span(&v, "stubborn").outcome, "timed_out");
    // Timeout (2 s), then the kill delay (5 s) for SIGTERM to work, then SIGKILL.
    assert!(took < Duration::from_secs(12), "took {took:?}");
    let pgid: i32 = fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SIGKILL was sent before the return; on a loaded machine dying takes a moment.
    let deadline = Instant::now() + Duration::from_secs(2);
    let left = loop {
        let left = alive_in_group(pgid);
        if left.is_empty() || Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        left.is_empty(),
        "alive 2 s after the runner returned: {left:?}"
    );
}

/// A root for the fallback tests: every script appends `<name> <action>` to `marks`, so a
/// test sees what ran, how often and in which order. `links`: (runlevel dir, link name).
fn fallback_root(scripts: &[(&str, &str)], links: &[(&str, &str)]) -> Root {
    let root = Root::new();
    let m = root.mark();
    for (name, extra) in scripts {
        let text = format!(
            "#!/bin/sh\n### BEGIN INIT INFO\n# Provides: {name}\n{extra}# Default-Start: 2\n# Default-Stop: 0\n### END INIT INFO\necho {name} \"$1\" >> {m}\nexit 0\n"
        );
        let path = root.path().join("etc/init.d").join(name);
        testkit::write_program(&path, &text, 0o755);
    }
    for (dir, link) in links {
        fs::create_dir_all(root.path().join("etc").join(dir)).unwrap();
        let name = &link[3..];
        symlink(
            format!("../init.d/{name}"),
            root.path().join("etc").join(dir).join(link),
        )
        .unwrap();
    }
    root
}

/// `run_runlevel` on `root` with `cmdline` as the kernel command line (a fake /proc):
/// (exit code, console, marks, span log).
fn run_with_cmdline(
    root: &Root,
    rl: Runlevel,
    previous: Option<Runlevel>,
    cmdline: &str,
) -> (i32, String, String, String) {
    let proc_dir = root.path().join("proc");
    fs::create_dir_all(&proc_dir).unwrap();
    fs::write(proc_dir.join("cmdline"), format!("{cmdline}\n")).unwrap();
    let mut req = rc::run::Request::new(rl);
    req.root = root.path().to_path_buf();
    req.proc_dir = proc_dir;
    req.spans = root.path().join("run/bootprint/rc.log");
    req.previous = previous;
    req.detach = false;
    let mut out = Vec::new();
    let code = rc::run::run_runlevel(&req, &mut out);
    let marks = fs::read_to_string(root.path().join("marks")).unwrap_or_default();
    let log = fs::read_to_string(&req.spans).unwrap_or_default();
    (code, String::from_utf8_lossy(&out).into_owned(), marks, log)
}

const FALLBACK_SCRIPTS: [(&str, &str); 4] = [
    ("base", ""),
    ("logger", "# Required-Start: base\n"),
    ("web", "# Required-Start: logger\n"),
    ("zlate", ""),
];
const FALLBACK_LINKS: [(&str, &str); 4] = [
    ("rc2.d", "S01base"),
    ("rc2.d", "S02logger"),
    ("rc2.d", "S03web"),
    ("rc2.d", "S04zlate"),
];

fn sorted_lines(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s.lines().collect();
    v.sort();
    v
}

/// Issue defect 6: a failure outside the runner's guarded run (here a value in rc.conf
/// that made the configuration phase panic) started no services at all. Every script of
/// the runlevel must still run.
#[test]
fn a_panic_while_reading_the_configuration_still_runs_every_script() {
    let root = fallback_root(&FALLBACK_SCRIPTS, &FALLBACK_LINKS);
    fs::create_dir_all(root.path().join("etc/bootprint")).unwrap();
    fs::write(
        root.path().join("etc/bootprint/rc.conf"),
        "timeout = 1e300\n",
    )
    .unwrap();
    let (code, out, marks, _) = run_with_cmdline(&root, Runlevel::Num(2), None, "quiet");
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        sorted_lines(&marks),
        ["base start", "logger start", "web start", "zlate start"],
        "{out}"
    );
}

/// `bootprint.rc.fault=` forces a failure in each phase; every script of the runlevel
/// still runs exactly once, in an order its dependencies allow, and the span log says
/// which phase failed.
#[test]
fn a_fault_in_any_phase_still_runs_every_script_once() {
    for (fault, reason) in [
        ("config", "config"),
        ("load", "load"),
        ("plan", "plan"),
        ("run", "run"),
        ("panic", "answer"),
    ] {
        let root = fallback_root(&FALLBACK_SCRIPTS, &FALLBACK_LINKS);
        fs::create_dir_all(root.path().join("etc/bootprint")).unwrap();
        // zlate is a late service: `panic` fires once the path is done, before it runs.
        fs::write(
            root.path().join("etc/bootprint/rc.conf"),
            "login = web\nlate = zlate\nlate-max-wait = 0.2\nidle-window = 0.1\n",
        )
        .unwrap();
        let cmdline = format!("root=/dev/vda bootprint.rc=1 bootprint.rc.fault={fault} quiet");
        let (code, out, marks, log) = run_with_cmdline(&root, Runlevel::Num(2), None, &cmdline);
        assert_eq!(code, 0, "fault={fault}: {out}");
        let lines: Vec<&str> = marks.lines().collect();
        assert_eq!(
            sorted_lines(&marks),
            ["base start", "logger start", "web start", "zlate start"],
            "fault={fault}: {out}"
        );
        let pos = |s: &str| lines.iter().position(|l| *l == s).unwrap();
        assert!(pos("base start") < pos("logger start") && pos("logger start") < pos("web start"));
        assert!(
            log.contains(&format!(
                " rc_fallback runlevel=2 action=start reason={reason} "
            )),
            "fault={fault}: {log}"
        );
        assert!(log.contains(" rc_done "), "fault={fault}: {log}");
        assert!(
            out.contains(&format!("bootprint.rc.fault={fault}")),
            "fault={fault}: the console says why: {out}"
        );
    }
}

/// The fallback for a stop (runlevel 0) runs the K links in link order with `stop`; for a
/// switch between runlevels it skips, as startpar does, what the previous runlevel started
/// (start) and stops only what it started (stop in 1-5).
#[test]
fn the_fallback_stops_in_k_link_order_and_skips_what_the_previous_runlevel_started() {
    let scripts = [("a", ""), ("b", ""), ("c", "")];
    let links = [
        ("rc0.d", "K01c"),
        ("rc0.d", "K02a"),
        ("rc0.d", "K03b"),
        ("rc2.d", "S01a"),
        ("rc2.d", "S02b"),
        ("rc3.d", "S01a"),
        ("rc3.d", "S02c"),
        ("rc3.d", "K01b"),
    ];
    let root = fallback_root(&scripts, &links);
    let (code, out, marks, _) = run_with_cmdline(
        &root,
        Runlevel::Num(0),
        Some(Runlevel::Num(2)),
        "bootprint.rc.fault=load",
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(marks, "c stop\na stop\nb stop\n", "{out}");
    // 2 -> 3: start c only (a runs already); with -M stop, stop b (2 started it).
    let root = fallback_root(&scripts, &links);
    let (code, out, marks, _) = run_with_cmdline(
        &root,
        Runlevel::Num(3),
        Some(Runlevel::Num(2)),
        "bootprint.rc.fault=config",
    );
    assert_eq!((code, marks.as_str()), (0, "c start\n"), "{out}");
    let root = fallback_root(&scripts, &links);
    let proc_dir = root.path().join("proc");
    fs::create_dir_all(&proc_dir).unwrap();
    fs::write(proc_dir.join("cmdline"), "bootprint.rc.fault=plan\n").unwrap();
    let mut req = rc::run::Request::new(Runlevel::Num(3));
    req.root = root.path().to_path_buf();
    req.proc_dir = proc_dir;
    req.spans = root.path().join("run/bootprint/rc.log");
    req.previous = Some(Runlevel::Num(2));
    req.action = "stop".into();
    req.detach = false;
    assert_eq!(rc::run::run_runlevel(&req, &mut Vec::new()), 0);
    assert_eq!(
        fs::read_to_string(root.path().join("marks")).unwrap(),
        "b stop\n"
    );
}

/// A dry run that fails runs nothing: it says what the fallback would run.
#[test]
fn a_failed_dry_run_runs_nothing() {
    let root = fallback_root(&FALLBACK_SCRIPTS, &FALLBACK_LINKS);
    let proc_dir = root.path().join("proc");
    fs::create_dir_all(&proc_dir).unwrap();
    fs::write(proc_dir.join("cmdline"), "bootprint.rc.fault=load\n").unwrap();
    let mut req = rc::run::Request::new(Runlevel::Num(2));
    req.root = root.path().to_path_buf();
    req.proc_dir = proc_dir;
    req.dry_run = true;
    let mut out = Vec::new();
    assert_eq!(rc::run::run_runlevel(&req, &mut out), 1);
    let out = String::from_utf8(out).unwrap();
    assert!(!root.path().join("marks").exists(), "{out}");
    assert!(
        out.contains("would run serially in link order: base logger web zlate"),
        "{out}"
    );
}

/// An interactive script needs the console: it is never a late service (those run in the
/// detached child, whose stdin is /dev/null and whose console the gettys have taken), and
/// what it needs joins the path with it. Before, one off the path to the login was late.
#[test]
fn an_interactive_script_is_never_late() {
    let root = Root::new();
    root.script("logger", "", "true");
    root.script("disk", "", "true");
    root.script(
        "ask",
        "# X-Interactive: true\n# Required-Start: disk\n",
        "true",
    );
    root.script("web", "", "true");
    let sys = System::load(root.path()).unwrap();
    let plan = Plan::start(
        &sys,
        Runlevel::Num(2),
        &quick_config(),
        &Durations::default(),
        None,
    );
    let late: Vec<&str> = plan
        .tasks
        .iter()
        .filter(|t| t.late)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(late, ["web"]);
}

/// A dependency cycle in a stop plan (Required-Stop both ways) is broken with a
/// diagnostic naming the file and line, the same way every time, and every script still
/// stops. Before, the cycle was only worked around at run time, silently.
#[test]
fn a_stop_cycle_is_broken_with_a_diagnostic_and_every_script_runs() {
    let root = Root::new();
    for (name, extra) in [
        ("a", "# Required-Stop: b\n"),
        ("b", "# Should-Stop: a\n"),
        ("c", "# Required-Stop: a\n"),
    ] {
        root.stop_script(name, extra);
    }
    let sys = System::load(root.path()).unwrap();
    let plan = Plan::stop(
        &sys,
        Runlevel::Num(0),
        &Config::default(),
        &Durations::default(),
        None,
    );
    let shown: Vec<String> = plan.cycles.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        shown,
        ["etc/init.d/b:4: dependency cycle a -> b -> a in runlevel 0 (stop): broken by dropping b -> a (should-stop, a): expected no cycle"],
        "{:?}",
        plan.diagnostics
    );
    assert!(plan.diagnostics.iter().any(|d| d.to_string() == shown[0]));
    let cfg = quick_config();
    let mut log = SpanLog::none();
    let mut out = Vec::new();
    let mut r = Runner::new(&plan, &cfg, Options::default(), &mut log, &mut out);
    r.run_phase(false);
    drop(r);
    // c stops before a (c: Required-Stop a), a before b (the should-stop edge dropped).
    let marks = fs::read_to_string(root.path().join("marks")).unwrap();
    assert_eq!(marks, "c\na\nb\n");
}

/// A task marked as a built-in runs through `builtin_program`; when that exits 0 the script
/// never runs, and when it exits anything else (254: declined, or a crash) the script runs.
#[test]
fn a_builtin_that_declines_or_fails_hands_its_task_to_the_script() {
    for (program_exit, script_runs) in [
        ("exit 0", false),
        ("exit 254", true),
        ("kill -SEGV $$", true),
    ] {
        let root = Root::new();
        let mark = root.mark();
        root.script(
            "urandom",
            "# Required-Start:\n",
            &format!("echo script >> {mark}"),
        );
        root.script(
            "logger",
            "# Required-Start: urandom\n",
            &format!("echo logger >> {mark}"),
        );
        let program = root.path().join("fake-builtin");
        testkit::write_program(
            &program,
            &format!("#!/bin/sh\necho \"builtin $*\" >> {mark}\n{program_exit}\nexit 254\n"),
            0o755,
        );
        let sys = System::load(root.path()).unwrap();
        let cfg = quick_config();
        let mut plan = Plan::start(&sys, Runlevel::Num(2), &cfg, &Durations::default(), None);
        for t in &mut plan.tasks {
            if t.name == "urandom" {
                t.builtin = Some(rc::builtin::Builtin::Urandom);
            }
        }
        let log_path = root.path().join("run/rc.log");
        let mut log = SpanLog::open(&log_path);
        let mut out: Vec<u8> = Vec::new();
        let opts = Options {
            builtin_program: Some(program.clone()),
            ..Options::default()
        };
        {
            let mut r = Runner::new(&plan, &cfg, opts, &mut log, &mut out);
            r.begin();
            r.run_phase(false);
            r.done();
        }
        let marks = fs::read_to_string(&mark).unwrap();
        let lines: Vec<&str> = marks.lines().collect();
        let want: Vec<&str> = if script_runs {
            vec!["builtin rc-builtin urandom start", "script", "logger"]
        } else {
            vec!["builtin rc-builtin urandom start", "logger"]
        };
        assert_eq!(lines, want, "program: {program_exit}");
        let text = fs::read_to_string(&log_path).unwrap();
        let (events, _) = rclog::parse(&text, "rc.log");
        let failed = events
            .iter()
            .filter(|e| e.kind == "rc_builtin_failed")
            .count();
        assert_eq!(failed, usize::from(script_runs), "{text}");
        let v = Services::from_events(&events);
        let s = span(&v, "urandom");
        assert_eq!(s.outcome, "ok");
        assert_eq!(s.builtin, !script_runs, "{:?}", v.spans);
        assert_eq!(
            v.spans.iter().filter(|s| s.script == "urandom").count(),
            1,
            "one span per script, whoever did the work: {:?}",
            v.spans
        );
    }
}

/// A script the plan lets run beside others although its header asks to run alone (udev
/// beside the path, a built-in's script) must not then run alone; only a script whose
/// built-in failed gets back the console it asks for.
#[test]
fn a_script_planned_not_alone_runs_beside_the_others() {
    let root = Root::new();
    root.script("udev", "# X-Interactive: true\n", "sleep 1.5");
    // Ready only once udev runs: it must not wait for udev to end.
    root.script("first", "", "sleep 0.3");
    root.script("other", "# Required-Start: first\n", "sleep 0.5");
    root.script("logger", "# Required-Start: udev other\n", "true");
    let sys = System::load(root.path()).unwrap();
    let cfg = quick_config();
    let mut plan = Plan::start(&sys, Runlevel::Num(2), &cfg, &Durations::default(), None);
    for t in &mut plan.tasks {
        if t.name == "udev" {
            assert!(t.interactive && t.interactive_script);
            t.interactive = false; // what the planner does for udev beside the path
        }
    }
    let log_path = root.path().join("run/rc.log");
    let mut log = SpanLog::open(&log_path);
    let mut out: Vec<u8> = Vec::new();
    {
        let mut r = Runner::new(&plan, &cfg, Options::default(), &mut log, &mut out);
        r.begin();
        r.run_phase(false);
        r.done();
    }
    let (events, _) = rclog::parse(&fs::read_to_string(&log_path).unwrap(), "rc.log");
    let v = Services::from_events(&events);
    let (a, b) = (span(&v, "udev"), span(&v, "other"));
    assert!(
        a.start_ns < b.end_ns.unwrap() && b.start_ns < a.end_ns.unwrap(),
        "udev and other did not overlap: {a:?} {b:?}"
    );
}
