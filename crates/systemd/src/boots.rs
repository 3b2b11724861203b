//! What systemd's journal says about a boot's start, for a machine booted without the
//! recorder: the manager's "Startup finished" entry (its stages) and its start jobs
//! ("Starting X...", "Started X.", a start that failed), each unit's first after userspace
//! began. Read with `journalctl -b BOOT -o export` from the persistent journal (or a copied
//! one, `--directory`), for any past boot, where `systemctl` can only say the running one.
//!
//! The journal keeps no dependencies, so a boot read here has blame but no critical chain;
//! and no firmware or loader time (the entry's fields are the kernel's, the initrd's and
//! userspace's). Its times are when journald stamped each entry, not the manager's own
//! (the `late` check measured 2 ms median, 24 ms at most, over 55 units of a Debian 13 boot).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::journal::{export_entries, field};
use crate::learn::Stages;

/// `SD_MESSAGE_STARTUP_FINISHED` (systemd's sd-messages.h): the manager's initial
/// transaction is done; `KERNEL_USEC`, `INITRD_USEC` (with an initrd), `USERSPACE_USEC`.
pub const STARTUP_FINISHED: &str = "b07a249cd024414a82dd00cd181378ff";
/// `SD_MESSAGE_UNIT_STARTING`: a start job began ("Starting X...").
pub const UNIT_STARTING: &str = "7d4958e842da4a758f6c1cdc7b36dcc5";
/// `SD_MESSAGE_UNIT_STARTED`: a start job is done ("Started X.", "Reached target X.").
pub const UNIT_STARTED: &str = "39f53479d3a045ac8e11786248231fbf";
/// `SD_MESSAGE_UNIT_FAILED`: a start job failed (`JOB_RESULT`: `failed`, `timeout`,
/// `dependency`...).
pub const UNIT_START_FAILED: &str = "be02cf6855d2428ba40df7e9d022f03d";

/// One boot as the journal recorded its start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JournalBoot {
    /// `_BOOT_ID`, 32 hex digits.
    pub boot_id: String,
    /// From "Startup finished" (firmware and loader 0: the entry does not say); all 0 when
    /// the boot never finished starting.
    pub stages: Stages,
    /// The units' start jobs as a trace's `systemd-units.log` would hold them (CLOCK_MONOTONIC
    /// µs; no dependencies; time base offset 0).
    pub units: trace::units::Units,
}

impl JournalBoot {
    /// When the first text login (a getty) started, s since the kernel started.
    pub fn text_login_s(&self) -> Option<f64> {
        text_login_s(&self.units)
    }
}

/// When the first getty of `units` became active, s since the kernel started (their
/// CLOCK_MONOTONIC, as systemd-analyze gives it).
pub fn text_login_s(units: &trace::units::Units) -> Option<f64> {
    units
        .units
        .iter()
        .filter(|u| text_login_unit(&u.id) && u.active_us > 0)
        .map(|u| u.active_us as f64 / 1e6)
        .min_by(f64::total_cmp)
}

/// A getty: the text login.
pub fn text_login_unit(id: &str) -> bool {
    [
        "getty@",
        "serial-getty@",
        "console-getty.",
        "container-getty@",
    ]
    .iter()
    .any(|p| id.starts_with(p))
}

/// A boot as `journalctl -b` names it: an offset (0 the newest, -1 the one before; 1 the
/// oldest) or a boot id (with or without dashes). Anything else is refused, saying so.
pub fn check_selector(s: &str) -> Result<String, String> {
    if s.parse::<i64>().is_ok() {
        return Ok(s.to_string());
    }
    let id: String = s.chars().filter(|c| *c != '-').collect();
    if id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()) {
        return Ok(id.to_ascii_lowercase());
    }
    Err(format!(
        "{s:?}: expected a boot as journalctl -b takes it: an offset (0, -1, ...) or a boot id"
    ))
}

