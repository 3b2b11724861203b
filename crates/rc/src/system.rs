//! A system's init scripts, facilities and runlevel links, read from a root directory.
//!
//! Every path is relative to the root (`/` on the machine, a fake tree in tests):
//! `etc/init.d/*`, `etc/insserv.conf`, `etc/insserv.conf.d/*`, `etc/rc{S,0..6}.d/S??name`.
//! Diagnostics name files relative to the root.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::conf::{is_leftover, Conf};
use crate::header::{self, Header, Parsed};
use crate::{Diagnostic, Error};

/// A runlevel: `S` (boot) or 0..=6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Runlevel {
    /// The boot runlevel, `/etc/rcS.d`.
    S,
    /// A numbered runlevel, `/etc/rcN.d`.
    Num(u8),
}

impl Runlevel {
    /// Parses `S`, `s` or `0`..`6`.
    pub fn parse(s: &str) -> Option<Runlevel> {
        match s {
            "S" | "s" => Some(Runlevel::S),
            _ => match s.parse::<u8>() {
                Ok(n) if n <= 6 => Some(Runlevel::Num(n)),
                _ => None,
            },
        }
    }

    /// Every runlevel, boot first.
    pub const ALL: [Runlevel; 8] = [
        Runlevel::S,
        Runlevel::Num(0),
        Runlevel::Num(1),
        Runlevel::Num(2),
        Runlevel::Num(3),
        Runlevel::Num(4),
        Runlevel::Num(5),
        Runlevel::Num(6),
    ];

    /// `S` or the digit.
    pub fn label(self) -> String {
        match self {
            Runlevel::S => "S".into(),
            Runlevel::Num(n) => n.to_string(),
        }
    }

    /// The link directory relative to the root.
    pub fn dir(self) -> PathBuf {
        PathBuf::from(format!("etc/rc{}.d", self.label()))
    }
}

/// One script of `init.d`.
#[derive(Debug, Clone)]
pub struct Script {
    /// File name in `init.d` (the node name, as in insserv's `.depend` files).
    pub name: String,
    /// Path relative to the root.
    pub path: PathBuf,
    /// The header, if the script has a complete one.
    pub header: Option<Header>,
}

impl Script {
    /// The names the script provides; its file name when it has no header or an empty
    /// `Provides`.
    pub fn provided(&self) -> Vec<String> {
        let p = self
            .header
            .as_ref()
            .map(|h| h.provided())
            .unwrap_or_default();
        if p.is_empty() {
            vec![self.name.clone()]
        } else {
            p.into_iter().map(str::to_string).collect()
        }
    }
}

/// A start link: `S<seq><name>` in a runlevel directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The two-digit sequence number.
    pub seq: u8,
    /// The script it starts (index into [`System::scripts`]).
    pub script: usize,
}

/// Everything read from the root.
#[derive(Debug, Clone)]
pub struct System {
    /// The root it was read from.
    pub root: PathBuf,
    /// Scripts by file name order.
    pub scripts: Vec<Script>,
    /// Facilities.
    pub conf: Conf,
    /// Start links of each runlevel directory that exists.
    pub links: BTreeMap<Runlevel, Vec<Link>>,
    /// Provided name to script index (first script in name order wins).
    pub providers: BTreeMap<String, usize>,
    /// What was worked around while reading.
    pub diagnostics: Vec<Diagnostic>,
}

/// Default root.
pub const DEFAULT_ROOT: &str = "/";

fn read_dir_sorted(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if let Ok(name) = e.file_name().into_string() {
            v.push((name, e.path()));
        }
    }
    v.sort();
    Ok(v)
}

