//! The schema of `/etc/bootprint/bootprint.toml`: where the file is ([`CONFIG_FILE`]), every
//! section and key in one table ([`KEYS`]: name, type, default, one-line meaning), and the
//! one parser that turns the file's text into typed [`Setting`]s ([`parse`]).
//!
//! The syntax is read by [`crate::conf`] (a small TOML subset, no TOML crate: the boot path
//! reads this file as PID 1 and must stay small); this module decides what the entries mean:
//! a section or key not in the table, or a value not of the key's type, is an error naming
//! the file, the line and what was expected. Each reader of the file takes the settings of
//! its sections and sets its own fields: the recorder (`record::config`: `[record]`, also
//! written `[boot]` or before any section, `[readahead]`, `[systemd]`), the report's budgets
//! (`analyze::budget`: `[budget]`) and the init-script runner (`rc::run`: `[rc]`). The key
//! list in `docs/configuration.md` is [`markdown`]'s output (a test keeps them equal).
//!
//! `/etc/bootprint/rc.conf` ([`RC_CONF_FILE`]), the runner's file before `[rc]` existed, is
//! still read for one release ([`parse_rc_conf`]) with a deprecation warning; the runner
//! ignores it when `bootprint.toml` has an `[rc]` section.
//!
//! ```
//! use trace::config::{parse, Section};
//! let s = parse("[budget]\nkernel_s = 2\n[rc]\nlate = [\"cups\"]\n", "bootprint.toml").unwrap();
//! assert_eq!((s[0].key.section, s[0].key.name, s[0].value.num()), (Section::Budget, "kernel_s", 2.0));
//! assert_eq!(s[1].value.list(), ["cups"]);
//! let e = parse("[budget]\nkernal_s = 2\n", "bootprint.toml").unwrap_err();
//! assert!(e.to_string().starts_with("bootprint.toml:2: expected one of kernel_s"));
//! ```

use std::fmt::Write as _;

use crate::conf::{self, ConfError, Value};

/// The configuration file's place on the system.
pub const CONFIG_FILE: &str = "/etc/bootprint/bootprint.toml";

/// The init-script runner's file before `[rc]` existed: read for one more release, with a
/// deprecation warning, when `bootprint.toml` has no `[rc]` section.
pub const RC_CONF_FILE: &str = "/etc/bootprint/rc.conf";

/// The largest configuration file read; a real one is a few KiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Process names (`comm`, cut at 15 bytes as the kernel keeps them) of desktop session
/// managers: one started after the greeter marks a user's session (`session_start`). The
/// recorder's default `session_names` and the report's rule for traces without the event.
pub const SESSION_NAMES: [&str; 8] = [
    "xfce4-session",
    "gnome-session-b",
    "startplasma-x11",
    "startplasma-way",
    "mate-session",
    "cinnamon-sessio",
    "lxqt-session",
    "lxsession",
];

/// A section of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// `[record]` (also `[boot]`, or keys before the first section): the boot path.
    Record,
    /// `[readahead]`: readahead's switch and settings (`docs/readahead.md`).
    Readahead,
    /// `[systemd]`: late units on systemd (`docs/systemd.md`).
    Systemd,
    /// `[budget]`: the report's phase budgets (`docs/report.md`).
    Budget,
    /// `[rc]`: the init-script runner (`docs/rc.md`); what `rc.conf` held.
    Rc,
    /// `[preload]`: the desktop session's preload (`docs/preload.md`).
    Preload,
}

impl Section {
    /// Every section, in the order the docs list them.
    pub const ALL: [Section; 6] = [
        Section::Record,
        Section::Readahead,
        Section::Systemd,
        Section::Budget,
        Section::Rc,
        Section::Preload,
    ];

    /// The section's name as written in `[name]`.
    pub fn name(self) -> &'static str {
        match self {
            Section::Record => "record",
            Section::Readahead => "readahead",
            Section::Systemd => "systemd",
            Section::Budget => "budget",
            Section::Rc => "rc",
            Section::Preload => "preload",
        }
    }

    /// The section a `[header]` names (`""`: before the first header).
    pub fn from_header(header: &str) -> Option<Section> {
        match header {
            "" | "record" | "boot" => Some(Section::Record),
            "readahead" => Some(Section::Readahead),
            "systemd" => Some(Section::Systemd),
            "budget" => Some(Section::Budget),
            "rc" => Some(Section::Rc),
            "preload" => Some(Section::Preload),
            _ => None,
        }
    }

    /// What the section is for, one line (the docs' heading text).
    pub fn about(self) -> &'static str {
        match self {
            Section::Record => {
                "The boot path (also written `[boot]`, or before the first section); each key \
                 is also `bootprint.<key>=` on the kernel command line (docs/recorder.md)"
            }
            Section::Readahead => {
                "Readahead (docs/readahead.md); on the kernel command line and in `[record]` \
                 as `readahead_<key>` (`readahead` for `enabled`)"
            }
            Section::Systemd => {
                "Late units on systemd (docs/systemd.md); also `bootprint.<key>=` on the \
                 kernel command line"
            }
            Section::Budget => "The report's phase budgets, seconds (docs/report.md)",
            Section::Rc => {
                "The init-script runner (docs/rc.md), what /etc/bootprint/rc.conf held: \
                 same keys (`-` or `_`), same meaning"
            }
            Section::Preload => {
                "Preload of the desktop session's files at login (docs/preload.md); read by \
                 `bootprint preload`, not by the boot path"
            }
        }
    }
}

