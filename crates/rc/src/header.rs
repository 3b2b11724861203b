//! The LSB comment header of one init script, parsed from its text.
//!
//! Leniency follows Debian's insserv (1.24), checked against the real tool:
//! - a keyword line is `#`, any blanks, the keyword, `:`, the value; keywords are matched
//!   without regard to case, and `-` or `_` (or runs of them) separate the words;
//! - `Should-Start`, `Should-Stop`, `X-Start-Before`, `X-Stop-After` and `X-Interactive`
//!   may carry any `X-vendor-` prefix (`X-Debian-Should-Start`, `X-UnitedLinux-...`);
//! - scanning starts at the first line containing `### BEGIN INIT INFO` and stops at the
//!   first line containing `### END INIT INFO`: a later block is ignored, and within the
//!   block the first occurrence of a keyword wins (insserv keeps the first; we say so in a
//!   diagnostic for the ignored one);
//! - values are words separated by blanks, `,` or `;`.
//!
//! Continuation lines (`#` followed by a tab or at least two spaces, LSB 3.1) extend
//! `Description`. insserv reads one line per keyword, so a continuation of a list keyword
//! is reported and ignored rather than silently adding dependencies insserv would not see.

use std::path::Path;

use crate::Diagnostic;

/// One keyword's value and the line it was on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// 1-based line of the keyword.
    pub line: usize,
    /// The value as written (trimmed); for `Description`, continuation lines joined by `\n`.
    pub value: String,
}

impl Field {
    /// The words of the value (separated by blanks, `,` or `;`, as insserv splits them).
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.value
            .split([' ', '\t', ',', ';'])
            .filter(|w| !w.is_empty())
    }
}

/// The keywords insserv knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Keyword {
    /// `Provides`
    Provides,
    /// `Required-Start`
    RequiredStart,
    /// `Required-Stop`
    RequiredStop,
    /// `Should-Start` (any `X-vendor-` prefix)
    ShouldStart,
    /// `Should-Stop` (any `X-vendor-` prefix)
    ShouldStop,
    /// `X-Start-Before`
    StartBefore,
    /// `X-Stop-After`
    StopAfter,
    /// `Default-Start`
    DefaultStart,
    /// `Default-Stop`
    DefaultStop,
    /// `Short-Description`
    ShortDescription,
    /// `Description`
    Description,
    /// `X-Interactive`
    Interactive,
}

impl Keyword {
    /// The canonical spelling.
    pub fn name(self) -> &'static str {
        match self {
            Keyword::Provides => "Provides",
            Keyword::RequiredStart => "Required-Start",
            Keyword::RequiredStop => "Required-Stop",
            Keyword::ShouldStart => "Should-Start",
            Keyword::ShouldStop => "Should-Stop",
            Keyword::StartBefore => "X-Start-Before",
            Keyword::StopAfter => "X-Stop-After",
            Keyword::DefaultStart => "Default-Start",
            Keyword::DefaultStop => "Default-Stop",
            Keyword::ShortDescription => "Short-Description",
            Keyword::Description => "Description",
            Keyword::Interactive => "X-Interactive",
        }
    }

    /// Recognises a keyword as written (without the colon); `None` for anything else.
    pub fn recognise(word: &str) -> Option<Keyword> {
        // Normalise: lower case, every run of '-'/'_' becomes one '-'.
        let mut norm = String::with_capacity(word.len());
        for c in word.chars() {
            let c = c.to_ascii_lowercase();
            if c == '-' || c == '_' {
                if !norm.ends_with('-') {
                    norm.push('-');
                }
            } else {
                norm.push(c);
            }
        }
        let exact = match norm.as_str() {
            "provides" => Some(Keyword::Provides),
            "required-start" => Some(Keyword::RequiredStart),
            "required-stop" => Some(Keyword::RequiredStop),
            "default-start" => Some(Keyword::DefaultStart),
            "default-stop" => Some(Keyword::DefaultStop),
            "description" => Some(Keyword::Description),
            "short-description" => Some(Keyword::ShortDescription),
            _ => None,
        };
        if exact.is_some() {
            return exact;
        }
        // insserv: `(x[-_]+[a-z0-9_-]*)?should[-_]+start` and the like.
        let vendor = [
            ("should-start", Keyword::ShouldStart),
            ("should-stop", Keyword::ShouldStop),
            ("start-before", Keyword::StartBefore),
            ("stop-after", Keyword::StopAfter),
            ("interactive", Keyword::Interactive),
        ];
        for (tail, kw) in vendor {
            if let Some(prefix) = norm.strip_suffix(tail) {
                if prefix.is_empty() || (prefix.starts_with("x-") && prefix.ends_with('-')) {
                    return Some(kw);
                }
            }
        }
        None
    }
}

