//! The runner's span log (`/run/bootprint/rc.log`, copied into the trace as `rc.log`), its
//! parser, and the services view of a boot: spans, blame, the critical chain to the login.
//!
//! Format (docs/trace-format.md, section `rc.log`): first line `# bootprint rc 1`, then one
//! event per line, `<ns> <kind> key=value ...`, `<ns>` being `CLOCK_BOOTTIME` nanoseconds and
//! values percent-encoded as in `events.log`. Kinds: `rc_begin`, `rc_start`, `rc_end`,
//! `rc_reached`, `rc_late`, `rc_done`, `rc_fallback`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use crate::Diagnostic;

/// Where the runner writes its spans during the boot.
pub const DEFAULT_PATH: &str = "/run/bootprint/rc.log";
/// First line of the file.
pub const MAGIC: &str = "# bootprint rc 1";

/// Percent-encodes a value as events.log does.
pub fn encode(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for b in v.bytes() {
        match b {
            b'%' | b' ' | b'=' | 0..=0x1f | 0x7f => s.push_str(&format!("%{b:02X}")),
            _ => s.push(b as char),
        }
    }
    s
}

/// Reverses [`encode`]; a malformed escape is kept as is.
pub fn decode(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        // Bytes, not a slice of the text: the two after a `%` may be inside a character.
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Appends events to the span log. Write errors are remembered, never fatal: the boot
/// goes on without spans.
pub struct SpanLog {
    file: Option<std::fs::File>,
    /// The first write error, if any.
    pub error: Option<String>,
    /// Scripts this process logged as started, kept in memory (written or not): what a
    /// fallback must not run a second time.
    started: BTreeSet<String>,
    /// (script, outcome) of every `rc_end` this process logged: startpar's answer when
    /// the runner's own state is lost to a panic.
    ended: Vec<(String, String)>,
}

impl SpanLog {
    /// Opens (creating it and its directory, with the magic line when new) `path` for
    /// appending. Several runner processes (rcS, rc2, the late child) append to one file.
    pub fn open(path: &Path) -> SpanLog {
        let res = (|| -> std::io::Result<std::fs::File> {
            if let Some(d) = path.parent() {
                std::fs::create_dir_all(d)?;
            }
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            if f.metadata()?.len() == 0 {
                f.write_all(format!("{MAGIC}\n").as_bytes())?;
            }
            Ok(f)
        })();
        match res {
            Ok(f) => SpanLog {
                file: Some(f),
                ..SpanLog::none()
            },
            Err(e) => SpanLog {
                error: Some(format!("{}: {e}", path.display())),
                ..SpanLog::none()
            },
        }
    }

    /// A log that writes nowhere.
    pub fn none() -> SpanLog {
        SpanLog {
            file: None,
            error: None,
            started: BTreeSet::new(),
            ended: Vec::new(),
        }
    }

    /// Whether events reach a file (opened, no write error so far).
    pub fn is_writing(&self) -> bool {
        self.file.is_some() && self.error.is_none()
    }

    /// The scripts this process logged an `rc_start` for.
    pub fn started(&self) -> &BTreeSet<String> {
        &self.started
    }

    /// (script, outcome) of each `rc_end` this process logged, in order.
    pub fn ended(&self) -> &[(String, String)] {
        &self.ended
    }

    /// Appends one event at `ns` (one write per line, so concurrent appenders interleave
    /// whole lines).
    pub fn event(&mut self, ns: u64, kind: &str, kv: &[(&str, String)]) {
        let get = |k: &str| kv.iter().find(|(key, _)| *key == k).map(|(_, v)| v.clone());
        match (kind, get("script")) {
            ("rc_start", Some(script)) => {
                self.started.insert(script);
            }
            ("rc_end", Some(script)) => {
                let outcome = get("outcome").unwrap_or_default();
                self.ended.push((script, outcome));
            }
            _ => {}
        }
        let Some(f) = self.file.as_mut() else { return };
        let mut line = format!("{ns} {kind}");
        for (k, v) in kv {
            line.push(' ');
            line.push_str(k);
            line.push('=');
            line.push_str(&encode(v));
        }
        line.push('\n');
        if let Err(e) = f.write_all(line.as_bytes()) {
            if self.error.is_none() {
                self.error = Some(e.to_string());
            }
        }
    }
}

/// One event of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// CLOCK_BOOTTIME ns.
    pub ns: u64,
    /// Kind (`rc_start`, ...).
    pub kind: String,
    /// Decoded keys.
    pub kv: BTreeMap<String, String>,
}

