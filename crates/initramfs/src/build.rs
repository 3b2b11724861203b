//! Building the image: find the root, plan the modules, gather the files, write the cpio
//! archive and compress it as measured best. Every system path is an [`Options`] field so
//! tests build from fixture trees.

use std::fs;
use std::path::{Path, PathBuf};

use crate::compress::{self, Measured, Method};
use crate::cpio::Archive;
use crate::plan::{self, ModIndex, Plan};
use crate::{elf, probe, Error, ErrorKind};

/// Which root device to build for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootChoice {
    /// The running system's `/` (from mountinfo).
    Running,
    /// A device path (`/dev/vda1`, `/dev/disk/by-uuid/...`).
    Dev(String),
}

/// What to build, and where the system's files are.
#[derive(Debug, Clone)]
pub struct Options {
    /// The image to write.
    pub out: PathBuf,
    /// The root device.
    pub root: RootChoice,
    /// Kernel release; the running one when None.
    pub kernel: Option<String>,
    /// A compression method, or None to choose by measurement.
    pub compression: Option<Method>,
    /// The program to make `/init` (as a path on the system).
    pub init: PathBuf,
    /// Where the system's files are (`/`): modules, libraries, `/boot/config-*`.
    pub fsroot: PathBuf,
    /// sysfs (`/sys`).
    pub sys: PathBuf,
    /// procfs (`/proc`).
    pub proc_dir: PathBuf,
    /// `/dev`, to resolve a `--root` path.
    pub dev: PathBuf,
    /// Module-loading workers at boot (the plan's `workers`); None: one per CPU.
    pub workers: Option<usize>,
}

impl Options {
    /// The defaults for this machine, writing `out`.
    pub fn new(out: PathBuf) -> Options {
        Options {
            out,
            root: RootChoice::Running,
            kernel: None,
            compression: None,
            init: PathBuf::from("/usr/lib/bootprint/bootprint-boot"),
            fsroot: PathBuf::from("/"),
            sys: PathBuf::from("/sys"),
            proc_dir: PathBuf::from("/proc"),
            dev: PathBuf::from("/dev"),
            workers: None,
        }
    }
}

/// The default image path for a kernel release.
pub fn default_out(release: &str) -> PathBuf {
    PathBuf::from(format!("/boot/bootprint-initrd.img-{release}"))
}

/// What a build did.
#[derive(Debug)]
pub struct Report {
    /// The plan written into the image.
    pub plan: Plan,
    /// Files (not directories) in the image, with their sizes.
    pub files: Vec<(String, usize)>,
    /// Size of the uncompressed archive.
    pub cpio_bytes: usize,
    /// Every measured compression, cheapest first; the first is the one written unless
    /// one was asked for.
    pub measured: Vec<(Method, usize, f64, f64)>,
    /// Compression methods that could not be measured, and why.
    pub skipped: Vec<String>,
    /// The method written.
    pub chosen: Method,
    /// The image's size.
    pub image_bytes: usize,
}

impl Report {
    /// A human-readable summary (also written beside the image as `IMAGE.txt`).
    pub fn text(&self, out: &Path) -> String {
        let mut s = format!(
            "{}: {} bytes ({}), {} files, cpio {} bytes\nroot {} ({}), kernel {}\nmodules ({}):\n",
            out.display(),
            self.image_bytes,
            self.chosen.name(),
            self.files.len(),
            self.cpio_bytes,
            self.plan.root,
            self.plan.fstype,
            self.plan.kernel,
            self.plan.modules.len()
        );
        for m in &self.plan.modules {
            s.push_str(&format!(
                "  {}{}{}\n",
                m.name,
                if m.optional { " (optional)" } else { "" },
                if m.deps.is_empty() {
                    String::new()
                } else {
                    format!(" after {}", m.deps.join(","))
                }
            ));
        }
        for n in &self.plan.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
        s.push_str(&format!(
            "compression (cost = size / {:.0} MB/s + unpack time on this host):\n",
            compress::READ_BYTES_PER_S / 1e6
        ));
        for (m, bytes, unpack, cost) in &self.measured {
            s.push_str(&format!(
                "  {:<5} {:>10} bytes  unpack {:>7.1} ms  cost {:>7.1} ms{}\n",
                m.name(),
                bytes,
                unpack * 1e3,
                cost * 1e3,
                if *m == self.chosen {
                    "  <- written"
                } else {
                    ""
                }
            ));
        }
        for k in &self.skipped {
            s.push_str(&format!("  not measured: {k}\n"));
        }
        s
    }
}

