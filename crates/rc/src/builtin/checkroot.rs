//! `checkroot.sh` once the root is checked: what Debian 12's script does when the
//! initramfs has checked the root already (its flag `/run/initramfs/fsck-root`), the
//! command line says `fastboot`, or fstab asks for no check. Then the script asks nothing of
//! the console (no fsck, no maintenance shell), so the runner need not run it alone
//! (`X-Interactive: true` is for the check). The commands whose meaning lives in util-linux
//! (`mount -o remount ...`, `swapon -a -e`) run as the same programs with the same
//! arguments; only the shell around them is gone (the script also runs mountkernfs.sh and
//! mountdevsubfs.sh again with `reload`: two more shells of forks).

use std::fs;
use std::path::Path;
use std::process::Stdio;

use super::{
    devpts_options, is_mount_point, kernel_has, program, read_small, shm_size_kib, touch, Builtin,
    Env, Release, Steps,
};

/// The root's fstab entry, as `read_fstab` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootEntry {
    /// `fstabroot`: the device as fstab names it (`/dev/root` without an entry).
    pub dev: String,
    /// `rootopts`.
    pub opts: String,
    /// `rootmode`: `ro` when the options say so, else `rw`.
    pub mode: &'static str,
    /// `rootcheck`: a pass number other than 0, and not NFS.
    pub check: bool,
    /// The type, for the btrfs rule.
    pub fstype: String,
}

/// `read_fstab` for the root (the last `/` line wins, as the shell's `eval` of each one).
pub fn root_entry(fstab: &str) -> RootEntry {
    let mut e = RootEntry {
        dev: "/dev/root".into(),
        opts: "defaults".into(),
        mode: "rw",
        check: false,
        fstype: "none".into(),
    };
    for line in fstab.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() || w[0].starts_with('#') || w.get(1) != Some(&"/") {
            continue;
        }
        e.dev = w[0].to_string();
        e.opts = w.get(3).unwrap_or(&"").to_string();
        e.fstype = w.get(2).unwrap_or(&"").to_string();
        let pass = w.get(5).copied().unwrap_or("");
        e.check = pass != "0" && !pass.is_empty() && !matches!(e.fstype.as_str(), "nfs" | "nfs4");
        if e.opts.split(',').any(|o| o == "ro") {
            e.mode = "ro";
        }
    }
    e
}

/// `read_fstab_entry POINT [TYPE]`: the options of the first matching entry.
fn fstab_opts(fstab: &str, point: &str, fstype: Option<&str>) -> Option<String> {
    fstab.lines().find_map(|line| {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.is_empty() || w[0].starts_with('#') || w.get(1) != Some(&point) {
            return None;
        }
        if fstype.is_some_and(|t| w.get(2) != Some(&t)) {
            return None;
        }
        Some(w.get(3).unwrap_or(&"").to_string())
    })
}

fn cmdline_has(env: &Env, word: &str) -> bool {
    read_small(&env.proc_dir.join("cmdline"))
        .map(|t| {
            String::from_utf8_lossy(&t)
                .split_whitespace()
                .any(|w| w == word)
        })
        .unwrap_or(false)
}

