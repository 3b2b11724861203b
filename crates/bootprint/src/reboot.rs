//! `bootprint reboot --kexec|--soft [--dry-run] [--kernel FILE ...]`: a reboot by a fast
//! path, refused with every reason where it is not safe (`fastpath`). The reboot itself is
//! the init's: `systemctl kexec|soft-reboot` on systemd; on sysvinit `reboot`, whose
//! runlevel 6 bootprint's runner ends with the kexec it finds marked.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use fastpath::{kexec, refusal, BootEntry, Method, Plan};

use crate::Outcome;

/// Runs the verb.
pub fn run(a: &crate::cli::Reboot) -> Outcome {
    // The request, for the shutdown's recorder: the load below comes before the init hears.
    let asked_ns = sys::boottime_ns();
    let method = if a.kexec { Method::Kexec } else { Method::Soft };
    let root = Path::new("/");
    let systemd = is_systemd(root);
    let plan = match method {
        Method::Kexec => kexec_plan(a, root, systemd),
        Method::Soft => soft_plan(root),
    };
    print!("{}", render(method, &plan));
    if !plan.refusals.is_empty() || (method == Method::Kexec && plan.entry.is_none()) {
        return Outcome::Failed(format!(
            "{} refused ({} reason{} above); nothing was changed",
            method.word(),
            plan.refusals.len(),
            if plan.refusals.len() == 1 { "" } else { "s" }
        ));
    }
    if a.dry_run {
        println!("dry run: nothing loaded, no reboot");
        return Outcome::Ok;
    }
    if sys::euid() != 0 {
        return Outcome::Failed("a reboot needs root".into());
    }
    match method {
        Method::Kexec => {
            let command: &[&str] = if systemd {
                &["systemctl", "kexec"]
            } else {
                &["reboot"]
            };
            kexec_reboot(
                plan.entry.as_ref().expect("checked above"),
                asked_ns,
                command,
            )
        }
        Method::Soft => run_init(&["systemctl", "soft-reboot"]),
    }
}

/// The entry the user named, or the loader's next, and the init's part in taking it.
fn kexec_plan(a: &crate::cli::Reboot, root: &Path, systemd: bool) -> Plan {
    let proc_cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let chosen = a.kernel.as_ref().map(|k| BootEntry {
        kernel: k.clone(),
        initrds: a.initrd.clone(),
        cmdline: if a.reuse_cmdline {
            reused_cmdline(&proc_cmdline)
        } else {
            a.append.clone().unwrap_or_default()
        },
        source: "the command line (--kernel)".into(),
    });
    let mut plan = fastpath::kexec_plan(root, chosen);
    if !systemd && !runner_is_on(&proc_cmdline) {
        plan.refusals.push(
            "on sysvinit the kexec is made by bootprint's runner at the end of runlevel 6, \
             and bootprint's configuration does not turn the runner on (bootprint.rc=1, \
             bootprint.all=1, or rc or all in bootprint.toml): reboot normally, or \
             `bootprint enable --rc` and reboot once first"
                .into(),
        );
    }
    plan
}

/// The running command line for the next kernel: without the `BOOT_IMAGE=` GRUB puts
/// first (it names the image GRUB loaded, and a loader adds its own).
pub fn reused_cmdline(proc_cmdline: &str) -> String {
    proc_cmdline
        .split_whitespace()
        .filter(|w| !w.starts_with("BOOT_IMAGE="))
        .collect::<Vec<_>>()
        .join(" ")
}

fn soft_plan(root: &Path) -> Plan {
    let running = sys::kernel_release().unwrap_or_default();
    let uptime = std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    let booted_at = SystemTime::now() - Duration::from_secs_f64(uptime);
    Plan {
        entry: None,
        refusals: refusal::soft_reboot(root, systemd_version(), &running, booted_at),
    }
}

fn is_systemd(root: &Path) -> bool {
    root.join("run/systemd/system").is_dir()
}

/// Whether bootprint's configuration turns the runner on, so it runs runlevel 6: the rule
/// the startpar wrapper asks `bootprint-boot rc --enabled` for (`record::Config::rc`).
fn runner_is_on(proc_cmdline: &str) -> bool {
    record::Config::load(Path::new(record::config::CONFIG_FILE), proc_cmdline)
        .0
        .rc
}

/// systemd's version (`systemctl --version`: `systemd 257 (257.13-1~deb13u1)`).
fn systemd_version() -> Option<u32> {
    let out = Command::new("systemctl").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().nth(1)?.parse().ok()
}

/// The plan as the user reads it.
fn render(method: Method, plan: &Plan) -> String {
    let mut s = format!("bootprint reboot --{}\n", method.word());
    if let Some(e) = &plan.entry {
        for line in e.to_string().lines() {
            s.push_str(&format!("  {line}\n"));
        }
    }
    if !plan.refusals.is_empty() {
        s.push_str("refused:\n");
        for r in &plan.refusals {
            s.push_str(&format!("  - {r}\n"));
        }
    }
    s
}

/// Loads the entry, marks the reboot for the runner and asks the init for it; anything that
/// fails after the load takes the load back, so a later plain reboot is a plain reboot.
fn kexec_reboot(entry: &BootEntry, asked_ns: u64, command: &[&str]) -> Outcome {
    if let Err(e) = kexec::load(entry) {
        return Outcome::Failed(format!(
            "kexec_file_load of {}: {e}; nothing loaded, reboot normally",
            entry.kernel.display()
        ));
    }
    if !kexec::loaded() {
        return Outcome::Failed(format!(
            "the kernel says nothing is loaded ({}) after kexec_file_load succeeded; reboot \
             normally",
            kexec::LOADED
        ));
    }
    let undo = |why: String| {
        let _ = kexec::unload();
        let _ = kexec::clear_mark();
        Outcome::Failed(format!("{why}; the kexec image was unloaded"))
    };
    if let Err(e) = kexec::mark(Method::Kexec, asked_ns) {
        return undo(format!("{}: {e}", kexec::MARKER));
    }
    match run_init(command) {
        Outcome::Ok => Outcome::Ok,
        Outcome::Failed(why) => undo(why),
    }
}

fn run_init(command: &[&str]) -> Outcome {
    match Command::new(command[0]).args(&command[1..]).status() {
        Ok(s) if s.success() => Outcome::Ok,
        Ok(s) => Outcome::Failed(format!("`{}` failed ({s})", command.join(" "))),
        Err(e) => Outcome::Failed(format!("`{}`: {e}", command.join(" "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reused_command_line_drops_the_loaders_image() {
        assert_eq!(
            reused_cmdline("BOOT_IMAGE=/boot/vmlinuz-6.1.0-13-amd64 root=UUID=x ro quiet\n"),
            "root=UUID=x ro quiet"
        );
    }
}
