//! `image`: builds the Debian 12 or 13 guest image (debootstrap + Debian's kernel, then
//! `mke2fs -d`), caches it by a hash of its inputs, and installs the bootprint binaries into
//! it with `debugfs -w` (never mounting).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::vm::desktop_session;
use crate::vm::util::{
    hash_file, io_err, output_logged, run_logged, Error, Fnv, Lock, Paths, Result,
};

/// Bump when the image-building code changes what it produces: part of the cache key.
const IMAGE_VERSION: &str = "bootprint-testbed-image 4";

/// The Debian release an image is built from: 12 (bookworm, the default) or 13 (trixie),
/// chosen with `--release` (or `BOOTPRINT_TESTBED_RELEASE`) for a whole run ([`Paths`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    Bookworm,
    Trixie,
}

impl Release {
    /// The environment variable `--release` sets for the run (and its child processes).
    pub const ENV: &'static str = "BOOTPRINT_TESTBED_RELEASE";

    /// `12` or `13` (also `bookworm`, `trixie`).
    pub fn parse(s: &str) -> Option<Release> {
        match s {
            "12" | "bookworm" => Some(Release::Bookworm),
            "13" | "trixie" => Some(Release::Trixie),
            _ => None,
        }
    }

    /// The release of this run: [`Release::ENV`], else 12.
    pub fn from_env() -> Result<Release> {
        crate::vm::util::env_choice(Release::ENV, Release::parse, "12 or 13", Release::Bookworm)
    }

    /// Its version number, as results and messages name it.
    pub fn number(self) -> &'static str {
        match self {
            Release::Bookworm => "12",
            Release::Trixie => "13",
        }
    }

    /// debootstrap's suite name.
    pub fn suite(self) -> &'static str {
        match self {
            Release::Bookworm => "bookworm",
            Release::Trixie => "trixie",
        }
    }

    /// Debian's startpar where the release's dpkg database names it: 13's packages ship
    /// only /usr paths, and dpkg diverts only the path it knows (docs/enable.md).
    pub fn startpar(self) -> &'static str {
        match self {
            Release::Bookworm => "/bin/startpar",
            Release::Trixie => "/usr/bin/startpar",
        }
    }

    /// Where the diversion of [`Release::startpar`] moves Debian's startpar.
    pub fn startpar_diverted(self) -> String {
        format!("{}.distrib", self.startpar())
    }
}
/// The package set the issue asks for (a sysvinit Debian with real services).
pub const PACKAGES: &[&str] = &[
    "sysvinit-core",
    "udev",
    "kmod",
    "procps",
    "rsyslog",
    "cron",
    "dbus",
    "openssh-server",
];
/// What Debian 13 no longer installs with minbase that the image needs: e2fsprogs (Priority
/// important since 13) has fsck.ext4, which checkroot.sh runs for the ext4 root; without it
/// the check fails and the boot stops at the maintenance shell.
pub const TRIXIE_PACKAGES: &[&str] = &["e2fsprogs"];
/// Real services that take real time to start (installed with apt-get in the chroot, where
/// policy-rc.d keeps them from starting), and `systemd` for the systemd reference boot:
/// installed beside sysvinit-core (no systemd-sysv), booted with `init=/lib/systemd/systemd`.
pub const SERVICE_PACKAGES: &[&str] = &[
    "exim4-daemon-light",
    "nginx-light",
    "avahi-daemon",
    "cups-daemon",
    "postgresql",
    "systemd",
    // rsyslog and avahi-daemon ship no init script in bookworm; this package installs
    // Debian's maintained ones for installed packages (a dpkg trigger) and enables them.
    "orphan-sysvinit-scripts",
];
/// The runner hook: Debian's /lib/init/rc calls `startpar`; this wrapper (put in its place
/// with dpkg-divert, so package upgrades keep it) runs bootprint's runner when
/// `bootprint.rc=1` is on the kernel command line and Debian's startpar otherwise. The
/// runner speaks startpar's command line and output, so /lib/init/rc stays unchanged.
/// The path diverted is the release's ([`Release::startpar`]).
pub const STARTPAR_WRAPPER: &str = include_str!("../../../packaging/startpar-wrapper");
/// A planted cost for `bootprint advise` to find in a real boot: an init script in runlevel
/// 2 (so before the gettys, which init starts once `rc 2` is done) that does nothing unless
/// `bootprint.plant=sleep:N` is on the kernel command line, and then sleeps N seconds.
pub const PLANT_PATH: &str = "/etc/init.d/bootprint-plant";
/// node_exporter's textfile-collector directory (Debian's prometheus-node-exporter default):
/// when it exists, bootprint-boot exports each boot's figures there at boot done.
pub const PROMETHEUS_DIR: &str = "/var/lib/prometheus/node-exporter";
pub const PLANT_SCRIPT: &str = "#!/bin/sh
### BEGIN INIT INFO
# Provides:          bootprint-plant
# Required-Start:    $remote_fs $syslog
# Required-Stop:
# Default-Start:     2 3 4 5
# Default-Stop:
# Short-Description: bootprint test bed: a planted cost before the login
# Description:       Nothing, unless bootprint.plant=sleep:N is on the kernel command line:
#                    then it sleeps N seconds, a service that waits before the login.
### END INIT INFO
[ \"$1\" = start ] || exit 0
for w in $(cat /proc/cmdline); do
	case \"$w\" in
	bootprint.plant=sleep:*) sleep \"${w#bootprint.plant=sleep:}\" ;;
	esac
