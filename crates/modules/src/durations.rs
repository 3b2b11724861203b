//! How long each module took to load on earlier boots: the state file the plan reads to put
//! slow modules first, and the loader's results fold back into.
//!
//! Format (`/var/lib/bootprint/modules.durations`, documented in docs/modules.md): a first
//! line `bootprint-module-durations 1`, then one `NAME MICROSECONDS` line per module, sorted
//! by name; `#` lines are comments. Written whole to a temporary file and renamed, so a boot
//! that stops half-way leaves the old file.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::Path;

use crate::Error;

const MAGIC: &str = "bootprint-module-durations 1";

/// Modules known to wait for hardware to settle after their init returns or during it (USB
/// storage waits for the device, firmware loaders wait for files), in microseconds. Used only
/// until this machine has measured them (principle 4: learn, don't configure).
const KNOWN_WAITERS: &[(&str, u64)] = &[
    // usb-storage waits `delay_use` (1 s by default) before scanning a new device.
    ("usb_storage", 1_000_000),
    ("uas", 1_000_000),
    // Firmware upload and mode setting: long inits on real hardware.
    ("i915", 500_000),
    ("amdgpu", 500_000),
    ("nouveau", 500_000),
    ("radeon", 500_000),
    ("iwlwifi", 300_000),
    ("btusb", 300_000),
];

/// What a module is expected to take when nothing is known: most load in a few milliseconds.
pub const DEFAULT_US: u64 = 5_000;

/// Learned load durations by module name, in microseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Durations {
    /// Module name (normalised) to microseconds.
    pub us: BTreeMap<String, u64>,
}

impl Durations {
    /// Parses the state file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &Path) -> Result<Durations, Error> {
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, l)) if l.trim() == MAGIC => {}
            Some((_, l)) => {
                return Err(Error::parse(
                    file,
                    1,
                    format!("expected {MAGIC:?}, found {l:?}"),
                ))
            }
            None => {
                return Err(Error::parse(
                    file,
                    1,
                    format!("expected {MAGIC:?}, file is empty"),
                ))
            }
        }
        let mut us = BTreeMap::new();
        for (n, line) in lines {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut f = line.split_whitespace();
            let (Some(name), Some(v), None) = (f.next(), f.next(), f.next()) else {
                return Err(Error::parse(
                    file,
                    n + 1,
                    format!("expected NAME MICROSECONDS, found {line:?}"),
                ));
            };
            let v: u64 = v.parse().map_err(|_| {
                Error::parse(
                    file,
                    n + 1,
                    format!("expected microseconds (an integer), found {v:?}"),
                )
            })?;
            us.insert(crate::input::normalize(name), v);
        }
        Ok(Durations { us })
    }

    /// Reads the state file; an absent file is an empty table (first boot).
    pub fn read(path: &Path) -> Result<Durations, Error> {
        match fs::read_to_string(path) {
            Ok(t) => Durations::parse(&t, path),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Durations::default()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// The file's text: deterministic (sorted by name).
    pub fn to_text(&self) -> String {
        let mut s =
            format!("{MAGIC}\n# module load durations in microseconds, learned by bootprint\n");
        for (name, us) in &self.us {
            s.push_str(&format!("{name} {us}\n"));
        }
        s
    }

    /// Writes the file atomically (temporary file in the same directory, then rename).
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let tmp = path.with_extension("tmp");
        let res = fs::File::create(&tmp)
            .and_then(|mut f| {
                f.write_all(self.to_text().as_bytes())?;
                f.sync_all()
            })
            .and_then(|_| fs::rename(&tmp, path));
        res.map_err(|e| Error::io(path, e))
    }

    /// The expected duration of `name`: learned, else a known waiter's default, else
    /// [`DEFAULT_US`].
    pub fn expected_us(&self, name: &str) -> u64 {
        if let Some(&v) = self.us.get(name) {
            return v;
        }
        KNOWN_WAITERS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| v)
            .unwrap_or(DEFAULT_US)
    }

    /// Folds one boot's measurement in: the mean of the old value and the new one, so one
    /// odd boot moves the estimate only half-way.
    pub fn learn(&mut self, name: &str, us: u64) {
        let v = match self.us.get(name) {
            Some(&old) => (old + us) / 2,
            None => us,
        };
        self.us.insert(name.to_string(), v);
    }
}

impl Durations {
    /// Learns from one boot's loads: only modules inserted now count (an `EEXIST` or a
    /// failure says nothing about how long the module takes).
    pub fn learn_from(&mut self, report: &crate::load::LoadReport) {
        for t in &report.modules {
            if t.outcome == crate::load::Outcome::Loaded {
                self.learn(&t.name, t.end_ns.saturating_sub(t.start_ns) / 1000);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_learning() {
        let mut d = Durations::default();
        d.learn("usb_storage", 1200);
        d.learn("e1000", 800);
        d.learn("e1000", 400);
        let text = d.to_text();
        assert!(text.starts_with("bootprint-module-durations 1\n"));
        assert!(text.ends_with("e1000 600\nusb_storage 1200\n"));
        assert_eq!(Durations::parse(&text, Path::new("s")).unwrap(), d);
    }

    #[test]
    fn defaults_put_known_waiters_first_until_learned() {
        let mut d = Durations::default();
        assert_eq!(d.expected_us("usb_storage"), 1_000_000);
        assert_eq!(d.expected_us("e1000"), DEFAULT_US);
        d.learn("usb_storage", 2_000);
        assert_eq!(d.expected_us("usb_storage"), 2_000);
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let e = Durations::parse(
            "bootprint-module-durations 1\nfoo 12\nbar x\n",
            Path::new("d"),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "d:3: expected microseconds (an integer), found \"x\""
        );
        let e = Durations::parse("something else\n", Path::new("d")).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("d:1: expected \"bootprint-module-durations 1\""));
    }

    #[test]
    fn learns_only_from_modules_inserted_now() {
        use crate::load::{LoadReport, Outcome, Timing};
        let t = |name: &str, start_ns, end_ns, outcome| Timing {
            name: name.into(),
            start_ns,
            end_ns,
            worker: 1,
            outcome,
        };
        let report = LoadReport {
            modules: vec![
                t("usb_storage", 1_000_000, 3_000_000, Outcome::Loaded),
                t("virtio", 0, 9_000_000, Outcome::AlreadyLoaded),
                t("uas", 0, 9_000_000, Outcome::Failed("x".into())),
            ],
            worker_errors: vec![],
        };
        let mut d = Durations::default();
        d.learn_from(&report);
        assert_eq!(
            d.us.into_iter().collect::<Vec<_>>(),
            vec![("usb_storage".to_string(), 2000)]
        );
    }

    #[test]
    fn write_then_read() {
        let dir = std::env::temp_dir().join(format!("bp-mod-dur-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("modules.durations");
        assert_eq!(Durations::read(&path).unwrap(), Durations::default());
        let mut d = Durations::default();
        d.learn("uas", 42);
        d.write(&path).unwrap();
        assert_eq!(Durations::read(&path).unwrap(), d);
        fs::remove_dir_all(&dir).unwrap();
    }
}
