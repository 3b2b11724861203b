//! The runner: starts (or stops) the scripts of one runlevel in parallel, the path to the
//! login first, late services once the machine is idle. docs/rc.md describes the policy;
//! this module is its implementation.
//!
//! - [`Config`]: `[rc]` of `/etc/bootprint/bootprint.toml`, or the deprecated
//!   `/etc/bootprint/rc.conf` (login target, late services, timeouts, load and idle
//!   thresholds).
//! - [`Plan`]: the tasks of one runlevel with their dependencies, which of them are late,
//!   and their priorities (longest remaining path to the login, weighted by
//!   [`Durations`](crate::durations::Durations)); runlevel S planned with the runlevel
//!   after it ([`Plan::start_boot`]: what is beside the login path may end after rcS).
//! - [`Runner`]: runs a plan: each script on its own pty, output printed whole and prefixed
//!   when it ends, interactive scripts alone on the console, per-script timeouts,
//!   concurrency following `procs_running + procs_blocked`, spans to a [`SpanLog`](crate::spans::SpanLog).
//! - [`run_runlevel`]: the whole of `bootprint-boot rc`, under a guard: any failure, in any
//!   phase, ends in [`crate::fallback`] (every script not yet started, serially in link
//!   order), so the runlevel is always run; for runlevel S with scripts beside the path, a
//!   worker runs it and lets rcS return once the path is done.
//!
//! One file each: `config.rs`, `plan.rs`, `load.rs` ([`ProcStat`], the load and idle
//! rules), `runner.rs`, `request.rs` ([`Request`], [`run_runlevel`]).

mod config;
mod load;
mod plan;
mod request;
mod runner;

pub use config::*;
pub use load::*;
pub use plan::*;
pub use request::*;
pub use runner::*;

/// Where the span log is copied at the end of each runlevel.
pub const KEEP_PATH: &str = "/var/lib/bootprint/rc-last.log";

/// Where the runner's configuration lives: `[rc]` of bootprint.toml (`trace::config`).
pub use trace::config::CONFIG_FILE as DEFAULT_CONFIG;