/// A parsed LSB header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    /// Line of `### BEGIN INIT INFO`.
    pub begin_line: usize,
    /// Line of `### END INIT INFO`.
    pub end_line: usize,
    /// `Provides`
    pub provides: Option<Field>,
    /// `Required-Start`
    pub required_start: Option<Field>,
    /// `Required-Stop`
    pub required_stop: Option<Field>,
    /// `Should-Start`
    pub should_start: Option<Field>,
    /// `Should-Stop`
    pub should_stop: Option<Field>,
    /// `X-Start-Before`
    pub start_before: Option<Field>,
    /// `X-Stop-After`
    pub stop_after: Option<Field>,
    /// `Default-Start`
    pub default_start: Option<Field>,
    /// `Default-Stop`
    pub default_stop: Option<Field>,
    /// `Short-Description`
    pub short_description: Option<Field>,
    /// `Description`, with its continuation lines
    pub description: Option<Field>,
    /// `X-Interactive`
    pub interactive: Option<Field>,
}

impl Header {
    /// The field for a keyword.
    pub fn field(&self, kw: Keyword) -> Option<&Field> {
        match kw {
            Keyword::Provides => self.provides.as_ref(),
            Keyword::RequiredStart => self.required_start.as_ref(),
            Keyword::RequiredStop => self.required_stop.as_ref(),
            Keyword::ShouldStart => self.should_start.as_ref(),
            Keyword::ShouldStop => self.should_stop.as_ref(),
            Keyword::StartBefore => self.start_before.as_ref(),
            Keyword::StopAfter => self.stop_after.as_ref(),
            Keyword::DefaultStart => self.default_start.as_ref(),
            Keyword::DefaultStop => self.default_stop.as_ref(),
            Keyword::ShortDescription => self.short_description.as_ref(),
            Keyword::Description => self.description.as_ref(),
            Keyword::Interactive => self.interactive.as_ref(),
        }
    }

    fn slot(&mut self, kw: Keyword) -> &mut Option<Field> {
        match kw {
            Keyword::Provides => &mut self.provides,
            Keyword::RequiredStart => &mut self.required_start,
            Keyword::RequiredStop => &mut self.required_stop,
            Keyword::ShouldStart => &mut self.should_start,
            Keyword::ShouldStop => &mut self.should_stop,
            Keyword::StartBefore => &mut self.start_before,
            Keyword::StopAfter => &mut self.stop_after,
            Keyword::DefaultStart => &mut self.default_start,
            Keyword::DefaultStop => &mut self.default_stop,
            Keyword::ShortDescription => &mut self.short_description,
            Keyword::Description => &mut self.description,
            Keyword::Interactive => &mut self.interactive,
        }
    }

    /// The names this script provides (empty if `Provides` is missing or empty).
    pub fn provided(&self) -> Vec<&str> {
        self.provides
            .as_ref()
            .map_or(Vec::new(), |f| f.words().collect())
    }

    /// `X-Interactive: true` (insserv recognises only `true`; we ignore case).
    pub fn is_interactive(&self) -> bool {
        self.interactive
            .as_ref()
            .is_some_and(|f| f.value.eq_ignore_ascii_case("true"))
    }
}

/// What [`parse`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// A complete header (it may still miss keywords: see the diagnostics).
    Lsb(Box<Header>),
    /// No `### BEGIN INIT INFO` line: a script without header.
    NoHeader,
    /// A `### BEGIN INIT INFO` without its end: insserv refuses the script; we treat it as
    /// a script without header and say so in a diagnostic.
    Unterminated {
        /// Line of the `### BEGIN INIT INFO`.
        begin_line: usize,
    },
}

