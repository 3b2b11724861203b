//! System facilities from `/etc/insserv.conf` and `/etc/insserv.conf.d/*`.
//!
//! A line is `$facility` then blanks, `=` or `:`, then names: a plain name is a required
//! provider, `+name` an optional one (used if some script provides it, else ignored), and
//! `$other` expands that facility. `<interactive> names` marks scripts that must run alone.
//! A facility defined in several lines or files gets the union of their names (a package's
//! `insserv.conf.d/bind9` adds `bind9` to `$named`); a name given again is kept once, where
//! it was first given. `$all` and `$null` are built in.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use crate::Diagnostic;

/// Where a facility's names were defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The file.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// The names as written (`+name`, `name`, `$facility`).
    pub names: Vec<String>,
}

/// All facilities and the interactive list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conf {
    /// Facility name (with `$`, lower case) to its definitions, in reading order.
    pub facilities: BTreeMap<String, Vec<Definition>>,
    /// Names listed after `<interactive>`, with where.
    pub interactive: Vec<(String, PathBuf, usize)>,
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

impl Conf {
    /// Adds the lines of one configuration file. Pure: `file` only names it.
    pub fn parse_into(&mut self, text: &str, file: &Path) -> Vec<Diagnostic> {
        let mut diags = Vec::new();
        // Names each facility already has: a name given again adds nothing to the union,
        // and every reference to the facility would expand it once per repetition (a line
        // repeated a thousand times made planning take seconds).
        let mut known: HashSet<(String, String)> = self
            .facilities
            .iter()
            .flat_map(|(f, defs)| {
                defs.iter()
                    .flat_map(move |d| d.names.iter().map(move |n| (f.clone(), n.clone())))
            })
            .collect();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, rest) = if let Some(body) = line.strip_prefix('$') {
                let end = body
                    .bytes()
                    .position(|b| !is_name_byte(b))
                    .unwrap_or(body.len());
                (
                    format!("${}", &body[..end]).to_ascii_lowercase(),
                    &body[end..],
                )
            } else if let Some(body) = line.strip_prefix('<') {
                match body.find('>') {
                    Some(end) if body[..end].bytes().all(is_name_byte) && end > 0 => (
                        format!("<{}>", &body[..end]).to_ascii_lowercase(),
                        &body[end + 1..],
                    ),
                    _ => {
                        diags.push(Diagnostic::new(
                            file,
                            Some(n),
                            format!("expected '<keyword> names', found {line:?}"),
                        ));
                        continue;
                    }
                }
            } else {
                diags.push(Diagnostic::new(
                    file,
                    Some(n),
                    format!("ignored: expected '$facility names...' or '<interactive> names...', found {line:?}"),
                ));
                continue;
            };
            if key == "$" {
                diags.push(Diagnostic::new(
                    file,
                    Some(n),
                    "expected a facility name after '$'".into(),
                ));
                continue;
            }
            // insserv's separator: blanks, or blanks around one '=' or ':'.
            let rest = rest.trim_start_matches([' ', '\t']);
            let rest = rest.strip_prefix(['=', ':']).unwrap_or(rest);
            if !rest.is_empty() && !raw.trim()[key.len()..].starts_with([' ', '\t', '=', ':']) {
                diags.push(Diagnostic::new(
                    file,
                    Some(n),
                    format!("expected blanks, '=' or ':' after {key}"),
                ));
                continue;
            }
            let names: Vec<String> = rest
                .split([' ', '\t', ',', ';'])
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect();
            if key.starts_with('<') {
                if key == "<interactive>" {
                    for name in names {
                        self.interactive.push((name, file.to_path_buf(), n));
                    }
                } else {
                    diags.push(Diagnostic::new(
                        file,
                        Some(n),
                        format!("unknown keyword {key} ignored: expected <interactive>"),
                    ));
                }
                continue;
            }
            if key == "$all" || key == "$null" {
                diags.push(Diagnostic::new(
                    file,
                    Some(n),
                    format!("{key} is built in and cannot be redefined; line ignored"),
                ));
                continue;
            }
            let names: Vec<String> = names
                .into_iter()
                .filter(|name| known.insert((key.clone(), name.clone())))
                .collect();
            let defs = self.facilities.entry(key).or_default();
            // A line that adds nothing new is dropped, unless it is the facility's first
            // (an empty facility is still a defined one).
            if names.is_empty() && !defs.is_empty() {
                continue;
            }
            defs.push(Definition {
                file: file.to_path_buf(),
                line: n,
                names,
            });
        }
        diags
    }

    /// Whether `name` (a script's provided name or file name) is listed as interactive.
    pub fn is_interactive(&self, name: &str) -> bool {
        self.interactive.iter().any(|(n, _, _)| n == name)
    }
}

/// Whether a file in `insserv.conf.d` (or `init.d`) is a packaging leftover to skip, as
/// insserv's file filters do (`*.dpkg-old`, `*~`, dot files, ...).
pub fn is_leftover(name: &str) -> bool {
    const SUFFIXES: [&str; 12] = [
        "~",
        ".dpkg-old",
        ".dpkg-new",
        ".dpkg-dist",
        ".dpkg-bak",
        ".dpkg-tmp",
        ".ucf-old",
        ".ucf-new",
        ".ucf-dist",
        ".rpmsave",
        ".rpmnew",
        ".swp",
    ];
    name.starts_with('.') || SUFFIXES.iter().any(|s| name.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facilities_optional_nested_and_merged() {
        let mut c = Conf::default();
        let d = c.parse_into(
            "# comment\n$local_fs\t+mountall +umountfs\n\n$named +named $network\n<interactive> udev keyboard-setup\n",
            Path::new("etc/insserv.conf"),
        );
        assert!(d.is_empty(), "{d:?}");
        let d = c.parse_into(
            "$named = bind9\n$Portmap:rpcbind\n",
            Path::new("etc/insserv.conf.d/x"),
        );
        assert!(d.is_empty(), "{d:?}");
        let named = &c.facilities["$named"];
        assert_eq!(named.len(), 2);
        assert_eq!(named[0].names, vec!["+named", "$network"]);
        assert_eq!(
            (named[1].line, named[1].names.clone()),
            (1, vec!["bind9".to_string()])
        );
        assert_eq!(c.facilities["$portmap"][0].names, vec!["rpcbind"]);
        assert_eq!(c.facilities["$local_fs"][0].line, 2);
        assert!(c.is_interactive("udev") && !c.is_interactive("mountall"));
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let mut c = Conf::default();
        let d = c.parse_into(
            "$ok a\nlocal_fs b\n<frob> c\n$all x\n",
            Path::new("etc/insserv.conf"),
        );
        let shown: Vec<String> = d.iter().map(|d| d.to_string()).collect();
        assert_eq!(shown.len(), 3, "{shown:?}");
        assert!(shown[0].starts_with("etc/insserv.conf:2: ignored: expected '$facility"));
        assert!(shown[1].starts_with("etc/insserv.conf:3: unknown keyword <frob>"));
        assert!(shown[2].starts_with("etc/insserv.conf:4: $all is built in"));
        assert_eq!(c.facilities.len(), 1);
    }

    #[test]
    fn leftovers() {
        assert!(is_leftover("bind9.dpkg-old") && is_leftover(".depend.boot") && is_leftover("x~"));
        assert!(!is_leftover("bind9") && !is_leftover("rc.local"));
    }
}