done
exit 0
";
/// The `desktop` flavour adds a graphical login (issue 4's perceived boot): Xorg, whose
/// modesetting driver (in xserver-xorg-core) drives QEMU's standard VGA through the kernel's
/// bochs DRM driver, and LightDM with its GTK greeter, started by LightDM's own init script;
/// then an Xfce session for a test user (`desktop_session`, issue 18's third boot time).
/// The text image's packages, services and serial getty stay as they are.
/// LightDM needs a logind: named first, elogind (with sysvinit-core held in the same
/// transaction) keeps apt from satisfying it with systemd-sysv, which would replace
/// sysvinit as /sbin/init. elogind's libelogind0 replaces libsystemd0, so apt removes
/// `systemd`: the desktop image cannot also boot systemd; its systemd reference is the
/// `desktop-systemd` image ([`DESKTOP_SYSTEMD_PACKAGES`]).
pub const DESKTOP_PACKAGES: &[&str] = &[
    "sysvinit-core",
    "elogind",
    "libpam-elogind",
    "xserver-xorg-core",
    "xserver-xorg-input-libinput",
    "lightdm",
    "lightdm-gtk-greeter",
    "fonts-dejavu-core",
];
/// The same desktop the way Debian installs it by default: systemd as init (systemd-sysv)
/// and its logind. The systemd variant of `bench rc --desktop` boots this image.
pub const DESKTOP_SYSTEMD_PACKAGES: &[&str] = &[
    "systemd-sysv",
    "libpam-systemd",
    "xserver-xorg-core",
    "xserver-xorg-input-libinput",
    "lightdm",
    "lightdm-gtk-greeter",
    "fonts-dejavu-core",
];
/// The file in a desktop image's directory that marks it (the boot adds a display device).
const DESKTOP_MARK: &str = "desktop";

/// Which image: the text one (what `make test` boots) or the desktop one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Text,
    Desktop,
    DesktopSystemd,
}

impl Flavor {
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Text => "text",
            Flavor::Desktop => "desktop",
            Flavor::DesktopSystemd => "desktop-systemd",
        }
    }

    /// What this flavour installs beyond the text image.
    fn packages(self) -> &'static [&'static str] {
        match self {
            Flavor::Text => &[],
            Flavor::Desktop => DESKTOP_PACKAGES,
            Flavor::DesktopSystemd => DESKTOP_SYSTEMD_PACKAGES,
        }
    }
}

const KERNEL_PACKAGE: &str = "linux-image-amd64";
pub const HOSTNAME: &str = "bootprint-testbed";
/// Root's password in the guest: the test bed logs in on the serial console to power off.
pub const ROOT_PASSWORD: &str = "bootprint";
const INITTAB_SERIAL: &str = "T0:2345:respawn:/sbin/getty -L 115200 ttyS0 vt100";
const FSTAB: &str = "/dev/vda / ext4 defaults 0 1\nproc /proc proc defaults 0 0\n";
/// Free space above the content, and the smallest image.
const SLACK_MB: u64 = 512;
const MIN_MB: u64 = 2048;

/// Where the boot-path binary and the CLI go in the guest, as a package would put them.
pub const GUEST_BOOT_BIN: &str = "/usr/lib/bootprint/bootprint-boot";
/// systemd runs this at start; a link to the boot binary, which defers the late units.
pub const GUEST_LATE_GENERATOR: &str =
    "/usr/lib/systemd/system-generators/bootprint-late-generator";
/// systemd-shutdown runs this before the final reboot; a link to the boot binary, which
/// makes the kexec lever's jump (docs/reboot.md).
pub const GUEST_KEXEC_HOOK: &str = "/usr/lib/systemd/system-shutdown/bootprint-kexec";
pub const GUEST_CLI_BIN: &str = "/usr/bin/bootprint";

/// A built image in the cache.
#[derive(Clone, Debug)]
pub struct Image {
    pub dir: PathBuf,
    pub rootfs: PathBuf,
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    /// A desktop image: boots with a display device for Xorg.
    pub desktop: bool,
}

/// The cache directory name of a release's and flavour's image: a hash of everything that
/// goes into it (Debian 12's names are those from before releases existed).
fn dir_name(release: Release, flavor: Flavor) -> String {
    let release_part = match release {
        Release::Bookworm => String::new(),
        r => format!("{}-", r.number()),
    };
    match flavor {
        Flavor::Text => format!("image-{release_part}{}", cache_key(release, flavor)),
        _ => format!(
            "image-{}-{release_part}{}",
            flavor.name(),
            cache_key(release, flavor)
        ),
    }
}

fn cache_key(release: Release, flavor: Flavor) -> String {
    let mut h = Fnv::new();
    for part in [
        IMAGE_VERSION,
        release.suite(),
        KERNEL_PACKAGE,
        HOSTNAME,
        ROOT_PASSWORD,
        INITTAB_SERIAL,
        FSTAB,
        STARTPAR_WRAPPER,
        PLANT_SCRIPT,
        PROMETHEUS_DIR,
    ] {
        h.update(part.as_bytes());
        h.update(b"\0");
    }
    for p in base_packages(release).iter().chain(SERVICE_PACKAGES) {
        h.update(p.as_bytes());
        h.update(b"\0");
    }
    // The text key is the same as before flavours existed: its cached image stays valid.
    for p in flavor.packages() {
        h.update(p.as_bytes());
        h.update(b"\0");
    }
    if flavor != Flavor::Text {
        for p in desktop_session::PACKAGES
            .iter()
            .chain(&desktop_session::key_parts())
        {
            h.update(p.as_bytes());
            h.update(b"\0");
        }
    }
    h.update(&SLACK_MB.to_le_bytes());
    h.update(&MIN_MB.to_le_bytes());
    h.hex()
}

impl Image {
    pub fn at(dir: PathBuf) -> Image {
        Image {
            rootfs: dir.join("rootfs.ext4"),
            kernel: dir.join("vmlinuz"),
            initrd: dir.join("initrd.img"),
            desktop: dir.join(DESKTOP_MARK).is_file(),
            dir,
        }
    }

    /// The text image for the current inputs, which must have been built.
    pub fn current(paths: &Paths) -> Result<Image> {
        Image::current_flavor(paths, Flavor::Text)
    }

    /// The image of `flavor` for the current inputs, which must have been built.
    pub fn current_flavor(paths: &Paths, flavor: Flavor) -> Result<Image> {
        let img = Image::at(paths.cache.join(dir_name(paths.release, flavor)));
        if !img.complete() {
            let option = if flavor == Flavor::Desktop {
                " --desktop"
            } else {
                ""
            };
            return Err(Error::fail(format!(
                "no image in {} for the current inputs; run `bootprint-testbed --release {} image{option}` first",
                img.dir.display(),
                paths.release.number()
            )));
        }
        Ok(img)
    }

