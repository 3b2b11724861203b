//! The kernel command line as the initramfs reads it: where the root is (`root=`), how to
//! mount it (`rootfstype=`, `rootflags=`, `ro`/`rw`), how long to wait for it (`rootwait`,
//! `rootwait=N`, `rootdelay=N`), what to run on it (`init=`); everything else passes through.
//! Pure: takes the text of `/proc/cmdline`.

use std::fmt;

/// How `root=` names the root device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootSpec {
    /// `root=UUID=...` (or `/dev/disk/by-uuid/...`): the file system's UUID, lower case.
    Uuid(String),
    /// `root=PARTUUID=...` (or `/dev/disk/by-partuuid/...`): the partition's id, lower case.
    PartUuid(String),
    /// `root=LABEL=...` (or `/dev/disk/by-label/...`): the file system's label.
    Label(String),
    /// `root=PARTLABEL=...` (or `/dev/disk/by-partlabel/...`): a GPT partition's name.
    PartLabel(String),
    /// `root=/dev/vda1` or `root=vda1`: a device node path under `/dev`.
    Path(String),
    /// `root=MAJ:MIN` (decimal): a device number.
    DevNum(u32, u32),
}

impl fmt::Display for RootSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RootSpec::Uuid(u) => write!(f, "UUID={u}"),
            RootSpec::PartUuid(u) => write!(f, "PARTUUID={u}"),
            RootSpec::Label(l) => write!(f, "LABEL={l}"),
            RootSpec::PartLabel(l) => write!(f, "PARTLABEL={l}"),
            RootSpec::Path(p) => write!(f, "{p}"),
            RootSpec::DevNum(a, b) => write!(f, "{a}:{b}"),
        }
    }
}

/// Seconds to wait for the root device when the command line does not say (`rootwait`
/// without a number, or nothing): long enough for slow USB disks, short enough not to look
/// like a hang.
pub const DEFAULT_WAIT_S: u32 = 30;
/// Seconds for a bare `rootwait`: the kernel would wait for ever; we stop, but late.
pub const ROOTWAIT_S: u32 = 120;
/// The most `rootwait=` and `rootdelay=` may ask: every wait at boot has a bound, and a
/// typo (`rootdelay=30000`) must not look like a dead machine for hours.
pub const MAX_WAIT_S: u32 = 600;

/// The root-related settings of a kernel command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cmdline {
    /// `root=`, if given.
    pub root: Option<RootSpec>,
    /// `rootfstype=`: a comma-separated list is allowed; tried in order.
    pub rootfstype: Vec<String>,
    /// `rootflags=`: file-system specific mount data, passed as is.
    pub rootflags: Option<String>,
    /// Mount read-only: the kernel's default, `ro` sets it and `rw` clears it (the last wins).
    pub readonly: bool,
    /// Seconds to wait for the root device to appear.
    pub wait_s: u32,
    /// `rootdelay=`: seconds to sleep before looking for the root at all.
    pub rootdelay_s: u32,
    /// `init=`: the program to run on the root; `/sbin/init` when absent.
    pub init: Option<String>,
    /// Every other word, in order (`quiet`, `console=ttyS0`, `bootprint.*`, ...).
    pub rest: Vec<String>,
}

impl Default for Cmdline {
    fn default() -> Cmdline {
        Cmdline {
            root: None,
            rootfstype: Vec::new(),
            rootflags: None,
            readonly: true,
            wait_s: DEFAULT_WAIT_S,
            rootdelay_s: 0,
            init: None,
            rest: Vec::new(),
        }
    }
}

/// A command line this initramfs cannot act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdlineError {
    /// The offending word, as written.
    pub word: String,
    /// What was expected instead.
    pub expected: String,
}

impl fmt::Display for CmdlineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel command line: {:?}: expected {}",
            self.word, self.expected
        )
    }
}

impl std::error::Error for CmdlineError {}

/// Splits a command line into words as the kernel does: blanks separate, double quotes
/// group (and are removed).
pub fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    words.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(cur);
    }
    words
}

