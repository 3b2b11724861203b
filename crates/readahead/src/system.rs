//! Facts about the running system that learn and replay need: which filesystems to watch
//! (from mountinfo), the root device, its `read_ahead_kb` and `rotational` files, its
//! identity, its bandwidth. Parsing is pure (takes text or bytes); every path is in
//! [`Paths`] so tests use fake trees.

use std::fmt;
use std::path::{Path, PathBuf};

use trace::procfs::DiskStat;

use crate::inode_table;
use crate::pack::RootId;

/// The kernel paths readahead reads, each with its usual default.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `/proc` (for `self/mountinfo`, `self/fd`, `diskstats`).
    pub proc: PathBuf,
    /// `/sys` (for `dev/block/MAJ:MIN/...`).
    pub sys: PathBuf,
    /// `/dev/disk/by-uuid`.
    pub by_uuid: PathBuf,
    /// The root directory whose filesystem is identified.
    pub root: PathBuf,
}

impl Default for Paths {
    fn default() -> Paths {
        Paths {
            proc: "/proc".into(),
            sys: "/sys".into(),
            by_uuid: "/dev/disk/by-uuid".into(),
            root: "/".into(),
        }
    }
}

/// One line of `/proc/PID/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Device major number (`st_dev` of files on it).
    pub major: u32,
    /// Device minor number.
    pub minor: u32,
    /// Where it is mounted, octal escapes decoded.
    pub mount_point: PathBuf,
    /// Filesystem type (`ext4`, `tmpfs`, `fuse.sshfs`, ...).
    pub fstype: String,
    /// Mount source (`/dev/vda1`, `tmpfs`, ...).
    pub source: String,
}

/// A mountinfo line that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The file the text came from.
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// What was expected.
    pub expected: &'static str,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: line {}: expected {}",
            self.file, self.line, self.expected
        )
    }
}

impl std::error::Error for ParseError {}

/// Parses the text of `/proc/PID/mountinfo` (`file` names it in errors).
pub fn parse_mountinfo(text: &str, file: &str) -> Result<Vec<Mount>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |expected| ParseError {
            file: file.to_string(),
            line: i + 1,
            expected,
        };
        let f: Vec<&str> = line.split(' ').collect();
        let sep = f
            .iter()
            .position(|&x| x == "-")
            .ok_or_else(|| err("a ' - ' separator before the filesystem type"))?;
        if sep < 6 || f.len() < sep + 3 {
            return Err(err("10 or more fields: id parent major:minor root mount-point options ... - type source options"));
        }
        let (maj, min) = f[2]
            .split_once(':')
            .ok_or_else(|| err("major:minor in field 3"))?;
        let major = maj.parse().map_err(|_| err("a numeric major in field 3"))?;
        let minor = min.parse().map_err(|_| err("a numeric minor in field 3"))?;
        out.push(Mount {
            major,
            minor,
            mount_point: sample::procfs::unescape_mount_field(f[4]),
            fstype: f[sep + 1].to_string(),
            source: f[sep + 2].to_string(),
        });
    }
    Ok(out)
}

/// Filesystem types never watched: virtual, memory-backed, network, FUSE and overlay (whose
/// upper directory is a tmpfs or another disk filesystem that is watched on its own).
fn is_excluded_fstype(t: &str) -> bool {
    const NO: &[&str] = &[
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "tmpfs",
        "ramfs",
        "cgroup",
        "cgroup2",
        "securityfs",
        "debugfs",
        "tracefs",
        "pstore",
        "bpf",
        "configfs",
        "fusectl",
        "mqueue",
        "hugetlbfs",
        "efivarfs",
        "binfmt_misc",
        "autofs",
        "rpc_pipefs",
        "nfsd",
        "overlay",
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "9p",
        "virtiofs",
        "squashfs",
        "iso9660",
        "nsfs",
        "selinuxfs",
        "zonefs",
    ];
    NO.contains(&t) || t == "fuse" || t.starts_with("fuse.") || t == "fuseblk"
}