/// Reads a boot from `journalctl -o export` output restricted to the manager's entries of
/// that boot ([`Journal::boot`]'s query).
pub fn parse_boot(bytes: &[u8]) -> JournalBoot {
    let entries = export_entries(bytes);
    let mut boot = JournalBoot::default();
    let num = |e: &crate::journal::Fields, k: &str| field(e, k).and_then(|v| v.parse::<u64>().ok());
    if let Some(e) = entries
        .iter()
        .find(|e| field(e, "MESSAGE_ID") == Some(STARTUP_FINISHED))
    {
        let kernel = num(e, "KERNEL_USEC").unwrap_or(0);
        let initrd = num(e, "INITRD_USEC").unwrap_or(0);
        let userspace = num(e, "USERSPACE_USEC").unwrap_or(0);
        boot.stages = Stages {
            firmware_us: 0,
            loader_us: 0,
            initrd_us: if initrd > 0 { kernel } else { 0 },
            userspace_us: kernel + initrd,
            finish_us: kernel + initrd + userspace,
        };
    }
    boot.boot_id = entries
        .iter()
        .find_map(|e| field(e, "_BOOT_ID"))
        .unwrap_or_default()
        .to_string();
    let mut units: Vec<trace::units::Unit> = Vec::new();
    for e in &entries {
        let (Some(t), Some(unit)) = (num(e, "__MONOTONIC_TIMESTAMP"), field(e, "UNIT")) else {
            continue;
        };
        // The initrd's manager (also pid 1) logged before userspace began.
        if t < boot.stages.userspace_us {
            continue;
        }
        let at = match units.iter().position(|u| u.id == unit) {
            Some(i) => i,
            None => {
                units.push(trace::units::Unit {
                    id: unit.to_string(),
                    load_state: "loaded".into(),
                    ..Default::default()
                });
                units.len() - 1
            }
        };
        let u = &mut units[at];
        // Each unit's first start job only: a later one is a restart, not the boot.
        let done = u.active_us > 0 || u.inactive_us > 0;
        match field(e, "MESSAGE_ID") {
            Some(UNIT_STARTING) if u.activating_us == 0 && !done => u.activating_us = t,
            Some(UNIT_STARTED) if !done => {
                if u.activating_us == 0 {
                    u.activating_us = t; // no "Starting": a target, a device, a socket
                }
                u.active_us = t;
                u.active_state = "active".into();
            }
            Some(UNIT_START_FAILED) if !done && u.activating_us > 0 => {
                u.inactive_us = t;
                u.active_state = "failed".into();
                u.result = field(e, "JOB_RESULT").unwrap_or("failed").to_string();
            }
            _ => {}
        }
    }
    // A failed job for a unit that never began (a dependency failed) is no start.
    units.retain(|u| u.activating_us > 0);
    boot.units = trace::units::Units {
        boottime_minus_monotonic_ns: Some(0),
        userspace_us: boot.stages.userspace_us,
        finish_us: boot.stages.finish_us,
        units,
        notes: vec![
            "read from the journal: no dependencies (no critical chain), times as journald \
             stamped them"
                .into(),
        ],
    };
    boot
}

/// The journal to read: `journalctl` and, for a copied journal, its directory.
#[derive(Debug, Clone)]
pub struct Journal {
    /// The journalctl binary.
    pub journalctl: PathBuf,
    /// `journalctl --directory` (None: the machine's journal).
    pub directory: Option<PathBuf>,
    /// The deadline of each call.
    pub limit: Duration,
}

impl Journal {
    /// The machine's own journal.
    pub fn system(directory: Option<&Path>) -> Journal {
        Journal {
            journalctl: PathBuf::from("journalctl"),
            directory: directory.map(Path::to_path_buf),
            limit: crate::learn::QUERY_LIMIT,
        }
    }