/// A key's type: what its value must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Type {
    /// `true` / `false` (also `0` / `1`; on the command line and in rc.conf `yes`/`no`,
    /// `on`/`off`).
    Bool,
    /// A [`Type::Bool`] or `"auto"` (the program decides); read with [`Typed::switch`].
    Switch,
    /// A whole number in `min..=max`.
    Int {
        /// Smallest allowed.
        min: u32,
        /// Largest allowed.
        max: u32,
    },
    /// A number in `min..=max`.
    Num {
        /// Smallest allowed.
        min: f64,
        /// Largest allowed.
        max: f64,
    },
    /// A number of seconds from 0 to `max`.
    Secs {
        /// Largest allowed (keeps a `Duration` from overflowing).
        max: f64,
    },
    /// A `"string"`.
    Str,
    /// A `"/path"`.
    Path,
    /// A `"string"` that is one of these.
    OneOf(&'static [&'static str]),
    /// `["a", "b"]` (a string is split at commas and blanks).
    List,
}

impl Type {
    /// What a value of this type looks like, for errors and the docs.
    pub fn describe(self) -> String {
        match self {
            Type::Bool => "true or false".into(),
            Type::Switch => "true, false or \"auto\"".into(),
            Type::Int { min, max } => format!("a whole number from {min} to {max}"),
            Type::Num { min, max } => format!("a number from {min} to {max}"),
            Type::Secs { max } => format!("a number of seconds from 0 to {max}"),
            Type::Str => "a \"string\"".into(),
            Type::Path => "a \"path\"".into(),
            Type::OneOf(words) => {
                let w: Vec<String> = words.iter().map(|w| format!("{w:?}")).collect();
                format!("one of {}", w.join(", "))
            }
            Type::List => "a list of strings [\"a\", \"b\"]".into(),
        }
    }

    /// The type's short name for the docs' table.
    fn short(self) -> String {
        match self {
            Type::Bool => "bool".into(),
            Type::Switch => "bool or `\"auto\"`".into(),
            Type::Int { min, max } => format!("integer {min}..{max}"),
            Type::Num { min, max } => format!("number {min}..{max}"),
            Type::Secs { max } => format!("seconds 0..{max}"),
            Type::Str => "string".into(),
            Type::Path => "path".into(),
            Type::OneOf(words) => words
                .iter()
                .map(|w| format!("`{w:?}`"))
                .collect::<Vec<_>>()
                .join(" "),
            Type::List => "list of strings".into(),
        }
    }
}

/// One key of the file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Key {
    /// The section it belongs to.
    pub section: Section,
    /// Its name there (`_` between words; `-` is accepted for `_`).
    pub name: &'static str,
    /// Other names accepted in its section.
    pub aliases: &'static [&'static str],
    /// For the boot path's keys: the name on the kernel command line (`bootprint.<flat>=`)
    /// and in `[record]` (`readahead_pack` for `[readahead] pack`). None for keys the boot
    /// path does not read.
    pub flat: Option<&'static str>,
    /// What the value must be.
    pub ty: Type,
    /// The default, as it would be written in the file.
    pub default: &'static str,
    /// What it does, one line.
    pub meaning: &'static str,
}

const fn key(
    section: Section,
    name: &'static str,
    ty: Type,
    default: &'static str,
    meaning: &'static str,
) -> Key {
    Key {
        section,
        name,
        aliases: &[],
        flat: None,
        ty,
        default,
        meaning,
    }
}

const fn boot(name: &'static str, ty: Type, default: &'static str, meaning: &'static str) -> Key {
    Key {
        flat: Some(name),
        ..key(Section::Record, name, ty, default, meaning)
    }
}

const fn flat(k: Key, flat: &'static str) -> Key {
    Key {
        flat: Some(flat),
        ..k
    }
}

const fn aka(k: Key, aliases: &'static [&'static str]) -> Key {
    Key { aliases, ..k }
}

const SHARE: Type = Type::Num { min: 0.0, max: 1.0 };
const COUNT: Type = Type::Int { min: 0, max: 1000 };
/// Seconds for the runner and the budgets: at most about 31 years, so a `Duration` holds it.
const SECS: Type = Type::Secs { max: 1e9 };
const PCT: Type = Type::Num {
    min: 0.0,
    max: 100.0,
};

/// Where exec events come from (`exec_events`); `record::execs::SOURCES`.
pub const EXEC_SOURCES: [&str; 3] = ["connector", "fanotify", "off"];
/// Faults the test bed can inject (`fault`; `""`: none); `record::fault::POINTS` and `""`.
pub const FAULTS: [&str; 3] = ["", "poweroff-in-trace", "poweroff-in-shutdown-trace"];

use Section::{Budget, Preload, Rc, Readahead, Systemd};