    /// Held while the image is built or its binaries replaced, and while a boot copies it:
    /// one per image, so boots of one image do not wait for another image's build.
    pub fn lock_path(&self) -> PathBuf {
        self.dir.with_extension("lock")
    }

    /// A built image in `dir` (any cache key: an older image, or another variant).
    pub fn open(dir: PathBuf) -> Result<Image> {
        let img = Image::at(dir);
        if !img.complete() {
            return Err(Error::fail(format!(
                "{} is not a built image (rootfs.ext4, vmlinuz, initrd.img)",
                img.dir.display()
            )));
        }
        Ok(img)
    }

    fn complete(&self) -> bool {
        self.rootfs.is_file() && self.kernel.is_file() && self.initrd.is_file()
    }
}

/// Builds the text image if its inputs changed, then brings the bootprint binaries in it up
/// to date.
pub fn ensure(paths: &Paths, cargo: bool) -> Result<Image> {
    ensure_flavor(paths, cargo, Flavor::Text)
}

/// [`ensure`] for either flavour.
pub fn ensure_flavor(paths: &Paths, cargo: bool, flavor: Flavor) -> Result<Image> {
    let mut img = Image::at(paths.cache.join(dir_name(paths.release, flavor)));
    let _lock = Lock::acquire(&img.lock_path())?;
    if !img.complete() {
        let t = Instant::now();
        build(paths, &img, flavor)?;
        img = Image::at(img.dir.clone());
        let s = t.elapsed().as_secs_f64();
        eprintln!("image: full build took {s:.1} s");
        let _ = fs::write(img.dir.join("build-seconds"), format!("{s:.1}\n"));
    }
    // After the image: the long build does not wait on the binaries compiling.
    let bins = host_binaries(paths, cargo)?;
    let t = Instant::now();
    if update_binaries(&img, &bins)? {
        eprintln!(
            "image: bootprint binaries updated in {:.2} s",
            t.elapsed().as_secs_f64()
        );
    } else {
        eprintln!("image: bootprint binaries already current");
    }
    Ok(img)
}

/// A file of bootprint's that the test bed puts into an image where the package puts it.
#[derive(Clone, Debug)]
pub struct GuestFile {
    pub src: PathBuf,
    pub dest: &'static str,
    pub mode: u32,
}

/// What the test bed installs into every image and replaces when it changes: the freshly
/// built binaries (boot-path binary, CLI) and preload's LightDM hook (`packaging/`, installed
/// as debian/rules installs it; on a text image nothing reads it).
pub fn host_binaries(paths: &Paths, cargo: bool) -> Result<Vec<GuestFile>> {
    if cargo {
        let log = paths.logs().join("cargo.log");
        run_logged(
            Command::new("cargo").current_dir(&paths.repo).args([
                "build",
                "--release",
                "-p",
                "bootprint-boot",
                "-p",
                "bootprint",
            ]),
            &log,
        )?;
    }
    let rel = paths.repo.join("target/release");
    let pkg = paths.repo.join("packaging");
    let files = vec![
        GuestFile {
            src: rel.join("bootprint-boot"),
            dest: GUEST_BOOT_BIN,
            mode: 0o755,
        },
        GuestFile {
            src: rel.join("bootprint"),
            dest: GUEST_CLI_BIN,
            mode: 0o755,
        },
        GuestFile {
            src: pkg.join("preload-hook"),
            dest: "/usr/lib/bootprint/preload-hook",
            mode: 0o755,
        },
        GuestFile {
            src: pkg.join("preload-lightdm.conf"),
            dest: "/usr/share/lightdm/lightdm.conf.d/60-bootprint-preload.conf",
            mode: 0o644,
        },
    ];
    for f in &files[..2] {
        if !f.src.is_file() {
            return Err(Error::fail(format!(
                "{} is missing: build it with `cargo build --release -p bootprint-boot -p bootprint`",
                f.src.display()
            )));
        }
    }
    Ok(files)
}

/// Replaces the files in the image when their hash differs from what was installed last.
/// Returns whether anything was written.
pub fn update_binaries(img: &Image, files: &[GuestFile]) -> Result<bool> {
    // One stamp per root filesystem file: an image directory can hold an aged copy too.
    let stamp_path = img.rootfs.with_extension("binaries");
    let mut want = String::new();
    for f in files {
        want.push_str(&format!("{} {}\n", f.dest, hash_file(&f.src)?));
    }
    if fs::read_to_string(&stamp_path).ok().as_deref() == Some(want.as_str()) {
        return Ok(false);
    }
    let log = img.dir.join("debugfs.log");
    let mut script = String::new();
    for f in files {
        let (dir, name) = f.dest.rsplit_once('/').unwrap_or(("/", f.dest));
        // Each missing directory on the way (mkdir fails harmlessly when it exists; rm fails
        // harmlessly on a first install).
        let mut at = String::new();
        for part in dir.split('/').filter(|p| !p.is_empty()) {
            at.push('/');
            at.push_str(part);
            script.push_str(&format!("mkdir {at}\n"));
        }
        script.push_str(&format!(
            "cd {dir}\nrm {name}\nwrite {} {name}\nsif {name} mode 0100{:o}\nsif {name} uid 0\nsif {name} gid 0\ncd /\n",
            f.src.display(),
            f.mode
        ));
    }
    // The systemd late-unit generator is the boot binary under another name (docs/systemd.md).
    script.push_str(&format!(
        "mkdir /usr/lib/systemd/system-generators\nsymlink {GUEST_LATE_GENERATOR} {GUEST_BOOT_BIN}\n"
    ));
    // So is systemd-shutdown's kexec hook (docs/reboot.md).
    script.push_str(&format!(
        "mkdir /usr/lib/systemd/system-shutdown\nsymlink {GUEST_KEXEC_HOOK} {GUEST_BOOT_BIN}\n"
    ));
    let script_path = img.dir.join("debugfs-update.cmd");
    fs::write(&script_path, script).map_err(|e| io_err("cannot write", &script_path, e))?;
    run_logged(
        Command::new("debugfs")
            .arg("-w")
            .arg("-f")
            .arg(&script_path)
            .arg(&img.rootfs),
        &log,
    )?;
    // debugfs keeps going after a failed command, so check the result by reading it back.
    for f in files {
        let back = img.dir.join("readback.tmp");
        let _ = fs::remove_file(&back);
        run_logged(
            Command::new("debugfs")
                .arg("-R")
                .arg(format!("dump {} {}", f.dest, back.display()))
                .arg(&img.rootfs),
            &log,
        )?;
        let ok = back.is_file() && hash_file(&back)? == hash_file(&f.src)?;
        let _ = fs::remove_file(&back);
        if !ok {
            return Err(Error::fail(format!(
                "installing {} as {} in {} did not take; debugfs log {}:\n{}",
                f.src.display(),
                f.dest,
                img.rootfs.display(),
                log.display(),
                crate::vm::util::tail(&log, 20)
            )));
        }
    }
    fs::write(&stamp_path, want).map_err(|e| io_err("cannot write", &stamp_path, e))?;
    Ok(true)
}

