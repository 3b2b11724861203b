//! The levers, the changes `enable` makes and the manifest that lists them
//! (`/var/lib/bootprint/enabled`). The manifest is state that `disable` acts on as root, so
//! it is trusted only so far: a line is accepted only when it names a change `enable` itself
//! makes (its drop-in, the startpar wrapper and diversion, its initramfs images, the
//! directories they live in), so no manifest can make `disable` delete anything else.

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::{Error, ErrorKind};

/// What enable changed, one record a line; the kernel hooks and the GRUB script read it too.
pub const MANIFEST: &str = "/var/lib/bootprint/enabled";
/// The GRUB drop-in: grub-mkconfig sources /etc/default/grub.d/*.cfg after /etc/default/grub.
pub const DROPIN: &str = "/etc/default/grub.d/bootprint.cfg";
/// The boot-path binary `init=` names.
pub const BOOT_BIN: &str = "/usr/lib/bootprint/bootprint-boot";
/// The startpar wrapper the package installs (packaging/startpar-wrapper).
pub const WRAPPER: &str = "/usr/lib/bootprint/startpar-wrapper";
/// Debian's startpar, which /lib/init/rc runs, where dpkg knows it: Debian 12's package
/// ships `/bin/startpar`, Debian 13's `/usr/bin/startpar` (one file on a merged /usr, but
/// dpkg diverts only the path its database names: [`crate::machine::Machine::startpar`]).
pub const STARTPAR_PATHS: [&str; 2] = ["/bin/startpar", "/usr/bin/startpar"];

/// Where the diversion moves Debian's startpar from `path` (the wrapper runs it when the
/// runner is off).
pub fn startpar_distrib(path: &str) -> String {
    format!("{path}.distrib")
}

/// Whether `path` is one of [`STARTPAR_PATHS`].
pub fn is_startpar(path: &str) -> bool {
    STARTPAR_PATHS.contains(&path)
}
/// The GRUB menu entry id of the newest kernel with bootprint's initramfs
/// (packaging/grub.d); `--default` points GRUB_DEFAULT at it.
pub const ENTRY_ID: &str = "bootprint-initramfs";

/// The files enable creates (and disable removes): nothing else.
pub const CREATED_FILES: [&str; 3] = [DROPIN, STARTPAR_PATHS[0], STARTPAR_PATHS[1]];

/// The directories enable may create (the manifest's and the drop-in's, with their
/// parents on a bare root), removed again when empty.
pub const CREATED_DIRS: [&str; 6] = [
    "/var",
    "/var/lib",
    "/var/lib/bootprint",
    "/etc",
    "/etc/default",
    "/etc/default/grub.d",
];

/// One thing `enable` can switch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lever {
    /// bootprint-boot as `init=`: records every boot. Every other lever needs it.
    Record,
    /// Readahead (`bootprint.readahead=1`).
    Readahead,
    /// The parallel module loader (`bootprint.modules=1`).
    Modules,
    /// The LSB runner in place of startpar (`bootprint.rc=1`, sysvinit only).
    Rc,
    /// Late units (`bootprint.late=1`, systemd only).
    Late,
    /// bootprint's initramfs, an extra GRUB entry per kernel.
    Initramfs,
    /// An ordinary reboot by kexec into the loader's next entry (`bootprint.kexec=1`; on
    /// sysvinit with the runner). Never part of `--all`: skipping the firmware is asked for
    /// by name.
    Kexec,
    /// Stop timeouts learned from the recorded shutdowns for the services that hung one
    /// (`bootprint.timeouts=1`, systemd only). Never part of `--all`: a shorter timeout is
    /// asked for by name.
    Timeouts,
}

impl Lever {
    /// Every lever, in manifest order.
    pub const ALL: [Lever; 8] = [
        Lever::Record,
        Lever::Readahead,
        Lever::Modules,
        Lever::Rc,
        Lever::Late,
        Lever::Initramfs,
        Lever::Kexec,
        Lever::Timeouts,
    ];