/// The mount points to put fanotify marks on: local disk filesystems only, one per
/// filesystem (a filesystem mounted twice, or bind-mounted, is marked once), in mountinfo
/// order. A filesystem counts as on a local disk when its type is not excluded and it sits
/// on a real block device (major number not 0), or it is btrfs (whose st_dev is anonymous).
pub fn learn_marks(mounts: &[Mount]) -> Vec<PathBuf> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for m in mounts {
        let disk = !is_excluded_fstype(&m.fstype) && (m.major != 0 || m.fstype == "btrfs");
        if disk && !seen.contains(&(m.major, m.minor)) {
            seen.push((m.major, m.minor));
            out.push(m.mount_point.clone());
        }
    }
    out
}

/// The mount of `/` (the last one: a later mount hides an earlier).
pub fn root_mount(mounts: &[Mount]) -> Option<&Mount> {
    mounts
        .iter()
        .rev()
        .find(|m| m.mount_point == Path::new("/"))
}

/// `/sys/dev/block/MAJ:MIN/queue/<file>` of the disk holding the device: a partition has no
/// queue of its own, so its parent's is used.
pub fn queue_file(sys: &Path, major: u32, minor: u32, file: &str) -> PathBuf {
    let dev = sys.join(format!("dev/block/{major}:{minor}"));
    if dev.join("partition").exists() {
        dev.join("../queue").join(file)
    } else {
        dev.join("queue").join(file)
    }
}

/// The request size used when the device's is unknown (no sysfs, a device without a queue
/// such as a btrfs volume's anonymous number): the kernel's default `read_ahead_kb`.
pub const DEFAULT_REQUEST: u64 = 128 * 1024;

/// The largest piece one readahead(2) call reads on the device, from the texts of its
/// `queue/read_ahead_kb` and `queue/max_sectors_kb`: the kernel cuts a call to the larger
/// of the file's readahead window and the device's largest request (mm/readahead.c,
/// `force_page_cache_ra`: `max(bdi->io_pages, ra->ra_pages)`). [`DEFAULT_REQUEST`] when
/// neither is readable; never below one page's 4 KiB.
pub fn request_bytes(read_ahead_kb: Option<&str>, max_sectors_kb: Option<&str>) -> u64 {
    let kb = |t: Option<&str>| t.and_then(|t| t.trim().parse::<u64>().ok());
    match (kb(read_ahead_kb), kb(max_sectors_kb)) {
        (None, None) => DEFAULT_REQUEST,
        (a, b) => a
            .unwrap_or(0)
            .max(b.unwrap_or(0))
            .saturating_mul(1024)
            .max(4096),
    }
}

/// [`request_bytes`] of device `major:minor` read from sysfs under `sys` (a partition's
/// from its disk's queue).
pub fn device_request_bytes(sys: &Path, major: u32, minor: u32) -> u64 {
    let read = |f: &str| std::fs::read_to_string(queue_file(sys, major, minor, f)).ok();
    request_bytes(
        read("read_ahead_kb").as_deref(),
        read("max_sectors_kb").as_deref(),
    )
}

/// The block device `major:minor` opened read-only, found by the name the kernel gives it
/// (`DEVNAME=` in `SYS/dev/block/MAJ:MIN/uevent`) under `dev` (devtmpfs, which the boot has
/// before udev runs); `None` unless the node there is that very device.
pub fn open_block_device(sys: &Path, dev: &Path, major: u32, minor: u32) -> Option<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
    let uevent =
        std::fs::read_to_string(sys.join(format!("dev/block/{major}:{minor}/uevent"))).ok()?;
    let name = uevent.lines().find_map(|l| l.strip_prefix("DEVNAME="))?;
    // A name from sysfs, but never a way out of `dev`.
    if name.is_empty() || name.split('/').any(|c| c == ".." || c.is_empty()) {
        return None;
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(dev.join(name))
        .ok()?;
    let md = f.metadata().ok()?;
    (md.file_type().is_block_device() && md.rdev() == libc::makedev(major, minor)).then_some(f)
}