/// Parses the log's text. Bad lines give a diagnostic naming `file` and the line.
pub fn parse(text: &str, file: &Path) -> (Vec<Event>, Vec<Diagnostic>) {
    let mut events = Vec::new();
    let mut diags = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if i == 0 {
            if line.trim() != MAGIC {
                diags.push(Diagnostic::new(
                    file,
                    Some(1),
                    format!("expected {MAGIC:?}, found {line:?}"),
                ));
                return (events, diags);
            }
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut w = line.split(' ');
        let ns = w.next().and_then(|n| n.parse::<u64>().ok());
        let kind = w.next();
        let (Some(ns), Some(kind)) = (ns, kind) else {
            diags.push(Diagnostic::new(
                file,
                Some(i + 1),
                format!("expected `<ns> <kind> key=value ...`, found {line:?}"),
            ));
            continue;
        };
        let mut kv = BTreeMap::new();
        for p in w {
            if let Some((k, v)) = p.split_once('=') {
                kv.insert(k.to_string(), decode(v));
            }
        }
        events.push(Event {
            ns,
            kind: kind.to_string(),
            kv,
        });
    }
    (events, diags)
}

/// One script run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Script name.
    pub script: String,
    /// start, stop.
    pub action: String,
    /// The runlevel it ran for.
    pub runlevel: String,
    /// Start, CLOCK_BOOTTIME ns.
    pub start_ns: u64,
    /// End (None: the log ends before it did).
    pub end_ns: Option<u64>,
    /// Exit status (None: killed by a signal, timed out or never ended).
    pub exit: Option<i32>,
    /// ok, failed, not_installed, not_configured, timed_out, signal, spawn_failed, running.
    pub outcome: String,
    /// Started after the login target was reached.
    pub late: bool,
    /// Runlevel S, one graph: beside the path to the login (rcS did not wait for it).
    pub beside: bool,
    /// The script whose end made this one ready (empty: ready from the start).
    pub waited_for: String,
    /// The runner's built-in did the work (a built-in that declined is not a span: the
    /// script that ran after it is).
    pub builtin: bool,
}

impl Span {
    /// Wall time in ns (0 while unfinished).
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.map_or(0, |e| e.saturating_sub(self.start_ns))
    }
}

/// The services view of one boot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Services {
    /// Every script run, by start time.
    pub spans: Vec<Span>,
    /// When each runlevel's path to the login was done (`rc_reached`): (runlevel, ns).
    pub reached: Vec<(String, u64)>,
    /// When late services were let go: (runlevel, ns, reason `idle`/`max_wait`).
    pub late_start: Vec<(String, u64, String)>,
    /// Runners that fell back to serial: (runlevel, reason).
    pub fallbacks: Vec<(String, String)>,
}

impl Services {
    /// Builds the view from parsed events.
    pub fn from_events(events: &[Event]) -> Services {
        let mut v = Services::default();
        let mut open: BTreeMap<(String, String, String), usize> = BTreeMap::new();
        let get = |e: &Event, k: &str| e.kv.get(k).cloned().unwrap_or_default();
        for e in events {
            let key = (get(e, "runlevel"), get(e, "action"), get(e, "script"));
            match e.kind.as_str() {
                "rc_start" => {
                    open.insert(key, v.spans.len());
                    v.spans.push(Span {
                        script: get(e, "script"),
                        action: get(e, "action"),
                        runlevel: get(e, "runlevel"),
                        start_ns: e.ns,
                        end_ns: None,
                        exit: None,
                        outcome: "running".into(),
                        late: get(e, "late") == "1",
                        beside: get(e, "beside") == "1",
                        waited_for: get(e, "waited_for"),
                        builtin: get(e, "builtin") == "1",
                    });
                }
                "rc_end" => {
                    if let Some(i) = open.remove(&key) {
                        let s = &mut v.spans[i];
                        s.end_ns = Some(e.ns);
                        s.exit = e.kv.get("exit").and_then(|x| x.parse().ok());
                        s.outcome = get(e, "outcome");
                    }
                }
                "rc_builtin_failed" => {
                    // The script runs next (its own rc_start): drop the built-in's try.
                    if let Some(i) = open.remove(&key) {
                        v.spans.remove(i);
                        for x in open.values_mut() {
                            if *x > i {
                                *x -= 1;
                            }
                        }
                    }
                }
                "rc_reached" => v.reached.push((get(e, "runlevel"), e.ns)),
                "rc_late" => v
                    .late_start
                    .push((get(e, "runlevel"), e.ns, get(e, "reason"))),
                "rc_fallback" => v.fallbacks.push((get(e, "runlevel"), get(e, "reason"))),
                _ => {}
            }
        }
        v.spans.sort_by_key(|s| s.start_ns);
        v
    }