fn fstab_text(env: &Env) -> Result<String, String> {
    match read_small(&env.at("/etc/fstab")) {
        Ok(t) => Ok(String::from_utf8_lossy(&t).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(format!("/etc/fstab: {e}")),
    }
}

/// Whether the script would ask anything of the console or take a path the built-in does
/// not take: Err names it. Checked when the runner plans (so that the task is not run
/// alone) and again when the built-in runs.
pub fn no_check_left(env: &Env) -> Result<RootEntry, String> {
    let fstab = fstab_text(env)?;
    let root = root_entry(&fstab);
    if ["LABEL=", "UUID=", "PARTUUID=", "PARTLABEL="]
        .iter()
        .any(|p| root.dev.starts_with(p))
    {
        return Err(format!(
            "the root is {} in /etc/fstab: the script resolves it with findfs",
            root.dev
        ));
    }
    let checked = env.at("/run/initramfs/fsck-root").exists();
    let fastboot = env.at("/fastboot").is_file() || cmdline_has(env, "fastboot");
    if root.check && !checked && !fastboot && root.fstype != "btrfs" {
        return Err(
            "the root is not checked yet: the script checks it (and may need the console)".into(),
        );
    }
    if root.check {
        // `mountpoint -qx $rootdev` against `mountpoint -d /`: a mismatch makes the script
        // create /run/rootdev (or stop at a maintenance shell).
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let dev = fs::metadata(env.at(&root.dev)).map_err(|e| format!("{}: {e}", root.dev))?;
        let here = fs::metadata(env.at("/")).map_err(|e| format!("/: {e}"))?;
        if !dev.file_type().is_block_device() || dev.rdev() != here.dev() {
            return Err(format!(
                "{} is not the device mounted on /: the script makes {}",
                root.dev,
                temporary_root_node(script_release(env))
            ));
        }
    }
    Ok(root)
}

/// Which release's checkroot.sh the system has (read once per run: the steps below that
/// differ between releases take it).
fn script_release(env: &Env) -> Option<Release> {
    super::release_on(env, &Builtin::CheckRoot.script_known())
}

/// Where the script of `release` makes its temporary root node (and removes it after the
/// remount): Debian 13's checkroot.sh moved it from /run/rootdev to /dev/rootdev.
fn temporary_root_node(release: Option<Release>) -> &'static str {
    match release {
        Some(Release::Debian13) => "/dev/rootdev",
        _ => "/run/rootdev",
    }
}

/// Debian 13's checkroot.sh, once the initramfs has checked the root, keeps the
/// initramfs's fsck log: `logsave -s /var/log/fsck/checkroot cat /run/initramfs/fsck.log`
/// (its output to /dev/null) when logsave and that log file are there; otherwise it prints
/// a failure message, which is left to the script (Err: nothing done yet).
fn keep_initramfs_fsck_log(env: &Env, release: Option<Release>) -> Result<(), String> {
    let checked = env.at("/run/initramfs/fsck-root").exists();
    if !checked || release != Some(Release::Debian13) {
        return Ok(());
    }
    let logsave = env.at("/sbin/logsave");
    let executable = fs::metadata(&logsave).is_ok_and(|m| {
        use std::os::unix::fs::PermissionsExt;
        m.is_file() && m.permissions().mode() & 0o111 != 0
    });
    if !executable || !env.at(CHECKROOT_LOG).exists() {
        return Err(format!(
            "/sbin/logsave or {CHECKROOT_LOG} is missing: the script says it cannot keep the initramfs's fsck log"
        ));
    }
    let log = env.at(CHECKROOT_LOG).to_string_lossy().into_owned();
    let fsck_log = env
        .at("/run/initramfs/fsck.log")
        .to_string_lossy()
        .into_owned();
    // Its output to /dev/null, its errors to the console, as the script has it.
    program(&logsave, &["-s", &log, "cat", &fsck_log], CHECK_PATH)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("logsave: {e}"))?;
    Ok(())
}

/// checkroot.sh's and checkfs.sh's `PATH`.
const CHECK_PATH: &str = "/usr/bin:/sbin:/bin";

/// checkfs.sh's `FSCK_LOGFILE`.
const CHECKFS_LOG: &str = "/var/log/fsck/checkfs";

/// checkroot.sh's `FSCK_LOGFILE`.
const CHECKROOT_LOG: &str = "/var/log/fsck/checkroot";

/// Runs `prog args...` as the script would (PATH /usr/bin:/sbin:/bin, output to the
/// console, i.e. the runner's pty); Ok(true) when it exited 0. A program that cannot be
/// started at all is an Err: the script would not have done better, but it must run.
fn exec(prog: &str, args: &[&str], quiet: bool) -> Result<bool, String> {
    let mut c = program(prog, args, CHECK_PATH);
    if quiet {
        c.stdout(Stdio::null()).stderr(Stdio::null());
    }
    c.status()
        .map(|s| s.success())
        .map_err(|e| format!("{prog}: {e}"))
}

