//! The model: which files (and which byte ranges of them) the desktop session's start reads,
//! each with a weight that fades when a login no longer reads it.
//!
//! Each login multiplies every weight by the decay (default 0.5) and adds 1 to each file it
//! read; a file whose weight falls below `drop_below` (default 0.3) leaves the model. A file
//! read at every login tends to 2 (1 + 0.5 + 0.25 + ...); once no longer read it goes
//! 2 → 1 → 0.5 → 0.25 and is gone at the third login without it (a file read only once: at
//! the second). So after three logins into another desktop the old one is out of the model.
//!
//! The file (`/var/lib/bootprint/preload/model`) is text, one file per line, so an admin can
//! read it:
//!
//! ```text
//! # bootprint preload model (docs/preload.md)
//! version 1
//! logins 4 updated 1795000000
//! file 1.875 2049 131074 1048576 1795000000.123456789 0+65536,131072+8192 /usr/bin/xfce4-panel
//! ```
//!
//! A `file` line: weight, `st_dev`, `st_ino`, size, mtime (`seconds.nanoseconds`), the ranges
//! (`offset+length`, ascending, comma-separated), then the path (the rest of the line, so it
//! may hold spaces). Lines are in prefetch order: weight, highest first.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use readahead::pack::{Entry, Range};
use readahead::plan::{self, Candidate};

/// The model file's version.
pub const VERSION: u32 = 1;
/// The largest model file read (100,000 files of ~150 bytes).
pub const MAX_MODEL_BYTES: u64 = 16 << 20;

/// One file of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFile {
    /// Its weight: how much recent logins read it.
    pub weight: f64,
    /// The file as last read: identity (checked before a prefetch) and ranges.
    pub entry: Entry,
}

/// The whole model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Model {
    /// Logins learned into it.
    pub logins: u64,
    /// When the last login was learned (seconds since the Unix epoch).
    pub updated_unix_s: u64,
    /// Its files, highest weight first (ties: by path).
    pub files: Vec<ModelFile>,
}

/// How the weights fade.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decay {
    /// Each login multiplies every weight by this.
    pub factor: f64,
    /// Below this weight a file leaves the model.
    pub drop_below: f64,
}

impl Default for Decay {
    fn default() -> Decay {
        Decay {
            factor: 0.5,
            drop_below: 0.3,
        }
    }
}

/// What a login's update did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UpdateStats {
    /// Files read this login that were not in the model.
    pub added: usize,
    /// Files read this login that were.
    pub refreshed: usize,
    /// Files not read this login that stay (faded).
    pub faded: usize,
    /// Files that left the model.
    pub dropped: usize,
    /// Files not read from disk this login but opened (learning from cache misses: they
    /// were cached, by the prefetch or before): they keep their ranges and gain weight.
    pub kept: usize,
    /// Files read this login that a text model cannot hold (a newline in the path, not UTF-8).
    pub unrepresentable: usize,
    /// Files of least weight left out so the model stays within [`MAX_MODEL_BYTES`].
    pub capped: usize,
}

/// A model file that does not parse: where, and what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelError {
    /// The file.
    pub file: String,
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// What was expected there.
    pub expected: String,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: expected {}", self.file, self.line, self.expected)
    }
}

impl std::error::Error for ModelError {}

const FILE_LINE: &str = "`file <weight> <dev> <ino> <size> <mtime s.ns> <offset+len,...> <path>`";

fn parse_ranges(s: &str) -> Option<Vec<Range>> {
    let mut out: Vec<Range> = Vec::new();
    for part in s.split(',') {
        let (o, l) = part.split_once('+')?;
        let r = Range {
            offset: o.parse().ok()?,
            len: l.parse().ok()?,
        };
        r.offset.checked_add(r.len)?;
        // Ascending and disjoint, never empty: what replay expects.
        if r.len == 0 || out.last().is_some_and(|p| p.end() > r.offset) {
            return None;
        }
        out.push(r);
    }
    Some(out)
}

