//! `/etc/bootprint/rc.conf` ([`Config`]) and the kernel command line's switches.

use std::path::Path;
use std::time::Duration;

use crate::Diagnostic;

/// What the runner does, from `/etc/bootprint/rc.conf` (`key = value` lines, `#` comments;
/// lists are blank-separated). Every key is optional; docs/rc.md lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `login`: scripts or `$facilities` the login prompt needs (the login target); `auto`
    /// stands for what this system's logins need ([`crate::login`]).
    pub login: Vec<String>,
    /// `late`: scripts started only after the login target, once idle.
    pub late: Vec<String>,
    /// `timeout`: seconds one script may run before the boot goes on without it.
    pub timeout: Duration,
    /// `flush`: seconds after which a running script's complete output lines are printed.
    pub flush_after: Duration,
    /// `load-per-cpu`: start another script only while procs_running + procs_blocked
    /// (the runner itself not counted) is below this times the CPU count.
    pub load_per_cpu: f64,
    /// `max-parallel`: never more scripts at once (0: 4 per CPU).
    pub max_parallel: usize,
    /// `idle-busy`: CPU busy percent (all CPUs) below which the machine counts as idle.
    pub idle_busy_pct: f64,
    /// `idle-iowait`: iowait percent below which the disk counts as idle.
    pub idle_iowait_pct: f64,
    /// `idle-window`: seconds each idle measurement spans.
    pub idle_window: Duration,
    /// `late-max-wait`: seconds after the login target when late services start anyway.
    pub late_max_wait: Duration,
    /// `display-managers`: scripts (or `$facilities`) that are graphical login managers.
    pub display_managers: Vec<String>,
    /// `display-manager-needs`: scripts a display manager needs at run time although its
    /// LSB header does not say so; they join the login target when a display manager is
    /// started in the runlevel. LightDM and GDM block until a logind answers (seen on the
    /// test bed: Xorg started only once elogind was up), and Debian's lightdm header still
    /// names consolekit, logind's predecessor, as Should-Start.
    pub display_manager_needs: Vec<String>,
    /// `builtins`: run Debian's early-boot scripts that [`crate::builtin`] recognises as
    /// built-ins (`yes`, the default) or always as scripts (`no`).
    pub builtins: bool,
    /// `udev-off-path`: let udev run beside the path to the login where [`crate::udev`]
    /// finds it safe (`yes`, the default), or alone before it as Debian does (`no`).
    pub udev_off_path: bool,
    /// `one-graph`: plan runlevel S with the runlevel after it and let rcS return once the
    /// S part of the path to the login (and `finish-in-s`) is done; the rest of S goes on
    /// beside runlevel 2 (`yes`, the default), or run S whole first (`no`).
    pub one_graph: bool,
    /// `finish-in-s`: scripts (or `$facilities`) of runlevel S that must end before rcS
    /// returns although the login path does not name them (docs/rc.md says why each).
    pub finish_in_s: Vec<String>,
}

/// The display managers Debian packages with an init script (`display-managers`).
const DISPLAY_MANAGERS: [&str; 9] = [
    "$x-display-manager",
    "gdm3",
    "lightdm",
    "sddm",
    "xdm",
    "lxdm",
    "slim",
    "nodm",
    "wdm",
];

impl Default for Config {
    fn default() -> Self {
        Config {
            // The text login's needs, and any display manager the runlevel starts.
            login: [
                "$local_fs",
                "$remote_fs",
                "$syslog",
                "$network",
                "$time",
                "rmnologin",
            ]
            .into_iter()
            .chain(DISPLAY_MANAGERS)
            .map(String::from)
            .collect(),
            late: Vec::new(),
            timeout: Duration::from_secs(120),
            flush_after: Duration::from_secs(10),
            load_per_cpu: 2.0,
            max_parallel: 0,
            idle_busy_pct: 30.0,
            idle_iowait_pct: 5.0,
            idle_window: Duration::from_millis(500),
            late_max_wait: Duration::from_secs(10),
            display_managers: DISPLAY_MANAGERS.map(String::from).to_vec(),
            display_manager_needs: ["elogind", "consolekit"].map(String::from).to_vec(),
            builtins: true,
            udev_off_path: true,
            one_graph: true,
            // bootmisc.sh: /run/nologin before rmnologin removes it, utmp truncated before
            // init writes the runlevel record; urandom: the seed before daemons and logins
            // read random numbers; procps: sysctl settings, kmod: /etc/modules, apparmor:
            // profiles, all before a daemon or a login that relies on them (systemd
            // orders their units before sysinit.target, so before any getty).
            finish_in_s: ["bootmisc", "urandom", "procps", "kmod", "apparmor"]
                .map(String::from)
                .to_vec(),
        }
    }
}

