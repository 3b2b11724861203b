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
    let (mut userspace, mut finish) = (0, 0);
    for (i, line) in text.lines().enumerate() {
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let slot = match k {
            "UserspaceTimestampMonotonic" => &mut userspace,
            "FinishTimestampMonotonic" => &mut finish,
            _ => continue,
        };
        *slot = v.trim().parse().map_err(|_| {
            format!(
                "systemctl show (manager), line {}: expected microseconds, found {v:?}",
                i + 1
            )
        })?;
    }
    Ok((userspace, finish))
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