fn parse_mtime(s: &str) -> Option<(i64, u32)> {
    let (a, b) = s.split_once('.')?;
    let ns: u32 = b.parse().ok()?;
    (b.len() == 9 && ns < 1_000_000_000).then_some(())?;
    Some((a.parse().ok()?, ns))
}

/// The path a model line can hold: UTF-8, absolute, without a newline.
fn representable(p: &Path) -> Option<&str> {
    p.to_str()
        .filter(|s| s.starts_with('/') && !s.contains(['\n', '\r']))
}

fn order(files: &mut [ModelFile]) {
    files.sort_by(|a, b| {
        b.weight
            .total_cmp(&a.weight)
            .then_with(|| a.entry.path.cmp(&b.entry.path))
    });
}

impl Model {
    /// Parses the model's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Model, ModelError> {
        let mut m = Model::default();
        let mut seen_version = false;
        for (i, raw) in text.lines().enumerate() {
            let err = |expected: &str| ModelError {
                file: file.to_string(),
                line: i + 1,
                expected: expected.to_string(),
            };
            if raw.trim().is_empty() || raw.trim_start().starts_with('#') {
                continue;
            }
            let (word, rest) = raw.split_once(' ').unwrap_or((raw, ""));
            match word {
                "version" => {
                    if rest.trim() != VERSION.to_string() {
                        return Err(err(&format!("`version {VERSION}`")));
                    }
                    seen_version = true;
                }
                _ if !seen_version => return Err(err(&format!("`version {VERSION}` first"))),
                "logins" => {
                    let w: Vec<&str> = rest.split_whitespace().collect();
                    match w[..] {
                        [n, "updated", t] => match (n.parse(), t.parse()) {
                            (Ok(n), Ok(t)) => (m.logins, m.updated_unix_s) = (n, t),
                            _ => return Err(err("`logins <count> updated <unix seconds>`")),
                        },
                        _ => return Err(err("`logins <count> updated <unix seconds>`")),
                    }
                }
                "file" => {
                    let f: Vec<&str> = rest.splitn(7, ' ').collect();
                    let [w, dev, ino, size, mtime, ranges, path] = f[..] else {
                        return Err(err(FILE_LINE));
                    };
                    let weight: f64 = match w.parse() {
                        Ok(x) if f64::is_finite(x) && x > 0.0 => x,
                        _ => {
                            return Err(err("a weight above 0 (the first field of a `file` line)"))
                        }
                    };
                    let (Ok(dev), Ok(ino), Ok(size)) = (dev.parse(), ino.parse(), size.parse())
                    else {
                        return Err(err(
                            "device, inode and size as whole numbers after the weight",
                        ));
                    };
                    let (mtime_s, mtime_ns) = parse_mtime(mtime)
                        .ok_or_else(|| err("an mtime `<seconds>.<9 digits>` after the size"))?;
                    let ranges = parse_ranges(ranges).ok_or_else(|| {
                        err("ranges `<offset>+<length>,...`, ascending, disjoint, not empty")
                    })?;
                    if !path.starts_with('/') || path.contains('\r') {
                        return Err(err(
                            "an absolute path (without a carriage return) at the end of a `file` line",
                        ));
                    }
                    m.files.push(ModelFile {
                        weight,
                        entry: Entry {
                            path: PathBuf::from(path),
                            dev,
                            ino,
                            size,
                            mtime_s,
                            mtime_ns,
                            ranges,
                            // The model orders by weight, not by access.
                            first_access: 0,
                        },
                    });
                }
                _ => {
                    return Err(err(
                        "`version`, `logins` or `file` at the start of the line",
                    ))
                }
            }
        }
        if !seen_version && !m.files.is_empty() {
            return Err(ModelError {
                file: file.into(),
                line: 1,
                expected: format!("a `version {VERSION}` line"),
            });
        }
        order(&mut m.files);
        Ok(m)
    }

    fn header_text(&self) -> String {
        format!(
            "# bootprint preload model (docs/preload.md)\nversion {VERSION}\nlogins {} updated {}\n",
            self.logins, self.updated_unix_s
        )
    }

    /// The `file` line of `f` (with its newline); `None` when its path cannot be written.
    fn file_line(f: &ModelFile) -> Option<String> {
        let e = &f.entry;
        let path = representable(&e.path)?;
        let ranges: Vec<String> = e
            .ranges
            .iter()
            .map(|r| format!("{}+{}", r.offset, r.len))
            .collect();
        Some(format!(
            "file {} {} {} {} {}.{:09} {} {path}\n",
            // Shortest text that reads back as the same f64.
            f.weight,
            e.dev,
            e.ino,
            e.size,
            e.mtime_s,
            e.mtime_ns,
            ranges.join(","),
        ))
    }

    /// The model's text (see the module's documentation).
    pub fn to_text(&self) -> String {
        let mut s = self.header_text();
        for f in &self.files {
            if let Some(line) = Model::file_line(f) {
                s.push_str(&line);
            }
        }
        s
    }

    /// Drops the files of least weight (the end of the list) until the model's text is at
    /// most `max_bytes`, so it is never written larger than [`Model::load`] reads; returns
    /// how many were dropped.
    pub fn fit(&mut self, max_bytes: u64) -> usize {
        let mut total = self.header_text().len() as u64;
        let mut keep = 0;
        for f in &self.files {
            let len = Model::file_line(f).map_or(0, |l| l.len() as u64);
            if total + len > max_bytes {
                break;
            }
            total += len;
            keep += 1;
        }
        let dropped = self.files.len() - keep;
        self.files.truncate(keep);
        dropped
    }

    /// Reads the model at `path`; a missing file is `Ok(None)` (nothing learned yet).
    pub fn load(path: &Path) -> Result<Option<Model>, ModelError> {
        match sys::read_regular_text(path, MAX_MODEL_BYTES) {
            Ok(text) => Model::parse(&text, &path.display().to_string()).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ModelError {
                file: path.display().to_string(),
                line: 0,
                expected: format!(
                    "a readable regular file of at most {MAX_MODEL_BYTES} bytes ({e})"
                ),
            }),
        }
    }

    /// Writes the model atomically (temporary file, fsync, rename).
    pub fn save(&self, path: &Path) -> io::Result<()> {
        sys::write_atomic(path, self.to_text().as_bytes())
    }

    /// Bytes of all ranges.
    pub fn bytes(&self) -> u64 {
        // Saturating: a model's lengths are whatever its file holds.
        self.files
            .iter()
            .fold(0u64, |a, f| a.saturating_add(f.entry.bytes()))
    }

    /// Learns one login: every weight times the decay, plus 1 for each file in `read` (whose
    /// identity and ranges replace the old ones: the pieces the latest login read); files
    /// under the threshold leave.
    pub fn update(&mut self, read: &[Entry], decay: &Decay, now_unix_s: u64) -> UpdateStats {
        self.learn_login(read, None, decay, now_unix_s)
    }

    /// Learns one login from its cache misses (`read`: the pages it read from disk) and the
    /// files it opened (`opened`: device and inode). A page the prefetch (or anything
    /// before the session) cached is no miss, so a miss is not all a login used: a model
    /// file read again keeps its old ranges with the new ones added (while it keeps its
    /// identity), and a model file opened without a miss keeps its ranges and gains weight
    /// as if read. What the session no longer opens fades as in [`Model::update`].
    pub fn update_misses(
        &mut self,
        read: &[Entry],
        opened: &std::collections::HashSet<(u64, u64)>,
        decay: &Decay,
        now_unix_s: u64,
    ) -> UpdateStats {
        self.learn_login(read, Some(opened), decay, now_unix_s)
    }

    fn learn_login(
        &mut self,
        read: &[Entry],
        opened: Option<&std::collections::HashSet<(u64, u64)>>,
        decay: &Decay,
        now_unix_s: u64,
    ) -> UpdateStats {
        let mut st = UpdateStats::default();
        let mut by_path: std::collections::HashMap<PathBuf, ModelFile> = self
            .files
            .drain(..)
            .map(|mut f| {
                f.weight *= decay.factor;
                (f.entry.path.clone(), f)
            })
            .collect();
        let mut fresh = std::collections::HashSet::new();
        for e in read {
            if e.ranges.is_empty() || !fresh.insert(e.path.clone()) {
                continue;
            }
            if representable(&e.path).is_none() {
                st.unrepresentable += 1;
                continue;
            }
            match by_path.get_mut(&e.path) {
                Some(f) => {
                    f.weight += 1.0;
                    f.entry = match opened {
                        Some(_) if same_file(&f.entry, e) => Entry {
                            ranges: union(&f.entry.ranges, &e.ranges),
                            ..e.clone()
                        },
                        _ => e.clone(),
                    };
                    st.refreshed += 1;
                }
                None => {
                    by_path.insert(
                        e.path.clone(),
                        ModelFile {
                            weight: 1.0,
                            entry: e.clone(),
                        },
                    );
                    st.added += 1;
                }
            }
        }
        for (path, mut f) in by_path {
            if fresh.contains(&path) {
                self.files.push(f);
            } else if opened.is_some_and(|o| o.contains(&(f.entry.dev, f.entry.ino))) {
                f.weight += 1.0;
                st.kept += 1;
                self.files.push(f);
            } else if f.weight < decay.drop_below {
                st.dropped += 1;
            } else {
                st.faded += 1;
                self.files.push(f);
            }
        }
        order(&mut self.files);
        self.logins += 1;
        self.updated_unix_s = now_unix_s;
        st
    }

    /// What a prefetch reads: the files by weight, highest first, cut at `budget` bytes (the
    /// range that crosses it is cut to whole pages of `page` bytes, and nothing after it is
    /// taken).
    pub fn prefetch_list(&self, budget: u64, page: u64) -> Vec<Entry> {
        let cands = self
            .files
            .iter()
            .map(|f| Candidate {
                entry: f.entry.clone(),
                physical: None,
            })
            .collect();
        plan::apply_budget(cands, budget, page)
    }
}