impl Config {
    /// Parses the configuration text; unknown keys and bad values are diagnostics naming
    /// `file` and the line, and leave the default.
    pub fn parse(text: &str, file: &Path) -> (Config, Vec<Diagnostic>) {
        let mut c = Config::default();
        let mut diags = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                diags.push(Diagnostic::new(
                    file,
                    Some(i + 1),
                    format!("expected `key = value`, found {line:?}"),
                ));
                continue;
            };
            let (k, v) = (k.trim(), v.trim());
            let secs = |v: &str| v.parse::<f64>().ok().filter(|s| *s >= 0.0 && s.is_finite());
            // Too big for a Duration (1e300) is a bad value, not a panic at boot.
            let dur = |v: &str| secs(v).and_then(|s| Duration::try_from_secs_f64(s).ok());
            let mut bad = |what: &str| {
                diags.push(Diagnostic::new(
                    file,
                    Some(i + 1),
                    format!("{k}: expected {what}, found {v:?}"),
                ))
            };
            match k {
                "login" => c.login = v.split_whitespace().map(String::from).collect(),
                "late" => c.late = v.split_whitespace().map(String::from).collect(),
                "finish-in-s" => {
                    c.finish_in_s = v.split_whitespace().map(String::from).collect()
                }
                "display-managers" => {
                    c.display_managers = v.split_whitespace().map(String::from).collect()
                }
                "display-manager-needs" => {
                    c.display_manager_needs = v.split_whitespace().map(String::from).collect()
                }
                "timeout" | "flush" | "idle-window" | "late-max-wait" => match dur(v) {
                    Some(d) => {
                        match k {
                            "timeout" => c.timeout = d,
                            "flush" => c.flush_after = d,
                            "idle-window" => c.idle_window = d,
                            _ => c.late_max_wait = d,
                        }
                    }
                    None => bad("seconds (a number >= 0)"),
                },
                "load-per-cpu" | "idle-busy" | "idle-iowait" => match secs(v) {
                    Some(x) => match k {
                        "load-per-cpu" => c.load_per_cpu = x,
                        "idle-busy" => c.idle_busy_pct = x,
                        _ => c.idle_iowait_pct = x,
                    },
                    None => bad("a number >= 0"),
                },
                "builtins" | "udev-off-path" | "one-graph" => match v {
                    "yes" | "1" | "true" | "no" | "0" | "false" => {
                        let on = matches!(v, "yes" | "1" | "true");
                        match k {
                            "builtins" => c.builtins = on,
                            "udev-off-path" => c.udev_off_path = on,
                            _ => c.one_graph = on,
                        }
                    }
                    _ => bad("yes or no"),
                },
                "max-parallel" => match v.parse() {
                    Ok(n) => c.max_parallel = n,
                    Err(_) => bad("a whole number"),
                },
                _ => diags.push(Diagnostic::new(
                    file,
                    Some(i + 1),
                    format!("unknown key {k:?}: expected login, late, display-managers, display-manager-needs, timeout, flush, load-per-cpu, max-parallel, idle-busy, idle-iowait, idle-window, late-max-wait, builtins, udev-off-path, one-graph or finish-in-s"),
                )),
            }
        }
        (c, diags)
    }

    /// Reads the file; a missing file gives the defaults.
    pub fn load(path: &Path) -> (Config, Vec<Diagnostic>) {
        match std::fs::read_to_string(path) {
            Ok(t) => Config::parse(&t, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Config::default(), vec![]),
            Err(e) => (
                Config::default(),
                vec![Diagnostic::new(path, None, format!("cannot read: {e}"))],
            ),
        }
    }
}

/// `KEY=0|1` (or `no|yes`) on a kernel command line, the last one winning:
/// `bootprint.rc.builtins`, `bootprint.rc.udev-off-path` and `bootprint.rc.one-graph`
/// override rc.conf for one boot
/// (the A/B benchmarks switch them this way).
pub fn cmdline_switch(cmdline: &str, key: &str) -> Option<bool> {
    let prefix = format!("{key}=");
    cmdline
        .split_whitespace()
        .filter_map(|w| w.strip_prefix(&prefix))
        .next_back()
        .and_then(|v| match v {
            "0" | "no" => Some(false),
            "1" | "yes" => Some(true),
            _ => None,
        })
}