    /// Its name in the manifest, the options and the output.
    pub fn word(self) -> &'static str {
        match self {
            Lever::Record => "record",
            Lever::Readahead => "readahead",
            Lever::Modules => "modules",
            Lever::Rc => "rc",
            Lever::Late => "late",
            Lever::Initramfs => "initramfs",
            Lever::Kexec => "kexec",
            Lever::Timeouts => "timeouts",
        }
    }

    /// Whether `--all` takes it (where it can work): every lever but [`Lever::Kexec`] and
    /// [`Lever::Timeouts`].
    pub fn in_all(self) -> bool {
        !matches!(self, Lever::Kexec | Lever::Timeouts)
    }

    fn from_word(w: &str) -> Option<Lever> {
        Lever::ALL.into_iter().find(|l| l.word() == w)
    }

    /// The kernel parameter it adds to the command line (the initramfs lever adds none: its
    /// entry boots with the same command line).
    pub fn param(self) -> Option<String> {
        match self {
            Lever::Record => Some(format!("init={BOOT_BIN}")),
            Lever::Initramfs => None,
            l => Some(format!("bootprint.{}=1", l.word())),
        }
    }
}

/// One change enable made, so disable can take it back.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A directory that did not exist (removed again when empty).
    CreatedDir(String),
    /// A file that did not exist (removed).
    Created(String),
    /// `dpkg-divert --package bootprint --rename --divert TO --add PATH`.
    Diverted {
        /// The diverted path.
        path: String,
        /// Where dpkg moved it.
        to: String,
    },
    /// An initramfs image built for a kernel (removed).
    Built {
        /// The kernel release.
        kernel: String,
        /// The image, `/boot/bootprint-initrd.img-RELEASE`.
        image: String,
    },
}

impl Change {
    /// Its manifest line (without the newline).
    pub fn line(&self) -> String {
        match self {
            Change::CreatedDir(p) => format!("created-dir {p}"),
            Change::Created(p) => format!("created {p}"),
            Change::Diverted { path, to } => format!("diverted {path} {to}"),
            Change::Built { kernel, image } => format!("built {kernel} {image}"),
        }
    }
}

/// The image bootprint builds for `kernel` (`bootprint initramfs build`'s default).
pub fn image_of(kernel: &str) -> String {
    initramfs::build::default_out(kernel)
        .to_string_lossy()
        .into_owned()
}

/// Whether `k` can be a kernel release as it appears in `/boot/vmlinuz-RELEASE`: no path
/// separator, no `..`, nothing a shell or GRUB would read otherwise.
pub fn valid_release(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 128
        && !k.starts_with(['.', '-'])
        && !k.contains("..")
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+~-".contains(c))
}

/// The manifest: the levers on, whether our entry is GRUB's default, and every change made.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Manifest {
    /// The levers enable switched on.
    pub levers: BTreeSet<Lever>,
    /// `--default`: GRUB_DEFAULT points at bootprint's initramfs entry.
    pub default_entry: bool,
    /// The boot loader the levers go through (`loader systemd-boot`; no line: GRUB).
    pub loader: crate::Loader,
    /// In the order they were made; undone in reverse.
    pub changes: Vec<Change>,
}

