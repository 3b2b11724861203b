//! A drive that charges for distance: an NBD server on a Unix socket that serves a disk file
//! to QEMU (`-drive driver=nbd,server.type=unix,...`) and makes each request take what a
//! drive with a head (or an SD card) would take for it (`seekmodel`). QEMU's own throttle
//! counts requests and bytes only, so to it the order of the blocks on disk is no matter.
//!
//! The protocol is written from its specification (the NBD project's `doc/proto.md`): the
//! fixed newstyle handshake, `NBD_OPT_EXPORT_NAME`, `NBD_OPT_GO` and `NBD_OPT_INFO` (other
//! options are refused with `NBD_REP_ERR_UNSUP`), simple replies only, and the commands
//! READ, WRITE, FLUSH and DISC (TRIM and WRITE_ZEROES are not advertised, so a client does
//! not send them; if one does, the reply is EINVAL). One head: requests are served one at a
//! time in arrival order, across connections.
//!
//! `seekcheck` reads through the server with QEMU's own NBD client (`qemu-io`) and sets what
//! it measured beside the model's expectation and the published figures.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::vm::seekmodel::Model;
use crate::vm::util::{io_err, Error, Result};

const NBDMAGIC: u64 = 0x4e42_444d_4147_4943; // "NBDMAGIC"
const IHAVEOPT: u64 = 0x4948_4156_454f_5054; // "IHAVEOPT"
const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
const REQUEST_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

const FLAG_FIXED_NEWSTYLE: u16 = 1;
const FLAG_NO_ZEROES: u16 = 2;
const C_FLAGS_KNOWN: u32 = 1 | 2;

const OPT_EXPORT_NAME: u32 = 1;
const OPT_ABORT: u32 = 2;
const OPT_INFO: u32 = 6;
const OPT_GO: u32 = 7;

const REP_ACK: u32 = 1;
const REP_INFO: u32 = 3;
const REP_ERR_UNSUP: u32 = 0x8000_0001;
const REP_ERR_INVALID: u32 = 0x8000_0003;
const INFO_EXPORT: u16 = 0;

const TF_HAS_FLAGS: u16 = 1;
const TF_SEND_FLUSH: u16 = 1 << 2;
const TF_ROTATIONAL: u16 = 1 << 4;

const CMD_READ: u16 = 0;
const CMD_WRITE: u16 = 1;
const CMD_DISC: u16 = 2;
const CMD_FLUSH: u16 = 3;
const CMD_FLAG_FUA: u16 = 1;

const EIO: u32 = 5;
const EINVAL: u32 = 22;

/// The largest request served: the specification's default maximum block size (a client
/// that negotiated none must stay within it), and a bound on what a request allocates.
const MAX_REQUEST: u32 = 32 << 20;
/// The longest option data read during the handshake (an export name and info requests).
const MAX_OPTION: u32 = 64 << 10;

/// What the server did, for its log and `seekcheck`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub requests: u64,
    pub reads: u64,
    pub bytes_read: u64,
    pub writes: u64,
    pub bytes_written: u64,
    pub flushes: u64,
    /// Requests that did not continue the last one.
    pub jumps: u64,
    /// What the model charged, s.
    pub modelled_s: f64,
}

/// The head and its clock, shared by every connection: one head serves one request at a
/// time.
struct Drive {
    model: Model,
    /// Where the last request ended.
    pos: u64,
    /// When the drive is free again: each request is due at `max(now, free_at) + cost`, and
    /// the server sleeps until that instant, so the sleeps' own errors never add up.
    free_at: Option<Instant>,
    stats: Stats,
    /// When the server started (the log's clock).
    started: Instant,
    /// Every request in the order served, for `seekdisk.log` ([`SeekDisk::write_log`]).
    log: Vec<Request>,
}

/// One request as the drive served it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request {
    /// When it reached the drive, s after the server started.
    pub at_s: f64,
    pub offset: u64,
    pub len: u64,
    pub write: bool,
    /// What the model charged for it, s.
    pub cost_s: f64,
}

impl Drive {
    /// Charges a request; returns the instant its reply is due.
    fn charge(&mut self, off: u64, len: u64, write: bool) -> Instant {
        let now = Instant::now();
        let start = self.free_at.filter(|t| *t > now).unwrap_or(now);
        let cost = self.model.cost_s(self.pos, off, len);
        let st = &mut self.stats;
        st.requests += 1;
        st.jumps += u64::from(off != self.pos);
        st.modelled_s += cost;
        if write {
            st.writes += 1;
            st.bytes_written += len;
        } else {
            st.reads += 1;
            st.bytes_read += len;
        }
        self.pos = off + len;
        self.log.push(Request {
            at_s: now.duration_since(self.started).as_secs_f64(),
            offset: off,
            len,
            write,
            cost_s: cost,
        });
        let due = start + Duration::from_secs_f64(cost);
        self.free_at = Some(due);
        due
    }
}

