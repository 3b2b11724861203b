//! Retention: the log directory keeps the newest traces within a count and a size, the oldest
//! removed first, and never `latest`'s target, a pinned trace or the trace just written.
//!
//! The same code runs at boot done (after the new trace and `latest` are written, failing
//! open: what it did and any error go to the trace's `retention.log`) and as `bootprint
//! prune` by hand. It only reads the directory (one readdir, an `lstat` of each entry and of
//! each file of a trace, and a trace's small `header`, `seq` and `pinned` files) and only
//! removes what it recognises:
//!
//! - a **trace**: a directory (not a symlink) whose name does not start with `.`, holding a
//!   regular file `header` with a `bootprint.boot_id` line (what the recorder writes first
//!   thing in every header; a user's own directory or a copied bootchart2 log has none);
//! - a **crashed write**: a directory `.<boot id>.tmp` (the recorder's temporary name) whose
//!   boot id is not this boot's: the boot that wrote it is over, so nobody will finish it.
//!
//! Everything else (files, symlinks, `latest`, other hidden names) is left alone, and nothing
//! is followed out of the directory: entries are taken from the readdir by name, and a
//! directory is removed with `remove_dir_all`, which removes a symlink inside it and does not
//! follow it.
//!
//! Order ("oldest"): by the sequence number in the trace's `seq` file, written at boot done
//! as one more than the highest in the directory; a trace without one (written before
//! retention existed, or copied in) is older than any with one, and among those the `header`
//! file's modification time decides. Not the wall clock: a machine without a real-time clock
//! starts at 1970 (or at a saved time) until NTP sets it, so the times of its boots say
//! nothing about their order, while the count goes up by one each boot.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

/// A trace's pin: an empty file in the trace directory (`bootprint keep ID`).
pub const PIN_FILE: &str = "pinned";
/// A trace's place in the boot order: a decimal number and a newline.
pub const SEQ_FILE: &str = "seq";
/// What retention did at boot done, in the trace just written.
pub const LOG_FILE: &str = "retention.log";
/// The header is read only up to this size when recognising a trace (a real one is < 2 KiB).
const MAX_HEADER_BYTES: u64 = 64 * 1024;
/// A trace directory is walked this deep at most (it has one level: `firmware/`).
const MAX_DEPTH: u32 = 4;

/// How much the log directory keeps; 0 in either means no limit of that kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// The most traces kept.
    pub keep: u32,
    /// The most bytes the traces take on disk.
    pub max_bytes: u64,
}

impl Limits {
    /// From the configuration's `keep_traces` and `keep_mb` (MiB).
    pub fn new(keep: u32, max_mb: f64) -> Limits {
        Limits {
            keep,
            max_bytes: (max_mb.max(0.0) * 1024.0 * 1024.0) as u64,
        }
    }
}

/// One trace in the log directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Kept {
    /// Its directory's name (the boot id, unless someone renamed it).
    pub name: String,
    /// Its directory.
    pub path: PathBuf,
    /// Bytes it takes on disk (allocated blocks of it and every file in it).
    pub bytes: u64,
    /// Its `seq`, if it has one.
    pub seq: Option<u64>,
    /// When its `header` was written (the wall clock then, which may have been wrong).
    pub written: Option<SystemTime>,
    /// It has a `pinned` file.
    pub pinned: bool,
    /// `latest` points at it.
    pub latest: bool,
}

/// What [`scan`] found in a log directory.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// The traces, oldest first.
    pub traces: Vec<Kept>,
    /// Temporary directories of writes that crashed in an earlier boot, with their size.
    pub crashed: Vec<(PathBuf, u64)>,
    /// The name `latest` points at, if it is a name in the directory.
    pub latest: Option<String>,
    /// Entries looked at (the readdir's length).
    pub entries: usize,
}