    /// `journalctl` with `args` first (an error names the command by its first argument).
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.journalctl);
        cmd.args(args).arg("--no-pager");
        if let Some(d) = &self.directory {
            cmd.arg("--directory").arg(d);
        }
        cmd
    }

    /// The boots the journal holds, oldest first (`journalctl --list-boots`): each boot id.
    pub fn boots(&self) -> Result<Vec<String>, String> {
        let mut cmd = self.command(&["--list-boots"]);
        let text = crate::learn::output_within(&mut cmd, self.limit)?;
        Ok(parse_list_boots(&text))
    }

    /// Boot `selector` ([`check_selector`]) as its start was recorded.
    pub fn boot(&self, selector: &str) -> Result<JournalBoot, String> {
        let sel = check_selector(selector)?;
        let mut cmd = self.command(&["-b", &sel, "-o", "export", "_PID=1"]);
        cmd.arg(format!("MESSAGE_ID={STARTUP_FINISHED}"))
            .arg(format!("MESSAGE_ID={UNIT_STARTING}"))
            .arg(format!("MESSAGE_ID={UNIT_STARTED}"))
            .arg(format!("MESSAGE_ID={UNIT_START_FAILED}"))
            .arg(
                "--output-fields=MESSAGE_ID,UNIT,JOB_RESULT,KERNEL_USEC,INITRD_USEC,USERSPACE_USEC",
            );
        let bytes = crate::learn::output_bytes_within(&mut cmd, self.limit)
            .map_err(|e| format!("{e} (is boot {selector} in the journal?)"))?;
        let boot = parse_boot(&bytes);
        if boot.boot_id.is_empty() {
            return Err(format!(
                "boot {selector}: the journal holds no start of the manager's for it"
            ));
        }
        Ok(boot)
    }

    /// The text login of up to `n` boots before `boot_id` (oldest first; None: a boot
    /// without one), for a baseline (`analyze::baseline`); empty when the journal lists
    /// no such boot.
    pub fn text_logins_before(&self, boot_id: &str, n: usize) -> Result<Vec<Option<f64>>, String> {
        let boots = self.boots()?;
        let Some(at) = boots.iter().position(|b| b == boot_id) else {
            return Ok(Vec::new());
        };
        boots[at.saturating_sub(n)..at]
            .iter()
            .map(|id| self.boot(id).map(|b| b.text_login_s()))
            .collect()
    }
}