/// Every key of the file, section by section.
pub static KEYS: &[Key] = &[
    // [record]
    boot("init", Type::Path, "\"/sbin/init\"", "the real init to exec"),
    boot("record", Type::Bool, "true", "record this boot"),
    boot("hz", Type::Int { min: 1, max: 1000 }, "5", "sampling rate, Hz"),
    boot("idle_cpu", SHARE, "0.25", "CPU busy share of all CPUs below which the system counts as idle"),
    boot("idle_disk", SHARE, "0.1", "disk busy share below which the disk counts as idle"),
    aka(
        boot("settle_s", Type::Num { min: 0.0, max: 600.0 }, "3", "how long CPU and disk must stay idle after the login for boot to be done, s"),
        &["settle"],
    ),
    aka(
        boot("timeout_s", Type::Num { min: 1.0, max: 3600.0 }, "240", "recording stops at this uptime whatever happens, s"),
        &["timeout"],
    ),
    boot("log_dir", Type::Path, "\"/var/log/bootprint\"", "where traces go (`<dir>/<boot id>/`)"),
    boot("keep_traces", Type::Int { min: 0, max: 100_000 }, "10", "at boot done, the oldest traces in `log_dir` beyond this many are removed (0: no limit); `latest` and pinned ones stay"),
    boot("keep_mb", Type::Num { min: 0.0, max: 1e7 }, "200", "then the oldest while the traces take more MiB than this (0: no limit)"),
    boot(
        "login_names",
        Type::List,
        "[\"getty\", \"agetty\", \"mingetty\", \"mgetty\", \"fbgetty\", \"login\"]",
        "process names whose start marks the text login",
    ),
    boot(
        "greeter_names",
        Type::List,
        "[\"lightdm-gtk-gre\", \"lightdm-greeter\", \"gdm-greeter\", \"sddm-greeter\", \"slick-greeter\", \"xdm\"]",
        "process names whose start marks the graphical login",
    ),
    boot(
        "session_names",
        Type::List,
        "[\"xfce4-session\", \"gnome-session-b\", \"startplasma-x11\", \"startplasma-way\", \"mate-session\", \"cinnamon-sessio\", \"lxqt-session\", \"lxsession\"]",
        "process names whose start marks a user's desktop session (the clock of `desktop_ready`)",
    ),
    boot("session_wait_s", Type::Num { min: 0.0, max: 3600.0 }, "120", "after boot done on a machine with a greeter, how long recording goes on for a user's session to start (0: it stops at boot done), s"),
    boot("desktop_timeout_s", Type::Num { min: 1.0, max: 3600.0 }, "300", "once a session has started, recording stops at desktop ready or this many seconds later, s"),
    boot("exec_events", Type::OneOf(&EXEC_SOURCES), "\"connector\"", "where exec events come from (the kernel's process events, fanotify, none)"),
    boot("cost_detail", Type::Bool, "false", "time each part of the recorder's loop (`parts_ms` in `recorder_stats`)"),
    boot("delayacct", Type::Bool, "false", "switch the kernel's delay accounting on while recording"),
    boot("prometheus_dir", Type::Path, "\"/var/lib/prometheus/node-exporter\"", "node_exporter's textfile directory: the boot's figures go there at boot done when it exists; `\"\"`: never"),
    boot("otlp_endpoint", Type::Str, "\"\"", "an OTLP/HTTP endpoint (`http://` or `https://`): the boot goes there as an OpenTelemetry trace at boot done, queued while it cannot be reached; `\"\"`: never"),
    boot("otlp_headers_file", Type::Path, "\"/etc/bootprint/otlp-headers\"", "the endpoint's request headers, `NAME: VALUE` a line, mode 0600 (a collector's credentials); used when it exists"),
    boot("all", Type::Bool, "false", "every lever at once (readahead, modules, rc, late); a later key turns one back off"),
    boot("modules", Type::Bool, "false", "load modules in parallel before init (docs/modules.md)"),
    boot("modules_state", Type::Path, "\"/var/lib/bootprint/modules.state\"", "the module loader's history and verdict"),
    boot("modules_compare_every", COUNT, "5", "every this many boots with the loader, one without it (0: never, and no verdict)"),
    boot("rc", Type::Bool, "false", "the init scripts are started by `bootprint-boot rc` instead of startpar (docs/rc.md)"),
    boot("rc_state", Type::Path, "\"/var/lib/bootprint/rc.state\"", "the init script runner's history and verdict"),
    boot("rc_compare_every", COUNT, "5", "every this many boots with the runner, one with Debian's startpar (0: never, and no verdict)"),
    boot("kexec", Type::Bool, "false", "an ordinary reboot goes by kexec into the entry the boot loader boots next, where safe (docs/reboot.md); not part of `all`"),
    boot("fault", Type::OneOf(&FAULTS), "\"\"", "a fault to inject, for the test bed's fault matrix only"),
    // [readahead]
    flat(key(Readahead, "enabled", Type::Bool, "false", "learn and replay a pack at boot"), "readahead"),
    flat(key(Readahead, "pack", Type::Path, "\"/var/lib/bootprint/readahead.pack\"", "the pack"), "readahead_pack"),
    flat(key(Readahead, "state", Type::Path, "\"/var/lib/bootprint/readahead.state\"", "the history and verdict"), "readahead_state"),
    flat(key(Readahead, "max_age_days", Type::Num { min: 0.0, max: 36500.0 }, "30", "learn again when the pack is older"), "readahead_max_age_days"),
    flat(key(Readahead, "stale_share", SHARE, "0.1", "learn again when more than this share of entries were stale in a replay"), "readahead_stale_share"),
    flat(key(Readahead, "missed_share", Type::Num { min: 0.0, max: 100.0 }, "0.5", "learn again when a replay boot read more than this share of the pack's bytes beyond the replay"), "readahead_missed_share"),
    flat(key(Readahead, "compare_every", COUNT, "5", "every this many boots with a pack, one without replay (0: never)"), "readahead_compare_every"),
    flat(key(Readahead, "budget_mb", Type::Num { min: 0.0, max: 65536.0 }, "0", "the pack's byte budget in MiB (0: from the device's bandwidth)"), "readahead_budget_mb"),
    flat(key(Readahead, "io_class", Type::OneOf(&["idle", "best-effort"]), "\"idle\"", "the replay's I/O class"), "readahead_io_class"),
    flat(key(Readahead, "order", Type::OneOf(&["auto", "disk", "access"]), "\"auto\"", "pack order: physical on a rotating device, first access otherwise (`auto`), `disk` or `access`"), "readahead_order"),
    flat(key(Readahead, "merge_gap_kb", Type::Int { min: 0, max: 65536 }, "32", "replay reads a file's ranges closer than this many KiB apart as one request, the gap included (0: every range alone)"), "readahead_merge_gap_kb"),
    flat(key(Readahead, "metadata", Type::Switch, "\"auto\"", "replay first reads the root filesystem's metadata opening the pack's files needs (their inode-table blocks, their directories' blocks and inodes; ext2/3/4), and again if a read-only remount drops it; `auto`: when the pack was learned on a rotating device (see `media`) that the learning boot waited on (busy 3/4 of its time): the largest login gain measured on the laptop disk, a loss on the SD card and where the CPU set the pace (docs/readahead.md, \"Metadata\")"), "readahead_metadata"),
    flat(key(Readahead, "media", Type::OneOf(&["auto", "rotating", "card", "solid-state"]), "\"auto\"", "what the root device is, where its driver says otherwise (a virtual disk or a USB card reader says it rotates): decides `order = auto`, `metadata = auto`, the pack's budget, replay's threads and whether `bootprint readahead relocate` moves files; `auto`: an mmcblk device is a card, else the device's queue/rotational says"), "readahead_media"),
    flat(key(Readahead, "pages", Type::OneOf(&["auto", "mincore"]), "\"auto\"", "how a learning boot finds the pages the boot used: `auto`, the filemap tracepoints (each page as it is used) where the kernel has them (Linux 6.10 and later), else mincore(2) at boot done (every page still cached); `mincore` always (to compare the two)"), "readahead_pages"),
    // [systemd]
    flat(key(Systemd, "late", Type::Bool, "false", "start the units no login needs after the login, once idle"), "late"),
    flat(key(Systemd, "late_units", Type::List, "[]", "units pinned late"), "late_units"),
    flat(key(Systemd, "never_late", Type::List, "[]", "units never started late (nor what they need)"), "never_late"),
    flat(key(Systemd, "late_history", Type::Path, "\"/var/lib/bootprint/late.state\"", "the late units' history of boots with and without them, and their verdict"), "late_history"),
    flat(key(Systemd, "late_compare_every", COUNT, "5", "every this many boots with late units, one without (0: never, and no verdict)"), "late_compare_every"),
    flat(key(Systemd, "timeouts", Type::Bool, "false", "a service that hung a recorded shutdown gets a stop timeout learned from its stops that ended (docs/systemd.md); not part of `all`"), "timeouts"),
    // [budget]
    aka(key(Budget, "kernel_s", SECS, "1", "kernel start to the first program"), &["kernel"]),
    aka(key(Budget, "early_s", SECS, "1", "first program to the real init: initramfs and root mount"), &["early"]),
    aka(key(Budget, "text_login_s", SECS, "1", "real init to the text login prompt"), &["text_login"]),
    aka(key(Budget, "graphical_login_s", SECS, "1", "the previous milestone to the graphical login greeter"), &["graphical_login"]),
    aka(key(Budget, "done_s", SECS, "2", "login to boot done, CPU and disk idle"), &["done"]),
    aka(key(Budget, "desktop_s", SECS, "2", "the user's session start to desktop ready: the desktop start time (the five-second boot's desktop budget)"), &["desktop"]),
    // [rc]
    key(
        Rc,
        "login",
        Type::List,
        "[\"$local_fs\", \"$remote_fs\", \"$syslog\", \"$network\", \"$time\", \"rmnologin\", \"$x-display-manager\", \"gdm3\", \"lightdm\", \"sddm\", \"xdm\", \"lxdm\", \"slim\", \"nodm\", \"wdm\"]",
        "scripts and `$facilities` of the login target; `auto`: learned from the system",
    ),
    key(Rc, "late", Type::List, "[]", "scripts to start late in any case"),
    key(
        Rc,
        "display_managers",
        Type::List,
        "[\"$x-display-manager\", \"gdm3\", \"lightdm\", \"sddm\", \"xdm\", \"lxdm\", \"slim\", \"nodm\", \"wdm\"]",
        "graphical login managers",
    ),
    key(Rc, "display_manager_needs", Type::List, "[\"elogind\", \"consolekit\"]", "join the login target when a display manager starts in the runlevel"),
    key(Rc, "timeout", SECS, "120", "seconds one script may run before the boot goes on without it"),
    key(Rc, "flush", SECS, "10", "seconds before a running script's complete output lines are printed"),
    key(Rc, "load_per_cpu", Type::Num { min: 0.0, max: 1e6 }, "2", "start another script only while the load is below this times the CPU count (start plans; a stop plan is held by `max_parallel` only)"),
    key(Rc, "max_parallel", Type::Int { min: 0, max: 1_000_000 }, "0", "never more scripts at once (0: 4 per CPU)"),
    key(Rc, "idle_busy", PCT, "30", "percent CPU busy below which the machine is idle"),
    key(Rc, "idle_iowait", PCT, "5", "percent iowait below which the disk is idle"),
    key(Rc, "idle_window", SECS, "0.5", "seconds per idle measurement"),
    key(Rc, "late_max_wait", SECS, "10", "seconds after the path to the login when late services start anyway"),
    key(Rc, "builtins", Type::Bool, "true", "run Debian's early-boot and shutdown scripts it recognises as built-ins (`bootprint.rc.builtins=0|1` for one boot)"),
    key(Rc, "udev_off_path", Type::Bool, "true", "let udev run beside the path to the login where safe (`bootprint.rc.udev-off-path=0|1` for one boot)"),
    key(Rc, "one_graph", Type::Bool, "true", "plan runlevel S with the next runlevel (`bootprint.rc.one-graph=0|1` for one boot)"),
    key(
        Rc,
        "finish_in_s",
        Type::List,
        "[\"bootmisc\", \"urandom\", \"procps\", \"kmod\", \"apparmor\"]",
        "scripts or `$facilities` of runlevel S that must end before rcS returns",
    ),
    // [preload]
    key(Preload, "enabled", Type::Bool, "false", "learn the desktop session's files at each login and prefetch them at the next"),
    key(Preload, "dir", Type::Path, "\"/var/lib/bootprint/preload\"", "the model (`model`), the history and verdict (`state`)"),
    key(Preload, "budget_mb", Type::Num { min: 0.0, max: 65536.0 }, "256", "most MiB prefetched per login"),
    key(Preload, "mem_share", SHARE, "0.25", "and at most this share of MemAvailable"),
    key(Preload, "decay", Type::Num { min: 0.0, max: 0.99 }, "0.5", "each login multiplies every file's weight by this, then adds 1 to the files it read"),
    key(Preload, "drop_below", Type::Num { min: 0.0, max: 100.0 }, "0.3", "a file whose weight falls below this leaves the model"),
    key(Preload, "window_s", Type::Num { min: 1.0, max: 3600.0 }, "60", "learning a login stops this many seconds after it started at the latest"),
    key(Preload, "quiet_s", Type::Num { min: 0.5, max: 600.0 }, "5", "or once the session opened no new file for this long"),
    key(Preload, "compare_every", COUNT, "5", "every this many logins with prefetch, one without (0: never, and no verdict)"),
    key(Preload, "io_class", Type::OneOf(&["idle", "best-effort"]), "\"idle\"", "the prefetch's I/O class"),
    key(Preload, "yield_ms", Type::Int { min: 0, max: 60000 }, "250", "prefetch a piece only after the disk did no one else's I/O for this many milliseconds, one piece in flight at a time (0: read as fast as the disk takes it)"),
    key(Preload, "yield_cpu_pct", Type::Num { min: 0.0, max: 100.0 }, "15", "with `yield_ms`, also only while others used at most this percentage of all CPUs' time over that period: a prefetch yields the CPU to a boot's last services and the greeter's start too (0: the disk alone decides)"),
];