fn keyword_line(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix('#')?;
    let rest = rest.trim_start_matches([' ', '\t']);
    let colon = rest.find(':')?;
    let word = rest[..colon].trim_end_matches([' ', '\t']);
    if word.is_empty()
        || !word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return None;
    }
    Some((word, rest[colon + 1..].trim()))
}

/// Parses the header of the script whose text is `text`; `file` only names it in
/// diagnostics. Pure: no I/O.
pub fn parse(text: &str, file: &Path) -> (Parsed, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut header = Header::default();
    let mut begin = None;
    let mut last: Option<Keyword> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim_end_matches(['\r', ' ', '\t']);
        if begin.is_none() {
            if line.contains("### BEGIN INIT INFO") {
                begin = Some(n);
                header.begin_line = n;
            }
            continue;
        }
        if line.contains("### END INIT INFO") {
            header.end_line = n;
            check_complete(&header, file, &mut diags);
            if let Some(k) = text
                .lines()
                .skip(n)
                .position(|l| l.contains("### BEGIN INIT INFO"))
            {
                diags.push(Diagnostic::new(
                    file,
                    Some(n + k + 1),
                    format!(
                        "second header block ignored: the first, lines {}-{}, wins (as in insserv)",
                        header.begin_line, n
                    ),
                ));
            }
            return (Parsed::Lsb(Box::new(header)), diags);
        }
        if let Some((word, value)) = keyword_line(line) {
            match Keyword::recognise(word) {
                Some(kw) => {
                    let slot = header.slot(kw);
                    if let Some(first) = slot {
                        diags.push(Diagnostic::new(
                            file,
                            Some(n),
                            format!(
                                "second {} ignored: the first, on line {}, wins (as in insserv)",
                                kw.name(),
                                first.line
                            ),
                        ));
                        last = None;
                    } else {
                        *slot = Some(Field {
                            line: n,
                            value: value.to_string(),
                        });
                        last = Some(kw);
                    }
                }
                None => {
                    // Vendor extensions (X-...) are allowed and ignored.
                    if !word.to_ascii_lowercase().starts_with("x-")
                        && !word.to_ascii_lowercase().starts_with("x_")
                    {
                        diags.push(Diagnostic::new(
                            file,
                            Some(n),
                            format!("unknown keyword {word:?} ignored: expected an LSB keyword (Provides, Required-Start, ...) or an X- extension"),
                        ));
                    }
                    last = None;
                }
            }
            continue;
        }
        if line.starts_with("#\t") || line.starts_with("#  ") {
            let text = line[1..].trim();
            match last {
                Some(Keyword::Description) => {
                    if let Some(d) = header.description.as_mut() {
                        if !text.is_empty() {
                            if !d.value.is_empty() {
                                d.value.push('\n');
                            }
                            d.value.push_str(text);
                        }
                    }
                }
                Some(kw) => diags.push(Diagnostic::new(
                    file,
                    Some(n),
                    format!(
                        "continuation of {} ignored: only Description may continue (insserv reads one line per keyword)",
                        kw.name()
                    ),
                )),
                None => {}
            }
            continue;
        }
        if line.is_empty() || line == "#" || line.starts_with("# ") {
            // A plain comment ends a continuation.
            last = None;
            continue;
        }
        diags.push(Diagnostic::new(
            file,
            Some(n),
            format!("ignored: expected a comment line '# Keyword: value' or '### END INIT INFO', found {line:?}"),
        ));
        last = None;
    }
    match begin {
        None => (Parsed::NoHeader, diags),
        Some(b) => {
            diags.push(Diagnostic::new(
                file,
                Some(b),
                "'### BEGIN INIT INFO' without '### END INIT INFO': expected the end marker; script treated as having no header".into(),
            ));
            (Parsed::Unterminated { begin_line: b }, diags)
        }
    }
}

