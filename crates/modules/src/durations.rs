//! How long each module took to load on earlier boots: the state file the plan reads to put
//! slow modules first, and the loader's results fold back into.
//!
//! Format (`/var/lib/bootprint/modules.durations`, documented in docs/modules.md): a first
//! line `bootprint-module-durations 1`, then one `NAME MICROSECONDS` line per module, sorted
//! by name; `#` lines are comments. Written whole to a temporary file and renamed, so a boot
//! that stops half-way leaves the old file.

use std::collections::BTreeMap;
use std::fs;
use std::io;
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

    /// Writes the file whole or not at all (`sys::write_atomic`).
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        sys::write_atomic(path, self.to_text().as_bytes()).map_err(|e| Error::io(path, e))
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
            // In u128: the stored value comes from a file and may be near u64::MAX.
            Some(&old) => ((u128::from(old) + u128::from(us)) / 2) as u64,
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

/// Folds `report` into the state file at `path` and writes it: re-read first (the file may
/// have changed since the plan read it), then [`Durations::learn_from`], then
/// [`Durations::write`]. At boot the loader runs before the root is remounted read-write,
/// so a read-only file system (`EROFS`) is retried every `pause`, at most `attempts` times.
/// Returns how many modules were learned (0: nothing written).
pub fn save_learned(
    path: &Path,
    report: &crate::load::LoadReport,
    attempts: usize,
    pause: std::time::Duration,
) -> Result<usize, Error> {
    let mut probe = Durations::default();
    probe.learn_from(report);
    if probe.us.is_empty() {
        return Ok(0);
    }
    let learned = probe.us.len();
    retry_read_only(attempts, pause, || {
        let mut d = Durations::read(path)?;
        d.learn_from(report);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        d.write(path)
    })?;
    Ok(learned)
}

/// Runs `f` until it succeeds, fails with something other than a read-only file system, or
/// has been tried `attempts` times (at least once), sleeping `pause` between tries.
pub fn retry_read_only<T>(
    attempts: usize,
    pause: std::time::Duration,
    mut f: impl FnMut() -> Result<T, Error>,
) -> Result<T, Error> {
    let mut left = attempts.max(1);
    loop {
        left -= 1;
        match f() {
            Err(Error::Io { source, .. })
                if left > 0 && source.kind() == io::ErrorKind::ReadOnlyFilesystem =>
            {
                std::thread::sleep(pause)
            }
            other => return other,
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
    fn read_only_is_retried_other_errors_are_not() {
        let pause = std::time::Duration::from_millis(1);
        let rofs = || Error::io(Path::new("/var"), io::Error::from_raw_os_error(libc::EROFS));
        let mut calls = 0;
        let r = retry_read_only(5, pause, || {
            calls += 1;
            if calls < 3 {
                Err(rofs())
            } else {
                Ok(calls)
            }
        });
        assert_eq!(r.unwrap(), 3);
        // Gives up after `attempts` tries, with the last error.
        let mut calls = 0;
        let r: Result<(), Error> = retry_read_only(4, pause, || {
            calls += 1;
            Err(rofs())
        });
        assert_eq!(calls, 4);
        assert!(r.unwrap_err().to_string().starts_with("/var: "));
        // Any other error ends it at once.
        let mut calls = 0;
        let r: Result<(), Error> = retry_read_only(4, pause, || {
            calls += 1;
            Err(Error::parse(Path::new("d"), 1, "x".into()))
        });
        assert_eq!(calls, 1);
        assert!(r.is_err());
    }

    #[test]
    fn save_learned_folds_into_the_file_on_disk() {
        use crate::load::{LoadReport, Outcome, Timing};
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        // The directory does not exist yet: it is made.
        let path = dir.join("lib/bootprint/modules.durations");
        let report = |us: u64, outcome| LoadReport {
            modules: vec![Timing {
                name: "kvm".into(),
                start_ns: 1_000_000,
                end_ns: 1_000_000 + us * 1000,
                worker: 1,
                outcome,
            }],
            worker_errors: vec![],
        };
        let pause = std::time::Duration::from_millis(1);
        assert_eq!(
            save_learned(&path, &report(8000, Outcome::Loaded), 1, pause).unwrap(),
            1
        );
        assert_eq!(Durations::read(&path).unwrap().expected_us("kvm"), 8000);
        // A second boot moves it half-way; one where nothing loaded writes nothing.
        assert_eq!(
            save_learned(&path, &report(2000, Outcome::Loaded), 1, pause).unwrap(),
            1
        );
        assert_eq!(Durations::read(&path).unwrap().expected_us("kvm"), 5000);
        let failed = report(1, Outcome::Failed("No such device".into()));
        assert_eq!(save_learned(&path, &failed, 1, pause).unwrap(), 0);
        assert_eq!(Durations::read(&path).unwrap().expected_us("kvm"), 5000);
    }

    #[test]
    fn write_then_read() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let path = dir.join("modules.durations");
        assert_eq!(Durations::read(&path).unwrap(), Durations::default());
        let mut d = Durations::default();
        d.learn("uas", 42);
        d.write(&path).unwrap();
        assert_eq!(Durations::read(&path).unwrap(), d);
    }
}
