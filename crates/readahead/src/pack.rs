//! The readahead pack: the on-disk format, all of it in this file.
//!
//! A pack lists the files a boot read and, within each, the byte ranges it used, in the order
//! replay should read them. Layout (all integers little-endian; see docs/readahead.md):
//!
//! ```text
//! offset size
//!  0     8    magic "BPRAPACK"
//!  8     2    major version (readers reject any other)
//! 10     2    minor version (readers accept a newer minor and ignore bytes they don't know)
//! 12     4    CRC-32 (IEEE) of bytes 0..12 followed by bytes 16..end (all but itself)
//! 16     8    body length in bytes
//! 24     ...  body
//! ```
//!
//! [`check`] decodes and validates bytes without touching the filesystem; [`Pack::encode`]
//! is deterministic (same pack, same bytes).

use std::fmt;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::{Error, ErrorKind};

/// The first eight bytes of every pack.
pub const MAGIC: [u8; 8] = *b"BPRAPACK";
/// Major version written and the only one read.
pub const MAJOR: u16 = 1;
/// Minor version written; a newer minor may append fields readers skip. Minor 1 appended
/// each entry's first-access rank, minor 2 the root filesystem's metadata ranges.
pub const MINOR: u16 = 2;
/// Where the boot path looks for the pack.
pub const DEFAULT_PATH: &str = "/var/lib/bootprint/readahead.pack";

const HEADER_LEN: usize = 24;
const FLAG_ROTATIONAL: u8 = 1;
const FLAG_RELOCATED: u8 = 2;
const FLAG_DISK_BOUND: u8 = 4;

/// A decoded pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pack {
    /// Facts about the boot and machine the pack was learned on.
    pub header: Header,
    /// Files in replay order.
    pub entries: Vec<Entry>,
}

/// Pack-wide facts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Header {
    /// When the pack was written, seconds since the Unix epoch.
    pub created_unix_s: u64,
    /// `uname -r` of the learning boot.
    pub kernel_release: String,
    /// The root filesystem the paths refer to.
    pub root: RootId,
    /// Whether the root device rotates (decides the entry order).
    pub rotational: bool,
    /// Whether `bootprint readahead relocate` laid what the pack reads out on the device in
    /// pack order: replay then reads it as one stream, with one thread (readers skip this
    /// flag if they do not know it).
    pub relocated: bool,
    /// Whether the learning boot waited on its root device: the device was busy for at least
    /// [`crate::learn::DISK_BOUND_SHARE`] of the boot until the pack was built. Readers that
    /// do not know the flag skip it.
    pub disk_bound: bool,
    /// The byte budget the ranges were cut to.
    pub budget_bytes: u64,
    /// Byte ranges of the root filesystem's device that opening the pack's files needs
    /// (their inode-table blocks, their directories' blocks and inodes): replay reads them
    /// first. Ascending and disjoint; empty in packs before format 1.2 (replay then works
    /// the inode-table blocks out from the entries).
    pub metadata: Vec<Range>,
}

/// Identity of a root filesystem: its UUID where known, and `statfs` `f_fsid` (which ext4,
/// btrfs and f2fs derive from their UUID, so it is known even before udev runs).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RootId {
    /// Filesystem UUID as in /dev/disk/by-uuid, empty when unknown.
    pub uuid: String,
    /// `f_fsid` of `statfs("/")`, both halves, 0 when unknown.
    pub fsid: u64,
}

impl Header {
    /// Total bytes of the metadata ranges.
    pub fn metadata_bytes(&self) -> u64 {
        self.metadata
            .iter()
            .fold(0u64, |a, r| a.saturating_add(r.len))
    }
}

impl RootId {
    /// Whether `other` may be the same filesystem: every identity known on both sides must
    /// agree, and at least one must be known on both.
    pub fn matches(&self, other: &RootId) -> bool {
        let uuid_known = !self.uuid.is_empty() && !other.uuid.is_empty();
        let fsid_known = self.fsid != 0 && other.fsid != 0;
        (uuid_known || fsid_known)
            && (!uuid_known || self.uuid.eq_ignore_ascii_case(&other.uuid))
            && (!fsid_known || self.fsid == other.fsid)
    }
}

impl fmt::Display for RootId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "uuid {:?} fsid {:016x}", self.uuid, self.fsid)
    }
}