/// The root mount of a mountinfo text: (major, minor, fstype, source).
pub fn root_of_mountinfo(text: &str) -> Option<(u32, u32, String, String)> {
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let f: Vec<&str> = left.split_whitespace().collect();
            let r: Vec<&str> = right.split_whitespace().collect();
            if f.get(4) != Some(&"/") {
                return None;
            }
            let (a, b) = f.get(2)?.split_once(':')?;
            Some((
                a.parse().ok()?,
                b.parse().ok()?,
                r.first()?.to_string(),
                r.get(1)?.to_string(),
            ))
        })
        .next_back()
}

/// File system types that do not live on a local block device.
const NOT_LOCAL: [&str; 9] = [
    "nfs", "nfs4", "cifs", "smb3", "9p", "virtiofs", "tmpfs", "overlay", "squashfs",
];

/// Finds the root's kernel device name and file system type.
pub fn find_root(o: &Options) -> Result<(String, String), Error> {
    match &o.root {
        RootChoice::Running => {
            let mi = o.proc_dir.join("self/mountinfo");
            let text =
                fs::read_to_string(&mi).map_err(|e| crate::io_error(&mi, "cannot read", e))?;
            let (a, b, fstype, source) = root_of_mountinfo(&text)
                .ok_or_else(|| Error::new(ErrorKind::NotFound, "no mount of / found").at(&mi))?;
            if NOT_LOCAL.contains(&fstype.as_str()) {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                    "the root is {source} of type {fstype}, not a local block device: not supported"
                ),
                ));
            }
            if a == 0 {
                // An anonymous device number (btrfs gives every mount and subvolume one):
                // not the disk's; the mount's source names the device.
                if !source.starts_with("/dev/") {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!(
                            "the root ({fstype}) has no device number of a disk ({a}:{b}) and \
                             its source {source} is not a device: give --root DEVICE"
                        ),
                    )
                    .at(&mi));
                }
                return Ok((device_node(o, &source)?.1, fstype));
            }
            let link = o.sys.join(format!("dev/block/{a}:{b}"));
            let real = fs::canonicalize(&link).map_err(|e| {
                crate::io_error(
                    &link,
                    &format!("the root {source} ({a}:{b}) is not a block device"),
                    e,
                )
            })?;
            let name = real
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            Ok((name, fstype))
        }
        RootChoice::Dev(d) => {
            if let Some(why) = crate::cmdline::unsupported_device(d) {
                return Err(Error::new(ErrorKind::Unsupported, why));
            }
            let (real, name) = device_node(o, d)?;
            let head = {
                use std::io::Read;
                let mut b = vec![0u8; probe::PROBE_BYTES];
                let mut f =
                    fs::File::open(&real).map_err(|e| crate::io_error(&real, "cannot open", e))?;
                let n = f
                    .read(&mut b)
                    .map_err(|e| crate::io_error(&real, "cannot read", e))?;
                b.truncate(n);
                b
            };
            let info = probe::superblock(&head).ok_or_else(|| {
                Error::new(ErrorKind::Unsupported, "no ext2/3/4, XFS or btrfs superblock found (LUKS, LVM and others are not supported)").at(&real)
            })?;
            Ok((name, info.fstype))
        }
    }
}

/// The device node `path` (`/dev/vda1`, `/dev/disk/by-uuid/...`) looked up under
/// [`Options::dev`], links followed, and the kernel's name of it (`vda1`).
fn device_node(o: &Options, path: &str) -> Result<(PathBuf, String), Error> {
    let rel = path.strip_prefix("/dev/").unwrap_or(path);
    let node = o.dev.join(rel);
    let real = fs::canonicalize(&node).map_err(|e| crate::io_error(&node, "no such device", e))?;
    let name = real
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    Ok((real, name))
}