fn check_complete(h: &Header, file: &Path, diags: &mut Vec<Diagnostic>) {
    // The keywords insserv insists on (Debian build); it warns and goes on, so do we.
    let must = [
        Keyword::Provides,
        Keyword::RequiredStart,
        Keyword::RequiredStop,
        Keyword::DefaultStart,
        Keyword::DefaultStop,
    ];
    for kw in must {
        if h.field(kw).is_none() {
            diags.push(Diagnostic::new(
                file,
                Some(h.begin_line),
                format!(
                    "incomplete header (lines {}-{}): expected a {}: line, even if empty",
                    h.begin_line,
                    h.end_line,
                    kw.name()
                ),
            ));
        }
    }
    if let Some(p) = &h.provides {
        if p.words().next().is_none() {
            diags.push(Diagnostic::new(
                file,
                Some(p.line),
                "empty Provides: expected at least one name; the script's file name is used".into(),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lsb(text: &str) -> (Header, Vec<Diagnostic>) {
        match parse(text, Path::new("etc/init.d/t")) {
            (Parsed::Lsb(h), d) => (*h, d),
            (other, _) => panic!("expected a header, got {other:?}"),
        }
    }

    const FULL: &str = "#!/bin/sh
# comment before
### BEGIN INIT INFO
# Provides:          foo foo-compat
# Required-Start:    $remote_fs $syslog
# Required-Stop:     $remote_fs
# Should-Start:      bar, baz;qux
# Should-Stop:       bar
# X-Start-Before:    late
# X-Stop-After:      early
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# X-Interactive:     true
# Short-Description: the foo daemon
# Description:       first line
#                    second line
#\tthird line
### END INIT INFO
echo
";

    #[test]
    fn every_keyword_with_its_line() {
        let (h, d) = lsb(FULL);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!((h.begin_line, h.end_line), (3, 18));
        assert_eq!(h.provided(), vec!["foo", "foo-compat"]);
        let rs = h.required_start.as_ref().unwrap();
        assert_eq!(
            (rs.line, rs.words().collect::<Vec<_>>()),
            (5, vec!["$remote_fs", "$syslog"])
        );
        assert_eq!(h.required_stop.as_ref().unwrap().line, 6);
        assert_eq!(
            h.should_start.as_ref().unwrap().words().collect::<Vec<_>>(),
            vec!["bar", "baz", "qux"]
        );
        assert_eq!(h.should_stop.as_ref().unwrap().value, "bar");
        assert_eq!(h.start_before.as_ref().unwrap().value, "late");
        assert_eq!(h.stop_after.as_ref().unwrap().value, "early");
        assert_eq!(h.default_start.as_ref().unwrap().value, "2 3 4 5");
        assert_eq!(h.default_stop.as_ref().unwrap().line, 12);
        assert!(h.is_interactive());
        assert_eq!(
            h.short_description.as_ref().unwrap().value,
            "the foo daemon"
        );
        assert_eq!(
            h.description.as_ref().unwrap().value,
            "first line\nsecond line\nthird line"
        );
    }

    #[test]
    fn keyword_spellings_insserv_accepts() {
        for w in [
            "Required-Start",
            "required_start",
            "REQUIRED-START",
            "Required__Start",
            "required-_start",
        ] {
            assert_eq!(Keyword::recognise(w), Some(Keyword::RequiredStart), "{w}");
        }
        for w in [
            "Should-Start",
            "X-Should-Start",
            "X-Debian-Should-Start",
            "x_unitedlinux_should_start",
        ] {
            assert_eq!(Keyword::recognise(w), Some(Keyword::ShouldStart), "{w}");
        }
        assert_eq!(
            Keyword::recognise("X-Start-Before"),
            Some(Keyword::StartBefore)
        );
        assert_eq!(
            Keyword::recognise("Start-Before"),
            Some(Keyword::StartBefore)
        );
        assert_eq!(
            Keyword::recognise("X-Foo-Stop-After"),
            Some(Keyword::StopAfter)
        );
        assert_eq!(
            Keyword::recognise("X-Interactive"),
            Some(Keyword::Interactive)
        );
        // Required-Start takes no vendor prefix in insserv; "Y-" is no vendor prefix.
        assert_eq!(Keyword::recognise("X-Required-Start"), None);
        assert_eq!(Keyword::recognise("Y-Should-Start"), None);
        assert_eq!(Keyword::recognise("Shouldstart"), None);
    }

    #[test]
    fn blanks_after_hash_and_before_colon() {
        let (h, _) = lsb(
            "### BEGIN INIT INFO\n#Provides:a\n#\t  required-start :  b c\n### END INIT INFO\n",
        );
        assert_eq!(h.provides.unwrap().value, "a");
        assert_eq!(h.required_start.unwrap().value, "b c");
    }

    #[test]
    fn first_block_and_first_keyword_win_like_insserv() {
        // Checked with insserv 1.24: it reads to the first END and keeps the first value.
        let text = "### BEGIN INIT INFO
# Provides: two
# Required-Start: ssh
# required_start: cron
### END INIT INFO
### BEGIN INIT INFO
# Provides: other
# Required-Start: dbus
### END INIT INFO
";
        let (h, d) = lsb(text);
        assert_eq!(h.provided(), vec!["two"]);
        assert_eq!(h.required_start.as_ref().unwrap().value, "ssh");
        assert!(d
            .iter()
            .any(|d| d.line == Some(4) && d.message.contains("second Required-Start")));
        assert!(d.iter().any(|d| d.line == Some(6)
            && d.message
                .starts_with("second header block ignored: the first, lines 1-5")));
        assert_eq!(
            d.iter().filter(|d| d.message.starts_with("second")).count(),
            2,
            "{d:?}"
        );
    }

    #[test]
    fn continuation_of_a_list_keyword_is_reported_not_used() {
        let text = "### BEGIN INIT INFO
# Provides: a
# Required-Start: b
#   c
# Required-Stop:
# Default-Start: S
# Default-Stop:
### END INIT INFO
";
        let (h, d) = lsb(text);
        assert_eq!(h.required_start.unwrap().value, "b");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].line, Some(4));
        assert!(d[0].message.contains("continuation of Required-Start"));
    }

    #[test]
    fn no_header_and_unterminated_header() {
        assert_eq!(
            parse("#!/bin/sh\necho hi\n", Path::new("x")).0,
            Parsed::NoHeader
        );
        let (p, d) = parse(
            "#!/bin/sh\n### BEGIN INIT INFO\n# Provides: x\n",
            Path::new("etc/init.d/x"),
        );
        assert_eq!(p, Parsed::Unterminated { begin_line: 2 });
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].to_string().split(": ").next(), Some("etc/init.d/x:2"));
        assert!(d[0].message.contains("expected the end marker"));
    }

    #[test]
    fn incomplete_header_and_bad_lines_name_file_and_line() {
        let text = "#!/bin/sh\n### BEGIN INIT INFO\n# Provides:\n# Frobnicate: yes\nnot a comment\n### END INIT INFO\n";
        let (_, d) = lsb(text);
        let shown: Vec<String> = d.iter().map(|d| d.to_string()).collect();
        assert!(
            shown
                .iter()
                .any(|s| s.starts_with("etc/init.d/t:4: unknown keyword \"Frobnicate\"")),
            "{shown:?}"
        );
        assert!(
            shown
                .iter()
                .any(|s| s.starts_with("etc/init.d/t:5: ignored: expected a comment line")),
            "{shown:?}"
        );
        assert!(
            shown
                .iter()
                .any(|s| s.starts_with("etc/init.d/t:3: empty Provides")),
            "{shown:?}"
        );
        assert!(
            shown
                .iter()
                .any(|s| s.contains("expected a Required-Start: line")),
            "{shown:?}"
        );
        assert!(
            shown
                .iter()
                .any(|s| s.contains("expected a Default-Stop: line")),
            "{shown:?}"
        );
    }

    #[test]
    fn vendor_extensions_are_silent_and_interactive_needs_true() {
        let text = "### BEGIN INIT INFO\n# Provides: a\n# Required-Start:\n# Required-Stop:\n# Default-Start: 2\n# Default-Stop:\n# X-Foo-Bar: 1\n# X-Interactive: yes\n### END INIT INFO\n";
        let (h, d) = lsb(text);
        assert!(d.is_empty(), "{d:?}");
        assert!(!h.is_interactive());
    }
}
