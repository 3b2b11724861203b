//! The runner's settings ([`Config`]): `[rc]` of `/etc/bootprint/bootprint.toml`, or, for
//! one more release, the deprecated `/etc/bootprint/rc.conf`; and the kernel command line's
//! switches. Both files are read through the schema in `trace::config`, whose table lists
//! the keys (docs/configuration.md).

use std::path::Path;
use std::time::Duration;

use trace::config::{Section, Setting};

use crate::Diagnostic;

/// What the runner does, from `[rc]` of `bootprint.toml` (or the deprecated `rc.conf`).
/// Every key is optional; docs/configuration.md lists them with their defaults. Each field
/// names its key as rc.conf wrote it (`-` and `_` are the same in a key).
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
    /// `builtins`: run Debian's early-boot and shutdown scripts that [`crate::builtin`]
    /// recognises as built-ins (`yes`, the default) or always as scripts (`no`).
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

fn diagnostic(e: trace::conf::ConfError, file: &Path) -> Diagnostic {
    Diagnostic::new(file, Some(e.line), format!("expected {}", e.expected))
}

impl Config {
    /// Sets the fields of the `[rc]` settings among `settings` (values the schema checked).
    pub fn apply(&mut self, settings: &[Setting]) {
        let secs = |s: &Setting| Duration::from_secs_f64(s.value.num());
        for s in settings.iter().filter(|s| s.key.section == Section::Rc) {
            match s.key.name {
                "login" => self.login = s.value.list(),
                "late" => self.late = s.value.list(),
                "display_managers" => self.display_managers = s.value.list(),
                "display_manager_needs" => self.display_manager_needs = s.value.list(),
                "timeout" => self.timeout = secs(s),
                "flush" => self.flush_after = secs(s),
                "load_per_cpu" => self.load_per_cpu = s.value.num(),
                "max_parallel" => self.max_parallel = s.value.int() as usize,
                "idle_busy" => self.idle_busy_pct = s.value.num(),
                "idle_iowait" => self.idle_iowait_pct = s.value.num(),
                "idle_window" => self.idle_window = secs(s),
                "late_max_wait" => self.late_max_wait = secs(s),
                "builtins" => self.builtins = s.value.bool(),
                "udev_off_path" => self.udev_off_path = s.value.bool(),
                "one_graph" => self.one_graph = s.value.bool(),
                "finish_in_s" => self.finish_in_s = s.value.list(),
                // An [rc] key of the table with no field here: the schema test catches it.
                _ => {}
            }
        }
    }

    /// Parses a deprecated `rc.conf` text (`key = value` lines, `#` comments, lists
    /// blank-separated, `yes`/`no`): unknown keys and bad values are diagnostics naming
    /// `file` and the line, and leave the default.
    pub fn parse(text: &str, file: &Path) -> (Config, Vec<Diagnostic>) {
        let (settings, errors) = trace::config::parse_rc_conf(text, &file.display().to_string());
        let mut c = Config::default();
        c.apply(&settings);
        (c, errors.into_iter().map(|e| diagnostic(e, file)).collect())
    }

    /// The runner's settings on a system: the defaults, then `[rc]` of `config_file`
    /// (`bootprint.toml`). When that file has no `[rc]` section, the deprecated `rc_conf`
    /// is read instead, if it exists, with a warning to move it; when it has one, `rc_conf`
    /// is ignored (with a warning too). A `bootprint.toml` that does not parse is a
    /// diagnostic naming its line and counts as one without `[rc]`. Missing files are fine.
    pub fn load(config_file: &Path, rc_conf: &Path) -> (Config, Vec<Diagnostic>) {
        let mut c = Config::default();
        let mut diags = Vec::new();
        let mut has_rc = false;
        match std::fs::read_to_string(config_file) {
            Ok(text) => {
                match trace::config::parse_section(
                    &text,
                    &config_file.display().to_string(),
                    Section::Rc,
                ) {
                    Ok(settings) => {
                        has_rc = trace::config::has_section(&text, Section::Rc);
                        c.apply(&settings);
                    }
                    Err(e) => diags.push(diagnostic(e, config_file)),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => diags.push(Diagnostic::new(
                config_file,
                None,
                format!("cannot read: {e}"),
            )),
        }
        let (toml_name, rc_name) = (
            config_file.display().to_string(),
            rc_conf.display().to_string(),
        );
        match std::fs::read_to_string(rc_conf) {
            Ok(_) if has_rc => diags.push(Diagnostic::new(
                rc_conf,
                None,
                trace::config::rc_conf_deprecation(&rc_name, &toml_name, false),
            )),
            Ok(text) => {
                let (settings, errors) = trace::config::parse_rc_conf(&text, &rc_name);
                diags.push(Diagnostic::new(
                    rc_conf,
                    None,
                    trace::config::rc_conf_deprecation(&rc_name, &toml_name, true),
                ));
                diags.extend(errors.into_iter().map(|e| diagnostic(e, rc_conf)));
                c.apply(&settings);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => diags.push(Diagnostic::new(rc_conf, None, format!("cannot read: {e}"))),
        }
        (c, diags)
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