/// A value of a key's type.
#[derive(Debug, Clone, PartialEq)]
pub enum Typed {
    /// [`Type::Bool`].
    Bool(bool),
    /// [`Type::Int`].
    Int(u32),
    /// [`Type::Num`], [`Type::Secs`].
    Num(f64),
    /// [`Type::Str`], [`Type::Path`], [`Type::OneOf`].
    Str(String),
    /// [`Type::List`].
    List(Vec<String>),
}

impl Typed {
    /// The boolean (false for a value of another type).
    pub fn bool(&self) -> bool {
        matches!(self, Typed::Bool(true))
    }

    /// A [`Type::Switch`]: `Some(b)` for a boolean, `None` for `"auto"`.
    pub fn switch(&self) -> Option<bool> {
        match self {
            Typed::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The whole number (0 for a value of another type).
    pub fn int(&self) -> u32 {
        match self {
            Typed::Int(n) => *n,
            _ => 0,
        }
    }

    /// The number (an integer too; 0 for a value of another type).
    pub fn num(&self) -> f64 {
        match self {
            Typed::Num(n) => *n,
            Typed::Int(n) => f64::from(*n),
            _ => 0.0,
        }
    }

    /// The string (`""` for a value of another type).
    pub fn text(&self) -> &str {
        match self {
            Typed::Str(s) => s,
            _ => "",
        }
    }

    /// The list (empty for a value of another type).
    pub fn list(&self) -> Vec<String> {
        match self {
            Typed::List(l) => l.clone(),
            _ => Vec::new(),
        }
    }
}

/// One `key = value` of the file, checked against the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The key it sets.
    pub key: &'static Key,
    /// The value, of the key's type.
    pub value: Typed,
    /// 1-based line.
    pub line: usize,
    /// The section header it was under, as written (`""` before the first one).
    pub header: String,
    /// The key as written.
    pub written: String,
}

fn norm(key: &str) -> String {
    key.trim().replace('-', "_")
}

/// The keys of one section, in the table's order.
pub fn keys(section: Section) -> impl Iterator<Item = &'static Key> {
    KEYS.iter().filter(move |k| k.section == section)
}