/// Unmounts /proc in the chroot when dropped, so a failed apt-get does not leave it mounted.
pub(crate) struct ProcMount(PathBuf);

impl ProcMount {
    /// Mounts /proc at `dir` (a chroot's), unmounted when the guard drops, also on error.
    pub(crate) fn mount(dir: &Path, log: &Path) -> Result<ProcMount> {
        run_logged(
            Command::new("mount").args(["-t", "proc", "proc"]).arg(dir),
            log,
        )?;
        Ok(ProcMount(dir.to_path_buf()))
    }
}

impl Drop for ProcMount {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.0)
            .status()
            .map(|s| s.success());
        if !matches!(ok, Ok(true)) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

pub(crate) fn write(path: &Path, text: &str) -> Result<()> {
    fs::write(path, text).map_err(|e| io_err("cannot write", path, e))
}

pub(crate) fn chroot(root: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("chroot");
    c.arg(root)
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .env("LC_ALL", "C")
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
    c
}

fn build(paths: &Paths, img: &Image, flavor: Flavor) -> Result<()> {
    let release = paths.release;
    let suite = release.suite();
    let mirror = host_mirror()?;
    let work = fresh_work_dir(img)?;
    let root = work.join("root");
    fs::create_dir_all(&root).map_err(|e| io_err("cannot create", &root, e))?;
    let log = work.join("build.log");
    eprintln!(
        "image: building the {} image in {} (log {})",
        flavor.name(),
        work.display(),
        log.display()
    );
    eprintln!("image: debootstrap {suite} from the host's apt mirror {mirror}");
    run_logged(
        Command::new("debootstrap")
            .arg("--variant=minbase")
            .arg(format!("--include={}", debootstrap_includes(release)))
            .arg(suite)
            .arg(&root)
            .arg(&mirror),
        &log,
    )?;

    // No service may start inside the chroot while packages install.
    let policy = root.join("usr/sbin/policy-rc.d");
    write(&policy, "#!/bin/sh\nexit 101\n")?;
    set_mode(&policy, 0o755)?;
    install_in_chroot(&root, release, flavor, &log)?;
    fs::remove_file(&policy).map_err(|e| io_err("cannot remove", &policy, e))?;
    configure(&root, release, flavor)?;
    if flavor != Flavor::Text {
        write(
            &work.join(DESKTOP_MARK),
            "Xorg + LightDM + Xfce: boot with a display device\n",
        )?;
    }

    let boot = root.join("boot");
    copy_one(&boot, "vmlinuz-", &work.join("vmlinuz"))?;
    copy_one(&boot, "initrd.img-", &work.join("initrd.img"))?;

    make_rootfs(&root, &work.join("rootfs.ext4"), &log)?;
    if img.dir.exists() {
        fs::remove_dir_all(&img.dir).map_err(|e| io_err("cannot remove", &img.dir, e))?;
    }
    fs::rename(&work, &img.dir).map_err(|e| io_err("cannot rename into place", &img.dir, e))?;
    let _ = paths;
    Ok(())
}

/// What debootstrap installs beside minbase. On Debian 13 only sysvinit-core: debootstrap
/// orders its `--include`s worse than apt (trixie's cron-daemon-common depends on `systemd |
/// systemd-sysusers`, and debootstrap unpacks systemd before its own library is configured,
/// which dpkg refuses), so apt installs the rest ([`base_packages`]) in the chroot.
fn debootstrap_includes(release: Release) -> String {
    match release {
        Release::Bookworm => PACKAGES.join(","),
        Release::Trixie => "sysvinit-core".into(),
    }
}

/// [`PACKAGES`] and what the release needs beside them.
fn base_packages(release: Release) -> Vec<&'static str> {
    let mut v = PACKAGES.to_vec();
    if release == Release::Trixie {
        v.extend(TRIXIE_PACKAGES);
    }
    v
}

/// The image's build directory, emptied of a build that died half-way.
fn fresh_work_dir(img: &Image) -> Result<PathBuf> {
    let work = img.dir.with_extension("tmp");
    if work.exists() {
        // A build that died half-way: make sure nothing is still mounted in it, then start over.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(work.join("root/proc"))
            .status();
        fs::remove_dir_all(&work).map_err(|e| io_err("cannot remove", &work, e))?;
    }
    Ok(work)
}

