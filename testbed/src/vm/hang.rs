//! A hung boot's diagnosis, before QEMU is stopped: QEMU's own threads, then the guest's
//! registers (named from the kernel's System.map) and the kernel's task dumps (SysRq) through
//! QEMU's human monitor. `soak` uses it, and `qemu` when a boot does not reach its mark.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::vm::image::Image;
use crate::vm::serial::Console;

/// A QEMU human monitor on a Unix socket.
struct Monitor {
    sock: UnixStream,
}

impl Monitor {
    fn connect(path: &Path) -> std::io::Result<Monitor> {
        let sock = UnixStream::connect(path)?;
        sock.set_read_timeout(Some(Duration::from_secs(20)))?;
        let mut m = Monitor { sock };
        m.until_prompt()?;
        Ok(m)
    }

    fn until_prompt(&mut self) -> std::io::Result<String> {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.ends_with(b"(qemu) ") {
            let n = self.sock.read(&mut buf)?;
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        Ok(String::from_utf8_lossy(&got).into_owned())
    }

    /// Runs `cmd`; returns what it printed (escape sequences dropped).
    fn cmd(&mut self, cmd: &str) -> String {
        if self.sock.write_all(format!("{cmd}\n").as_bytes()).is_err() {
            return format!("(cannot send {cmd:?})\n");
        }
        match self.until_prompt() {
            Ok(text) => strip_escapes(&text)
                .trim_end_matches("(qemu) ")
                .lines()
                .filter(|l| !l.contains(cmd))
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => format!("(no answer to {cmd:?}: {e})\n"),
        }
    }
}

/// Terminal escape sequences the monitor echoes its input with.
fn strip_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\x1b' {
            if it.peek() == Some(&'[') {
                it.next();
                for d in it.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        if c != '\r' {
            out.push(c);
        }
    }
    out
}