/// The key `name` means under `[header]`: its name or an alias in that section, or, in
/// `[record]` (and in a section with flat names), a boot-path key's flat name. The error
/// says what was expected.
pub fn lookup(header: &str, name: &str) -> Result<&'static Key, String> {
    let name = name.trim();
    let Some(section) = Section::from_header(header) else {
        let known: Vec<&str> = Section::ALL.iter().map(|s| s.name()).collect();
        return Err(format!(
            "a known section ({}, or boot), not [{header}]",
            known.join(", ")
        ));
    };
    let n = norm(name);
    let own = keys(section).find(|k| k.name == n || k.aliases.contains(&n.as_str()));
    let by_flat = || {
        KEYS.iter().find(|k| {
            k.flat == Some(n.as_str()) && (section == Section::Record || k.section == section)
        })
    };
    own.or_else(by_flat).ok_or_else(|| {
        let names: Vec<&str> = keys(section).map(|k| k.name).collect();
        let more = if section == Section::Record {
            " (or a [readahead] or [systemd] key's command-line name)"
        } else {
            ""
        };
        let shown = if header.is_empty() { "record" } else { header };
        format!(
            "one of {}{more} in [{shown}]; found {name:?}",
            names.join(", ")
        )
    })
}

/// The boot-path key a kernel command line's `bootprint.<name>=` sets.
pub fn lookup_flat(name: &str) -> Option<&'static Key> {
    let n = norm(name);
    KEYS.iter().find(|k| {
        k.flat == Some(n.as_str())
            || (k.section == Section::Record && k.aliases.contains(&n.as_str()))
    })
}