/// The boot ids of `journalctl --list-boots` text, in its order (oldest first): the second
/// column of each line whose first is an offset.
pub fn parse_list_boots(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (idx, id) = (w.next()?, w.next()?);
            (idx.parse::<i64>().is_ok() && id.len() == 32).then(|| id.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(mono: u64, boot: &str, fields: &str) -> String {
        format!("__MONOTONIC_TIMESTAMP={mono}\n_BOOT_ID={boot}\n{fields}\n")
    }

    #[test]
    fn a_boot_with_an_initrd_its_units_and_a_restart() {
        let b = "0123456789abcdef0123456789abcdef";
        let mut s = String::new();
        // The initrd's manager, before userspace: left out.
        s += &entry(
            900_000,
            b,
            &format!("MESSAGE_ID={UNIT_STARTING}\nUNIT=a.service\n"),
        );
        s += &entry(
            2_100_000,
            b,
            &format!("MESSAGE_ID={UNIT_STARTING}\nUNIT=a.service\n"),
        );
        s += &entry(
            2_600_000,
            b,
            &format!("MESSAGE_ID={UNIT_STARTED}\nUNIT=a.service\nJOB_RESULT=done\n"),
        );
        s += &entry(
            2_700_000,
            b,
            &format!("MESSAGE_ID={UNIT_STARTED}\nUNIT=basic.target\n"),
        );
        s += &entry(
            2_800_000,
            b,
            &format!("MESSAGE_ID={UNIT_STARTING}\nUNIT=getty@tty1.service\n"),
        );
        s += &entry(
            3_000_000,
            b,
            &format!("MESSAGE_ID={UNIT_STARTED}\nUNIT=getty@tty1.service\n"),
        );
        s += &entry(
            3_100_000,
            b,
            &format!("MESSAGE_ID={UNIT_STARTING}\nUNIT=bad.service\n"),
        );
        s += &entry(
            3_500_000,
            b,
            &format!("MESSAGE_ID={UNIT_START_FAILED}\nUNIT=bad.service\nJOB_RESULT=timeout\n"),
        );
        s += &entry(
            3_600_000,
            b,
            &format!("MESSAGE_ID={UNIT_START_FAILED}\nUNIT=never.service\nJOB_RESULT=dependency\n"),
        );
        s += &entry(
            4_000_000,
            b,
            &format!(
                "MESSAGE_ID={STARTUP_FINISHED}\nKERNEL_USEC=1000000\nINITRD_USEC=1000000\nUSERSPACE_USEC=2000000\n"
            ),
        );
        // A restart an hour later is not the boot's start.
        s += &entry(
            3_600_000_000,
            b,
            &format!("MESSAGE_ID={UNIT_STARTING}\nUNIT=a.service\n"),
        );
        let boot = parse_boot(s.as_bytes());
        assert_eq!(boot.boot_id, b);
        assert_eq!(
            (
                boot.stages.initrd_us,
                boot.stages.userspace_us,
                boot.stages.finish_us
            ),
            (1_000_000, 2_000_000, 4_000_000)
        );
        let secs = boot.stages.seconds();
        assert_eq!(secs[2], ("kernel", Some(1.0)));
        assert_eq!(secs[4], ("userspace", Some(2.0)));
        let u = |id: &str| boot.units.units.iter().find(|u| u.id == id).cloned();
        let a = u("a.service").unwrap();
        assert_eq!((a.activating_us, a.active_us), (2_100_000, 2_600_000));
        let t = u("basic.target").unwrap();
        assert_eq!((t.activating_us, t.active_us), (2_700_000, 2_700_000));
        let bad = u("bad.service").unwrap();
        assert_eq!(
            (bad.active_state.as_str(), bad.result.as_str()),
            ("failed", "timeout")
        );
        assert_eq!(bad.inactive_us, 3_500_000);
        assert!(u("never.service").is_none());
        assert_eq!(boot.text_login_s(), Some(3.0));
    }

    #[test]
    fn a_boot_that_never_finished_keeps_its_units() {
        let b = "0123456789abcdef0123456789abcdef";
        let s = entry(
            5_000_000,
            b,
            &format!("MESSAGE_ID={UNIT_STARTING}\nUNIT=slow.service\n"),
        );
        let boot = parse_boot(s.as_bytes());
        assert_eq!(boot.stages, Stages::default());
        assert_eq!(boot.units.units.len(), 1);
        assert_eq!(boot.units.units[0].active_us, 0);
        assert_eq!(boot.text_login_s(), None);
    }

    #[test]
    fn selectors_as_journalctl_takes_them() {
        assert_eq!(check_selector("-1").unwrap(), "-1");
        assert_eq!(check_selector("0").unwrap(), "0");
        assert_eq!(
            check_selector("01234567-89AB-CDEF-0123-456789abcdef").unwrap(),
            "0123456789abcdef0123456789abcdef"
        );
        for bad in ["yesterday", "-1x", "", "abc123"] {
            assert!(
                check_selector(bad).unwrap_err().contains("expected a boot"),
                "{bad}"
            );
        }
    }

    #[test]
    fn list_boots_text() {
        let t = "IDX BOOT ID                          FIRST ENTRY                 LAST ENTRY\n\
                  -1 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa Tue 2023-11-14 22:13:20 UTC Tue 2023-11-14 22:13:22 UTC\n\
                   0 bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb Tue 2023-11-14 22:30:00 UTC Tue 2023-11-14 22:30:00 UTC\n";
        assert_eq!(parse_list_boots(t), vec!["a".repeat(32), "b".repeat(32)]);
    }
}