impl System {
    /// The system's diagnostics and then those of `graphs`, each said once (the same
    /// missing dependency shows in several runlevels).
    pub fn diagnostics_with<'a>(
        &'a self,
        graphs: &'a [crate::graph::Graph],
    ) -> Vec<&'a Diagnostic> {
        let mut v: Vec<&Diagnostic> = self.diagnostics.iter().collect();
        // A set, not `Vec::contains`: a header with 200k missing names made this quadratic.
        let mut seen: std::collections::BTreeSet<(&Path, Option<usize>, &str)> = v
            .iter()
            .map(|d| (d.file.as_path(), d.line, d.message.as_str()))
            .collect();
        for g in graphs {
            for d in &g.diagnostics {
                if seen.insert((d.file.as_path(), d.line, d.message.as_str())) {
                    v.push(d);
                }
            }
        }
        v
    }

    /// Reads a system from `root`. Only a missing or unreadable `etc/init.d` is an error;
    /// everything else becomes a diagnostic.
    pub fn load(root: &Path) -> Result<System, Error> {
        let initd = root.join("etc/init.d");
        let entries = read_dir_sorted(&initd).map_err(|source| {
            let message = format!("{}: {source}", initd.display());
            Error::io(&initd, message, source)
        })?;
        let mut diagnostics = Vec::new();
        let mut scripts = Vec::new();
        for (name, path) in entries {
            // Not scripts: insserv's own output, READMEs, leftovers, the rc drivers.
            if is_leftover(&name) || matches!(name.as_str(), "README" | "skeleton" | "rc" | "rcS") {
                continue;
            }
            if !path.is_file() {
                continue;
            }
            let rel = Path::new("etc/init.d").join(&name);
            let bytes = match std::fs::read(&path) {
                Ok(b) => b,
                Err(e) => {
                    diagnostics.push(Diagnostic::new(&rel, None, format!("cannot read: {e}")));
                    continue;
                }
            };
            let text = String::from_utf8_lossy(&bytes);
            let (parsed, mut d) = header::parse(&text, &rel);
            diagnostics.append(&mut d);
            let header = match parsed {
                Parsed::Lsb(h) => Some(*h),
                Parsed::NoHeader => {
                    diagnostics.push(Diagnostic::new(
                        &rel,
                        None,
                        "no LSB header ('### BEGIN INIT INFO'): ordered after the scripts its rc link number follows, as insserv does".into(),
                    ));
                    None
                }
                Parsed::Unterminated { .. } => None,
            };
            scripts.push(Script {
                name,
                path: rel,
                header,
            });
        }
        let mut conf = Conf::default();
        let main = Path::new("etc/insserv.conf");
        match std::fs::read_to_string(root.join(main)) {
            Ok(t) => diagnostics.append(&mut conf.parse_into(&t, main)),
            Err(e) => diagnostics.push(Diagnostic::new(
                main,
                None,
                format!("cannot read ({e}): no system facilities defined"),
            )),
        }
        if let Ok(files) = read_dir_sorted(&root.join("etc/insserv.conf.d")) {
            for (name, path) in files {
                if is_leftover(&name) || !path.is_file() {
                    continue;
                }
                let rel = Path::new("etc/insserv.conf.d").join(&name);
                match std::fs::read_to_string(&path) {
                    Ok(t) => diagnostics.append(&mut conf.parse_into(&t, &rel)),
                    Err(e) => {
                        diagnostics.push(Diagnostic::new(&rel, None, format!("cannot read: {e}")))
                    }
                }
            }
        }
        let mut providers: BTreeMap<String, usize> = BTreeMap::new();
        for (i, s) in scripts.iter().enumerate() {
            for p in s.provided() {
                if let Some(&other) = providers.get(&p) {
                    let line = s
                        .header
                        .as_ref()
                        .and_then(|h| h.provides.as_ref())
                        .map(|f| f.line);
                    diagnostics.push(Diagnostic::new(
                        &s.path,
                        line,
                        format!("{p} is already provided by {}: expected each name provided once; {} keeps it", scripts[other].name, scripts[other].name),
                    ));
                } else {
                    providers.insert(p, i);
                }
            }
        }
        let by_name: BTreeMap<&str, usize> = scripts
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.as_str(), i))
            .collect();
        let mut links = BTreeMap::new();
        for rl in Runlevel::ALL {
            let dir = rl.dir();
            let Ok(entries) = read_dir_sorted(&root.join(&dir)) else {
                continue;
            };
            let mut v = Vec::new();
            for (name, path) in entries {
                let b = name.as_bytes();
                if b.len() < 4 || b[0] != b'S' || !b[1].is_ascii_digit() || !b[2].is_ascii_digit() {
                    continue; // K links, README, ...
                }
                let seq = (b[1] - b'0') * 10 + (b[2] - b'0');
                // The link's target names the script; a plain file uses the name after S??.
                let target = std::fs::read_link(&path)
                    .ok()
                    .and_then(|t| t.file_name().and_then(|f| f.to_str()).map(str::to_string))
                    .unwrap_or_else(|| name[3..].to_string());
                match by_name.get(target.as_str()) {
                    Some(&i) => v.push(Link { seq, script: i }),
                    None => diagnostics.push(Diagnostic::new(
                        &dir.join(&name),
                        None,
                        format!("start link to {target:?}, which is not a script in etc/init.d: ignored"),
                    )),
                }
            }
            links.insert(rl, v);
        }
        Ok(System {
            root: root.to_path_buf(),
            scripts,
            conf,
            links,
            providers,
            diagnostics,
        })
    }

    /// Scripts started in a runlevel (indices into [`System::scripts`]), in link order.
    pub fn enabled(&self, rl: Runlevel) -> Vec<usize> {
        self.links
            .get(&rl)
            .map_or(Vec::new(), |l| l.iter().map(|l| l.script).collect())
    }

    /// Whether a script is interactive (header or `<interactive>` in the configuration).
    pub fn is_interactive(&self, script: usize) -> bool {
        let s = &self.scripts[script];
        s.header.as_ref().is_some_and(|h| h.is_interactive())
            || self.conf.is_interactive(&s.name)
            || s.provided().iter().any(|p| self.conf.is_interactive(p))
    }
}