impl Cmdline {
    /// Parses the text of `/proc/cmdline`. Words after a lone `--` belong to init and pass
    /// through untouched.
    pub fn parse(text: &str) -> Result<Cmdline, CmdlineError> {
        let mut c = Cmdline::default();
        let mut words = split_words(text).into_iter();
        let err = |word: &str, expected: &str| CmdlineError {
            word: word.to_string(),
            expected: expected.to_string(),
        };
        for word in words.by_ref() {
            if word == "--" {
                c.rest.push(word);
                break;
            }
            let (key, value) = match word.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (word.as_str(), None),
            };
            match (key, value) {
                ("root", Some(v)) => {
                    c.root = Some(parse_root(v).map_err(|e| err(&word, &e))?);
                }
                ("root", None) => return Err(err(&word, "root=DEVICE")),
                ("rootfstype", Some(v)) if !v.is_empty() => {
                    c.rootfstype = v
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect();
                }
                ("rootfstype", _) => return Err(err(&word, "rootfstype=TYPE[,TYPE...]")),
                ("rootflags", Some(v)) => {
                    c.rootflags = Some(v.to_string()).filter(|v| !v.is_empty())
                }
                ("ro", None) => c.readonly = true,
                ("rw", None) => c.readonly = false,
                ("rootwait", None) => c.wait_s = ROOTWAIT_S,
                ("rootwait", Some(v)) => {
                    c.wait_s = v
                        .parse::<u32>()
                        .map_err(|_| err(&word, "rootwait or rootwait=SECONDS (a whole number)"))?
                        .min(MAX_WAIT_S);
                }
                ("rootdelay", Some(v)) => {
                    c.rootdelay_s = v
                        .parse::<u32>()
                        .map_err(|_| err(&word, "rootdelay=SECONDS (a whole number)"))?
                        .min(MAX_WAIT_S);
                }
                ("init", Some(v)) if v.starts_with('/') => c.init = Some(v.to_string()),
                ("init", _) => return Err(err(&word, "init=/ABSOLUTE/PATH")),
                _ => c.rest.push(word),
            }
        }
        c.rest.extend(words);
        Ok(c)
    }

    /// The value of another parameter (`bootprint.x=...`) from the pass-through words.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.rest
            .iter()
            .rev()
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
    }
}

/// Parses the value of `root=`; refuses roots this initramfs cannot reach, naming them.
pub fn parse_root(v: &str) -> Result<RootSpec, String> {
    let nonempty = |s: &str, what: &str| {
        if s.is_empty() {
            Err(format!("a value after {what}"))
        } else {
            Ok(s.to_string())
        }
    };
    if let Some(u) = v.strip_prefix("UUID=") {
        return Ok(RootSpec::Uuid(nonempty(u, "UUID=")?.to_ascii_lowercase()));
    }
    if let Some(u) = v.strip_prefix("PARTUUID=") {
        // `PARTUUID=...//PARTNROFF=n` (a neighbour partition) is a kernel extra we lack.
        if u.contains('/') {
            return Err("PARTUUID=ID (the /PARTNROFF= form is not supported)".into());
        }
        return Ok(RootSpec::PartUuid(
            nonempty(u, "PARTUUID=")?.to_ascii_lowercase(),
        ));
    }
    if let Some(l) = v.strip_prefix("LABEL=") {
        return Ok(RootSpec::Label(nonempty(l, "LABEL=")?));
    }
    if let Some(l) = v.strip_prefix("PARTLABEL=") {
        return Ok(RootSpec::PartLabel(nonempty(l, "PARTLABEL=")?));
    }
    for (dir, make) in [
        (
            "/dev/disk/by-uuid/",
            RootSpec::Uuid as fn(String) -> RootSpec,
        ),
        ("/dev/disk/by-partuuid/", RootSpec::PartUuid),
        ("/dev/disk/by-label/", RootSpec::Label),
        ("/dev/disk/by-partlabel/", RootSpec::PartLabel),
    ] {
        if let Some(x) = v.strip_prefix(dir) {
            // No udev here, so no /dev/disk links: look the name up ourselves.
            let x = nonempty(x, dir)?;
            return Ok(match make(x.clone()) {
                RootSpec::Uuid(_) => RootSpec::Uuid(x.to_ascii_lowercase()),
                RootSpec::PartUuid(_) => RootSpec::PartUuid(x.to_ascii_lowercase()),
                other => other,
            });
        }
    }
    if let Some((a, b)) = v.split_once(':') {
        if let (Ok(a), Ok(b)) = (a.parse(), b.parse()) {
            return Ok(RootSpec::DevNum(a, b));
        }
    }
    let path = if v.starts_with("/dev/") {
        v.to_string()
    } else if !v.is_empty() && !v.contains('/') && !v.contains('=') {
        format!("/dev/{v}")
    } else {
        return Err("UUID=, PARTUUID=, LABEL=, PARTLABEL=, /dev/NAME, NAME or MAJOR:MINOR".into());
    };
    if let Some(why) = unsupported_device(&path) {
        return Err(format!("a local disk or partition; {why}"));
    }
    Ok(RootSpec::Path(path))
}

