//! Reading a kernel log line by line: the timestamp, the `<N>` level, the PRINTK_CALLER
//! field and the message, from the trace's `dmesg` file, `dmesg` output (also `dmesg -r` and
//! `dmesg -x`) or a serial console capture where user-space output is mixed in.
//!
//! Parsing is pure: it takes text and never fails. A line that looks like a kernel line but
//! cannot be read is kept in [`Log::bad`] with the reason; console text without a timestamp is
//! kept as an untimed line (the analysis ignores it except to mend split kernel lines).

use serde::Serialize;

/// Who printed a line, from the PRINTK_CALLER field (`[    T1]` or `[    C0]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Caller {
    /// A task, by pid.
    Thread(u32),
    /// Interrupt context on a CPU.
    Cpu(u32),
}

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Line {
    /// 1-based line number in the input (two lines share a number when one physical line held
    /// console text followed by a kernel line).
    pub lineno: usize,
    /// Kernel timestamp in microseconds since the kernel started; `None` for console text.
    pub ts_us: Option<u64>,
    /// Syslog level 0-7 when the line carried one (`<6>` or `dmesg -x` names).
    pub level: Option<u8>,
    /// The PRINTK_CALLER field when present.
    pub caller: Option<Caller>,
    /// The message, without the prefixes, `\xNN` escapes decoded.
    pub text: String,
}

/// A line that looked like a kernel line but could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadLine {
    /// 1-based line number.
    pub lineno: usize,
    /// What was expected.
    pub reason: String,
    /// The line as found (cut to 200 characters).
    pub text: String,
}

/// A parsed log.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Log {
    /// Every non-empty line that was read, in input order (kernel timestamps need not be
    /// monotonic: a secondary CPU's first lines can carry an earlier time).
    pub lines: Vec<Line>,
    /// Lines that could not be read.
    pub bad: Vec<BadLine>,
}

impl Log {
    /// Lines with a kernel timestamp.
    pub fn timed(&self) -> impl Iterator<Item = &Line> {
        self.lines.iter().filter(|l| l.ts_us.is_some())
    }

    /// Number of lines without a timestamp (console output in a serial capture).
    pub fn untimed_count(&self) -> usize {
        self.lines.iter().filter(|l| l.ts_us.is_none()).count()
    }
}

/// Parses a kernel log. Never fails: unreadable lines are counted in [`Log::bad`].
pub fn parse(text: &str) -> Log {
    let mut log = Log::default();
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        // Serial captures end lines with CR LF and may carry NULs or a BEL.
        let raw = raw.trim_end_matches(['\r', '\0']);
        let raw = raw.trim_start_matches(['\r', '\0', '\u{7}']);
        if raw.trim().is_empty() {
            continue;
        }
        parse_line(raw, lineno, &mut log);
    }
    log
}

fn parse_line(raw: &str, lineno: usize, log: &mut Log) {
    match parse_kernel(raw) {
        Ok(Some(mut line)) => {
            line.lineno = lineno;
            log.lines.push(line);
        }
        Ok(None) => {
            // Console text; on a serial line a kernel message can follow it on the same line
            // because the two writers do not share a line discipline.
            if let Some(pos) = find_embedded_stamp(raw) {
                push_untimed(&raw[..pos], lineno, log);
                parse_line(&raw[pos..], lineno, log);
            } else {
                push_untimed(raw, lineno, log);
            }
        }
        Err(reason) => log.bad.push(BadLine {
            lineno,
            reason,
            text: raw.chars().take(200).collect(),
        }),
    }
}

fn push_untimed(text: &str, lineno: usize, log: &mut Log) {
    if text.trim().is_empty() {
        return;
    }
    log.lines.push(Line {
        lineno,
        ts_us: None,
        level: None,
        caller: None,
        text: text.to_string(),
    });
}