impl Manifest {
    /// Parses the manifest's text; `file` names it in errors (with the line and what was
    /// expected there). Only the changes enable makes are accepted: [`CREATED_FILES`],
    /// [`CREATED_DIRS`], the diversion of a [`STARTPAR_PATHS`] to [`startpar_distrib`], and
    /// [`image_of`] a valid kernel release.
    pub fn parse(text: &str, file: &str) -> Result<Manifest, Error> {
        let mut m = Manifest::default();
        for (i, line) in text.lines().enumerate() {
            let w: Vec<&str> = line.split_whitespace().collect();
            let bad = |what: &str| {
                let said = format!("{file}:{}: expected {what}, found {line:?}", i + 1);
                Error::new(ErrorKind::BadManifest, said)
                    .at(Path::new(file))
                    .on_line(i + 1)
            };
            match w.as_slice() {
                [] => {}
                [c, ..] if c.starts_with('#') => {}
                ["lever", l] => {
                    let lever = Lever::from_word(l).ok_or_else(|| {
                        bad("a lever (record, readahead, modules, rc, late, initramfs)")
                    })?;
                    m.levers.insert(lever);
                }
                ["default", "initramfs"] => m.default_entry = true,
                ["loader", l] => {
                    m.loader = crate::Loader::from_word(l)
                        .ok_or_else(|| bad("a boot loader (grub, systemd-boot)"))?
                }
                ["created-dir", p] if CREATED_DIRS.contains(p) => {
                    m.changes.push(Change::CreatedDir(p.to_string()))
                }
                ["created-dir", _] => {
                    return Err(bad(&format!(
                        "a directory `bootprint enable` creates ({})",
                        CREATED_DIRS.join(", ")
                    )))
                }
                ["created", p] if CREATED_FILES.contains(p) => {
                    m.changes.push(Change::Created(p.to_string()))
                }
                ["created", _] => {
                    return Err(bad(&format!(
                        "a file `bootprint enable` creates ({})",
                        CREATED_FILES.join(" or ")
                    )))
                }
                ["diverted", p, to] if is_startpar(p) && *to == startpar_distrib(p) => {
                    m.changes.push(Change::Diverted {
                        path: p.to_string(),
                        to: to.to_string(),
                    })
                }
                ["diverted", ..] => {
                    return Err(bad(&format!(
                    "a diversion `bootprint enable` makes (`diverted {} {}` or `diverted {} {}`)",
                    STARTPAR_PATHS[0],
                    startpar_distrib(STARTPAR_PATHS[0]),
                    STARTPAR_PATHS[1],
                    startpar_distrib(STARTPAR_PATHS[1])
                )))
                }
                ["built", k, img] if valid_release(k) && *img == image_of(k) => {
                    m.changes.push(Change::Built {
                        kernel: k.to_string(),
                        image: img.to_string(),
                    })
                }
                ["built", ..] => {
                    return Err(bad(
                        "`built RELEASE /boot/bootprint-initrd.img-RELEASE` with a kernel release",
                    ))
                }
                _ => {
                    return Err(bad(
                        "`lever NAME`, `default initramfs`, `loader NAME`, `created-dir PATH`, \
                     `created PATH`, `diverted PATH TO` or `built RELEASE IMAGE`",
                    ))
                }
            }
        }
        Ok(m)
    }

    /// The manifest's text.
    pub fn to_text(&self) -> String {
        let mut s = String::from(
            "# bootprint enable: what it changed on this machine. `bootprint disable` undoes\n\
             # exactly this, newest change first; the kernel hooks, /etc/grub.d/42_bootprint\n\
             # and the kernel-install plugin read the `lever` and `loader` lines.\n",
        );
        for l in &self.levers {
            s.push_str(&format!("lever {}\n", l.word()));
        }
        if self.default_entry {
            s.push_str("default initramfs\n");
        }
        if self.loader != crate::Loader::Grub {
            s.push_str(&format!("loader {}\n", self.loader.word()));
        }
        for c in &self.changes {
            s.push_str(&c.line());
            s.push('\n');
        }
        s
    }
}

/// The kernel parameters of a set of levers, in lever order.
pub fn params(levers: &BTreeSet<Lever>) -> Vec<String> {
    levers.iter().filter_map(|l| l.param()).collect()
}

