//! udev beside the path to the login (issue 15, part 2).
//!
//! On Debian, runlevel S runs `udev` (start systemd-udevd, replay every device's add
//! event, wait until all are handled) alone, as an `<interactive>` script of insserv.conf,
//! and `mountdevsubfs.sh`, which heads the chain to the login (checkroot, mountall, ...),
//! waits for it (`Should-Start: udev`). On the test bed that is 4 s of the chain. The devices
//! the login path touches, though, are already there: the kernel's devtmpfs makes every
//! node under its kernel name, and the modules are loaded by then (the initramfs, the
//! module loader). So where [`off_path`] holds, the runner lets udev run **beside** the
//! path: not alone (Debian 12's udev script reads the console only when someone runs it by
//! hand, never at boot), and `mountdevsubfs.sh` (Debian 12's, which mounts only /dev/shm
//! and /dev/pts, file systems no device backs) does not wait for it. Every other script
//! that waits for udev still does (procps's sysctl settings name interfaces udev renames;
//! cryptdisks needs its device links), and runlevel S still ends only when udev has.

use std::path::Path;

use crate::builtin::{sha256, Builtin, Known, Release, KNOWN_RELEASES};
use crate::{Error, ErrorKind};

/// `/etc/init.d/udev`: Debian 12's (udev 252, as on the test image) and Debian 13's
/// (initscripts 3.14-4 ships it; it adds /usr to PATH and stops early in a chroot, neither
/// of which touches the console).
pub const UDEV: Known = Known {
    path: "etc/init.d/udev",
    versions: &[
        (
            Release::Debian12,
            "1b945f67c50a32331ad6f9ba49eac8205fe0866fa850dc1fc645d240bd834844",
        ),
        (
            Release::Debian13,
            "f4151659085cf6bcc92df9df3b08d17de947907787da773e6f116b11a8aad31a",
        ),
    ],
};

/// The script that no longer waits for udev.
pub const FREED: &str = "mountdevsubfs.sh";

/// SHA-256 of Debian 12's `/etc/init.d/bootmisc.sh` (initscripts 3.06-4; the same bytes in 13).
pub const BOOTMISC_SHA256: &str =
    "717cf2aad18a2cc132f70b87e8cb5e6fc10700c2169a48aba25ac1de9adf81a8";
/// SHA-256 of Debian 12's `/etc/init.d/procps` (procps 4.0.2; the same bytes in 13).
pub const PROCPS_SHA256: &str = "82ceae8662bf1ce590db859943aa6150b1747ae1229dd680df858ef93f156083";

/// Where `sysctl --system` (procps 4) reads its settings.
const SYSCTL_DIRS: &[&str] = &[
    "etc/sysctl.d",
    "run/sysctl.d",
    "usr/local/lib/sysctl.d",
    "usr/lib/sysctl.d",
    "lib/sysctl.d",
];

/// The first setting in `text` that names a network interface (`net.ipv4.conf.eth0.x`,
/// `net/ipv6/neigh/ens3/x`) or a pattern over them (`net.ipv4.conf.*.rp_filter`):
/// `all`, `default` and `lo` name none udev brings up or renames. Returns (line, key).
fn interface_setting(text: &str) -> Option<(usize, String)> {
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
            continue;
        }
        let key = l
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .trim_start_matches('-');
        let parts: Vec<&str> = key.split(['.', '/']).collect();
        let per_interface = parts.len() >= 4
            && parts[0] == "net"
            && matches!(parts[1], "ipv4" | "ipv6")
            && matches!(parts[2], "conf" | "neigh")
            && !matches!(parts[3], "all" | "default" | "lo");
        if per_interface || (parts.first() == Some(&"net") && key.contains(['*', '?', '['])) {
            return Some((n + 1, key.to_string()));
        }
    }
    None
}

/// Why procps must wait for udev on the system at `root`: a setting naming a network
/// interface (Err names the file and line). procps's `Should-Start: udev` is for those:
/// `sysctl --system` sets them only on interfaces that exist, under the names they have.
fn procps_needs_no_device(root: &Path) -> Result<(), String> {
    let mut files = vec![root.join("etc/sysctl.conf")];
    for d in SYSCTL_DIRS {
        let mut v: Vec<_> = std::fs::read_dir(root.join(d))
            .map(|r| r.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        v.retain(|p| p.extension().is_some_and(|x| x == "conf"));
        v.sort();
        files.extend(v);
    }
    for f in files {
        let text = match sys::read_regular(&f, 1 << 20) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", f.display())),
        };
        if let Some((line, key)) = interface_setting(&text) {
            let shown = f.strip_prefix(root).unwrap_or(&f);
            return Err(format!(
                "/{}:{line}: {key} names a network interface: procps waits for udev",
                shown.display()
            ));
        }
    }
    Ok(())
}

