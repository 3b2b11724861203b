//! Parsing the bootchart2-compatible logs of a trace: `header`, `proc_stat.log`,
//! `proc_diskstats.log`, `proc_meminfo.log`, `proc_ps.log` and `cmdline2.log`.
//!
//! Every function here is pure: it takes the file's text and returns values or a
//! [`ParseError`] naming the file, the line and what was expected. The layouts are those of
//! bootchart2's collector as read by its parser (`pybootchartgui/parsing.py`); see
//! `docs/trace-format.md` and `docs/report.md`.

use std::fmt;
use std::ops::Range;

use crate::writer::PsRecord;

/// Why a trace file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// File name inside the trace, e.g. `proc_ps.log`.
    pub file: String,
    /// 1-based line number, when the problem is on one line.
    pub line: Option<usize>,
    /// What was expected (or what went wrong).
    pub expected: String,
}

impl ParseError {
    /// An error on one line of `file`.
    pub fn at(file: &str, line: usize, expected: impl Into<String>) -> ParseError {
        ParseError {
            file: file.to_string(),
            line: Some(line),
            expected: expected.into(),
        }
    }

    /// An error about `file` as a whole.
    pub fn whole(file: &str, expected: impl Into<String>) -> ParseError {
        ParseError {
            file: file.to_string(),
            line: None,
            expected: expected.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: expected {}", self.file, line, self.expected),
            None => write!(f, "{}: {}", self.file, self.expected),
        }
    }
}

impl std::error::Error for ParseError {}

/// One sample block: the uptime line and the lines after it up to an empty line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block<'a> {
    /// Line number of the time line.
    pub line: usize,
    /// Uptime in centiseconds.
    pub t_cs: u64,
    /// The block's data lines (without the trailing empty line).
    pub body: &'a str,
}

impl<'a> Block<'a> {
    /// The data lines with their 1-based line numbers.
    pub fn lines(&self) -> impl Iterator<Item = (usize, &'a str)> + 'a {
        let first = self.line + 1;
        let body = self.body;
        body.lines().enumerate().map(move |(i, l)| (first + i, l))
    }
}

/// Splits a sample-block log into blocks. Blocks whose last line ends in ` not running` (the
/// collector's marker for a file it could not read) are skipped, as bootchart2 does.
pub fn blocks<'a>(file: &str, text: &'a str) -> Result<Vec<Block<'a>>, ParseError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut pos = 0;
    let mut line = 1;
    while pos < bytes.len() {
        // Skip empty lines between blocks.
        if bytes[pos] == b'\n' {
            pos += 1;
            line += 1;
            continue;
        }
        let eol = memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
        let time_text = text[pos..eol].trim();
        let t_cs = time_text.parse::<u64>().map_err(|_| {
            ParseError::at(
                file,
                line,
                format!("a time in centiseconds starting a block, found {time_text:?}"),
            )
        })?;
        let time_line = line;
        if eol >= bytes.len() {
            out.push(Block {
                line: time_line,
                t_cs,
                body: "",
            });
            break;
        }
        // The body runs to the first "\n\n" counted from the time line's own newline. Hop
        // from newline to newline (`str::find(char)` is a fast memchr), counting lines.
        let mut body_lines = 0;
        let mut at = eol;
        let blank = loop {
            if bytes.get(at + 1) == Some(&b'\n') {
                break Some(at);
            }
            match text[at + 1..].find('\n') {
                Some(i) => {
                    at += 1 + i;
                    body_lines += 1;
                }
                None => break None,
            }
        };
        let (body, next) = match blank {
            Some(k) if k == eol => ("", eol + 2),
            Some(k) => (&text[eol + 1..k], k + 2),
            None => {
                let body = text[eol + 1..].trim_end_matches('\n');
                body_lines = body.lines().count();
                (body, bytes.len())
            }
        };
        line = time_line + 1 + body_lines + 1;
        pos = next;
        if body.trim_end().ends_with(" not running") {
            continue;
        }
        out.push(Block {
            line: time_line,
            t_cs,
            body,
        });
    }
    Ok(out)
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

