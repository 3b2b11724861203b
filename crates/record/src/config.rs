//! The boot path's settings: defaults, then `/etc/bootprint/bootprint.toml`, then the kernel
//! command line (`bootprint.*=`), the last one winning.
//!
//! The file is read through its schema, `trace::config` (one table of every section and key,
//! on the small TOML subset parser in `trace::conf`, so the boot path needs no TOML crate);
//! this module only sets its fields from the checked values of the boot path's keys
//! (`[record]`, `[readahead]`, `[systemd]`). Errors name the file, the line and what was
//! expected; at boot a bad file is reported in the trace and the defaults are used.

use std::fmt;
use std::path::{Path, PathBuf};

/// Everything the boot path can be told.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The real init to exec (`bootprint.init=`).
    pub init: PathBuf,
    /// Whether to record this boot (`bootprint.record=`).
    pub record: bool,
    /// Sampling rate in Hz (`bootprint.hz=`).
    pub hz: u32,
    /// CPU busy share of all CPUs below which the system counts as idle.
    pub idle_cpu: f64,
    /// Disk utilisation (share of time busy) below which the disk counts as idle.
    pub idle_disk: f64,
    /// How long CPU and disk must stay idle after the login milestone for boot to be done, s.
    pub settle_s: f64,
    /// Hard limit: recording stops at this uptime whatever happens, s.
    pub timeout_s: f64,
    /// Where traces go (`<dir>/<boot id>/`).
    pub log_dir: PathBuf,
    /// At boot done, the oldest traces beyond this many are removed (0: no limit).
    pub keep_traces: u32,
    /// Then the oldest while the traces take more MiB than this (0: no limit).
    pub keep_mb: f64,
    /// Process names whose start marks the text login.
    pub login_names: Vec<String>,
    /// Process names whose start marks the graphical login (a display manager's greeter).
    pub greeter_names: Vec<String>,
    /// Process names whose start marks a user's desktop session (its session manager).
    pub session_names: Vec<String>,
    /// After boot done, with a greeter seen: how long to go on recording for a session to
    /// start (0: stop at boot done), s.
    pub session_wait_s: f64,
    /// Once a session started: recording stops at desktop ready or this long after, s.
    pub desktop_timeout_s: f64,
    /// Readahead (`bootprint.readahead=`): replay the pack at boot, or learn one when there is
    /// no valid pack. Off by default until the test-bed benchmark shows where it helps.
    pub readahead: bool,
    /// Where the readahead pack lives.
    pub readahead_pack: PathBuf,
    /// Where readahead keeps its history and its own on/off verdict.
    pub readahead_state: PathBuf,
    /// A pack older than this many days is learned again.
    pub readahead_max_age_days: f64,
    /// Learn again when more than this share of the pack's entries were stale in a replay.
    pub readahead_stale_share: f64,
    /// Learn again when a replay boot read from disk more than this share of the pack's
    /// bytes beyond what the replay itself asked for (the boot needs files the pack lacks).
    pub readahead_missed_share: f64,
    /// Every this many boots with a pack, one boots without replay to compare (0: never).
    pub readahead_compare_every: u32,
    /// The pack's byte budget in MiB (0: from the device's bandwidth).
    pub readahead_budget_mb: f64,
    /// I/O class of the replay: `idle` (nothing else waits for it) or `best-effort`.
    pub readahead_io_class: String,
    /// Pack order: `auto` (physical on a rotating device, first access otherwise), `disk`
    /// or `access`.
    pub readahead_order: String,
    /// Replay reads a file's ranges closer than this many KiB as one (0: no merging).
    pub readahead_merge_gap_kb: u32,
    /// Replay first reads the filesystem metadata opening the pack's files needs (`None`:
    /// `auto`, when the pack was learned on a rotating device its boot waited on).
    pub readahead_metadata: Option<bool>,
    /// What the root device is, where its driver says otherwise: `auto` (its driver says),
    /// `rotating`, `card` or `solid-state`.
    pub readahead_media: String,
    /// How learning finds the pages used: `auto` (the filemap tracepoints where the kernel
    /// has them, else mincore) or `mincore`.
    pub readahead_pages: String,
    /// Parallel module loading before init (`bootprint.modules=`). Off by default until the
    /// test bed shows where it helps.
    pub modules: bool,
    /// Where the module loader keeps its history and its own on/off verdict.
    pub modules_state: PathBuf,
    /// Every this many boots with the loader, one boots without it (udev's coldplug alone)
    /// to compare (0: never, and no verdict).
    pub modules_compare_every: u32,
    /// `bootprint.rc=`: the init scripts are started by `bootprint-boot rc` instead of
    /// startpar. Read by the startpar wrapper (docs/rc.md); recorded here so the parameter is
    /// known and lands in the trace's configuration, not reported as a typo.
    pub rc: bool,
    /// Where the runner keeps its history and its own on/off verdict ([`crate::judged`]).
    pub rc_state: PathBuf,
    /// Every this many boots with the runner, one boots with Debian's startpar to compare
    /// (0: never, and no verdict).
    pub rc_compare_every: u32,
    /// `bootprint.kexec=`: an ordinary reboot goes by kexec into the boot loader's next
    /// entry where `fastpath` finds it safe: loaded by bootprint's runner at runlevel 6 on
    /// sysvinit, by `bootprint-kexec.service` on systemd (docs/reboot.md). Not part of `all`:
    /// skipping the firmware is asked for by name.
    pub kexec: bool,
    /// `bootprint.timeouts=` (`[systemd] timeouts`): on systemd, a service that ran out its
    /// stop timeout in a recorded shutdown gets one learned from its stops that ended
    /// (`systemd::timeouts`; learned at boot done, applied by the generator). Not part of
    /// `all`: a shorter timeout is asked for by name.
    pub timeouts: bool,
    /// `bootprint.late=`: on systemd, the units no login needs start after the login, once
    /// idle (the `systemd` crate; `[systemd] late` in the file). Learned at boot done.
    pub late: bool,
    /// `[systemd] late_units`: units pinned late.
    pub late_units: Vec<String>,
    /// `[systemd] never_late`: units never started late (nor what they need).
    pub never_late: Vec<String>,
    /// `[systemd] late_history`: where late units keep their history of boots with and
    /// without them and their own verdict (what they learned is `systemd::generator`'s).
    pub late_history: PathBuf,
    /// `[systemd] late_compare_every`: every this many boots with late units, one boots
    /// without them to compare (0: never, and no verdict).
    pub late_compare_every: u32,
    /// node_exporter's textfile-collector directory: when it exists, the boot's figures are
    /// exported there at boot done (`bootprint export --prometheus`); `""` never exports.
    pub prometheus_dir: PathBuf,
    /// An OTLP/HTTP endpoint: the boot's trace is sent there at boot done (`bootprint export
    /// --otlp`); `""` never sends.
    pub otlp_endpoint: String,
    /// Its request headers (a collector's credentials), used when the file exists.
    pub otlp_headers_file: PathBuf,
    /// Where exec events come from (`bootprint.exec_events=`): `connector` (the kernel's
    /// process events; falls back to fanotify), `fanotify` or `off` ([`crate::execs`]).
    pub exec_events: String,
    /// `bootprint.delayacct=`: switch the kernel's delay accounting on while recording
    /// (`kernel.task_delayacct`, for each process's time blocked on I/O). Off by default:
    /// the switch is a static key, and flipping it patches the running kernel's code while
    /// init forks, which wedges QEMU's TCG (`bootprint-testbed stall-repro`; docs/recorder.md,
    /// "What it samples"). The kernel parameter `delayacct` turns it on at boot instead.
    pub delayacct: bool,
    /// `bootprint.cost_detail=`: the recorder times each part of its loop (`parts_ms` in
    /// `recorder_stats`); off by default, the clock reads cost system calls of their own.
    pub cost_detail: bool,
    /// `bootprint.fault=`: a fault to inject, for the test bed's fault matrix only
    /// ([`crate::fault`]); empty: none.
    pub fault: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            init: PathBuf::from("/sbin/init"),
            record: true,
            hz: 5,
            idle_cpu: 0.25,
            idle_disk: 0.10,
            settle_s: 3.0,
            timeout_s: 240.0,
            log_dir: PathBuf::from("/var/log/bootprint"),
            keep_traces: 10,
            keep_mb: 200.0,
            login_names: ["getty", "agetty", "mingetty", "mgetty", "fbgetty", "login"]
                .map(String::from)
                .to_vec(),
            greeter_names: [
                "lightdm-gtk-gre",
                "lightdm-greeter",
                "gdm-greeter",
                "sddm-greeter",
                "slick-greeter",
                "xdm",
            ]
            .map(String::from)
            .to_vec(),
            // Comm names, cut at 15 characters as the kernel keeps them.
            session_names: trace::config::SESSION_NAMES.map(String::from).to_vec(),
            session_wait_s: 120.0,
            desktop_timeout_s: 300.0,
            readahead: false,
            readahead_pack: PathBuf::from("/var/lib/bootprint/readahead.pack"),
            readahead_state: PathBuf::from("/var/lib/bootprint/readahead.state"),
            readahead_max_age_days: 30.0,
            readahead_stale_share: 0.10,
            readahead_missed_share: 0.50,
            readahead_compare_every: 5,
            readahead_budget_mb: 0.0,
            readahead_io_class: "idle".into(),
            readahead_order: "auto".into(),
            readahead_merge_gap_kb: 32,
            readahead_metadata: None,
            readahead_media: "auto".into(),
            readahead_pages: "auto".into(),
            modules: false,
            modules_state: PathBuf::from("/var/lib/bootprint/modules.state"),
            modules_compare_every: 5,
            rc: false,
            rc_state: PathBuf::from("/var/lib/bootprint/rc.state"),
            rc_compare_every: 5,
            kexec: false,
            timeouts: false,
            late: false,
            late_units: Vec::new(),
            never_late: Vec::new(),
            late_history: PathBuf::from("/var/lib/bootprint/late.state"),
            late_compare_every: 5,
            prometheus_dir: PathBuf::from("/var/lib/prometheus/node-exporter"),
            otlp_endpoint: String::new(),
            otlp_headers_file: PathBuf::from("/etc/bootprint/otlp-headers"),
            exec_events: "connector".into(),
            delayacct: false,
            cost_detail: false,
            fault: String::new(),
        }
    }
}

