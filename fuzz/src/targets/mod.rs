//! The targets, one file per crate whose parsers they reach, and what they share: the bytes
//! as production reads them, and the trace fixtures as seeds.

pub mod analyze;
pub mod enablement;
pub mod initramfs;
pub mod kernel;
pub mod modules;
pub mod preload;
pub mod rc;
pub mod readahead;
pub mod record;
pub mod sample;
pub mod trace;

use std::borrow::Cow;
use std::io::Read;
use std::sync::OnceLock;

use crate::seeds;

/// The bytes as `String::from_utf8_lossy` reads them (files read with `fs::read` and
/// converted, such as a trace's files and init scripts).
pub fn lossy(data: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// The bytes as `fs::read_to_string` reads them: not UTF-8 means the file is not read.
pub fn strict(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// A trace's files, `(name, contents)`.
pub type TraceFiles = Vec<(String, Vec<u8>)>;

/// The trace fixtures, each as its files: the hand-made mini trace, bootchart2's example,
/// the hand-written Android log and two test-bed traces (their `.tgz` unpacked; every file cut to [`TRACE_SEED`]).
pub fn trace_fixtures() -> &'static [TraceFiles] {
    static CELL: OnceLock<Vec<TraceFiles>> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut out = Vec::new();
        for dir in [
            "tests/fixtures/mini-trace",
            "tests/fixtures/bootchart2-example1",
            "tests/fixtures/android-phone",
        ] {
            let files: TraceFiles = ::trace::reader::KNOWN_FILES
                .iter()
                .map(|n| {
                    let b = seeds::file(&format!("{dir}/{n}"));
                    (n.to_string(), seeds::cut_to(b, TRACE_SEED))
                })
                .filter(|(_, b)| !b.is_empty())
                .collect();
            if !files.is_empty() {
                out.push(files);
            }
        }
        for tgz in [
            "crates/analyze/tests/data/testbed-sysvinit.tgz",
            "crates/analyze/tests/data/testbed-startpar.tgz",
        ] {
            if let Some(files) = untar(&std::fs::read(seeds::root().join(tgz)).unwrap_or_default())
            {
                out.push(files);
            }
        }
        out
    })
}

/// A trace file of a fixture is cut to this: a whole-trace input holds up to eight, and
/// every one of them is parsed and analysed at every input.
pub const TRACE_SEED: usize = 16 << 10;

/// The members of a `.tgz`, each cut to a seed's length.
fn untar(tgz: &[u8]) -> Option<TraceFiles> {
    let mut data = Vec::new();
    flate2::read::GzDecoder::new(tgz)
        .read_to_end(&mut data)
        .ok()?;
    let mut ar = tar::Archive::new(&data[..]);
    let mut out = Vec::new();
    for e in ar.entries().ok()? {
        let mut e = e.ok()?;
        let name = e.path().ok()?.file_name()?.to_string_lossy().into_owned();
        let mut body = Vec::new();
        e.read_to_end(&mut body).ok()?;
        out.push((name, seeds::cut_to(body, TRACE_SEED)));
    }
    Some(out)
}

/// One file of every trace fixture that has it.
pub fn trace_file_seeds(name: &str) -> Vec<Vec<u8>> {
    trace_fixtures()
        .iter()
        .filter_map(|f| f.iter().find(|(n, _)| n == name).map(|(_, b)| b.clone()))
        .collect()
}

/// Every trace fixture as a container input ([`crate::container`]).
pub fn trace_container_seeds() -> Vec<Vec<u8>> {
    trace_fixtures()
        .iter()
        .map(|f| crate::container::join(f))
        .collect()
}

/// Tokens of the bootchart2 sample logs and `events.log`.
pub const TRACE_TOKENS: &[&str] = &[
    "cpu ",
    "cpu0 ",
    "procs_blocked ",
    "procs_running ",
    " not running",
    "MemTotal:",
    "MemFree:",
    "Cached:",
    " kB",
    "1 (init) S 0 0 0 0 0 0 0 0 0 0 10 0 0 0 20 0 1 0 90 0 100 0",
    " (",
    ") ",
    "((",
    "))",
    " R ",
    " Z ",
    "# bootprint events 1",
    "milestone",
    "name=text_login",
    "name=graphical_login",
    "boot_done",
    "exec",
    "pid=",
    "ppid=",
    "path=",
    "init_exec",
    "recorder_start",
    "rc_start",
    "rc_end",
    "@@ header\n",
    "@@ proc_stat.log\n",
    "@@ proc_diskstats.log\n",
    "@@ proc_ps.log\n",
    "@@ proc_meminfo.log\n",
    "@@ cmdline2.log\n",
    "@@ events.log\n",
    "@@ dmesg\n",
    "bootprint.clk_tck = ",
    "bootprint.ncpus = ",
    "bootprint.page_size = ",
    "bootprint.hz = ",
    "system.cpu = ",
    "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11",
    "vda",
    "[    1.000000] ",
    "Run /init as init process",
    "Run /sbin/init as init process",
];