struct Shared {
    file: File,
    size: u64,
    path: PathBuf,
    drive: Mutex<Drive>,
    stop: AtomicBool,
    /// The first error a connection ended with (the server's log; `boot` reports it).
    error: Mutex<Option<String>>,
    /// Open connections, so that stopping the server ends them (the client sees EOF).
    conns: Mutex<Vec<UnixStream>>,
}

/// A running server; dropping it stops it (connections are shut down: the client sees EOF)
/// and removes the socket.
pub struct SeekDisk {
    socket: PathBuf,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl SeekDisk {
    /// Serves `disk` (read and written in place) on a new Unix socket at `socket` (a stale one
    /// is removed first) with `model`'s costs.
    pub fn start(disk: &Path, socket: &Path, model: Model) -> Result<SeekDisk> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(disk)
            .map_err(|e| io_err("seekdisk: cannot open", disk, e))?;
        let size = file
            .metadata()
            .map_err(|e| io_err("seekdisk: cannot stat", disk, e))?
            .len();
        // sun_path holds 108 bytes with the terminating NUL.
        if socket.as_os_str().len() > 107 {
            return Err(Error::fail(format!(
                "seekdisk: socket path {} is longer than a Unix socket's 107 bytes",
                socket.display()
            )));
        }
        let _ = std::fs::remove_file(socket);
        let listener = UnixListener::bind(socket)
            .map_err(|e| io_err("seekdisk: cannot listen on", socket, e))?;
        let shared = Arc::new(Shared {
            file,
            size,
            path: disk.to_path_buf(),
            drive: Mutex::new(Drive {
                model,
                pos: 0,
                free_at: None,
                stats: Stats::default(),
                started: Instant::now(),
                log: Vec::new(),
            }),
            stop: AtomicBool::new(false),
            error: Mutex::new(None),
            conns: Mutex::new(Vec::new()),
        });
        let sh = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("seekdisk".into())
            .spawn(move || accept_loop(listener, sh))
            .map_err(|e| Error::fail(format!("seekdisk: cannot start its thread: {e}")))?;
        Ok(SeekDisk {
            socket: socket.to_path_buf(),
            shared,
            accept: Some(accept),
        })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn stats(&self) -> Stats {
        lock(&self.shared.drive).stats.clone()
    }

    /// Writes every request served so far to `path`, one line each: `SECONDS R|W OFFSET
    /// LENGTH COST_S` (the time the request reached the drive, from the server's start), for
    /// seeing where a boot's drive time went (`boot` writes the run's `seekdisk.log`).
    pub fn write_log(&self, path: &Path) -> Result<()> {
        use std::fmt::Write as _;
        let mut text = String::from("# seconds kind offset length cost_s\n");
        for r in &lock(&self.shared.drive).log {
            let _ = writeln!(
                text,
                "{:.6} {} {} {} {:.6}",
                r.at_s,
                if r.write { 'W' } else { 'R' },
                r.offset,
                r.len,
                r.cost_s
            );
        }
        std::fs::write(path, text).map_err(|e| io_err("seekdisk: cannot write", path, e))
    }

    /// The first error a connection ended with, naming the socket and the disk.
    pub fn error(&self) -> Option<String> {
        lock(&self.shared.error).clone().map(|e| {
            format!(
                "seekdisk on {} serving {}: {e}",
                self.socket.display(),
                self.shared.path.display()
            )
        })
    }

    /// The QEMU `-drive` option that attaches this server's export as a virtio disk.
    pub fn drive_opt(&self) -> String {
        format!(
            "driver=nbd,server.type=unix,server.path={},if=virtio",
            self.socket.display()
        )
    }
}

impl Drop for SeekDisk {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for c in lock(&self.shared.conns).iter() {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        // Wakes the accept loop, which sees the stop flag.
        let _ = UnixStream::connect(&self.socket);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panicked connection thread leaves the data as it was: keep going.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn accept_loop(listener: UnixListener, sh: Arc<Shared>) {
    let mut threads = Vec::new();
    for conn in listener.incoming() {
        if sh.stop.load(Ordering::SeqCst) {
            break;
        }
        let conn = match conn {
            Ok(c) => c,
            Err(e) => {
                record_error(&sh, format!("accept: {e}"));
                break;
            }
        };
        // A clone for `Drop` to shut down, and one for the thread to end the connection
        // with: while a clone is open, dropping the stream alone would not close it.
        let (Ok(for_drop), Ok(for_end)) = (conn.try_clone(), conn.try_clone()) else {
            record_error(&sh, "cannot clone a connection's socket".into());
            continue;
        };
        lock(&sh.conns).push(for_drop);
        let sh2 = Arc::clone(&sh);
        threads.push(std::thread::spawn(move || {
            if let Err(e) = serve(conn, &sh2) {
                if !sh2.stop.load(Ordering::SeqCst) {
                    record_error(&sh2, e.to_string());
                }
            }
            // The error is kept first, then the client sees EOF.
            let _ = for_end.shutdown(std::net::Shutdown::Both);
        }));
    }
    for c in lock(&sh.conns).iter() {
        let _ = c.shutdown(std::net::Shutdown::Both);
    }
    for t in threads {
        let _ = t.join();
    }
}

fn record_error(sh: &Shared, e: String) {
    let mut slot = lock(&sh.error);
    if slot.is_none() {
        *slot = Some(e);
    }
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

/// One connection: the handshake, then requests until DISC or EOF. An EOF is a normal end
/// (QEMU closes the socket when it exits); anything the protocol does not allow is an error.
fn serve(mut s: UnixStream, sh: &Shared) -> io::Result<()> {
    // The kernel may wake a sleeping thread up to its timer slack late (50 us by default);
    // with one request at a time, that would add to every request. 1 ns: on time.
    // SAFETY: PR_SET_TIMERSLACK takes an integer and changes only this thread's slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let tflags = TF_HAS_FLAGS
        | TF_SEND_FLUSH
        | if lock(&sh.drive).model.rotational() {
            TF_ROTATIONAL
        } else {
            0
        };
    match handshake(&mut s, sh.size, tflags) {
        Ok(true) => {}
        Ok(false) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
        Err(e) => return Err(bad(format!("handshake: {e}"))),
    }
    let mut buf = Vec::new();
    loop {
        let mut hdr = [0u8; 28];
        match s.read_exact(&mut hdr) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let be32 = |i: usize| u32::from_be_bytes(hdr[i..i + 4].try_into().expect("4 bytes"));
        let be64 = |i: usize| u64::from_be_bytes(hdr[i..i + 8].try_into().expect("8 bytes"));
        if be32(0) != REQUEST_MAGIC {
            return Err(bad(format!(
                "request magic {:#x}, expected {REQUEST_MAGIC:#x}",
                be32(0)
            )));
        }
        let flags = u16::from_be_bytes([hdr[4], hdr[5]]);
        let kind = u16::from_be_bytes([hdr[6], hdr[7]]);
        let handle = be64(8);
        let off = be64(16);
        let len = be32(24);
        let in_bounds =
            len <= MAX_REQUEST && off.checked_add(len as u64).is_some_and(|e| e <= sh.size);
        match kind {
            CMD_READ => {
                if !in_bounds {
                    reply(&mut s, handle, EINVAL, &[])?;
                    continue;
                }
                buf.resize(len as usize, 0);
                let due = lock(&sh.drive).charge(off, len as u64, false);
                let err = match sh.file.read_exact_at(&mut buf, off) {
                    Ok(()) => 0,
                    Err(_) => EIO,
                };
                sleep_until(due);
                reply(&mut s, handle, err, if err == 0 { &buf } else { &[] })?;
            }
            CMD_WRITE => {
                // The payload follows whatever the reply will be: read it first.
                if len > MAX_REQUEST {
                    return Err(bad(format!(
                        "write of {len} bytes, more than {MAX_REQUEST}"
                    )));
                }
                buf.resize(len as usize, 0);
                s.read_exact(&mut buf)?;
                if !in_bounds {
                    reply(&mut s, handle, EINVAL, &[])?;
                    continue;
                }
                let due = lock(&sh.drive).charge(off, len as u64, true);
                let mut ok = sh.file.write_all_at(&buf, off).is_ok();
                if ok && flags & CMD_FLAG_FUA != 0 {
                    ok = sh.file.sync_data().is_ok();
                }
                sleep_until(due);
                reply(&mut s, handle, if ok { 0 } else { EIO }, &[])?;
            }
            CMD_FLUSH => {
                lock(&sh.drive).stats.flushes += 1;
                let err = if sh.file.sync_data().is_ok() { 0 } else { EIO };
                reply(&mut s, handle, err, &[])?;
            }
            CMD_DISC => return Ok(()),
            _ => reply(&mut s, handle, EINVAL, &[])?,
        }
    }
}

fn sleep_until(due: Instant) {
    let now = Instant::now();
    if due > now {
        std::thread::sleep(due - now);
    }
}

fn reply(s: &mut UnixStream, handle: u64, err: u32, data: &[u8]) -> io::Result<()> {
    let mut hdr = [0u8; 16];
    hdr[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    hdr[4..8].copy_from_slice(&err.to_be_bytes());
    hdr[8..16].copy_from_slice(&handle.to_be_bytes());
    if data.is_empty() {
        s.write_all(&hdr)
    } else {
        // One write for small replies; the data alone for large ones (no copy).
        s.write_all(&hdr)?;
        s.write_all(data)
    }
}

fn option_reply(s: &mut UnixStream, opt: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut m = Vec::with_capacity(20 + data.len());
    m.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    m.extend_from_slice(&opt.to_be_bytes());
    m.extend_from_slice(&kind.to_be_bytes());
    m.extend_from_slice(&(data.len() as u32).to_be_bytes());
    m.extend_from_slice(data);
    s.write_all(&m)
}

/// The fixed newstyle handshake; true when the client moved to the transmission phase,
/// false when it aborted.
fn handshake(s: &mut UnixStream, size: u64, tflags: u16) -> io::Result<bool> {
    let mut hello = Vec::with_capacity(18);
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    s.write_all(&hello)?;
    let cflags = read_u32(s)?;
    if cflags & !C_FLAGS_KNOWN != 0 {
        // The specification: a server that sees flags it does not know closes.
        return Err(bad(format!("unknown client flags {cflags:#x}")));
    }
    let no_zeroes = cflags & u32::from(FLAG_NO_ZEROES) != 0;
    loop {
        let magic = read_u64(s)?;
        if magic != IHAVEOPT {
            return Err(bad(format!(
                "option magic {magic:#x}, expected {IHAVEOPT:#x}"
            )));
        }
        let opt = read_u32(s)?;
        let len = read_u32(s)?;
        if len > MAX_OPTION {
            return Err(bad(format!(
                "option {opt} with {len} bytes of data, at most {MAX_OPTION}"
            )));
        }
        let mut data = vec![0u8; len as usize];
        s.read_exact(&mut data)?;
        match opt {
            OPT_EXPORT_NAME => {
                // Any name: there is one export. No reply header, and no way to refuse.
                let mut m = Vec::with_capacity(134);
                m.extend_from_slice(&size.to_be_bytes());
                m.extend_from_slice(&tflags.to_be_bytes());
                if !no_zeroes {
                    m.extend_from_slice(&[0u8; 124]);
                }
                s.write_all(&m)?;
                return Ok(true);
            }
            OPT_ABORT => {
                option_reply(s, opt, REP_ACK, &[])?;
                return Ok(false);
            }
            OPT_INFO | OPT_GO => {
                if !go_data_valid(&data) {
                    option_reply(s, opt, REP_ERR_INVALID, b"malformed NBD_OPT_GO/INFO data")?;
                    continue;
                }
                let mut info = Vec::with_capacity(12);
                info.extend_from_slice(&INFO_EXPORT.to_be_bytes());
                info.extend_from_slice(&size.to_be_bytes());
                info.extend_from_slice(&tflags.to_be_bytes());
                option_reply(s, opt, REP_INFO, &info)?;
                option_reply(s, opt, REP_ACK, &[])?;
                if opt == OPT_GO {
                    return Ok(true);
                }
            }
            _ => option_reply(s, opt, REP_ERR_UNSUP, &[])?,
        }
    }
}

/// `NBD_OPT_GO`/`INFO` data: u32 name length, the name, u16 count, count u16 info requests.
fn go_data_valid(d: &[u8]) -> bool {
    if d.len() < 6 {
        return false;
    }
    let name = u32::from_be_bytes(d[0..4].try_into().expect("4 bytes")) as usize;
    let Some(rest) = d.get(4 + name..) else {
        return false;
    };
    if rest.len() < 2 {
        return false;
    }
    let n = u16::from_be_bytes([rest[0], rest[1]]) as usize;
    rest.len() == 2 + 2 * n
}

/// One pattern `seekcheck` reads, and what the published figures say it should give.
struct Check {
    name: &'static str,
    /// (offset, length) in the order read.
    reads: Vec<(u64, u64)>,
    /// Published: requests per second (or MB/s when `mb_s`), and where it comes from.
    published: f64,
    mb_s: bool,
    source: &'static str,
}

/// A deterministic stream of offsets (a 64-bit LCG, Knuth's MMIX constants): the same reads
/// on every run, so runs compare.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) % n.max(1)
    }
}

fn checks(model: &Model, n: usize) -> Vec<Check> {
    const K4: u64 = 4096;
    const M1: u64 = 1 << 20;
    let cap = model.capacity().unwrap_or(1 << 30);
    let mut r = Lcg(19);
    let random: Vec<(u64, u64)> = (0..n).map(|_| (r.below(cap / K4) * K4, K4)).collect();
    let seq: Vec<(u64, u64)> = (0..n as u64 / 2).map(|i| (M1 + i * M1, M1)).collect();
    // Within a 64 MiB band in the middle: short seeks (tens of tracks).
    let band = 64 * M1;
    let short: Vec<(u64, u64)> = (0..n)
        .map(|_| (cap / 2 + r.below(band / K4) * K4, K4))
        .collect();
    // 4 KiB every 64 KiB, forward: what merged replay ranges skip.
    let skip: Vec<(u64, u64)> = (0..n as u64).map(|i| (M1 + i * 64 * 1024, K4)).collect();
    let stroke: Vec<(u64, u64)> = (0..n as u64 / 2)
        .map(|i| (if i % 2 == 0 { 0 } else { cap - K4 }, K4))
        .collect();
    match model {
        Model::Head(h) => {
            let half = h.revolution_s() / 2.0;
            vec![
                Check {
                    name: "random 4 KiB over the disk",
                    reads: random,
                    published: 1.0 / (h.avg_s + half),
                    mb_s: false,
                    source: "5K320 spec: average read seek 12 ms + average latency 5.5 ms",
                },
                Check {
                    name: "sequential 1 MiB",
                    reads: seq,
                    published: h.rate / 1e6,
                    mb_s: true,
                    source: "sustained media rate (estimate, docs/testbed.md)",
                },
                Check {
                    name: "random 4 KiB in 64 MiB",
                    reads: short,
                    published: 1.0 / (h.track_s + half),
                    mb_s: false,
                    source: "5K320 spec: single-track seek 1 ms + latency 5.5 ms (a bound)",
                },
                Check {
                    name: "4 KiB every 64 KiB",
                    reads: skip,
                    published: h.rate / (64.0 * 1024.0),
                    mb_s: false,
                    source: "64 KiB of media at the media rate per read (no seek)",
                },
                Check {
                    name: "full stroke 4 KiB",
                    reads: stroke,
                    published: 1.0 / (h.full_s + half),
                    mb_s: false,
                    source: "5K320 spec: full-stroke seek 20 ms + latency 5.5 ms",
                },
            ]
        }
        Model::Flash(f) => {
            let random_iops = 6.57e6 / 4096.0;
            vec![
                Check {
                    name: "random 4 KiB over the card",
                    reads: random,
                    published: random_iops,
                    mb_s: false,
                    source: "pidramble, Pi 4, SanDisk Ultra 16GB: 4K random read 6.57 MB/s",
                },
                Check {
                    name: "sequential 1 MiB",
                    reads: seq,
                    published: f.rate / 1e6,
                    mb_s: true,
                    source: "pidramble, Pi 4, SanDisk Ultra 16GB: hdparm 42.30 MB/s",
                },
                Check {
                    name: "random 4 KiB in 64 MiB",
                    reads: short,
                    published: random_iops,
                    mb_s: false,
                    source: "no head: as random over the card",
                },
                Check {
                    name: "4 KiB every 64 KiB",
                    reads: skip,
                    published: random_iops,
                    mb_s: false,
                    source: "no head: as random over the card",
                },
            ]
        }
        Model::Zero => Vec::new(),
    }
}

/// Seconds per read as `qemu-io` reports each (`... 1 ops; 00.00 sec (... and X ops/sec)`):
/// its own timing of the request, without its start-up.
fn qemu_io_times(out: &str) -> Vec<f64> {
    out.lines()
        .filter_map(|l| {
            let ops: f64 = l.split(" ops;").next()?.rsplit(' ').next()?.parse().ok()?;
            let rate: f64 = l
                .split(" and ")
                .nth(1)?
                .split(" ops/sec")
                .next()?
                .trim()
                .parse()
                .ok()?;
            (rate > 0.0).then(|| ops / rate)
        })
        .collect()
}

/// Runs `qemu-io` (QEMU's NBD client, read-only unless `write`) on the export at `socket` with
/// the given commands; its output, or an error naming the socket.
pub fn qemu_io(socket: &Path, cmds: &[String], write: bool) -> Result<String> {
    let mut cmd = Command::new("qemu-io");
    if !write {
        cmd.arg("-r");
    }
    cmd.args(["-f", "raw"])
        .arg(format!("nbd+unix:///?socket={}", socket.display()));
    for c in cmds {
        cmd.arg("-c").arg(c);
    }
    let out = cmd.output().map_err(|e| {
        Error::fail(format!(
            "cannot run qemu-io: {e} (run `bootprint-testbed deps`)"
        ))
    })?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() || text.contains("failed") {
        return Err(Error::fail(format!(
            "qemu-io on nbd socket {} failed ({}): {}{}",
            socket.display(),
            out.status,
            last_lines(&text, 5),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(text)
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// One row of `seekcheck`'s table.
#[derive(Clone, Debug)]
pub struct CheckRow {
    pub name: &'static str,
    pub reads: usize,
    pub unit: &'static str,
    pub measured: f64,
    pub model: f64,
    pub published: f64,
    /// The same reads through a server that charges nothing, ms per read.
    pub host_ms: f64,
    pub source: &'static str,
}

/// `seekcheck`: serves a sparse file the size of the modelled drive and reads through the
/// server with `qemu-io`, one request at a time (the datasheets' and iozone's queue depth
/// of one); `n` reads per pattern.
pub fn seekcheck(dir: &Path, model: Model, n: usize) -> Result<Vec<CheckRow>> {
    let cap = model
        .capacity()
        .ok_or_else(|| Error::fail("seekcheck: the profile models no drive"))?;
    let disk = dir.join("drive.raw");
    let f = File::create(&disk).map_err(|e| io_err("cannot create", &disk, e))?;
    // Sparse: reading holes costs the host nothing, so the time is the model's.
    f.set_len(cap)
        .map_err(|e| io_err("cannot size", &disk, e))?;
    drop(f);
    let server = SeekDisk::start(&disk, &dir.join("seek.sock"), model)?;
    // The same reads through a server that charges nothing: what the host itself takes per
    // request (qemu-io, the socket, the copy), which the measured figure includes.
    let free = SeekDisk::start(&disk, &dir.join("free.sock"), Model::Zero)?;
    let mut rows = Vec::new();
    for c in checks(&model, n) {
        let cmds: Vec<String> = c
            .reads
            .iter()
            .map(|(o, l)| format!("read {o} {l}"))
            .collect();
        // Each pattern starts with the head at its first read, as the published figures do
        // not count a first seek from elsewhere.
        let (o0, _) = c.reads[0];
        let timed = |sock: &Path| -> Result<f64> {
            qemu_io(sock, &[format!("read {o0} 4096")], false)?;
            let out = qemu_io(sock, &cmds, false)?;
            let times = qemu_io_times(&out);
            if times.len() != c.reads.len() {
                return Err(Error::fail(format!(
                    "seekcheck: qemu-io reported {} timed reads of {}:\n{}",
                    times.len(),
                    c.reads.len(),
                    last_lines(&out, 5)
                )));
            }
            Ok(times.iter().sum())
        };
        let host = timed(free.socket())?;
        let total = timed(server.socket())?;
        let mut pos = o0 + 4096;
        let mut modelled = 0.0;
        for &(o, l) in &c.reads {
            modelled += model.cost_s(pos, o, l);
            pos = o + l;
        }
        let bytes: u64 = c.reads.iter().map(|r| r.1).sum();
        let (measured, model_fig, unit) = if c.mb_s {
            (
                bytes as f64 / total / 1e6,
                bytes as f64 / modelled / 1e6,
                "MB/s",
            )
        } else {
            (
                c.reads.len() as f64 / total,
                c.reads.len() as f64 / modelled,
                "IOPS",
            )
        };
        rows.push(CheckRow {
            name: c.name,
            reads: c.reads.len(),
            unit,
            measured,
            model: model_fig,
            published: c.published,
            host_ms: host / c.reads.len() as f64 * 1e3,
            source: c.source,
        });
    }
    for s in [&server, &free] {
        if let Some(e) = s.error() {
            return Err(Error::fail(e));
        }
    }
    drop(server);
    drop(free);
    let _ = std::fs::remove_file(&disk);
    Ok(rows)
}

/// The table `seekcheck` prints.
pub fn print_rows(profile: &str, rows: &[CheckRow]) {
    println!("seekcheck {profile}: qemu-io through the seekdisk NBD server, one request at a time");
    println!(
        "{:<26} {:>5} {:>4} {:>8} {:>8} {:>9} {:>5} {:>7}  source of the published figure",
        "pattern", "reads", "unit", "measured", "model", "published", "ratio", "host ms"
    );
    for r in rows {
        println!(
            "{:<26} {:>5} {:>4} {:>8.1} {:>8.1} {:>9.1} {:>5.2} {:>7.3}  {}",
            r.name,
            r.reads,
            r.unit,
            r.measured,
            r.model,
            r.published,
            r.measured / r.published,
            r.host_ms,
            r.source
        );
    }
    println!(
        "(measured: through the model; model: its arithmetic for the same reads; ratio: \
         measured / published; host ms: each read through a server that charges nothing)"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::seekmodel::{LAPTOP_5400, SD_CLASS10};

    #[test]
    fn qemu_io_timing_lines() {
        let out = "read 4096/4096 bytes at offset 0\n4 KiB, 1 ops; 00.00 sec (15.678 MiB/sec and 4000.0000 ops/sec)\nread 1048576/1048576 bytes at offset 1048576\n1 MiB, 1 ops; 00.02 sec (50.000 MiB/sec and 50.0000 ops/sec)\n";
        assert_eq!(qemu_io_times(out), vec![1.0 / 4000.0, 0.02]);
        assert!(qemu_io_times("Pattern verification failed at offset 0\n").is_empty());
    }

    #[test]
    fn go_data() {
        // Name "", no info requests; name "ab", one request.
        assert!(go_data_valid(&[0, 0, 0, 0, 0, 0]));
        assert!(go_data_valid(&[0, 0, 0, 2, b'a', b'b', 0, 1, 0, 3]));
        // A name longer than the data; a count that does not match.
        assert!(!go_data_valid(&[0, 0, 0, 9, b'a', 0, 0]));
        assert!(!go_data_valid(&[0, 0, 0, 0, 0, 2, 0, 3]));
        assert!(!go_data_valid(&[0, 0]));
    }

    #[test]
    fn the_checks_cover_the_drive() {
        let c = checks(&Model::Head(LAPTOP_5400), 20);
        assert_eq!(c.len(), 5);
        for ch in &c {
            assert!(
                ch.reads.iter().all(|(o, l)| o + l <= LAPTOP_5400.capacity),
                "{}",
                ch.name
            );
        }
        // The random reads spread over the disk (not all in its first half).
        assert!(c[0].reads.iter().any(|r| r.0 > LAPTOP_5400.capacity / 2));
        assert_eq!(checks(&Model::Flash(SD_CLASS10), 20).len(), 4);
    }

    /// The protocol against a real client: QEMU's own (`qemu-io`), with free requests. What
    /// is written through the server is in the file, and reads back through it.
    #[test]
    fn qemu_io_writes_and_reads_back_through_the_server() {
        if !testkit::have_tool_or_skip("qemu-io") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let disk = dir.path().join("d.raw");
        let f = File::create(&disk).unwrap();
        f.set_len(8 << 20).unwrap();
        drop(f);
        let server = SeekDisk::start(&disk, &dir.path().join("s.sock"), Model::Zero).unwrap();
        let cmds = [
            "write -P 0xab 4096 65536",
            "write -P 0x5c 1048576 1048576",
            "flush",
            "read -P 0xab 4096 65536",
            "read -P 0x5c 1048576 1048576",
            "read -P 0 0 4096",
        ]
        .map(String::from);
        let out = qemu_io(server.socket(), &cmds, true).unwrap();
        assert_eq!(qemu_io_times(&out).len(), 5, "{out}");
        // Beyond the end: an error the client reports, and the server goes on.
        let e = qemu_io(server.socket(), &["read 8388608 4096".into()], false).unwrap_err();
        assert!(e.to_string().contains("s.sock"), "{e}");
        qemu_io(server.socket(), &["read -P 0xab 8192 4096".into()], false).unwrap();
        let st = server.stats();
        assert_eq!(st.bytes_written, 65536 + 1048576);
        assert!(st.flushes >= 1, "{st:?}");
        assert!(server.error().is_none(), "{:?}", server.error());
        // The log has every request the stats counted, in order, the two writes as asked.
        let log_path = dir.path().join("seekdisk.log");
        server.write_log(&log_path).unwrap();
        let log = std::fs::read_to_string(&log_path).unwrap();
        let lines: Vec<&str> = log.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(lines.len() as u64, st.requests, "{log}");
        let writes: Vec<(&str, &str)> = lines
            .iter()
            .map(|l| l.split(' ').collect::<Vec<_>>())
            .filter(|f| f[1] == "W")
            .map(|f| (f[2], f[3]))
            .collect();
        assert_eq!(writes, [("4096", "65536"), ("1048576", "1048576")], "{log}");
        drop(server);
        assert!(!dir.path().join("s.sock").exists(), "the socket is removed");
        let bytes = std::fs::read(&disk).unwrap();
        assert!(bytes[..4096].iter().all(|&b| b == 0));
        assert!(bytes[4096..4096 + 65536].iter().all(|&b| b == 0xab));
        assert!(bytes[1 << 20..2 << 20].iter().all(|&b| b == 0x5c));
        assert!(bytes[2 << 20..].iter().all(|&b| b == 0));
    }

    /// A server that stops ends its connections: the client reads EOF, it does not hang. A
    /// client that breaks the protocol is an error the server keeps, naming the socket.
    #[test]
    fn stopping_ends_the_connection_and_errors_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let disk = dir.path().join("d.raw");
        File::create(&disk).unwrap().set_len(1 << 20).unwrap();
        let sock = dir.path().join("s.sock");
        let server = SeekDisk::start(&disk, &sock, Model::Zero).unwrap();
        let mut c = UnixStream::connect(&sock).unwrap();
        let mut hello = [0u8; 18];
        c.read_exact(&mut hello).unwrap();
        assert_eq!(&hello[..8], b"NBDMAGIC");
        assert_eq!(&hello[8..16], b"IHAVEOPT");
        // Export name "" the old way, without the 124 zeroes.
        c.write_all(&2u32.to_be_bytes()).unwrap();
        c.write_all(&IHAVEOPT.to_be_bytes()).unwrap();
        c.write_all(&OPT_EXPORT_NAME.to_be_bytes()).unwrap();
        c.write_all(&0u32.to_be_bytes()).unwrap();
        let mut export = [0u8; 10];
        c.read_exact(&mut export).unwrap();
        assert_eq!(u64::from_be_bytes(export[..8].try_into().unwrap()), 1 << 20);
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        drop(server);
        let mut rest = Vec::new();
        assert_eq!(c.read_to_end(&mut rest).unwrap(), 0, "EOF, not a hang");
        assert!(!sock.exists());

        // A request with a bad magic: the connection ends and the error is kept.
        let server = SeekDisk::start(&disk, &sock, Model::Zero).unwrap();
        let mut c = UnixStream::connect(&sock).unwrap();
        c.read_exact(&mut hello).unwrap();
        c.write_all(&2u32.to_be_bytes()).unwrap();
        c.write_all(&IHAVEOPT.to_be_bytes()).unwrap();
        c.write_all(&OPT_EXPORT_NAME.to_be_bytes()).unwrap();
        c.write_all(&0u32.to_be_bytes()).unwrap();
        c.read_exact(&mut export).unwrap();
        c.write_all(&[0xffu8; 28]).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(c.read_to_end(&mut rest).unwrap(), 0);
        let e = server.error().expect("the error is kept");
        assert!(
            e.contains("request magic") && e.contains("s.sock") && e.contains("d.raw"),
            "{e}"
        );
    }

    /// The clock: requests are due at the model's times, not later (the sleeps do not add
    /// up), measured over many small requests through a raw client.
    #[test]
    fn a_modelled_drive_takes_the_model_time() {
        if !testkit::have_tool_or_skip("qemu-io") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let disk = dir.path().join("d.raw");
        File::create(&disk).unwrap().set_len(64 << 20).unwrap();
        // 2 ms a request, no transfer cost to speak of.
        let model = Model::Flash(crate::vm::seekmodel::Flash {
            capacity: 64 << 20,
            access_s: 0.002,
            rate: 1e12,
        });
        let server = SeekDisk::start(&disk, &dir.path().join("s.sock"), model).unwrap();
        let cmds: Vec<String> = (1..=100)
            .map(|i| format!("read {} 512", i * 8192))
            .collect();
        let t = Instant::now();
        qemu_io(server.socket(), &cmds, false).unwrap();
        let took = t.elapsed().as_secs_f64();
        // 100 jumps of 2 ms: 0.2 s, plus qemu-io's start; never less.
        assert!(took >= 0.2, "{took}");
        assert!(took < 1.5, "{took}");
        assert_eq!(server.stats().jumps, 100);
    }
}