/// Scripts of runlevel S that, where [`off_path`] holds, no longer wait for udev either,
/// each only when it is Debian's own (12's bytes, unchanged in 13): `bootmisc.sh` writes /run/nologin, removes
/// bootclean's flag files and truncates utmp, no device (its `Should-Start: udev` is older
/// than that); `procps` runs `sysctl --system`, which waits for udev only for settings
/// that name a network interface, so only when none does. Returns the freed scripts and,
/// for each kept in place, why.
pub fn also_freed(root: &Path) -> (Vec<&'static str>, Vec<String>) {
    let mut freed = Vec::new();
    let mut kept = Vec::new();
    let same = |name: &str, want: &str| -> Result<(), String> {
        let rel = format!("etc/init.d/{name}");
        let data =
            sys::read_regular(&root.join(&rel), 1 << 20).map_err(|e| format!("/{rel}: {e}"))?;
        if sha256::hex(&data) == want {
            Ok(())
        } else {
            Err(format!(
                "/{rel} is not {KNOWN_RELEASES}: it still waits for udev"
            ))
        }
    };
    match same("bootmisc.sh", BOOTMISC_SHA256) {
        Ok(()) => freed.push("bootmisc.sh"),
        Err(e) => kept.push(e),
    }
    match same("procps", PROCPS_SHA256).and_then(|()| procps_needs_no_device(root)) {
        Ok(()) => freed.push("procps"),
        Err(e) => kept.push(e),
    }
    (freed, kept)
}

/// File system types no block device backs.
const VIRTUAL: &[&str] = &[
    "proc",
    "sysfs",
    "tmpfs",
    "devpts",
    "devtmpfs",
    "securityfs",
    "pstore",
    "efivarfs",
    "debugfs",
    "tracefs",
    "configfs",
    "cgroup",
    "cgroup2",
    "mqueue",
    "hugetlbfs",
    "binfmt_misc",
    "fusectl",
];

/// Whether `dev` is a disk's kernel name, a node devtmpfs makes without udev:
/// `/dev/sda1`, `/dev/vda`, `/dev/hdb2`, `/dev/xvda1`, `/dev/nvme0n1p2`, `/dev/mmcblk0p1`.
pub fn kernel_disk_name(dev: &str) -> bool {
    let Some(name) = dev.strip_prefix("/dev/") else {
        return false;
    };
    let digits_after = |s: &str| s.is_empty() || s.bytes().all(|c| c.is_ascii_digit());
    for prefix in ["sd", "vd", "hd", "xvd"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            let letters = rest.bytes().take_while(|c| c.is_ascii_lowercase()).count();
            return letters > 0 && digits_after(&rest[letters..]);
        }
    }
    // nvme<N>n<M>[p<K>], mmcblk<N>[p<K>]
    let number = |s: &str| -> Option<usize> {
        let n = s.bytes().take_while(|c| c.is_ascii_digit()).count();
        (n > 0).then_some(n)
    };
    let partition = |s: &str| {
        s.is_empty()
            || s.strip_prefix('p')
                .is_some_and(|p| number(p) == Some(p.len()))
    };
    if let Some(rest) = name.strip_prefix("nvme") {
        let Some(n) = number(rest) else { return false };
        let Some(rest) = rest[n..].strip_prefix('n') else {
            return false;
        };
        let Some(m) = number(rest) else { return false };
        return partition(&rest[m..]);
    }
    if let Some(rest) = name.strip_prefix("mmcblk") {
        let Some(n) = number(rest) else { return false };
        return partition(&rest[n..]);
    }
    false
}

fn read(root: &Path, rel: &str) -> Result<Option<String>, Error> {
    let path = root.join(rel);
    match std::fs::read(&path) {
        Ok(b) => Ok(Some(String::from_utf8_lossy(&b).into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&path, format!("/{rel}: {e}"), e)),
    }
}

