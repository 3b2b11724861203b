//! Shared helpers: errors, paths, logged commands, hashing, dates.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

/// What went wrong: a usage error (exit 2) or a failure (exit 1).
#[derive(Debug)]
pub enum Error {
    Usage(String),
    Failed(String),
}

impl Error {
    pub fn fail(msg: impl Into<String>) -> Error {
        Error::Failed(msg.into())
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Usage(m) | Error::Failed(m) => f.write_str(m),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Adds a path to an I/O error so every message names the file it is about.
pub fn io_err(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::fail(format!("{what} {}: {e}", path.display()))
}

/// Where things live: the repository (for target/ and testbed/results) and the cache.
pub struct Paths {
    pub repo: PathBuf,
    pub cache: PathBuf,
    /// The Debian release whose images this run builds and boots (`--release`).
    pub release: crate::vm::image::Release,
    /// The firmware every boot of this run starts under (`--firmware`).
    pub firmware: crate::vm::qemu::Firmware,
}

impl Paths {
    pub fn from_env() -> Result<Paths> {
        let repo = find_repo()?;
        let cache = match std::env::var_os("BOOTPRINT_TESTBED_CACHE") {
            Some(c) if !c.is_empty() => PathBuf::from(c),
            _ => repo.join("testbed/cache"),
        };
        fs::create_dir_all(&cache).map_err(|e| io_err("cannot create cache dir", &cache, e))?;
        let release = crate::vm::image::Release::from_env()?;
        let firmware = crate::vm::qemu::Firmware::from_env()?;
        Ok(Paths {
            repo,
            cache,
            release,
            firmware,
        })
    }

    pub fn logs(&self) -> PathBuf {
        self.cache.join("logs")
    }
}

/// A path as results files and reports show it: relative to the repository when it is inside
/// it (results are committed and read on other machines), else as it is.
pub fn shown_path(path: &Path) -> String {
    match find_repo() {
        Ok(repo) => match path.strip_prefix(&repo) {
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        },
        Err(_) => path.display().to_string(),
    }
}

/// The workspace root: the directory holding `testbed/Cargo.toml`, searched upwards from the
/// current directory, then from the executable (target/<profile>/bootprint-testbed).
fn find_repo() -> Result<PathBuf> {
    let mut starts = vec![];
    if let Ok(d) = std::env::current_dir() {
        starts.push(d);
    }
    if let Ok(e) = std::env::current_exe() {
        starts.push(e);
    }
    for start in starts {
        for dir in start.ancestors() {
            if dir.join("testbed/Cargo.toml").is_file() && dir.join("Cargo.toml").is_file() {
                return Ok(dir.to_path_buf());
            }
        }
    }
    Err(Error::fail(
        "cannot find the bootprint workspace (a directory with testbed/Cargo.toml) above the \
         current directory or the executable; run from inside the repository",
    ))
}

/// The last `n` lines of a file, for error messages.
pub fn tail(path: &Path, n: usize) -> String {
    let mut text = String::new();
    if let Ok(mut f) = File::open(path) {
        let mut buf = vec![];
        let _ = f.read_to_end(&mut buf);
        text = String::from_utf8_lossy(&buf).into_owned();
    }
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    lines[start..].join("\n")
}

pub fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs a command with stdout and stderr appended to `log`; on failure the error names the
/// command, its exit status and the log's last lines.
pub fn run_logged(cmd: &mut Command, log: &Path) -> Result<()> {
    if let Some(d) = log.parent() {
        fs::create_dir_all(d).map_err(|e| io_err("cannot create log dir", d, e))?;
    }
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| io_err("cannot open log", log, e))?;
    let line = describe(cmd);
    let _ = writeln!(f, "\n$ {line}");
    let f2 = f
        .try_clone()
        .map_err(|e| io_err("cannot open log", log, e))?;
    let status = cmd
        .stdin(Stdio::null())
        .stdout(f)
        .stderr(f2)
        .status()
        .map_err(|e| Error::fail(format!("cannot run `{line}`: {e}")))?;
    if !status.success() {
        return Err(Error::fail(format!(
            "`{line}` failed ({status}); log {}, last lines:\n{}",
            log.display(),
            tail(log, 20)
        )));
    }
    Ok(())
}

/// Runs a command and returns its stdout; stderr goes to the log.
pub fn output_logged(cmd: &mut Command, log: &Path) -> Result<String> {
    let line = describe(cmd);
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::fail(format!("cannot run `{line}`: {e}")))?;
    if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(log) {
        let _ = writeln!(f, "\n$ {line}");
        let _ = f.write_all(&out.stderr);
    }
    if !out.status.success() {
        return Err(Error::fail(format!(
            "`{line}` failed ({}); stderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// FNV-1a, 64 bit: enough to notice changed inputs and binaries (not a security hash).
#[derive(Clone)]
pub struct Fnv(u64);

impl Fnv {
    pub fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub fn update(&mut self, data: &[u8]) {
        for b in data {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv::new()
    }
}

/// The lines of the `== name` section of a guest script's output, in order (trailing
/// blanks trimmed, empty lines left out).
pub fn section<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    out.lines()
        .map(str::trim_end)
        .skip_while(|l| l.strip_prefix("== ") != Some(name))
        .skip(1)
        .take_while(|l| !l.starts_with("== "))
        .filter(|l| !l.is_empty())
        .collect()
}

pub fn hash_file(path: &Path) -> Result<String> {
    let data = fs::read(path).map_err(|e| io_err("cannot read", path, e))?;
    let mut h = Fnv::new();
    h.update(&data);
    Ok(h.hex())
}

/// UTC (year, month, day, hour, minute, second) of a Unix time.
pub fn utc(secs: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    // Days since 1970-01-01 to a civil date (proleptic Gregorian), by 400-year eras.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        (rem % 3600 / 60) as u32,
        (rem % 60) as u32,
    )
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `2026-11-22`
pub fn today() -> String {
    let (y, m, d, ..) = utc(now_secs());
    format!("{y:04}-{m:02}-{d:02}")
}

/// `20261122-103800`, for run and trace directory names.
pub fn stamp() -> String {
    let (y, m, d, hh, mm, ss) = utc(now_secs());
    format!("{y:04}{m:02}{d:02}-{hh:02}{mm:02}{ss:02}")
}

/// The newest run directory under the cache (`fresh_dir`'s names sort by time): a boot
/// that ended in an error does not return its own.
pub fn newest_run(paths: &Paths) -> Option<PathBuf> {
    let mut runs: Vec<PathBuf> = fs::read_dir(paths.cache.join("runs"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    runs.sort();
    runs.pop()
}

/// A fresh directory `base/<stamp>` (with a suffix if that exists already). `create_dir`
/// fails on an existing directory, so two test beds running at once never share one.
pub fn fresh_dir(base: &Path) -> Result<PathBuf> {
    fs::create_dir_all(base).map_err(|e| io_err("cannot create", base, e))?;
    let s = stamp();
    for i in 0..1000 {
        let p = if i == 0 {
            base.join(&s)
        } else {
            base.join(format!("{s}-{i}"))
        };
        match fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err("cannot create", &p, e)),
        }
    }
    Err(Error::fail(format!(
        "cannot make a fresh dir under {}",
        base.display()
    )))
}

/// An exclusive `flock` on a file, released when dropped (or when the process dies).
/// Serialises work on the cached image between test beds running at once.
pub struct Lock {
    _file: File,
}

impl Lock {
    pub fn acquire(path: &Path) -> Result<Lock> {
        use std::os::unix::io::AsRawFd;
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| io_err("cannot open lock file", path, e))?;
        // SAFETY: flock on a descriptor this File owns; no memory is shared with the kernel.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            eprintln!(
                "waiting for the lock {} (another test bed is using the image)",
                path.display()
            );
            // SAFETY: as above; this call blocks until the other holder releases the lock.
            let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
            if rc != 0 {
                return Err(io_err("cannot lock", path, std::io::Error::last_os_error()));
            }
        }
        Ok(Lock { _file: f })
    }
}

/// A results file that does not exist yet: `DIR/STEM.json`, else `STEM-2.json`, `-3`...
/// (one file per run: a second run the same day does not overwrite the first).
pub fn unused_results_path(dir: &Path, stem: &str) -> PathBuf {
    let mut path = dir.join(format!("{stem}.json"));
    let mut i = 2;
    while path.exists() {
        path = dir.join(format!("{stem}-{i}.json"));
        i += 1;
    }
    path
}

/// The smallest and the largest of `values` (None: there are none).
pub fn span(values: &[f64]) -> Option<(f64, f64)> {
    values.iter().fold(None, |m, &x| {
        Some(m.map_or((x, x), |(lo, hi): (f64, f64)| (lo.min(x), hi.max(x))))
    })
}

pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// A choice the environment variable `var` makes (parsed with `parse`), `default` when it is
/// unset or empty; otherwise a usage error naming the variable, its value and what was
/// `expected`.
pub fn env_choice<T>(
    var: &str,
    parse: impl Fn(&str) -> Option<T>,
    expected: &str,
    default: T,
) -> Result<T> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => {
            parse(&v).ok_or_else(|| Error::Usage(format!("{var}={v:?}: expected {expected}")))
        }
        _ => Ok(default),
    }
}