/// Installs the kernel, the services (and a desktop flavour's desktop and session) into
/// `root` with /proc mounted, and the test bed's hooks: the startpar wrapper's diversion,
/// the planted cost, the root password.
fn install_in_chroot(root: &Path, release: Release, flavor: Flavor, log: &Path) -> Result<()> {
    let _guard = ProcMount::mount(&root.join("proc"), log)?;
    eprintln!("image: installing {KERNEL_PACKAGE} in the chroot");
    run_logged(&mut chroot(root, &["apt-get", "update"]), log)?;
    if release == Release::Trixie {
        let packages = base_packages(release);
        eprintln!("image: installing {}", packages.join(" "));
        let mut args = vec!["apt-get", "install", "-y", "--no-install-recommends"];
        args.extend(packages);
        run_logged(&mut chroot(root, &args), log)?;
    }
    run_logged(
        &mut chroot(
            root,
            &[
                "apt-get",
                "install",
                "-y",
                "--no-install-recommends",
                KERNEL_PACKAGE,
            ],
        ),
        log,
    )?;
    eprintln!("image: installing services {}", SERVICE_PACKAGES.join(" "));
    let mut args = vec!["apt-get", "install", "-y", "--no-install-recommends"];
    args.extend(SERVICE_PACKAGES);
    run_logged(&mut chroot(root, &args), log)?;
    if flavor != Flavor::Text {
        install_desktop(root, flavor, log)?;
    }
    // The runner hook (see STARTPAR_WRAPPER): divert Debian's startpar, wrapper in place.
    run_logged(
        &mut chroot(
            root,
            &[
                "dpkg-divert",
                "--local",
                "--rename",
                "--divert",
                &release.startpar_diverted(),
                "--add",
                release.startpar(),
            ],
        ),
        log,
    )?;
    // The planted cost (see PLANT_SCRIPT), enabled the Debian way.
    let plant = root.join(PLANT_PATH.trim_start_matches('/'));
    write(&plant, PLANT_SCRIPT)?;
    set_mode(&plant, 0o755)?;
    run_logged(
        &mut chroot(root, &["update-rc.d", "bootprint-plant", "defaults"]),
        log,
    )?;
    run_logged(&mut chroot(root, &["apt-get", "clean"]), log)?;
    let mut pw = chroot(
        root,
        &["sh", "-c", &format!("echo root:{ROOT_PASSWORD} | chpasswd")],
    );
    run_logged(&mut pw, log)?;
    Ok(())
}

/// Installs a desktop flavour's desktop and session; its /sbin/init must be the flavour's.
fn install_desktop(root: &Path, flavor: Flavor, log: &Path) -> Result<()> {
    eprintln!(
        "image: installing the desktop {}",
        flavor.packages().join(" ")
    );
    let mut args = vec!["apt-get", "install", "-y", "--no-install-recommends"];
    args.extend(flavor.packages());
    run_logged(&mut chroot(root, &args), log)?;
    eprintln!(
        "image: installing the desktop session {}",
        desktop_session::PACKAGES.join(" ")
    );
    let mut args = vec!["apt-get", "install", "-y", "--no-install-recommends"];
    args.extend(desktop_session::PACKAGES);
    run_logged(&mut chroot(root, &args), log)?;
    desktop_session::install(root, log)?;
    // The desktop image is for the LSB runners: sysvinit must still be the init
    // (systemd-sysv makes /sbin/init a symlink to systemd), and the other one must
    // be systemd's.
    let systemd_init = fs::read_link(root.join("sbin/init")).is_ok();
    if systemd_init != (flavor == Flavor::DesktopSystemd) {
        return Err(Error::fail(format!(
            "{} image: /sbin/init is {} (expected {}); see {}",
            flavor.name(),
            if systemd_init {
                "systemd's"
            } else {
                "sysvinit's"
            },
            if systemd_init {
                "sysvinit's"
            } else {
                "systemd's"
            },
            log.display()
        )));
    }
    Ok(())
}

/// The ext4 file system `rootfs` made of the tree `root` (`mke2fs -d`), which is then removed.
fn make_rootfs(root: &Path, rootfs: &Path, log: &Path) -> Result<()> {
    let content_mb = du_mb(root, log)?;
    let size_mb = (content_mb + SLACK_MB).max(MIN_MB);
    eprintln!("image: mke2fs -d ({content_mb} MB of files in a {size_mb} MB ext4 image)");
    run_logged(
        Command::new("mke2fs")
            .args(["-q", "-F", "-t", "ext4", "-L", "bootprint-root", "-d"])
            .arg(root)
            .arg(rootfs)
            .arg(format!("{size_mb}M")),
        log,
    )?;
    fs::remove_dir_all(root).map_err(|e| io_err("cannot remove", root, e))?;
    Ok(())
}

/// The release of the one kernel in `boot` (`vmlinuz-RELEASE`).
pub fn kernel_release(boot: &Path) -> Result<String> {
    let mut found: Vec<String> = fs::read_dir(boot)
        .map_err(|e| io_err("cannot list", boot, e))?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("vmlinuz-"))
                .map(str::to_string)
        })
        .collect();
    found.sort();
    found
        .pop()
        .ok_or_else(|| Error::fail(format!("no vmlinuz-* in {}", boot.display())))
}

/// From `apt-cache search` lines (`linux-image-6.1.0-47-amd64 - Linux 6.1 ...`), the release
/// with the highest ABI number below `installed`'s, of the same series: Debian 12 names its
/// kernels `6.1.0-50-amd64` (series 6.1.0, ABI 50), Debian 13 `6.12.117+deb13-amd64`
/// (series 6.12+deb13, the upstream patch level 117 in the ABI's place).
pub fn previous_kernel(listing: &str, installed: &str) -> Option<String> {
    fn split(release: &str) -> Option<(String, u32)> {
        let base = release.strip_suffix("-amd64")?;
        if let Some((series, abi)) = base.rsplit_once('-') {
            return Some((series.to_string(), abi.parse().ok()?));
        }
        let (version, tag) = base.split_once('+')?;
        let (series, patch) = version.rsplit_once('.')?;
        Some((format!("{series}+{tag}"), patch.parse().ok()?))
    }
    let (series, abi) = split(installed)?;
    listing
        .lines()
        .filter_map(|l| l.split(' ').next()?.strip_prefix("linux-image-"))
        .filter_map(|r| split(r).map(|(s, a)| (r, s, a)))
        .filter(|(_, s, a)| *s == series && *a < abi)
        .max_by_key(|&(_, _, a)| a)
        .map(|(r, _, _)| r.to_string())
}

