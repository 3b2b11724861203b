//! Asks the running manager for its graph: `systemctl list-units --all` for every loaded
//! unit (a oneshot that already ran is inactive, and `systemctl show '*'` would leave it
//! out), then `systemctl show` of those, then the manager's own boot timestamps. The one
//! place bootprint asks systemctl: the recorder keeps the answer in the trace (the units'
//! timing) and chooses the late units from the same answer.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::late::{choose, Choice, Pins};
use crate::show::{self, PROPERTIES};

/// The unit names of `systemctl list-units --all --plain --no-legend` output (the first
/// column; a `●` marks a unit in trouble).
pub fn unit_names(list: &str) -> Vec<String> {
    list.lines()
        .filter_map(|l| {
            l.trim_start()
                .trim_start_matches('●')
                .split_whitespace()
                .next()
        })
        .filter(|n| n.contains('.'))
        .map(String::from)
        .collect()
}

/// Runs a command with a deadline; its standard output as text, or why not.
pub fn output_within(cmd: &mut Command, limit: Duration) -> Result<String, String> {
    let name = name_of(cmd);
    let bytes = output_bytes_within(cmd, limit)?;
    String::from_utf8(bytes).map_err(|_| format!("{name} printed something not UTF-8"))
}

fn name_of(cmd: &Command) -> String {
    let name = std::iter::once(cmd.get_program())
        .chain(cmd.get_args().take(1))
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    format!("`{name}`")
}

/// Runs a command with a deadline; its standard output, or why not.
pub fn output_bytes_within(cmd: &mut Command, limit: Duration) -> Result<Vec<u8>, String> {
    // The program and its first argument name it: `systemctl show` has hundreds of unit
    // names after that, too many for a message.
    let name = name_of(cmd);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {name}: {e}"))?;
    let mut out = child.stdout.take().expect("piped above");
    // Read on a thread: a full pipe would otherwise keep the child from exiting.
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t0.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{name} did not finish within {limit:?}"));
            }
            Err(e) => return Err(format!("waiting for {name}: {e}")),
        }
    };
    let bytes = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("{name} failed: {status}"));
    }
    Ok(bytes)
}

/// What the manager said: every loaded unit, and its own boot timestamps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    /// Every loaded unit, with its dependencies and state-change times.
    pub units: Vec<show::Unit>,
    /// `UserspaceTimestampMonotonic`: when the manager started (CLOCK_MONOTONIC µs).
    pub userspace_us: u64,
    /// `FinishTimestampMonotonic`: when the manager's initial transaction was done (0: not
    /// yet); `systemd-analyze critical-chain` ignores units activated after it.
    pub finish_us: u64,
}

/// The manager's `UserspaceTimestampMonotonic` and `FinishTimestampMonotonic` from
/// `systemctl show --property=...` without a unit (`Key=Value` lines; absent ones are 0).
pub fn manager_times(text: &str) -> Result<(u64, u64), String> {
    Stages::parse(text).map(|s| (s.userspace_us, s.finish_us))
}

/// A trace's `systemd-units.log` of what the manager said (or why it said nothing):
/// the recorder's at boot done, `bootprint report --systemd`'s of the running boot.
/// `offset_ns` is CLOCK_BOOTTIME minus CLOCK_MONOTONIC.
pub fn units_log(asked: Result<&Graph, &String>, offset_ns: u64) -> trace::units::Units {
    let mut out = trace::units::Units {
        boottime_minus_monotonic_ns: Some(offset_ns),
        ..Default::default()
    };
    match asked {
        Ok(g) => {
            out.userspace_us = g.userspace_us;
            out.finish_us = g.finish_us;
            out.units = g
                .units
                .iter()
                .map(|u| trace::units::Unit {
                    id: u.id.clone(),
                    service_type: u.service_type.clone(),
                    load_state: u.load_state.clone(),
                    active_state: u.active_state.clone(),
                    sub_state: u.sub_state.clone(),
                    result: u.result.clone(),
                    activating_us: u.times.activating_us,
                    active_us: u.times.active_us,
                    deactivating_us: u.times.deactivating_us,
                    inactive_us: u.times.inactive_us,
                    deps: trace::units::DEPS
                        .iter()
                        .filter(|d| !u.dep(d).is_empty())
                        .map(|d| (d.to_string(), u.dep(d).to_vec()))
                        .collect(),
                })
                .collect();
        }
        Err(err) => out.notes.push(format!("systemd units not read: {err}")),
    }
    out
}