/// `header`: `key = value` lines in file order. A line without `=` continues the previous
/// value (bootchart2 writes `system.cpu` over two lines), as bootchart2's parser reads it.
pub fn parse_header(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some((k, v)) = line.split_once('=') {
            out.push((k.trim().to_string(), v.trim().to_string()));
        } else if let Some(last) = out.last_mut() {
            last.1.push_str(line.trim());
        }
    }
    out
}

/// Cumulative CPU times from the `cpu` line of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// user
    pub user: u64,
    /// nice
    pub nice: u64,
    /// system
    pub system: u64,
    /// idle
    pub idle: u64,
    /// iowait
    pub iowait: u64,
    /// irq
    pub irq: u64,
    /// softirq
    pub softirq: u64,
    /// steal (0 on kernels without it)
    pub steal: u64,
}

/// One `proc_stat.log` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatSample {
    /// Uptime in centiseconds.
    pub t_cs: u64,
    /// The all-CPU `cpu` line.
    pub cpu: CpuTimes,
    /// Number of `cpuN` lines (online CPUs).
    pub ncpus: u32,
    /// `procs_blocked`, if present.
    pub procs_blocked: Option<u64>,
}

/// Parses `proc_stat.log`. Each block must start with the `cpu` line.
pub fn parse_proc_stat(text: &str) -> Result<Vec<StatSample>, ParseError> {
    const FILE: &str = "proc_stat.log";
    let mut out = Vec::new();
    for block in blocks(FILE, text)? {
        let mut cpu = None;
        let mut ncpus = 0;
        let mut procs_blocked = None;
        for (n, line) in block.lines() {
            if let Some(rest) = line.strip_prefix("cpu ") {
                let mut v = [0u64; 8];
                let mut count = 0;
                for (i, tok) in rest.split_ascii_whitespace().enumerate() {
                    let x = tok.parse::<u64>().map_err(|_| {
                        ParseError::at(FILE, n, format!("a number of clock ticks, found {tok:?}"))
                    })?;
                    if i < 8 {
                        v[i] = x;
                    }
                    count += 1;
                }
                if count < 7 {
                    return Err(ParseError::at(
                        FILE,
                        n,
                        format!("at least 7 CPU times on the cpu line, found {count}"),
                    ));
                }
                cpu = Some(CpuTimes {
                    user: v[0],
                    nice: v[1],
                    system: v[2],
                    idle: v[3],
                    iowait: v[4],
                    irq: v[5],
                    softirq: v[6],
                    steal: v[7],
                });
            } else if line.starts_with("cpu") {
                ncpus += 1;
            } else if let Some(rest) = line.strip_prefix("procs_blocked ") {
                procs_blocked = rest.trim().parse().ok();
            }
        }
        let cpu =
            cpu.ok_or_else(|| ParseError::at(FILE, block.line + 1, "a `cpu ` line in the block"))?;
        out.push(StatSample {
            t_cs: block.t_cs,
            cpu,
            ncpus,
            procs_blocked,
        });
    }
    Ok(out)
}

/// One device line of `/proc/diskstats` (the fields analysis uses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskLine {
    /// Device name, e.g. `sda` or `vda1`.
    pub name: String,
    /// Sectors (512 bytes) read.
    pub read_sectors: u64,
    /// Sectors written.
    pub write_sectors: u64,
    /// Milliseconds spent with I/O in flight (`io_ticks`).
    pub io_ticks_ms: u64,
}

/// One `proc_diskstats.log` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskBlock {
    /// Uptime in centiseconds.
    pub t_cs: u64,
    /// Device lines with the full (14 or more field) layout; the short partition lines of
    /// 2.6 kernels are left out, as bootchart2 does.
    pub disks: Vec<DiskLine>,
}

