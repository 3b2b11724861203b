//! Opening a trace: a trace directory or (with the `archive` feature) a bootchart2 `.tgz`,
//! parsed with [`crate::bootchart`] and [`crate::events`]. The small files are read whole;
//! a directory's `proc_ps.log` stays on disk and is streamed ([`Trace::for_each_ps_block`]).
//!
//! Required files: `header`, `proc_stat.log`, `proc_diskstats.log`. Optional: `proc_ps.log`
//! (without it there are no processes: [`PsSource::Missing`]), `proc_meminfo.log`,
//! `cmdline2.log`, `dmesg`, `events.log`, `rc.log`, `systemd-units.log`.
//! Anything else is ignored.

use std::fmt;
use std::io;
#[cfg(feature = "archive")]
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::bootchart::{self, CmdlineEntry, DiskBlock, MemBlock, ParseError, PsLog, StatSample};
use crate::events::{self, Event};
use crate::writer::PsRecord;

/// Files of a trace that the reader knows; the rest of a directory or archive is skipped.
pub const KNOWN_FILES: [&str; 10] = [
    "header",
    "proc_stat.log",
    "proc_diskstats.log",
    "proc_ps.log",
    "proc_meminfo.log",
    "cmdline2.log",
    "dmesg",
    events::FILE_NAME,
    crate::rclog::FILE_NAME,
    crate::units::FILE_NAME,
];