/// One file of the pack.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Entry {
    /// Absolute path at learning time.
    pub path: PathBuf,
    /// `st_dev` at learning time (informational: device numbers may change across boots).
    pub dev: u64,
    /// `st_ino`: replay skips the entry when the inode differs.
    pub ino: u64,
    /// `st_size`: replay skips the entry when the size differs.
    pub size: u64,
    /// `st_mtime` seconds: replay skips the entry when it differs.
    pub mtime_s: i64,
    /// `st_mtime` nanoseconds.
    pub mtime_ns: u32,
    /// Byte ranges to read, ascending and disjoint.
    pub ranges: Vec<Range>,
    /// When the learning boot first opened the file, as a rank (0: the first file). A
    /// rotating disk's pack is in physical order; relocation lays files out in this order
    /// instead, the order the boot wants them. Packs of format 1.0 had no ranks: each entry
    /// gets its place in the pack.
    pub first_access: u32,
}

impl Entry {
    /// The entry of the file at `path` as its metadata `md` describes it now (the identity
    /// replay checks before reading: device, inode, size, mtime), to read `ranges`.
    pub fn of_file(path: PathBuf, md: &std::fs::Metadata, ranges: Vec<Range>) -> Entry {
        use std::os::unix::fs::MetadataExt;
        Entry {
            path,
            dev: md.dev(),
            ino: md.ino(),
            size: md.size(),
            mtime_s: md.mtime(),
            mtime_ns: md.mtime_nsec() as u32,
            ranges,
            first_access: 0,
        }
    }

    /// Sum of the range lengths.
    pub fn bytes(&self) -> u64 {
        // Saturating: a pack's lengths are whatever its file holds.
        self.ranges
            .iter()
            .fold(0u64, |a, r| a.saturating_add(r.len))
    }
}

/// A byte range of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Range {
    /// First byte.
    pub offset: u64,
    /// Length in bytes, never 0.
    pub len: u64,
}

impl Range {
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// Why a pack was refused, in the format's own detail (the byte, the field); the
/// operations on pack files return it inside the crate's [`Error`], whose kind says what to
/// do about it.
#[derive(Debug)]
pub struct PackError {
    /// The pack file, when the bytes came from one.
    pub path: Option<PathBuf>,
    /// Byte offset in the pack where decoding stopped, when it applies.
    pub offset: Option<usize>,
    /// What was wrong.
    pub kind: PackErrorKind,
}

/// The kinds of [`PackError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum PackErrorKind {
    /// The file could not be read or written.
    Io(io::Error),
    /// The first eight bytes are not [`MAGIC`].
    BadMagic,
    /// Another major version.
    Version {
        /// Major version found.
        major: u16,
        /// Minor version found.
        minor: u16,
    },
    /// Fewer bytes than the header or a field needs.
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// The stored checksum does not match the bytes.
    Checksum {
        /// Stored CRC.
        stored: u32,
        /// CRC of the bytes read.
        computed: u32,
    },
    /// A field holds an impossible value.
    Malformed(String),
    /// The pack was learned on another root filesystem.
    ForeignRoot {
        /// Root recorded in the pack.
        pack: RootId,
        /// Root of the running system.
        ours: RootId,
    },
    /// The pack file could be changed by someone other than root.
    Unsafe(String),
}

impl PackError {
    fn at(offset: usize, kind: PackErrorKind) -> PackError {
        PackError {
            path: None,
            offset: Some(offset),
            kind,
        }
    }

    /// The same error, naming `path`.
    pub fn in_file(mut self, path: &Path) -> PackError {
        self.path = Some(path.to_path_buf());
        self
    }

    /// A short word for logs and statistics: `io`, `magic`, `version`, `truncated`,
    /// `checksum`, `malformed`, `foreign_root`, `unsafe`.
    pub fn reason(&self) -> &'static str {
        match self.kind {
            PackErrorKind::Io(_) => "io",
            PackErrorKind::BadMagic => "magic",
            PackErrorKind::Version { .. } => "version",
            PackErrorKind::Truncated { .. } => "truncated",
            PackErrorKind::Checksum { .. } => "checksum",
            PackErrorKind::Malformed(_) => "malformed",
            PackErrorKind::ForeignRoot { .. } => "foreign_root",
            PackErrorKind::Unsafe(_) => "unsafe",
        }
    }
}

impl fmt::Display for PackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.path {
            write!(f, "{}: ", p.display())?;
        }
        if let Some(o) = self.offset {
            write!(f, "byte {o}: ")?;
        }
        match &self.kind {
            PackErrorKind::Io(e) => write!(f, "{e}"),
            PackErrorKind::BadMagic => write!(f, "not a readahead pack (expected magic BPRAPACK)"),
            PackErrorKind::Version { major, minor } => write!(
                f,
                "pack version {major}.{minor}, expected major version {MAJOR}"
            ),
            PackErrorKind::Truncated { need, have } => {
                write!(f, "truncated: expected {need} bytes, found {have}")
            }
            PackErrorKind::Checksum { stored, computed } => write!(
                f,
                "checksum mismatch: stored {stored:08x}, computed {computed:08x} (corrupt pack)"
            ),
            PackErrorKind::Malformed(w) => write!(f, "malformed: {w}"),
            PackErrorKind::ForeignRoot { pack, ours } => write!(
                f,
                "learned on another root filesystem ({pack}), this one is {ours}"
            ),
            PackErrorKind::Unsafe(w) => write!(f, "not trusted: {w}"),
        }
    }
}