/// The drop-in's text. The parameters go to GRUB_CMDLINE_LINUX_DEFAULT, which Debian's
/// 10_linux puts on its normal entries but not on the recovery ones: recovery mode boots
/// without bootprint.
pub fn dropin_text(m: &Manifest) -> String {
    let levers: Vec<&str> = m.levers.iter().map(|l| l.word()).collect();
    let mut s = format!(
        "# Written by `bootprint enable` (levers: {}); `bootprint disable` removes it.\n\
         # Do not edit: it is rewritten by the next `bootprint enable`.\n\
         GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT {}\"\n",
        levers.join(" "),
        params(&m.levers).join(" ")
    );
    if m.default_entry {
        s.push_str(&format!(
            "# `--default`: the newest kernel's entry with bootprint's initramfs boots by default.\n\
             GRUB_DEFAULT={ENTRY_ID}\n"
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_round_trip() {
        let m = Manifest {
            levers: [Lever::Record, Lever::Rc, Lever::Initramfs].into(),
            default_entry: true,
            loader: crate::Loader::SystemdBoot,
            changes: vec![
                Change::CreatedDir("/var/lib/bootprint".into()),
                Change::Diverted {
                    path: STARTPAR_PATHS[1].into(),
                    to: startpar_distrib(STARTPAR_PATHS[1]),
                },
                Change::Created(STARTPAR_PATHS[1].into()),
                Change::Built {
                    kernel: "6.1.0-9-amd64".into(),
                    image: "/boot/bootprint-initrd.img-6.1.0-9-amd64".into(),
                },
                Change::Created(DROPIN.into()),
            ],
        };
        let text = m.to_text();
        assert!(
            text.contains(
                "\nlever initramfs\ndefault initramfs\nloader systemd-boot\ncreated-dir /var/lib/bootprint\n"
            )
        );
        assert_eq!(Manifest::parse(&text, "x").unwrap(), m);
    }

    #[test]
    fn manifest_errors_name_the_line_and_what_was_expected() {
        let e = Manifest::parse("lever record\n\nfrobbed etc/x\n", "/m").unwrap_err();
        assert!(
            e.to_string().starts_with("/m:3: expected `lever NAME`"),
            "{e}"
        );
        assert_eq!(e.kind(), ErrorKind::BadManifest);
        assert_eq!((e.path(), e.line()), (Some(Path::new("/m")), Some(3)));
        let e = Manifest::parse("lever warp\n", "/m").unwrap_err();
        assert!(
            e.to_string().starts_with("/m:1: expected a lever (record,"),
            "{e}"
        );
        let e = Manifest::parse("lever record\nloader lilo\n", "/m").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("/m:2: expected a boot loader (grub, systemd-boot)"),
            "{e}"
        );
        // No loader line: GRUB, as every manifest before systemd-boot was.
        assert_eq!(
            Manifest::parse("lever record\n", "/m").unwrap().loader,
            crate::Loader::Grub
        );
    }

    /// Defect 6 of the security issue: disable deleted whatever the manifest named. Only
    /// what enable creates is accepted now, each refusal naming the line.
    #[test]
    fn only_what_enable_creates_is_accepted() {
        for (line, expected) in [
            ("created /../host/file", "a file `bootprint enable` creates"),
            ("created /etc/passwd", "a file `bootprint enable` creates"),
            ("created etc/default/grub.d/bootprint.cfg", "a file"),
            ("created /etc/default/grub.d/../../passwd", "a file"),
            (
                "created-dir /home",
                "a directory `bootprint enable` creates",
            ),
            ("created-dir /var/lib/bootprint/..", "a directory"),
            ("diverted /bin/sh /bin/sh.distrib", "a diversion"),
            ("diverted /bin/startpar /etc/passwd", "a diversion"),
            // Each path only to its own `.distrib`.
            (
                "diverted /bin/startpar /usr/bin/startpar.distrib",
                "a diversion",
            ),
            ("built 6.1 /../x", "`built RELEASE"),
            ("built 6.1 /boot/vmlinuz-6.1", "`built RELEASE"),
            (
                "built ../../etc /boot/bootprint-initrd.img-../../etc",
                "`built RELEASE",
            ),
            ("built a/b /boot/bootprint-initrd.img-a/b", "`built RELEASE"),
        ] {
            let e = Manifest::parse(&format!("lever record\n{line}\n"), "/m").unwrap_err();
            assert_eq!(
                (e.kind(), e.line()),
                (ErrorKind::BadManifest, Some(2)),
                "{e}"
            );
            assert!(
                e.to_string()
                    .starts_with(&format!("/m:2: expected {expected}")),
                "{line}: {e}"
            );
        }
        let ok = "created-dir /etc/default/grub.d\ncreated /bin/startpar\n\
                  diverted /usr/bin/startpar /usr/bin/startpar.distrib\ncreated /usr/bin/startpar\n\
                  built 6.12.1+deb13-amd64 /boot/bootprint-initrd.img-6.12.1+deb13-amd64\n";
        assert_eq!(Manifest::parse(ok, "/m").unwrap().changes.len(), 5);
    }

    #[test]
    fn dropin_carries_the_parameters_and_the_default_only_when_asked() {
        let mut m = Manifest {
            levers: [Lever::Record, Lever::Readahead, Lever::Late].into(),
            ..Manifest::default()
        };
        let t = dropin_text(&m);
        assert!(t.contains(
            "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT init=/usr/lib/bootprint/bootprint-boot bootprint.readahead=1 bootprint.late=1\"\n"
        ), "{t}");
        assert!(!t.contains("GRUB_DEFAULT="), "{t}");
        m.default_entry = true;
        assert!(dropin_text(&m).ends_with("GRUB_DEFAULT=bootprint-initramfs\n"));
    }
}