/// QEMU's threads as the host sees them: CPU time of each, twice 2 s apart (the ones that
/// move are the busy ones), then their stacks from gdb when it is installed.
fn host_threads(pid: u32) -> String {
    let sample = || -> Vec<(String, String, u64)> {
        let mut v = Vec::new();
        let Ok(rd) = fs::read_dir(format!("/proc/{pid}/task")) else {
            return v;
        };
        for e in rd.flatten() {
            let tid = e.file_name().to_string_lossy().into_owned();
            let stat = fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let Some((head, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let name = head.split_once('(').map_or("", |x| x.1).to_string();
            let f: Vec<&str> = rest.split_whitespace().collect();
            // utime and stime: fields 14 and 15, here 11 and 12 after the state.
            let ticks = f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
                + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
            v.push((tid, name, ticks));
        }
        v.sort();
        v
    };
    let a = sample();
    std::thread::sleep(Duration::from_secs(2));
    let b = sample();
    let mut out = String::from("== QEMU threads: CPU ticks in 2 s\n");
    for (tid, name, t) in &b {
        let before = a.iter().find(|x| &x.0 == tid).map_or(0, |x| x.2);
        out.push_str(&format!(
            "{tid:>8} {name:<20} {:>5}\n",
            t.saturating_sub(before)
        ));
    }
    match Command::new("timeout")
        .args([
            "60",
            "gdb",
            "-p",
            &pid.to_string(),
            "-batch",
            "-ex",
            "thread apply all bt",
        ])
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => {
            out.push_str("== QEMU threads' stacks (gdb)\n");
            out.push_str(&String::from_utf8_lossy(&o.stdout));
        }
        _ => out.push_str("== (no gdb stacks: gdb missing or it failed)\n"),
    }
    out
}

/// Everything known about a hung boot's QEMU (pid `qemu_pid`, monitor socket `monitor`):
/// QEMU's own threads first (which burn CPU, where: a hang inside QEMU's TCG would not let
/// the monitor's vCPU commands answer), then [`diagnose`].
pub fn diagnose_hang(
    qemu_pid: u32,
    monitor: &Path,
    img: &Image,
    disk: &Path,
    con: &Console,
) -> String {
    let mut text = host_threads(qemu_pid);
    text.push_str(&diagnose(monitor, img, disk, con));
    text
}

/// What a hung guest is doing: registers per vCPU (twice, a few seconds apart: the same RIP
/// is a spin), the kernel's own view through SysRq, the RIPs named.
fn diagnose(monitor: &Path, img: &Image, disk: &Path, con: &Console) -> String {
    let mut out = String::new();
    let mut m = match Monitor::connect(monitor) {
        Ok(m) => m,
        Err(e) => return format!("cannot reach the QEMU monitor {}: {e}\n", monitor.display()),
    };
    out.push_str(&format!("== info status\n{}\n", m.cmd("info status")));
    out.push_str(&format!("== info cpus\n{}\n", m.cmd("info cpus")));
    let map = system_map(img, disk);
    for round in 1..=2 {
        for cpu in 0..2 {
            m.cmd(&format!("cpu {cpu}"));
            let regs = m.cmd("info registers");
            out.push_str(&format!(
                "== round {round}, cpu {cpu}: info registers\n{regs}\n"
            ));
            out.push_str(&name_rip(&mut m, &regs, map.as_deref()));
        }
        if round == 1 {
            std::thread::sleep(Duration::from_secs(3));
        }
    }
    let before = con.tail(100_000).len();
    // Console log level 9 first: the SysRq handlers print at KERN_INFO, below `loglevel=6`.
    for key in ["9", "l", "t", "w"] {
        m.cmd(&format!("sendkey alt-sysrq-{key}"));
        std::thread::sleep(Duration::from_secs(if key == "t" { 15 } else { 4 }));
    }
    let all = con.tail(100_000);
    out.push_str(&format!(
        "== serial console after SysRq 9, l, t, w\n{}\n",
        &all[before.min(all.len())..]
    ));
    out
}

/// The guest kernel's System.map, read out of the disk (the image's kernel is the one the
/// disk has in /boot).
fn system_map(img: &Image, disk: &Path) -> Option<String> {
    let vmlinuz = fs::canonicalize(&img.kernel).ok()?;
    let name = vmlinuz.file_name()?.to_string_lossy().into_owned();
    let release = name.strip_prefix("vmlinuz-").unwrap_or(&name).to_string();
    let out = Command::new("debugfs")
        .arg("-R")
        .arg(format!("cat /boot/System.map-{release}"))
        .arg(disk)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (text.len() > 1000).then_some(text)
}

/// For a kernel-mode RIP: its symbol, from the KASLR offset (the IDT's first gate is
/// `asm_exc_divide_error`) and the System.map; for a user-mode one: says so.
fn name_rip(m: &mut Monitor, regs: &str, map: Option<&str>) -> String {
    let field = |key: &str| -> Option<u64> {
        let i = regs.find(key)?;
        let v = regs[i + key.len()..].split_whitespace().next()?;
        u64::from_str_radix(v, 16).ok()
    };
    let Some(rip) = field("RIP=") else {
        return String::new();
    };
    let cpl = regs
        .find("CPL=")
        .and_then(|i| regs[i + 4..].chars().next())
        .and_then(|c| c.to_digit(10));
    if cpl == Some(3) {
        return format!("-> user space, RIP {rip:#x}\n");
    }
    let (Some(map), Some(idt)) = (map, field("IDT=")) else {
        return format!("-> kernel, RIP {rip:#x} (no System.map to name it)\n");
    };
    // The first 16-byte gate: offset bits 0-15 at 0, 16-31 at 6, 32-63 at 8.
    let dump = m.cmd(&format!("x /2gx {idt:#x}"));
    let words: Vec<u64> = dump
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("0x"))
        .filter_map(|w| u64::from_str_radix(w, 16).ok())
        .filter(|w| *w != idt)
        .collect();
    let (Some(&lo), Some(&hi)) = (words.first(), words.get(1)) else {
        return format!("-> kernel, RIP {rip:#x} (cannot read the IDT: {dump:?})\n");
    };
    let handler = (lo & 0xffff) | ((lo >> 48) << 16) | ((hi & 0xffff_ffff) << 32);
    let symbols = parse_system_map(map);
    let Some(&(base, _)) = symbols.iter().find(|(_, n)| n == "asm_exc_divide_error") else {
        return format!("-> kernel, RIP {rip:#x} (no asm_exc_divide_error in System.map)\n");
    };
    let offset = handler.wrapping_sub(base);
    let linked = rip.wrapping_sub(offset);
    let at = symbols.partition_point(|(a, _)| *a <= linked);
    match at.checked_sub(1).map(|i| &symbols[i]) {
        Some((a, name)) => format!(
            "-> kernel, RIP {rip:#x} = {name}+{:#x} (KASLR offset {offset:#x})\n",
            linked - a
        ),
        None => format!("-> kernel, RIP {rip:#x} (below every symbol)\n"),
    }
}

/// `ADDRESS TYPE NAME` lines, sorted by address.
fn parse_system_map(text: &str) -> Vec<(u64, String)> {
    let mut v: Vec<(u64, String)> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let a = u64::from_str_radix(f.next()?, 16).ok()?;
            let _kind = f.next()?;
            Some((a, f.next()?.to_string()))
        })
        .collect();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_stripped() {
        assert_eq!(
            strip_escapes("\x1b[K\x1b[Dinfo\r\n(qemu) "),
            "info\n(qemu) "
        );
    }

    #[test]
    fn system_map_lookup() {
        let map = "ffffffff81000000 T _stext\nffffffff81a00000 T asm_exc_divide_error\n";
        let s = parse_system_map(map);
        assert_eq!(s[1], (0xffffffff81a00000, "asm_exc_divide_error".into()));
    }
}