/// Why a trace could not be opened or read.
#[derive(Debug)]
pub enum ReadError {
    /// The path or a file in it could not be read.
    Io {
        /// What was being read.
        path: PathBuf,
        /// The system's error.
        source: io::Error,
    },
    /// A required file is missing.
    Missing {
        /// Where the trace was read from.
        origin: String,
        /// The missing file's name.
        file: String,
    },
    /// A file is malformed.
    Parse(ParseError),
    /// The path is neither a directory nor a readable archive.
    NotATrace {
        /// The path given.
        path: PathBuf,
        /// Why not.
        why: String,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ReadError::Missing { origin, file } => {
                write!(f, "{origin}: required file {file} is missing")
            }
            ReadError::Parse(e) => e.fmt(f),
            ReadError::NotATrace { path, why } => write!(f, "{}: {why}", path.display()),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io { source, .. } => Some(source),
            ReadError::Parse(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ParseError> for ReadError {
    fn from(e: ParseError) -> ReadError {
        ReadError::Parse(e)
    }
}

/// The known files of a trace, as bytes, before parsing.
#[derive(Debug, Clone, Default)]
pub struct RawTrace {
    /// Where it was read from (for messages).
    pub origin: String,
    /// `(file name, contents)` for each known file found.
    pub files: Vec<(String, Vec<u8>)>,
    /// In a directory, `proc_ps.log` is left on disk and streamed (it can be hundreds of
    /// MB); this is its path. From an archive it is in `files`.
    pub proc_ps_path: Option<PathBuf>,
}

/// The most a trace archive may unpack to: a 240 s boot recorded at 50 Hz is a few tens of
/// MB; bootchart2's logs are smaller.
pub const MAX_ARCHIVE_BYTES: u64 = 2 << 30;

impl RawTrace {
    /// Reads a trace directory, or a `.tgz` / `.tar.gz` / `.tar` archive.
    pub fn open(path: &Path) -> Result<RawTrace, ReadError> {
        let meta = std::fs::metadata(path).map_err(|source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if meta.is_dir() {
            RawTrace::from_dir(path)
        } else {
            RawTrace::from_archive(path)
        }
    }

    /// Reads the known files of a trace directory.
    pub fn from_dir(dir: &Path) -> Result<RawTrace, ReadError> {
        let mut raw = RawTrace {
            origin: dir.display().to_string(),
            files: Vec::new(),
            proc_ps_path: None,
        };
        let ps = dir.join("proc_ps.log");
        if ps.is_file() {
            raw.proc_ps_path = Some(ps);
        }
        for name in KNOWN_FILES.iter().filter(|n| **n != "proc_ps.log") {
            let path = dir.join(name);
            match std::fs::read(&path) {
                Ok(bytes) => raw.files.push((name.to_string(), bytes)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(source) => return Err(ReadError::Io { path, source }),
            }
        }
        Ok(raw)
    }

    /// Reads the known files of a bootchart2 archive (gzip'd or plain tar). Members are
    /// matched by their base name, so `./header` and `bootchart/header` both count.
    #[cfg(feature = "archive")]
    pub fn from_archive(path: &Path) -> Result<RawTrace, ReadError> {
        RawTrace::from_archive_capped(path, MAX_ARCHIVE_BYTES)
    }

    /// [`RawTrace::from_archive`], refusing an archive that unpacks to more than
    /// `max_bytes` (a gzip bomb would take as much memory as it expands to).
    #[cfg(feature = "archive")]
    pub fn from_archive_capped(path: &Path, max_bytes: u64) -> Result<RawTrace, ReadError> {
        let io_err = |source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let too_big = || ReadError::NotATrace {
            path: path.to_path_buf(),
            why: format!("it unpacks to more than {max_bytes} bytes, more than a trace has"),
        };
        let bytes = std::fs::read(path).map_err(io_err)?;
        if bytes.len() as u64 > max_bytes {
            return Err(too_big());
        }
        let data = if bytes.starts_with(&[0x1f, 0x8b]) {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(&bytes[..])
                .take(max_bytes + 1)
                .read_to_end(&mut out)
                .map_err(|e| ReadError::NotATrace {
                    path: path.to_path_buf(),
                    why: format!("not a readable gzip file: {e}"),
                })?;
            if out.len() as u64 > max_bytes {
                return Err(too_big());
            }
            out
        } else {
            bytes
        };
        let not_tar = |e: io::Error| ReadError::NotATrace {
            path: path.to_path_buf(),
            why: format!("not a trace directory or tar archive: {e}"),
        };
        let mut raw = RawTrace {
            origin: path.display().to_string(),
            files: Vec::new(),
            proc_ps_path: None,
        };
        let mut archive = tar::Archive::new(&data[..]);
        for entry in archive.entries().map_err(not_tar)? {
            let mut entry = entry.map_err(not_tar)?;
            let name = entry
                .path()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
            let Some(name) = name.filter(|n| KNOWN_FILES.contains(&n.as_str())) else {
                continue;
            };
            let mut contents = Vec::new();
            entry.read_to_end(&mut contents).map_err(not_tar)?;
            raw.files.retain(|(n, _)| *n != name);
            raw.files.push((name, contents));
        }
        Ok(raw)
    }

    /// Without the `archive` feature only directories can be read.
    #[cfg(not(feature = "archive"))]
    pub fn from_archive(path: &Path) -> Result<RawTrace, ReadError> {
        Err(ReadError::NotATrace {
            path: path.to_path_buf(),
            why: "not a directory (archive support not built in)".into(),
        })
    }

    /// The contents of a file, if present.
    pub fn file(&self, name: &str) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.as_slice())
    }

    /// Takes a file out as text (invalid UTF-8 replaced; valid files are not copied).
    fn take_text(&mut self, name: &str) -> Option<String> {
        let i = self.files.iter().position(|(n, _)| n == name)?;
        let bytes = self.files.swap_remove(i).1;
        Some(
            String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        )
    }

    fn take_required(&mut self, name: &str) -> Result<String, ReadError> {
        self.take_text(name).ok_or_else(|| ReadError::Missing {
            origin: self.origin.clone(),
            file: name.to_string(),
        })
    }
}

/// Where `proc_ps.log` is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PsSource {
    /// Its text (from an archive, or built in memory).
    Text(String),
    /// A file streamed when the records are needed.
    File(PathBuf),
    /// The trace has no `proc_ps.log` (a partial bootchart log): no blocks, no processes.
    Missing,
}

impl Default for PsSource {
    fn default() -> PsSource {
        PsSource::Text(String::new())
    }
}

impl From<String> for PsSource {
    fn from(text: String) -> PsSource {
        PsSource::Text(text)
    }
}

/// A parsed trace.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Where it was read from.
    pub origin: String,
    /// `header` entries in file order.
    pub header: Vec<(String, String)>,
    /// `proc_stat.log`.
    pub stat: Vec<StatSample>,
    /// `proc_diskstats.log`.
    pub disk: Vec<DiskBlock>,
    /// `proc_meminfo.log`, if present.
    pub meminfo: Option<Vec<MemBlock>>,
    /// `proc_ps.log`: by far the largest file, so it is parsed as a stream
    /// ([`Trace::for_each_ps_block`]) rather than held as records.
    pub proc_ps: PsSource,
    /// `cmdline2.log`, if present.
    pub cmdlines: Option<Vec<CmdlineEntry>>,
    /// `dmesg`, if present.
    pub dmesg: Option<String>,
    /// `events.log`, if present.
    pub events: Option<Vec<Event>>,
    /// `rc.log`, the runner's span log, as text, if present (parsed by its reader,
    /// [`crate::rclog::parse`], which reports bad lines rather than failing the trace).
    pub rc_log: Option<String>,
    /// `systemd-units.log`, systemd's unit timing, as text, if present (parsed by its
    /// reader, [`crate::units::parse`], which reports bad lines rather than failing).
    pub systemd_units: Option<String>,
}

impl Trace {
    /// Opens and parses a trace directory or archive.
    pub fn open(path: &Path) -> Result<Trace, ReadError> {
        Trace::parse(RawTrace::open(path)?)
    }