/// Guest configuration: serial getty, fstab, hostname, a note of what built the image.
fn configure(root: &Path, release: Release, flavor: Flavor) -> Result<()> {
    let inittab = root.join("etc/inittab");
    let mut text = fs::read_to_string(&inittab).map_err(|e| io_err("cannot read", &inittab, e))?;
    if !text.contains(INITTAB_SERIAL) {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("# bootprint test bed: login prompt on the serial console\n");
        text.push_str(INITTAB_SERIAL);
        text.push('\n');
        write(&inittab, &text)?;
    }
    write(&root.join("etc/fstab"), FSTAB)?;
    let prom = root.join(PROMETHEUS_DIR.trim_start_matches('/'));
    fs::create_dir_all(&prom).map_err(|e| io_err("cannot create", &prom, e))?;
    // After the dpkg-divert in build(): Debian's startpar is now at its diverted name.
    let wrapper = root.join(release.startpar().trim_start_matches('/'));
    write(&wrapper, STARTPAR_WRAPPER)?;
    set_mode(&wrapper, 0o755)?;
    write(&root.join("etc/hostname"), &format!("{HOSTNAME}\n"))?;
    write(
        &root.join("etc/hosts"),
        &format!(
            "127.0.0.1 localhost\n127.0.1.1 {HOSTNAME}\n::1 localhost ip6-localhost ip6-loopback\n"
        ),
    )?;
    write(
        &root.join("etc/bootprint-testbed-image"),
        &match (release, flavor) {
            (Release::Bookworm, Flavor::Text) => {
                format!("{IMAGE_VERSION}\nkey {}\n", cache_key(release, flavor))
            }
            _ => format!(
                "{IMAGE_VERSION}\nrelease {}\nflavour {}\nkey {}\n",
                release.number(),
                flavor.name(),
                cache_key(release, flavor)
            ),
        },
    )?;
    Ok(())
}

pub(crate) fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| io_err("cannot chmod", path, e))
}

/// Copies the one file in `dir` whose name starts with `prefix` to `dest`.
fn copy_one(dir: &Path, prefix: &str, dest: &Path) -> Result<()> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| io_err("cannot list", dir, e))?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    found.sort();
    let src = found.pop().ok_or_else(|| {
        Error::fail(format!(
            "no {prefix}* in {}: did the kernel install?",
            dir.display()
        ))
    })?;
    fs::copy(&src, dest).map_err(|e| io_err("cannot copy", &src, e))?;
    Ok(())
}

fn du_mb(root: &Path, log: &Path) -> Result<u64> {
    let out = output_logged(Command::new("du").arg("-sxm").arg(root), log)?;
    out.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| Error::fail(format!("cannot parse `du -sxm` output {out:?}")))
}

