//! The trace crate: every file of a trace directory, `bootprint.toml`'s syntax, and whole
//! traces from a directory's files or a bootchart2 archive.

use std::io::Write;

use arbitrary::Unstructured;
use trace::bootchart;
use trace::reader::{RawTrace, Trace, KNOWN_FILES};

use super::{lossy, strict, trace_container_seeds, trace_file_seeds, trace_fixtures, TRACE_TOKENS};
use crate::{seeds, Target};

/// The targets of this file.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "trace_header",
            about: "trace::bootchart::parse_header (trace `header`)",
            run: |d| {
                let _ = bootchart::parse_header(&lossy(d));
            },
            seeds: || trace_file_seeds("header"),
            tokens: TRACE_TOKENS,
            structured: None,
        },
        Target {
            name: "trace_proc_stat",
            about: "trace::bootchart::parse_proc_stat (proc_stat.log)",
            run: |d| {
                let _ = bootchart::parse_proc_stat(&lossy(d));
            },
            seeds: || trace_file_seeds("proc_stat.log"),
            tokens: TRACE_TOKENS,
            structured: None,
        },
        Target {
            name: "trace_proc_diskstats",
            about: "trace::bootchart::parse_proc_diskstats (proc_diskstats.log)",
            run: |d| {
                let _ = bootchart::parse_proc_diskstats(&lossy(d));
            },
            seeds: || trace_file_seeds("proc_diskstats.log"),
            tokens: TRACE_TOKENS,
            structured: None,
        },
        Target {
            name: "trace_proc_meminfo",
            about: "trace::bootchart::parse_proc_meminfo (proc_meminfo.log)",
            run: |d| {
                let _ = bootchart::parse_proc_meminfo(&lossy(d));
            },
            seeds: || trace_file_seeds("proc_meminfo.log"),
            tokens: TRACE_TOKENS,
            structured: None,
        },
        Target {
            name: "trace_proc_ps",
            about: "trace::bootchart::parse_proc_ps on text and for_each_ps_block_read streaming the bytes (proc_ps.log)",
            run: run_proc_ps,
            seeds: || {
                let mut v = trace_file_seeds("proc_ps.log");
                v.push(seeds::file("tests/fixtures/bootchart2-example1/extract2.proc_ps.log"));
                v
            },
            tokens: TRACE_TOKENS,
            structured: None,
        },
        Target {
            name: "trace_cmdline2",
            about: "trace::bootchart::parse_cmdline2 (cmdline2.log)",
            run: |d| {
                let _ = bootchart::parse_cmdline2(&lossy(d));
            },
            seeds: || trace_file_seeds("cmdline2.log"),
            tokens: TRACE_TOKENS,
            structured: None,
        },
        Target {
            name: "trace_events",
            about: "trace::events::parse and decode (events.log)",
            run: |d| {
                if let Ok(events) = trace::events::parse(&lossy(d)) {
                    for e in &events {
                        let _ = e.to_line();
                    }
                }
            },
            seeds: || {
                let mut v = trace_file_seeds("events.log");
                v.push(seeds::file("tests/fixtures/modcheck/b.events.log"));
                v
            },
            tokens: TRACE_TOKENS,
            structured: None,
        },
        Target {
            name: "trace_conf",
            about: "trace::conf::entries and trace::config::parse (bootprint.toml's syntax and schema)",
            run: |d| {
                if let Some(t) = strict(d) {
                    let _ = trace::conf::entries(t, "bootprint.toml");
                    let _ = trace::conf::read_section(t, "bootprint.toml", "budget");
                    let _ = trace::config::parse(t, "bootprint.toml");
                    let _ = trace::config::parse_rc_conf(t, "rc.conf");
                }
            },
            seeds: conf_seeds,
            tokens: CONF_TOKENS,
            structured: None,
        },
        Target {
            name: "trace_dir",
            about: "trace::reader::Trace::parse of a directory's files, then the proc_ps.log stream",
            run: |d| {
                if let Ok(t) = Trace::parse(raw_trace(d)) {
                    let _ = t.ps_log();
                }
            },
            seeds: trace_container_seeds,
            tokens: TRACE_TOKENS,
            structured: None,
        },
        Target {
            name: "trace_archive",
            about: "trace::reader::Trace::open of a bootchart2 .tgz / .tar (flate2, tar), then the proc_ps.log stream",
            run: run_archive,
            seeds: archive_seeds,
            tokens: &["ustar", "header", "proc_ps.log", "././@LongLink", "\u{1f}\u{8b}\u{8}"],
            structured: Some(archive_structured),
        },
    ]
}

