//! The guest's serial console over QEMU's stdin/stdout: every byte is logged with host
//! timestamps per line, and the boot driver waits for text in it (expect-style).

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::process::{ChildStdin, ChildStdout};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::vm::util::{io_err, Error, Result};

/// Everything received so far.
#[derive(Default)]
struct Transcript {
    bytes: Vec<u8>,
    /// Complete lines: host seconds since QEMU start when the line's first byte arrived, text.
    lines: Vec<(f64, String)>,
    eof: bool,
}

type Shared = Arc<(Mutex<Transcript>, Condvar)>;

pub struct Console {
    input: ChildStdin,
    shared: Shared,
    reader: Option<JoinHandle<()>>,
}

/// What `wait_for` saw.
pub enum Seen {
    /// Pattern index, byte offset just past the match, host seconds since start.
    Match(usize, usize, f64),
    Timeout,
    /// QEMU closed the console (it exited).
    Closed,
}

impl Console {
    /// Starts logging `output` to `log`; `start` is the moment QEMU was started.
    pub fn new(
        input: ChildStdin,
        mut output: ChildStdout,
        log: &Path,
        start: Instant,
    ) -> Result<Console> {
        let file = File::create(log).map_err(|e| io_err("cannot create", log, e))?;
        let shared: Shared = Arc::new((Mutex::new(Transcript::default()), Condvar::new()));
        let sh = shared.clone();
        let reader = std::thread::spawn(move || {
            let mut out = BufWriter::new(file);
            let mut line: Vec<u8> = vec![];
            let mut line_t = 0.0;
            let mut buf = [0u8; 4096];
            loop {
                let n = match output.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let now = start.elapsed().as_secs_f64();
                let (lock, cv) = &*sh;
                let mut t = lock.lock().unwrap_or_else(|p| p.into_inner());
                t.bytes.extend_from_slice(&buf[..n]);
                for &b in &buf[..n] {
                    if line.is_empty() {
                        line_t = now;
                    }
                    if b == b'\n' {
                        let text = clean_line(&line);
                        let _ = writeln!(out, "{line_t:11.6} | {text}");
                        t.lines.push((line_t, text));
                        line.clear();
                    } else {
                        line.push(b);
                    }
                }
                let _ = out.flush();
                cv.notify_all();
            }
            let (lock, cv) = &*sh;
            let mut t = lock.lock().unwrap_or_else(|p| p.into_inner());
            if !line.is_empty() {
                let text = clean_line(&line);
                let _ = writeln!(out, "{line_t:11.6} | {text}");
                t.lines.push((line_t, text));
            }
            let _ = out.flush();
            t.eof = true;
            cv.notify_all();
        });
        Ok(Console {
            input,
            shared,
            reader: Some(reader),
        })
    }