/// The running kernel's release (`/proc/sys/kernel/osrelease`).
pub fn running_release(proc_dir: &Path) -> Result<String, Error> {
    let p = proc_dir.join("sys/kernel/osrelease");
    fs::read_to_string(&p)
        .map(|s| s.trim().to_string())
        .map_err(|e| crate::io_error(&p, "cannot read", e))
}

fn sys_path(fsroot: &Path, p: &str) -> PathBuf {
    fsroot.join(p.trim_start_matches('/'))
}

/// Whether the image can mount this machine's root: its device found, local, not stacked
/// (the check [`make_plan`] starts with), for a caller that wants to know before it builds
/// (`bootprint enable --all`). An `Unsupported` error is the layout's refusal.
pub fn check_root(o: &Options) -> Result<(), Error> {
    let (name, _) = find_root(o)?;
    plan::root_chain(&o.sys, &name).map(|_| ())
}

/// Plans the image: root, chain, modules.
pub fn make_plan(o: &Options) -> Result<Plan, Error> {
    let release = match &o.kernel {
        Some(k) => k.clone(),
        None => running_release(&o.proc_dir)?,
    };
    let (name, fstype) = find_root(o)?;
    let chain = plan::root_chain(&o.sys, &name)?;
    let modules_dir = sys_path(&o.fsroot, &format!("/lib/modules/{release}"));
    let ix = ModIndex::read(
        &modules_dir,
        &[
            sys_path(&o.fsroot, "/lib/modprobe.d"),
            sys_path(&o.fsroot, "/etc/modprobe.d"),
        ],
    )?;
    // Without the file (an old kernel) nothing is left out for the CPU's sake.
    let cpu = fs::read_to_string(o.sys.join("devices/system/cpu/modalias")).ok();
    let mut plan = plan::build(
        &ix,
        &release,
        &format!("/dev/{name}"),
        &fstype,
        &chain,
        cpu.as_deref().map(str::trim),
    )?;
    plan.workers = o.workers;
    Ok(plan)
}

