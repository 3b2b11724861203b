//! Advice: rules over a recorded boot that find known costs (the seeds name them) and say what
//! to change. Every finding carries its evidence from the trace (process, pid, time span,
//! samples), an estimated gain with how it was estimated, and the fix. A rule that finds no
//! evidence says nothing. The thresholds are in [`limits`]; `docs/advise.md` explains each
//! rule.

use std::collections::HashMap;

use serde::Serialize;

use crate::build::RECORDER_NAMES;
use crate::model::BootModel;
use crate::services::{self, Service};
use crate::usage;

/// One piece of evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// The process, when one is at fault.
    pub pid: Option<u32>,
    /// Its name (or what the span is).
    pub what: String,
    /// Span start, seconds since the kernel started.
    pub from_s: f64,
    /// Span end.
    pub to_s: f64,
    /// Samples of the trace inside the span that show it.
    pub samples: usize,
    /// The figures that make it evidence, in words.
    pub detail: String,
}

/// A finding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Stable rule name: `network-wait`, `storm`, `sleep`, `settle`, `late-service`,
    /// `late-unit`, `idle-getty`, `idle-gap`, `disk-bound`, `stop-timeout`, `slow-stop`,
    /// `sigterm-ignored`, `slow-unmount` and `slow-sync` (the shutdown before the boot), or
    /// `kernel:<id>` for the kernel's own findings.
    pub id: String,
    /// One sentence saying what was found.
    pub title: String,
    /// What shows it (never empty).
    pub evidence: Vec<Evidence>,
    /// Estimated gain in seconds of boot time, when it can be estimated.
    pub gain_s: Option<f64>,
    /// How the gain was estimated.
    pub gain_basis: String,
    /// What to change.
    pub fix: String,
}

/// The numbers the rules use.
pub mod limits {
    /// A stop in a shutdown this long or longer is a finding (`slow-stop`), s.
    pub const SLOW_STOP_S: f64 = 2.0;
    /// Unmounting in a shutdown this long or longer is a finding (`slow-unmount`), s.
    pub const SLOW_UNMOUNT_S: f64 = 2.0;
    /// The sync after a shutdown's save this long or longer is a finding (`slow-sync`), s.
    pub const SLOW_SYNC_S: f64 = 1.0;
    /// Programs that wait on the network (their `comm`).
    pub const NETWORK_NAMES: [&str; 12] = [
        "ifup",
        "ifquery",
        "dhclient",
        "dhclient-script",
        "dhcpcd",
        "udhcpc",
        "ntpdate",
        "sntp",
        "nm-online",
        "networkd-wait-o",
        "ifupdown-wait-o",
        "wait-online",
    ];
    /// Services (init scripts) whose start waits on the network.
    pub const NETWORK_SERVICES: [&str; 6] = [
        "networking",
        "network-manager",
        "ntpdate",
        "ntpsec-ntpdate",
        "ifupdown-wait-online",
        "wait-for-network",
    ];
    /// A network wait shorter than this is not worth a finding, s.
    pub const NETWORK_MIN_S: f64 = 0.3;
    /// Runs of one program this long (count) from one parent make a storm.
    pub const STORM_MIN_RUNS: usize = 10;
    /// ... and their lifetimes must sum to at least this, s.
    pub const STORM_MIN_S: f64 = 0.3;
    /// Runs in a storm are short: their median lifetime is at most this, s.
    pub const STORM_MAX_RUN_S: f64 = 0.5;
    /// A sleep or settle wait this long is worth a finding, s.
    pub const SLEEP_MIN_S: f64 = 0.5;
    /// Services that no login needs: they can start after the login, when the boot is idle.
    pub const LATE_SERVICES: [&str; 24] = [
        "ssh",
        "cron",
        "anacron",
        "atd",
        "rsyslog",
        "exim4",
        "postfix",
        "cups",
        "cups-browsed",
        "bluetooth",
        "avahi-daemon",
        "smartmontools",
        "saned",
        "rsync",
        "apache2",
        "nginx",
        "mariadb",
        "mysql",
        "postgresql",
        "nfs-common",
        "rpcbind",
        "openbsd-inetd",
        "sysstat",
        "unattended-upgrades",
    ];
    /// A late service using less than this much time before the login is not worth it, s.
    pub const LATE_MIN_S: f64 = 0.1;
    /// CPU busy (share of all CPUs, the recorder left out) below which the CPU is idle.
    pub const GAP_CPU: f64 = 0.10;
    /// Busiest-disk utilisation below which the disk is idle.
    pub const GAP_DISK: f64 = 0.05;
    /// A gap this long is worth a finding, s.
    pub const GAP_MIN_S: f64 = 0.5;
    /// Busiest-disk utilisation (or iowait share of all CPUs) above which a stretch is
    /// disk-bound.
    pub const DISK_BOUND_UTIL: f64 = 0.60;
    /// iowait share of all CPUs above which a stretch is disk-bound.
    pub const DISK_BOUND_IOWAIT: f64 = 0.30;
    /// A disk-bound stretch this long is worth a finding, s.
    pub const DISK_BOUND_MIN_S: f64 = 1.0;
    /// A getty's wait from its unit's start to its login prompt this long is worth a
    /// finding (`idle-getty`), s.
    pub const IDLE_GETTY_MIN_S: f64 = 1.0;
    /// What a getty takes from its exec to its prompt when nothing holds it, s (agetty on
    /// the test bed's serial console: a few tens of ms; the estimate leaves this much).
    pub const GETTY_OWN_S: f64 = 0.2;
}