fn run_proc_ps(d: &[u8]) {
    let _ = bootchart::parse_proc_ps(&lossy(d));
    // A directory's proc_ps.log is streamed from the file: small buffers put the cut of a
    // line at every place.
    for cap in [7, 4096] {
        let r = std::io::BufReader::with_capacity(cap, d);
        let _ = bootchart::for_each_ps_block_read(r, |_, _| {});
    }
}

/// A container's known files as a trace directory's reader finds them (other names are
/// ignored, the last of a name wins as a directory can hold only one).
pub fn raw_trace(d: &[u8]) -> RawTrace {
    let mut raw = RawTrace {
        origin: "fuzz".into(),
        ..RawTrace::default()
    };
    for (name, body) in crate::container::split(d) {
        if KNOWN_FILES.contains(&name.as_str()) {
            raw.files.retain(|(n, _)| *n != name);
            raw.files.push((name, body.to_vec()));
        }
    }
    raw
}

fn conf_seeds() -> Vec<Vec<u8>> {
    seeds::lit(&[
        "# bootprint.toml\nrecord = true\nhz = 50\ninit = \"/sbin/init\"\nlogin_names = [\"agetty\", \"getty\"]\n\n[budget]\nkernel_s = 1.0\nearly_s = 1\ntext_login_s = 2_000\n",
        "[readahead]\nbudget_mb = 64 # comment \"x\"\nio_class = \"idle\"\n[modules]\nenabled = false\n",
    ])
}

/// Tokens of the TOML subset.
pub const CONF_TOKENS: &[&str] = &[
    "[budget]",
    "[readahead]",
    "[",
    "]",
    " = ",
    "\"",
    "[\"a\", \"b\"]",
    "true",
    "false",
    "1_000",
    "# ",
    "kernel_s",
    "early_s",
    "text_login_s",
    "graphical_login_s",
    "done_s",
    "record",
    "hz",
    "init",
    "readahead",
    "login_names",
];

fn archive_path() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("bootprint-fuzz-{}.tgz", std::process::id()))
}

fn run_archive(d: &[u8]) {
    let path = archive_path();
    let written = std::fs::File::create(&path).and_then(|mut f| f.write_all(d));
    if written.is_err() {
        return;
    }
    if let Ok(raw) = RawTrace::from_archive(&path) {
        if let Ok(t) = Trace::parse(raw) {
            let _ = t.ps_log();
        }
    }
}

/// A tar of files, gzip'd or not.
fn tar_of(files: &[(String, Vec<u8>)], gzip: bool) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, body) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        let _ = b.append_data(&mut h, name, &body[..]);
    }
    let data = b.into_inner().unwrap_or_default();
    if !gzip {
        return data;
    }
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let _ = e.write_all(&data);
    e.finish().unwrap_or_default()
}

fn archive_seeds() -> Vec<Vec<u8>> {
    // The small fixtures only: the test-bed traces unpack to megabytes.
    let mut v = Vec::new();
    for f in trace_fixtures().iter().take(2) {
        v.push(tar_of(f, true));
        v.push(tar_of(f, false));
    }
    v
}

/// A tar (gzip'd or not) of the mini trace's files, each kept, cut, or replaced by arbitrary
/// bytes, under plain or odd member names, some twice, with odd header fields.
fn archive_structured(u: &mut Unstructured) -> arbitrary::Result<Vec<u8>> {
    let base = trace_fixtures().first().cloned().unwrap_or_default();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, body) in &base {
        let body = match u.int_in_range(0..=3)? {
            0 => body.clone(),
            1 => body[..u.int_in_range(0..=body.len())?].to_vec(),
            2 => u.arbitrary::<Vec<u8>>()?,
            _ => continue,
        };
        let name = match u.int_in_range(0..=5)? {
            0 => format!("./{name}"),
            1 => format!("bootchart/{name}"),
            2 => format!("{}/{name}", "d".repeat(u.int_in_range(1..=300)?)),
            _ => name.clone(),
        };
        files.push((name, body));
        if u.ratio(1, 8)? {
            let again = files[files.len() - 1].clone();
            files.push(again);
        }
    }
    let gzip: bool = u.arbitrary()?;
    let mut data = tar_of(&files, false);
    // Odd header fields: overwrite bytes of the first header (size, type, name) and fix its
    // checksum so the tar reader gets past it.
    if data.len() >= 512 && u.ratio(1, 3)? {
        for _ in 0..u.int_in_range(1..=4)? {
            let at = u.int_in_range(0..=499)?;
            data[at] = u.arbitrary()?;
        }
        let sum: u32 = data[..512]
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    u32::from(b)
                }
            })
            .sum();
        let cks = format!("{sum:06o}\0 ");
        data[148..156].copy_from_slice(cks.as_bytes());
    }
    if !gzip {
        return Ok(data);
    }
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let _ = e.write_all(&data);
    Ok(e.finish().unwrap_or_default())
}