/// Whether `tool` is a file in a directory of PATH (looked up, not run).
pub fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// The repository's commit (`git rev-parse --short HEAD`, with `+` when the tree has
/// changes), for results files; `None` outside a git checkout.
pub fn git_commit(repo: &Path) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["rev-parse", "--short", "HEAD"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || commit.is_empty() {
        return None;
    }
    let dirty = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["status", "--porcelain", "--untracked-files=no"])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| !o.stdout.is_empty());
    Some(if dirty { format!("{commit}+") } else { commit })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_keep_their_order() {
        let out = "noise\n== written\nabc\n\n== ls\nb\na\n== kept\n";
        assert_eq!(section(out, "written"), ["abc"]);
        assert_eq!(section(out, "ls"), ["b", "a"]);
        assert!(section(out, "kept").is_empty());
        assert!(section(out, "missing").is_empty());
    }

    #[test]
    fn results_paths_do_not_overwrite() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        assert_eq!(unused_results_path(dir, "x"), dir.join("x.json"));
        fs::write(dir.join("x.json"), "").unwrap();
        fs::write(dir.join("x-2.json"), "").unwrap();
        assert_eq!(unused_results_path(dir, "x"), dir.join("x-3.json"));
    }

    /// Results files are committed: a path inside the repository is shown relative to it.
    #[test]
    fn shown_path_is_relative_to_the_repository() {
        let repo = find_repo().expect("tests run inside the workspace");
        let serial = repo.join("testbed/cache/runs/x/serial.log");
        assert_eq!(shown_path(&serial), "testbed/cache/runs/x/serial.log");
        assert_eq!(
            shown_path(Path::new("/elsewhere/disk.raw")),
            "/elsewhere/disk.raw"
        );
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), (1970, 1, 1, 0, 0, 0));
        // 2026-11-22 10:38:28 UTC
        assert_eq!(utc(1_795_343_908), (2026, 11, 22, 10, 38, 28));
        // leap day
        assert_eq!(utc(951_782_400), (2000, 2, 29, 0, 0, 0));
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0));
    }

    #[test]
    fn fnv_known_value() {
        let mut h = Fnv::new();
        h.update(b"a");
        assert_eq!(h.hex(), "af63dc4c8601ec8c");
    }
}