    /// Parses the files of a raw trace. `proc_ps.log` is kept as text and checked when it is
    /// streamed ([`Trace::for_each_ps_block`]).
    pub fn parse(mut raw: RawTrace) -> Result<Trace, ReadError> {
        let header = bootchart::parse_header(&raw.take_required("header")?);
        let stat = bootchart::parse_proc_stat(&raw.take_required("proc_stat.log")?)?;
        let disk = bootchart::parse_proc_diskstats(&raw.take_required("proc_diskstats.log")?)?;
        let proc_ps = match raw.proc_ps_path.take() {
            Some(path) => PsSource::File(path),
            None => raw
                .take_text("proc_ps.log")
                .map_or(PsSource::Missing, PsSource::Text),
        };
        let meminfo = match raw.take_text("proc_meminfo.log") {
            Some(t) => Some(bootchart::parse_proc_meminfo(&t)?),
            None => None,
        };
        let cmdlines = match raw.take_text("cmdline2.log") {
            Some(t) => Some(bootchart::parse_cmdline2(&t)?),
            None => None,
        };
        let events = match raw.take_text(events::FILE_NAME) {
            Some(t) => Some(
                events::parse(&t)
                    .map_err(|e| ParseError::at(events::FILE_NAME, e.line, e.expected))?,
            ),
            None => None,
        };
        Ok(Trace {
            origin: raw.origin.clone(),
            header,
            stat,
            disk,
            meminfo,
            proc_ps,
            cmdlines,
            dmesg: raw.take_text("dmesg"),
            events,
            rc_log: raw.take_text(crate::rclog::FILE_NAME),
            systemd_units: raw.take_text(crate::units::FILE_NAME),
        })
    }

    /// Streams `proc_ps.log`: `f` gets each block's time (cs) and records.
    pub fn for_each_ps_block(&self, f: impl FnMut(u64, &[PsRecord])) -> Result<usize, ParseError> {
        match &self.proc_ps {
            PsSource::Text(text) => bootchart::for_each_ps_block(text, f),
            PsSource::Missing => Ok(0),
            PsSource::File(path) => {
                let file = std::fs::File::open(path).map_err(|e| {
                    ParseError::whole(
                        "proc_ps.log",
                        format!("cannot open {}: {e}", path.display()),
                    )
                })?;
                bootchart::for_each_ps_block_read(io::BufReader::with_capacity(1 << 16, file), f)
            }
        }
    }

    /// All of `proc_ps.log` in memory.
    pub fn ps_log(&self) -> Result<PsLog, ParseError> {
        let mut log = PsLog::default();
        self.for_each_ps_block(|t_cs, records| {
            let start = log.records.len();
            log.records.extend_from_slice(records);
            log.blocks.push(bootchart::PsBlock {
                t_cs,
                records: start..log.records.len(),
            });
        })?;
        Ok(log)
    }

    /// The first header value for `key`.
    pub fn header_value(&self, key: &str) -> Option<&str> {
        self.header
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}