/// The manager's boot timestamps, as `systemd-analyze time` reads them: the firmware's and
/// the loader's (µs before the kernel started, 0 when they did not say), the initrd's and
/// userspace's start and the initial transaction's end (CLOCK_MONOTONIC µs; 0: none).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stages {
    /// `FirmwareTimestampMonotonic`.
    pub firmware_us: u64,
    /// `LoaderTimestampMonotonic`.
    pub loader_us: u64,
    /// `InitRDTimestampMonotonic`.
    pub initrd_us: u64,
    /// `UserspaceTimestampMonotonic`.
    pub userspace_us: u64,
    /// `FinishTimestampMonotonic`.
    pub finish_us: u64,
}

/// The properties [`Stages`] reads.
pub const STAGE_PROPERTIES: &str = "FirmwareTimestampMonotonic,LoaderTimestampMonotonic,InitRDTimestampMonotonic,UserspaceTimestampMonotonic,FinishTimestampMonotonic";

impl Stages {
    /// From `systemctl show --property=STAGE_PROPERTIES` of the manager.
    pub fn parse(text: &str) -> Result<Stages, String> {
        let mut s = Stages::default();
        for (i, line) in text.lines().enumerate() {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            let slot = match k {
                "FirmwareTimestampMonotonic" => &mut s.firmware_us,
                "LoaderTimestampMonotonic" => &mut s.loader_us,
                "InitRDTimestampMonotonic" => &mut s.initrd_us,
                "UserspaceTimestampMonotonic" => &mut s.userspace_us,
                "FinishTimestampMonotonic" => &mut s.finish_us,
                _ => continue,
            };
            *slot = v.trim().parse().map_err(|_| {
                format!(
                    "systemctl show (manager), line {}: expected microseconds, found {v:?}",
                    i + 1
                )
            })?;
        }
        Ok(s)
    }

    /// The stages in seconds, by systemd-analyze's rules (systemd's
    /// src/analyze/analyze-time-data.c): firmware (firmware less loader), loader, kernel (to
    /// the initrd, else to userspace), initrd (to userspace), userspace (to the initial
    /// transaction's end) and the total (firmware + loader + the end); the ones the manager
    /// has no timestamp for are None, and all but the first three are None before the end.
    pub fn seconds(&self) -> Vec<(&'static str, Option<f64>)> {
        let s = |us: u64| us as f64 / 1e6;
        let done = self.finish_us > 0;
        let kernel_end = if self.initrd_us > 0 {
            self.initrd_us
        } else {
            self.userspace_us
        };
        vec![
            (
                "firmware",
                (self.firmware_us > 0).then(|| s(self.firmware_us.saturating_sub(self.loader_us))),
            ),
            ("loader", (self.loader_us > 0).then(|| s(self.loader_us))),
            ("kernel", (kernel_end > 0).then(|| s(kernel_end))),
            (
                "initrd",
                (self.initrd_us > 0).then(|| s(self.userspace_us.saturating_sub(self.initrd_us))),
            ),
            (
                "userspace",
                done.then(|| s(self.finish_us.saturating_sub(self.userspace_us))),
            ),
            ("total", done.then(|| s(self.firmware_us + self.finish_us))),
        ]
    }
}

/// Asks the running manager for its [`Stages`], within `limit`.
pub fn stages(systemctl: &Path, limit: Duration) -> Result<Stages, String> {
    let out = output_within(
        Command::new(systemctl).args(["show", &format!("--property={STAGE_PROPERTIES}")]),
        limit,
    )?;
    Stages::parse(&out)
}