/// Parses `proc_diskstats.log`.
pub fn parse_proc_diskstats(text: &str) -> Result<Vec<DiskBlock>, ParseError> {
    const FILE: &str = "proc_diskstats.log";
    let mut out = Vec::new();
    for block in blocks(FILE, text)? {
        let mut disks = Vec::new();
        for (n, line) in block.lines() {
            let mut f = [""; 14];
            let mut count = 0;
            for tok in line.split_ascii_whitespace() {
                if count < 14 {
                    f[count] = tok;
                }
                count += 1;
            }
            if count == 0 || count < 14 {
                continue;
            }
            let num = |i: usize| -> Result<u64, ParseError> {
                f[i].parse::<u64>().map_err(|_| {
                    ParseError::at(
                        FILE,
                        n,
                        format!("a number in field {}, found {:?}", i + 1, f[i]),
                    )
                })
            };
            disks.push(DiskLine {
                name: f[2].to_string(),
                read_sectors: num(5)?,
                write_sectors: num(9)?,
                io_ticks_ms: num(12)?,
            });
        }
        out.push(DiskBlock {
            t_cs: block.t_cs,
            disks,
        });
    }
    Ok(out)
}

/// One `proc_meminfo.log` block, in KiB; absent keys are `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemBlock {
    /// Uptime in centiseconds.
    pub t_cs: u64,
    /// MemTotal
    pub total: Option<u64>,
    /// MemFree
    pub free: Option<u64>,
    /// MemAvailable
    pub available: Option<u64>,
    /// Buffers
    pub buffers: Option<u64>,
    /// Cached
    pub cached: Option<u64>,
    /// SwapTotal
    pub swap_total: Option<u64>,
    /// SwapFree
    pub swap_free: Option<u64>,
    /// Dirty
    pub dirty: Option<u64>,
}

/// Parses `proc_meminfo.log`; unknown keys are ignored.
pub fn parse_proc_meminfo(text: &str) -> Result<Vec<MemBlock>, ParseError> {
    const FILE: &str = "proc_meminfo.log";
    let mut out = Vec::new();
    for block in blocks(FILE, text)? {
        let mut m = MemBlock {
            t_cs: block.t_cs,
            ..MemBlock::default()
        };
        for (n, line) in block.lines() {
            let Some((key, rest)) = line.split_once(':') else {
                if line.trim().is_empty() {
                    continue;
                }
                return Err(ParseError::at(
                    FILE,
                    n,
                    format!("`Key: value kB`, found {line:?}"),
                ));
            };
            let slot = match key.trim() {
                "MemTotal" => &mut m.total,
                "MemFree" => &mut m.free,
                "MemAvailable" => &mut m.available,
                "Buffers" => &mut m.buffers,
                "Cached" => &mut m.cached,
                "SwapTotal" => &mut m.swap_total,
                "SwapFree" => &mut m.swap_free,
                "Dirty" => &mut m.dirty,
                _ => continue,
            };
            let value = rest.split_ascii_whitespace().next().unwrap_or("");
            *slot = Some(value.parse().map_err(|_| {
                ParseError::at(FILE, n, format!("a number of kB after `{}:`", key.trim()))
            })?);
        }
        out.push(m);
    }
    Ok(out)
}

/// `proc_ps.log`: all records in file order, and the blocks as ranges into them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PsLog {
    /// The blocks in time order.
    pub blocks: Vec<PsBlock>,
    /// Every record of every block.
    pub records: Vec<PsRecord>,
}

/// One `proc_ps.log` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PsBlock {
    /// Uptime in centiseconds.
    pub t_cs: u64,
    /// Indices into [`PsLog::records`].
    pub records: Range<usize>,
}

impl PsLog {
    /// The records of one block.
    pub fn block_records(&self, block: &PsBlock) -> &[PsRecord] {
        &self.records[block.records.clone()]
    }
}

/// Number of fields after the command that a `proc_ps.log` line must have: through field 22,
/// `starttime` (older kernels write fewer than 52; `rss` and `delayacct_blkio_ticks` are read
/// when present).
pub const PS_MIN_FIELDS_AFTER_COMM: usize = 20;