impl std::error::Error for PackError {}

/// CRC-32 (IEEE 802.3, reflected, as zlib computes it).
pub fn crc32(bytes: &[u8]) -> u32 {
    !crc32_update(!0, bytes)
}

/// The checksum a pack stores: everything but the checksum field itself.
fn pack_crc(bytes: &[u8]) -> u32 {
    !crc32_update(crc32_update(!0, &bytes[..12]), &bytes[16..])
}

fn crc32_update(mut c: u32, bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    for &b in bytes {
        c = TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    c
}

/// The largest pack loaded ([`crate::replay::load`] refuses a larger file before reading
/// it), and so the largest written ([`Pack::fit`]): a pack of 100,000 files with a few
/// ranges each is ~10 MB; its byte budget bounds what it replays, not its own size.
pub const MAX_PACK_BYTES: u64 = 64 << 20;

impl Entry {
    /// Its bytes in [`Pack::encode`]'s output (the path, identity, ranges and rank).
    fn encoded_len(&self) -> u64 {
        let path = self.path.as_os_str().len().min(u16::MAX as usize) as u64;
        2 + path + 24 + 8 + 4 + 4 + 16 * self.ranges.len() as u64 + 4
    }
}

impl Pack {
    /// The length of [`Pack::encode`]'s output, without encoding.
    pub fn encoded_len(&self) -> u64 {
        let h = &self.header;
        let s = |b: usize| 2 + b.min(u16::MAX as usize) as u64;
        HEADER_LEN as u64
            + 8
            + 1
            + 8
            + 8
            + s(h.root.uuid.len())
            + s(h.kernel_release.len())
            + 4
            + self.entries.iter().map(Entry::encoded_len).sum::<u64>()
            + 4
            + 4
            + 16 * h.metadata.len() as u64
    }

    /// Drops entries until the pack encodes to at most `max_bytes` (so it is never written
    /// larger than replay loads, [`MAX_PACK_BYTES`]), those the boot opened last first (it
    /// needs them last, when the disk has caught up anyway); returns how many were dropped.
    pub fn fit(&mut self, max_bytes: u64) -> usize {
        let mut total = self.encoded_len();
        if total <= max_bytes {
            return 0;
        }
        let mut dropped = vec![false; self.entries.len()];
        for i in self.access_order().into_iter().rev() {
            if total <= max_bytes {
                break;
            }
            total -= self.entries[i].encoded_len();
            dropped[i] = true;
        }
        let mut it = dropped.iter();
        self.entries
            .retain(|_| !it.next().copied().unwrap_or(false));
        dropped.iter().filter(|&&d| d).count()
    }

    /// Total bytes of all ranges.
    pub fn bytes(&self) -> u64 {
        self.entries
            .iter()
            .fold(0u64, |a, e| a.saturating_add(e.bytes()))
    }

    /// The pack as bytes; the same pack always gives the same bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(64 + self.entries.len() * 64);
        let h = &self.header;
        body.extend_from_slice(&h.created_unix_s.to_le_bytes());
        let flag = |set: bool, bit: u8| if set { bit } else { 0 };
        body.push(
            flag(h.rotational, FLAG_ROTATIONAL)
                | flag(h.relocated, FLAG_RELOCATED)
                | flag(h.disk_bound, FLAG_DISK_BOUND),
        );
        body.extend_from_slice(&h.budget_bytes.to_le_bytes());
        body.extend_from_slice(&h.root.fsid.to_le_bytes());
        put_str(&mut body, h.root.uuid.as_bytes());
        put_str(&mut body, h.kernel_release.as_bytes());
        body.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for e in &self.entries {
            put_str(&mut body, e.path.as_os_str().as_bytes());
            for v in [e.dev, e.ino, e.size] {
                body.extend_from_slice(&v.to_le_bytes());
            }
            body.extend_from_slice(&e.mtime_s.to_le_bytes());
            body.extend_from_slice(&e.mtime_ns.to_le_bytes());
            body.extend_from_slice(&(e.ranges.len() as u32).to_le_bytes());
            for r in &e.ranges {
                body.extend_from_slice(&r.offset.to_le_bytes());
                body.extend_from_slice(&r.len.to_le_bytes());
            }
        }
        // Minor 1: the ranks, after the entries so that a 1.0 reader skips them.
        body.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for e in &self.entries {
            body.extend_from_slice(&e.first_access.to_le_bytes());
        }
        // Minor 2: the metadata ranges.
        body.extend_from_slice(&(h.metadata.len() as u32).to_le_bytes());
        for r in &h.metadata {
            body.extend_from_slice(&r.offset.to_le_bytes());
            body.extend_from_slice(&r.len.to_le_bytes());
        }
        let mut out = Vec::with_capacity(HEADER_LEN + body.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&MAJOR.to_le_bytes());
        out.extend_from_slice(&MINOR.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        let crc = pack_crc(&out);
        out[12..16].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Writes the pack to `path` atomically (temporary file, fsync, rename), mode 0644.
    /// A pack larger than [`MAX_PACK_BYTES`] is not written (replay would refuse it):
    /// [`Pack::fit`] it first.
    pub fn write_file(&self, path: &Path) -> Result<(), Error> {
        let bytes = self.encode();
        if bytes.len() as u64 > MAX_PACK_BYTES {
            let too_big = PackError {
                path: Some(path.to_path_buf()),
                offset: None,
                kind: PackErrorKind::Io(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "{} bytes, more than a pack may have ({MAX_PACK_BYTES}): not written",
                        bytes.len()
                    ),
                )),
            };
            return Err(Error::from(too_big).of_kind(ErrorKind::BadFile));
        }
        sys::write_atomic(path, &bytes).map_err(|e| {
            Error::from(PackError {
                path: Some(path.to_path_buf()),
                offset: None,
                kind: PackErrorKind::Io(e),
            })
        })
    }

    /// Reads and [`check`]s the pack at `path`; does not check ownership (see
    /// [`crate::replay::load`] for the boot path's checks).
    pub fn read_file(path: &Path) -> Result<Pack, Error> {
        let bytes = std::fs::read(path).map_err(|e| PackError {
            path: Some(path.to_path_buf()),
            offset: None,
            kind: PackErrorKind::Io(e),
        })?;
        Ok(check(&bytes).map_err(|e| e.in_file(path))?)
    }

    /// The pack with its entries in first-access order (stable: entries of equal rank keep
    /// their order), the order relocation lays them out in.
    pub fn in_access_order(&self) -> Pack {
        Pack {
            header: self.header.clone(),
            entries: self
                .access_order()
                .into_iter()
                .map(|i| self.entries[i].clone())
                .collect(),
        }
    }

    /// The indices of the entries in first-access order (stable).
    pub fn access_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.entries.len()).collect();
        order.sort_by_key(|&i| self.entries[i].first_access);
        order
    }

    /// The pack as JSON, for `bootprint readahead dump`. Paths that are not UTF-8 are shown
    /// lossily.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let h = &self.header;
        json!({
            "format": format!("{MAJOR}.{MINOR}"),
            "created_unix_s": h.created_unix_s,
            "kernel_release": h.kernel_release,
            "root_uuid": h.root.uuid,
            "root_fsid": format!("{:016x}", h.root.fsid),
            "rotational": h.rotational,
            "relocated": h.relocated,
            "disk_bound": h.disk_bound,
            "budget_bytes": h.budget_bytes,
            "metadata": h.metadata.iter().map(|r| [r.offset, r.len]).collect::<Vec<_>>(),
            "metadata_bytes": h.metadata_bytes(),
            "files": self.entries.len(),
            "bytes": self.bytes(),
            "entries": self.entries.iter().map(|e| json!({
                "path": e.path.to_string_lossy(),
                "dev": e.dev,
                "ino": e.ino,
                "size": e.size,
                "mtime_s": e.mtime_s,
                "mtime_ns": e.mtime_ns,
                "ranges": e.ranges.iter().map(|r| [r.offset, r.len]).collect::<Vec<_>>(),
                "first_access": e.first_access,
            })).collect::<Vec<_>>(),
        })
    }
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    // Paths are at most PATH_MAX (4096) and release strings short; longer is cut, which
    // only makes that entry fail its check at replay.
    let n = s.len().min(u16::MAX as usize);
    out.extend_from_slice(&(n as u16).to_le_bytes());
    out.extend_from_slice(&s[..n]);
}