/// All findings, largest gain first (findings without an estimate last). `kernel` is the
/// kernel report of the trace's dmesg, when it has one; its findings are carried over.
pub fn advise(m: &BootModel, kernel: Option<&kernel::Report>) -> Vec<Finding> {
    let services = services::services(m);
    let mut out = Vec::new();
    network_wait(m, &services, &mut out);
    storms(m, &mut out);
    sleeps(m, &mut out);
    late_services(m, &services, &mut out);
    idle_gaps(m, &mut out);
    disk_bound(m, &mut out);
    if let Some(k) = kernel {
        kernel_findings(k, &mut out);
    }
    out.retain(|f| !f.evidence.is_empty());
    sort(&mut out);
    out
}

/// Largest gain first, findings without an estimate last (a stable sort: ties keep order).
pub fn sort(out: &mut [Finding]) {
    out.sort_by(|a, b| match (a.gain_s, b.gain_s) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
}

/// The name a unit is matched against [`limits::LATE_SERVICES`] by: without `.service` and
/// without an instance (`postgresql@15-main.service` is `postgresql`).
fn unit_base(id: &str) -> &str {
    let stem = id.strip_suffix(".service").unwrap_or(id);
    stem.split('@').next().unwrap_or(stem)
}

/// The shutdown that led to this boot (`previous_boot`'s, [`crate::shutdown`]): a stop that
/// ran out its timeout (`stop-timeout`), one that took long (`slow-stop`), and a process that
/// outlived sendsigs' SIGTERM (`sigterm-ignored`), unmounting that took long
/// (`slow-unmount`, instead of `slow-stop` for those stops) and a long sync after the save
/// (`slow-sync`). Its times are seconds of that boot's uptime.
pub fn shutdown(v: &crate::shutdown::ShutdownView, previous_boot: &str) -> Vec<Finding> {
    use crate::shutdown::StopSource;
    let mut out = Vec::new();
    let slow_unmount = v
        .storage
        .unmount_s
        .is_some_and(|u| u >= limits::SLOW_UNMOUNT_S);
    for s in v.blame() {
        let took = s.duration_s(v.saved_s);
        let timed_out = matches!(s.outcome.as_str(), "timeout" | "timed_out");
        if !timed_out && took < limits::SLOW_STOP_S {
            continue;
        }
        if !timed_out && slow_unmount && crate::shutdown::is_unmount(&s.name) {
            continue; // said once, as unmounting
        }
        let (what, how) = match v.source {
            StopSource::Systemd => (format!("unit {}", s.name), "systemd's journal"),
            StopSource::Runner => (format!("script {}", s.name), "bootprint's runner"),
            StopSource::Processes => (s.name.clone(), "the process samples"),
        };
        let evidence =
            vec![Evidence {
                pid: None,
                what: what.clone(),
                from_s: v.start_uptime_s + s.start_s,
                to_s: v.start_uptime_s + s.start_s + took,
                samples: 0,
                detail: format!(
                "stopping for {took:.2} s of the shutdown's {:.2} s ({how}; boot {previous_boot}, \
                 `bootprint services TRACE --shutdown` on its trace){}",
                v.saved_s,
                if timed_out { ", ended by its stop timeout" } else { "" }
            ),
            }];
        let fix = match (v.source, timed_out) {
            (StopSource::Systemd, true) => format!(
                "{} does not stop on SIGTERM within its TimeoutStopSec, so every shutdown waits the \
                 whole timeout: find what its stop waits for (ExecStop=, the main process's \
                 SIGTERM handling; `journalctl -b -1 -u {}`). Once a stop of it ends by \
                 itself in a recorded shutdown, `bootprint enable --timeouts` gives it a \
                 timeout learned from its stops (docs/systemd.md, \"Learned stop timeouts\"); \
                 or time `systemctl stop {}` and put that with a margin in a drop-in \
                 (/etc/systemd/system/{}.d/stop.conf: [Service] TimeoutStopSec=...)",
                s.name, s.name, s.name, s.name
            ),
            (_, true) => format!(
                "the script {} was still stopping when its timeout ended it: see what its stop \
                 action waits for",
                s.name
            ),
            (StopSource::Systemd, false) => format!(
                "{} takes {took:.1} s to stop: see what its ExecStop= or its main process does \
                 on SIGTERM (`journalctl -b -1 -u {}`)",
                s.name, s.name
            ),
            _ => format!(
                "{} takes {took:.1} s to stop: see what its stop action waits for",
                s.name
            ),
        };
        out.push(Finding {
            id: if timed_out {
                "stop-timeout"
            } else {
                "slow-stop"
            }
            .into(),
            title: if timed_out {
                format!("{what} ran out its stop timeout in the last shutdown ({took:.1} s)")
            } else {
                format!("{what} took {took:.1} s to stop in the last shutdown")
            },
            evidence,
            gain_s: Some(took),
            gain_basis: "its whole stop, off the next shutdown if it stopped at once (an upper \
                         bound: what stops after it waits for it only when ordered so)"
                .into(),
            fix,
        });
    }
    out.extend(storage_findings(v, previous_boot));
    for p in &v.sigterm_survivors {
        out.push(Finding {
            id: "sigterm-ignored".into(),
            title: format!(
                "{} outlived the shutdown's SIGTERM by {:.1} s",
                p.name, p.outlived_s
            ),
            evidence: vec![Evidence {
                pid: Some(p.pid),
                what: p.name.clone(),
                from_s: v.start_uptime_s + p.sigterm_s,
                to_s: v.start_uptime_s + p.sigterm_s + p.outlived_s,
                samples: 0,
                detail: format!(
                    "alive {:.2} s after sendsigs' SIGTERM, until it was gone or killed (the \
                     process samples; boot {previous_boot}, `bootprint services TRACE \
                     --shutdown` on its trace)",
                    p.outlived_s
                ),
            }],
            gain_s: Some(p.outlived_s),
            gain_basis: "sendsigs' wait for it, off the next shutdown if it exited on SIGTERM \
                         (an upper bound: sendsigs polls once a second)"
                .into(),
            fix: format!(
                "{} ignores SIGTERM or takes long to exit on it, and no init script stops it \
                 first: give it an init script (or a stop action) that stops it before \
                 sendsigs, or make it exit on SIGTERM",
                p.name
            ),
        });
    }
    out
}

/// `slow-unmount` and `slow-sync` of the shutdown `v` ([`shutdown`]).
fn storage_findings(v: &crate::shutdown::ShutdownView, previous_boot: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let st = &v.storage;
    let size = |kib: Option<u64>| {
        kib.map_or("an unknown amount".to_string(), |k| {
            format!("{:.1} MiB", k as f64 / 1024.0)
        })
    };
    let where_ =
        format!("boot {previous_boot}, `bootprint services TRACE --shutdown` on its trace");
    if let Some(took) = st.unmount_s.filter(|u| *u >= limits::SLOW_UNMOUNT_S) {
        let evidence = v
            .stops
            .iter()
            .filter(|s| crate::shutdown::is_unmount(&s.name))
            .map(|s| {
                let d = s.duration_s(v.saved_s);
                Evidence {
                    pid: None,
                    what: s.name.clone(),
                    from_s: v.start_uptime_s + s.start_s,
                    to_s: v.start_uptime_s + s.start_s + d,
                    samples: 0,
                    detail: format!(
                        "unmounting for {d:.2} s of the shutdown's {:.2} s; {} dirty at the \
                         last sample ({where_})",
                        v.saved_s,
                        size(st.dirty_last_kib)
                    ),
                }
            })
            .collect();
        out.push(Finding {
            id: "slow-unmount".into(),
            title: format!(
                "unmounting took {took:.1} s in the last shutdown ({})",
                st.unmounts.join(", ")
            ),
            evidence,
            gain_s: Some(took),
            gain_basis: "the unmounts' whole span, off the next shutdown if they were at once \
                         (an upper bound: dirty data must still be written)"
                .into(),
            fix: "a file system is slow to unmount when a process still holds it (`fuser -vm \
                  MOUNTPOINT` before the reboot; stop it first), when it has much dirty data to \
                  write (see the sync figures), or when it is a network file system whose \
                  server or network is already gone: mark network mounts `_netdev` so they are \
                  unmounted before the network stops, and bound a mount unit's stop with \
                  `x-systemd.mount-timeout=` in fstab (systemd.mount(5))"
                .into(),
        });
    }
    if let Some(y) = st.sync.as_ref().filter(|y| y.took_s >= limits::SLOW_SYNC_S) {
        out.push(Finding {
            id: "slow-sync".into(),
            title: format!(
                "the sync at the end of the last shutdown took {:.1} s, writing {}",
                y.took_s,
                size(y.dirty_kib)
            ),
            evidence: vec![Evidence {
                pid: None,
                what: "sync after the save".into(),
                from_s: v.start_uptime_s + y.start_s,
                to_s: v.start_uptime_s + y.start_s + y.took_s,
                samples: 0,
                detail: format!(
                    "{} dirty before it, {} written while it ran; {} dirty at the shutdown's \
                     first sample, {} at most ({where_})",
                    size(y.dirty_kib),
                    size(y.written_kib),
                    size(st.dirty_first_kib),
                    size(st.dirty_peak_kib)
                ),
            }],
            gain_s: Some(y.took_s),
            gain_basis: "the whole sync, if the data were on disk before the reboot was asked \
                         for (an upper bound: it is still written, only earlier)"
                .into(),
            fix: "data written just before or during the shutdown waits in the page cache for \
                  this sync: start writeback sooner (`vm.dirty_background_bytes`, a lower \
                  `vm.dirty_expire_centisecs`, sysctl.d(5)) or have whatever writes it sync \
                  before the reboot is asked for (a maintenance job's own `sync -f`)"
                .into(),
        });
    }
    out
}

/// `idle-getty`: on a systemd boot, the login prompt came long after its getty's unit was
/// started (the account's `login_wait`): a getty is `Type=idle`, and systemd holds the exec
/// of such a service until its job queue is empty, 5 s at most (systemd.service(5),
/// `Type=idle`). The units still starting then are what held it.
pub fn idle_getty(
    a: &crate::account::LoginAccount,
    v: &crate::services::ServicesView,
) -> Option<Finding> {
    let wait = a.segments.iter().find(|s| s.name == "login_wait")?;
    let unit = v.login_unit.clone().unwrap_or_else(|| "the getty".into());
    let getty = unit.starts_with("getty@")
        || unit.starts_with("serial-getty@")
        || unit == "console-getty.service";
    if !getty || wait.seconds() < limits::IDLE_GETTY_MIN_S {
        return None;
    }
    let (from, to) = ((wait.from_s * 1e9) as u64, (wait.to_s * 1e9) as u64);
    let busy: Vec<&str> = v
        .spans
        .iter()
        .filter(|s| s.script != unit && s.start_ns < to && s.end_ns.is_none_or(|e| e > from))
        .map(|s| s.script.as_str())
        .collect();
    let shown: Vec<&str> = busy.iter().take(6).copied().collect();
    let more = busy.len().saturating_sub(shown.len());
    let held = if busy.is_empty() {
        "no unit of systemd-units.log was starting then (jobs that start nothing hold the queue too)".to_string()
    } else {
        format!(
            "{} unit(s) still starting then: {}{}",
            busy.len(),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    };
    Some(Finding {
        id: "idle-getty".into(),
        title: format!(
            "the login prompt came {:.2} s after {unit} started: systemd held the getty \
             (Type=idle) until its job queue was empty",
            wait.seconds()
        ),
        evidence: vec![Evidence {
            pid: None,
            what: format!("unit {unit}"),
            from_s: wait.from_s,
            to_s: wait.to_s,
            samples: 0,
            detail: format!(
                "started at {:.2} s (systemd-units.log), prompt at {:.2} s (the trace's \
                 {}); {held}",
                wait.from_s, wait.to_s, a.login
            ),
        }],
        gain_s: Some((wait.seconds() - limits::GETTY_OWN_S).max(0.0)),
        gain_basis: format!(
            "the wait less {:.1} s for the getty's own start",
            limits::GETTY_OWN_S
        ),
        fix: "empty the job queue sooner: start what no login needs after it (bootprint's late \
              units, `bootprint enable --late`, docs/systemd.md; units deferred by a condition \
              leave no job queued). Or, if interleaved console output is acceptable, a drop-in \
              `/etc/systemd/system/getty@.service.d/type.conf` with `[Service]` `Type=simple` \
              (systemd then execs the getty at once)"
            .into(),
    })
}

/// `late-unit`: on a systemd boot, services no login needs (the names of `late-service`)
/// that systemd started before the login unit became active, not on the login's critical
/// chain and not started on demand (a socket, path or timer starts those anyway). systemd
/// does not say how much of a unit's activation was CPU or I/O, so the gain is its
/// activation time before the login spread over the CPUs: an upper bound.
pub fn late_units(v: &crate::services::ServicesView, ncpus: u32) -> Vec<Finding> {
    use crate::services::Source;
    let login = match (v.source, v.reached.last()) {
        (Source::Systemd, Some((_, at))) => *at,
        _ => return vec![],
    };
    let chain: Vec<&str> = v
        .critical_chain()
        .iter()
        .map(|s| s.script.as_str())
        .collect();
    let mut ev = Vec::new();
    let mut names = Vec::new();
    let mut cost = 0.0;
    for s in &v.spans {
        let base = unit_base(&s.script);
        if !s.script.ends_with(".service")
            || s.start_ns >= login
            || !limits::LATE_SERVICES.contains(&base)
            || chain.contains(&s.script.as_str())
            || v.on_demand.contains(&s.script)
        {
            continue;
        }
        let to = s.end_ns.unwrap_or(login).min(login);
        let took = to.saturating_sub(s.start_ns) as f64 / 1e9;
        if took < limits::LATE_MIN_S {
            continue;
        }
        cost += took;
        names.push(s.script.clone());
        ev.push(Evidence {
            pid: None,
            what: format!("unit {}", s.script),
            from_s: s.start_ns as f64 / 1e9,
            to_s: to as f64 / 1e9,
            samples: 0,
            detail: format!(
                "activating for {took:.2} s before the login at {:.2} s (systemd's own \
                 timestamps, systemd-units.log)",
                login as f64 / 1e9
            ),
        });
    }
    if ev.is_empty() {
        return vec![];
    }
    let n = f64::from(ncpus.max(1));
    let first = names[0].clone();
    vec![Finding {
        id: "late-unit".into(),
        title: format!(
            "systemd started {} before the login though no login needs {}",
            names.join(", "),
            if names.len() == 1 { "it" } else { "them" }
        ),
        evidence: ev,
        gain_s: Some(cost / n),
        gain_basis: format!(
            "their activation time before the login ({cost:.2} s) spread over {n} CPUs: at \
             most what the login's path would get back (systemd does not say how much of it \
             was CPU or I/O)"
        ),
        fix: format!(
            "start them once the machine is idle after the login: turn on bootprint's late \
             units (`bootprint.late=1` on the kernel command line, or `late = true` in \
             [systemd] of /etc/bootprint/bootprint.toml; it learns at boot done which units \
             can wait and defers them with a drop-in `UNIT.d/50-bootprint-late.conf`, \
             docs/systemd.md). By hand, for each: `systemctl disable {first}`, then \
             `systemctl edit --force --full {}.timer` with `[Timer]` `OnBootSec=30s` and \
             `[Install]` `WantedBy=timers.target`, and `systemctl enable {}.timer` (an \
             ordering drop-in such as `After=getty.target` would hold the gettys back: they \
             wait for an empty job queue)",
            first.trim_end_matches(".service"),
            first.trim_end_matches(".service")
        ),
    }]
}

fn samples_in(m: &BootModel, index: usize, from: f64, to: f64) -> usize {
    usage::use_of(m, index, from, to).samples
}

/// Time a process spent not running (asleep or waiting) over a span: the span minus its CPU.
fn waiting_s(m: &BootModel, index: usize, from: f64, to: f64) -> (f64, usize) {
    let u = usage::use_of(m, index, from, to);
    ((to - from - u.cpu_s).max(0.0), u.samples)
}

fn network_wait(m: &BootModel, services: &[Service], out: &mut Vec<Finding>) {
    let Some(login) = m.milestones.login() else {
        return;
    };
    let login_t = login.t_s;
    let mut ev = Vec::new();
    let mut gain = 0.0;
    let mut seen_services = Vec::new();
    for (i, p) in m.processes.iter().enumerate() {
        let service = services::service_of(m, services, i);
        let by_name = limits::NETWORK_NAMES.contains(&p.name.as_str())
            || p.cmdline
                .as_deref()
                .is_some_and(|c| c.contains("wait-online"));
        let by_service = services
            .iter()
            .any(|s| s.index == i && limits::NETWORK_SERVICES.contains(&s.name.as_str()));
        if !(by_name || by_service) || p.start_s >= login_t {
            continue;
        }
        // Counted once: a network program inside a network service is the service's wait.
        if by_name {
            if let Some(s) = service {
                if limits::NETWORK_SERVICES.contains(&s.name.as_str()) && s.index != i {
                    continue;
                }
            }
        }
        let to = p.end_s.min(login_t);
        let (wait, samples) = waiting_s(m, i, p.start_s, to);
        if wait < limits::NETWORK_MIN_S || samples == 0 {
            continue;
        }
        if let Some(s) = service {
            seen_services.push(s.name.clone());
        }
        gain += wait;
        ev.push(Evidence {
            pid: Some(p.pid),
            what: p.cmdline.clone().unwrap_or_else(|| p.name.clone()),
            from_s: p.start_s,
            to_s: to,
            samples,
            detail: format!(
                "{:.2} s before the login at {login_t:.2} s, {wait:.2} s of it not on a CPU{}",
                to - p.start_s,
                service.map_or(String::new(), |s| format!(", in service {}", s.name))
            ),
        });
    }
    if ev.is_empty() {
        return;
    }
    seen_services.sort();
    seen_services.dedup();
    out.push(Finding {
        id: "network-wait".into(),
        title: format!(
            "the boot waited {gain:.2} s for the network before the login, which does not need it"
        ),
        evidence: ev,
        gain_s: Some(gain),
        gain_basis: "time the network programs spent off the CPU before the login (the \
                     login waited behind them)"
            .into(),
        fix: format!(
            "start the network in the background or after the login: `allow-hotplug` instead \
             of `auto` in /etc/network/interfaces, or drop `$network` from the Required-Start \
             of the services before the getty{}",
            if seen_services.is_empty() {
                String::new()
            } else {
                format!(" (services: {})", seen_services.join(", "))
            }
        ),
    });
}

/// Whether a process is a fork of its parent (a subshell): same name, and no command line of
/// its own (none read, or the parent's).
fn is_fork(m: &BootModel, i: usize) -> bool {
    let p = &m.processes[i];
    let Some(pi) = p.parent else { return false };
    let pp = &m.processes[pi];
    pp.name == p.name
        && match p.cmdline.as_deref() {
            None | Some("") => true,
            Some(c) => pp.cmdline.as_deref() == Some(c),
        }
}

/// The process a run belongs to: its parent, skipping forks (a script's `$(...)` subshells
/// run its programs, but the script is the caller). At most one step per process, so a
/// parent cycle cannot make it loop.
fn owner(m: &BootModel, i: usize) -> Option<usize> {
    let mut cur = m.processes[i].parent;
    for _ in 0..m.processes.len() {
        let pi = cur?;
        if !is_fork(m, pi) {
            return Some(pi);
        }
        cur = m.processes[pi].parent;
    }
    None
}

fn storms(m: &BootModel, out: &mut Vec<Finding>) {
    let end = m.milestones.boot_done.t_s;
    let runs_of = |i: usize| {
        let p = &m.processes[i];
        !p.kernel_thread && p.start_s <= end && p.pid > 1 && !is_fork(m, i)
    };
    // Runs of one program by one caller, counted over the boot.
    let mut groups: HashMap<(Option<usize>, &str), Vec<usize>> = HashMap::new();
    for i in (0..m.processes.len()).filter(|&i| runs_of(i)) {
        groups
            .entry((owner(m, i), m.processes[i].name.as_str()))
            .or_default()
            .push(i);
    }
    // modprobe -> sh -> modprobe chains: a program run under another run of itself.
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for i in (0..m.processes.len()).filter(|&i| runs_of(i)) {
        by_name
            .entry(m.processes[i].name.as_str())
            .or_default()
            .push(i);
    }
    let mut found: Vec<(String, Vec<usize>, Option<usize>)> = Vec::new();
    for ((parent, name), list) in &groups {
        found.push((name.to_string(), list.clone(), *parent));
    }
    for (name, list) in &by_name {
        let nested = list
            .iter()
            .filter(|&&i| {
                let mut cur = owner(m, i);
                let mut hops = 0;
                while let (Some(pi), true) = (cur, hops < 4) {
                    if m.processes[pi].name == *name {
                        return true;
                    }
                    cur = owner(m, pi);
                    hops += 1;
                }
                false
            })
            .count();
        if nested >= limits::STORM_MIN_RUNS {
            found.push((name.to_string(), list.clone(), None));
        }
    }
    let mut candidates = Vec::new();
    for (name, list, parent) in found {
        if list.len() < limits::STORM_MIN_RUNS || RECORDER_NAMES.contains(&name.as_str()) {
            continue;
        }
        // A storm is short runs one after another; long-lived workers started together
        // (udev's worker pool) are a pool, not a storm.
        let mut lives: Vec<f64> = list
            .iter()
            .map(|&i| (m.processes[i].end_s - m.processes[i].start_s).max(0.0))
            .collect();
        lives.sort_by(f64::total_cmp);
        if lives[lives.len() / 2] > limits::STORM_MAX_RUN_S {
            continue;
        }
        let life: f64 = list
            .iter()
            .map(|&i| (m.processes[i].end_s - m.processes[i].start_s).max(0.0))
            .sum();
        let cpu: f64 = list.iter().map(|&i| m.processes[i].cpu_s).sum();
        if life < limits::STORM_MIN_S {
            continue;
        }
        candidates.push((name, list, parent, life, cpu));
    }
    // Largest first; one finding per program name.
    candidates.sort_by(|a, b| b.3.total_cmp(&a.3));
    let mut named = Vec::new();
    for (name, list, parent, life, cpu) in candidates {
        if named.contains(&name) {
            continue;
        }
        named.push(name.clone());
        let first = &m.processes[list[0]];
        let from = list
            .iter()
            .map(|&i| m.processes[i].start_s)
            .fold(f64::MAX, f64::min);
        let to = list
            .iter()
            .map(|&i| m.processes[i].end_s)
            .fold(0.0, f64::max);
        let samples: usize = list.iter().map(|&i| m.processes[i].samples.len()).sum();
        let parent_text = match parent {
            Some(pi) => {
                let pp = &m.processes[pi];
                format!(
                    " by {} (pid {})",
                    pp.cmdline
                        .as_deref()
                        .filter(|c| !c.is_empty())
                        .unwrap_or(&pp.name),
                    pp.pid
                )
            }
            None => " (nested: runs started under another run of it)".into(),
        };
        let n = list.len();
        let pids: Vec<String> = list
            .iter()
            .take(5)
            .map(|&i| m.processes[i].pid.to_string())
            .collect();
        let gain = life * (n - 1) as f64 / n as f64;
        out.push(Finding {
            id: "storm".into(),
            title: format!(
                "{name} was run {n} times{parent_text} between {from:.2} s and {to:.2} s"
            ),
            evidence: vec![Evidence {
                pid: Some(first.pid),
                what: first
                    .cmdline
                    .clone()
                    .filter(|c| !c.is_empty())
                    .unwrap_or_else(|| name.clone()),
                from_s: from,
                to_s: to,
                samples,
                detail: format!(
                    "{n} processes named {name} (pids {}{}), {life:.2} s of summed lifetime, \
                     {cpu:.2} s of CPU",
                    pids.join(", "),
                    if n > 5 { ", ..." } else { "" }
                ),
            }],
            gain_s: Some(gain),
            gain_basis: format!(
                "the summed lifetime of all runs but one ({n} runs, {life:.2} s): what one \
                 batched call would save at most, if the runs were on the boot's path"
            ),
            fix: format!(
                "do the work of the {n} runs in one: one call with all arguments (`modprobe -a`, \
                 one `sed` or `awk` over all lines, a shell builtin instead of a program)"
            ),
        });
    }
}

fn sleeps(m: &BootModel, out: &mut Vec<Finding>) {
    let end = m.milestones.boot_done.t_s;
    for (i, p) in m.processes.iter().enumerate() {
        let cmd = p.cmdline.as_deref().unwrap_or("");
        let settle = p.name == "udevadm" && (cmd.contains(" settle") || cmd.contains(" wait"));
        let sleep = matches!(p.name.as_str(), "sleep" | "usleep");
        if !(settle || sleep) || p.start_s > end {
            continue;
        }
        let to = p.end_s.min(end);
        let (wait, samples) = waiting_s(m, i, p.start_s, to);
        if wait < limits::SLEEP_MIN_S || samples == 0 {
            continue;
        }
        let parent = p.parent.map(|pi| &m.processes[pi]);
        let parent_text = parent.map_or(String::new(), |pp| {
            format!(
                ", run by {} (pid {})",
                pp.cmdline
                    .as_deref()
                    .filter(|c| !c.is_empty())
                    .unwrap_or(&pp.name),
                pp.pid
            )
        });
        let (id, title, fix) = if settle {
            (
                "settle",
                format!("`{cmd}` waited {wait:.2} s for udev to finish all events"),
                "wait only for the devices the next step needs (`udevadm wait /dev/...`), or \
                 load slow-settling modules (usb-storage) before udev so the settle overlaps \
                 other work (seed 000)"
                    .to_string(),
            )
        } else {
            (
                "sleep",
                format!(
                    "`{}` slept {wait:.2} s during the boot",
                    if cmd.is_empty() { &p.name } else { cmd }
                ),
                "replace the fixed sleep by waiting for the condition it stands for (a device, \
                 a socket, a file), or move it off the boot's path"
                    .to_string(),
            )
        };
        out.push(Finding {
            id: id.into(),
            title,
            evidence: vec![Evidence {
                pid: Some(p.pid),
                what: if cmd.is_empty() {
                    p.name.clone()
                } else {
                    cmd.to_string()
                },
                from_s: p.start_s,
                to_s: to,
                samples,
                detail: format!(
                    "alive {:.2} s, {:.2} s of CPU{parent_text}",
                    to - p.start_s,
                    p.cpu_s
                ),
            }],
            gain_s: Some(wait),
            gain_basis: "the time it spent off the CPU before boot done (its caller waited)".into(),
            fix,
        });
    }
}

fn late_services(m: &BootModel, services: &[Service], out: &mut Vec<Finding>) {
    let Some(login) = m.milestones.login() else {
        return;
    };
    let login_t = login.t_s;
    let mut ev = Vec::new();
    let mut cost = 0.0;
    let mut names = Vec::new();
    for s in services {
        if s.start_s >= login_t || !limits::LATE_SERVICES.contains(&s.name.as_str()) {
            continue;
        }
        // The service's whole subtree, up to the login.
        let mut cpu = 0.0;
        let mut blocked = 0.0;
        let mut samples = 0;
        for (i, _) in m.processes.iter().enumerate() {
            if services::service_of(m, services, i).is_some_and(|x| x.index == s.index) {
                let u = usage::use_of(m, i, s.start_s, login_t);
                cpu += u.cpu_s;
                blocked += u.blocked_s;
                samples += u.samples;
            }
        }
        let to = s.end_s.min(login_t);
        if cpu + blocked < limits::LATE_MIN_S || samples == 0 {
            continue;
        }
        cost += cpu + blocked;
        names.push(s.name.clone());
        ev.push(Evidence {
            pid: Some(s.pid),
            what: format!("service {}", s.name),
            from_s: s.start_s,
            to_s: to,
            samples,
            detail: format!(
                "ran {:.2} s before the login at {login_t:.2} s: {cpu:.2} s of CPU and \
                 {blocked:.2} s waiting on I/O",
                to - s.start_s
            ),
        });
    }
    if ev.is_empty() {
        return;
    }
    let ncpus = f64::from(m.system.ncpus.max(1));
    let gain = cost / ncpus;
    out.push(Finding {
        id: "late-service".into(),
        title: format!(
            "{} started before the login though no login needs {}",
            names.join(", "),
            if names.len() == 1 { "it" } else { "them" }
        ),
        evidence: ev,
        gain_s: Some(gain),
        gain_basis: format!(
            "their CPU and I/O-wait time before the login ({cost:.2} s) spread over {ncpus} CPUs: \
             what the login's path would get back"
        ),
        fix: "start them after the login, when the boot is idle (bootprint rc late services; \
              with insserv, make them depend on `$all` or move them to a later runlevel)"
            .into(),
    });
}

/// Busy share of all CPUs per CPU interval, with the recorder's own use taken out.
fn busy_series(m: &BootModel) -> Vec<(f64, f64, f64)> {
    let ncpus = f64::from(m.system.ncpus.max(1));
    let recorders: Vec<usize> = (0..m.processes.len())
        .filter(|&i| RECORDER_NAMES.contains(&m.processes[i].name.as_str()))
        .collect();
    m.cpu
        .iter()
        .map(|c| {
            let from = c.t_s - c.dt_s;
            let own: f64 = recorders
                .iter()
                .map(|&i| usage::use_of(m, i, from, c.t_s).cpu_s)
                .sum::<f64>()
                / c.dt_s.max(1e-9)
                / ncpus;
            (from, c.t_s, (c.user + c.sys - own).max(0.0))
        })
        .collect()
}

fn disk_util_at(m: &BootModel, t: f64) -> f64 {
    let i = m.disk.partition_point(|d| d.t_s < t - 1e-6);
    m.disk.get(i).map_or(0.0, |d| d.util)
}

/// Maximal stretches of `[from, to]` made of half-second pieces for which `pred(a, b)`
/// holds (pieces, so that single busy ticks at 50 Hz do not split a stretch).
fn runs(from: f64, to: f64, pred: impl Fn(f64, f64) -> bool) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut start: Option<f64> = None;
    // Pieces grow past half a second only for a span of days: a trace's times are
    // whatever its files hold, and at 2^53 half-seconds `t + 0.5 == t` would never end.
    let step = ((to - from) / 1e6).max(0.5);
    let mut t = from;
    while t < to - 1e-9 {
        let u = (t + step).min(to);
        if u <= t {
            break;
        }
        if pred(t, u) {
            start.get_or_insert(t);
        } else if let Some(s) = start.take() {
            out.push((s, t));
        }
        t = u;
    }
    if let Some(s) = start {
        out.push((s, to));
    }
    out
}

fn idle_gaps(m: &BootModel, out: &mut Vec<Finding>) {
    let from = m
        .milestones
        .kernel
        .as_ref()
        .map_or(m.first_sample_s, |k| k.t_s)
        .max(m.first_sample_s);
    let to = m
        .milestones
        .login()
        .map_or(m.milestones.boot_done.t_s, |l| l.t_s);
    let busy = busy_series(m);
    let mean = |a: f64, b: f64| {
        let (mut t, mut bsum, mut d) = (0.0, 0.0, 0.0);
        // Only the intervals that overlap [a, b] (the series is in time order): a walk over
        // all of them for every piece was quadratic (a fuzzed trace of days took seconds).
        let first = busy.partition_point(|iv| iv.1 <= a);
        for &(x, y, v) in busy[first..].iter().take_while(|iv| iv.0 < b) {
            let ov = y.min(b) - x.max(a);
            if ov > 0.0 {
                t += ov;
                bsum += v * ov;
                d += disk_util_at(m, y) * ov;
            }
        }
        if t > 0.0 {
            Some((bsum / t, d / t))
        } else {
            None
        }
    };
    let gaps = runs(from, to, |a, b| {
        mean(a, b).is_some_and(|(c, d)| c < limits::GAP_CPU && d < limits::GAP_DISK)
    });
    for (a, b) in gaps {
        // The pieces are half a second; widen the ends to the sample intervals that are
        // idle on their own, so a gap is not cut at a piece boundary.
        let quiet = |y: f64, v: f64| v < limits::GAP_CPU && disk_util_at(m, y) < limits::GAP_DISK;
        let (a0, b0) = (a, b);
        let mut b = b;
        for &(x, y, v) in busy.iter().filter(|iv| iv.1 > b0 + 1e-9) {
            if x <= b + 1e-6 && quiet(y, v) && y <= to {
                b = y;
            } else {
                break;
            }
        }
        let mut a = a;
        for &(x, y, v) in busy.iter().rev().filter(|iv| iv.0 < a0 - 1e-9) {
            if y >= a - 1e-6 && quiet(y, v) && x >= from {
                a = x;
            } else {
                break;
            }
        }
        if b - a < limits::GAP_MIN_S {
            continue;
        }
        let (c, d) = mean(a, b).unwrap_or((0.0, 0.0));
        // Who was alive and asleep across the whole gap, outside the kernel: the waiters.
        let mut waiters: Vec<(usize, f64)> = m
            .processes
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                !p.kernel_thread
                    && p.pid > 1
                    && p.start_s <= a + 0.05
                    && p.end_s >= b - 0.05
                    && !p.alive_at_end
                    && !RECORDER_NAMES.contains(&p.name.as_str())
            })
            .map(|(i, p)| (i, p.start_s))
            .collect();
        // The most recently started waiter is the closest to what the boot waits for.
        waiters.sort_by(|x, y| y.1.total_cmp(&x.1));
        let samples = m.cpu.iter().filter(|s| s.t_s > a && s.t_s <= b).count();
        let mut ev = vec![Evidence {
            pid: None,
            what: "CPU and disk idle".into(),
            from_s: a,
            to_s: b,
            samples,
            detail: format!(
                "mean CPU busy {:.0}% of all CPUs (recorder left out), busiest disk {:.0}% busy",
                c * 100.0,
                d * 100.0
            ),
        }];
        for &(i, _) in waiters.iter().take(3) {
            let p = &m.processes[i];
            ev.push(Evidence {
                pid: Some(p.pid),
                what: p
                    .cmdline
                    .clone()
                    .filter(|c| !c.is_empty())
                    .unwrap_or_else(|| p.name.clone()),
                from_s: p.start_s,
                to_s: p.end_s,
                samples: samples_in(m, i, a, b),
                detail: "alive across the gap without using the CPU: a likely waiter".into(),
            });
        }
        out.push(Finding {
            id: "idle-gap".into(),
            title: format!(
                "CPU and disk were both idle for {:.2} s ({a:.2} s to {b:.2} s) before the login",
                b - a
            ),
            evidence: ev,
            gain_s: Some(b - a),
            gain_basis: "the whole gap: nothing used the machine, so the boot was waiting \
                         (a timer, a device, the network)"
                .into(),
            fix: "find what the boot waits for here (the waiters listed) and start the next \
                  work without it, or make the wait event-driven"
                .into(),
        });
    }
}