/// Builds the image as `o` says and writes it (and `IMAGE.txt` beside it).
pub fn build(o: &Options) -> Result<Report, Error> {
    let plan = make_plan(o)?;
    let mut a = Archive::new();
    let mut files = Vec::new();
    for d in ["dev", "proc", "sys", "root", "run", "bootprint"] {
        a.dir(d, 0o755);
    }
    a.char_dev("dev/console", 0o600, 5, 1);
    a.char_dev("dev/null", 0o666, 1, 3);
    let mut add = |a: &mut Archive, name: &str, src: &Path, perm: u32| -> Result<(), Error> {
        let data = fs::read(src).map_err(|e| crate::io_error(src, "cannot read", e))?;
        files.push((name.to_string(), data.len()));
        a.file(name, perm, &data);
        Ok(())
    };
    let init_host = sys_path(&o.fsroot, &o.init.to_string_lossy());
    add(&mut a, "init", &init_host, 0o755)?;
    for lib in elf::closure(&o.fsroot, &o.init, &elf::LIB_DIRS)? {
        let l = lib.to_string_lossy().into_owned();
        add(&mut a, &l, &sys_path(&o.fsroot, &l), 0o755)?;
    }
    // The root's checker, as initramfs-tools carries it (boot::check_root): when the
    // system has none, the initramfs leaves the check to the system.
    let e2fsck = Path::new(crate::boot::E2FSCK);
    if sys_path(&o.fsroot, crate::boot::E2FSCK).is_file() {
        add(
            &mut a,
            crate::boot::E2FSCK,
            &sys_path(&o.fsroot, crate::boot::E2FSCK),
            0o755,
        )?;
        for lib in elf::closure(&o.fsroot, e2fsck, &elf::LIB_DIRS)? {
            let l = lib.to_string_lossy().into_owned();
            add(&mut a, &l, &sys_path(&o.fsroot, &l), 0o755)?;
        }
    }
    let config = fs::read_to_string(sys_path(
        &o.fsroot,
        &format!("/boot/config-{}", plan.kernel),
    ))
    .ok();
    for m in &plan.modules {
        // Loaded as they are: the kernel unpacks a compressed module at finit_module(2)
        // (boot::load_modules), which a kernel without the unpacker would refuse at boot.
        if let Some(why) = compress::module_unloadable(config.as_deref(), &m.path) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "cannot load module {} ({}) at boot: {why} (/boot/config-{})",
                    m.name, m.path, plan.kernel
                ),
            ));
        }
        add(&mut a, &m.path, &sys_path(&o.fsroot, &m.path), 0o644)?;
    }
    let plan_text = plan.to_text();
    files.push((crate::PLAN_PATH.to_string(), plan_text.len()));
    a.file(crate::PLAN_PATH, 0o644, plan_text.as_bytes());
    let cpio = a.finish();

    let candidates: Vec<Method> = match o.compression {
        Some(m) => {
            if !compress::kernel_supports(config.as_deref(), m) {
                return Err(Error::new(
                    ErrorKind::Compression,
                    format!(
                        "kernel {} cannot unpack {} (no {}=y in /boot/config-{})",
                        plan.kernel,
                        m.name(),
                        m.kernel_option().unwrap_or("?"),
                        plan.kernel
                    ),
                ));
            }
            vec![m]
        }
        None => compress::ALL
            .into_iter()
            .filter(|&m| compress::kernel_supports(config.as_deref(), m) && compress::host_has(m))
            .collect(),
    };
    let (measured, skipped): (Vec<Measured>, Vec<String>) = compress::measure(&cpio, &candidates);
    let best = measured.first().ok_or_else(|| {
        Error::new(
            ErrorKind::Compression,
            format!("no compression worked: {}", skipped.join("; ")),
        )
    })?;
    // Whole or not at all, never through a link planted beside it (`--out` may name a
    // directory others can write).
    sys::write_atomic(&o.out, &best.data)
        .map_err(|e| crate::io_error(&o.out, "cannot write", e))?;
    let report = Report {
        chosen: best.method,
        image_bytes: best.data.len(),
        plan,
        files,
        cpio_bytes: cpio.len(),
        measured: measured
            .iter()
            .map(|m| (m.method, m.bytes, m.unpack_s, m.cost_s))
            .collect(),
        skipped,
    };
    let txt = PathBuf::from(format!("{}.txt", o.out.display()));
    let _ = sys::write_atomic(&txt, report.text(&o.out).as_bytes());
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A btrfs root: mountinfo's device number is anonymous (0:N), so the source names the
    /// disk (seen 2026-11-29 on the test bed's btrfs root: `/sys/dev/block/0:25` missing).
    #[test]
    fn btrfs_root_by_its_source() {
        let t = tempfile::tempdir().unwrap();
        let proc_dir = t.path().join("proc");
        let dev = t.path().join("dev");
        fs::create_dir_all(proc_dir.join("self")).unwrap();
        fs::create_dir_all(dev.join("disk/by-uuid")).unwrap();
        fs::write(dev.join("vda1"), "").unwrap();
        std::os::unix::fs::symlink("../../vda1", dev.join("disk/by-uuid/u1")).unwrap();
        let mut o = Options::new(t.path().join("out"));
        o.proc_dir = proc_dir.clone();
        o.dev = dev;
        o.sys = t.path().join("sys");
        let mountinfo = |source: &str| {
            fs::write(
                proc_dir.join("self/mountinfo"),
                format!("25 1 0:25 /@ / rw,relatime shared:1 - btrfs {source} rw,subvol=/@\n"),
            )
            .unwrap()
        };
        mountinfo("/dev/vda1");
        assert_eq!(find_root(&o).unwrap(), ("vda1".into(), "btrfs".into()));
        mountinfo("/dev/disk/by-uuid/u1");
        assert_eq!(find_root(&o).unwrap().0, "vda1");
        mountinfo("rootfs");
        let e = find_root(&o).unwrap_err().to_string();
        assert!(e.contains("no device number of a disk (0:25)"), "{e}");
    }

    #[test]
    fn mountinfo_root() {
        let mi = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                  23 22 0:21 / /proc rw - proc proc rw\n";
        assert_eq!(
            root_of_mountinfo(mi),
            Some((254, 0, "ext4".into(), "/dev/vda".into()))
        );
        assert_eq!(
            root_of_mountinfo("23 22 0:21 / /proc rw - proc proc rw\n"),
            None
        );
    }
}