    /// Spans by wall time, longest first (like `systemd-analyze blame`).
    pub fn blame(&self) -> Vec<&Span> {
        let mut b: Vec<&Span> = self.spans.iter().collect();
        b.sort_by_key(|s| (std::cmp::Reverse(s.duration_ns()), s.start_ns));
        b
    }

    /// The chain of scripts that held up the login: from the last script (not late) to end
    /// before the last `rc_reached`, back through `waited_for` (the dependency whose end
    /// made each one ready). First element is the earliest.
    pub fn critical_chain(&self) -> Vec<&Span> {
        let Some(&(ref rl, at)) = self.reached.last() else {
            return vec![];
        };
        let in_rl = |s: &&Span| !s.late && !s.beside && s.end_ns.is_some_and(|e| e <= at);
        let mut cur = self
            .spans
            .iter()
            .filter(|s| &s.runlevel == rl)
            .filter(in_rl)
            .max_by_key(|s| s.end_ns);
        let mut chain = Vec::new();
        while let Some(s) = cur {
            if chain.len() > self.spans.len() {
                break; // a malformed log with a waited_for loop
            }
            chain.push(s);
            cur = if s.waited_for.is_empty() {
                // Ready at once in its runlevel: it waited for the runlevel before (rcS
                // before rc2); go on from the last script there to end before it started.
                self.spans
                    .iter()
                    .filter(|p| p.runlevel != s.runlevel && !p.late && !p.beside)
                    .filter(|p| p.end_ns.is_some_and(|e| e <= s.start_ns))
                    .max_by_key(|p| p.end_ns)
            } else {
                self.spans
                    .iter()
                    .filter(|p| p.script == s.waited_for && p.start_ns <= s.start_ns)
                    .max_by_key(|p| p.start_ns)
            };
        }
        chain.reverse();
        chain
    }
}

