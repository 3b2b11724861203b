//! A reboot cycle inside one QEMU (`BootOpts::reboot`), timed by the host: the serial log's
//! host timestamps mark the request, the kernel's last line before the reset, the next
//! kernel's start and the next `login:`. A pure reading of the log, no guest clock trusted
//! across the reset.

use serde_json::{json, Value};

use crate::vm::serial::{firmware_estimate, kernel_timestamp, without_escapes};
use crate::vm::util::{Error, Result};

/// The line the guest prints just before it asks for the reboot (the same shell line runs
/// the request). The boot driver types it split with `""`, so the terminal's echo of the
/// command is not this line.
pub const REQUEST_MARK: &str = "BOOTPRINT-CYCLE-REQUEST";

/// The kernel's last line of a shutdown (kernel/reboot.c, `pr_emerg` with the `reboot: `
/// prefix): a restart (also `Restarting system with command '...'`), a power-off, a halt.
pub const SHUTDOWN_END_MARKS: [&str; 4] = [
    "reboot: Restarting system",
    "reboot: Power down",
    "reboot: System halted",
    KEXEC_MARK,
];

/// The kernel's last line before it jumps into a kexec'd kernel (kernel/kexec_core.c,
/// `kernel_kexec`, with the `kexec_core: ` prefix): a reboot without the firmware.
pub const KEXEC_MARK: &str = "kexec_core: Starting new kernel";

/// The guest's command for the fast path into the running kernel, its initramfs and command
/// line (docs/reboot.md): the test bed boots with `-kernel`, so no boot loader's
/// configuration names the next entry.
pub const KEXEC_COMMAND: &str = "bootprint reboot --kexec --kernel /boot/vmlinuz-$(uname -r) \
    --initrd /boot/initrd.img-$(uname -r) --reuse-cmdline";

/// Before a lever cycle's request: the grub.cfg the lever reads the next entry from, in
/// update-grub's shape (the image boots with `-kernel` and has no GRUB): the image's kernel
/// and initramfs with the running command line; then what the fast path plans from it.
pub const GRUB_CFG: &str = r#"mkdir -p /boot/grub
cmdline=$(cat /proc/cmdline)
cat > /boot/grub/grub.cfg <<EOF
# written by the bootprint test bed in update-grub's shape
set default="0"
menuentry 'Debian GNU/Linux (bootprint test bed)' --class debian --class gnu-linux {
	insmod gzio
	echo	'Loading Linux $(uname -r) ...'
	linux	/boot/vmlinuz-$(uname -r) $cmdline
	initrd	/boot/initrd.img-$(uname -r)
}
EOF
echo "== plan"
bootprint reboot --kexec --dry-run 2>&1; echo "rc=$?"
"#;

/// What the getty prints when it waits for a user name.
const LOGIN_MARK: &str = "login:";

/// The stages of one reboot cycle, in host seconds since QEMU started.
#[derive(Clone, Debug, PartialEq)]
pub struct CycleStages {
    /// The guest printed [`REQUEST_MARK`]: the reboot is asked for.
    pub request_s: f64,
    /// The kernel's last line of the shutdown (`reboot: Restarting system`): the reset.
    pub kernel_restart_s: f64,
    /// The next boot's first line on the console: the firmware's or loader's if they print
    /// one, else the kernel's first (replayed when its console registers, so later than the
    /// kernel's start).
    pub next_first_output_s: f64,
    /// The next kernel's start: host time minus kernel time of its lines, the smallest
    /// (`serial::firmware_estimate` over the next boot's lines).
    pub next_kernel_start_s: f64,
    /// The next boot's `login:`.
    pub next_login_s: f64,
    /// The old kernel jumped into the next by kexec ([`KEXEC_MARK`]) instead of a reset.
    pub by_kexec: bool,
}

impl CycleStages {
    /// The request to the kernel's reset: init's and the kernel's shutdown.
    pub fn shutdown_s(&self) -> f64 {
        self.kernel_restart_s - self.request_s
    }

    /// The reset to the next kernel's start: firmware and kernel loading, as the host sees it.
    pub fn reset_to_kernel_s(&self) -> f64 {
        self.next_kernel_start_s - self.kernel_restart_s
    }

    /// The next kernel's start to its `login:`.
    pub fn kernel_to_login_s(&self) -> f64 {
        self.next_login_s - self.next_kernel_start_s
    }

    /// The request to the next `login:`: the whole cycle.
    pub fn whole_s(&self) -> f64 {
        self.next_login_s - self.request_s
    }

    pub fn to_json(&self) -> Value {
        let r = crate::vm::qemu::round3;
        json!({
            "request_s": r(self.request_s),
            "kernel_restart_s": r(self.kernel_restart_s),
            "next_first_output_s": r(self.next_first_output_s),
            "next_kernel_start_s": r(self.next_kernel_start_s),
            "next_login_s": r(self.next_login_s),
            "shutdown_s": r(self.shutdown_s()),
            "reset_to_kernel_s": r(self.reset_to_kernel_s()),
            "kernel_to_login_s": r(self.kernel_to_login_s()),
            "whole_s": r(self.whole_s()),
            "by_kexec": self.by_kexec,
        })
    }
}