impl Scan {
    /// The trace that `id` names: `latest`, a whole name, or a prefix only one name has.
    pub fn find(&self, id: &str) -> Result<&Kept, String> {
        let id = if id == "latest" {
            self.latest.as_deref().ok_or("no `latest` trace")?
        } else {
            id
        };
        if let Some(t) = self.traces.iter().find(|t| t.name == id) {
            return Ok(t);
        }
        let hits: Vec<&Kept> = self
            .traces
            .iter()
            .filter(|t| !id.is_empty() && t.name.starts_with(id))
            .collect();
        match hits.as_slice() {
            [one] => Ok(one),
            [] => Err(format!("no trace named {id:?} or starting with it")),
            many => Err(format!(
                "{id:?} is the start of {} traces ({}): give more of the id",
                many.len(),
                many.iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

/// Why something goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// More traces than `keep`.
    Count,
    /// The traces take more than `max_bytes`.
    Size,
    /// A temporary directory left by a write that crashed in an earlier boot.
    Crashed,
}

impl Why {
    /// One word for logs and output.
    pub fn word(self) -> &'static str {
        match self {
            Why::Count => "count",
            Why::Size => "size",
            Why::Crashed => "crashed-write",
        }
    }
}

/// One directory to remove.
#[derive(Debug, Clone, PartialEq)]
pub struct Removal {
    /// The directory.
    pub path: PathBuf,
    /// Bytes it takes.
    pub bytes: u64,
    /// Why it goes.
    pub why: Why,
}

/// Lists the traces and crashed writes of `dir`; `this_boot` is the running boot's id (its
/// temporary directory is never a crashed write).
pub fn scan(dir: &Path, this_boot: &str) -> io::Result<Scan> {
    let mut scan = Scan {
        latest: fs::read_link(dir.join("latest"))
            .ok()
            .and_then(|t| t.to_str().map(String::from))
            .filter(|t| !t.is_empty() && !t.contains('/') && t != "." && t != ".."),
        ..Scan::default()
    };
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        scan.entries += 1;
        let Some(name) = entry.file_name().to_str().map(String::from) else {
            continue; // not a name the recorder writes
        };
        let path = dir.join(&name);
        // lstat: a symlink is never a trace, whatever it points at.
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        if let Some(id) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) {
            if is_boot_id(id) && id != this_boot {
                scan.crashed
                    .push((path.clone(), disk_bytes(&path, &meta, 0)));
            }
            continue;
        }
        if name.starts_with('.') || !is_trace(&path) {
            continue;
        }
        let header = fs::symlink_metadata(path.join("header")).ok();
        scan.traces.push(Kept {
            bytes: disk_bytes(&path, &meta, 0),
            seq: read_seq(&path),
            written: header.and_then(|m| m.modified().ok()),
            pinned: fs::symlink_metadata(path.join(PIN_FILE)).is_ok(),
            latest: scan.latest.as_deref() == Some(name.as_str()),
            name,
            path,
        });
    }
    // No seq sorts first (older), then seq, then the header's time, then the name (a fixed
    // order whatever readdir gave).
    scan.traces
        .sort_by(|a, b| (a.seq, a.written, &a.name).cmp(&(b.seq, b.written, &b.name)));
    Ok(scan)
}

/// Whether `dir` is a trace: a regular `header` with a `bootprint.boot_id` line.
pub fn is_trace(dir: &Path) -> bool {
    sys::read_regular_text(&dir.join("header"), MAX_HEADER_BYTES).is_ok_and(|h| {
        h.lines()
            .any(|l| l.split('=').next().map(str::trim) == Some("bootprint.boot_id"))
    })
}

/// The kernel's boot id shape: 36 characters, hex digits and four dashes.
fn is_boot_id(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn read_seq(dir: &Path) -> Option<u64> {
    sys::read_regular_text(&dir.join(SEQ_FILE), 64)
        .ok()
        .and_then(|t| t.trim().parse().ok())
}

/// Allocated bytes of `path` and, for a directory, of what is in it (symlinks not followed).
fn disk_bytes(path: &Path, meta: &fs::Metadata, depth: u32) -> u64 {
    let mut total = meta.blocks() * 512;
    if meta.is_dir() && depth < MAX_DEPTH {
        if let Ok(rd) = fs::read_dir(path) {
            for e in rd.flatten() {
                let p = e.path();
                if let Ok(m) = fs::symlink_metadata(&p) {
                    total += disk_bytes(&p, &m, depth + 1);
                }
            }
        }
    }
    total
}

/// What goes, oldest first: crashed writes, then the oldest traces while there are more than
/// `keep`, then the oldest while the rest take more than `max_bytes`. Pinned traces stay and
/// are not counted; `latest`'s target and `just_written` stay and are counted.
pub fn plan(scan: &Scan, limits: Limits, just_written: Option<&str>) -> Vec<Removal> {
    let mut out: Vec<Removal> = scan
        .crashed
        .iter()
        .map(|(path, bytes)| Removal {
            path: path.clone(),
            bytes: *bytes,
            why: Why::Crashed,
        })
        .collect();
    // Pinned traces are the user's own choice: outside both limits, so pinning a few
    // baselines does not shorten the history of recent boots.
    let protected = |t: &Kept| t.latest || Some(t.name.as_str()) == just_written;
    let mut left: Vec<&Kept> = scan.traces.iter().filter(|t| !t.pinned).collect();
    let mut drop_oldest = |left: &mut Vec<&Kept>, why: Why, over: &dyn Fn(&[&Kept]) -> bool| {
        while over(left) {
            let Some(i) = left.iter().position(|t| !protected(t)) else {
                break; // everything left is protected
            };
            let t = left.remove(i);
            out.push(Removal {
                path: t.path.clone(),
                bytes: t.bytes,
                why,
            });
        }
    };
    if limits.keep > 0 {
        drop_oldest(&mut left, Why::Count, &|l| l.len() > limits.keep as usize);
    }
    if limits.max_bytes > 0 {
        let over = |l: &[&Kept]| l.iter().map(|t| t.bytes).sum::<u64>() > limits.max_bytes;
        drop_oldest(&mut left, Why::Size, &over);
    }
    out
}

/// Removes what `plan` chose, each checked again to be a directory and not a symlink right
/// before; returns the failures (the rest went).
pub fn remove(plan: &[Removal]) -> Vec<(PathBuf, io::Error)> {
    let mut failed = Vec::new();
    for r in plan {
        let result = match fs::symlink_metadata(&r.path) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(&r.path),
            Ok(_) => Err(io::Error::other("no longer a directory")),
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            failed.push((r.path.clone(), e));
        }
    }
    failed
}

/// Pins (`on`) or unpins the trace at `dir`.
pub fn pin(dir: &Path, on: bool) -> io::Result<()> {
    let file = dir.join(PIN_FILE);
    if on {
        // As private as the rest of the trace (docs/recorder.md); empty, so nothing leaks.
        let access = crate::store::Access::of_dir(dir)?;
        access.write(&file, b"")
    } else {
        match fs::remove_file(&file) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// At boot done, after `trace` (in its log directory) and `latest` are written: gives the
/// trace its `seq`, removes what the limits say, and writes `retention.log` into the trace
/// (what went, what failed, what it cost). Never fails: an error is in the log.
pub fn at_boot_done(trace: &Path, limits: Limits, this_boot: &str) {
    let started = Instant::now();
    let mut log = String::new();
    let (Some(dir), Some(name)) = (trace.parent(), trace.file_name().and_then(|n| n.to_str()))
    else {
        return;
    };
    match scan(dir, this_boot) {
        Err(e) => {
            let _ = writeln!(log, "error: cannot list {}: {e}", dir.display());
        }
        Ok(mut found) => {
            let next = found.traces.iter().filter_map(|t| t.seq).max().unwrap_or(0) + 1;
            match write_seq(trace, next) {
                Ok(()) => {
                    // It is now the newest: put it last, as scan would have.
                    if let Some(i) = found.traces.iter().position(|t| t.name == name) {
                        let mut t = found.traces.remove(i);
                        t.seq = Some(next);
                        found.traces.push(t);
                    }
                }
                Err(e) => {
                    let _ = writeln!(log, "error: cannot write {SEQ_FILE}: {e}");
                }
            }
            let scanned = started.elapsed();
            let removals = plan(&found, limits, Some(name));
            let failed = remove(&removals);
            for r in &removals {
                let err = failed.iter().find(|(p, _)| *p == r.path).map(|(_, e)| e);
                let what = r.path.file_name().unwrap_or_default().to_string_lossy();
                let _ = match err {
                    None => writeln!(log, "removed {what} ({}, {} bytes)", r.why.word(), r.bytes),
                    Some(e) => writeln!(log, "error: cannot remove {what}: {e}"),
                };
            }
            let went = |path: &Path| {
                removals.iter().any(|r| r.path == path) && !failed.iter().any(|(p, _)| p == path)
            };
            let kept: Vec<&Kept> = found.traces.iter().filter(|t| !went(&t.path)).collect();
            let _ = writeln!(
                log,
                "kept {} traces, {} bytes; seq {next}; limits keep_traces={} max_bytes={}; \
                 {} entries scanned in {} us, all done in {} us",
                kept.len(),
                kept.iter().map(|t| t.bytes).sum::<u64>(),
                limits.keep,
                limits.max_bytes,
                found.entries,
                scanned.as_micros(),
                started.elapsed().as_micros(),
            );
        }
    }
    let access = crate::store::Access::of_dir(trace).unwrap_or(crate::store::Access { gid: None });
    let _ = access.write(&trace.join(LOG_FILE), log.as_bytes());
}

fn write_seq(trace: &Path, seq: u64) -> io::Result<()> {
    let access = crate::store::Access::of_dir(trace)?;
    access.write(&trace.join(SEQ_FILE), format!("{seq}\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const THIS_BOOT: &str = "ffffffff-0000-4000-8000-000000000000";

    /// A fake trace: a header naming its boot, `kib` KiB of samples and a `seq`.
    fn trace(dir: &Path, name: &str, seq: Option<u64>, kib: usize) -> PathBuf {
        let t = dir.join(name);
        fs::create_dir_all(&t).unwrap();
        fs::write(t.join("header"), format!("bootprint.boot_id = {name}\n")).unwrap();
        fs::write(t.join("proc_ps.log"), vec![b'x'; kib * 1024]).unwrap();
        if let Some(s) = seq {
            fs::write(t.join(SEQ_FILE), format!("{s}\n")).unwrap();
        }
        t
    }

    fn names(scan: &Scan) -> Vec<&str> {
        scan.traces.iter().map(|t| t.name.as_str()).collect()
    }

    fn gone(plan: &[Removal]) -> Vec<String> {
        plan.iter()
            .map(|r| r.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    fn set_latest(dir: &Path, name: &str) {
        let _ = fs::remove_file(dir.join("latest"));
        std::os::unix::fs::symlink(name, dir.join("latest")).unwrap();
    }

    #[test]
    fn count_limit_removes_the_oldest_by_seq_not_by_clock() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        for (name, seq) in [("b3", 3), ("b1", 1), ("b5", 5), ("b2", 2), ("b4", 4)] {
            trace(d, name, Some(seq), 1);
        }
        // The newest boot had no clock: its header says 1970. Order is by seq all the same.
        let f = fs::File::options()
            .write(true)
            .open(d.join("b5/header"))
            .unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH).unwrap();
        // An old trace without seq (written before retention existed) is older than all.
        trace(d, "old", None, 1);
        set_latest(d, "b5");
        let s = scan(d, THIS_BOOT).unwrap();
        assert_eq!(names(&s), ["old", "b1", "b2", "b3", "b4", "b5"]);
        let p = plan(
            &s,
            Limits {
                keep: 3,
                max_bytes: 0,
            },
            None,
        );
        assert_eq!(gone(&p), ["old", "b1", "b2"]);
        assert!(p.iter().all(|r| r.why == Why::Count));
        assert!(remove(&p).is_empty());
        assert_eq!(names(&scan(d, THIS_BOOT).unwrap()), ["b3", "b4", "b5"]);
    }

    #[test]
    fn size_limit_after_count_and_zero_means_no_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        for seq in 1..=4 {
            trace(d, &format!("b{seq}"), Some(seq), 100);
        }
        let s = scan(d, THIS_BOOT).unwrap();
        let each = s.traces[0].bytes;
        assert!(each >= 100 * 1024, "{each}");
        assert!(plan(
            &s,
            Limits {
                keep: 0,
                max_bytes: 0
            },
            None
        )
        .is_empty());
        // Room for two and a half: the two oldest go, for size.
        let p = plan(
            &s,
            Limits {
                keep: 0,
                max_bytes: each * 5 / 2,
            },
            None,
        );
        assert_eq!(gone(&p), ["b1", "b2"]);
        assert!(p.iter().all(|r| r.why == Why::Size));
        // Count first (one goes), then size (one more).
        let p = plan(
            &s,
            Limits {
                keep: 3,
                max_bytes: each * 5 / 2,
            },
            None,
        );
        assert_eq!(
            p.iter().map(|r| r.why).collect::<Vec<_>>(),
            [Why::Count, Why::Size]
        );
        assert_eq!(Limits::new(10, 200.0).max_bytes, 200 << 20);
    }

    #[test]
    fn latest_pinned_and_the_trace_just_written_always_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        for seq in 1..=5 {
            trace(d, &format!("b{seq}"), Some(seq), 10);
        }
        // `latest` at an old trace (a boot whose trace went to /run), b2 pinned.
        set_latest(d, "b1");
        pin(&d.join("b2"), true).unwrap();
        let s = scan(d, THIS_BOOT).unwrap();
        assert!(s.traces[0].latest && s.traces[1].pinned);
        let p = plan(
            &s,
            Limits {
                keep: 1,
                max_bytes: 1,
            },
            Some("b3"),
        );
        assert_eq!(gone(&p), ["b4", "b5"]);
        // A pinned trace is not counted: with room for four, nothing goes (five, one pinned).
        assert!(plan(
            &s,
            Limits {
                keep: 4,
                max_bytes: 0
            },
            None
        )
        .is_empty());
        // Unpinned, b2 may go.
        pin(&d.join("b2"), false).unwrap();
        pin(&d.join("b2"), false).unwrap(); // twice is fine
        let s = scan(d, THIS_BOOT).unwrap();
        assert_eq!(
            gone(&plan(
                &s,
                Limits {
                    keep: 1,
                    max_bytes: 0
                },
                None
            )),
            ["b2", "b3", "b4", "b5"]
        );
    }

    #[test]
    fn a_users_files_and_symlinks_out_of_the_dir_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let (d, outside) = (tmp.path().join("log"), tmp.path().join("outside"));
        fs::create_dir_all(&d).unwrap();
        // A trace outside the log directory, linked into it: not followed, not removed.
        trace(&outside, "far", Some(1), 1);
        std::os::unix::fs::symlink(outside.join("far"), d.join("far-link")).unwrap();
        // A trace holding a symlink out: the link goes with the trace, its target stays.
        let t = trace(&d, "b1", Some(1), 1);
        std::os::unix::fs::symlink(&outside, t.join("escape")).unwrap();
        trace(&d, "b2", Some(2), 1);
        fs::write(d.join("notes.txt"), "mine").unwrap();
        fs::create_dir(d.join("my-dir")).unwrap();
        fs::write(d.join("my-dir/header"), "title = not a bootprint trace\n").unwrap();
        fs::create_dir(d.join(".hidden")).unwrap();
        let s = scan(&d, THIS_BOOT).unwrap();
        assert_eq!(names(&s), ["b1", "b2"]);
        let p = plan(
            &s,
            Limits {
                keep: 1,
                max_bytes: 0,
            },
            None,
        );
        assert_eq!(gone(&p), ["b1"]);
        assert!(remove(&p).is_empty());
        assert!(!t.exists());
        for kept in ["far-link", "b2", "notes.txt", "my-dir", ".hidden"] {
            assert!(fs::symlink_metadata(d.join(kept)).is_ok(), "{kept} removed");
        }
        assert!(
            outside.join("far/header").exists(),
            "followed a symlink out"
        );
    }

    #[test]
    fn a_crashed_write_of_an_earlier_boot_goes_this_boots_stays() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let earlier = ".00000000-1111-4000-8000-000000000000.tmp";
        let half = d.join(earlier);
        fs::create_dir(&half).unwrap();
        fs::write(half.join("proc_stat.log"), "half").unwrap();
        let mine = d.join(format!(".{THIS_BOOT}.tmp"));
        fs::create_dir(&mine).unwrap();
        // Not the writer's name: a user's.
        fs::create_dir(d.join(".backup.tmp")).unwrap();
        let s = scan(d, THIS_BOOT).unwrap();
        assert_eq!(s.crashed.len(), 1);
        let p = plan(
            &s,
            Limits {
                keep: 10,
                max_bytes: 0,
            },
            None,
        );
        assert_eq!(
            (gone(&p), p[0].why),
            (vec![earlier.to_string()], Why::Crashed)
        );
        assert!(remove(&p).is_empty());
        assert!(!half.exists() && mine.exists() && d.join(".backup.tmp").exists());
    }

    #[test]
    fn find_takes_latest_a_whole_id_or_an_unambiguous_prefix() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        trace(d, "abc123", Some(1), 1);
        trace(d, "abd456", Some(2), 1);
        trace(d, "abd", Some(3), 1);
        set_latest(d, "abc123");
        let s = scan(d, THIS_BOOT).unwrap();
        assert_eq!(s.find("latest").unwrap().name, "abc123");
        assert_eq!(s.find("abc").unwrap().name, "abc123");
        assert_eq!(s.find("abd").unwrap().name, "abd", "a whole name wins");
        assert_eq!(s.find("abd4").unwrap().name, "abd456");
        let e = s.find("ab").unwrap_err();
        assert!(e.contains("start of 3 traces"), "{e}");
        assert!(s.find("zz").unwrap_err().contains("no trace"));
        assert!(s.find("").is_err());
    }

    #[test]
    fn at_boot_done_numbers_the_new_trace_prunes_and_logs() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        for seq in 1..=3 {
            trace(d, &format!("b{seq}"), Some(seq), 1);
        }
        let new = trace(d, THIS_BOOT, None, 1);
        set_latest(d, THIS_BOOT);
        at_boot_done(
            &new,
            Limits {
                keep: 2,
                max_bytes: 0,
            },
            THIS_BOOT,
        );
        assert_eq!(read_seq(&new), Some(4));
        let s = scan(d, THIS_BOOT).unwrap();
        assert_eq!(names(&s), ["b3", THIS_BOOT]);
        let log = fs::read_to_string(new.join(LOG_FILE)).unwrap();
        assert!(
            log.contains("removed b1 (count,") && log.contains("removed b2 (count,"),
            "{log}"
        );
        assert!(
            log.contains("kept 2 traces") && log.contains("seq 4"),
            "{log}"
        );
        // A log directory it cannot list: noted, nothing else happens.
        let lone = tmp.path().join("x");
        at_boot_done(&lone.join("t"), Limits::new(1, 1.0), THIS_BOOT);
        assert!(!lone.exists());
    }
}