/// `Ok(None)`: not a kernel line. `Err`: a kernel line that is broken.
fn parse_kernel(raw: &str) -> Result<Option<Line>, String> {
    let mut rest = raw;
    let mut level = None;
    if let Some((lvl, after)) = decode_prefix(rest) {
        level = Some(lvl);
        rest = after;
    }
    if let Some(after) = rest.strip_prefix('<') {
        // `<6>` from `dmesg -r` or /dev/kmsg-style captures; the facility is in the high bits.
        let end = after
            .find('>')
            .ok_or("expected `<LEVEL>` with a closing `>`")?;
        let n: u32 = after[..end]
            .parse()
            .map_err(|_| format!("expected a number in `<{}>`", &after[..end]))?;
        level = Some((n & 7) as u8);
        rest = &after[end + 1..];
    }
    let Some(after) = rest.strip_prefix('[') else {
        if level.is_some() {
            // A level but no time: printk.time=0. Keep the line, untimed.
            return Ok(Some(Line {
                lineno: 0,
                ts_us: None,
                level,
                caller: None,
                text: unescape(rest),
            }));
        }
        return Ok(None);
    };
    let end = match after.find(']') {
        Some(e) => e,
        None if level.is_some() || looks_like_stamp_start(after) => {
            return Err("expected `[seconds.micros]` with a closing `]`".into())
        }
        None => return Ok(None),
    };
    let inner = after[..end].trim();
    let ts = match parse_stamp(inner) {
        Some(ts) => ts,
        None if level.is_some() || looks_like_stamp_start(after) => {
            return Err(format!(
                "expected `[seconds.micros]`, found `[{}]` (wall-clock times from `dmesg -T` are not supported)",
                &after[..end]
            ))
        }
        // `[` starting console text (e.g. `[ OK ]` from an init system).
        None => return Ok(None),
    };
    rest = &after[end + 1..];
    let mut caller = None;
    // The console glues the caller to the time (`][    T1]`); util-linux dmesg puts a space
    // between them.
    if let Some(after) = rest.strip_prefix('[').or_else(|| rest.strip_prefix(" [")) {
        if let Some(end) = after.find(']') {
            if let Some(c) = parse_caller(after[..end].trim()) {
                caller = Some(c);
                rest = &after[end + 1..];
            }
        }
    }
    // One space separates the prefix from the message; keep the message's own indentation.
    let rest = rest.strip_prefix(' ').unwrap_or(rest);
    Ok(Some(Line {
        lineno: 0,
        ts_us: Some(ts),
        level,
        caller,
        text: unescape(rest),
    }))
}

/// `dmesg -x` prints `kern  :info  : ` before the time.
fn decode_prefix(s: &str) -> Option<(u8, &str)> {
    let (fac, rest) = s.split_once(':')?;
    if fac.is_empty() || !fac.trim_end().chars().all(|c| c.is_ascii_lowercase()) {
        return None;
    }
    let (lvl, rest) = rest.split_once(':')?;
    let level = match lvl.trim() {
        "emerg" => 0,
        "alert" => 1,
        "crit" => 2,
        "err" => 3,
        "warn" => 4,
        "notice" => 5,
        "info" => 6,
        "debug" => 7,
        _ => return None,
    };
    Some((level, rest.strip_prefix(' ').unwrap_or(rest)))
}

fn looks_like_stamp_start(after_bracket: &str) -> bool {
    let t = after_bracket.trim_start();
    t.starts_with(|c: char| c.is_ascii_digit())
}

/// `seconds.fraction` into microseconds; the fraction may have any number of digits.
pub fn parse_stamp(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    if secs.is_empty()
        || frac.is_empty()
        || !secs.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let mut micros = 0u64;
    for (i, b) in frac.bytes().take(6).enumerate() {
        micros += u64::from(b - b'0') * 10u64.pow(5 - i as u32);
    }
    secs.checked_mul(1_000_000)?.checked_add(micros)
}

fn parse_caller(s: &str) -> Option<Caller> {
    let (kind, n) = s.split_at(s.find(|c: char| c.is_ascii_digit())?);
    let n: u32 = n.parse().ok()?;
    match kind {
        "T" => Some(Caller::Thread(n)),
        "C" => Some(Caller::Cpu(n)),
        _ => None,
    }
}

/// Where a `[ seconds.micros]` stamp starts inside console text, if one does.
fn find_embedded_stamp(s: &str) -> Option<usize> {
    let mut from = 1;
    while let Some(off) = s.get(from..)?.find('[') {
        let pos = from + off;
        let after = &s[pos + 1..];
        if let Some(end) = after.find(']') {
            if parse_stamp(after[..end].trim()).is_some() && after[..end].starts_with(' ') {
                return Some(pos);
            }
        }
        from = pos + 1;
    }
    None
}