/// Parses `proc_ps.log` into memory. For large traces prefer [`for_each_ps_block`].
pub fn parse_proc_ps(text: &str) -> Result<PsLog, ParseError> {
    let mut log = PsLog::default();
    for_each_ps_block(text, |t_cs, records| {
        let start = log.records.len();
        log.records.extend_from_slice(records);
        log.blocks.push(PsBlock {
            t_cs,
            records: start..log.records.len(),
        });
    })?;
    Ok(log)
}

/// Streams `proc_ps.log` text block by block: `f` gets each block's time and records. See
/// [`for_each_ps_block_read`].
pub fn for_each_ps_block(text: &str, f: impl FnMut(u64, &[PsRecord])) -> Result<usize, ParseError> {
    for_each_ps_block_read(text.as_bytes(), f)
}

/// Streams `proc_ps.log` from a reader, block by block: `f` gets each block's time and
/// records. Only one line and one block's records are held at a time, and the record buffer
/// is reused between blocks, so after the first blocks parsing allocates nothing per line.
/// A block whose last line ends in ` not running` is skipped, as in [`blocks`]. Returns the
/// number of blocks passed to `f`.
pub fn for_each_ps_block_read(
    mut input: impl std::io::BufRead,
    mut f: impl FnMut(u64, &[PsRecord]),
) -> Result<usize, ParseError> {
    const FILE: &str = "proc_ps.log";
    let mut raw: Vec<u8> = Vec::with_capacity(512);
    let mut buf: Vec<PsRecord> = Vec::new();
    let mut line_no = 0usize;
    let mut count = 0usize;
    // The block being read: its time, records so far, the first bad line (reported at the
    // block's end unless the block turns out to be a ` not running` one) and its last line.
    let mut block: Option<u64> = None;
    let mut used = 0usize;
    let mut pending: Option<ParseError> = None;
    let mut not_running = false;
    loop {
        raw.clear();
        let n = input
            .read_until(b'\n', &mut raw)
            .map_err(|e| ParseError::whole(FILE, format!("read error: {e}")))?;
        let at_eof = n == 0;
        if !at_eof {
            line_no += 1;
        }
        let text = String::from_utf8_lossy(&raw);
        let line = text.trim_end_matches(['\n', '\r']);
        if at_eof || line.trim().is_empty() {
            if let Some(t_cs) = block.take() {
                if !not_running {
                    if let Some(e) = pending.take() {
                        return Err(e);
                    }
                    f(t_cs, &buf[..used]);
                    count += 1;
                }
                pending = None;
            }
            if at_eof {
                return Ok(count);
            }
            continue;
        }
        match block {
            None => {
                let t_cs = line.trim().parse::<u64>().map_err(|_| {
                    ParseError::at(
                        FILE,
                        line_no,
                        format!("a time in centiseconds starting a block, found {line:?}"),
                    )
                })?;
                block = Some(t_cs);
                used = 0;
                not_running = false;
            }
            Some(_) => {
                not_running = line.trim_end().ends_with(" not running");
                if pending.is_some() || not_running {
                    continue;
                }
                if used == buf.len() {
                    buf.push(PsRecord::default());
                }
                match parse_ps_line_into(line, &mut buf[used]) {
                    Ok(()) => used += 1,
                    Err(e) => pending = Some(ParseError::at(FILE, line_no, e)),
                }
            }
        }
    }
}

/// Parses one `/proc/PID/stat` line. `comm` runs from the first ` (` to the last `)`, so it
/// may hold spaces and parentheses.
pub fn parse_ps_line(line: &str) -> Result<PsRecord, String> {
    let mut r = PsRecord::default();
    parse_ps_line_into(line, &mut r)?;
    Ok(r)
}

