//! `rc.log`: the span log of bootprint's init-script runner (`bootprint-boot rc`), written at
//! `/run/bootprint/rc.log` during the boot and copied into the trace.
//!
//! Format (docs/trace-format.md, section `rc.log`): first line [`MAGIC`], then one event per
//! line, `<ns> <kind> key=value ...`, `<ns>` being `CLOCK_BOOTTIME` nanoseconds and values
//! percent-encoded as in `events.log` (one encoding: [`crate::events::encode`]). Kinds:
//! `rc_begin`, `rc_start`, `rc_end`, `rc_builtin_failed`, `rc_reached`, `rc_late`,
//! `rc_done`, `rc_fallback`. Several runner processes append to one file, so a line cut
//! short by a crash is possible: the parser reports it and goes on.

use std::fmt;

use crate::events::{decode, encode, Event};

/// Name of the file inside a trace directory.
pub const FILE_NAME: &str = "rc.log";

/// First line of the file; the number is the format version.
pub const MAGIC: &str = "# bootprint rc 1";

/// A line of `rc.log` (or of another line-per-record file, `systemd-units.log`) that could
/// not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file, as the caller named it.
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// What was found and what was expected.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// One event as a line of the log, without the newline. Unlike `events.log`, the keys are
/// written as given (the runner's keys are plain words).
pub fn line(ns: u64, kind: &str, fields: &[(&str, String)]) -> String {
    let mut line = format!("{ns} {kind}");
    for (k, v) in fields {
        line.push(' ');
        line.push_str(k);
        line.push('=');
        line.push_str(&encode(v));
    }
    line
}

/// Parses the log's text. A wrong first line ends the parse; any other bad line is skipped
/// with a [`Problem`] naming `file` and the line, so a log cut short still gives its events.
pub fn parse(text: &str, file: &str) -> (Vec<Event>, Vec<Problem>) {
    let mut events = Vec::new();
    let problems = parse_records(text, file, MAGIC, |line| {
        events.push(parse_line(line)?);
        Ok(())
    });
    (events, problems)
}

/// The reading rule the trace's line-per-record files share: the first line must be `magic`
/// (else the parse ends there); blank lines and `#` comments are skipped; every other line
/// goes to `record`, and each line it refuses becomes a [`Problem`] naming `file`, the line
/// and what `record` expected.
pub(crate) fn parse_records(
    text: &str,
    file: &str,
    magic: &str,
    mut record: impl FnMut(&str) -> Result<(), String>,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    let problem = |line: usize, message: String| Problem {
        file: file.to_string(),
        line,
        message,
    };
    for (i, line) in text.lines().enumerate() {
        if i == 0 {
            if line.trim() != magic {
                let found: String = line.chars().take(80).collect();
                problems.push(problem(1, format!("expected {magic:?}, found {found:?}")));
                return problems;
            }
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if let Err(expected) = record(line) {
            problems.push(problem(i + 1, expected));
        }
    }
    problems
}

fn parse_line(line: &str) -> Result<Event, String> {
    let mut words = line.split(' ');
    let ns = words.next().and_then(|n| n.parse::<u64>().ok());
    let (Some(t_ns), Some(kind)) = (ns, words.next()) else {
        return Err(format!(
            "expected `<ns> <kind> key=value ...`, found {line:?}"
        ));
    };
    let mut event = Event::new(t_ns, kind);
    for word in words {
        // A word without `=` carries nothing a reader uses; older runners never wrote one.
        if let Some((k, v)) = word.split_once('=') {
            let v = decode(v).map_err(|e| format!("expected {e}, found {line:?}"))?;
            event.fields.push((k.to_string(), v));
        }
    }
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_problems_name_lines() {
        let value = "a b=c%\n\u{1}é";
        let text = format!(
            "{MAGIC}\n{}\nnonsense\n5 rc_end script=%4\n",
            line(7, "rc_start", &[("script", value.to_string())])
        );
        let (events, problems) = parse(&text, "t/rc.log");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].t_ns, 7);
        assert_eq!(events[0].get("script"), Some(value));
        assert_eq!(problems.len(), 2);
        assert_eq!((problems[0].line, problems[1].line), (3, 4));
        assert!(problems[1]
            .to_string()
            .starts_with("t/rc.log:4: expected two hex digits"));
        let (events, problems) = parse("# other\n1 rc_done\n", "t/rc.log");
        assert!(events.is_empty());
        assert!(problems[0]
            .message
            .contains("expected \"# bootprint rc 1\""));
    }
}