/// A cursor over the body that names the offset of whatever it could not read.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PackError> {
        if self.buf.len() - self.pos < n {
            return Err(PackError::at(
                self.pos,
                PackErrorKind::Truncated {
                    need: self.pos + n,
                    have: self.buf.len(),
                },
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, PackError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, PackError> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn u32(&mut self) -> Result<u32, PackError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64, PackError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn bytes(&mut self) -> Result<&'a [u8], PackError> {
        let n = self.u16()? as usize;
        self.take(n)
    }
    fn string(&mut self, what: &str) -> Result<String, PackError> {
        let at = self.pos;
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| {
            PackError::at(at, PackErrorKind::Malformed(format!("{what} is not UTF-8")))
        })
    }
}

/// Decodes and validates a pack from bytes, without touching the filesystem: magic, version,
/// length, checksum, then every field (absolute paths, ranges ascending, disjoint, non-empty
/// and inside the file size).
pub fn check(bytes: &[u8]) -> Result<Pack, PackError> {
    let (mut r, minor) = check_header(bytes)?;
    let created_unix_s = r.u64()?;
    let flags = r.u8()?;
    let budget_bytes = r.u64()?;
    let fsid = r.u64()?;
    let uuid = r.string("root UUID")?;
    let kernel_release = r.string("kernel release")?;
    let mut entries = read_entries(&mut r)?;
    if minor >= 1 {
        read_ranks(&mut r, &mut entries)?;
    }
    let metadata = if minor >= 2 {
        read_metadata(&mut r)?
    } else {
        Vec::new()
    };
    // A newer minor version may append fields; our own minor must have none.
    let newer_minor = minor > MINOR;
    if r.pos != bytes.len() && !newer_minor {
        return Err(PackError::at(
            r.pos,
            PackErrorKind::Malformed(format!(
                "{} unexpected bytes after the last entry",
                bytes.len() - r.pos
            )),
        ));
    }
    Ok(Pack {
        header: Header {
            created_unix_s,
            kernel_release,
            root: RootId { uuid, fsid },
            rotational: flags & FLAG_ROTATIONAL != 0,
            relocated: flags & FLAG_RELOCATED != 0,
            disk_bound: flags & FLAG_DISK_BOUND != 0,
            budget_bytes,
            metadata,
        },
        entries,
    })
}