/// `domount remount TYPE ... POINT CALLER_OPTS`: when the point is a mount point,
/// `mount -oremount CALLER_OPTS [-oFSTAB_OPTS] POINT` (no `-n`: remount mode).
fn remount(
    env: &Env,
    fstab: &str,
    point: &str,
    fstype: &str,
    caller_opts: &str,
) -> Result<(), String> {
    let target = env.at(point);
    if !target.is_dir() {
        return Err(format!(
            "mount point {point} does not exist (the script warns)"
        ));
    }
    let fstab_opts = match fstab_opts(fstab, point, Some(fstype)) {
        Some(o) if o.split(',').any(|x| x == "noauto") => return Ok(()),
        Some(o) if !o.is_empty() => Some(format!("-o{o}")),
        _ => None,
    };
    if !is_mount_point(env, &target)? {
        return Ok(());
    }
    let target = target.to_string_lossy().into_owned();
    let mut args = vec!["-oremount"];
    if !caller_opts.is_empty() {
        args.push(caller_opts);
    }
    if let Some(o) = &fstab_opts {
        args.push(o);
    }
    args.push(&target);
    // A failed remount is reported by mount on the console and the script goes on.
    exec("mount", &args, false)?;
    Ok(())
}

/// The built-in: checkroot.sh's `start` with the root already checked.
pub(super) fn run(env: &Env, steps: &mut Steps) -> Result<(), String> {
    let root = no_check_left(env)?;
    let fstab = fstab_text(env)?;
    let (grp, mode) = match read_small(&env.at("/etc/default/devpts")) {
        Ok(t) => devpts_options(&String::from_utf8_lossy(&t))?,
        Err(_) => (5, "620".to_string()),
    };
    let meminfo = read_small(&env.proc_dir.join("meminfo"))
        .map_err(|e| format!("{}/meminfo: {e}", env.proc_dir.display()))?;
    let shm_kib =
        shm_size_kib(&String::from_utf8_lossy(&meminfo)).ok_or("no MemTotal in meminfo")?;
    let release = script_release(env);
    keep_initramfs_fsck_log(env, release)?;

    // Swap, unless `noswap` or swap on LVM or a file (the script leaves those alone).
    let swaps: Vec<String> = fstab
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() > 2 && !w[0].starts_with('#') && w[2] == "swap").then(|| w[0].to_string())
        })
        .collect();
    let on_lv = swaps.iter().any(|d| d.starts_with("/dev/mapper/"));
    let on_file = swaps
        .iter()
        .any(|d| d.starts_with('/') && !d.starts_with("/dev/"));
    steps.step()?;
    if !swaps.is_empty() && !cmdline_has(env, "noswap") && !on_lv && !on_file {
        exec("swapon", &["-a", "-e"], true)?;
    }

    // The root as fstab says, rw (or ro) again.
    steps.step()?;
    let o = format!("remount,{},{}", root.opts, root.mode);
    let slash = env.root.to_string_lossy().into_owned();
    if !exec("mount", &["-n", "-o", &o, &root.dev, &slash], true)? {
        exec("mount", &["-n", "-o", &o, &slash], false)?;
    }
    // mtab_migrate: /etc/mtab a link to /proc/mounts.
    if root.mode != "ro" && env.proc_dir.join("mounts").exists() {
        let mtab = env.at("/etc/mtab");
        if fs::read_link(&mtab)
            .map(|t| t != Path::new("/proc/mounts"))
            .unwrap_or(true)
        {
            let _ = fs::remove_file(&mtab);
            std::os::unix::fs::symlink("/proc/mounts", &mtab)
                .map_err(|e| format!("ln -fs /proc/mounts {}: {e}", mtab.display()))?;
        }
    }
    let _ = fs::remove_file(env.at(temporary_root_node(release)));

    // /etc/init.d/mountkernfs.sh reload
    remount(
        env,
        &fstab,
        "/run",
        "tmpfs",
        "-onosuid,noexec,size=10%,mode=755",
    )?;
    super::ensure_dir_755(&env.at("/run/sendsigs.omit.d"))?;
    touch(&env.at("/run/.tmpfs"))?;
    super::ensure_dir_755(&env.at("/run/lock"))?;
    remount(
        env,
        &fstab,
        "/run/lock",
        "tmpfs",
        "-onodev,noexec,nosuid,size=5242880,mode=1777",
    )?;
    touch(&env.at("/run/lock/.tmpfs"))?;
    remount(env, &fstab, "/proc", "proc", "-onodev,noexec,nosuid")?;
    if kernel_has(env, "securityfs")? {
        remount(env, &fstab, "/sys/kernel/security", "securityfs", "")?;
    }
    if kernel_has(env, "sysfs")? {
        remount(env, &fstab, "/sys", "sysfs", "-onodev,noexec,nosuid")?;
    }
    if env.at("/sys/fs/pstore").is_dir() && kernel_has(env, "pstore")? {
        remount(env, &fstab, "/sys/fs/pstore", "pstore", "")?;
    }
    if env.at("/sys/firmware/efi/efivars").is_dir() {
        remount(env, &fstab, "/sys/firmware/efi/efivars", "efivarfs", "")?;
    }

    // /etc/init.d/mountdevsubfs.sh reload
    super::trylinks(env)?;
    let shm = env.at("/dev/shm");
    if !shm.is_dir() {
        super::ensure_dir_755(&shm)?;
    }
    remount(
        env,
        &fstab,
        "/dev/shm",
        "tmpfs",
        &format!("-onosuid,nodev,noexec,size={shm_kib}k,mode=1777"),
    )?;
    touch(&shm.join(".tmpfs"))?;
    super::ensure_dir_755(&env.at("/dev/pts"))?;
    if kernel_has(env, "devpts")? {
        remount(
            env,
            &fstab,
            "/dev/pts",
            "devpts",
            &format!("-onoexec,nosuid,gid={grp},mode={mode}"),
        )?;
    }
    Ok(())
}

