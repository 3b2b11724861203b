//! The line layouts of the /proc files a trace keeps as the kernel wrote them: `/proc/stat`'s
//! aggregate `cpu` line and `/proc/diskstats` lines (Documentation/filesystems/proc.rst,
//! Documentation/admin-guide/iostats.rst). Parsed once, here: for the trace's own logs
//! (`bootchart::parse_proc_stat`, `parse_proc_diskstats`), for the recorder's and the levers'
//! live reads (`sample::procfs`, readahead's budget and yielding gate) and for the runner's
//! load and idle rule (`rc::run::ProcStat`). Text in, values out; no I/O. This is the lowest
//! crate every one of those depends on, so the parser lives here rather than in `sample`.

/// Cumulative CPU times from the `cpu` line of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// user
    pub user: u64,
    /// nice
    pub nice: u64,
    /// system
    pub system: u64,
    /// idle
    pub idle: u64,
    /// iowait
    pub iowait: u64,
    /// irq
    pub irq: u64,
    /// softirq
    pub softirq: u64,
    /// steal (0 on kernels without it)
    pub steal: u64,
}

impl CpuTimes {
    /// The times after the `cpu` label (`user nice system idle iowait irq softirq steal
    /// [guest guest_nice]`; guest is already inside user, so it is not read), and how many
    /// there were; those missing are 0. Err: the token that is not a number.
    pub fn parse_fields(rest: &str) -> Result<(CpuTimes, usize), String> {
        let mut v = [0u64; 8];
        let mut count = 0;
        for (i, tok) in rest.split_ascii_whitespace().enumerate() {
            let x = tok
                .parse::<u64>()
                .map_err(|_| format!("a number of clock ticks, found {tok:?}"))?;
            if i < 8 {
                v[i] = x;
            }
            count += 1;
        }
        let [user, nice, system, idle, iowait, irq, softirq, steal] = v;
        Ok((
            CpuTimes {
                user,
                nice,
                system,
                idle,
                iowait,
                irq,
                softirq,
                steal,
            },
            count,
        ))
    }

    /// The aggregate `cpu` line of the text of `/proc/stat`, with at least `min_fields`
    /// times; `None` when there is none (or it is not numbers).
    pub fn of_stat(stat: &str, min_fields: usize) -> Option<CpuTimes> {
        let rest = stat.lines().find_map(|l| l.strip_prefix("cpu "))?;
        match CpuTimes::parse_fields(rest) {
            Ok((c, n)) if n >= min_fields => Some(c),
            _ => None,
        }
    }

    /// All eight times (saturating: absurd counters do not overflow the sum).
    pub fn total(&self) -> u64 {
        [
            self.user,
            self.nice,
            self.system,
            self.idle,
            self.iowait,
            self.irq,
            self.softirq,
            self.steal,
        ]
        .iter()
        .fold(0u64, |a, &x| a.saturating_add(x))
    }

    /// The busy times: all but idle and iowait (of the saturated total, so never more).
    pub fn busy(&self) -> u64 {
        self.total()
            .saturating_sub(self.idle)
            .saturating_sub(self.iowait)
    }
}

/// The number of a `KEY N` line of the text of `/proc/stat` (`procs_running`,
/// `procs_blocked`); `None` when absent or not a number.
pub fn stat_value(stat: &str, key: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// Sectors written to whole disks, from the text of `/proc/diskstats` (or one block of
/// `proc_diskstats.log`): a device whose name extends another listed device's (`vda1` of
/// `vda`, `nvme0n1p2` of `nvme0n1`) is a partition, already counted in its disk; RAM disks,
/// loop, zram and device-mapper devices are left out (their writes land on a disk listed too).
pub fn disk_write_sectors(diskstats: &str) -> u64 {
    let lines: Vec<DiskStat> = DiskStat::all(diskstats)
        .filter(|d| !is_virtual_disk(d.name()))
        .collect();
    let names: Vec<&str> = lines.iter().map(DiskStat::name).collect();
    lines
        .iter()
        .filter(|d| !is_partition(d.name(), &names))
        .filter_map(DiskStat::write_sectors)
        .fold(0u64, u64::saturating_add)
}

/// A device is a partition when another listed device's name is a prefix of it followed by
/// a partition number (`vda1` of `vda`, `nvme0n1p2` of `nvme0n1`, `mmcblk0p1` of
/// `mmcblk0`): its time and bytes are already in its disk's.
pub fn is_partition(name: &str, all: &[&str]) -> bool {
    all.iter().any(|disk| {
        name.len() > disk.len() && name.starts_with(disk) && {
            let rest = &name[disk.len()..];
            let rest = rest.strip_prefix('p').unwrap_or(rest);
            !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())
        }
    })
}

