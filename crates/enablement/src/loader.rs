//! The boot loaders the levers go through. Debian's GRUB: a drop-in in /etc/default/grub.d,
//! update-grub, and /etc/grub.d/42_bootprint for the initramfs entries (in `lib.rs`).
//! systemd-boot: Boot Loader Specification type #1 entries, which systemd's `kernel-install`
//! writes (its 90-loaderentry.install, from /etc/kernel/cmdline or the running command line)
//! and then hands to bootprint's plugin, [`PLUGIN`], which runs after it: with levers on, the
//! plugin adds their parameters to the kernel's entry and, with the initramfs lever, writes a
//! second entry beside it that boots bootprint's initramfs; with them off it takes back what
//! it added. `enable` and `disable` re-run `kernel-install add` for every kernel, so the
//! entries on the EFI system partition are always what kernel-install and the plugin make of
//! the manifest, never edited by hand (kernel-install(8), systemd 252 and 257; the Boot Loader
//! Specification, uapi-group.org).

use crate::error::{Error, ErrorKind};
use crate::machine::{run, Machine};
use crate::manifest::{image_of, params, valid_release, Lever, Manifest};

/// bootprint's kernel-install plugin (packaging/kernel-install), after 90-loaderentry.
pub const PLUGIN: &str = "/usr/lib/kernel/install.d/91-bootprint.install";
/// The name of bootprint's initramfs in a kernel's entry directory, and the suffix of its
/// entry's file name.
const ENTRY_INITRD: &str = "bootprint-initrd";
const ENTRY_SUFFIX: &str = "-bootprint";
/// bootprint's initramfs images are at most this big (they are a few MB).
const MAX_IMAGE: u64 = 1 << 30;

/// The boot loader a manifest's levers were switched on for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Loader {
    /// Debian's GRUB (update-grub).
    #[default]
    Grub,
    /// systemd-boot with entries from kernel-install.
    SystemdBoot,
}

impl Loader {
    /// Its name in the manifest and the output.
    pub fn word(self) -> &'static str {
        match self {
            Loader::Grub => "grub",
            Loader::SystemdBoot => "systemd-boot",
        }
    }

    /// The loader of a manifest word.
    pub fn from_word(w: &str) -> Option<Loader> {
        [Loader::Grub, Loader::SystemdBoot]
            .into_iter()
            .find(|l| l.word() == w)
    }
}

/// One call of the plugin by kernel-install: `COMMAND KERNEL_VERSION ENTRY_DIR_ABS ...` and
/// the environment kernel-install exports to its plugins.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelInstall {
    /// `add` or `remove`.
    pub command: String,
    /// The kernel release.
    pub version: String,
    /// `$BOOT/$ENTRY_TOKEN/$KERNEL_VERSION`, where the kernel's files go.
    pub entry_dir: String,
    /// `KERNEL_INSTALL_BOOT_ROOT`: the ESP or XBOOTLDR partition's mount point.
    pub boot_root: String,
    /// `KERNEL_INSTALL_ENTRY_TOKEN`: the machine id, or the name /etc/kernel/entry-token gives.
    pub entry_token: String,
}

