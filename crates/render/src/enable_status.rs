//! `bootprint status`: what `bootprint enable` switched on, what the running boot had, each
//! lever's own verdict and the last recorded boot's times, as text and JSON.

use std::io::{self, Write};

use analyze::model::Milestone;
use analyze::Report;
use serde_json::{json, Value};

/// One lever's line.
#[derive(Debug, Clone)]
pub struct Lever {
    /// Its name (`record`, `readahead`, ...).
    pub name: String,
    /// Switched on by `bootprint enable` (the manifest).
    pub enabled: bool,
    /// Its kernel parameter was on the running boot's command line (None: not known, another
    /// root; or the lever has no parameter of its own).
    pub this_boot: Option<bool>,
    /// Its A/B verdict in words (readahead, the module loader, the runner and late units
    /// judge themselves).
    pub verdict: String,
}

/// The last recorded boot.
#[derive(Debug)]
pub enum LastBoot<'a> {
    /// No trace where `latest` points (the path).
    None(String),
    /// A trace that could not be read: the path and why.
    Unreadable(String, String),
    /// Its analysis.
    Report(&'a Report),
}

/// What `bootprint status` shows, gathered by the verb.
#[derive(Debug)]
pub struct Status<'a> {
    /// The manifest's path.
    pub manifest_file: String,
    /// Whether the manifest exists (enable ran and was not undone).
    pub enabled: bool,
    /// `--default`: our initramfs entry is GRUB's default.
    pub default_entry: bool,
    /// The manifest's change records, oldest first.
    pub changes: Vec<String>,
    /// The drop-in's path and whether it exists.
    pub dropin: (String, bool),
    /// The boot loader the levers go through: `grub` or `systemd-boot` (the manifest's, or
    /// the one `enable` would use).
    pub loader: String,
    /// The running boot's /proc/cmdline (None for another root).
    pub cmdline: Option<String>,
    /// Every lever.
    pub levers: Vec<Lever>,
    /// The last boot.
    pub last_boot: LastBoot<'a>,
}

fn secs(m: Option<&Milestone>) -> Option<f64> {
    m.map(|m| m.t_s)
}

/// The last boot's four times, seconds since the kernel started: kernel done, text login,
/// graphical login, boot done.
fn times(r: &Report) -> [(&'static str, Option<f64>); 4] {
    let ms = &r.model.milestones;
    [
        ("kernel", secs(ms.kernel.as_ref())),
        ("text_login", secs(ms.text_login.as_ref())),
        ("graphical_login", secs(ms.graphical_login.as_ref())),
        ("boot_done", Some(ms.boot_done.t_s)),
    ]
}

/// The status as JSON.
pub fn json(s: &Status) -> Value {
    let last = match &s.last_boot {
        LastBoot::None(p) => json!({"trace": p, "found": false}),
        LastBoot::Unreadable(p, e) => json!({"trace": p, "found": true, "error": e}),
        LastBoot::Report(r) => {
            let mut o = json!({"trace": r.origin, "found": true});
            for (k, v) in times(r) {
                o[format!("{k}_s")] = json!(v);
            }
            o
        }
    };
    json!({
        "enabled": s.enabled,
        "manifest": s.manifest_file,
        "default_entry": s.default_entry,
        "changes": s.changes,
        "dropin": {"path": s.dropin.0, "exists": s.dropin.1},
        "loader": s.loader,
        "cmdline": s.cmdline,
        "levers": s.levers.iter().map(|l| json!({
            "name": l.name, "enabled": l.enabled, "this_boot": l.this_boot, "verdict": l.verdict,
        })).collect::<Vec<_>>(),
        "last_boot": last,
    })
}

/// The status as text: enabled or not, one line a lever, the changes, the last boot's times.
pub fn text(out: &mut impl Write, s: &Status) -> io::Result<()> {
    if s.enabled {
        let on: Vec<&str> = s
            .levers
            .iter()
            .filter(|l| l.enabled)
            .map(|l| l.name.as_str())
            .collect();
        writeln!(out, "enabled: {} ({})", on.join(" "), s.manifest_file)?;
    } else {
        writeln!(out, "enabled: nothing ({} does not exist)", s.manifest_file)?;
    }
    if s.loader == "systemd-boot" {
        writeln!(
            out,
            "boot loader: systemd-boot (the parameters are on kernel-install's entries)"
        )?;
    } else {
        writeln!(out, "boot loader: GRUB")?;
        writeln!(
            out,
            "GRUB drop-in: {} ({})",
            s.dropin.0,
            if s.dropin.1 { "present" } else { "absent" }
        )?;
    }
    if s.enabled {
        writeln!(
            out,
            "default entry: {}",
            if s.default_entry {
                "bootprint's initramfs"
            } else {
                "the distribution's"
            }
        )?;
    }
    match &s.cmdline {
        Some(c) => writeln!(out, "this boot: {}", c.trim())?,
        None => writeln!(out, "this boot: not known (another root)")?,
    }
    writeln!(out, "levers:")?;
    for l in &s.levers {
        writeln!(
            out,
            "  {:<10} {:<3}  this boot: {:<3}  {}",
            l.name,
            if l.enabled { "on" } else { "off" },
            match l.this_boot {
                Some(true) => "on",
                Some(false) => "off",
                None => "-",
            },
            l.verdict
        )?;
    }
    if !s.changes.is_empty() {
        writeln!(out, "changes (undone by `bootprint disable`):")?;
        for c in &s.changes {
            writeln!(out, "  {c}")?;
        }
    }
    match &s.last_boot {
        LastBoot::None(p) => writeln!(out, "last boot: no trace at {p}")?,
        LastBoot::Unreadable(p, e) => writeln!(out, "last boot: {p}: {e}")?,
        LastBoot::Report(r) => {
            writeln!(out, "last boot: {}", r.origin)?;
            for (k, v) in times(r) {
                let label = match k {
                    "kernel" => "kernel",
                    "text_login" => "text login",
                    "graphical_login" => "graphical login",
                    _ => "boot done",
                };
                match v {
                    Some(t) => writeln!(out, "  {label:<16} {t:>8.3} s")?,
                    None => writeln!(out, "  {label:<16} {:>8}", "-")?,
                }
            }
        }
    }
    Ok(())
}