/// How long each systemctl call may take. `systemctl show` of some 200 units is a D-Bus
/// round trip per unit: 21 s were not enough in a test-bed guest under software emulation
/// on a loaded host. It runs after boot done, so waiting costs the boot nothing.
pub const QUERY_LIMIT: Duration = Duration::from_secs(90);

/// Asks `systemctl` (the binary at `systemctl`) for every loaded unit and the manager's
/// boot timestamps; each call has a deadline of `limit`.
pub fn query(systemctl: &Path, limit: Duration) -> Result<Graph, String> {
    let list = output_within(
        Command::new(systemctl).args([
            "list-units",
            "--all",
            "--plain",
            "--no-legend",
            "--no-pager",
        ]),
        limit,
    )?;
    let names = unit_names(&list);
    if names.is_empty() {
        return Err("systemctl list-units listed no units".into());
    }
    let shown = output_within(
        Command::new(systemctl)
            .arg("show")
            .arg(format!("--property={PROPERTIES}"))
            .arg("--")
            .args(&names),
        limit,
    )?;
    let units = show::parse(&shown).map_err(|e| {
        format!(
            "systemctl show, line {}: expected Key=Value, found {:?}",
            e.line, e.found
        )
    })?;
    let manager = output_within(
        Command::new(systemctl).args([
            "show",
            "--property=UserspaceTimestampMonotonic,FinishTimestampMonotonic",
        ]),
        limit,
    )?;
    let (userspace_us, finish_us) = manager_times(&manager)?;
    Ok(Graph {
        units,
        userspace_us,
        finish_us,
    })
}

/// Asks `systemctl` and chooses.
pub fn learn(systemctl: &Path, pins: &Pins) -> Result<Choice, String> {
    let graph = query(systemctl, QUERY_LIMIT)?;
    Ok(choose(&graph.units, pins))
}

/// Whether `systemctl list-jobs --no-legend` output has the reboot's start job queued
/// (`reboot.target` or `systemd-reboot.service`, as `systemctl reboot` and logind queue it).
pub fn reboot_job_in(list_jobs: &str) -> bool {
    list_jobs.lines().any(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        matches!(
            w.as_slice(),
            [_, "reboot.target" | "systemd-reboot.service", "start", ..]
        )
    })
}