/// Every flat name, for the command line's "expected" message.
pub fn flat_names() -> Vec<&'static str> {
    KEYS.iter().filter_map(|k| k.flat).collect()
}

fn shown(v: &Value) -> String {
    match v {
        Value::Str(s) => format!("{s:?}"),
        Value::Num(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::List(l) => format!("{l:?}"),
    }
}

fn split_list(s: &str) -> Vec<String> {
    s.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

/// `value` as a value of `key`'s type; the error says what was expected.
pub fn check(key: &Key, value: &Value) -> Result<Typed, String> {
    let bad = || {
        format!(
            "{} for {}, found {}",
            key.ty.describe(),
            key.name,
            shown(value)
        )
    };
    let typed = match (key.ty, value) {
        (Type::Bool, Value::Bool(b)) => Typed::Bool(*b),
        (Type::Bool, Value::Num(n)) if *n == 0.0 || *n == 1.0 => Typed::Bool(*n == 1.0),
        (Type::Switch, Value::Bool(b)) => Typed::Bool(*b),
        (Type::Switch, Value::Num(n)) if *n == 0.0 || *n == 1.0 => Typed::Bool(*n == 1.0),
        (Type::Switch, Value::Str(s)) if s == "auto" => Typed::Str(s.clone()),
        (Type::Int { min, max }, Value::Num(n))
            if n.fract() == 0.0 && (f64::from(min)..=f64::from(max)).contains(n) =>
        {
            Typed::Int(*n as u32)
        }
        (Type::Num { min, max }, Value::Num(n)) if (min..=max).contains(n) => Typed::Num(*n),
        (Type::Secs { max }, Value::Num(n)) if (0.0..=max).contains(n) => Typed::Num(*n),
        (Type::Str | Type::Path, Value::Str(s)) => Typed::Str(s.clone()),
        (Type::OneOf(words), Value::Str(s)) if words.contains(&s.as_str()) => Typed::Str(s.clone()),
        (Type::List, Value::List(l)) => Typed::List(l.clone()),
        (Type::List, Value::Str(s)) => Typed::List(split_list(s)),
        _ => return Err(bad()),
    };
    Ok(typed)
}

/// `raw`, a word with no syntax (the kernel command line's `bootprint.hz=25`, a value in
/// rc.conf), as a value of `key`'s type.
pub fn from_raw(key: &Key, raw: &str) -> Result<Typed, String> {
    let raw = raw.trim();
    let value = match key.ty {
        Type::Bool | Type::Switch => match raw {
            "1" | "on" | "yes" | "true" => Value::Bool(true),
            "0" | "off" | "no" | "false" => Value::Bool(false),
            _ => Value::Str(raw.to_string()),
        },
        Type::Int { .. } | Type::Num { .. } | Type::Secs { .. } => match raw.parse::<f64>() {
            Ok(n) => Value::Num(n),
            Err(_) => Value::Str(raw.to_string()),
        },
        _ => Value::Str(raw.to_string()),
    };
    check(key, &value).map_err(|e| match key.ty {
        Type::Bool => e.replace("true or false", "true or false (1/0, yes/no, on/off)"),
        Type::Switch => e.replace("true, false", "true, false (1/0, yes/no, on/off)"),
        _ => e,
    })
}

/// The settings of a `bootprint.toml` text, in line order; `source` names the file in
/// errors. A syntax error, an unknown section or key, or a value of the wrong type anywhere
/// fails the whole text, so a half-read file is never used.
pub fn parse(text: &str, source: &str) -> Result<Vec<Setting>, ConfError> {
    let mut out = Vec::new();
    for e in conf::entries(text, source)? {
        let err = |expected: String| ConfError {
            source: source.to_string(),
            line: e.line,
            expected,
        };
        let key = lookup(&e.section, &e.key).map_err(err)?;
        let value = check(key, &e.value).map_err(err)?;
        out.push(Setting {
            key,
            value,
            line: e.line,
            header: e.section.clone(),
            written: e.key.clone(),
        });
    }
    Ok(out)
}

/// The settings of one section (the whole text must still parse).
pub fn parse_section(
    text: &str,
    source: &str,
    section: Section,
) -> Result<Vec<Setting>, ConfError> {
    Ok(parse(text, source)?
        .into_iter()
        .filter(|s| s.key.section == section)
        .collect())
}

/// Whether the text has a `[header]` line for `section` (even an empty one). A text that
/// does not parse has none.
pub fn has_section(text: &str, section: Section) -> bool {
    text.lines().any(|l| {
        let l = l.split('#').next().unwrap_or("").trim();
        l.strip_prefix('[')
            .and_then(|l| l.strip_suffix(']'))
            .is_some_and(|h| {
                !h.trim().is_empty() && Section::from_header(h.trim()) == Some(section)
            })
    })
}

/// `/etc/bootprint/rc.conf` (deprecated: `[rc]` of bootprint.toml replaces it): `key = value`
/// lines, `#` comments, lists blank-separated, booleans `yes`/`no`; the keys of `[rc]`. Each
/// bad line is an error of its own and is left out; the good ones are returned.
pub fn parse_rc_conf(text: &str, source: &str) -> (Vec<Setting>, Vec<ConfError>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let err = |expected: String| ConfError {
            source: source.to_string(),
            line: i + 1,
            expected,
        };
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            errors.push(err(format!("`key = value`, found {line:?}")));
            continue;
        };
        let key = match lookup("rc", k) {
            Ok(key) => key,
            Err(e) => {
                errors.push(err(e));
                continue;
            }
        };
        match from_raw(key, v) {
            Ok(value) => out.push(Setting {
                key,
                value,
                line: i + 1,
                header: "rc".into(),
                written: k.trim().to_string(),
            }),
            Err(e) => errors.push(err(e)),
        }
    }
    (out, errors)
}