impl KernelInstall {
    /// The call from the plugin's arguments and kernel-install's environment (`env` looks a
    /// variable up); an error says what is missing or not as kernel-install makes it.
    pub fn new(
        args: &[String],
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<KernelInstall, Error> {
        let bad =
            |what: String| Error::new(ErrorKind::NotSupported, format!("--kernel-install: {what}"));
        let [command, version, entry_dir, ..] = args else {
            return Err(bad(format!(
                "expected COMMAND KERNEL_VERSION ENTRY_DIR_ABS, found {args:?}"
            )));
        };
        let need = |var: &str| {
            env(var)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| bad(format!("{var} is not set (run by kernel-install only)")))
        };
        let call = KernelInstall {
            command: command.clone(),
            version: version.clone(),
            entry_dir: entry_dir.trim_end_matches('/').to_string(),
            boot_root: need("KERNEL_INSTALL_BOOT_ROOT")?
                .trim_end_matches('/')
                .to_string(),
            entry_token: need("KERNEL_INSTALL_ENTRY_TOKEN")?,
        };
        if !valid_release(&call.version) {
            return Err(bad(format!("{:?} is not a kernel release", call.version)));
        }
        let token_ok = !call.entry_token.is_empty()
            && !call.entry_token.starts_with('.')
            && call
                .entry_token
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if !token_ok {
            return Err(bad(format!(
                "{:?} is not an entry token (letters, digits, `._-`)",
                call.entry_token
            )));
        }
        if !call.boot_root.starts_with('/') || call.boot_root.contains("/..") {
            return Err(bad(format!(
                "KERNEL_INSTALL_BOOT_ROOT {:?} is not an absolute path",
                call.boot_root
            )));
        }
        // Where kernel-install puts a kernel's files: nowhere else is written.
        let expected = format!("{}/{}/{}", call.boot_root, call.entry_token, call.version);
        if call.entry_dir != expected {
            return Err(bad(format!(
                "ENTRY_DIR_ABS {:?} is not {expected:?} ($BOOT/$ENTRY_TOKEN/$KERNEL_VERSION)",
                call.entry_dir
            )));
        }
        Ok(call)
    }

    /// The entry 90-loaderentry.install writes for this kernel.
    fn entry(&self) -> String {
        format!(
            "{}/loader/entries/{}-{}.conf",
            self.boot_root, self.entry_token, self.version
        )
    }

    /// bootprint's entry beside it: removed with it by 90-loaderentry.install's `remove`
    /// (`rm -f TOKEN-VERSION*.conf`).
    fn our_entry(&self) -> String {
        format!(
            "{}/loader/entries/{}-{}{ENTRY_SUFFIX}.conf",
            self.boot_root, self.entry_token, self.version
        )
    }

    fn our_initrd(&self) -> String {
        format!("{}/{ENTRY_INITRD}", self.entry_dir)
    }
}

