//! The kernel log from `/dev/kmsg`, formatted as `dmesg` prints it.

use std::io::Read;
use std::path::Path;

/// Formats one `/dev/kmsg` record (`prio,seq,usec,flags;message` plus continuation lines)
/// as `[seconds.micros] message`. `None` for a record that is not in that form.
pub fn format_record(record: &str) -> Option<String> {
    let first = record.lines().next()?;
    let (prefix, message) = first.split_once(';')?;
    let usec: u64 = prefix.split(',').nth(2)?.parse().ok()?;
    Some(format!(
        "[{:5}.{:06}] {}",
        usec / 1_000_000,
        usec % 1_000_000,
        unescape(message)
    ))
}

/// `/dev/kmsg` escapes non-printable bytes as `\xNN`; the ones dmesg shows as text
/// (tabs) are restored.
fn unescape(s: &str) -> String {
    s.replace("\\x09", "\t")
}

/// Reads every record now in the kernel ring buffer at `path` (normally `/dev/kmsg`).
pub fn read_all(path: &Path) -> Vec<u8> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut out = Vec::new();
    let Ok(mut f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    else {
        return out;
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if let Some(line) = format_record(&String::from_utf8_lossy(&buf[..n])) {
                    out.extend_from_slice(line.as_bytes());
                    out.push(b'\n');
                }
            }
            // EPIPE: a record was overwritten while we read; the next read goes on.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(_) => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_dmesg() {
        assert_eq!(
            format_record("6,339,5140900,-;Run /init as init process\n SUBSYSTEM=x\n").unwrap(),
            "[    5.140900] Run /init as init process"
        );
        assert_eq!(
            format_record("4,1,123456789,c;a\\x09b").unwrap(),
            "[  123.456789] a\tb"
        );
        assert!(format_record("garbage").is_none());
    }

    #[test]
    fn reads_the_real_kernel_log_when_allowed() {
        let out = read_all(Path::new("/dev/kmsg"));
        if out.is_empty() {
            testkit::skip("/dev/kmsg not readable here");
            return;
        }
        let text = String::from_utf8(out).unwrap();
        assert!(text.lines().all(|l| l.starts_with('[') && l.contains("] ")));
    }
}
