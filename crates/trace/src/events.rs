//! `events.log`: bootprint's own event stream with nanosecond `CLOCK_BOOTTIME` timestamps.
//!
//! One event per line, `<ns> <kind> key=value ...`, values percent-encoded so that a value
//! never holds a space or a newline. The first line is [`HEADER_LINE`].

use std::fmt;

/// First line of every `events.log`; the number is the events format version.
pub const HEADER_LINE: &str = "# bootprint events 1";

/// How far before a shutdown recorder's start (`shutdown_start`) the journal's entries in a
/// shutdown's `systemd-stops.log` belong to it (ns): systemd acts on the request before the
/// recorder's unit runs. The recorder reads the journal from there; the analysis counts
/// from the earliest entry within it.
pub const SHUTDOWN_JOURNAL_BEFORE_NS: u64 = 10_000_000_000;

/// The file beside a shutdown's trace (its `shutdown/` directory) in which the recorder says
/// what its sync after the save took: one [`SHUTDOWN_SYNC_EVENT`].
pub const SHUTDOWN_SYNC_FILE: &str = "sync.log";
/// The event of [`SHUTDOWN_SYNC_FILE`]: at the sync's start, with `ms`, `dirty_kb`,
/// `writeback_kb`, `after_dirty_kb`, `after_writeback_kb` (`-` where `/proc/meminfo` said
/// nothing) and `written_kb`.
pub const SHUTDOWN_SYNC_EVENT: &str = "shutdown_sync";

/// Name of the events file inside a trace directory.
pub const FILE_NAME: &str = "events.log";

/// One event: a time, a kind and ordered key/value fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// `CLOCK_BOOTTIME` in nanoseconds.
    pub t_ns: u64,
    /// What happened, e.g. `milestone` or `exec`.
    pub kind: String,
    /// Fields in the order they were written.
    pub fields: Vec<(String, String)>,
}

impl Event {
    /// A new event with no fields.
    pub fn new(t_ns: u64, kind: &str) -> Event {
        Event {
            t_ns,
            kind: kind.to_string(),
            fields: Vec::new(),
        }
    }

    /// Adds a field (builder style).
    pub fn with(mut self, key: &str, value: impl fmt::Display) -> Event {
        self.fields.push((key.to_string(), value.to_string()));
        self
    }

    /// The value of the first field named `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The time in seconds since the kernel started.
    pub fn t_s(&self) -> f64 {
        self.t_ns as f64 / 1e9
    }

    /// The event as one line of `events.log`, without the newline.
    pub fn to_line(&self) -> String {
        let mut line = format!("{} {}", self.t_ns, encode(&self.kind));
        for (k, v) in &self.fields {
            line.push(' ');
            line.push_str(&encode(k));
            line.push('=');
            line.push_str(&encode(v));
        }
        line
    }
}

/// Why a line of `events.log` could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventParseError {
    /// 1-based line number.
    pub line: usize,
    /// What was expected.
    pub expected: String,
}

impl fmt::Display for EventParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: expected {}", self.line, self.expected)
    }
}

impl std::error::Error for EventParseError {}

/// Parses a whole `events.log`. Blank lines and `#` comments are skipped; the first bad line
/// is an error naming it.
pub fn parse(text: &str) -> Result<Vec<Event>, EventParseError> {
    let mut events = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        events.push(parse_line(line).map_err(|expected| EventParseError {
            line: index + 1,
            expected,
        })?);
    }
    Ok(events)
}

/// Parses what it can of an `events.log` (or a log of the same line format: `rc.log`,
/// `late.log`): every good line's event, and each bad line's error (so a file cut short
/// by a crash still gives its events).
pub fn parse_lenient(text: &str) -> (Vec<Event>, Vec<EventParseError>) {
    let (mut events, mut errors) = (Vec::new(), Vec::new());
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_line(line) {
            Ok(e) => events.push(e),
            Err(expected) => errors.push(EventParseError {
                line: index + 1,
                expected,
            }),
        }
    }
    (events, errors)
}

fn parse_line(line: &str) -> Result<Event, String> {
    let mut parts = line.split(' ');
    let t_ns = parts
        .next()
        .and_then(|t| t.parse::<u64>().ok())
        .ok_or_else(|| "a timestamp in nanoseconds at the start of the line".to_string())?;
    let kind = parts
        .next()
        .filter(|k| !k.is_empty())
        .ok_or_else(|| "an event kind after the timestamp".to_string())?;
    let mut event = Event::new(t_ns, &decode(kind)?);
    for part in parts.filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("key=value, found {part:?}"))?;
        event.fields.push((decode(k)?, decode(v)?));
    }
    Ok(event)
}

/// Percent-encodes `%`, `=`, space and control bytes.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' | '=' | ' ' => out.push_str(&format!("%{:02X}", c as u32)),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Reverses [`encode`].
pub fn decode(s: &str) -> Result<String, String> {
    if !s.contains('%') {
        return Ok(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("two hex digits after '%' in {s:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("UTF-8 after decoding {s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_awkward_values() {
        let e = Event::new(1_234_567_890, "exec")
            .with("pid", 42)
            .with("path", "/usr/bin/a b=c%d\ne");
        let line = e.to_line();
        assert!(!line.contains('\n'));
        assert_eq!(line.split(' ').count(), 4);
        let back = parse(&format!("{HEADER_LINE}\n{line}\n")).unwrap();
        assert_eq!(back, vec![e]);
        assert_eq!(back[0].get("path"), Some("/usr/bin/a b=c%d\ne"));
        assert!((back[0].t_s() - 1.23456789).abs() < 1e-12);
    }

    #[test]
    fn bad_line_names_line_and_expectation() {
        let err = parse("# bootprint events 1\n5 a x=1\nnotanumber b\n").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.to_string().contains("timestamp"), "{err}");
        let err = parse("5 a novalue\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.expected.contains("key=value"));
        let err = parse("5 a k=%zz\n").unwrap_err();
        assert!(err.expected.contains("hex"));
        // Leniently: the good lines, and where the bad ones are.
        let (events, errors) = parse_lenient("# bootprint events 1\n5 a x=1\nnotanumber b\n7 c\n");
        assert_eq!(events.iter().map(|e| e.t_ns).collect::<Vec<_>>(), [5, 7]);
        assert_eq!(errors.iter().map(|e| e.line).collect::<Vec<_>>(), [3]);
    }
}