/// What the plugin does for one kernel-install call, by the manifest: with levers on for
/// systemd-boot, `add` puts their parameters on the kernel's entry and, with the initramfs
/// lever and the kernel's image built, writes bootprint's entry and copies the image beside
/// the kernel; otherwise (and on `remove`) it removes what it added. Returns what it says.
pub fn kernel_install(m: &Machine, call: &KernelInstall) -> Result<Vec<String>, Error> {
    let mut said = Vec::new();
    let manifest = m.manifest()?.unwrap_or_default();
    let on = manifest.loader == Loader::SystemdBoot && !manifest.levers.is_empty();
    if call.command == "add" && on {
        let entry = call.entry();
        let Some(bytes) = m.read(&entry)? else {
            said.push(format!(
                "{}: no entry (kernel-install's layout is not bls?): nothing to add to",
                m.path(&entry).display()
            ));
            return Ok(said);
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let params = params(&manifest.levers);
        let amended = amend_options(&text, &params);
        if amended != text {
            m.write_fs_mode(&entry, amended.as_bytes())?;
            said.push(format!(
                "{}: options + {}",
                m.path(&entry).display(),
                params.join(" ")
            ));
        }
        let image = image_of(&call.version);
        if manifest.levers.contains(&Lever::Initramfs) && m.exists(&image) {
            let bytes = m.read_capped(&image, MAX_IMAGE)?.unwrap_or_default();
            m.write_fs_mode(&call.our_initrd(), &bytes)?;
            let rel = call
                .entry_dir
                .strip_prefix(&call.boot_root)
                .unwrap_or(&call.entry_dir);
            let ours = our_entry(&amended, &format!("{rel}/{ENTRY_INITRD}"));
            m.write_fs_mode(&call.our_entry(), ours.as_bytes())?;
            said.push(format!(
                "{}: bootprint's initramfs entry",
                m.path(&call.our_entry()).display()
            ));
            return Ok(said);
        }
    }
    for p in [call.our_entry(), call.our_initrd()] {
        if m.exists(&p) {
            m.remove(&p)?;
            said.push(format!("removed {}", m.path(&p).display()));
        }
    }
    Ok(said)
}

/// An entry's text with `params` added to its `options` line (those it has already are not
/// added again); an entry without one gets one.
pub fn amend_options(entry: &str, params: &[String]) -> String {
    let mut out = String::new();
    let mut found = false;
    for line in entry.lines() {
        let key = line.split_whitespace().next();
        if key == Some("options") && !found {
            found = true;
            let have: Vec<&str> = line.split_whitespace().skip(1).collect();
            let mut l = line.trim_end().to_string();
            for p in params.iter().filter(|p| !have.contains(&p.as_str())) {
                l.push(' ');
                l.push_str(p);
            }
            out.push_str(&l);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    if !found && !params.is_empty() {
        out.push_str(&format!("options {}\n", params.join(" ")));
    }
    out
}

/// bootprint's entry from the kernel's (amended) entry: the same kernel, command line and
/// machine, its own initramfs (`initrd`, a path on the partition), a title that says so, and
/// a sort key after the kernel's own, so the distribution's entry stays the first and the
/// default (systemd-boot orders entries by sort key, then version).
pub fn our_entry(entry: &str, initrd: &str) -> String {
    let mut out =
        String::from("# Written by bootprint's kernel-install plugin (91-bootprint.install).\n");
    let mut sort_key = false;
    for line in entry.lines() {
        let mut words = line.splitn(2, char::is_whitespace);
        let key = words.next().unwrap_or("");
        let value = words.next().unwrap_or("").trim();
        match key {
            "initrd" => continue,
            "title" => out.push_str(&format!("title {value}, with bootprint's initramfs\n")),
            "sort-key" => {
                sort_key = true;
                out.push_str(&format!("sort-key {value}{ENTRY_SUFFIX}\n"));
            }
            "linux" => {
                out.push_str(line);
                out.push('\n');
                out.push_str(&format!("initrd {initrd}\n"));
            }
            _ if line.starts_with('#') => {}
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if !sort_key {
        out.push_str(&format!("sort-key zz{ENTRY_SUFFIX}\n"));
    }
    out
}

/// Re-runs `kernel-install add` for every kernel (its Debian initramfs named when there is
/// one), so every entry is what kernel-install and the plugin make of the manifest now.
pub fn refresh_entries(m: &Machine, said: &mut Vec<String>) -> Result<(), Error> {
    refresh(m, &m.kernels(), said).map_err(|(_, e)| e)
}

/// [`refresh_entries`] for `kernels`; a failure comes with the kernels done before it.
pub fn refresh(
    m: &Machine,
    kernels: &[String],
    said: &mut Vec<String>,
) -> Result<(), (Vec<String>, Error)> {
    for (i, k) in kernels.iter().enumerate() {
        let kernel = format!("/boot/vmlinuz-{k}");
        let initrd = format!("/boot/initrd.img-{k}");
        let mut args = vec!["add", k.as_str(), kernel.as_str()];
        if m.exists(&initrd) {
            args.push(&initrd);
        }
        run(&m.tools.kernel_install, &args, &m.root).map_err(|e| (kernels[..i].to_vec(), e))?;
        said.push(format!("kernel-install add {k}: done"));
    }
    Ok(())
}

/// Whether `manifest`'s levers, switched on for one loader, would now go through another.
pub fn loader_changed(m: &Manifest, now: Loader) -> Option<String> {
    (!m.levers.is_empty() && m.loader != now).then(|| {
        format!(
            "the levers were switched on for {} and this machine now boots {}: \
             run `bootprint disable` first",
            m.loader.word(),
            now.word()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENTRY: &str = "# Boot Loader Specification type#1 entry\n\
        title      Debian GNU/Linux 13 (trixie)\n\
        version    6.12.117+deb13-amd64\n\
        machine-id 0123456789abcdef0123456789abcdef\n\
        sort-key   debian\n\
        options    root=/dev/vda2 rw console=ttyS0\n\
        linux      /debian/6.12.117+deb13-amd64/linux\n\
        initrd     /debian/6.12.117+deb13-amd64/initrd.img-6.12.117+deb13-amd64\n";

    #[test]
    fn options_get_the_parameters_once() {
        let p = vec![
            "init=/usr/lib/bootprint/bootprint-boot".to_string(),
            "bootprint.rc=1".into(),
        ];
        let a = amend_options(ENTRY, &p);
        assert!(a.contains(
            "options    root=/dev/vda2 rw console=ttyS0 init=/usr/lib/bootprint/bootprint-boot bootprint.rc=1\n"
        ), "{a}");
        assert_eq!(amend_options(&a, &p), a, "added once");
        assert_eq!(amend_options(ENTRY, &[]), ENTRY);
        assert_eq!(
            amend_options("title x\nlinux /k\n", &p),
            "title x\nlinux /k\noptions init=/usr/lib/bootprint/bootprint-boot bootprint.rc=1\n"
        );
    }

    #[test]
    fn our_entry_boots_our_initramfs_after_the_kernels_own() {
        let e = our_entry(ENTRY, "/debian/6.12.117+deb13-amd64/bootprint-initrd");
        assert!(
            e.contains("title Debian GNU/Linux 13 (trixie), with bootprint's initramfs\n"),
            "{e}"
        );
        assert!(e.contains("sort-key debian-bootprint\n"), "{e}");
        assert!(e.contains(
            "linux      /debian/6.12.117+deb13-amd64/linux\ninitrd /debian/6.12.117+deb13-amd64/bootprint-initrd\n"
        ), "{e}");
        assert_eq!(
            e.lines().filter(|l| l.starts_with("initrd")).count(),
            1,
            "{e}"
        );
        assert!(e.contains("options    root=/dev/vda2 rw console=ttyS0\n"));
        // "debian" sorts before "debian-bootprint": the distribution's entry stays first.
        assert!("debian" < "debian-bootprint");
        let no_key = our_entry("title t\nlinux /k\ninitrd /i\n", "/x/bootprint-initrd");
        assert!(no_key.ends_with("sort-key zz-bootprint\n"), "{no_key}");
    }

    #[test]
    fn calls_are_checked_against_what_kernel_install_passes() {
        let env = |v: &str| match v {
            "KERNEL_INSTALL_BOOT_ROOT" => Some("/boot/efi".to_string()),
            "KERNEL_INSTALL_ENTRY_TOKEN" => Some("debian".to_string()),
            _ => None,
        };
        let args = |d: &str| {
            vec![
                "add".to_string(),
                "6.12.117+deb13-amd64".into(),
                d.to_string(),
                "/boot/vmlinuz".into(),
            ]
        };
        let c = KernelInstall::new(&args("/boot/efi/debian/6.12.117+deb13-amd64"), env).unwrap();
        assert_eq!(
            c.entry(),
            "/boot/efi/loader/entries/debian-6.12.117+deb13-amd64.conf"
        );
        assert_eq!(
            c.our_entry(),
            "/boot/efi/loader/entries/debian-6.12.117+deb13-amd64-bootprint.conf"
        );
        assert_eq!(
            c.our_initrd(),
            "/boot/efi/debian/6.12.117+deb13-amd64/bootprint-initrd"
        );
        for bad in [
            "/etc",
            "/boot/efi/debian/../../etc",
            "/boot/efi/debian/other",
        ] {
            let e = KernelInstall::new(&args(bad), env).unwrap_err();
            assert!(e.to_string().contains("ENTRY_DIR_ABS"), "{e}");
        }
        let e = KernelInstall::new(&args("/x"), |_| None).unwrap_err();
        assert!(
            e.to_string()
                .contains("KERNEL_INSTALL_BOOT_ROOT is not set"),
            "{e}"
        );
        let bad_token = |v: &str| match v {
            "KERNEL_INSTALL_ENTRY_TOKEN" => Some("../etc".to_string()),
            other => env(other),
        };
        assert!(
            KernelInstall::new(&args("/boot/efi/../etc/6.12.117+deb13-amd64"), bad_token).is_err()
        );
        assert!(KernelInstall::new(&["add".to_string()], env).is_err());
    }
}