/// Decodes the `\xNN` escapes that `/dev/kmsg` and `dmesg` use for control bytes and `\`.
pub fn unescape(s: &str) -> String {
    if !s.contains("\\x") {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1] == b'x' {
            let hex = std::str::from_utf8(&bytes[i + 2..i + 4]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                // A newline inside one record becomes a space: one record, one line.
                out.push(if v == b'\n' { b' ' } else { v });
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_dmesg_line() {
        let log = parse("[    7.339389] Run /init as init process\n");
        assert_eq!(log.lines.len(), 1);
        let l = &log.lines[0];
        assert_eq!(l.ts_us, Some(7_339_389));
        assert_eq!(l.text, "Run /init as init process");
        assert_eq!(l.level, None);
        assert!(log.bad.is_empty());
    }

    #[test]
    fn level_and_caller_prefixes() {
        let log = parse("<7>[    1.607893][    T1] calling  crypto_kdf108_init+0x0/0x156 @ 1\n<6>[    0.001000][    C1] hello\n");
        assert_eq!(log.lines[0].level, Some(7));
        assert_eq!(log.lines[0].caller, Some(Caller::Thread(1)));
        assert_eq!(
            log.lines[0].text,
            "calling  crypto_kdf108_init+0x0/0x156 @ 1"
        );
        assert_eq!(log.lines[1].caller, Some(Caller::Cpu(1)));
        assert_eq!(log.lines[1].ts_us, Some(1000));
        let log =
            parse("[    0.000000] [      T0] Linux version 6.1\n[    1.0] [drm] Initialized\n");
        assert_eq!(log.lines[0].caller, Some(Caller::Thread(0)));
        assert_eq!(log.lines[0].text, "Linux version 6.1");
        assert_eq!(log.lines[1].caller, None);
        assert_eq!(log.lines[1].text, "[drm] Initialized");
    }

    #[test]
    fn facility_bits_are_masked_and_decode_prefix_read() {
        let log = parse("<14>[    2.000000] user line\nkern  :debug : [    3.5] x\n");
        assert_eq!(log.lines[0].level, Some(6));
        assert_eq!(log.lines[1].level, Some(7));
        assert_eq!(log.lines[1].ts_us, Some(3_500_000));
    }

    #[test]
    fn console_text_is_untimed_and_embedded_stamp_split() {
        let log = parse(
            "Loading, please wait...\r\nBegin: x ... [    8.991277] calling  f+0x0/0x1 @ 118\r\n",
        );
        assert_eq!(log.bad.len(), 0);
        assert_eq!(log.lines.len(), 3);
        assert_eq!(log.lines[0].ts_us, None);
        assert_eq!(log.lines[1].text, "Begin: x ... ");
        assert_eq!(log.lines[2].ts_us, Some(8_991_277));
        assert_eq!(log.lines[2].lineno, 2);
        assert_eq!(log.untimed_count(), 2);
    }

    #[test]
    fn garbage_is_counted_not_fatal() {
        let log = parse(
            "[    1.0] ok\n[   12.3x4] broken stamp\n<x>[ 1.0] bad level\n[   5.5 no close\n[ OK ] Started foo\n",
        );
        assert_eq!(log.bad.len(), 3, "{:?}", log.bad);
        assert_eq!(log.bad[0].lineno, 2);
        assert!(log.bad[0].reason.contains("seconds.micros"));
        assert_eq!(log.bad[1].lineno, 3);
        assert!(log.bad[1].reason.contains("<x>"));
        assert!(log.bad[2].reason.contains("closing"));
        // `[ OK ]` is console text from an init system, not a broken kernel line.
        assert_eq!(log.lines.last().unwrap().ts_us, None);
    }

    #[test]
    fn wall_clock_stamps_named_in_the_reason() {
        let log = parse("[Sun Nov 22 11:00:33 2026] hello\n");
        assert_eq!(
            log.bad.len(),
            0,
            "text in brackets that is not a number is console text"
        );
        let log = parse("<6>[Sun Nov 22 11:00:33 2026] hello\n");
        assert_eq!(log.bad.len(), 1);
        assert!(log.bad[0].reason.contains("dmesg -T"));
    }

    #[test]
    fn escapes_decoded() {
        let log = parse("[   10.2] a\\x0ab \\x5c_SB_\n");
        assert_eq!(log.lines[0].text, "a b \\_SB_");
    }

    #[test]
    fn stamp_fraction_lengths() {
        assert_eq!(parse_stamp("0.5"), Some(500_000));
        assert_eq!(parse_stamp("1.0000019"), Some(1_000_001));
        assert_eq!(parse_stamp("1."), None);
        assert_eq!(parse_stamp("x.1"), None);
    }
}
