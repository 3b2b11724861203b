//! The sample crate: the /proc files the recorder reads at every sample (another program,
//! the kernel, writes them; a process names itself, so `comm` is anyone's text).

use sample::procfs;

use super::trace_file_seeds;
use crate::{seeds, Target};

/// The targets of this file.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "sample_stat_line",
            about: "sample::procfs::parse_stat_line (/proc/PID/stat)",
            run: |d| {
                let _ = procfs::parse_stat_line(d);
            },
            seeds: || {
                let mut v = seeds::lit(&[
                    "1 (init) S 0 1 1 0 -1 4194560 1000 2000 10 20 30 40 50 60 20 0 1 0 5 170000000 3000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 7 0 0\n",
                    "4242 (a (weird) name) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n",
                    "7 ) ( 1 2\n",
                ]);
                for ps in trace_file_seeds("proc_ps.log") {
                    v.extend(ps.split(|&b| b == b'\n').filter(|l| l.contains(&b'(')).take(3).map(<[u8]>::to_vec));
                }
                v
            },
            tokens: &["(", ")", " (", ") ", " S ", " R ", "-1", "18446744073709551615"],
            structured: None,
        },
        Target {
            name: "sample_proc_files",
            about: "sample::procfs::{filter_stat, filter_diskstats, filter_meminfo, cpu_totals, forks, disk_counters, parse_read_bytes, split_cmdline}",
            run: |d| {
                let _ = procfs::filter_stat(d);
                let _ = procfs::filter_diskstats(d);
                let _ = procfs::filter_meminfo(d);
                let _ = procfs::cpu_totals(d);
                let _ = procfs::forks(d);
                let _ = procfs::disk_counters(d);
                let _ = procfs::parse_read_bytes(&String::from_utf8_lossy(d));
                let _ = procfs::split_cmdline(d);
            },
            seeds: || {
                let mut v = seeds::lit(&[
                    "cpu  10 0 20 300 4 0 1 0 0 0\ncpu0 5 0 10 150 2 0 0 0 0 0\nintr 1\nctxt 2\nbtime 3\nprocesses 150\nprocs_running 2\nprocs_blocked 1\n",
                    " 254       0 vda 4585 1622 402770 2345 870 1167 31400 1227 0 3436 3573 0 0 0 0 0 0\n   8       1 sda1 1 2 3 4 5 6 7 8 9 10 11\n",
                    "MemTotal:        2000000 kB\nMemFree:         1000000 kB\nMemAvailable:    1500000 kB\nBuffers: 1 kB\nCached: 2 kB\nDirty: 0 kB\n",
                    "/sbin/init\0splash\0\0",
                ]);
                v.extend(trace_file_seeds("proc_stat.log"));
                v
            },
            tokens: &["cpu ", "cpu0 ", "processes ", "procs_running ", "procs_blocked ", "MemTotal:", " kB", "\0", " vda ", " sda ", " loop0 ", " nvme0n1p1 ", " mmcblk0p1 "],
            structured: None,
        },
    ]
}