/// The runner's own file before `[rc]` existed: still read for one release, deprecated.
pub use trace::config::RC_CONF_FILE as DEPRECATED_RC_CONF;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spans::SpanLog;
    use crate::system::Runlevel;
    use std::path::Path;
    use std::time::Duration;

    const STAT: &str = "cpu  100 0 50 800 40 5 5 0 0 0\ncpu0 50 0 25 400 20 2 3 0 0 0\n\
                        intr 1\nprocs_running 3\nprocs_blocked 2\n";

    #[test]
    fn proc_stat_and_the_load_rule() {
        let s = ProcStat::parse(STAT);
        assert_eq!((s.total, s.busy, s.iowait), (1000, 160, 40));
        assert_eq!((s.running, s.blocked), (3, 2));
        let cfg = Config::default(); // 2 per CPU
                                     // load = (3 - 1) + 2 = 4: below 2 * 4 CPUs, not below 2 * 2 CPUs.
        assert!(may_start(1, &s, &cfg, 4));
        assert!(!may_start(1, &s, &cfg, 2));
        assert!(may_start(0, &s, &cfg, 2), "nothing running: always one");
        let cap = Config {
            max_parallel: 1,
            load_per_cpu: 100.0,
            ..Config::default()
        };
        assert!(!may_start(1, &s, &cap, 8));
        // A stop plan looks only at the cap: 7 running under 4 per CPU on 2 CPUs may
        // start one more whatever the load, 8 may not.
        assert!(may_start_stop(7, &cfg, 2));
        assert!(!may_start_stop(8, &cfg, 2));
        assert!(!may_start_stop(1, &cap, 8));
        assert!(may_start_stop(0, &cap, 8), "nothing running: always one");
    }

    #[test]
    fn idle_needs_low_cpu_low_iowait_and_nothing_blocked() {
        let a = ProcStat::parse(STAT);
        let mut b = a;
        let cfg = Config::default();
        b.total += 1000;
        b.busy += 100; // 10 %
        b.iowait += 10; // 1 %
        b.blocked = 0;
        assert!(was_idle(&a, &b, &cfg));
        let mut busy = b;
        busy.busy += 300; // 40 %
        assert!(!was_idle(&a, &busy, &cfg));
        let mut io = b;
        io.iowait += 90; // 10 %
        assert!(!was_idle(&a, &io, &cfg));
        let mut blocked = b;
        blocked.blocked = 1;
        assert!(!was_idle(&a, &blocked, &cfg));
        assert!(!was_idle(&a, &a, &cfg), "no time passed: not idle");
    }

    #[test]
    fn config_keys_and_errors() {
        let (c, d) = Config::parse(
            "# comment\nlogin = $syslog ssh\nlate = exim4 cups\ntimeout = 30\n\
             load-per-cpu = 1.5\nmax-parallel = 3\nlate-max-wait = 2.5\nbogus = 1\ntimeout = x\n",
            Path::new("/etc/bootprint/rc.conf"),
        );
        assert_eq!(c.login, ["$syslog", "ssh"]);
        assert_eq!(c.late, ["exim4", "cups"]);
        assert_eq!(c.timeout, Duration::from_secs(30));
        assert_eq!(c.load_per_cpu, 1.5);
        assert_eq!(c.max_parallel, 3);
        assert_eq!(c.late_max_wait, Duration::from_millis(2500));
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].line, Some(8));
        assert!(d[0].message.contains("in [rc]; found \"bogus\""), "{d:?}");
        assert_eq!(d[1].line, Some(9));
        assert!(
            d[1].message.contains("expected a number of seconds"),
            "{d:?}"
        );
    }

    /// Every `[rc]` key of the schema's table sets its field: the table's default gives the
    /// field's default, another value changes it; rc.conf's spelling of each key works too.
    #[test]
    fn every_rc_key_of_the_schema_sets_its_field() {
        use trace::config::{keys, parse, Section, Type};
        for k in keys(Section::Rc) {
            let mut c = Config::default();
            c.apply(&parse(&format!("[rc]\n{} = {}\n", k.name, k.default), "t").unwrap());
            assert_eq!(c, Config::default(), "{}: the table's default", k.name);
            let (toml, raw) = match k.ty {
                Type::Bool if k.default == "true" => ("false", "no"),
                Type::Bool => ("true", "yes"),
                Type::List => ("[\"x\", \"y\"]", "x y"),
                _ => ("7", "7"),
            };
            let mut c = Config::default();
            c.apply(&parse(&format!("[rc]\n{} = {toml}\n", k.name), "t").unwrap());
            assert_ne!(c, Config::default(), "{} = {toml} set nothing", k.name);
            let (d, diags) = Config::parse(
                &format!("{} = {raw}\n", k.name.replace('_', "-")),
                Path::new("rc.conf"),
            );
            assert!(diags.is_empty(), "{diags:?}");
            assert_eq!(c, d, "{} in rc.conf", k.name);
        }
    }

    fn conf_root(toml: Option<&str>, rc_conf: Option<&str>) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        if let Some(t) = toml {
            std::fs::write(d.join("bootprint.toml"), t).unwrap();
        }
        if let Some(t) = rc_conf {
            std::fs::write(d.join("rc.conf"), t).unwrap();
        }
        tmp
    }

    /// rc.conf without `[rc]` in bootprint.toml: read as before, with a deprecation warning
    /// naming both files; its bad lines are still diagnostics of their own.
    #[test]
    fn rc_conf_is_still_read_with_a_deprecation_warning() {
        let d_tmp = conf_root(
            Some("[record]\nrc = true\n"),
            Some("late = exim4 cups\ntimeout = 30\nbogus = 1\n"),
        );
        let d = d_tmp.path();
        let (c, diags) = Config::load(&d.join("bootprint.toml"), &d.join("rc.conf"));
        assert_eq!(c.late, ["exim4", "cups"]);
        assert_eq!(c.timeout, Duration::from_secs(30));
        let shown: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert!(
            shown[0].contains("rc.conf: deprecated")
                && shown[0].contains("[rc] section of")
                && shown[0].contains("bootprint.toml"),
            "{shown:?}"
        );
        assert!(
            shown[1].contains("rc.conf:3: expected one of login"),
            "{shown:?}"
        );
        // No bootprint.toml at all: the same.
        std::fs::remove_file(d.join("bootprint.toml")).unwrap();
        let (c2, diags) = Config::load(&d.join("bootprint.toml"), &d.join("rc.conf"));
        assert_eq!((c2, diags.len()), (c, 2));
        // Neither file: the defaults, nothing to say.
        std::fs::remove_file(d.join("rc.conf")).unwrap();
        let (c, diags) = Config::load(&d.join("bootprint.toml"), &d.join("rc.conf"));
        assert_eq!((c, diags), (Config::default(), vec![]));
    }

    /// Both files: `[rc]` of bootprint.toml wins whole (rc.conf is not read, not merged key
    /// by key), and a warning says rc.conf is ignored.
    #[test]
    fn rc_section_wins_over_rc_conf() {
        let d_tmp = conf_root(
            Some("# mine\n[rc]\nlate = [\"cups\"]\nlate-max-wait = 2.5\n"),
            Some("late = exim4\ntimeout = 30\n"),
        );
        let d = d_tmp.path();
        let (c, diags) = Config::load(&d.join("bootprint.toml"), &d.join("rc.conf"));
        assert_eq!(c.late, ["cups"]);
        assert_eq!(c.late_max_wait, Duration::from_millis(2500));
        assert_eq!(c.timeout, Config::default().timeout, "nothing of rc.conf");
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert!(
            diags[0].to_string().contains("rc.conf: ignored"),
            "{diags:?}"
        );
        // An empty [rc] still wins.
        std::fs::write(d.join("bootprint.toml"), "[rc]\n").unwrap();
        let (c, _) = Config::load(&d.join("bootprint.toml"), &d.join("rc.conf"));
        assert_eq!(c, Config::default());
        // A bootprint.toml that does not parse: its error, then rc.conf as without [rc].
        std::fs::write(d.join("bootprint.toml"), "[rc]\ntimeout = soon\n").unwrap();
        let (c, diags) = Config::load(&d.join("bootprint.toml"), &d.join("rc.conf"));
        assert_eq!(c.late, ["exim4"]);
        let shown: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
        assert!(shown[0].contains("bootprint.toml:2: expected"), "{shown:?}");
        assert!(shown[1].contains("deprecated"), "{shown:?}");
    }

    #[test]
    fn startpar_arguments() {
        let a: Vec<String> = "-p 4 -t 20 -T 3 -M boot -P N -R S"
            .split(' ')
            .map(String::from)
            .collect();
        let r = Request::from_startpar(&a).unwrap();
        assert_eq!(
            (r.runlevel, r.previous, r.action.as_str()),
            (Runlevel::S, None, "start")
        );
        assert!(r.startpar);
        let a: Vec<String> = "-M stop -P 2 -R 0".split(' ').map(String::from).collect();
        let r = Request::from_startpar(&a).unwrap();
        assert_eq!(
            (r.runlevel, r.previous, r.action.as_str()),
            (Runlevel::Num(0), Some(Runlevel::Num(2)), "stop")
        );
        let a: Vec<String> = "-M start".split(' ').map(String::from).collect();
        let e = Request::from_startpar(&a).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Arguments);
        assert!(e.to_string().contains("-R"), "{e}");
        let a: Vec<String> = "-M go -R 2".split(' ').map(String::from).collect();
        assert!(Request::from_startpar(&a)
            .unwrap_err()
            .to_string()
            .contains("boot, start or stop"));
    }

    #[test]
    fn switches_on_the_command_line() {
        let b = "bootprint.rc.builtins";
        assert_eq!(cmdline_switch("quiet bootprint.rc=1", b), None);
        assert_eq!(cmdline_switch("bootprint.rc.builtins=0", b), Some(false));
        assert_eq!(
            cmdline_switch("bootprint.rc.builtins=0 bootprint.rc.builtins=yes", b),
            Some(true)
        );
        assert_eq!(cmdline_switch("bootprint.rc.builtins=maybe", b), None);
        assert_eq!(
            cmdline_switch("bootprint.rc.builtins=0", "bootprint.rc.udev-off-path"),
            None
        );
    }

    #[test]
    fn lsb_exit_codes() {
        assert_eq!(Outcome::from_exit(0), Outcome::Ok);
        assert_eq!(Outcome::from_exit(5), Outcome::NotInstalled);
        assert_eq!(Outcome::from_exit(6), Outcome::NotConfigured);
        assert_eq!(Outcome::from_exit(1), Outcome::Failed);
        assert_eq!(Outcome::from_exit(7), Outcome::Failed);
    }

    /// A number too big for a Duration (`timeout = 1e300`) panicked while reading the
    /// configuration, before any script ran: now a diagnostic, and the default.
    #[test]
    fn config_seconds_too_big_are_a_diagnostic_not_a_panic() {
        let (c, d) = Config::parse(
            "timeout = 1e300\nidle-window = 1e30\n",
            Path::new("/etc/bootprint/rc.conf"),
        );
        assert_eq!(c.timeout, Config::default().timeout);
        assert_eq!(c.idle_window, Config::default().idle_window);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[0].line, Some(1));
        assert!(
            d[0].message
                .contains("expected a number of seconds from 0 to 1000000000 for timeout"),
            "{d:?}"
        );
    }

    /// The idle wait is bounded by `late-max-wait` even when one idle measurement
    /// (`idle-window`) is longer: before, it slept the whole window first.
    #[test]
    fn the_idle_wait_never_outlasts_late_max_wait() {
        // A /proc/stat that never changes is never idle (no ticks passed), so the wait can
        // only end at its maximum: the host's own /proc/stat made this pass or fail with
        // the host's load (an idle host ended the 200 ms measurement as "idle").
        let tmp = tempfile::tempdir().unwrap();
        let proc_dir = tmp.path();
        std::fs::write(
            proc_dir.join("stat"),
            "cpu  100 0 100 1000 0 0 0 0 0 0\nprocs_running 1\nprocs_blocked 0\n",
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let opts = Options {
            proc_dir: proc_dir.to_path_buf(),
            ..Options::default()
        };
        std::thread::spawn(move || {
            let plan = Plan {
                runlevel: "2".into(),
                action: "start".into(),
                tasks: Vec::new(),
                diagnostics: Vec::new(),
                cycles: Vec::new(),
            };
            let cfg = Config {
                idle_window: Duration::from_secs(3600),
                late_max_wait: Duration::from_millis(200),
                ..Config::default()
            };
            let mut log = SpanLog::none();
            let mut out = Vec::new();
            let mut r = Runner::new(&plan, &cfg, opts, &mut log, &mut out);
            let _ = tx.send(r.wait_idle());
        });
        let reason = rx.recv_timeout(Duration::from_secs(10));
        assert_eq!(reason, Ok("max_wait"));
    }
}