/// Why a device path names a root this initramfs does not support, if it does.
pub fn unsupported_device(path: &str) -> Option<String> {
    let name = path.strip_prefix("/dev/").unwrap_or(path);
    let kind = if name == "nfs" || name.starts_with("nfs") {
        "a network (NFS) root"
    } else if name.starts_with("mapper/") || name.starts_with("dm-") {
        "a device-mapper device (LVM, dm-crypt)"
    } else if name.starts_with("md") {
        "a software RAID (md) device"
    } else if name.starts_with("ram") {
        "a RAM disk"
    } else {
        return None;
    };
    Some(format!("{path} is {kind}, which is not supported"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_forms() {
        let r = |s: &str| Cmdline::parse(s).unwrap().root.unwrap();
        assert_eq!(r("root=UUID=AB12-cd"), RootSpec::Uuid("ab12-cd".into()));
        assert_eq!(
            r("root=PARTUUID=0A1B2C3D-01"),
            RootSpec::PartUuid("0a1b2c3d-01".into())
        );
        assert_eq!(r("root=LABEL=Root Fs"), RootSpec::Label("Root".into()));
        assert_eq!(
            r("root=\"LABEL=Root Fs\""),
            RootSpec::Label("Root Fs".into())
        );
        assert_eq!(
            r("root=PARTLABEL=system"),
            RootSpec::PartLabel("system".into())
        );
        assert_eq!(r("root=/dev/vda"), RootSpec::Path("/dev/vda".into()));
        assert_eq!(r("root=sda2"), RootSpec::Path("/dev/sda2".into()));
        assert_eq!(r("root=8:2"), RootSpec::DevNum(8, 2));
        assert_eq!(
            r("root=/dev/disk/by-uuid/0A-1B"),
            RootSpec::Uuid("0a-1b".into())
        );
        assert_eq!(
            r("root=/dev/disk/by-label/rootfs"),
            RootSpec::Label("rootfs".into())
        );
        // The last root= wins, as in the kernel.
        assert_eq!(
            r("root=/dev/sda1 root=/dev/sdb1"),
            RootSpec::Path("/dev/sdb1".into())
        );
    }

    #[test]
    fn root_errors_name_what_was_expected() {
        let e = Cmdline::parse("quiet root=UUID=").unwrap_err();
        assert_eq!(e.word, "root=UUID=");
        assert!(e.expected.contains("UUID="), "{e}");
        let e = Cmdline::parse("root=/dev/mapper/vg-root").unwrap_err();
        assert!(e.to_string().contains("device-mapper"), "{e}");
        let e = Cmdline::parse("root=/dev/md0").unwrap_err();
        assert!(e.to_string().contains("RAID"), "{e}");
        let e = Cmdline::parse("root=/dev/nfs nfsroot=1.2.3.4:/x").unwrap_err();
        assert!(e.to_string().contains("network"), "{e}");
        let e = Cmdline::parse("root=foo/bar").unwrap_err();
        assert!(e.to_string().contains("PARTUUID="), "{e}");
        assert!(Cmdline::parse("rootdelay=soon")
            .unwrap_err()
            .to_string()
            .contains("SECONDS"));
        assert!(Cmdline::parse("init=sbin/init").is_err());
        assert!(Cmdline::parse("rootfstype=").is_err());
    }

    /// Issue 14, defect 8: every wait at boot has a bound; `rootdelay=` had none (and
    /// `rootwait=N` none but u32's).
    #[test]
    fn waits_are_capped() {
        let c = Cmdline::parse("rootdelay=4000000000 rootwait=99999").unwrap();
        assert_eq!(c.rootdelay_s, MAX_WAIT_S);
        assert_eq!(c.wait_s, MAX_WAIT_S);
        let c = Cmdline::parse("rootdelay=5 rootwait=600").unwrap();
        assert_eq!((c.rootdelay_s, c.wait_s), (5, 600));
    }

    #[test]
    fn mount_and_wait_options() {
        let c = Cmdline::parse(
            "BOOT_IMAGE=/vmlinuz root=/dev/vda rw rootfstype=ext4,ext3 rootflags=data=journal,noatime \
             rootwait rootdelay=2 init=/usr/lib/bootprint/bootprint-boot quiet bootprint.rc=1 -- single",
        )
        .unwrap();
        assert!(!c.readonly);
        assert_eq!(c.rootfstype, vec!["ext4", "ext3"]);
        assert_eq!(c.rootflags.as_deref(), Some("data=journal,noatime"));
        assert_eq!(c.wait_s, ROOTWAIT_S);
        assert_eq!(c.rootdelay_s, 2);
        assert_eq!(c.init.as_deref(), Some("/usr/lib/bootprint/bootprint-boot"));
        assert_eq!(
            c.rest,
            vec![
                "BOOT_IMAGE=/vmlinuz",
                "quiet",
                "bootprint.rc=1",
                "--",
                "single"
            ]
        );
        assert_eq!(c.get("bootprint.rc"), Some("1"));
        // Defaults: read-only, the default wait, no init.
        let d = Cmdline::parse("root=/dev/sda1 rootwait=7").unwrap();
        assert!(d.readonly);
        assert_eq!(d.wait_s, 7);
        assert_eq!(d.init, None);
        assert_eq!(Cmdline::parse("").unwrap().wait_s, DEFAULT_WAIT_S);
        // `ro` after `rw` wins.
        assert!(Cmdline::parse("rw ro").unwrap().readonly);
    }
}
