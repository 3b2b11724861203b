//! A boot without a trace, as systemd timed it (`report --systemd`, `export --systemd`): the
//! running one from the manager (`systemctl`), or any one the journal holds
//! (`systemd::boots`); with its text login against the journal's earlier boots
//! (`analyze::baseline`), so a machine without the recorder has the same baseline a
//! recorded one has.

use std::path::Path;

use systemd::boots::Journal;
use systemd::learn::Stages;

/// One boot's stages and units.
pub struct SystemdBoot {
    /// `systemd` (the running manager) or `journal`.
    pub source: &'static str,
    /// The boot id, 32 hex digits.
    pub boot_id: String,
    /// The manager's stages (from the journal: no firmware or loader).
    pub stages: Stages,
    /// Every unit, as a trace's `systemd-units.log` holds them.
    pub units: trace::units::Units,
    /// When the first getty became active, s since the kernel started.
    pub text_login_s: Option<f64>,
}

impl SystemdBoot {
    /// The services view of its units.
    pub fn view(&self) -> analyze::services::ServicesView {
        analyze::services::ServicesView::from_units(&self.units)
    }
}

/// The boot `journal` names (`journalctl -b`'s way) from the journal (of `dir` when given);
/// without one, the running boot from the manager.
pub fn read(journal: Option<&str>, dir: Option<&Path>) -> Result<SystemdBoot, String> {
    if let Some(sel) = journal {
        let b = Journal::system(dir).boot(sel)?;
        return Ok(SystemdBoot {
            source: "journal",
            text_login_s: b.text_login_s(),
            boot_id: b.boot_id,
            stages: b.stages,
            units: b.units,
        });
    }
    let systemctl = Path::new("systemctl");
    let limit = systemd::learn::QUERY_LIMIT;
    let stages = systemd::learn::stages(systemctl, limit)
        .map_err(|e| format!("{e} (is systemd the init?)"))?;
    let graph = systemd::learn::query(systemctl, limit)?;
    // CLOCK_BOOTTIME less CLOCK_MONOTONIC, read back to back: the trace's time base.
    let offset = sys::boottime_ns().saturating_sub(sys::monotonic_ns());
    let units = systemd::learn::units_log(Ok(&graph), offset);
    let text_login_s = systemd::boots::text_login_s(&units);
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().replace('-', ""))
        .unwrap_or_default();
    Ok(SystemdBoot {
        source: "systemd",
        boot_id,
        stages,
        units,
        text_login_s,
    })
}

/// The text login of `boot` against the boots before it in the journal (of `dir` when
/// given): None when the journal cannot be read or holds too few of them.
pub fn baseline(boot: &SystemdBoot, dir: Option<&Path>) -> Option<analyze::baseline::Baseline> {
    // Enough boots before for each of the last ones over its own baseline to have one.
    let n = 2 * analyze::baseline::BASELINE_BOOTS;
    let mut history = Journal::system(dir)
        .text_logins_before(&boot.boot_id, n)
        .ok()?;
    history.push(boot.text_login_s);
    analyze::baseline::of(&history)
}