/// Where the configuration file is (defined once, in `trace::config`).
pub use trace::config::{CONFIG_FILE, MAX_CONFIG_BYTES};

/// A configuration error: where, and what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    /// The file (or `kernel command line`).
    pub source: String,
    /// 1-based line (0 for the command line).
    pub line: usize,
    /// What was expected.
    pub expected: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: expected {}", self.source, self.expected)
        } else {
            write!(
                f,
                "{}:{}: expected {}",
                self.source, self.line, self.expected
            )
        }
    }
}

impl std::error::Error for ConfigError {}

use trace::config::{Key, Typed};

impl From<trace::conf::ConfError> for ConfigError {
    fn from(e: trace::conf::ConfError) -> ConfigError {
        ConfigError {
            source: e.source,
            line: e.line,
            expected: e.expected,
        }
    }
}

impl Config {
    /// Applies a `bootprint.toml` text. `source` names the file in errors. The text is
    /// checked whole against the schema (`trace::config`): an unknown section or key, or a
    /// value of the wrong type anywhere in the file, is an error and nothing is applied.
    /// The keys of `[budget]` and `[rc]` belong to the report and the runner.
    pub fn apply_toml(&mut self, text: &str, source: &str) -> Result<(), ConfigError> {
        let settings = trace::config::parse(text, source)?;
        let mut next = self.clone();
        for s in &settings {
            if s.key.flat.is_some() {
                next.set(s.key, &s.value);
            }
        }
        *self = next;
        Ok(())
    }