/// [`parse_ps_line`] into an existing record, reusing its `comm` buffer. This runs once per
/// `proc_ps.log` line (millions in a long trace), so it scans bytes once and parses only the
/// fields it keeps.
pub fn parse_ps_line_into(line: &str, r: &mut PsRecord) -> Result<(), String> {
    // A byte search: `str::find` with a string pattern costs a searcher set-up per line.
    let open = line
        .as_bytes()
        .iter()
        .position(|&b| b == b'(')
        .filter(|&p| p > 0 && line.as_bytes()[p - 1] == b' ')
        .map(|p| p - 1)
        .ok_or_else(|| "`PID (comm) ...`: no ` (` after the pid".to_string())?;
    // comm is at most 64 bytes (kernel workers' long names), so the closing `)` is near the
    // start; searching back from the end would cross all the fields.
    let head = &line.as_bytes()[..line.len().min(open + 2 + 66)];
    let close = head
        .iter()
        .rposition(|&b| b == b')')
        .filter(|&c| c > open)
        .ok_or_else(|| "`)` closing the command".to_string())?;
    r.pid = parse_u64(line[..open].trim().as_bytes())
        .and_then(|p| u32::try_from(p).ok())
        .ok_or_else(|| format!("a pid at the start of the line, found {:?}", &line[..open]))?;
    r.comm.clear();
    r.comm.push_str(&line[open + 2..close]);
    r.rss = 0;
    r.blkio_ticks = 0;
    let rest = &line.as_bytes()[close + 1..];
    let bad = |field: usize, tok: &[u8]| {
        format!(
            "a number in field {field}, found {:?}",
            String::from_utf8_lossy(tok)
        )
    };
    let mut field = 2; // comm was field 2
    let mut i = 0;
    // The kernel separates fields by one space; runs of blanks are tolerated.
    let blank = |b: u8| b == b' ' || b == b'\t' || b == b'\r';
    while field < 42 {
        while i < rest.len() && blank(rest[i]) {
            i += 1;
        }
        if i == rest.len() {
            break;
        }
        let start = i;
        while i < rest.len() && !blank(rest[i]) {
            i += 1;
        }
        let tok = &rest[start..i];
        field += 1;
        let u = || parse_u64(tok).ok_or_else(|| bad(field, tok));
        let s = || parse_i64(tok).ok_or_else(|| bad(field, tok));
        match field {
            3 => r.state = tok.first().map_or('?', |&b| b as char),
            4 => r.ppid = u()?.try_into().map_err(|_| bad(field, tok))?,
            14 => r.utime = u()?,
            15 => r.stime = u()?,
            18 => r.priority = s()?,
            19 => r.nice = s()?,
            20 => r.num_threads = u()?,
            22 => r.starttime = u()?,
            24 => r.rss = u()?,
            42 => r.blkio_ticks = u()?,
            _ => {}
        }
    }
    let count = field - 2;
    if count < PS_MIN_FIELDS_AFTER_COMM {
        return Err(format!(
            "at least {PS_MIN_FIELDS_AFTER_COMM} fields after the command, found {count}"
        ));
    }
    Ok(())
}

fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

fn parse_i64(b: &[u8]) -> Option<i64> {
    match b.split_first() {
        Some((b'-', rest)) => parse_u64(rest)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        _ => parse_u64(b).and_then(|v| i64::try_from(v).ok()),
    }
}

/// One `cmdline2.log` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdlineEntry {
    /// Process id.
    pub pid: u32,
    /// Executable path (empty when unknown).
    pub exe: String,
    /// Arguments.
    pub args: Vec<String>,
}