/// The fixed header: magic, version, body length and checksum, checked in that order.
/// Returns the reader at the start of the body, and the minor version.
fn check_header(bytes: &[u8]) -> Result<(Reader<'_>, u16), PackError> {
    if bytes.len() < 8 || bytes[..8] != MAGIC {
        return Err(PackError::at(0, PackErrorKind::BadMagic));
    }
    let mut r = Reader { buf: bytes, pos: 8 };
    let major = r.u16()?;
    let minor = r.u16()?;
    if major != MAJOR {
        return Err(PackError::at(8, PackErrorKind::Version { major, minor }));
    }
    let stored = r.u32()?;
    let body_len = r.u64()?;
    let have = bytes.len() - HEADER_LEN;
    if body_len != have as u64 {
        if body_len > have as u64 {
            return Err(PackError::at(
                16,
                PackErrorKind::Truncated {
                    need: HEADER_LEN.saturating_add(body_len as usize),
                    have: bytes.len(),
                },
            ));
        }
        return Err(PackError::at(
            16,
            PackErrorKind::Malformed(format!(
                "body length {body_len} but {have} bytes follow the header"
            )),
        ));
    }
    let computed = pack_crc(bytes);
    if computed != stored {
        return Err(PackError::at(
            12,
            PackErrorKind::Checksum { stored, computed },
        ));
    }
    Ok((r, minor))
}

/// The entry count and the entries, each ranked by its place (minor 1 ranks follow).
fn read_entries(r: &mut Reader) -> Result<Vec<Entry>, PackError> {
    let count = r.u32()? as usize;
    // Each entry takes at least 46 bytes, so a huge count in a short body is caught here
    // rather than by a huge allocation.
    if count > (r.buf.len() - r.pos) / 46 {
        return Err(PackError::at(
            r.pos - 4,
            PackErrorKind::Malformed(format!("{count} entries cannot fit in the body")),
        ));
    }
    let mut entries = Vec::with_capacity(count);
    for i in 0..count {
        entries.push(read_entry(r, i)?);
    }
    Ok(entries)
}

/// Entry `i`: an absolute path, its identity, and its ranges.
fn read_entry(r: &mut Reader, i: usize) -> Result<Entry, PackError> {
    let at = r.pos;
    let path = PathBuf::from(std::ffi::OsString::from_vec(r.bytes()?.to_vec()));
    if !path.is_absolute() {
        return Err(PackError::at(
            at,
            PackErrorKind::Malformed(format!("entry {i}: path {path:?} is not absolute")),
        ));
    }
    let dev = r.u64()?;
    let ino = r.u64()?;
    let size = r.u64()?;
    let mtime_s = r.u64()? as i64;
    let mtime_ns = r.u32()?;
    let ranges = read_ranges(r, i, &path, size)?;
    Ok(Entry {
        path,
        dev,
        ino,
        size,
        mtime_s,
        mtime_ns,
        ranges,
        first_access: i as u32,
    })
}