    /// Applies the `bootprint.*` parameters of a kernel command line.
    /// Each bad parameter is left out alone (and returned); the good ones apply.
    pub fn apply_cmdline(&mut self, cmdline: &str) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        for word in cmdline.split_whitespace() {
            let Some(param) = word.strip_prefix("bootprint.") else {
                continue;
            };
            let (key, raw) = param.split_once('=').unwrap_or((param, "1"));
            let checked = match trace::config::lookup_flat(key) {
                Some(k) => trace::config::from_raw(k, raw).map(|v| (k, v)),
                None => Err(format!(
                    "one of {}; found {key:?}",
                    trace::config::flat_names().join(", ")
                )),
            };
            match checked {
                Ok((k, v)) => self.set(k, &v),
                Err(expected) => errors.push(ConfigError {
                    source: "kernel command line".into(),
                    line: 0,
                    expected: format!("{expected} (in {word:?})"),
                }),
            }
        }
        errors
    }

    /// Defaults, then the file at `file` (if it exists), then `cmdline`. Errors are returned
    /// beside the configuration built from everything that did parse.
    pub fn load(file: &Path, cmdline: &str) -> (Config, Vec<ConfigError>) {
        let mut config = Config::default();
        let mut errors = Vec::new();
        // Not a plain read: a FIFO or a device put there must not block or feed PID 1.
        let text = match sys::read_regular_text(file, MAX_CONFIG_BYTES) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                errors.push(ConfigError {
                    source: file.display().to_string(),
                    line: 0,
                    expected: format!(
                        "a regular file of at most {MAX_CONFIG_BYTES} bytes of UTF-8 text \
                         ({e}); using the defaults and the kernel command line"
                    ),
                });
                None
            }
        };
        if let Some(text) = text {
            let mut trial = config.clone();
            match trial.apply_toml(&text, &file.display().to_string()) {
                Ok(()) => config = trial,
                Err(e) => errors.push(e),
            }
        }
        errors.extend(config.apply_cmdline(cmdline));
        (config, errors)
    }

    /// Sets the field of a boot-path key (one with a flat name) to a value the schema
    /// checked; other keys are not the boot path's and change nothing.
    fn set(&mut self, key: &Key, v: &Typed) {
        let path = || PathBuf::from(v.text());
        match key.flat.unwrap_or("") {
            "init" => self.init = path(),
            "record" => self.record = v.bool(),
            "hz" => self.hz = v.int(),
            "idle_cpu" => self.idle_cpu = v.num(),
            "idle_disk" => self.idle_disk = v.num(),
            "settle_s" => self.settle_s = v.num(),
            "timeout_s" => self.timeout_s = v.num(),
            "log_dir" => self.log_dir = path(),
            "keep_traces" => self.keep_traces = v.int(),
            "keep_mb" => self.keep_mb = v.num(),
            "login_names" => self.login_names = v.list(),
            "greeter_names" => self.greeter_names = v.list(),
            "session_names" => self.session_names = v.list(),
            "session_wait_s" => self.session_wait_s = v.num(),
            "desktop_timeout_s" => self.desktop_timeout_s = v.num(),
            "readahead" => self.readahead = v.bool(),
            "modules" => self.modules = v.bool(),
            "rc" => self.rc = v.bool(),
            "kexec" => self.kexec = v.bool(),
            // One switch for every lever the boot path has (bootprint's initramfs is a boot
            // entry, not a switch); a later key turns one back off.
            "all" => {
                let on = v.bool();
                self.readahead = on;
                self.modules = on;
                self.rc = on;
                self.late = on;
            }
            "late" => self.late = v.bool(),
            "timeouts" => self.timeouts = v.bool(),
            "exec_events" => self.exec_events = v.text().to_string(),
            "cost_detail" => self.cost_detail = v.bool(),
            "delayacct" => self.delayacct = v.bool(),
            "late_units" => self.late_units = v.list(),
            "never_late" => self.never_late = v.list(),
            "prometheus_dir" => self.prometheus_dir = path(),
            "otlp_endpoint" => self.otlp_endpoint = v.text().to_string(),
            "otlp_headers_file" => self.otlp_headers_file = path(),
            "fault" => self.fault = v.text().to_string(),
            "modules_state" => self.modules_state = path(),
            "rc_state" => self.rc_state = path(),
            "rc_compare_every" => self.rc_compare_every = v.int(),
            "late_history" => self.late_history = path(),
            "late_compare_every" => self.late_compare_every = v.int(),
            "modules_compare_every" => self.modules_compare_every = v.int(),
            "readahead_pack" => self.readahead_pack = path(),
            "readahead_state" => self.readahead_state = path(),
            "readahead_max_age_days" => self.readahead_max_age_days = v.num(),
            "readahead_stale_share" => self.readahead_stale_share = v.num(),
            "readahead_missed_share" => self.readahead_missed_share = v.num(),
            "readahead_compare_every" => self.readahead_compare_every = v.int(),
            "readahead_budget_mb" => self.readahead_budget_mb = v.num(),
            "readahead_io_class" => self.readahead_io_class = v.text().to_string(),
            "readahead_order" => self.readahead_order = v.text().to_string(),
            "readahead_merge_gap_kb" => self.readahead_merge_gap_kb = v.int(),
            "readahead_metadata" => self.readahead_metadata = v.switch(),
            "readahead_media" => self.readahead_media = v.text().to_string(),
            "readahead_pages" => self.readahead_pages = v.text().to_string(),
            // A key of the table with no field here: the schema test below catches it.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_then_cmdline_last_wins() {
        let mut c = Config::default();
        c.apply_toml(
            "# comment\n[record]\nhz = 25\nsettle_s = 5.5 # trailing\nlogin_names = [\"getty\", \"my-login\"]\n[readahead]\nenabled = true\n[rc]\ntimeout = 1\n[budget]\nkernel_s = 3\n",
            "test.toml",
        )
        .unwrap();
        assert_eq!(c.hz, 25);
        assert_eq!(c.settle_s, 5.5);
        assert_eq!(c.login_names, vec!["getty", "my-login"]);
        assert!(c.readahead);
        let errors = c.apply_cmdline(
            "console=ttyS0 bootprint.hz=100 bootprint.init=/lib/systemd/systemd bootprint.record=off quiet",
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(c.hz, 100);
        assert_eq!(c.init, PathBuf::from("/lib/systemd/systemd"));
        assert!(!c.record);
    }

    #[test]
    fn errors_name_file_line_and_expectation() {
        let mut c = Config::default();
        let e = c
            .apply_toml("[record]\n\nhz = fast\n", "/etc/bootprint/bootprint.toml")
            .unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string()
                .starts_with("/etc/bootprint/bootprint.toml:3: expected a number"),
            "{e}"
        );
        let e = c.apply_toml("[record]\nhz = 5000\n", "f").unwrap_err();
        assert!(e.expected.contains("from 1 to 1000"), "{e}");
        let e = c.apply_toml("[record]\nhx = 5\n", "f").unwrap_err();
        assert!(e.expected.contains("\"hx\""), "{e}");
        let errors = c.apply_cmdline("bootprint.hz=0 bootprint.settle=7");
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].to_string().contains("kernel command line"),
            "{}",
            errors[0]
        );
        assert!(
            errors[0].to_string().contains("bootprint.hz=0"),
            "{}",
            errors[0]
        );
        assert_eq!(c.settle_s, 7.0, "the good parameter applies");
    }

    /// Retention's limits: a bad value names the file and the line, and the boot keeps the
    /// defaults (10 traces, 200 MiB); a good one applies, from the file or the command line.
    #[test]
    fn retention_limits_bad_values_fall_back_to_the_defaults() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("bootprint.toml");
        for (bad, expected) in [
            ("keep_traces = -1", "a whole number from 0 to 100000"),
            ("keep_traces = \"ten\"", "a whole number from 0 to 100000"),
            ("keep_mb = 1e9", "a number from 0 to 10000000"),
        ] {
            std::fs::write(&file, format!("[record]\nhz = 7\n{bad}\n")).unwrap();
            let (c, errors) = Config::load(&file, "");
            let e = errors[0].to_string();
            assert!(
                e.starts_with(&format!("{}:3: expected", file.display())) && e.contains(expected),
                "{bad}: {e}"
            );
            assert_eq!((c.keep_traces, c.keep_mb, c.hz), (10, 200.0, 5), "{bad}");
        }
        std::fs::write(&file, "[record]\nkeep_traces = 3\nkeep_mb = 0\n").unwrap();
        let (c, errors) = Config::load(&file, "bootprint.keep_mb=50");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!((c.keep_traces, c.keep_mb), (3, 50.0));
    }

    #[test]
    fn load_keeps_what_parsed_when_the_file_is_bad() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let file = dir.join("bootprint.toml");
        std::fs::write(&file, "[record]\nhz = 20\nsettle_s = x\n").unwrap();
        let (c, errors) = Config::load(&file, "bootprint.timeout=60");
        assert_eq!(errors.len(), 1);
        assert_eq!(c.hz, Config::default().hz, "a bad file is ignored whole");
        assert_eq!(c.timeout_s, 60.0);
    }

    #[test]
    fn a_fault_is_armed_only_by_name() {
        let mut c = Config::default();
        assert!(c
            .apply_cmdline("bootprint.fault=poweroff-in-trace")
            .is_empty());
        assert_eq!(c.fault, "poweroff-in-trace");
        let e = c.apply_cmdline("bootprint.fault=everything");
        assert!(e[0].to_string().contains("poweroff-in-trace"), "{}", e[0]);
    }

    /// Issue 14: a FIFO as the configuration file blocked PID 1 in open(2) for ever; a
    /// huge file was read whole. Both are refused at once, naming the file, and the boot goes
    /// on with the defaults and the command line.
    #[test]
    fn a_fifo_or_a_huge_file_as_the_configuration_does_not_block_or_load() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let fifo = dir.join("bootprint.toml");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let f = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(Config::load(&f, "bootprint.hz=20"));
        });
        let (config, errors) = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("Config::load blocked on a FIFO");
        assert_eq!(config.hz, 20, "the command line still applies");
        assert_eq!(errors.len(), 1, "{errors:?}");
        let e = errors[0].to_string();
        assert!(
            e.contains("bootprint.toml") && e.contains("regular file"),
            "{e}"
        );

        let big = dir.join("big.toml");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(64 << 30).unwrap(); // sparse: 64 GiB of nothing
        let (config, errors) = Config::load(&big, "");
        assert_eq!(config.hz, Config::default().hz);
        assert!(errors[0].to_string().contains("at most"), "{:?}", errors);
    }

    #[test]
    fn readahead_keys_from_file_and_cmdline() {
        let mut c = Config::default();
        c.apply_toml(
            "[readahead]\nenabled = true\nmax_age_days = 7\ncompare_every = 0\norder = \"access\"\nio_class = \"best-effort\"\n",
            "t",
        )
        .unwrap();
        assert!(c.readahead);
        assert_eq!(c.readahead_max_age_days, 7.0);
        assert_eq!(c.readahead_compare_every, 0);
        assert_eq!(c.readahead_order, "access");
        assert_eq!(c.readahead_io_class, "best-effort");
        let errors = c.apply_cmdline(
            "bootprint.readahead_order=sideways bootprint.readahead_budget_mb=64 bootprint.rc=1",
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0]
                .expected
                .contains("\"auto\", \"disk\", \"access\""),
            "{}",
            errors[0]
        );
        assert_eq!(c.readahead_order, "access", "the bad value changed nothing");
        assert_eq!(c.readahead_budget_mb, 64.0);
        assert!(c.rc);
        let e = c.apply_toml("[readahead]\nfoo = 1\n", "f").unwrap_err();
        assert!(e.expected.contains("in [readahead]; found \"foo\""), "{e}");
    }

    #[test]
    fn systemd_late_keys_from_file_and_cmdline() {
        let mut c = Config::default();
        assert!(!c.late, "off by default");
        c.apply_toml(
            "[systemd]\nlate = true\nlate_units = [\"avahi-daemon.service\"]\nnever_late = [\"ssh.service\"]\n",
            "f",
        )
        .unwrap();
        assert!(c.late);
        assert_eq!(c.late_units, ["avahi-daemon.service"]);
        assert_eq!(c.never_late, ["ssh.service"]);
        assert!(c.apply_cmdline("bootprint.late=0").is_empty());
        assert!(!c.late);
        let e = c
            .apply_toml("[systemd]\n\nlate = maybe\n", "b.toml")
            .unwrap_err();
        assert_eq!((e.source.as_str(), e.line), ("b.toml", 3));
        let e = c.apply_toml("[systemd]\nhz = 5\n", "b.toml").unwrap_err();
        assert!(e.expected.contains("in [systemd]"), "{e}");
        assert_eq!(c.hz, Config::default().hz);
    }

    /// Every boot-path key of the schema's table sets a field here: its default as written
    /// in the table gives the field's default, and another value changes it.
    #[test]
    fn every_boot_path_key_of_the_schema_sets_its_field() {
        for k in trace::config::KEYS.iter().filter(|k| k.flat.is_some()) {
            let text = format!("[{}]\n{} = {}\n", k.section.name(), k.name, k.default);
            let mut c = Config::default();
            c.apply_toml(&text, "t").unwrap();
            if k.name != "all" {
                assert_eq!(c, Config::default(), "{}: the table's default", k.name);
            }
            let other = match k.ty {
                trace::config::Type::Bool if k.default == "true" => "false".to_string(),
                trace::config::Type::Bool => "true".to_string(),
                trace::config::Type::Switch => "false".to_string(),
                trace::config::Type::Int { min, .. } => (min + 2).to_string(),
                trace::config::Type::Num { min, max } => ((min + max) / 3.0).to_string(),
                trace::config::Type::Secs { max } => (max / 3.0).to_string(),
                trace::config::Type::OneOf(w) => format!(
                    "{:?}",
                    w.iter().find(|w| format!("{w:?}") != k.default).unwrap()
                ),
                trace::config::Type::List => "[\"x\"]".to_string(),
                _ => "\"/elsewhere\"".to_string(),
            };
            let text = format!("[{}]\n{} = {other}\n", k.section.name(), k.name);
            let mut c = Config::default();
            c.apply_toml(&text, "t").unwrap_or_else(|e| panic!("{e}"));
            assert_ne!(c, Config::default(), "{} = {other} set nothing", k.name);
            // And the kernel command line, by its flat name.
            let raw = other.trim_matches(|c| c == '"' || c == '[' || c == ']');
            let mut d = Config::default();
            let errors = d.apply_cmdline(&format!("bootprint.{}={raw}", k.flat.unwrap()));
            assert!(errors.is_empty(), "{errors:?}");
            assert_eq!(c, d, "{} from the command line", k.name);
        }
        assert_eq!(trace::config::EXEC_SOURCES, crate::execs::SOURCES);
        assert_eq!(trace::config::FAULTS[1..], crate::fault::POINTS);
    }

    #[test]
    fn all_turns_every_lever_on_and_a_later_key_wins() {
        let mut c = Config::default();
        assert!(c
            .apply_cmdline("bootprint.all=1 bootprint.modules=0")
            .is_empty());
        assert!(c.readahead && c.rc && c.late);
        assert!(!c.modules, "the later key wins");
        let mut f = Config::default();
        f.apply_toml("[boot]\nall = true\n", "f").unwrap();
        assert!(f.readahead && f.rc && f.late && f.modules);
        assert!(c.apply_cmdline("bootprint.all=0").is_empty());
        assert!(!(c.readahead || c.rc || c.late || c.modules));
    }
}