/// Whether `checkfs.sh` has nothing to check: every file system fstab asks to check (pass
/// other than 0) is mounted already, so its `fsck -M -A` checks nothing and asks nothing of
/// the console. Err names the first one left to check.
pub fn checkfs_nothing_to_check(env: &Env) -> Result<(), String> {
    let fstab = fstab_text(env)?;
    for (n, line) in fstab.lines().enumerate() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() < 2 || w[0].starts_with('#') {
            continue;
        }
        let pass = w.get(5).copied().unwrap_or("0");
        if pass == "0" || pass.is_empty() {
            continue;
        }
        if !is_mount_point(env, &env.at(w[1]))? {
            return Err(format!(
                "/etc/fstab:{}: {} is to be checked: the script checks it (and may need the console)",
                n + 1,
                w[1]
            ));
        }
    }
    Ok(())
}

/// The built-in: checkfs.sh's `start` with nothing to check. `fsck -A` still runs (through
/// `logsave`, as the script runs it: its log is the script's), the same program with the
/// same arguments; then `/fastboot` and `/forcefsck` are removed.
pub(super) fn checkfs(env: &Env, steps: &mut Steps) -> Result<(), String> {
    checkfs_nothing_to_check(env)?;
    steps.step()?;
    let fastboot = env.at("/fastboot").is_file() || cmdline_has(env, "fastboot");
    if !fastboot {
        let force = env.at("/forcefsck").is_file()
            || read_small(&env.proc_dir.join("cmdline"))
                .map(|t| {
                    String::from_utf8_lossy(&t)
                        .split_whitespace()
                        .any(|w| w.eq_ignore_ascii_case("forcefsck"))
                })
                .unwrap_or(false);
        let term = std::env::var("TERM").unwrap_or_default();
        let mut fsck: Vec<&str> = vec!["fsck"];
        if !matches!(term.as_str(), "dumb" | "network" | "unknown" | "") {
            fsck.push("-C");
        }
        fsck.extend(["-T", "-M", "-A", "-a"]);
        if force {
            fsck.push("-f");
        }
        // logsave_best_effort: Debian 13's logs only into a log file that exists, and
        // otherwise prints a failure message first (left to the script).
        let logsave = Path::new("/sbin/logsave").is_file();
        if logsave
            && super::release_on(env, &super::MOUNT_FUNCTIONS) == Some(Release::Debian13)
            && !env.at(CHECKFS_LOG).exists()
        {
            return Err(format!(
                "{CHECKFS_LOG} is missing: the script says it cannot keep fsck's output"
            ));
        }
        let code = if logsave {
            let mut args = vec!["-s", CHECKFS_LOG];
            args.extend(&fsck);
            program("logsave", &args, CHECK_PATH).status()
        } else {
            program(fsck[0], &fsck[1..], CHECK_PATH).status()
        }
        .map_err(|e| format!("fsck: {e}"))?
        .code();
        // More than 1: the script's maintenance shell, which needs the console.
        if !matches!(code, Some(0) | Some(1) | Some(32)) {
            return Err(format!("fsck -A exited {code:?}: the script handles it"));
        }
    }
    let _ = fs::remove_file(env.at("/fastboot"));
    let _ = fs::remove_file(env.at("/forcefsck"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_entry_as_read_fstab_reads_it() {
        let e = root_entry("# c\n/dev/vda / ext4 defaults 0 1\nproc /proc proc defaults 0 0\n");
        assert_eq!(
            e,
            RootEntry {
                dev: "/dev/vda".into(),
                opts: "defaults".into(),
                mode: "rw",
                check: true,
                fstype: "ext4".into()
            }
        );
        let e = root_entry("/dev/sda1 / ext4 ro,noatime 0 0\n");
        assert_eq!((e.mode, e.check), ("ro", false));
        let e = root_entry("server:/x / nfs defaults 0 1\n");
        assert!(!e.check);
        assert_eq!(root_entry("").dev, "/dev/root");
        assert_eq!(
            fstab_opts("proc /proc proc defaults 0 0\n", "/proc", Some("proc")).as_deref(),
            Some("defaults")
        );
        assert_eq!(
            fstab_opts("proc /proc proc defaults 0 0\n", "/proc", Some("tmpfs")),
            None
        );
    }

    /// Debian 13's checkroot.sh keeps the initramfs's fsck log through logsave (the real
    /// one, e2fsprogs') when it and the log file are there; without the log file the
    /// built-in declines before doing anything (the script prints its failure message);
    /// Debian 12's copy does neither.
    #[test]
    fn debian_13_keeps_the_initramfs_fsck_log() {
        if !Path::new("/sbin/logsave").is_file() {
            testkit::skip("no /sbin/logsave (e2fsprogs) on this host");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let fixtures =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/initscripts");
        let script = root.join("etc/init.d/checkroot.sh");
        fs::create_dir_all(script.parent().unwrap()).unwrap();
        for d in ["run/initramfs", "var/log/fsck", "sbin"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        std::os::unix::fs::symlink("/sbin/logsave", root.join("sbin/logsave")).unwrap();
        fs::write(root.join("run/initramfs/fsck-root"), "").unwrap();
        fs::write(
            root.join("run/initramfs/fsck.log"),
            "/dev/vda: clean, 1/2 files\n",
        )
        .unwrap();
        let env = Env::under(root);
        let log = root.join("var/log/fsck/checkroot");
        // Debian 12's script: nothing kept, even with everything there.
        fs::copy(
            fixtures.join("builtin-root/etc/init.d/checkroot.sh"),
            &script,
        )
        .unwrap();
        fs::write(&log, "(Nothing has been logged yet.)\n").unwrap();
        keep_initramfs_fsck_log(&env, script_release(&env)).unwrap();
        assert_eq!(
            fs::read_to_string(&log).unwrap(),
            "(Nothing has been logged yet.)\n"
        );
        assert_eq!(temporary_root_node(script_release(&env)), "/run/rootdev");
        // Debian 13's: the log appended to the file initscripts' postinst made.
        fs::copy(
            fixtures.join("trixie-changed/etc/init.d/checkroot.sh"),
            &script,
        )
        .unwrap();
        assert_eq!(temporary_root_node(script_release(&env)), "/dev/rootdev");
        keep_initramfs_fsck_log(&env, script_release(&env)).unwrap();
        let kept = fs::read_to_string(&log).unwrap();
        assert!(kept.contains("/dev/vda: clean, 1/2 files"), "{kept}");
        // Without the log file: declined, nothing written.
        fs::remove_file(&log).unwrap();
        let e = keep_initramfs_fsck_log(&env, script_release(&env)).unwrap_err();
        assert!(e.contains("cannot keep the initramfs's fsck log"), "{e}");
        assert!(!log.exists());
        // Not checked by the initramfs: nothing to keep.
        fs::remove_file(root.join("run/initramfs/fsck-root")).unwrap();
        keep_initramfs_fsck_log(&env, script_release(&env)).unwrap();
        assert!(!log.exists());
    }
}