/// RAM disks, loop, zram and device-mapper devices: not where a boot waits for storage, nor
/// where data ends up.
pub fn is_virtual_disk(name: &str) -> bool {
    ["ram", "loop", "zram", "dm-"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// The value in kB of a `Key:   N kB` line of the text of `/proc/meminfo`; `None` when absent
/// or not a number.
pub fn meminfo_kb(meminfo: &str, key: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_ascii_whitespace().next()?.parse().ok())
}

/// One line of `/proc/diskstats`, split into its fields: the device and its counters, each
/// read when asked (Documentation/admin-guide/iostats.rst; every line has 14 fields or more
/// since Linux 2.6.25, later kernels append discard and flush counters). A field that is not
/// a number is `None`, and only the fields a reader asks for decide whether it can use the
/// line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskStat<'a> {
    fields: [&'a str; 14],
}

impl<'a> DiskStat<'a> {
    /// Splits one line; `None` for a line of fewer than 14 fields (the short partition lines
    /// of kernels before 2.6.25, which bootchart2 also leaves out).
    pub fn split(line: &'a str) -> Option<DiskStat<'a>> {
        let mut fields = [""; 14];
        let mut count = 0;
        for tok in line.split_ascii_whitespace() {
            if count < 14 {
                fields[count] = tok;
            }
            count += 1;
        }
        (count >= 14).then_some(DiskStat { fields })
    }

    /// Every line of 14 fields or more of the text of `/proc/diskstats`.
    pub fn all(diskstats: &'a str) -> impl Iterator<Item = DiskStat<'a>> {
        diskstats.lines().filter_map(DiskStat::split)
    }

    /// The line of device `major:minor` in the text of `/proc/diskstats`.
    pub fn find(diskstats: &'a str, major: u32, minor: u32) -> Option<DiskStat<'a>> {
        DiskStat::all(diskstats).find(|d| d.major() == Some(major) && d.minor() == Some(minor))
    }

    /// Field `n` (1-based, as iostats.rst numbers them) as a number.
    pub fn field(&self, n: usize) -> Option<u64> {
        self.fields.get(n.checked_sub(1)?)?.parse().ok()
    }

    /// Field `n` as a number, or what was expected there and what was found.
    pub fn field_or_err(&self, n: usize) -> Result<u64, String> {
        self.field(n).ok_or_else(|| {
            let found = self.fields.get(n.wrapping_sub(1)).copied().unwrap_or("");
            format!("a number in field {n}, found {found:?}")
        })
    }

    /// Major device number (field 1).
    pub fn major(&self) -> Option<u32> {
        self.fields[0].parse().ok()
    }

    /// Minor device number (field 2).
    pub fn minor(&self) -> Option<u32> {
        self.fields[1].parse().ok()
    }

    /// Device name, e.g. `sda` or `vda1` (field 3).
    pub fn name(&self) -> &'a str {
        self.fields[2]
    }

    /// Sectors read (field 6; 512-byte units whatever the device's sector size).
    pub fn read_sectors(&self) -> Option<u64> {
        self.field(6)
    }

    /// Milliseconds spent reading (field 7).
    pub fn read_ms(&self) -> Option<u64> {
        self.field(7)
    }

    /// Sectors written (field 10).
    pub fn write_sectors(&self) -> Option<u64> {
        self.field(10)
    }

    /// I/Os in progress (field 12).
    pub fn in_flight(&self) -> Option<u64> {
        self.field(12)
    }

    /// Milliseconds with I/O in progress (`io_ticks`, field 13).
    pub fn io_ms(&self) -> Option<u64> {
        self.field(13)
    }

    /// Bytes read and written (sectors read and written times 512, saturating).
    pub fn bytes(&self) -> Option<u64> {
        Some(
            self.read_sectors()?
                .saturating_add(self.write_sectors()?)
                .saturating_mul(512),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_line() {
        let stat = "cpu  10 2 5 4 5 1 1 8 3 0\ncpu0 1 1 1 1\nintr 1 2\n";
        let c = CpuTimes::of_stat(stat, 4).unwrap();
        assert_eq!((c.user, c.idle, c.iowait, c.steal), (10, 4, 5, 8));
        assert_eq!((c.busy(), c.total()), (27, 36));
        assert_eq!(CpuTimes::of_stat(stat, 11), None, "ten times only");
        assert_eq!(
            CpuTimes::of_stat("cpu0 1 2 3 4\n", 1),
            None,
            "no aggregate line"
        );
        assert!(CpuTimes::parse_fields("1 x 3")
            .unwrap_err()
            .contains("\"x\""));
        let huge = CpuTimes::of_stat("cpu  18446744073709551615 1 1 5 0 0 0 0\n", 4).unwrap();
        assert_eq!((huge.busy(), huge.total()), (u64::MAX - 5, u64::MAX));
        let stat = "cpu 1 2 3 4\nprocs_running 3\nprocs_blocked x\nprocs_runningX 9\n";
        assert_eq!(stat_value(stat, "procs_running"), Some(3));
        assert_eq!(stat_value(stat, "procs_blocked"), None);
        assert_eq!(stat_value(stat, "processes"), None);
    }

    #[test]
    fn diskstats_lines() {
        let text = "   8       0 sda 10 9 152 176 0 0 40 0 1 124 180 0 0 0 0\n   8       1 sda1 1 2 3 4\n x 16 vdb 1 2 3 4 5 6 7 8 9 10 11\n";
        let d: Vec<DiskStat> = DiskStat::all(text).collect();
        assert_eq!(d.len(), 2, "the short line is left out");
        let sda = &d[0];
        assert_eq!(
            (sda.major(), sda.minor(), sda.name()),
            (Some(8), Some(0), "sda")
        );
        assert_eq!(
            (sda.read_sectors(), sda.read_ms(), sda.write_sectors()),
            (Some(152), Some(176), Some(40))
        );
        assert_eq!(
            (sda.in_flight(), sda.io_ms(), sda.bytes()),
            (Some(1), Some(124), Some(192 * 512))
        );
        assert_eq!(DiskStat::find(text, 8, 0).map(|d| d.name()), Some("sda"));
        assert_eq!(DiskStat::find(text, 8, 1), None);
        // A field that is not a number is missing for whoever reads it, and no one else.
        let vdb = &d[1];
        assert_eq!((vdb.major(), vdb.read_sectors()), (None, Some(3)));
        assert_eq!(
            vdb.field_or_err(1).unwrap_err(),
            "a number in field 1, found \"x\""
        );
        assert_eq!(vdb.field(15), None);
        assert!(vdb.field_or_err(0).is_err());
    }

    #[test]
    fn whole_disks_writes_and_meminfo_values() {
        let line = |name: &str, written: u64| {
            format!(" 254 0 {name} 1 0 8 1 2 0 {written} 3 0 4 5 0 0 0 0\n")
        };
        let text = [
            line("vda", 100),
            line("vda1", 90),
            line("nvme0n1", 40),
            line("nvme0n1p2", 40),
            line("dm-0", 500),
            line("loop0", 7),
            line("sdb", 1),
        ]
        .concat();
        assert_eq!(
            disk_write_sectors(&text),
            141,
            "disks only: partitions, dm and loop left out"
        );
        assert_eq!(disk_write_sectors(""), 0);
        let all = [
            "vda",
            "vda1",
            "nvme0n1",
            "nvme0n1p2",
            "mmcblk0",
            "mmcblk0p1",
            "sdb",
        ];
        assert!(is_partition("vda1", &all) && is_partition("nvme0n1p2", &all));
        assert!(is_partition("mmcblk0p1", &all));
        assert!(!is_partition("vda", &all) && !is_partition("nvme0n1", &all));
        assert!(!is_partition("sdb", &all));
        let mem = "MemTotal:  990292 kB\nDirty:       112 kB\nWriteback:     0 kB\nBad: x kB\n";
        assert_eq!(meminfo_kb(mem, "Dirty"), Some(112));
        assert_eq!(meminfo_kb(mem, "Writeback"), Some(0));
        assert_eq!(meminfo_kb(mem, "Bad"), None);
        assert_eq!(meminfo_kb(mem, "Cached"), None);
        assert_eq!(meminfo_kb(mem, "Mem"), None, "a whole key, not a prefix");
    }
}
