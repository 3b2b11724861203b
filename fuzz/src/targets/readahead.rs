//! The readahead crate: the pack (raw, and with its length and checksum made right so the
//! fields are reached), the state file, mountinfo, sysfs and diskstats values, filemap
//! trace lines and the replay's statistics line.

use std::path::PathBuf;

use arbitrary::Unstructured;
use readahead::filemap::{self, PageMap};
use readahead::pack::{self, Entry, Header, Pack, Range, RootId};
use readahead::replay::ReplayStats;
use readahead::state::State;
use readahead::system;

use super::strict;
use crate::{seeds, Target};

/// The targets of this file.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "readahead_pack",
            about: "readahead::pack::check (the pack file as read at boot), to_json, encode",
            run: run_pack,
            seeds: pack_seeds,
            tokens: &["BPRAPACK", "/usr/lib/", "\u{1}\0\0\0"],
            structured: Some(pack_structured),
        },
        Target {
            name: "readahead_pack_sealed",
            about: "readahead::pack::check with the length and CRC-32 of the input made right first (reaches every field)",
            run: |d| {
                let mut d = d.to_vec();
                seal(&mut d);
                run_pack(&d);
            },
            seeds: pack_seeds,
            tokens: &["BPRAPACK", "/usr/lib/", "\u{1}\0\0\0"],
            structured: Some(pack_structured),
        },
        Target {
            name: "readahead_state",
            about: "readahead::state::State::parse (/var/lib/bootprint/readahead.state), judge, next_kind, to_text",
            run: |d| {
                if let Some(t) = strict(d) {
                    if let Ok(st) = State::parse(t, "readahead.state") {
                        let j = st.judge();
                        let _ = (j.ready(), j.ratio(), j.not_faster(), j.describe());
                        for every in [0, 1, 2, 10, u32::MAX] {
                            let _ = st.next_kind(every);
                        }
                        let _ = State::parse(&st.to_text(), "again");
                    }
                }
            },
            seeds: || seeds::lit(&[STATE]),
            tokens: &["version 1", "verdict auto", "verdict off ", "boot ", " learn ", " replay ", " control ", " - ", "1700000000"],
            structured: None,
        },
        Target {
            name: "readahead_mountinfo",
            about: "readahead::system::parse_mountinfo (/proc/self/mountinfo), root_mount, learn_marks",
            run: |d| {
                if let Some(t) = strict(d) {
                    if let Ok(m) = system::parse_mountinfo(t, "mountinfo") {
                        let _ = system::root_mount(&m);
                        let _ = system::learn_marks(&m);
                    }
                }
            },
            seeds: || seeds::lit(&[MOUNTINFO]),
            tokens: &[" - ", "\\040", "\\134", "\\", "254:1", "0:22", " / ", "ext4", "btrfs", "tmpfs", "rw,relatime", "shared:1"],
            structured: None,
        },
        Target {
            name: "readahead_sysfs",
            about: "readahead::system::{parse_rotational, read_bandwidth, bytes_read, ext_uuid, default_budget} (sysfs, /proc/diskstats, an ext superblock)",
            run: |d| {
                let _ = system::ext_uuid(d);
                if let Some(t) = strict(d) {
                    let _ = system::parse_rotational(t);
                    for (ma, mi) in [(254, 0), (8, 0), (0, 0)] {
                        let bw = system::read_bandwidth(t, ma, mi);
                        let _ = system::bytes_read(t, ma, mi);
                        let _ = system::default_budget(true, bw, 5.0);
                        let _ = system::default_budget(false, bw, f64::MAX);
                    }
                }
            },
            seeds: || {
                let mut v = seeds::lit(&["1\n", "0\n", DISKSTATS]);
                v.extend(super::trace_file_seeds("proc_diskstats.log"));
                v
            },
            tokens: &[" 254       0 vda ", " 8 0 sda ", "\u{53}\u{ef}"],
            structured: None,
        },
        Target {
            name: "readahead_filemap",
            about: "readahead::filemap::parse_line (tracefs trace_pipe lines), PageMap::add, ranges",
            run: run_filemap,
            seeds: || seeds::lit(&[FILEMAP]),
            tokens: &["mm_filemap_get_pages", "mm_filemap_map_pages", "mm_filemap_fault", "dev=", "ino=", "ofs=", "254:1", "-", "ffffffffffffffff"],
            structured: None,
        },
        Target {
            name: "readahead_replay_stats",
            about: "readahead::replay::ReplayStats::from_line (the replay's statistics file)",
            run: |d| {
                if let Some(t) = strict(d) {
                    if let Some(s) = ReplayStats::from_line(t.trim()) {
                        let _ = s.to_line();
                    }
                }
            },
            seeds: || {
                seeds::lit(&["bytes=1048576 ranges=12 files=5 skipped=1 skipped_missing=1 skipped_not_regular=0 skipped_changed=0 skipped_error=0 not_reached=0 duration_ns=123456 timed_out=0 threads=2 settled_ns=99 resident=4096"])
            },
            tokens: &["bytes=", "ranges=", "files=", "timed_out=", "threads=", "duration_ns="],
            structured: None,
        },
    ]
}

const STATE: &str = "# bootprint readahead state\nversion 1\nverdict auto\nboot 1700000000 learn 25.5 30.1\nboot 1700000100 replay 20.2 24.0\nboot 1700000200 control 25.1 -\nboot 1700000300 replay - -\nverdict off 1700000400 replay did not make boots faster\n";

const MOUNTINFO: &str = "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro\n23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n24 22 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n25 22 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,size=1000k\n40 22 254:2 / /home\\040dir rw,relatime shared:30 - btrfs /dev/vda2 rw\n";