    /// Waits until one of `patterns` appears after byte `from`.
    pub fn wait_for(
        &self,
        patterns: &[&str],
        from: usize,
        timeout: Duration,
        start: Instant,
    ) -> Seen {
        let deadline = Instant::now() + timeout;
        let (lock, cv) = &*self.shared;
        let mut t = lock.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let hay = &t.bytes[from.min(t.bytes.len())..];
            let mut best: Option<(usize, usize)> = None;
            for (i, p) in patterns.iter().enumerate() {
                if let Some(pos) = find(hay, p.as_bytes()) {
                    if best.map(|(_, b)| pos < b).unwrap_or(true) {
                        best = Some((i, pos));
                    }
                }
            }
            if let Some((i, pos)) = best {
                return Seen::Match(
                    i,
                    from + pos + patterns[i].len(),
                    start.elapsed().as_secs_f64(),
                );
            }
            if t.eof {
                return Seen::Closed;
            }
            let now = Instant::now();
            if now >= deadline {
                return Seen::Timeout;
            }
            t = cv
                .wait_timeout(t, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Text received between two offsets.
    pub fn text(&self, from: usize, to: usize) -> String {
        let t = self.shared.0.lock().unwrap_or_else(|p| p.into_inner());
        let to = to.min(t.bytes.len());
        String::from_utf8_lossy(&t.bytes[from.min(to)..to]).into_owned()
    }

    pub fn send(&mut self, text: &str) -> Result<()> {
        self.input
            .write_all(text.as_bytes())
            .and_then(|_| self.input.flush())
            .map_err(|e| Error::fail(format!("cannot write to the serial console: {e}")))
    }

    /// Waits for the reader to see the end of output and returns all lines.
    pub fn finish(mut self) -> Vec<(f64, String)> {
        drop(self.input);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        std::mem::take(
            &mut self
                .shared
                .0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .lines,
        )
    }

    /// The last `n` lines, for error messages.
    pub fn tail(&self, n: usize) -> String {
        let t = self.shared.0.lock().unwrap_or_else(|p| p.into_inner());
        let text = String::from_utf8_lossy(&t.bytes).into_owned();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A console line as text for the log: carriage returns dropped, other control bytes
/// (escape sequences from getty and the shell) shown as `\xNN`.
fn clean_line(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\r' => {}
            '\t' => out.push(c),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// A logged console line without the terminal's control sequences as [`clean_line`] shows
/// them: CSI sequences (`\x1b[?2004l`, bash's bracketed-paste switch before a command's
/// output) and any other control byte (`\xNN`).
pub fn without_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while !rest.is_empty() {
        if let Some(csi) = rest.strip_prefix("\\x1b[") {
            // Parameter and intermediate bytes, then one final byte.
            let params = csi
                .find(|c: char| !('\x20'..='\x3f').contains(&c))
                .unwrap_or(csi.len());
            let after = &csi[params..];
            let mut chars = after.chars();
            rest = match chars.next() {
                Some('\x40'..='\x7e') => chars.as_str(),
                _ => after,
            };
        } else if rest.starts_with("\\x")
            && rest.len() >= 4
            && rest[2..4].bytes().all(|b| b.is_ascii_hexdigit())
        {
            rest = &rest[4..];
        } else {
            let c = rest.chars().next().unwrap_or_default();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// Reads a serial log this console wrote (`HOST_SECONDS | TEXT` lines): the lines with
/// their host time; lines not in that form are skipped.
pub fn read_log(path: &Path) -> Vec<(f64, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (h, t) = l.split_once(" | ")?;
            Some((h.trim().parse().ok()?, t.to_string()))
        })
        .collect()
}

/// How the line every fatal error of the guest kernel ends in starts (`Kernel panic - not
/// syncing: ...`; then the kernel stops, and QEMU goes on running a dead guest unless
/// `panic=` says otherwise).
pub const PANIC_MARK: &str = "Kernel panic";

/// The first lines of a kernel error report: an oops, a `BUG()`, a panic without an oops.
const FAULT_MARKS: [&str; 4] = [
    "Oops: ",
    "kernel BUG at",
    "general protection fault",
    PANIC_MARK,
];

/// The guest kernel's fatal error, as its console showed it.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelFault {
    /// The report's first line (`Oops: int3: 0000 [#1] ...`), trimmed.
    pub line: String,
    /// The report names PID 1 while it was still the kernel's own thread (`Comm: swapper/N`:
    /// the initcalls and the root mount, before the kernel ran any program): nothing the
    /// guest's userspace or bootprint did can have caused it.
    pub before_init: bool,
    /// An `int3` trap whose byte is no longer in memory (the report's `Code:` bytes show
    /// something else just before the trapping address): the kernel patches its own code
    /// through a temporary `int3` (text_poke_bp) and waits for every CPU to serialize
    /// before removing it, so only a CPU running a stale copy of the old code can trap on
    /// it, which is the emulator's failure at any point of the boot, never the boot's.
    pub stale_int3: bool,
}

impl KernelFault {
    /// Why the fault is not the boot's own doing (the caller boots once more), if it is not.
    pub fn not_the_boots(&self) -> Option<&'static str> {
        if self.stale_int3 {
            Some("of a trap on an int3 it had already removed")
        } else if self.before_init {
            Some("before it ran any program")
        } else {
            None
        }
    }
}

/// The first fatal error report of the guest kernel in console text, if the kernel
/// panicked (an oops that does not end in a panic kills one task and is the boot's own
/// business). Seen 2026-11-29: Debian 13's 6.12 under TCG, `Oops: int3` in PID 1's
/// initcalls, about once in 130 boots (testbed/results/README.md), and in RCU's kthread.
pub fn kernel_fault(log: &str) -> Option<KernelFault> {
    let lines: Vec<&str> = log.lines().collect();
    let panic = lines.iter().position(|l| l.contains(PANIC_MARK))?;
    let first = lines[..=panic]
        .iter()
        .position(|l| FAULT_MARKS.iter().any(|m| l.contains(m)))
        .unwrap_or(panic);
    // The report's `CPU: N [UID: U] PID: P Comm: NAME` line follows its first line, or the
    // panic line when the panic had no oops before it.
    let names_task = |from: usize| {
        lines[from..lines.len().min(from + 4)]
            .iter()
            .find(|l| l.contains(" PID: ") && l.contains(" Comm: "))
            .map(|l| l.contains(" PID: 1 Comm: swapper/"))
    };
    let before_init = names_task(first)
        .or_else(|| names_task(panic))
        .unwrap_or(false);
    let stale_int3 = lines[first].contains("Oops: int3")
        && lines[first..]
            .iter()
            .find_map(|l| l.split_once(" Code: ").map(|(_, bytes)| bytes))
            .and_then(byte_before_trap)
            .is_some_and(|b| b != "cc");
    // The report starts at its mark: before it a console line carries the kernel's
    // timestamp, and at times the terminal's escapes a getty wrote.
    let line = lines[first];
    let line = FAULT_MARKS
        .iter()
        .filter_map(|m| line.find(m))
        .min()
        .map_or(line, |i| &line[i..]);
    Some(KernelFault {
        line: line.trim().to_string(),
        before_init,
        stale_int3,
    })
}

/// In a report's `Code:` bytes (`... 53 66 <90> e8 ...`, the byte at the report's RIP in
/// angle brackets), the byte just before RIP: for a trap, the instruction that trapped.
fn byte_before_trap(code: &str) -> Option<&str> {
    let words: Vec<&str> = code.split_whitespace().collect();
    let at = words.iter().position(|w| w.starts_with('<'))?;
    words.get(at.checked_sub(1)?).copied()
}

/// [`kernel_fault`] in a serial log this console wrote (`read_log`).
pub fn kernel_fault_in_log(path: &Path) -> Option<KernelFault> {
    let text: Vec<String> = read_log(path).into_iter().map(|(_, l)| l).collect();
    kernel_fault(&text.join("\n"))
}

/// What the kernel's watchdogs print when a CPU or task is stuck: the soft-lockup detector,
/// RCU's stall detector, the hung-task detector.
pub const STALL_MARKS: [&str; 3] = [
    "soft lockup - CPU#",
    "detected stalls on CPUs",
    "blocked for more than",
];

/// The guest kernel's first report of a stalled CPU or task in a serial log, if any: a soft
/// lockup (a CPU in the kernel for 20 s and more), an RCU stall or a task blocked for minutes.
/// A boot with one is not a measurement of anything bootprint did: `bench` counts it as a
/// failed run, naming the line (seen 2026-11-26: PID 1 stuck 220 s in a copy-on-write fault
/// under TCG, docs/testbed.md "Kernel stalls").
pub fn kernel_stall(log: &str) -> Option<String> {
    log.lines()
        .find(|l| STALL_MARKS.iter().any(|m| l.contains(m)))
        .map(|l| l.trim().to_string())
}

/// The kernel timestamp `[   12.345678]` a console line starts with, in seconds.
pub fn kernel_timestamp(line: &str) -> Option<f64> {
    let rest = line
        .trim_start_matches(|c: char| c.is_whitespace())
        .strip_prefix('[')?;
    let end = rest.find(']')?;
    let num = rest[..end].trim_start();
    let (secs, frac) = num.split_once('.')?;
    if secs.is_empty()
        || frac.len() != 6
        || !secs.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    num.parse().ok()
}

/// Firmware + kernel loading time, estimated from console lines with host arrival times: for
/// each kernel line, host time minus kernel time bounds the time from QEMU start to kernel
/// start from above; the smallest bound is the estimate. Lines replayed when the console
/// registers, or delayed in output, only give larger bounds. Given the lines of a later boot
/// in the same QEMU (after a reboot), it is that kernel's start on the host's clock
/// (`cycle::stages`).
pub fn firmware_estimate(lines: &[(f64, String)]) -> Option<f64> {
    lines
        .iter()
        .filter_map(|(host, text)| kernel_timestamp(text).map(|k| host - k))
        .filter(|d| *d >= 0.0)
        .min_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal))
}

/// The guest clock's offset from the host's just before `until` (host seconds since QEMU
/// start): the smallest host-minus-kernel time over the last few kernel lines that arrived
/// before it. Under emulation on a loaded host the guest clock can lose time early in the
/// boot (seen: 1.2 s lost during clocksource setup), so an event late in the boot is best
/// placed on the host's time line with an offset taken late too.
pub fn clock_offset_before(lines: &[(f64, String)], until: f64) -> Option<f64> {
    const LAST_LINES: usize = 8;
    let offsets: Vec<f64> = lines
        .iter()
        .filter(|(host, _)| *host <= until)
        .filter_map(|(host, text)| kernel_timestamp(text).map(|k| host - k))
        .filter(|d| *d >= 0.0)
        .collect();
    offsets[offsets.len().saturating_sub(LAST_LINES)..]
        .iter()
        .copied()
        .min_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_offset_uses_late_lines() {
        // The guest clock lost 1.2 s early on: early lines say 15.5, late ones 16.7.
        let mut lines = vec![
            (15.5, "[    0.000000] Linux version".to_string()),
            (15.6, "[    0.100000] console".to_string()),
        ];
        for i in 0..10 {
            let k = 10.0 + i as f64;
            lines.push((k + 16.7, format!("[{k:12.6}] late line")));
        }
        lines.push((66.8, "[   50.000000] after login".to_string()));
        assert!((firmware_estimate(&lines).unwrap() - 15.5).abs() < 1e-9);
        let off = clock_offset_before(&lines, 50.0).unwrap();
        assert!((off - 16.7).abs() < 1e-9, "{off}");
        assert_eq!(clock_offset_before(&lines, 1.0), None);
    }

    #[test]
    fn kernel_timestamps() {
        assert_eq!(
            kernel_timestamp("[    0.000000] Linux version 6.1.0"),
            Some(0.0)
        );
        assert_eq!(
            kernel_timestamp("[   12.345678] virtio_blk virtio1: [vda]"),
            Some(12.345678)
        );
        assert_eq!(kernel_timestamp("[12345.000001] x"), Some(12345.000001));
        assert_eq!(kernel_timestamp("[ ok ] Starting cron"), None);
        assert_eq!(kernel_timestamp("[....] Starting"), None);
        assert_eq!(kernel_timestamp("[ 1.23] short fraction"), None);
        assert_eq!(kernel_timestamp("Begin: Loading [    1.000000]"), None);
        assert_eq!(kernel_timestamp(""), None);
    }

    #[test]
    fn firmware_is_the_smallest_bound() {
        let lines = vec![
            // replayed at console registration: host 3.0, kernel 0.0 -> bound 3.0
            (3.0, "[    0.000000] Linux version".to_string()),
            (
                3.1,
                "[    0.400000] printk: console [ttyS0] enabled".to_string(),
            ),
            (4.2, "[    1.500000] later line".to_string()),
            (
                9.0,
                "Debian GNU/Linux 12 bootprint-testbed ttyS0".to_string(),
            ),
        ];
        let est = firmware_estimate(&lines).unwrap();
        assert!((est - 2.7).abs() < 1e-9, "{est}");
        assert_eq!(firmware_estimate(&lines[3..]), None);
    }

    #[test]
    fn console_waits_sends_and_logs() {
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("serial.log");
        // A stand-in for QEMU: a kernel line, a prompt without newline, then echo what it reads.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("printf '[    0.000000] Linux\\n'; sleep 0.3; printf 'x login: '; read a; echo \"got $a\"")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh");
        let start = Instant::now();
        let mut con = Console::new(
            child.stdin.take().unwrap(),
            child.stdout.take().unwrap(),
            &log,
            start,
        )
        .unwrap();
        let Seen::Match(0, end, t) = con.wait_for(&["login:"], 0, Duration::from_secs(10), start)
        else {
            panic!("no login:");
        };
        assert!(t >= 0.25, "prompt came after the sleep: {t}");
        assert!(matches!(
            con.wait_for(&["never"], end, Duration::from_millis(100), start),
            Seen::Timeout
        ));
        con.send("root\n").unwrap();
        assert!(matches!(
            con.wait_for(&["got root"], end, Duration::from_secs(10), start),
            Seen::Match(0, _, _)
        ));
        let _ = child.wait();
        assert!(matches!(
            con.wait_for(&["never"], end, Duration::from_secs(10), start),
            Seen::Closed
        ));
        let lines = con.finish();
        assert_eq!(lines[0].1, "[    0.000000] Linux");
        assert_eq!(lines[1].1, "x login: got root");
        let est = firmware_estimate(&lines).unwrap();
        assert!((0.0..0.25).contains(&est), "{est}");
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            text.lines()
                .nth(1)
                .unwrap()
                .ends_with(" | x login: got root"),
            "{text}"
        );
    }

