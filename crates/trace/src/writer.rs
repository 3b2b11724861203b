//! Writing the trace files: bootchart2 sample blocks, `proc_ps.log` lines, `cmdline2.log`
//! blocks and the header. Pure formatting into any `Write`; where the files go is the
//! recorder's business.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{self, Write};

/// The longest `comm` written, in bytes after escaping: readers look for the closing `)`
/// within 66 bytes of the `(` (the kernel's longest names, its workers', are 64).
pub const MAX_COMM_BYTES: usize = 64;

/// A name (`comm`, exe path, argument) as the trace stores it: every control character
/// (below 0x20, 0x7f, and U+0080..U+009F) is written as `\xNN` per UTF-8 byte, so no name
/// can end a line or a block, or reach a terminal as a control sequence. A backslash is kept
/// as it is, so escaping twice changes nothing; the escape is for keeping the trace readable
/// and is not undone by readers (docs/trace-format.md).
pub fn escape_name(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

/// [`escape_name`] of bytes that need not be UTF-8 (a `comm` or path as the kernel gives it):
/// valid UTF-8 is kept, every other byte is written as `\xNN`, so the name is kept whole.
pub fn escape_bytes(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len());
    for chunk in raw.utf8_chunks() {
        for c in chunk.valid().chars() {
            push_escaped(&mut out, c);
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

fn push_escaped(out: &mut String, c: char) {
    if c.is_control() {
        let mut utf8 = [0u8; 4];
        for b in c.encode_utf8(&mut utf8).bytes() {
            let _ = write!(out, "\\x{b:02x}");
        }
    } else {
        out.push(c);
    }
}

/// [`escape_name`] cut to at most `max` bytes, never inside a character or an escape.
fn escape_cut(text: &str, max: usize) -> Cow<'_, str> {
    let escaped = escape_name(text);
    if escaped.len() <= max {
        return escaped;
    }
    let mut out = String::with_capacity(max);
    for c in text.chars() {
        let mut piece = String::new();
        push_escaped(&mut piece, c);
        if out.len() + piece.len() > max {
            break;
        }
        out.push_str(&piece);
    }
    Cow::Owned(out)
}

/// The fields of one `/proc/PID/stat` line that bootprint keeps (see docs/trace-format.md).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PsRecord {
    /// Process id.
    pub pid: u32,
    /// `comm`, without the parentheses.
    pub comm: String,
    /// State letter (R, S, D, Z, ...).
    pub state: char,
    /// Parent process id.
    pub ppid: u32,
    /// User CPU time in clock ticks.
    pub utime: u64,
    /// System CPU time in clock ticks.
    pub stime: u64,
    /// Kernel scheduling priority.
    pub priority: i64,
    /// Nice value.
    pub nice: i64,
    /// Number of threads.
    pub num_threads: u64,
    /// Start time after boot in clock ticks.
    pub starttime: u64,
    /// Resident set size in pages.
    pub rss: u64,
    /// Aggregated block I/O delay in clock ticks.
    pub blkio_ticks: u64,
}

impl PsRecord {
    /// Writes the record as a 52-field `/proc/PID/stat` line (with newline); fields not kept
    /// are written as 0. `comm` is escaped ([`escape_name`]) and cut to [`MAX_COMM_BYTES`].
    pub fn write_line(&self, out: &mut impl Write) -> io::Result<()> {
        // Fields 5..=13: pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt.
        write!(
            out,
            "{} ({}) {} {} 0 0 0 0 0 0 0 0 0 {} {} 0 0 {} {} {} 0 {} 0 {}",
            self.pid,
            escape_cut(&self.comm, MAX_COMM_BYTES),
            self.state,
            self.ppid,
            self.utime,
            self.stime,
            self.priority,
            self.nice,
            self.num_threads,
            self.starttime,
            self.rss
        )?;
        // Fields 25..=41 are zero, 42 is delayacct_blkio_ticks, 43..=52 zero.
        out.write_all(b" 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0")?;
        writeln!(out, " {} 0 0 0 0 0 0 0 0 0 0", self.blkio_ticks)
    }
}

/// Writes one sample block: the time in centiseconds, the body, an empty line.
pub fn write_block(out: &mut impl Write, uptime_cs: u64, body: &[u8]) -> io::Result<()> {
    writeln!(out, "{uptime_cs}")?;
    out.write_all(body)?;
    if !body.ends_with(b"\n") {
        out.write_all(b"\n")?;
    }
    out.write_all(b"\n")
}

/// Writes one `cmdline2.log` block: pid, `:exe`, `:argv` with each argument NUL-terminated.
/// The exe path and the arguments are escaped ([`escape_name`]): a newline would end the
/// block early for every reader.
pub fn write_cmdline(out: &mut impl Write, pid: u32, exe: &str, argv: &[String]) -> io::Result<()> {
    writeln!(out, "{pid}")?;
    writeln!(out, ":{}", escape_name(exe))?;
    out.write_all(b":")?;
    for arg in argv {
        out.write_all(escape_name(arg).as_bytes())?;
        out.write_all(b"\0")?;
    }
    out.write_all(b"\n\n")
}

/// Writes the header as `key = value` lines, in the order given.
pub fn write_header(out: &mut impl Write, entries: &[(String, String)]) -> io::Result<()> {
    for (k, v) in entries {
        writeln!(out, "{k} = {}", v.replace('\n', " "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ps_line_has_stat_layout() {
        let r = PsRecord {
            pid: 7,
            comm: "my prog".into(),
            state: 'D',
            ppid: 1,
            utime: 11,
            stime: 12,
            priority: 20,
            nice: 0,
            num_threads: 1,
            starttime: 345,
            rss: 99,
            blkio_ticks: 5,
        };
        let mut buf = Vec::new();
        r.write_line(&mut buf).unwrap();
        let line = String::from_utf8(buf).unwrap();
        let after = line.rsplit_once(") ").unwrap().1;
        let f: Vec<&str> = after.split_whitespace().collect();
        // f[0] is field 3 (state); field N is f[N - 3].
        assert_eq!(f.len(), 50, "{line}");
        assert_eq!(f[0], "D");
        assert_eq!(f[4 - 3], "1");
        assert_eq!(f[14 - 3], "11");
        assert_eq!(f[15 - 3], "12");
        assert_eq!(f[22 - 3], "345");
        assert_eq!(f[24 - 3], "99");
        assert_eq!(f[42 - 3], "5");
    }

    /// Defect 5: a process can name itself anything (prctl PR_SET_NAME, an exec path); a
    /// newline in `comm` or the exe path made the whole trace unreadable.
    #[test]
    fn defect5_names_with_newlines_keep_the_trace_readable() {
        let mut text = Vec::new();
        let mut body = Vec::new();
        for (pid, comm) in [(7, "evil\n9 (x"), (8, "tab\there\u{7f}\u{9b}"), (9, "sh")] {
            PsRecord {
                pid,
                comm: comm.into(),
                state: 'S',
                ppid: 1,
                starttime: 5,
                ..PsRecord::default()
            }
            .write_line(&mut body)
            .unwrap();
        }
        write_block(&mut text, 100, &body).unwrap();
        let log = crate::bootchart::parse_proc_ps(std::str::from_utf8(&text).unwrap()).unwrap();
        let comms: Vec<(u32, &str)> = log
            .records
            .iter()
            .map(|r| (r.pid, r.comm.as_str()))
            .collect();
        assert_eq!(
            comms,
            vec![
                (7, "evil\\x0a9 (x"),
                (8, "tab\\x09here\\x7f\\xc2\\x9b"),
                (9, "sh")
            ]
        );
        let mut buf = Vec::new();
        write_cmdline(&mut buf, 7, "/tmp/a\nb", &["a\nb".into(), "c\rd".into()]).unwrap();
        write_cmdline(&mut buf, 8, "/bin/sh", &[]).unwrap();
        let e = crate::bootchart::parse_cmdline2(std::str::from_utf8(&buf).unwrap()).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].pid, e[0].exe.as_str()), (7, "/tmp/a\\x0ab"));
        assert_eq!(
            e[0].args,
            vec!["a\\x0ab".to_string(), "c\\x0dd".to_string()]
        );
        assert_eq!(e[1].pid, 8);
    }

    /// Defect 5: bytes that are not UTF-8 are kept as `\xNN`, never dropped.
    #[test]
    fn defect5_bytes_not_utf8_are_escaped() {
        assert_eq!(escape_bytes(b"a\xffb\xe2\x82"), "a\\xffb\\xe2\\x82");
        assert_eq!(escape_bytes("\u{fc}n\n".as_bytes()), "\u{fc}n\\x0a");
        // Escaping twice changes nothing: the sampler escapes bytes, the writer text.
        let once = escape_bytes(b"x\x01\xff");
        assert_eq!(escape_name(&once), once);
        // A comm escaped past the reader's window is cut at a whole escape.
        let long = "\u{1}".repeat(20);
        let mut buf = Vec::new();
        PsRecord {
            pid: 3,
            comm: long,
            ..PsRecord::default()
        }
        .write_line(&mut buf)
        .unwrap();
        let line = String::from_utf8(buf).unwrap();
        let r = crate::bootchart::parse_ps_line(line.trim_end()).unwrap();
        assert_eq!(r.comm, "\\x01".repeat(16));
    }

    #[test]
    fn block_and_cmdline_layout() {
        let mut buf = Vec::new();
        write_block(&mut buf, 123, b"cpu 1 2 3").unwrap();
        assert_eq!(buf, b"123\ncpu 1 2 3\n\n");
        let mut buf = Vec::new();
        write_cmdline(&mut buf, 9, "/bin/sh", &["sh".into(), "-c".into()]).unwrap();
        assert_eq!(buf, b"9\n:/bin/sh\n:sh\0-c\0\n\n");
        let mut buf = Vec::new();
        write_cmdline(&mut buf, 9, "/bin/sh", &["sh".into(), "echo a\n\nb".into()]).unwrap();
        assert_eq!(buf, b"9\n:/bin/sh\n:sh\0echo a\\x0a\\x0ab\0\n\n");
    }
}
