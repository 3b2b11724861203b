//! Script durations learned from earlier boots: the weights of the critical path.
//!
//! The file (default [`DEFAULT_PATH`]) is text:
//!
//! ```text
//! # bootprint rc durations 1
//! <script> <action> <ms> <boots>
//! ```
//!
//! `<ms>` is a moving average of the script's wall time (new = (3 * old + sample) / 4, the
//! first sample taken as is), `<boots>` how many boots fed it. A script not in the file
//! weighs [`DEFAULT_MS`]. A timed-out script counts with its timeout.

use std::collections::BTreeMap;
use std::path::Path;

use crate::Diagnostic;

/// Where the runner keeps what it learned.
pub const DEFAULT_PATH: &str = "/var/lib/bootprint/rc-durations";
/// The weight of a script never seen (ms): about what a Debian init script takes on a slow
/// machine, so unknown scripts are neither ignored nor dominant.
pub const DEFAULT_MS: u64 = 500;
const MAGIC: &str = "# bootprint rc durations 1";

/// Learned durations by (script, action).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Durations {
    /// (script, action) -> (ms, boots).
    pub map: BTreeMap<(String, String), (u64, u32)>,
}

impl Durations {
    /// Parses the file's text; bad lines are skipped with a diagnostic naming `file` and line.
    pub fn parse(text: &str, file: &Path) -> (Durations, Vec<Diagnostic>) {
        let mut d = Durations::default();
        let mut diags = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if i == 0 && line != MAGIC {
                diags.push(Diagnostic::new(
                    file,
                    Some(1),
                    format!("expected {MAGIC:?}, found {line:?}: file ignored"),
                ));
                return (Durations::default(), diags);
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let w: Vec<&str> = line.split_whitespace().collect();
            match (
                w.len(),
                w.get(2).and_then(|v| v.parse::<u64>().ok()),
                w.get(3).and_then(|v| v.parse::<u32>().ok()),
            ) {
                (4, Some(ms), Some(n)) => {
                    d.map.insert((w[0].to_string(), w[1].to_string()), (ms, n));
                }
                _ => diags.push(Diagnostic::new(
                    file,
                    Some(i + 1),
                    format!("expected `<script> <action> <ms> <boots>`, found {line:?}"),
                )),
            }
        }
        (d, diags)
    }

    /// Reads the file; a missing file is an empty table, other problems are diagnostics.
    pub fn load(path: &Path) -> (Durations, Vec<Diagnostic>) {
        match std::fs::read_to_string(path) {
            Ok(t) => Durations::parse(&t, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Durations::default(), vec![]),
            Err(e) => (
                Durations::default(),
                vec![Diagnostic::new(path, None, format!("cannot read: {e}"))],
            ),
        }
    }

    /// The expected duration of a script in ms.
    pub fn get(&self, script: &str, action: &str) -> u64 {
        self.map
            .get(&(script.to_string(), action.to_string()))
            .map_or(DEFAULT_MS, |&(ms, _)| ms.max(1))
    }

    /// Feeds one measured run in.
    pub fn record(&mut self, script: &str, action: &str, ms: u64) {
        let e = self
            .map
            .entry((script.to_string(), action.to_string()))
            .or_insert((ms, 0));
        if e.1 > 0 {
            // In u128: the stored value comes from the file and may be near u64::MAX.
            e.0 = ((3 * u128::from(e.0) + u128::from(ms)) / 4) as u64;
        }
        e.1 = e.1.saturating_add(1);
    }

    /// The file's text (sorted, so deterministic).
    pub fn format(&self) -> String {
        let mut s = format!("{MAGIC}\n");
        for ((script, action), (ms, n)) in &self.map {
            s.push_str(&format!("{script} {action} {ms} {n}\n"));
        }
        s
    }