fn disk_bound(m: &BootModel, out: &mut Vec<Finding>) {
    let from = m.first_sample_s;
    let to = m
        .milestones
        .login()
        .map_or(m.milestones.boot_done.t_s, |l| l.t_s);
    let stretches = runs(from, to, |a, b| {
        usage::load(m, a, b).is_some_and(|(_, io, util)| {
            util >= limits::DISK_BOUND_UTIL || io >= limits::DISK_BOUND_IOWAIT
        })
    });
    for (a, b) in stretches {
        if b - a < limits::DISK_BOUND_MIN_S {
            continue;
        }
        let (busy, io, util) = usage::load(m, a, b).unwrap_or((0.0, 0.0, 0.0));
        let read = usage::bytes_read(m, a, b);
        let samples = m.disk.iter().filter(|s| s.t_s > a && s.t_s <= b).count();
        let mut ev = vec![Evidence {
            pid: None,
            what: "disk busy".into(),
            from_s: a,
            to_s: b,
            samples,
            detail: format!(
                "busiest disk {:.0}% busy, iowait {:.0}% of all CPUs, CPU busy {:.0}%, {:.1} MB read",
                util * 100.0,
                io * 100.0,
                busy * 100.0,
                read / 1e6
            ),
        }];
        for u in usage::window(m, a, b)
            .into_iter()
            .filter(|u| u.blocked_s > 0.0)
            .take(3)
        {
            ev.push(Evidence {
                pid: Some(u.pid),
                what: u
                    .cmdline
                    .clone()
                    .filter(|c| !c.is_empty())
                    .unwrap_or(u.name.clone()),
                from_s: a,
                to_s: b,
                samples: u.samples,
                detail: format!("{:.2} s in state D (waiting for the disk)", u.blocked_s),
            });
        }
        // CPU time lost to iowait in the stretch, in wall seconds over all CPUs.
        let gain = io * (b - a);
        out.push(Finding {
            id: "disk-bound".into(),
            title: format!(
                "the boot was disk-bound for {:.2} s ({a:.2} s to {b:.2} s, {:.1} MB read)",
                b - a,
                read / 1e6
            ),
            evidence: ev,
            gain_s: Some(gain.max(0.0)),
            gain_basis: "the time the CPUs sat in iowait during the stretch: readahead at idle \
                         priority from the start of the boot reads the same blocks earlier, in \
                         fewer, larger requests"
                .into(),
            fix: match &m.readahead {
                None => "enable readahead (`bootprint.readahead=1` or `[readahead] enabled = \
                         true`): it learns what this boot read and replays it from the start of \
                         the next"
                    .into(),
                // This boot replayed a pack and still waited on the disk: the pack misses
                // what the boot reads, or was evicted before use.
                Some(r) => format!(
                    "this boot replayed a readahead pack ({:.1} MB, {:.0}% still cached at boot \
                     done) and still waited on the disk: learn the pack again (`bootprint \
                     readahead relearn`) so it holds what the boot reads now",
                    r.replayed_bytes as f64 / 1e6,
                    r.ratio * 100.0
                ),
            },
        });
    }
}

fn kernel_findings(k: &kernel::Report, out: &mut Vec<Finding>) {
    for f in &k.findings {
        let evidence: Vec<Evidence> = f
            .evidence
            .iter()
            .map(|e| Evidence {
                pid: None,
                what: format!("dmesg line {}", e.lineno),
                from_s: e.us.map_or(0.0, |u| u as f64 / 1e6),
                to_s: e.us.map_or(0.0, |u| u as f64 / 1e6),
                samples: 0,
                detail: e.text.clone(),
            })
            .collect();
        out.push(Finding {
            id: format!("kernel:{}", f.id),
            title: f.title.clone(),
            evidence,
            gain_s: f.gain_us.map(|g| g as f64 / 1e6),
            gain_basis: f.gain_basis.clone(),
            fix: f.advice.clone(),
        });
    }
}