/// The stages of the reboot cycle in a serial transcript (`(host seconds, line)` as
/// `serial::Console` keeps them, in arrival order): the first [`REQUEST_MARK`] line, the
/// first shutdown end after it, the next boot's first kernel line after that, its `login:`.
/// An error names the stage it could not find.
pub fn stages(lines: &[(f64, String)]) -> Result<CycleStages> {
    let find_from = |from: usize, what: &str, hit: &dyn Fn(&str) -> bool| -> Result<usize> {
        lines[from..]
            .iter()
            .position(|(_, l)| hit(l))
            .map(|i| from + i)
            .ok_or_else(|| Error::fail(format!("reboot cycle: no {what} in the serial log")))
    };
    // The shell may switch the terminal's modes just before the command's output.
    let request = find_from(0, &format!("`{REQUEST_MARK}` line"), &|l| {
        without_escapes(l).trim() == REQUEST_MARK
    })?;
    let restart = find_from(
        request + 1,
        "`reboot: Restarting system` or kexec line after the request",
        &|l| SHUTDOWN_END_MARKS.iter().any(|m| l.contains(m)),
    )?;
    let by_kexec = lines[restart].1.contains(KEXEC_MARK);
    if !by_kexec && !lines[restart].1.contains(SHUTDOWN_END_MARKS[0]) {
        return Err(Error::fail(format!(
            "reboot cycle: the guest did not restart, its kernel ended with `{}`",
            lines[restart].1.trim()
        )));
    }
    // The old kernel may still print after the restart line (`reboot: machine restart`):
    // the next kernel's lines are those whose clock starts again below the restart's.
    // Its timestamp may follow a getty's escapes on the same line (the console's cursor
    // probe, written as the reset came).
    let restart_line = &lines[restart].1;
    let restart_k = SHUTDOWN_END_MARKS
        .iter()
        .filter_map(|m| restart_line.find(m))
        .min()
        .and_then(|at| restart_line[..at].rfind('['))
        .and_then(|i| kernel_timestamp(&restart_line[i..]))
        .unwrap_or(f64::INFINITY);
    let old_kernel = |l: &str| kernel_timestamp(l).is_some_and(|k| k >= restart_k);
    let kernel = find_from(
        restart + 1,
        "kernel line of the next boot (after `reboot: Restarting system`)",
        &|l| kernel_timestamp(l).is_some() && !old_kernel(l),
    )?;
    let login = find_from(kernel + 1, "`login:` of the next boot", &|l| {
        l.contains(LOGIN_MARK)
    })?;
    let first_output = find_from(restart + 1, "output of the next boot", &|l| {
        !l.trim().is_empty() && !old_kernel(l)
    })?;
    let next_kernel_start_s = firmware_estimate(&lines[kernel..=login]).ok_or_else(|| {
        Error::fail("reboot cycle: the next boot's kernel lines give no start time")
    })?;
    let s = CycleStages {
        request_s: lines[request].0,
        kernel_restart_s: lines[restart].0,
        next_first_output_s: lines[first_output].0,
        next_kernel_start_s,
        next_login_s: lines[login].0,
        by_kexec,
    };
    // The kernel's start is an upper bound from its lines: a reset after it, or a login
    // before it, is a transcript this reading does not understand.
    if !(s.request_s <= s.kernel_restart_s
        && s.kernel_restart_s <= s.next_kernel_start_s
        && s.next_kernel_start_s <= s.next_login_s)
    {
        return Err(Error::fail(format!(
            "reboot cycle: stages out of order: {s:?}"
        )));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript(text: &str) -> Vec<(f64, String)> {
        text.lines()
            .filter_map(|l| {
                let (h, t) = l.split_once(" | ")?;
                Some((h.trim().parse().unwrap(), t.to_string()))
            })
            .collect()
    }

    const SYNTHETIC: &str = "\
  4.000000 | [    0.000000] Linux version 6.12.0-amd64
 30.000000 | bootprint-testbed login: root
 40.000000 | root@bootprint-testbed:~# echo BOOTPRINT-CYCLE\"\"-REQUEST; reboot
 40.010000 | \\x1b[?2004lBOOTPRINT-CYCLE-REQUEST
 41.000000 | bp-slowstop: stop begins
 45.000000 | bp-slowstop: stop ends
 48.500000 | [   44.100000] reboot: Restarting system
 48.510000 | [   44.110000] reboot: machine restart
 48.900000 | SeaBIOS (version 1.16)
 49.700000 | [    0.000000] Linux version 6.12.0-amd64
 49.800000 | [    0.300000] printk: console [ttyS0] enabled
 50.500000 | [    1.000000] later line
 60.000000 | [   10.000000] random: crng init done, late in output
 75.250000 | bootprint-testbed login: root
 80.000000 | Last login: Mon Dec  1 10:00:00 UTC 2026 on ttyS0
";

    #[test]
    fn stages_of_a_synthetic_cycle() {
        let s = stages(&transcript(SYNTHETIC)).unwrap();
        assert_eq!(s.request_s, 40.01);
        assert_eq!(s.kernel_restart_s, 48.5);
        assert_eq!(s.next_first_output_s, 48.9);
        // The smallest host-minus-kernel bound: 50.5 - 1.0, not the replayed banner's 49.7.
        assert!((s.next_kernel_start_s - 49.5).abs() < 1e-9, "{s:?}");
        assert_eq!(s.next_login_s, 75.25);
        assert!((s.shutdown_s() - 8.49).abs() < 1e-9);
        assert!((s.reset_to_kernel_s() - 1.0).abs() < 1e-9);
        assert!((s.kernel_to_login_s() - 25.75).abs() < 1e-9);
        let sum = s.shutdown_s() + s.reset_to_kernel_s() + s.kernel_to_login_s();
        assert!((sum - s.whole_s()).abs() < 1e-9);
        assert_eq!(s.to_json()["whole_s"], json!(35.24));
    }

    /// testbed/cache/runs/20261129-235651/serial.log (`bench reboot`, systemd, 2026-11-29):
    /// the getty's escapes came on the restart line, before its timestamp, and the old
    /// kernel's `machine restart` line after it must still count as the old kernel's.
    #[test]
    fn a_restart_line_behind_a_gettys_escapes() {
        let t: Vec<_> = transcript(SYNTHETIC)
            .into_iter()
            .map(|(h, l)| {
                let l = if l.contains("Restarting system") {
                    format!("\\x1b[!p\\x1b]104\\x07\\x1b[6n\\x1b[32766;32766H\\x1b[6n{l}")
                } else {
                    l
                };
                (h, l)
            })
            .collect();
        let s = stages(&t).unwrap();
        assert_eq!(s.kernel_restart_s, 48.5);
        assert!((s.next_kernel_start_s - 49.5).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn a_kexec_ends_the_shutdown_without_a_reset() {
        let t: Vec<_> = transcript(SYNTHETIC)
            .into_iter()
            .filter(|(_, l)| !l.contains("SeaBIOS") && !l.contains("machine restart"))
            .map(|(h, l)| (h, l.replace("reboot: Restarting system", KEXEC_MARK)))
            .collect();
        let s = stages(&t).unwrap();
        assert!(s.by_kexec);
        assert_eq!(s.kernel_restart_s, 48.5);
        assert_eq!(s.next_first_output_s, 49.7);
        assert!(!stages(&transcript(SYNTHETIC)).unwrap().by_kexec);
    }

    /// A real cycle, trimmed to the end of the before-reboot script through the second
    /// `login:`: testbed/cache/runs/20261129-202225/serial.log of `bootprint-testbed
    /// --release 13 reboot --init sysvinit-startpar` (Debian's startpar runs runlevel 6),
    /// 2026-11-29, with the host busy compiling. Its reset took 252 s (usually about 1 s),
    /// and the old kernel printed `reboot: machine restart` after the restart line.
    #[test]
    fn stages_of_a_real_cycle() {
        let log = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/reboot-cycle-serial.log"
        );
        let lines = crate::vm::serial::read_log(std::path::Path::new(log));
        assert_eq!(lines.len(), 93);
        let s = stages(&lines).unwrap();
        assert_eq!(s.request_s, 53.440671);
        assert_eq!(s.kernel_restart_s, 61.468981);
        // No firmware output: the first is the kernel's banner, which is also its start's
        // smallest bound here.
        assert_eq!(s.next_first_output_s, 313.574797);
        assert_eq!(s.next_kernel_start_s, 313.574797);
        assert_eq!(s.next_login_s, 386.727378);
        let r = crate::vm::qemu::round3;
        assert_eq!(
            (
                r(s.shutdown_s()),
                r(s.reset_to_kernel_s()),
                r(s.kernel_to_login_s())
            ),
            (8.028, 252.106, 73.153)
        );
        assert_eq!(r(s.whole_s()), 333.287);
    }

    #[test]
    fn missing_or_wrong_stages_are_named() {
        let t = transcript(SYNTHETIC);
        // The echo of the typed command is not the request: only the marker line is.
        let no_marker: Vec<_> = t.iter().filter(|(h, _)| *h != 40.01).cloned().collect();
        let e = stages(&no_marker).unwrap_err().to_string();
        assert!(e.contains("BOOTPRINT-CYCLE-REQUEST"), "{e}");
        let powered_off: Vec<_> = t
            .iter()
            .map(|(h, l)| (*h, l.replace("Restarting system", "Power down")))
            .collect();
        let e = stages(&powered_off).unwrap_err().to_string();
        assert!(
            e.contains("did not restart") && e.contains("Power down"),
            "{e}"
        );
        let e = stages(&t[..10]).unwrap_err().to_string();
        assert!(e.contains("`login:` of the next boot"), "{e}");
        let e = stages(&t[..6]).unwrap_err().to_string();
        assert!(e.contains("Restarting system"), "{e}");
        // Without firmware output the first output is the kernel's banner.
        let no_bios: Vec<_> = t
            .iter()
            .filter(|(_, l)| !l.starts_with("SeaBIOS"))
            .cloned()
            .collect();
        assert_eq!(stages(&no_bios).unwrap().next_first_output_s, 49.7);
    }
}