const DISKSTATS: &str = " 254       0 vda 4585 1622 402770 2345 870 1167 31400 1227 0 3436 3573 0 0 0 0 0 0\n 254       1 vda1 4500 1622 400000 2300 870 1167 31400 1227 0 3400 3500 0 0 0 0\n";

const FILEMAP: &str = "  bootprint-boot-1 [000] .....   1.000000: mm_filemap_get_pages: dev=254:1 ino=1a2b ofs=0-8191\n  sh-2 [001] .....   1.1: mm_filemap_map_pages: dev=254:1 ino=1a2b ofs=8192-16383\n  sh-2 [001] .....   1.2: mm_filemap_fault: dev=254:1 ino=ff ofs=4096\n";

fn run_filemap(d: &[u8]) {
    let Some(t) = strict(d) else { return };
    let mut map = PageMap::default();
    let mut seen = Vec::new();
    for line in t.lines() {
        for page in [4096, 1, 65536] {
            if let Some(a) = filemap::parse_line(line, page) {
                map.add(&a);
                seen.push(a);
            }
        }
    }
    for a in seen.iter().take(64) {
        for size in [0, 4096, a.end, u64::MAX] {
            let _ = map.ranges(a.major, a.minor, a.ino, size, 4096);
        }
    }
}

fn run_pack(d: &[u8]) {
    if let Ok(p) = pack::check(d) {
        let _ = p.to_json();
        let _ = p.bytes();
        let again = pack::check(&p.encode()).expect("an encoded pack checks");
        assert_eq!(again, p, "a pack encodes to the same pack");
    }
}

/// Makes the body length and the checksum of a pack input right (when it is long enough to
/// hold a header), as a pack the learner wrote would have them.
fn seal(d: &mut [u8]) {
    if d.len() < 24 {
        return;
    }
    let body = (d.len() - 24) as u64;
    d[16..24].copy_from_slice(&body.to_le_bytes());
    let mut covered = d[..12].to_vec();
    covered.extend_from_slice(&d[16..]);
    let crc = pack::crc32(&covered);
    d[12..16].copy_from_slice(&crc.to_le_bytes());
}

fn sample_pack() -> Pack {
    Pack {
        header: Header {
            created_unix_s: 1_700_000_000,
            kernel_release: "6.1.0-13-amd64".into(),
            root: RootId {
                uuid: "0a1b2c3d-0000-4000-8000-000000000001".into(),
                fsid: 0x1234_5678_9abc_def0,
            },
            rotational: true,
            relocated: false,
            disk_bound: false,
            budget_bytes: 64 << 20,
            metadata: vec![Range {
                offset: 4096 * 1058,
                len: 16384,
            }],
        },
        entries: vec![
            Entry {
                path: PathBuf::from("/usr/lib/x86_64-linux-gnu/libc.so.6"),
                dev: 0xfe01,
                ino: 1234,
                size: 1_922_136,
                mtime_s: 1_690_000_000,
                mtime_ns: 5,
                ranges: vec![
                    Range {
                        offset: 0,
                        len: 8192,
                    },
                    Range {
                        offset: 65536,
                        len: 4096,
                    },
                ],
                first_access: 1,
            },
            Entry {
                path: PathBuf::from("/sbin/init"),
                dev: 0xfe01,
                ino: 99,
                size: 4096,
                mtime_s: -1,
                mtime_ns: 999_999_999,
                ranges: vec![Range {
                    offset: 0,
                    len: 4096,
                }],
                first_access: 0,
            },
        ],
    }
}

fn pack_seeds() -> Vec<Vec<u8>> {
    let empty = Pack {
        header: Header::default(),
        entries: Vec::new(),
    };
    vec![sample_pack().encode(), empty.encode()]
}

/// A pack of arbitrary fields (paths, sizes, ranges; most of them valid), encoded.
fn pack_structured(u: &mut Unstructured) -> arbitrary::Result<Vec<u8>> {
    let mut p = sample_pack();
    p.header.created_unix_s = u.arbitrary()?;
    p.header.kernel_release = u.arbitrary()?;
    p.header.root.uuid = u.arbitrary()?;
    p.header.root.fsid = u.arbitrary()?;
    p.header.rotational = u.arbitrary()?;
    p.header.budget_bytes = u.arbitrary()?;
    p.entries.clear();
    for _ in 0..u.int_in_range(0..=20)? {
        let size: u64 = if u.ratio(1, 4)? {
            u64::MAX - u.int_in_range(0..=4096)?
        } else {
            u.arbitrary()?
        };
        let mut ranges = Vec::new();
        let mut at = 0u64;
        for _ in 0..u.int_in_range(0..=8)? {
            let gap: u64 = u.int_in_range(0..=1 << 20)?;
            let len: u64 = if u.ratio(1, 8)? {
                u.arbitrary()?
            } else {
                u.int_in_range(1..=1 << 20)?
            };
            let Some(offset) = at.checked_add(gap) else {
                break;
            };
            if u.ratio(1, 16)? {
                // Out of order or empty: check must refuse it.
                ranges.push(Range {
                    offset: offset / 2,
                    len: len / 2,
                });
            } else {
                ranges.push(Range { offset, len });
            }
            at = offset.saturating_add(len);
        }
        let path: String = u.arbitrary()?;
        p.entries.push(Entry {
            path: PathBuf::from(if u.ratio(7, 8)? {
                format!("/{path}")
            } else {
                path
            }),
            dev: u.arbitrary()?,
            ino: u.arbitrary()?,
            size,
            mtime_s: u.arbitrary()?,
            mtime_ns: u.arbitrary()?,
            ranges,
            first_access: u.arbitrary()?,
        });
    }
    Ok(p.encode())
}