/// Entry `i`'s ranges: non-empty, ascending, disjoint and within the file's `size`.
fn read_ranges(r: &mut Reader, i: usize, path: &Path, size: u64) -> Result<Vec<Range>, PackError> {
    let nranges = r.u32()? as usize;
    if nranges > (r.buf.len() - r.pos) / 16 {
        return Err(PackError::at(
            r.pos - 4,
            PackErrorKind::Malformed(format!("entry {i}: {nranges} ranges cannot fit")),
        ));
    }
    let mut ranges = Vec::with_capacity(nranges);
    let mut prev_end = 0u64;
    for _ in 0..nranges {
        let rat = r.pos;
        let offset = r.u64()?;
        let len = r.u64()?;
        let ok =
            len > 0 && offset >= prev_end && offset.checked_add(len).is_some_and(|end| end <= size);
        if !ok {
            return Err(PackError::at(
                rat,
                PackErrorKind::Malformed(format!(
                    "entry {i} ({}): range {offset}+{len} is empty, out of order or \
                     beyond the file size {size}",
                    path.display()
                )),
            ));
        }
        prev_end = offset + len;
        ranges.push(Range { offset, len });
    }
    Ok(ranges)
}

/// Minor 1: one first-access rank per entry.
fn read_ranks(r: &mut Reader, entries: &mut [Entry]) -> Result<(), PackError> {
    let at = r.pos;
    let ranks = r.u32()? as usize;
    if ranks != entries.len() {
        return Err(PackError::at(
            at,
            PackErrorKind::Malformed(format!(
                "{ranks} first-access ranks for {} entries",
                entries.len()
            )),
        ));
    }
    for e in entries {
        e.first_access = r.u32()?;
    }
    Ok(())
}