    /// Writes the file whole or not at all ([`sys::write_atomic`]: a new temporary file,
    /// fsync, rename, fsync of the directory), creating its directory.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        sys::write_atomic(path, self.format().as_bytes())
    }

    /// Reads the file, lets `learn` fold a boot in, and saves it, holding an exclusive lock
    /// on its directory throughout: two runners save (runlevel S's worker ends while
    /// runlevel 2's runs), and without the lock both could read before either wrote, the
    /// later write dropping the other's figures (seen under load in the runner's test).
    pub fn update(path: &Path, learn: impl FnOnce(&mut Durations)) -> std::io::Result<()> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(dir)?;
        let held = sys::Dir::open_following(dir)?;
        held.lock_exclusive()?;
        let (mut d, _) = Durations::load(path);
        learn(&mut d);
        d.save(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runners saving at once each keep the others' figures (without the lock, most of
    /// them were lost).
    #[test]
    fn updates_at_once_lose_nothing() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("state/rc-durations");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    Durations::update(&path, |d| {
                        // Widen the window between the read and the write.
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        d.record(&format!("s{i}"), "start", 100 + i);
                    })
                    .unwrap()
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let (back, diags) = Durations::load(&path);
        assert!(diags.is_empty());
        assert_eq!(back.map.len(), 8, "{}", back.format());
    }

    #[test]
    fn round_trip_and_average() {
        let mut d = Durations::default();
        d.record("nginx", "start", 800);
        assert_eq!(d.get("nginx", "start"), 800);
        d.record("nginx", "start", 400);
        assert_eq!(d.get("nginx", "start"), 700);
        assert_eq!(d.get("cups", "start"), DEFAULT_MS);
        let text = d.format();
        assert_eq!(text, "# bootprint rc durations 1\nnginx start 700 2\n");
        let (back, diags) = Durations::parse(&text, Path::new("f"));
        assert!(diags.is_empty());
        assert_eq!(back, d);
    }

    #[test]
    fn bad_lines_are_named() {
        let (d, diags) = Durations::parse(
            "# bootprint rc durations 1\nok start 5 1\nbroken start x 1\n",
            Path::new("/var/lib/bootprint/rc-durations"),
        );
        assert_eq!(d.get("ok", "start"), 5);
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].line, Some(3));
        let (d, diags) = Durations::parse("garbage\n", Path::new("f"));
        assert!(d.map.is_empty());
        assert!(diags[0].message.contains("expected"));
    }

    /// A temporary file planted (or left by a crash) as a symlink to another file: saving
    /// must not write through it, and the result is a whole regular file.
    #[test]
    fn save_never_writes_through_a_planted_temp_symlink() {
        let d_tmp = tempfile::tempdir().unwrap();
        let d = d_tmp.path();
        let path = d.join("rc-durations");
        let mut old = Durations::default();
        old.record("old", "start", 100);
        old.save(&path).unwrap();
        let victim = d.join("victim");
        std::fs::write(&victim, "precious\n").unwrap();
        // Whatever the temporary file is called: the names a writer beside it might use.
        for tmp in ["rc-durations.tmp", ".rc-durations.tmp"] {
            let _ = std::fs::remove_file(d.join(tmp));
            std::os::unix::fs::symlink(&victim, d.join(tmp)).unwrap();
        }
        let mut new = Durations::default();
        new.record("new", "start", 200);
        new.save(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(Durations::load(&path).0, new);
    }

    /// A save that cannot complete (the file system full half way through) leaves the old
    /// file whole and no temporary file behind.
    #[test]
    fn a_failed_save_leaves_the_old_file_whole() {
        let Some(fs) = testkit::tmpfs::Tmpfs::new(256) else {
            return;
        };
        let path = fs.path().join("rc-durations");
        let mut old = Durations::default();
        old.record("old", "start", 100);
        old.save(&path).unwrap();
        fs.fill("filler");
        let mut new = Durations::default();
        for i in 0..2000 {
            new.record(&format!("script{i}"), "start", 200);
        }
        assert!(new.save(&path).is_err());
        assert_eq!(Durations::load(&path).0, old);
        let names: Vec<_> = std::fs::read_dir(fs.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}