    #[test]
    fn clean_lines() {
        assert_eq!(clean_line(b"login: \r"), "login: ");
        assert_eq!(clean_line(b"\x1b[0m ok"), "\\x1b[0m ok");
    }

    #[test]
    fn escapes_are_dropped() {
        // As a reboot cycle's request marker came: bash's bracketed-paste switch before it.
        let logged = clean_line(b"\x1b[?2004lBOOTPRINT-CYCLE-REQUEST\r");
        assert_eq!(without_escapes(&logged), "BOOTPRINT-CYCLE-REQUEST");
        let getty = clean_line(b"\x1b[!p\x1b]104\x07\x1b[?7h[    7.9] Oops");
        assert_eq!(without_escapes(&getty), "]104[    7.9] Oops");
        assert_eq!(without_escapes("plain \\x1b[0m"), "plain ");
        assert_eq!(without_escapes("a\\x1b["), "a");
        assert_eq!(without_escapes("C:\\xyz é"), "C:\\xyz é");
    }

    #[test]
    fn kernel_faults_before_and_after_init() {
        // Trimmed from the 2026-11-29 panic (Debian 13's 6.12 under TCG).
        let early = "[    1.190593] amd_pstate: the _CPC object is not present\n\
            [    1.223654] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI\n\
            [    1.223949] CPU: 1 UID: 0 PID: 1 Comm: swapper/0 Not tainted 6.12.117+deb13-amd64 #1\n\
            [    1.224132] RIP: 0010:sched_clock_cpu+0x9/0x1d0\n\
            [    1.226400] Kernel panic - not syncing: Fatal exception in interrupt\n";
        let f = kernel_fault(early).unwrap();
        assert_eq!(f.line, "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI");
        assert!(f.before_init);
        assert!(!f.stale_int3, "no Code: line, no claim");
        // Once init runs, PID 1 is a program: the same report is the boot's own failure.
        let late = early.replace("Comm: swapper/0", "Comm: bootprint-boot");
        assert!(!kernel_fault(&late).unwrap().before_init);
        // 6.1's form (no UID) and a panic without an oops: init exited.
        let init_died =
            "[    5.1] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000100\n\
            [    5.2] CPU: 0 PID: 1 Comm: init Not tainted 6.1.0-50-amd64 #1\n";
        let f = kernel_fault(init_died).unwrap();
        assert!(f
            .line
            .starts_with("Kernel panic - not syncing: Attempted to kill init"));
        assert!(!f.before_init);
        let no_root = "[    2.0] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)\n\
            [    2.1] CPU: 0 PID: 1 Comm: swapper/0 Not tainted 6.1.0-50-amd64 #1\n";
        assert!(kernel_fault(no_root).unwrap().before_init);
        // An oops that only killed a task is no panic.
        assert_eq!(
            kernel_fault("[ 9.0] Oops: 0000 [#1] SMP\n[ 9.1] CPU: 0 PID: 7 Comm: sh\n"),
            None
        );
        assert_eq!(kernel_fault("login: "), None);
    }