/// Reads and parses a span log file.
pub fn load(path: &Path) -> Result<(Services, Vec<Diagnostic>), crate::Error> {
    let text = std::fs::read_to_string(path).map_err(|source| crate::Error {
        path: path.to_path_buf(),
        source,
    })?;
    let (events, diags) = parse(&text, path);
    Ok((Services::from_events(&events), diags))
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The services view as text: every span (start, duration, outcome, late apart), the
/// blame list and the critical chain to the login. `bootprint rc services` prints it; the
/// report can embed it.
pub fn render_text(v: &Services) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    if v.spans.is_empty() {
        s.push_str("no rc spans (the boot did not use bootprint's runner)\n");
        return s;
    }
    for (title, late) in [
        ("services on the path to the login", false),
        ("late services", true),
    ] {
        let list: Vec<&Span> = v.spans.iter().filter(|x| x.late == late).collect();
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(s, "{title}:");
        let _ = writeln!(
            s,
            "  {:>8} {:>8}  {:<3} {:<7} {:<15} script",
            "start_s", "took_s", "rl", "action", "outcome"
        );
        for x in list {
            let took = match x.end_ns {
                Some(_) => format!("{:.3}", secs(x.duration_ns())),
                None => "-".into(),
            };
            let _ = writeln!(
                s,
                "  {:>8.3} {:>8}  {:<3} {:<7} {:<15} {}{}",
                secs(x.start_ns),
                took,
                x.runlevel,
                x.action,
                x.outcome,
                x.script,
                if x.builtin {
                    " (built-in)"
                } else if x.beside {
                    " (beside the path)"
                } else {
                    ""
                }
            );
        }
    }
    for (rl, ns) in &v.reached {
        let _ = writeln!(
            s,
            "runlevel {rl}: path to the login done at {:.3} s",
            secs(*ns)
        );
    }
    for (rl, ns, why) in &v.late_start {
        let _ = writeln!(
            s,
            "runlevel {rl}: late services let go at {:.3} s ({why})",
            secs(*ns)
        );
    }
    for (rl, why) in &v.fallbacks {
        let _ = writeln!(s, "runlevel {rl}: fell back to serial ({why})");
    }
    let _ = writeln!(s, "blame:");
    for x in v.blame().iter().take(15) {
        let _ = writeln!(
            s,
            "  {:>8.3} s  {}{}",
            secs(x.duration_ns()),
            x.script,
            if x.late { " (late)" } else { "" }
        );
    }
    let chain = v.critical_chain();
    if !chain.is_empty() {
        let _ = writeln!(s, "critical chain to the login:");
        for x in chain {
            let _ = writeln!(
                s,
                "  {} @{:.3} s +{:.3} s",
                x.script,
                secs(x.start_ns),
                secs(x.duration_ns())
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "# bootprint rc 1
10 rc_start script=mountall action=start runlevel=S late=0 waited_for=
90 rc_end script=mountall action=start runlevel=S late=0 exit=0 outcome=ok timed_out=0
100 rc_begin runlevel=2 action=start
1000 rc_start script=a action=start runlevel=2 late=0 waited_for=
1500 rc_start script=c action=start runlevel=2 late=0 waited_for=
2000 rc_end script=a action=start runlevel=2 late=0 exit=0 outcome=ok timed_out=0
2100 rc_start script=b action=start runlevel=2 late=0 waited_for=a
2600 rc_end script=c action=start runlevel=2 late=0 exit=1 outcome=failed timed_out=0
5000 rc_end script=b action=start runlevel=2 late=0 exit=0 outcome=ok timed_out=0
5000 rc_reached runlevel=2
9000 rc_late runlevel=2 reason=idle
9100 rc_start script=z%20z action=start runlevel=2 late=1 waited_for=
";

    #[test]
    fn view_blame_chain() {
        let (ev, diags) = parse(LOG, Path::new("rc.log"));
        assert!(diags.is_empty(), "{diags:?}");
        let v = Services::from_events(&ev);
        assert_eq!(v.spans.len(), 5);
        let names: Vec<&str> = v.blame().iter().map(|s| s.script.as_str()).collect();
        assert_eq!(names, ["b", "c", "a", "mountall", "z z"]);
        let chain: Vec<&str> = v
            .critical_chain()
            .iter()
            .map(|s| s.script.as_str())
            .collect();
        assert_eq!(chain, ["mountall", "a", "b"]);
        assert_eq!(v.spans[2].outcome, "failed");
        assert_eq!(v.spans[4].outcome, "running");
        assert!(v.spans[4].late);
        assert_eq!(v.late_start, vec![("2".into(), 9000, "idle".into())]);
    }

    /// One graph: udev, beside the path in S, ends after mountall but before runlevel 2's
    /// first script; the chain still goes back to mountall, which `a` waited for.
    #[test]
    fn the_chain_skips_what_was_beside_the_path() {
        let log = LOG.replace(
            "100 rc_begin runlevel=2 action=start\n",
            "20 rc_start script=udev action=start runlevel=S late=0 beside=1 waited_for=\n\
             95 rc_reached runlevel=S\n100 rc_begin runlevel=2 action=start\n\
             900 rc_end script=udev action=start runlevel=S late=0 beside=1 exit=0 outcome=ok timed_out=0\n",
        );
        let (ev, _) = parse(&log, Path::new("rc.log"));
        let v = Services::from_events(&ev);
        let udev = v.spans.iter().find(|s| s.script == "udev").unwrap();
        assert!(udev.beside && !udev.late);
        let chain: Vec<&str> = v
            .critical_chain()
            .iter()
            .map(|s| s.script.as_str())
            .collect();
        assert_eq!(chain, ["mountall", "a", "b"]);
        assert!(render_text(&v).contains("udev (beside the path)"));
    }

    #[test]
    fn encoding_round_trips_and_errors_name_lines() {
        let s = "a b=c%\n\u{1}";
        assert_eq!(decode(&encode(s)), s);
        assert_eq!(encode("x y"), "x%20y");
        let (_, d) = parse("# bootprint rc 1\nnonsense\n", Path::new("t/rc.log"));
        assert_eq!(d[0].line, Some(2));
        let (_, d) = parse("# other\n", Path::new("t/rc.log"));
        assert!(d[0].message.contains("expected"));
    }
}