/// Minor 2: the root filesystem's metadata ranges, non-empty, ascending and disjoint.
fn read_metadata(r: &mut Reader) -> Result<Vec<Range>, PackError> {
    let count = r.u32()? as usize;
    if count > (r.buf.len() - r.pos) / 16 {
        return Err(PackError::at(
            r.pos - 4,
            PackErrorKind::Malformed(format!("{count} metadata ranges cannot fit")),
        ));
    }
    let mut metadata = Vec::new();
    let mut prev_end = 0u64;
    for i in 0..count {
        let at = r.pos;
        let offset = r.u64()?;
        let len = r.u64()?;
        let ok = len > 0 && (i == 0 || offset >= prev_end) && offset.checked_add(len).is_some();
        if !ok {
            return Err(PackError::at(
                at,
                PackErrorKind::Malformed(format!(
                    "metadata range {i}: {offset}+{len} is empty, out of order or \
                     overlapping"
                )),
            ));
        }
        prev_end = offset + len;
        metadata.push(Range { offset, len });
    }
    Ok(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The length computed without encoding is the encoding's, for any pack.
    #[test]
    fn encoded_len_is_the_encodings() {
        let mut p = sample();
        assert_eq!(p.encoded_len(), p.encode().len() as u64);
        p.entries[0].path = "/x".repeat(40_000).into();
        p.header.metadata.clear();
        p.entries.push(p.entries[1].clone());
        assert_eq!(p.encoded_len(), p.encode().len() as u64);
    }

    /// Defect 9 of the security issue: a pack was written at any size and refused over
    /// 64 MiB when loaded, so every boot learned again. `fit` drops what the boot opened
    /// last until it fits; `write_file` never writes what replay would refuse.
    #[test]
    fn a_pack_is_never_written_larger_than_replay_loads() {
        let mut p = sample();
        let full = p.encoded_len();
        // Room for all but one entry: /sbin/init (first opened second) goes.
        let init_len = p.entries[0].encoded_len();
        assert_eq!(p.clone().fit(full), 0);
        assert_eq!(p.fit(full - 1), 1);
        assert_eq!(p.entries.len(), 1);
        assert_eq!(
            p.entries[0].path,
            Path::new("/lib/x86_64-linux-gnu/libc.so.6")
        );
        assert_eq!(p.encoded_len(), full - init_len);
        // A learned pack over the limit: many ranges in the file opened last.
        let mut big = sample();
        big.entries[0].ranges = (0..(MAX_PACK_BYTES / 16) + 1000)
            .map(|i| Range {
                offset: i * 8192,
                len: 4096,
            })
            .collect();
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("readahead.pack");
        let e = big.write_file(&path).unwrap_err();
        assert!(e.to_string().contains("more than a pack may have"), "{e}");
        assert!(!path.exists());
        assert_eq!(big.fit(MAX_PACK_BYTES), 1);
        assert!(big.encoded_len() <= MAX_PACK_BYTES);
        big.write_file(&path).unwrap();
    }

    pub(crate) fn sample() -> Pack {
        Pack {
            header: Header {
                created_unix_s: 1_795_000_000,
                kernel_release: "6.1.0-56-amd64".into(),
                root: RootId {
                    uuid: "0b3c7a8e-1111-4222-8333-944455556666".into(),
                    fsid: 0x1234_5678_9abc_def0,
                },
                rotational: true,
                relocated: false,
                disk_bound: false,
                budget_bytes: 100 << 20,
                metadata: vec![
                    Range {
                        offset: 4096 * 1058,
                        len: 8192,
                    },
                    Range {
                        offset: 4096 * 70_000,
                        len: 4096,
                    },
                ],
            },
            entries: vec![
                Entry {
                    path: "/sbin/init".into(),
                    dev: 0xfe00,
                    ino: 131,
                    size: 60_000,
                    mtime_s: 1_700_000_000,
                    mtime_ns: 5,
                    ranges: vec![
                        Range {
                            offset: 0,
                            len: 8192,
                        },
                        Range {
                            offset: 16384,
                            len: 4096,
                        },
                    ],
                    first_access: 1,
                },
                Entry {
                    path: "/lib/x86_64-linux-gnu/libc.so.6".into(),
                    dev: 0xfe00,
                    ino: 9000,
                    size: 2_000_000,
                    mtime_s: 1_690_000_000,
                    mtime_ns: 999_999_999,
                    ranges: vec![Range {
                        offset: 4096,
                        len: 1 << 20,
                    }],
                    first_access: 0,
                },
            ],
        }
    }

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn round_trip_is_exact_and_deterministic() {
        let p = sample();
        let b = p.encode();
        assert_eq!(&b[..8], b"BPRAPACK");
        assert_eq!(check(&b).unwrap(), p);
        assert_eq!(check(&b).unwrap().encode(), b);
        assert_eq!(p.bytes(), 8192 + 4096 + (1 << 20));
        // Each flag survives on its own and with the others.
        for bits in 0..8u8 {
            let mut q = sample();
            q.header.rotational = bits & 1 != 0;
            q.header.relocated = bits & 2 != 0;
            q.header.disk_bound = bits & 4 != 0;
            assert_eq!(check(&q.encode()).unwrap(), q);
        }
    }

    #[test]
    fn every_flipped_byte_is_rejected() {
        let b = sample().encode();
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x40;
            let e = check(&c).expect_err("flipped byte accepted");
            assert!(
                matches!(
                    e.reason(),
                    "checksum" | "magic" | "version" | "truncated" | "malformed"
                ),
                "byte {i}: {e}"
            );
        }
        let mut c = b.clone();
        c[100] ^= 1;
        let e = check(&c).unwrap_err();
        assert_eq!(e.reason(), "checksum");
        assert!(e.to_string().contains("checksum mismatch"), "{e}");
    }

    #[test]
    fn truncated_packs_are_rejected_with_the_sizes() {
        let b = sample().encode();
        for n in [0, 5, 12, 23, 24, 40, b.len() - 1] {
            let e = check(&b[..n]).expect_err("truncated accepted");
            assert!(matches!(e.reason(), "truncated" | "magic"), "{n}: {e}");
        }
        let e = check(&b[..b.len() - 3]).unwrap_err();
        let msg = e
            .in_file(Path::new("/var/lib/bootprint/readahead.pack"))
            .to_string();
        assert!(
            msg.starts_with("/var/lib/bootprint/readahead.pack: byte 16: truncated: expected"),
            "{msg}"
        );
    }

    #[test]
    fn other_major_version_is_rejected_before_the_checksum() {
        let mut b = sample().encode();
        b[8..10].copy_from_slice(&2u16.to_le_bytes());
        let e = check(&b).unwrap_err();
        assert_eq!(e.reason(), "version");
        assert!(
            e.to_string().contains(&format!("pack version 2.{MINOR}")),
            "{e}"
        );
    }

    #[test]
    fn newer_minor_with_appended_fields_is_read() {
        let mut b = sample().encode();
        b.extend_from_slice(b"future");
        let b = reseal(b, MINOR + 1);
        assert_eq!(check(&b).unwrap(), sample());
        // The same bytes under our own minor are an error.
        assert_eq!(check(&reseal(b, MINOR)).unwrap_err().reason(), "malformed");
    }

    /// `b` with its header's minor, length and checksum made to fit.
    fn reseal(mut b: Vec<u8>, minor: u16) -> Vec<u8> {
        b[10..12].copy_from_slice(&minor.to_le_bytes());
        let len = (b.len() - HEADER_LEN) as u64;
        b[16..24].copy_from_slice(&len.to_le_bytes());
        let crc = pack_crc(&b);
        b[12..16].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// The bytes minor 2 appended: the metadata count and ranges.
    fn metadata_len(p: &Pack) -> usize {
        4 + 16 * p.header.metadata.len()
    }

    #[test]
    fn a_1_0_pack_reads_with_its_own_order_as_the_ranks() {
        let p = sample();
        let mut b = p.encode();
        // 1.0 ended with the entries: no rank count, no ranks, no metadata.
        b.truncate(b.len() - metadata_len(&p) - 4 - 4 * p.entries.len());
        let old = check(&reseal(b, 0)).unwrap();
        assert_eq!(old.entries.len(), 2);
        assert_eq!(old.entries[0].path, p.entries[0].path);
        let ranks: Vec<u32> = old.entries.iter().map(|e| e.first_access).collect();
        assert_eq!(ranks, [0, 1]);
        // Its access order is the pack's own.
        assert_eq!(old.in_access_order(), old);
    }

    #[test]
    fn a_1_1_pack_reads_without_metadata() {
        let p = sample();
        let mut b = p.encode();
        b.truncate(b.len() - metadata_len(&p));
        let old = check(&reseal(b, 1)).unwrap();
        assert!(old.header.metadata.is_empty());
        assert_eq!(old.entries, p.entries);
    }

    #[test]
    fn metadata_ranges_must_be_ascending_disjoint_and_not_empty() {
        let p = sample();
        let ok = p.encode();
        let first = ok.len() - metadata_len(&p) + 4;
        // The second range moved to start inside the first; then the first made empty.
        for (at, value, what) in [
            (first + 16, 4096 * 1058 + 4096, "overlapping"),
            (first + 8, 0, "empty"),
        ] {
            let mut b = ok.clone();
            b[at..at + 8].copy_from_slice(&(value as u64).to_le_bytes());
            let e = check(&reseal(b, MINOR)).unwrap_err();
            assert_eq!(e.reason(), "malformed", "{what}");
            assert!(e.to_string().contains("metadata range"), "{what}: {e}");
        }
        // A count the body cannot hold.
        let mut b = ok.clone();
        b[first - 4..first].copy_from_slice(&1_000_000u32.to_le_bytes());
        let e = check(&reseal(b, MINOR)).unwrap_err();
        assert!(
            e.to_string().contains("1000000 metadata ranges cannot fit"),
            "{e}"
        );
        assert_eq!(p.header.metadata_bytes(), 12288);
    }

    #[test]
    fn ranks_must_match_the_entries() {
        let p = sample();
        let mut b = p.encode();
        let at = b.len() - metadata_len(&p) - 4 - 4 * p.entries.len();
        b[at..at + 4].copy_from_slice(&3u32.to_le_bytes());
        let e = check(&reseal(b, MINOR)).unwrap_err();
        assert_eq!(e.reason(), "malformed");
        assert!(
            e.to_string().contains("3 first-access ranks for 2 entries"),
            "{e}"
        );
    }

    #[test]
    fn access_order_sorts_by_rank_and_keeps_the_rest() {
        let p = sample();
        assert_eq!(p.access_order(), [1, 0]);
        let q = p.in_access_order();
        assert_eq!(q.entries[0].path, p.entries[1].path);
        assert_eq!(q.entries[1].path, p.entries[0].path);
        assert_eq!(q.header, p.header);
        assert_eq!(check(&q.encode()).unwrap(), q);
    }

    #[test]
    fn bad_ranges_and_relative_paths_are_malformed() {
        let mut p = sample();
        p.entries[0].ranges.reverse();
        assert!(check(&p.encode())
            .unwrap_err()
            .to_string()
            .contains("out of order"));
        let mut p = sample();
        p.entries[1].ranges[0].len = 3_000_000;
        assert_eq!(check(&p.encode()).unwrap_err().reason(), "malformed");
        let mut p = sample();
        p.entries[0].path = "sbin/init".into();
        assert!(check(&p.encode())
            .unwrap_err()
            .to_string()
            .contains("not absolute"));
    }

    #[test]
    fn root_identity_matching() {
        let a = RootId {
            uuid: "ABC".into(),
            fsid: 7,
        };
        assert!(a.matches(&RootId {
            uuid: "abc".into(),
            fsid: 7
        }));
        assert!(a.matches(&RootId {
            uuid: String::new(),
            fsid: 7
        }));
        assert!(!a.matches(&RootId {
            uuid: "abd".into(),
            fsid: 7
        }));
        assert!(!a.matches(&RootId {
            uuid: "abc".into(),
            fsid: 8
        }));
        assert!(!RootId::default().matches(&RootId::default()));
    }

    #[test]
    fn json_dump_lists_entries() {
        let j = sample().to_json();
        assert_eq!(j["files"], 2);
        assert_eq!(j["entries"][0]["path"], "/sbin/init");
        assert_eq!(j["entries"][0]["ranges"][1][0], 16384);
        assert_eq!(j["rotational"], true);
        assert_eq!(j["entries"][0]["first_access"], 1);
    }

    #[test]
    fn file_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let path = dir.join("sub/readahead.pack");
        sample().write_file(&path).unwrap();
        assert_eq!(Pack::read_file(&path).unwrap(), sample());
    }
}
