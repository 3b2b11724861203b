//! Inputs the fuzz runner (`fuzz/`, docs/fuzzing.md) found, each shrunk by hand to what
//! triggers it: kernel-written texts parsed at boot must take any number and escape.

use std::path::Path;

use readahead::{filemap, system};

/// fuzz target readahead_mountinfo: `\777` is three octal digits but not a byte; it
/// overflowed the u8 it was computed in.
#[test]
fn fuzz_readahead_mountinfo_octal_escape_beyond_a_byte() {
    let m = system::parse_mountinfo(
        "22 1 254:1 / /a\\777b\\040c rw - ext4 /dev/vda1 rw\n",
        "mountinfo",
    )
    .unwrap();
    assert_eq!(m[0].mount_point, Path::new("/a\\777b c"));
}

/// fuzz target readahead_sysfs: a sector count times 512 (and bytes times 1000) did not fit
/// a u64.
#[test]
fn fuzz_readahead_diskstats_huge_sector_counts() {
    let ds = " 254 0 vda 1 0 36028797018963968 1000 0 0 0 0 0 0 0\n";
    assert_eq!(system::read_bandwidth(ds, 254, 0), Some(u64::MAX / 1000));
    assert_eq!(system::bytes_read(ds, 254, 0), Some(u64::MAX));
}

/// fuzz target readahead_filemap: a fault at the last page offset plus the page size
/// overflowed.
#[test]
fn fuzz_readahead_filemap_fault_at_the_end_of_the_offsets() {
    let line = "x-1 [000] ..... 1.0: mm_filemap_fault: dev=254:1 ino=1 ofs=18446744073709551615";
    assert_eq!(filemap::parse_line(line, 4096), None);
}

/// fuzz target readahead_pack_sealed (the 1 M-input run): range lengths whose sum does not
/// fit a u64 overflowed `Entry::bytes` and `Pack::bytes` (the figures of the replay start).
#[test]
fn fuzz_readahead_pack_bytes_saturate() {
    use readahead::pack::{Entry, Range};
    let e = Entry {
        path: "/x".into(),
        dev: 0,
        ino: 1,
        size: u64::MAX,
        mtime_s: 0,
        mtime_ns: 0,
        ranges: vec![
            Range {
                offset: 0,
                len: u64::MAX / 2 + 1,
            },
            Range {
                offset: u64::MAX / 2 + 1,
                len: u64::MAX / 2,
            },
            Range { offset: 1, len: 5 },
        ],
        first_access: 0,
    };
    assert_eq!(e.bytes(), u64::MAX);
}
