//! Writing the trace files: bootchart2 sample blocks, `proc_ps.log` lines, `cmdline2.log`
//! blocks and the header. Pure formatting into any `Write`; where the files go is the
//! recorder's business.

use std::io::{self, Write};

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
    /// are written as 0.
    pub fn write_line(&self, out: &mut impl Write) -> io::Result<()> {
        // Fields 5..=13: pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt.
        write!(
            out,
            "{} ({}) {} {} 0 0 0 0 0 0 0 0 0 {} {} 0 0 {} {} {} 0 {} 0 {}",
            self.pid,
            self.comm,
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
pub fn write_cmdline(out: &mut impl Write, pid: u32, exe: &str, argv: &[String]) -> io::Result<()> {
    writeln!(out, "{pid}")?;
    writeln!(out, ":{exe}")?;
    out.write_all(b":")?;
    for arg in argv {
        // A newline would end the block early for every reader; bootchart2's collector cuts
        // an argument at its first newline, and so do we.
        let arg = arg.split('\n').next().unwrap_or("");
        out.write_all(arg.as_bytes())?;
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
        assert_eq!(buf, b"9\n:/bin/sh\n:sh\0echo a\0\n\n");
    }
}