    #[test]
    fn stale_int3_traps_are_told_from_live_ones() {
        // Trimmed from CI's 2026-11-29 panic: RCU's kthread, not PID 1, in an interrupt.
        let report = "[    1.541] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI\n\
            [    1.542] CPU: 0 UID: 0 PID: 15 Comm: rcu_preempt Not tainted 6.12.117+deb13-amd64 #1\n\
            [    1.543] RIP: 0010:sched_clock_cpu+0x9/0x1d0\n\
            [    1.543] Code: 90 90 f3 0f 1e fa 41 54 55 53 66 <90> e8 f1 fe f0 ff 48 03 05\n\
            [    1.544] Kernel panic - not syncing: Fatal exception in interrupt\n";
        let f = kernel_fault(report).unwrap();
        assert!(f.stale_int3 && !f.before_init);
        // As CI's console had it: a getty's escapes before the timestamp.
        let escaped = report.replace(
            "[    1.541] Oops",
            "\\x1b[!p\\x1b]104\\x07\\x1b[?7h[    7.966769] Oops",
        );
        assert_eq!(
            kernel_fault(&escaped).unwrap().line,
            "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI"
        );
        assert!(f.not_the_boots().unwrap().contains("int3"));
        // The int3 still in memory: a breakpoint someone put there, the boot's business.
        let live = report.replace("53 66 <90>", "53 cc <90>");
        let f = kernel_fault(&live).unwrap();
        assert!(!f.stale_int3);
        assert_eq!(f.not_the_boots(), None);
        // Another trap with the same bytes is no int3 trap.
        let gpf = report.replace("Oops: int3: 0000", "Oops: general protection fault: 0000");
        assert!(!kernel_fault(&gpf).unwrap().stale_int3);
        assert_eq!(byte_before_trap("<0f> 0b"), None);
    }

    #[test]
    fn kernel_stalls_are_found_by_their_reports() {
        let ok = "  4.69 | [    0.000000] Linux version 6.1.0\n 12.1 | login:\n";
        assert_eq!(kernel_stall(ok), None);
        let stalled = format!(
            "{ok} 41.19 | [   36.805689] watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [systemd:1]\n"
        );
        assert!(kernel_stall(&stalled).is_some_and(|l| l.contains("CPU#0 stuck for 23s")));
        let rcu = "[ 24.7] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:";
        assert!(kernel_stall(rcu).is_some());
    }
}