/// Parses `cmdline2.log`: blocks of `pid`, `:exe`, `:arg\0arg\0`, then an empty line. A pid
/// may appear more than once (after an exec); callers keep the last.
pub fn parse_cmdline2(text: &str) -> Result<Vec<CmdlineEntry>, ParseError> {
    const FILE: &str = "cmdline2.log";
    let mut out = Vec::new();
    let mut line = 1;
    for block in text.split("\n\n") {
        let start_line = line;
        line += block.bytes().filter(|&b| b == b'\n').count() + 2;
        // Tolerate extra blank lines between blocks.
        let trimmed = block.trim_start_matches('\n');
        let start_line = start_line + (block.len() - trimmed.len());
        let block = trimmed;
        if block.trim().is_empty() {
            continue;
        }
        let mut lines = block.splitn(3, '\n');
        let pid_text = lines.next().unwrap_or("");
        let pid = pid_text
            .trim()
            .parse::<u32>()
            .map_err(|_| ParseError::at(FILE, start_line, format!("a pid, found {pid_text:?}")))?;
        let exe = lines
            .next()
            .and_then(|l| l.strip_prefix(':'))
            .ok_or_else(|| ParseError::at(FILE, start_line + 1, "`:<exe path>` after the pid"))?;
        let argv = lines
            .next()
            .and_then(|l| l.strip_prefix(':'))
            .ok_or_else(|| ParseError::at(FILE, start_line + 2, "`:<NUL-separated argv>`"))?;
        let argv = argv.strip_suffix('\n').unwrap_or(argv);
        let mut args: Vec<String> = argv.split('\0').map(str::to_string).collect();
        // Each argument is NUL-terminated, so the split leaves an empty last piece.
        if args.last().is_some_and(|a| a.is_empty()) {
            args.pop();
        }
        out.push(CmdlineEntry {
            pid,
            exe: exe.to_string(),
            args,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_split_with_line_numbers() {
        let text = "10\na\nb\n\n20\n\n30\nc\n";
        let b = blocks("x.log", text).unwrap();
        assert_eq!(b.len(), 3);
        assert_eq!((b[0].line, b[0].t_cs, b[0].body), (1, 10, "a\nb"));
        assert_eq!((b[1].line, b[1].t_cs, b[1].body), (5, 20, ""));
        assert_eq!((b[2].line, b[2].t_cs, b[2].body), (7, 30, "c"));
        let lines: Vec<_> = b[0].lines().collect();
        assert_eq!(lines, vec![(2, "a"), (3, "b")]);
        let err = blocks("x.log", "10\na\n\nfoo\nb\n").unwrap_err();
        assert_eq!(err.line, Some(4));
        assert!(
            err.to_string().starts_with("x.log:4: expected a time"),
            "{err}"
        );
    }

    #[test]
    fn ps_stream_skips_not_running_blocks_and_names_bad_lines() {
        let good = "1 (init) S 0 0 0 0 0 0 0 0 0 0 1 2 0 0 20 0 1 0 5 0 0";
        let text = format!("10\n{good}\n\n\n20\n{good}\n/proc/x not running\n\n30\n{good}\n{good}");
        let mut seen = Vec::new();
        let n = for_each_ps_block(&text, |t, r| seen.push((t, r.len()))).unwrap();
        assert_eq!(n, 2);
        assert_eq!(seen, vec![(10, 1), (30, 2)]);
        let err =
            for_each_ps_block(&format!("10\n{good}\n\n20\n1 (x) S\n"), |_, _| {}).unwrap_err();
        assert_eq!(err.line, Some(5));
        let err = for_each_ps_block("10\n\nabc\n", |_, _| {}).unwrap_err();
        assert_eq!(
            err.to_string(),
            "proc_ps.log:3: expected a time in centiseconds starting a block, found \"abc\""
        );
    }

    #[test]
    fn not_running_blocks_are_skipped() {
        let b = blocks("x.log", "10\n/proc/foo not running\n\n20\nok\n\n").unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].t_cs, 20);
    }

    #[test]
    fn header_continuation_lines() {
        let h = parse_header("a = 1\nsystem.cpu = model\nmore (2)\nb=x = y\n");
        assert_eq!(h[1], ("system.cpu".into(), "modelmore (2)".into()));
        assert_eq!(h[2], ("b".into(), "x = y".into()));
    }

    #[test]
    fn ps_line_with_spaces_in_comm_and_old_kernel_length() {
        let line = "42 (my (odd) prog) D 7 0 0 0 -1 0 0 0 0 0 11 12 0 0 20 0 3 0 345 100 99";
        let r = parse_ps_line(line).unwrap();
        assert_eq!(r.pid, 42);
        assert_eq!(r.comm, "my (odd) prog");
        assert_eq!(r.state, 'D');
        assert_eq!((r.ppid, r.utime, r.stime, r.starttime), (7, 11, 12, 345));
        assert_eq!((r.num_threads, r.rss, r.blkio_ticks), (3, 99, 0));
        let err = parse_ps_line("1 (init) S 0 0").unwrap_err();
        assert!(
            err.contains("at least 20 fields after the command, found 3"),
            "{err}"
        );
        let err = parse_ps_proc_error();
        assert_eq!(
            err.to_string(),
            "proc_ps.log:3: expected a number in field 14, found \"x\""
        );
    }

    fn parse_ps_proc_error() -> ParseError {
        let good = "1 (init) S 0 0 0 0 0 0 0 0 0 0 1 2 0 0 20 0 1 0 5 0 0";
        let bad = "2 (kthreadd) S 0 0 0 0 0 0 0 0 0 0 x 2 0 0 20 0 1 0 5 0 0";
        parse_proc_ps(&format!("100\n{good}\n{bad}\n\n")).unwrap_err()
    }

    #[test]
    fn ps_round_trips_through_writer() {
        let r = PsRecord {
            pid: 9,
            comm: "a b".into(),
            state: 'R',
            ppid: 1,
            utime: 5,
            stime: 6,
            priority: 20,
            nice: -5,
            num_threads: 2,
            starttime: 77,
            rss: 123,
            blkio_ticks: 4,
        };
        let mut buf = Vec::new();
        r.write_line(&mut buf).unwrap();
        let line = String::from_utf8(buf).unwrap();
        assert_eq!(parse_ps_line(line.trim_end()).unwrap(), r);
    }

    #[test]
    fn stat_and_disk_and_mem() {
        let stat = "5\ncpu  1 2 3 4 5 6 7 8 9\ncpu0 1 1 1 1 1 1 1\ncpu1 0 0 0 0 0 0 0\nprocs_blocked 3\n\n";
        let s = parse_proc_stat(stat).unwrap();
        assert_eq!(s[0].cpu.softirq, 7);
        assert_eq!(s[0].cpu.steal, 8);
        assert_eq!((s[0].ncpus, s[0].procs_blocked), (2, Some(3)));
        let err = parse_proc_stat("5\ncpu0 1 2\n\n").unwrap_err();
        assert_eq!(err.line, Some(2));
        let disk = "7\n   8    0 sda 10 9 152 176 0 0 40 0 1 124 180\n   8    1 sda1 1 2 3 4\n\n";
        let d = parse_proc_diskstats(disk).unwrap();
        assert_eq!(d[0].disks.len(), 1);
        assert_eq!(d[0].disks[0].read_sectors, 152);
        assert_eq!(d[0].disks[0].write_sectors, 40);
        assert_eq!(d[0].disks[0].io_ticks_ms, 124);
        let m = parse_proc_meminfo("3\nMemTotal: 100 kB\nFoo: 1 kB\nCached:   7 kB\n\n").unwrap();
        assert_eq!(
            (m[0].total, m[0].cached, m[0].free),
            (Some(100), Some(7), None)
        );
    }

    #[test]
    fn cmdline2_layout() {
        let mut buf = Vec::new();
        crate::writer::write_cmdline(&mut buf, 9, "/bin/sh", &["sh".into(), "-c".into()]).unwrap();
        crate::writer::write_cmdline(&mut buf, 2, "", &[]).unwrap();
        let e = parse_cmdline2(std::str::from_utf8(&buf).unwrap()).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].pid, e[0].exe.as_str()), (9, "/bin/sh"));
        assert_eq!(e[0].args, vec!["sh".to_string(), "-c".to_string()]);
        assert_eq!((e[1].pid, e[1].exe.as_str(), e[1].args.len()), (2, "", 0));
        let err = parse_cmdline2("9\n:/bin/sh\n:a\0\n\nx\n:\n:\n\n").unwrap_err();
        assert_eq!(err.line, Some(5), "{err}");
    }
}