/// Whether the running manager is rebooting (a stop can be part of a reboot, a poweroff,
/// a `systemctl stop`...): asks `systemctl list-jobs`, within `limit`.
pub fn rebooting(systemctl: &Path, limit: Duration) -> Result<bool, String> {
    let out = output_within(
        Command::new(systemctl).args(["list-jobs", "--no-legend", "--no-pager"]),
        limit,
    )?;
    Ok(reboot_job_in(&out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_units_file_keeps_the_graph_or_says_why_not() {
        let mut cron = crate::show::Unit {
            id: "cron.service".into(),
            active_state: "active".into(),
            ..Default::default()
        };
        cron.times.activating_us = 2_000_000;
        cron.times.active_us = 2_000_100;
        cron.deps
            .insert("After".into(), vec!["basic.target".into()]);
        cron.deps.insert("Names".into(), vec!["not-a-dep".into()]);
        let g = Graph {
            units: vec![cron],
            userspace_us: 1_000_000,
            finish_us: 9_000_000,
        };
        let f = units_log(Ok(&g), 5);
        assert_eq!(f.boottime_minus_monotonic_ns, Some(5));
        assert_eq!((f.userspace_us, f.finish_us), (1_000_000, 9_000_000));
        assert_eq!(f.units[0].dep("After"), ["basic.target"]);
        assert_eq!(
            f.units[0].deps.len(),
            1,
            "only the dependency lists the file keeps"
        );
        assert_eq!(f.boottime_ns(f.units[0].active_us), 2_000_100_005);
        let err = "`systemctl show` did not finish within 90s".to_string();
        let f = units_log(Err(&err), 0);
        assert!(f.units.is_empty());
        assert_eq!(
            f.notes,
            ["systemd units not read: `systemctl show` did not finish within 90s"]
        );
        let text = trace::units::write(&f);
        assert!(
            text.contains("note what=systemd%20units%20not%20read"),
            "{text}"
        );
    }

    #[test]
    fn stages_are_systemd_analyze_times() {
        // A UEFI boot with an initrd, as `systemctl show` of the manager prints it.
        let s = Stages::parse(
            "FirmwareTimestampMonotonic=3500000\nLoaderTimestampMonotonic=1200000\n\
             InitRDTimestampMonotonic=900000\nUserspaceTimestampMonotonic=2400000\n\
             FinishTimestampMonotonic=7400000\n",
        )
        .unwrap();
        let secs: Vec<(&str, Option<f64>)> = s.seconds();
        assert_eq!(
            secs,
            [
                ("firmware", Some(2.3)),
                ("loader", Some(1.2)),
                ("kernel", Some(0.9)),
                ("initrd", Some(1.5)),
                ("userspace", Some(5.0)),
                ("total", Some(10.9)),
            ]
        );
        // BIOS, no initrd, not finished yet: what is unknown says so.
        let s = Stages::parse("UserspaceTimestampMonotonic=2400000\nFinishTimestampMonotonic=0\n")
            .unwrap();
        assert_eq!(
            s.seconds(),
            [
                ("firmware", None),
                ("loader", None),
                ("kernel", Some(2.4)),
                ("initrd", None),
                ("userspace", None),
                ("total", None),
            ]
        );
        assert!(Stages::parse("LoaderTimestampMonotonic=soon\n")
            .unwrap_err()
            .contains("line 1: expected microseconds"));
    }

    /// A reboot's jobs as systemd 257 lists them while its units stop; a poweroff's and a
    /// stop of the unit alone are not a reboot.
    #[test]
    fn a_queued_reboot_is_found_in_the_job_list() {
        let rebooting = "  912 reboot.target                  start waiting\n\
                         \x20 915 systemd-reboot.service          start waiting\n\
                         \x20 904 bootprint-kexec.service        stop  running\n";
        assert!(reboot_job_in(rebooting));
        assert!(!reboot_job_in(
            "  700 poweroff.target start waiting\n  701 systemd-poweroff.service start waiting\n"
        ));
        assert!(!reboot_job_in(
            "  42 bootprint-kexec.service stop running\n"
        ));
        assert!(!reboot_job_in("  42 reboot.target stop waiting\n"));
        assert!(!reboot_job_in(""));
    }

    #[test]
    fn names_from_a_plain_listing() {
        let list = "  cron.service   loaded active running Regular background\n\
● auditd.service not-found inactive dead auditd.service\n\
avahi-daemon.socket loaded active running Avahi\n";
        assert_eq!(
            unit_names(list),
            ["cron.service", "auditd.service", "avahi-daemon.socket"]
        );
    }

    #[test]
    fn manager_times_read_and_refuse_garbage() {
        let text = "UserspaceTimestampMonotonic=1504223\nFinishTimestampMonotonic=9912000\n";
        assert_eq!(manager_times(text), Ok((1504223, 9912000)));
        assert_eq!(manager_times("FinishTimestampMonotonic=0\n"), Ok((0, 0)));
        let e = manager_times("UserspaceTimestampMonotonic=x\n").unwrap_err();
        assert!(e.contains("line 1: expected microseconds"), "{e}");
    }

    #[test]
    fn a_command_that_outlives_its_deadline_is_killed() {
        let t0 = Instant::now();
        let r = output_within(Command::new("sleep").arg("10"), Duration::from_millis(100));
        let e = r.unwrap_err();
        assert_eq!(e, "`sleep 10` did not finish within 100ms");
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert_eq!(
            output_within(Command::new("echo").arg("hi"), Duration::from_secs(5)).unwrap(),
            "hi\n"
        );
        assert!(output_within(&mut Command::new("false"), Duration::from_secs(5)).is_err());
    }
}