/// Whether udev may run beside the path on the system at `root`; Err says why not (shown
/// by `--dry-run`): both scripts Debian's own (12's or 13's), and every device in /etc/fstab a kernel
/// name (no `UUID=`, `LABEL=`, /dev/disk/..., /dev/mapper/...: udev makes those links, and
/// LVM, RAID and dm-crypt wait for it), no /etc/fstab.d, nothing in /etc/crypttab. The
/// reasons are [`ErrorKind::Refused`]; a file that cannot be read is [`ErrorKind::Io`].
pub fn off_path(root: &Path) -> Result<(), Error> {
    let refused = |message: String| Error::new(ErrorKind::Refused, message);
    let same = |known: &Known| -> Result<(), Error> {
        let path = root.join(known.path);
        let data = std::fs::read(&path)
            .map_err(|e| Error::io(&path, format!("/{}: {e}", known.path), e))?;
        match known.release_of(&data) {
            Some(_) => Ok(()),
            None => Err(refused(format!(
                "/{} is not {KNOWN_RELEASES}: it keeps its place",
                known.path
            ))
            .at(&path)),
        }
    };
    same(&UDEV)?;
    same(&Builtin::MountDevSubFs.script_known())?;
    if root.join("etc/fstab.d").exists() {
        return Err(refused("/etc/fstab.d exists".into()));
    }
    if let Some(t) = read(root, "etc/crypttab")? {
        if let Some((n, l)) = t
            .lines()
            .enumerate()
            .find(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        {
            return Err(refused(format!(
                "/etc/crypttab:{}: {:?}: an encrypted device needs udev",
                n + 1,
                l.trim()
            ))
            .at(&root.join("etc/crypttab"))
            .on_line(n + 1));
        }
    }
    let fstab = read(root, "etc/fstab")?.unwrap_or_default();
    for (n, line) in fstab.lines().enumerate() {
        let mut w = line.split_whitespace();
        let Some(dev) = w.next().filter(|d| !d.starts_with('#')) else {
            continue;
        };
        let fstype = w.nth(1).unwrap_or("");
        if VIRTUAL.contains(&fstype) || dev == "none" && fstype != "swap" {
            continue;
        }
        if !kernel_disk_name(dev) {
            return Err(refused(format!(
                "/etc/fstab:{}: {dev} is not a kernel name: udev makes that link",
                n + 1
            ))
            .at(&root.join("etc/fstab"))
            .on_line(n + 1));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysctl_settings_that_name_an_interface() {
        let none = "# c\nkernel.pid_max = 4194304\nfs.protected_fifos = 1\n\
                    net.ipv4.conf.all.rp_filter=1\nnet.ipv6.conf.default.x = 0\n\
                    net/ipv4/conf/lo/y = 1\nnet.core.somaxconn = 1024\n";
        assert_eq!(interface_setting(none), None);
        assert_eq!(
            interface_setting("a = 1\nnet.ipv4.conf.eth0.rp_filter = 1\n"),
            Some((2, "net.ipv4.conf.eth0.rp_filter".into()))
        );
        assert_eq!(
            interface_setting("-net.ipv4.conf.*.rp_filter = 2\n"),
            Some((1, "net.ipv4.conf.*.rp_filter".into()))
        );
        assert_eq!(
            interface_setting("net/ipv6/neigh/ens3/retrans_time_ms=1\n"),
            Some((1, "net/ipv6/neigh/ens3/retrans_time_ms".into()))
        );
    }

    #[test]
    fn kernel_names_and_links() {
        for ok in [
            "/dev/sda",
            "/dev/sda1",
            "/dev/vda",
            "/dev/vdb12",
            "/dev/xvda1",
            "/dev/sdaa3",
            "/dev/nvme0n1",
            "/dev/nvme0n1p2",
            "/dev/mmcblk0",
            "/dev/mmcblk0p1",
        ] {
            assert!(kernel_disk_name(ok), "{ok}");
        }
        for no in [
            "UUID=1234",
            "/dev/disk/by-uuid/1234",
            "/dev/mapper/vg-root",
            "/dev/md0",
            "/dev/dm-0",
            "/dev/sd",
            "/dev/sda1x",
            "/dev/nvme0",
            "/dev/nvme0n1p",
            "/dev/mmcblk",
            "sda1",
        ] {
            assert!(!kernel_disk_name(no), "{no}");
        }
    }
}