/// Whether the device rotates, from the text of `queue/rotational` (`None` when unreadable).
pub fn parse_rotational(text: &str) -> Option<bool> {
    match text.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

/// Read bandwidth of device `major:minor` in bytes per second since boot, from the text of
/// `/proc/diskstats` (`trace::procfs::DiskStat`): sectors read over the time spent reading.
/// `None` when the device is absent or has read too little to tell (under 4 MiB or 100 ms).
pub fn read_bandwidth(diskstats: &str, major: u32, minor: u32) -> Option<u64> {
    let d = DiskStat::find(diskstats, major, minor)?;
    // Saturating: the counters are any number a (corrupt) diskstats text holds.
    let bytes = d.read_sectors()?.saturating_mul(512);
    let ms = d.read_ms()?;
    if bytes < 4 << 20 || ms < 100 {
        return None;
    }
    Some(bytes.saturating_mul(1000) / ms)
}

/// The share of the time since boot device `major:minor` was busy (`/proc/diskstats` field
/// 13, milliseconds doing I/O, over the first figure of `/proc/uptime`); `None` when either
/// text lacks it or less than a second has passed.
pub fn busy_share(diskstats: &str, uptime: &str, major: u32, minor: u32) -> Option<f64> {
    let busy_ms = DiskStat::find(diskstats, major, minor)?.io_ms()? as f64;
    let up_s: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    (up_s >= 1.0).then(|| (busy_ms / (up_s * 1000.0)).min(1.0))
}

/// Bytes read so far from device `major:minor` (sectors read times 512), from the text of
/// `/proc/diskstats`; `None` when the device is not listed.
pub fn bytes_read(diskstats: &str, major: u32, minor: u32) -> Option<u64> {
    DiskStat::find(diskstats, major, minor)?
        .read_sectors()
        .map(|s| s.saturating_mul(512))
}

/// The default byte budget: what the device reads in `target_s` seconds, and never more
/// than 512 MiB (a pack bigger than that costs more memory than it saves time). The rate is
/// the larger of the measured one and a floor of 50 MB/s (rotating) or 200 MB/s (solid
/// state): the boot's own reads, which are what `/proc/diskstats` measures, are small and
/// scattered, so their rate says little about a sorted replay (on the test bed's aged `hdd`
/// profile the learning boot measured about 1 MB/s on a drive limited to 80 MB/s).
pub fn default_budget(rotational: bool, bandwidth: Option<u64>, target_s: f64) -> u64 {
    let floor = if rotational { 50_000_000 } else { 200_000_000 };
    let bw = bandwidth.unwrap_or(0).max(floor);
    ((bw as f64 * target_s) as u64).min(512 << 20)
}

/// The UUID of an ext2/3/4 filesystem from its superblock: `bytes` starts at byte 1024 of
/// the device (magic 0xEF53 at 0x38, UUID at 0x68). `None` for anything else.
pub fn ext_uuid(superblock: &[u8]) -> Option<String> {
    if superblock.len() < 0x78 || superblock[0x38..0x3a] != inode_table::EXT4_MAGIC.to_le_bytes() {
        return None;
    }
    let u = &superblock[0x68..0x78];
    let hex: String = u.iter().map(|b| format!("{b:02x}")).collect();
    Some(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

/// The identity of the root filesystem: its UUID from `by_uuid` (a link whose target is the
/// root device), else from an ext superblock of the mount source, and `statfs` `f_fsid`.
/// Unknown parts stay empty / 0.
pub fn root_id(paths: &Paths, root: Option<&Mount>) -> RootId {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let fsid = sys::statfs(&paths.root).map_or(0, |s| s.fsid);
    let mut uuid = String::new();
    if let Some(m) = root {
        let want = libc::makedev(m.major, m.minor);
        if let Ok(dir) = std::fs::read_dir(&paths.by_uuid) {
            for e in dir.flatten() {
                let is_it = std::fs::metadata(e.path())
                    .is_ok_and(|md| md.file_type().is_block_device() && md.rdev() == want);
                if is_it {
                    uuid = e.file_name().to_string_lossy().into_owned();
                    break;
                }
            }
        }
        if uuid.is_empty() && m.fstype.starts_with("ext") && m.source.starts_with('/') {
            uuid = read_ext_superblock(Path::new(&m.source)).unwrap_or_default();
        }
    }
    RootId { uuid, fsid }
}

fn read_ext_superblock(dev: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(dev).ok()?;
    f.seek(SeekFrom::Start(inode_table::SUPERBLOCK_AT)).ok()?;
    let mut buf = [0u8; 0x78];
    f.read_exact(&mut buf).ok()?;
    ext_uuid(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
23 27 0:22 / /sys rw,relatime - sysfs sysfs rw
24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334464k,mode=755
27 1 254:1 / / rw,relatime - ext4 /dev/vda1 rw,discard
28 27 254:2 / /home rw,relatime shared:5 - xfs /dev/vda2 rw
29 27 254:1 /srv /mnt/bind\\040dir rw,relatime - ext4 /dev/vda1 rw
30 27 0:45 / /run rw,nosuid - tmpfs tmpfs rw,mode=755
31 27 0:46 / /data rw - btrfs /dev/sdb rw
32 27 0:47 / /merged rw - overlay overlay rw,lowerdir=/a,upperdir=/b
33 27 0:48 / /home/u/remote rw - fuse.sshfs host:/ rw
";

    #[test]
    fn marks_only_local_disk_filesystems_once_each() {
        let m = parse_mountinfo(MOUNTINFO, "/proc/self/mountinfo").unwrap();
        assert_eq!(m.len(), 10);
        assert_eq!(m[5].mount_point, PathBuf::from("/mnt/bind dir"));
        let marks = learn_marks(&m);
        assert_eq!(
            marks,
            vec![
                PathBuf::from("/"),
                PathBuf::from("/home"),
                PathBuf::from("/data")
            ]
        );
        let r = root_mount(&m).unwrap();
        assert_eq!((r.major, r.minor, r.source.as_str()), (254, 1, "/dev/vda1"));
    }

    #[test]
    fn bad_mountinfo_names_file_and_line() {
        let e = parse_mountinfo(
            "22 27 0:21 / /proc rw - proc proc rw\n22 27 x / /a rw - ext4 /dev/a rw\n",
            "mi",
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(e.to_string(), "mi: line 2: expected major:minor in field 3");
        let e = parse_mountinfo("1 2 3:4 / /a rw ext4 /dev/a rw\n", "mi").unwrap_err();
        assert!(e.to_string().contains("separator"), "{e}");
    }

    #[test]
    fn queue_file_of_a_partition_is_its_disk_queue() {
        let tmp = tempfile::tempdir().unwrap();
        let sys = tmp.path();
        std::fs::create_dir_all(sys.join("dev/block/8:1")).unwrap();
        std::fs::write(sys.join("dev/block/8:1/partition"), "1\n").unwrap();
        assert_eq!(
            queue_file(sys, 8, 1, "read_ahead_kb"),
            sys.join("dev/block/8:1/../queue/read_ahead_kb")
        );
        assert_eq!(
            queue_file(sys, 8, 0, "rotational"),
            sys.join("dev/block/8:0/queue/rotational")
        );
    }

    #[test]
    fn busy_share_of_the_boot() {
        // The test bed's lines: 45.6 s busy in a 48 s boot; and 2.04 s in 7.3 s.
        let ds = "   8       0 sda 1000 0 204800 1000 0 0 0 0 0 0 0\n 254       0 vda 277587 25772 10144786 200779 111034 50159 49157344 572932 0 45600 813080\n";
        let share = busy_share(ds, "48.00 90.10\n", 254, 0).unwrap();
        assert!((share - 0.95).abs() < 1e-9, "{share}");
        let ds2 = " 254       0 vda 199 418 13562 2679 1 0 8 874 1 2040 4419 0 0 0 0 1 864\n";
        let share = busy_share(ds2, "7.30 1.0", 254, 0).unwrap();
        assert!((share - 2.04 / 7.3).abs() < 1e-9, "{share}");
        // Never above 1 (the counters run from before uptime's start on some kernels).
        assert_eq!(busy_share(ds, "10.0 1.0", 254, 0), Some(1.0));
        assert_eq!(busy_share(ds, "0.5 1.0", 254, 0), None);
        assert_eq!(busy_share(ds, "", 254, 0), None);
        assert_eq!(busy_share(ds, "48.0 1.0", 9, 9), None);
        // An old line with fewer fields.
        assert_eq!(busy_share(" 8 0 sda 1 0 8 1 0 0 0\n", "48.0", 8, 0), None);
    }

    #[test]
    fn bandwidth_and_budget() {
        let ds = "   8       0 sda 1000 0 204800 1000 0 0 0 0 0 0 0\n 254       0 vda 277587 25772 10144786 200779 111034 50159 49157344 572932 0 64936 813080\n";
        // 100 MiB in 1 s.
        assert_eq!(read_bandwidth(ds, 8, 0), Some(104_857_600));
        assert_eq!(
            read_bandwidth(ds, 254, 0),
            Some(10144786 * 512 * 1000 / 200779)
        );
        assert_eq!(read_bandwidth(ds, 9, 9), None);
        assert_eq!(
            read_bandwidth(" 8 0 sda 1 0 8 1 0 0 0 0 0 0 0\n", 8, 0),
            None
        );
        assert_eq!(default_budget(true, None, 2.0), 100_000_000);
        assert_eq!(default_budget(false, Some(300_000_000), 3.0), 512 << 20);
        assert_eq!(default_budget(true, Some(100_000_000), 3.0), 300_000_000);
        assert_eq!(
            default_budget(true, Some(1_000_000), 2.0),
            100_000_000,
            "a slow measured rate does not shrink the budget below the floor"
        );
        assert_eq!(default_budget(false, Some(10_000_000_000), 3.0), 512 << 20);
        assert_eq!(parse_rotational("1\n"), Some(true));
        assert_eq!(parse_rotational("0"), Some(false));
        assert_eq!(parse_rotational(""), None);
    }

    #[test]
    fn ext_superblock_uuid() {
        let mut sb = vec![0u8; 1024];
        sb[0x38] = 0x53;
        sb[0x39] = 0xEF;
        for i in 0..16 {
            sb[0x68 + i] = (i as u8) * 17;
        }
        assert_eq!(
            ext_uuid(&sb).unwrap(),
            "00112233-4455-6677-8899-aabbccddeeff"
        );
        sb[0x38] = 0;
        assert_eq!(ext_uuid(&sb), None);
    }

    #[test]
    fn bytes_read_of_one_device() {
        let ds = "   8       0 sda 100 0 2048 10 0 0 0 0 0 0 0\n 254       0 vda 7 1 4096 3 0 0 0 0 0 0 0\n";
        assert_eq!(bytes_read(ds, 254, 0), Some(4096 * 512));
        assert_eq!(bytes_read(ds, 8, 0), Some(2048 * 512));
        assert_eq!(bytes_read(ds, 8, 1), None);
        assert_eq!(bytes_read("8 0 sda x\n", 8, 0), None);
    }

    #[test]
    fn request_size_is_the_larger_of_the_two_knobs() {
        assert_eq!(request_bytes(Some("128\n"), Some("1280\n")), 1280 * 1024);
        assert_eq!(request_bytes(Some("8192\n"), Some("4096\n")), 8192 * 1024);
        assert_eq!(request_bytes(None, Some("512")), 512 * 1024);
        assert_eq!(request_bytes(None, None), DEFAULT_REQUEST);
        assert_eq!(request_bytes(Some("x"), Some("")), DEFAULT_REQUEST);
        // read_ahead_kb 0 (readahead off) and a tiny max_sectors_kb still read a page.
        assert_eq!(request_bytes(Some("0"), Some("1")), 4096);
    }

    #[test]
    fn request_size_of_a_partition_comes_from_its_disk() {
        let t = tempfile::tempdir().unwrap();
        let disk = t.path().join("devices/vda");
        std::fs::create_dir_all(disk.join("queue")).unwrap();
        std::fs::create_dir_all(disk.join("vda1")).unwrap();
        std::fs::write(disk.join("vda1/partition"), "1\n").unwrap();
        std::fs::write(disk.join("queue/read_ahead_kb"), "128\n").unwrap();
        std::fs::write(disk.join("queue/max_sectors_kb"), "1280\n").unwrap();
        std::fs::create_dir_all(t.path().join("dev/block")).unwrap();
        std::os::unix::fs::symlink(disk.join("vda1"), t.path().join("dev/block/254:1")).unwrap();
        assert_eq!(device_request_bytes(t.path(), 254, 1), 1280 * 1024);
        // No such device: the default.
        assert_eq!(device_request_bytes(t.path(), 0, 42), DEFAULT_REQUEST);
    }
}