/// The Debian mirror from the host's apt configuration.
pub fn host_mirror() -> Result<String> {
    let mut entries = vec![];
    let mut files = vec![];
    let list = PathBuf::from("/etc/apt/sources.list");
    if list.is_file() {
        files.push(list.clone());
    }
    if let Ok(d) = fs::read_dir("/etc/apt/sources.list.d") {
        let mut more: Vec<PathBuf> = d.flatten().map(|e| e.path()).collect();
        more.sort();
        files.extend(more);
    }
    for f in &files {
        let name = f.to_string_lossy();
        let deb822 = name.ends_with(".sources");
        if !deb822 && !name.ends_with(".list") {
            continue;
        }
        let text = fs::read_to_string(f).map_err(|e| io_err("cannot read", f, e))?;
        if deb822 {
            entries.extend(parse_deb822(&text));
        } else {
            entries.extend(parse_one_line(&text));
        }
    }
    // The host is Debian 12: the archive URI its sources give for bookworm serves every
    // release's suites (trixie's too), signed by keys in its debian-archive-keyring.
    let host_suite = Release::Bookworm.suite();
    pick_mirror(&entries, host_suite).ok_or_else(|| {
        Error::fail(format!(
            "no http(s) `deb` source for suite {host_suite} in {}",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// One `deb` source: a URI and a suite.
#[derive(Debug, PartialEq)]
pub struct Source {
    pub uri: String,
    pub suite: String,
}

/// One-line format: `deb [opt=val ...] URI SUITE COMPONENT...`.
pub fn parse_one_line(text: &str) -> Vec<Source> {
    let mut out = vec![];
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some(rest) = line.strip_prefix("deb") else {
            continue;
        };
        if !rest.starts_with([' ', '\t']) {
            continue; // deb-src
        }
        let mut rest = rest.trim_start();
        if rest.starts_with('[') {
            match rest.find(']') {
                Some(i) => rest = rest[i + 1..].trim_start(),
                None => continue,
            }
        }
        let mut w = rest.split_whitespace();
        if let (Some(uri), Some(suite)) = (w.next(), w.next()) {
            out.push(Source {
                uri: uri.to_string(),
                suite: suite.to_string(),
            });
        }
    }
    out
}

/// deb822 format (`.sources`): stanzas of `Field: value` separated by blank lines.
pub fn parse_deb822(text: &str) -> Vec<Source> {
    let mut out = vec![];
    let mut stanzas: Vec<Vec<(String, String)>> = vec![vec![]];
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        if line.trim().is_empty() {
            if !stanzas.last().map(|s| s.is_empty()).unwrap_or(true) {
                stanzas.push(vec![]);
            }
            continue;
        }
        let cur = stanzas.last_mut().expect("never empty");
        if line.starts_with([' ', '\t']) {
            // continuation of the previous field's value
            if let Some(last) = cur.last_mut() {
                last.1.push(' ');
                last.1.push_str(line.trim());
            }
            continue;
        }
        if let Some((k, v)) = line.split_once(':') {
            cur.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    for st in stanzas {
        let get = |k: &str| st.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.as_str());
        if !get("types")
            .unwrap_or("")
            .split_whitespace()
            .any(|t| t == "deb")
        {
            continue;
        }
        if matches!(get("enabled"), Some(v) if v.eq_ignore_ascii_case("no")) {
            continue;
        }
        for uri in get("uris").unwrap_or("").split_whitespace() {
            for suite in get("suites").unwrap_or("").split_whitespace() {
                out.push(Source {
                    uri: uri.to_string(),
                    suite: suite.to_string(),
                });
            }
        }
    }
    out
}

/// The first http(s) URI that serves exactly `suite` (so not `<suite>-security`/-updates).
pub fn pick_mirror(sources: &[Source], suite: &str) -> Option<String> {
    sources
        .iter()
        .find(|s| {
            s.suite == suite
                && (s.uri.starts_with("http://") || s.uri.starts_with("https://"))
                && !s.uri.trim_end_matches('/').ends_with("-security")
        })
        .map(|s| s.uri.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEB822: &str = "\
Types: deb
# a comment inside a stanza
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb deb-src
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
";

    #[test]
    fn deb822_sources() {
        let s = parse_deb822(DEB822);
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].suite, "bookworm-updates");
        assert_eq!(s[2].uri, "http://mirror.example/debian-security");
        assert_eq!(
            pick_mirror(&s, "bookworm").as_deref(),
            Some("http://mirror.example/debian")
        );
    }

    #[test]
    fn deb822_disabled_and_continuation() {
        let text = "Types: deb\nURIs: http://a.example/d\nSuites: bookworm\nEnabled: no\n\n\
                    Types: deb\nURIs:\n http://b.example/d\nSuites: bookworm\n";
        let s = parse_deb822(text);
        assert_eq!(
            s,
            vec![Source {
                uri: "http://b.example/d".into(),
                suite: "bookworm".into()
            }]
        );
    }

    #[test]
    fn one_line_sources() {
        let text = "\
# deb http://old.example/debian bookworm main
deb-src http://src.example/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] http://sec.example/debian-security bookworm-security main
deb cdrom:[Debian 12]/ bookworm main
deb [ arch=amd64 ] https://m.example/debian/ bookworm main contrib
";
        let s = parse_one_line(text);
        assert_eq!(s.len(), 3);
        assert_eq!(
            pick_mirror(&s, "bookworm").as_deref(),
            Some("https://m.example/debian/")
        );
    }

    #[test]
    fn no_mirror_for_other_suites() {
        let s = parse_one_line("deb http://m.example/debian bullseye main\n");
        assert_eq!(pick_mirror(&s, "bookworm"), None);
    }

    #[test]
    fn binaries_go_into_the_image_with_debugfs() {
        if !crate::vm::util::on_path("mke2fs") {
            testkit::skip("no mke2fs (e2fsprogs) on this host");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        fs::create_dir_all(root.join("usr/lib")).unwrap();
        fs::create_dir_all(root.join("usr/bin")).unwrap();
        fs::write(root.join("usr/bin/bootprint"), "old").unwrap();
        let img = Image::at(dir.path().join("img"));
        fs::create_dir_all(&img.dir).unwrap();
        let log = dir.path().join("log");
        run_logged(
            Command::new("mke2fs")
                .args(["-q", "-F", "-t", "ext4", "-d"])
                .arg(&root)
                .arg(&img.rootfs)
                .arg("8M"),
            &log,
        )
        .unwrap();
        let boot = dir.path().join("bootprint-boot");
        let cli = dir.path().join("bootprint");
        fs::write(&boot, "#!/bin/sh\necho boot\n").unwrap();
        fs::write(&cli, "cli v1").unwrap();
        let hook = dir.path().join("preload-hook");
        fs::write(&hook, "#!/bin/sh\n").unwrap();
        let file = |src: &Path, dest, mode| GuestFile {
            src: src.to_path_buf(),
            dest,
            mode,
        };
        let bins = vec![
            file(&boot, GUEST_BOOT_BIN, 0o755),
            file(&cli, GUEST_CLI_BIN, 0o755),
            file(&hook, "/usr/share/lightdm/lightdm.conf.d/hook.conf", 0o644),
        ];
        assert!(
            update_binaries(&img, &bins).unwrap(),
            "first install writes"
        );
        assert!(
            !update_binaries(&img, &bins).unwrap(),
            "unchanged: nothing to do"
        );
        fs::write(&cli, "cli v2, longer than before").unwrap();
        assert!(
            update_binaries(&img, &bins).unwrap(),
            "changed CLI is replaced"
        );
        let out = dir.path().join("out");
        run_logged(
            Command::new("debugfs")
                .arg("-R")
                .arg(format!("dump {GUEST_CLI_BIN} {}", out.display()))
                .arg(&img.rootfs),
            &log,
        )
        .unwrap();
        assert_eq!(
            fs::read_to_string(&out).unwrap(),
            "cli v2, longer than before"
        );
        let stat = output_logged(
            Command::new("debugfs")
                .arg("-R")
                .arg(format!("stat {GUEST_BOOT_BIN}"))
                .arg(&img.rootfs),
            &log,
        )
        .unwrap();
        assert!(stat.contains("Mode:  0755"), "{stat}");
        // A file in directories the image did not have, with its own mode.
        let stat = output_logged(
            Command::new("debugfs")
                .arg("-R")
                .arg("stat /usr/share/lightdm/lightdm.conf.d/hook.conf")
                .arg(&img.rootfs),
            &log,
        )
        .unwrap();
        assert!(stat.contains("Mode:  0644"), "{stat}");
    }

    #[test]
    fn previous_kernel_is_the_abi_below() {
        let listing = "linux-image-6.1.0-47-amd64 - Linux 6.1 for 64-bit PCs (signed)
linux-image-6.1.0-50-amd64 - Linux 6.1 for 64-bit PCs (signed)
linux-image-6.1.0-48-amd64 - Linux 6.1 for 64-bit PCs (signed)
linux-image-6.12.100+deb12-amd64 - Linux 6.12 for 64-bit PCs (signed)
linux-image-6.1.0-51-amd64 - Linux 6.1 for 64-bit PCs (signed)
linux-image-amd64 - Linux for 64-bit PCs (meta-package)
";
        assert_eq!(
            previous_kernel(listing, "6.1.0-50-amd64").as_deref(),
            Some("6.1.0-48-amd64")
        );
        assert_eq!(previous_kernel(listing, "6.1.0-47-amd64"), None);
        assert_eq!(previous_kernel(listing, "6.12.100+deb12-amd64"), None);
        assert_eq!(previous_kernel("", "6.1.0-50-amd64"), None);
    }

    /// Debian 13's names: the upstream patch level is the ABI, `+deb13` part of the series.
    #[test]
    fn previous_kernel_on_debian_13() {
        let listing = "linux-image-6.12.107+deb13-amd64 - Linux 6.12 for 64-bit PCs (signed)
linux-image-6.12.117+deb13-amd64 - Linux 6.12 for 64-bit PCs (signed)
linux-image-6.12.48+deb13-amd64 - Linux 6.12 for 64-bit PCs (signed)
linux-image-6.12.107+deb13-amd64-unsigned - Linux 6.12 for 64-bit PCs
linux-image-6.12.110+deb12-amd64 - Linux 6.12 for 64-bit PCs (signed)
linux-image-6.1.0-50-amd64 - Linux 6.1 for 64-bit PCs (signed)
linux-image-amd64 - Linux for 64-bit PCs (meta-package)
";
        assert_eq!(
            previous_kernel(listing, "6.12.117+deb13-amd64").as_deref(),
            Some("6.12.107+deb13-amd64")
        );
        assert_eq!(
            previous_kernel(listing, "6.12.107+deb13-amd64").as_deref(),
            Some("6.12.48+deb13-amd64")
        );
        assert_eq!(previous_kernel(listing, "6.12.48+deb13-amd64"), None);
        assert_eq!(
            previous_kernel(listing, "6.1.0-51-amd64").as_deref(),
            Some("6.1.0-50-amd64")
        );
    }

    #[test]
    fn key_is_stable_and_hex() {
        let (b, t) = (Release::Bookworm, Release::Trixie);
        assert_eq!(cache_key(b, Flavor::Text), cache_key(b, Flavor::Text));
        assert_eq!(cache_key(b, Flavor::Text).len(), 16);
        assert_ne!(cache_key(b, Flavor::Text), cache_key(b, Flavor::Desktop));
        assert_ne!(
            cache_key(b, Flavor::Desktop),
            cache_key(b, Flavor::DesktopSystemd)
        );
        assert_ne!(cache_key(b, Flavor::Text), cache_key(t, Flavor::Text));
        assert!(dir_name(b, Flavor::DesktopSystemd).starts_with("image-desktop-systemd-"));
        assert!(dir_name(b, Flavor::Desktop).starts_with("image-desktop-"));
        // Debian 12's names are those from before releases existed; 13's say so.
        assert_eq!(
            dir_name(b, Flavor::Text),
            format!("image-{}", cache_key(b, Flavor::Text))
        );
        assert!(dir_name(t, Flavor::Text).starts_with("image-13-"));
        assert!(dir_name(t, Flavor::Desktop).starts_with("image-desktop-13-"));
    }

    #[test]
    fn releases_by_number_or_name() {
        assert_eq!(Release::parse("13"), Some(Release::Trixie));
        assert_eq!(Release::parse("bookworm"), Some(Release::Bookworm));
        assert_eq!(Release::parse("14"), None);
        assert_eq!(
            Release::Trixie.startpar_diverted(),
            "/usr/bin/startpar.distrib"
        );
        assert_eq!(Release::Bookworm.startpar(), "/bin/startpar");
    }

    /// The startpar wrapper hands the runlevel to Debian's startpar on every exit of the
    /// runner but 0 (issue defect 6: before, only on 126 and 127), and never runs the runner
    /// when bootprint's configuration has it off. The wrapper's paths are pointed at stubs.
    #[test]
    fn startpar_wrapper_falls_back_on_any_exit_but_0() {
        let dir = tempfile::tempdir().unwrap();
        let d = &dir.path();
        let stub = |name: &str, body: &str| {
            let p = d.join(name);
            testkit::write_program(&p, &format!("#!/bin/sh\n{body}\n"), 0o755);
            p
        };
        // The runner stub answers `rc --enabled` as bootprint-boot does for these command
        // lines (its own test is in crates/bootprint-boot/tests/rc_enabled.rs), and otherwise
        // exits with the code in $CODE; "abort" dies by SIGABRT.
        let runner = stub(
            "bootprint-boot",
            "if [ \"$2\" = --enabled ]; then grep -qw -e bootprint.rc=1 -e bootprint.all=1 \"$CMDLINE\"; exit $?; fi\n\
             echo runner \"$@\"\n[ \"$CODE\" = abort ] && kill -ABRT $$\nexit $CODE",
        );
        let distrib = stub("startpar.distrib", "echo distrib \"$@\"");
        let cmdline = d.join("cmdline");
        let wrapper = STARTPAR_WRAPPER
            .replace(
                "/usr/lib/bootprint/bootprint-boot",
                runner.to_str().unwrap(),
            )
            .replace("/bin/startpar.distrib", distrib.to_str().unwrap());
        let wrapper = stub("startpar", wrapper.trim_start_matches("#!/bin/sh\n"));
        let run = |line: &str, code: &str| {
            fs::write(&cmdline, line).unwrap();
            let out = std::process::Command::new(&wrapper)
                .args(["-M", "start", "-R", "2"])
                .env("CODE", code)
                .env("CMDLINE", &cmdline)
                .output()
                .unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        };
        let ran = "runner rc --startpar -M start -R 2\n";
        let fell_back = "runner rc --startpar -M start -R 2\ndistrib -M start -R 2\n";
        assert_eq!(run("quiet bootprint.rc=1\n", "0"), (Some(0), ran.into()));
        for code in ["1", "2", "101", "126", "127", "abort"] {
            assert_eq!(
                run("quiet bootprint.rc=1\n", code),
                (Some(0), fell_back.into()),
                "exit {code}"
            );
        }
        assert_eq!(run("quiet bootprint.all=1\n", "0"), (Some(0), ran.into()));
        assert_eq!(
            run("quiet\n", "0"),
            (Some(0), "distrib -M start -R 2\n".into())
        );
    }
}