/// Whether two entries are the same file as it was: device, inode, size and mtime.
fn same_file(a: &Entry, b: &Entry) -> bool {
    (a.dev, a.ino, a.size, a.mtime_s, a.mtime_ns) == (b.dev, b.ino, b.size, b.mtime_s, b.mtime_ns)
}

/// The union of two ascending, disjoint range lists: ascending, disjoint, touching ones
/// merged.
fn union(a: &[Range], b: &[Range]) -> Vec<Range> {
    let mut all: Vec<Range> = a.iter().chain(b).copied().collect();
    all.sort_unstable_by_key(|r| r.offset);
    let mut out: Vec<Range> = Vec::with_capacity(all.len());
    for r in all {
        match out.last_mut() {
            Some(last) if r.offset <= last.end() => {
                last.len = last.len.max(r.end() - last.offset);
            }
            _ => out.push(r),
        }
    }
    out
}

/// `MemAvailable` of `/proc/meminfo`'s text, in bytes.
pub fn mem_available(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix("MemAvailable:")?;
        let mut w = rest.split_whitespace();
        let kb: u64 = w.next()?.parse().ok()?;
        (w.next() == Some("kB")).then_some(kb.saturating_mul(1024))
    })
}

/// The prefetch's byte budget: the configured maximum, but never more than `mem_share` of
/// the memory available now (what the page cache can take without pushing out what the
/// running programs use). Unknown available memory: the maximum.
pub fn budget(max_bytes: u64, mem_share: f64, mem_available: Option<u64>) -> u64 {
    match mem_available {
        Some(avail) => max_bytes.min((avail as f64 * mem_share) as u64),
        None => max_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Defect 9 of the security issue: the model was saved at any size and refused over
    /// 16 MiB when loaded. `fit` drops the files of least weight until the text fits.
    #[test]
    fn a_model_is_never_written_larger_than_it_is_read() {
        let mut m = Model::default();
        let read: Vec<Entry> = (0..200)
            .map(|i| Entry {
                path: format!("/usr/lib/file{i:03}").into(),
                ranges: vec![Range {
                    offset: 0,
                    len: 4096,
                }],
                ..Entry::default()
            })
            .collect();
        m.update(&read[..100], &Decay::default(), 1);
        m.update(&read, &Decay::default(), 2);
        let full = m.to_text().len() as u64;
        let mut cut = m.clone();
        assert_eq!(cut.fit(full), 0);
        let dropped = cut.fit(full / 2);
        assert!(dropped > 0 && cut.to_text().len() as u64 <= full / 2);
        // The heaviest stay (read at both logins), the lightest (read once) go first.
        assert!(cut
            .files
            .iter()
            .all(|f| f.weight >= m.files.last().unwrap().weight));
        assert_eq!(cut.files[..], m.files[..cut.files.len()]);
        let t = tempfile::tempdir().unwrap();
        cut.save(&t.path().join("model")).unwrap();
        assert_eq!(Model::load(&t.path().join("model")).unwrap().unwrap(), cut);
    }

    fn entry(path: &str, len: u64) -> Entry {
        Entry {
            path: PathBuf::from(path),
            dev: 2049,
            ino: path.len() as u64,
            size: len * 2,
            mtime_s: 1_795_000_000,
            mtime_ns: 5,
            ranges: vec![Range { offset: 0, len }],
            first_access: 0,
        }
    }

    fn file(path: &str, ino: u64, ranges: &[(u64, u64)]) -> Entry {
        Entry {
            path: PathBuf::from(path),
            dev: 2049,
            ino,
            size: 1 << 20,
            mtime_s: 1_795_000_000,
            mtime_ns: 0,
            ranges: ranges
                .iter()
                .map(|&(offset, len)| Range { offset, len })
                .collect(),
            first_access: 0,
        }
    }

    fn ranges_of(m: &Model, path: &str) -> Vec<(u64, u64)> {
        let f = m
            .files
            .iter()
            .find(|f| f.entry.path == Path::new(path))
            .unwrap();
        f.entry.ranges.iter().map(|r| (r.offset, r.len)).collect()
    }

    #[test]
    fn learning_from_misses_keeps_what_the_cache_held() {
        let d = Decay::default();
        let mut m = Model::default();
        let opened = [(2049, 1), (2049, 2), (2049, 3)].into_iter().collect();
        let read = [
            file("/a", 1, &[(0, 8192)]),
            file("/b", 2, &[(0, 4096)]),
            file("/c", 3, &[(0, 4096)]),
        ];
        m.update_misses(&read, &opened, &d, 1);
        // Login 2: /a misses new pieces (the old ones, cached by the prefetch, stay beside
        // them), /b is opened without a miss, /c is not opened.
        let opened = [(2049, 1), (2049, 2)].into_iter().collect();
        let read = [file("/a", 1, &[(8192, 4096), (65536, 4096)])];
        let st = m.update_misses(&read, &opened, &d, 2);
        assert_eq!(
            (st.added, st.refreshed, st.kept, st.faded, st.dropped),
            (0, 1, 1, 1, 0),
            "{st:?}"
        );
        let w: Vec<(&str, f64)> = m
            .files
            .iter()
            .map(|f| (f.entry.path.to_str().unwrap(), f.weight))
            .collect();
        assert_eq!(w, [("/a", 1.5), ("/b", 1.5), ("/c", 0.5)]);
        assert_eq!(ranges_of(&m, "/a"), [(0, 12288), (65536, 4096)]);
        assert_eq!(ranges_of(&m, "/b"), [(0, 4096)]);
        // A file replaced since (a new inode): only what was read of the new one.
        let opened = [(2049, 9)].into_iter().collect();
        m.update_misses(&[file("/a", 9, &[(4096, 4096)])], &opened, &d, 3);
        assert_eq!(ranges_of(&m, "/a"), [(4096, 4096)]);
        // /b's old inode was not opened this time: it fades like any file not read.
        assert_eq!(
            m.files
                .iter()
                .find(|f| f.entry.path == Path::new("/b"))
                .unwrap()
                .weight,
            0.75
        );
        // `update` (every page the login used) replaces the ranges and keeps nothing.
        let st = m.update(&[file("/a", 9, &[(0, 4096)])], &d, 4);
        assert_eq!(st.kept, 0);
        assert_eq!(ranges_of(&m, "/a"), [(0, 4096)]);
    }

    fn names(m: &Model) -> Vec<&str> {
        m.files
            .iter()
            .map(|f| f.entry.path.to_str().unwrap())
            .collect()
    }

    #[test]
    fn weights_decay_and_add() {
        let mut m = Model::default();
        let d = Decay::default();
        let a = entry("/a", 4096);
        let b = entry("/b", 4096);
        m.update(&[a.clone(), b.clone()], &d, 1);
        m.update(std::slice::from_ref(&a), &d, 2);
        assert_eq!(names(&m), ["/a", "/b"]);
        assert_eq!(m.files[0].weight, 1.5);
        assert_eq!(m.files[1].weight, 0.5);
        let st = m.update(std::slice::from_ref(&a), &d, 3);
        // b: 0.25 < 0.3, gone.
        assert_eq!(names(&m), ["/a"]);
        assert_eq!(m.files[0].weight, 1.75);
        assert_eq!(
            st,
            UpdateStats {
                refreshed: 1,
                dropped: 1,
                ..UpdateStats::default()
            }
        );
        assert_eq!((m.logins, m.updated_unix_s), (3, 3));
        // A newer read replaces the identity and the ranges.
        let a2 = Entry {
            size: 99_999,
            ranges: vec![Range {
                offset: 8192,
                len: 4096,
            }],
            ..a
        };
        m.update(std::slice::from_ref(&a2), &d, 4);
        assert_eq!(m.files[0].entry, a2);
    }

    /// Five logins into desktop A, then desktop B: after the first B login both are in the
    /// model and B leads; at the third, A is gone.
    #[test]
    fn switching_desktops_replaces_the_old_one_after_three_logins() {
        let d = Decay::default();
        let desk_a: Vec<Entry> = ["/usr/bin/xfce4-panel", "/usr/lib/libxfce4ui.so"]
            .iter()
            .map(|p| entry(p, 8192))
            .collect();
        let desk_b: Vec<Entry> = ["/usr/bin/lxpanel", "/usr/lib/liblxpanel.so"]
            .iter()
            .map(|p| entry(p, 8192))
            .collect();
        let mut m = Model::default();
        for t in 0..5 {
            m.update(&desk_a, &d, t);
        }
        assert!(m.files.iter().all(|f| (f.weight - 1.9375).abs() < 1e-12));
        let first = |m: &Model| m.prefetch_list(u64::MAX, 4096)[0].path.clone();
        // A at 0.97, B at 1: B leads at once, A is still there.
        m.update(&desk_b, &d, 5);
        assert_eq!(m.files.len(), 4);
        assert!(
            first(&m).to_str().unwrap().contains("lxpanel"),
            "{:?}",
            first(&m)
        );
        m.update(&desk_b, &d, 6);
        assert_eq!(m.files.len(), 4, "A at 0.48 still above 0.3");
        let st = m.update(&desk_b, &d, 7);
        assert_eq!(st.dropped, 2);
        assert_eq!(
            names(&m),
            ["/usr/bin/lxpanel", "/usr/lib/liblxpanel.so"],
            "A is gone after three logins into B"
        );
    }

    #[test]
    fn prefetch_list_is_weight_order_cut_at_the_budget() {
        let d = Decay::default();
        let mut m = Model::default();
        m.update(&[entry("/heavy", 8192), entry("/light", 8192)], &d, 1);
        m.update(&[entry("/heavy", 8192), entry("/new", 16384)], &d, 2);
        // heavy 1.5, new 1, light 0.5.
        let all = m.prefetch_list(u64::MAX, 4096);
        let order: Vec<&str> = all.iter().map(|e| e.path.to_str().unwrap()).collect();
        assert_eq!(order, ["/heavy", "/new", "/light"]);
        // 8192 + 16384 = 24576; a budget of 20000 cuts /new to 8192 (two whole pages of the
        // 11808 left) and stops there.
        let cut = m.prefetch_list(20_000, 4096);
        assert_eq!(cut.len(), 2);
        assert_eq!(
            cut[1].ranges,
            [Range {
                offset: 0,
                len: 8192
            }]
        );
        assert_eq!(cut.iter().map(Entry::bytes).sum::<u64>(), 16384);
        assert!(m.prefetch_list(4095, 4096).is_empty());
    }

    #[test]
    fn budget_respects_free_memory() {
        let mi = "MemTotal:        2000000 kB\nMemFree:          100000 kB\nMemAvailable:     800000 kB\n";
        assert_eq!(mem_available(mi), Some(800_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots\n"), None);
        let max = 256 << 20;
        // A quarter of 781 MiB available is 195 MiB: under the 256 MiB maximum.
        assert_eq!(budget(max, 0.25, mem_available(mi)), 204_800_000);
        assert_eq!(budget(max, 0.25, Some(16 << 30)), max);
        assert_eq!(budget(max, 0.25, None), max);
    }

    #[test]
    fn round_trips_and_keeps_odd_paths() {
        let d = Decay::default();
        let mut m = Model::default();
        let mut e = entry("/opt/My App/bin/run me", 4096);
        e.ranges.push(Range {
            offset: 65536,
            len: 12288,
        });
        e.mtime_s = -3;
        m.update(&[e, entry("/b", 4096)], &d, 9);
        m.update(&[entry("/b", 4096)], &d, 10);
        let text = m.to_text();
        let back = Model::parse(&text, "model").unwrap();
        assert_eq!(back, m);
        assert_eq!(back.to_text(), text);
        assert!(
            text.contains(" 0+4096,65536+12288 /opt/My App/bin/run me\n"),
            "{text}"
        );
        // A path a line cannot hold is counted, not written.
        let st = m.update(&[entry("/x\ny", 4096)], &d, 11);
        assert_eq!(st.unrepresentable, 1);
        assert!(!m.to_text().contains("/x"));
    }

    #[test]
    fn errors_name_file_line_and_what_was_expected() {
        let head = "version 1\nlogins 1 updated 5\n";
        let cases = [
            ("version 2\n", 1, "`version 1`"),
            ("logins 1 updated 5\n", 1, "`version 1` first"),
            ("version 1\nlogins x updated 5\n", 2, "`logins <count>"),
            ("version 1\nfile 1 2 3\n", 2, "`file <weight>"),
            (
                "version 1\nfile 0 2 3 4 5.000000000 0+1 /a\n",
                2,
                "a weight above 0",
            ),
            (
                "version 1\nfile NaN 2 3 4 5.000000000 0+1 /a\n",
                2,
                "a weight above 0",
            ),
            (
                "version 1\nfile 1 2 x 4 5.000000000 0+1 /a\n",
                2,
                "device, inode and size",
            ),
            ("version 1\nfile 1 2 3 4 5.5 0+1 /a\n", 2, "an mtime"),
            (
                "version 1\nfile 1 2 3 4 5.000000000 8+4,0+4 /a\n",
                2,
                "ranges",
            ),
            ("version 1\nfile 1 2 3 4 5.000000000 0+0 /a\n", 2, "ranges"),
            (
                "version 1\nfile 1 2 3 4 5.000000000 0+4 a\n",
                2,
                "an absolute path",
            ),
            (
                "version 1\nfile 1 2 3 4 5.000000000 0+4 /a\rb\n",
                2,
                "an absolute path",
            ),
            ("version 1\nfiles 1\n", 2, "`version`, `logins` or `file`"),
        ];
        for (text, line, expected) in cases {
            let e = Model::parse(text, "/var/lib/bootprint/preload/model").unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.expected.starts_with(expected), "{text:?}: {e}");
            assert!(
                e.to_string().starts_with(&format!(
                    "/var/lib/bootprint/preload/model:{line}: expected "
                )),
                "{e}"
            );
        }
        assert_eq!(Model::parse("", "m").unwrap(), Model::default());
        assert_eq!(Model::parse(head, "m").unwrap().logins, 1);
    }
}