/// The deprecation warning for a `rc.conf` that is read (`used`) or ignored because
/// `bootprint.toml` has `[rc]`.
pub fn rc_conf_deprecation(rc_conf: &str, config_file: &str, used: bool) -> String {
    if used {
        format!(
            "deprecated: {rc_conf} is read for one more release; move its settings into the \
             [rc] section of {config_file} (same keys, lists as [\"a\", \"b\"])"
        )
    } else {
        format!(
            "ignored: {config_file} has an [rc] section, which replaces {rc_conf}; remove \
             {rc_conf} (deprecated)"
        )
    }
}

/// The key list of `docs/configuration.md`: one table per section, from [`KEYS`].
pub fn markdown() -> String {
    let mut out = String::new();
    for section in Section::ALL {
        let _ = writeln!(out, "### `[{}]`\n", section.name());
        let _ = writeln!(out, "{}.\n", section.about());
        out.push_str("| key | type | default | meaning |\n|---|---|---|---|\n");
        for k in keys(section) {
            let mut name = format!("`{}`", k.name);
            for a in k.aliases {
                let _ = write!(name, ", `{a}`");
            }
            if let Some(f) = k.flat.filter(|f| *f != k.name) {
                let _ = write!(name, " (`{f}`)");
            }
            let _ = writeln!(
                out,
                "| {name} | {} | `{}` | {} |",
                k.ty.short(),
                k.default,
                k.meaning
            );
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_session_names_default_is_the_shared_list() {
        let k = super::KEYS
            .iter()
            .find(|k| k.name == "session_names")
            .unwrap();
        let want = format!(
            "[{}]",
            super::SESSION_NAMES.map(|n| format!("\"{n}\"")).join(", ")
        );
        assert_eq!(k.default, want);
    }
    use super::*;

    #[test]
    fn every_default_in_the_table_parses_as_its_type() {
        for k in KEYS {
            let text = format!("[{}]\n{} = {}\n", k.section.name(), k.name, k.default);
            let s = parse(&text, "t")
                .unwrap_or_else(|e| panic!("{}.{}: {e}", k.section.name(), k.name));
            assert_eq!(s.len(), 1);
            assert!(std::ptr::eq(s[0].key, k), "{} found another key", k.name);
            for a in k.aliases {
                let text = format!("[{}]\n{a} = {}\n", k.section.name(), k.default);
                assert!(std::ptr::eq(parse(&text, "t").unwrap()[0].key, k));
            }
            if let Some(f) = k.flat {
                assert!(std::ptr::eq(lookup_flat(f).unwrap(), k), "{f}");
                assert!(std::ptr::eq(lookup("record", f).unwrap(), k), "{f}");
            }
        }
    }

    #[test]
    fn names_are_unique_where_they_are_looked_up() {
        for (i, a) in KEYS.iter().enumerate() {
            for b in &KEYS[i + 1..] {
                if a.section == b.section {
                    assert_ne!(a.name, b.name);
                }
                if a.flat.is_some() {
                    assert_ne!(a.flat, b.flat, "{}", a.name);
                }
            }
        }
    }

    #[test]
    fn unknown_section_key_and_wrong_type_name_file_and_line() {
        let e = parse(
            "[record]\nhz = 5\n\n[rc]\ntimeuot = 3\n",
            "/etc/bootprint/bootprint.toml",
        )
        .unwrap_err();
        assert_eq!(e.line, 5);
        let s = e.to_string();
        assert!(
            s.starts_with("/etc/bootprint/bootprint.toml:5: expected one of login, late"),
            "{s}"
        );
        assert!(s.contains("in [rc]; found \"timeuot\""), "{s}");
        let e = parse("[budget]\nkernel_s = \"1\"\n", "b.toml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "b.toml:2: expected a number of seconds from 0 to 1000000000 for kernel_s, found \"1\""
        );
        let e = parse("hz = 2.5\n", "b.toml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("b.toml:1: expected a whole number from 1 to 1000 for hz"),
            "{e}"
        );
        let e = parse("[rc]\nbuiltins = \"yes\"\n", "b.toml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("b.toml:2: expected true or false for builtins"),
            "{e}"
        );
        let e = parse("[frob]\nx = 1\n", "b.toml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("b.toml:2: expected a known section"),
            "{e}"
        );
        let e = parse("[systemd]\nhz = 5\n", "b.toml").unwrap_err();
        assert!(e.expected.contains("in [systemd]"), "{e}");
        let e = parse("[readahead]\norder = \"sideways\"\n", "b.toml").unwrap_err();
        assert!(
            e.expected.contains("one of \"auto\", \"disk\", \"access\""),
            "{e}"
        );

        // A switch: a boolean or "auto", in the file and on the command line.
        let e = parse("[readahead]\nmetadata = \"sometimes\"\n", "b.toml").unwrap_err();
        assert!(e.expected.contains("true, false or \"auto\""), "{e}");
        let s = parse("[readahead]\nmetadata = \"auto\"\n", "b.toml").unwrap();
        assert_eq!(s[0].value.switch(), None);
        let s = parse("[readahead]\nmetadata = false\n", "b.toml").unwrap();
        assert_eq!(s[0].value.switch(), Some(false));
        let k = lookup_flat("readahead_metadata").unwrap();
        assert_eq!(from_raw(k, "on").unwrap().switch(), Some(true));
        assert_eq!(from_raw(k, "auto").unwrap().switch(), None);
        assert!(from_raw(k, "2")
            .unwrap_err()
            .contains("1/0, yes/no, on/off"));
    }

    #[test]
    fn sections_aliases_and_flat_names() {
        let s = parse(
            "hz = 7\n[boot]\nsettle = 2\n[record]\nreadahead_pack = \"/p\"\nlate-units = \"a,b c\"\n[readahead]\nreadahead_order = \"disk\"\n[rc]\nload-per-cpu = 1.5\n",
            "t",
        )
        .unwrap();
        let names: Vec<(&str, &str)> = s
            .iter()
            .map(|s| (s.key.section.name(), s.key.name))
            .collect();
        assert_eq!(
            names,
            [
                ("record", "hz"),
                ("record", "settle_s"),
                ("readahead", "pack"),
                ("systemd", "late_units"),
                ("readahead", "order"),
                ("rc", "load_per_cpu")
            ]
        );
        assert_eq!(s[3].value.list(), ["a", "b", "c"]);
        assert!(has_section("x = 1\n[rc] # mine\n", Section::Rc));
        assert!(!has_section("[record]\nrc = true\n", Section::Rc));
    }

    #[test]
    fn raw_words_from_the_command_line_and_rc_conf() {
        let hz = lookup_flat("hz").unwrap();
        assert_eq!(from_raw(hz, "25"), Ok(Typed::Int(25)));
        assert!(from_raw(hz, "fast").unwrap_err().contains("whole number"));
        let b = lookup("rc", "udev-off-path").unwrap();
        assert_eq!(from_raw(b, "no"), Ok(Typed::Bool(false)));
        assert!(from_raw(b, "maybe").unwrap_err().contains("yes/no"));
        let (s, e) = parse_rc_conf(
            "# c\nlogin = $syslog ssh\nfinish-in-s =\nbogus = 1\ntimeout = 1e300\nno equals\n",
            "rc.conf",
        );
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].value.list(), ["$syslog", "ssh"]);
        assert_eq!(s[1].value.list(), Vec::<String>::new());
        let lines: Vec<usize> = e.iter().map(|e| e.line).collect();
        assert_eq!(lines, [4, 5, 6]);
        assert!(
            e[0].expected.contains("in [rc]; found \"bogus\""),
            "{}",
            e[0]
        );
        assert!(e[1].expected.contains("seconds"), "{}", e[1]);
    }

    #[test]
    fn markdown_lists_every_key() {
        let md = markdown();
        for k in KEYS {
            assert!(md.contains(&format!("| `{}`", k.name)), "{}", k.name);
        }
    }
}
