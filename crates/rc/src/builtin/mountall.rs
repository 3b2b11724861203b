//! `mountall.sh`: `mount -a` of the local file systems, as the same program with the same
//! arguments, and the shell around it (run_migrate of /var/run, /var/lock and /run/shm, the
//! fsck log directory, swap files, and mountkernfs.sh's and mountdevsubfs.sh's mounts once
//! more, which on a default system are all in place already).

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::process::Stdio;

use super::{is_mount_point, program, read_small, touch, Env, Steps};

/// `mount_all_local`'s file system types and options (Debian 12's mountall.sh).
const MOUNT_A: [&str; 5] = [
    "-a",
    "-t",
    "nonfs,nfs4,smbfs,cifs,ncp,ncpfs,coda,ocfs2,gfs,gfs2,ceph",
    "-O",
    "no_netdev",
];

/// `LANG` from /etc/default/locale, which the script sources and exports (it changes the
/// language of mount's messages). Err for anything but comments and `LANG=`/`LANGUAGE=` lines.
pub fn locale_lang(text: &str) -> Result<Option<String>, String> {
    let mut lang = None;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        match t.split_once('=') {
            Some(("LANG", v)) => {
                let v = v.trim_matches('"');
                if !v
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || b"._-@".contains(&c))
                {
                    return Err(format!("/etc/default/locale:{}: {t:?}", n + 1));
                }
                lang = Some(v.to_string());
            }
            // Set but not exported by the script: no effect on the programs it runs.
            Some(("LANGUAGE" | "LC_ALL" | "LC_MESSAGES" | "LC_CTYPE", _)) => {}
            _ => {
                return Err(format!(
                    "/etc/default/locale:{}: {t:?} is not a plain LANG=",
                    n + 1
                ))
            }
        }
    }
    Ok(lang)
}

/// `run_migrate OLD RUN`: OLD becomes a link to RUN unless it is one, or the same directory.
/// Err where the script would bind-mount (a file system mounted on OLD).
pub fn run_migrate(env: &Env, old: &str, run: &str) -> Result<(), String> {
    let old_p = env.at(old);
    let target = Path::new(run);
    let relink = |p: &Path| -> Result<(), String> {
        let _ = fs::remove_file(p);
        std::os::unix::fs::symlink(target, p)
            .map_err(|e| format!("ln -fs {run} {}: {e}", p.display()))
    };
    if old_p.is_symlink() && fs::read_link(&old_p).map(|t| t != target).unwrap_or(true) {
        relink(&old_p)?;
    }
    let id = |p: &Path| fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    if let (Some(a), Some(b)) = (id(&old_p), id(&env.at(run))) {
        if a == b {
            return Ok(());
        }
    }
    if !old_p.is_symlink() && old_p.is_dir() {
        let _ = fs::remove_dir_all(&old_p);
        if old_p.is_dir() {
            return Err(format!(
                "{old} could not be removed: the script bind-mounts {run} on it"
            ));
        }
    }
    if !(old_p.is_symlink() && fs::read_link(&old_p).map(|t| t == target).unwrap_or(false)) {
        relink(&old_p)?;
    }
    Ok(())
}

fn exec(prog: &str, args: &[&str], lang: Option<&str>, quiet: bool) -> Result<bool, String> {
    // mountall.sh's PATH.
    let mut c = program(prog, args, "/sbin:/bin");
    if let Some(l) = lang {
        c.env("LANG", l);
    }
    if quiet {
        c.stderr(Stdio::null());
    }
    c.status()
        .map(|s| s.success())
        .map_err(|e| format!("{prog}: {e}"))
}

/// What the script would find that the built-in does not do: Err names it. Checked when
/// planning and when running.
pub fn plain_enough(env: &Env) -> Result<(), String> {
    if env.at("/run").is_symlink() {
        return Err("/run is a symlink: the script migrates it".into());
    }
    match fs::symlink_metadata(env.at("/run/initctl")) {
        Ok(m) if m.file_type().is_fifo() => {}
        _ if env.at("/usr/share/sysvinit/update-rc.d").is_file() => {
            return Err("no /run/initctl FIFO: the script makes one and signals init".into())
        }
        _ => {}
    }
    if env.at("/tmp").is_symlink() {
        return Err("/tmp is a symlink: the script makes its target".into());
    }
    let fstab = match read_small(&env.at("/etc/fstab")) {
        Ok(t) => String::from_utf8_lossy(&t).into_owned(),
        Err(_) => String::new(),
    };
    let root = super::checkroot::root_entry(&fstab);
    if root.mode != "rw" {
        return Err("the root is read-only in fstab: the script mounts a tmpfs on /tmp".into());
    }
    for line in fstab.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() > 1 && !w[0].starts_with('#') && w[1] == "/tmp" {
            return Err("/etc/fstab names /tmp: the script's mount_tmp reads it".into());
        }
    }
    if let Ok(t) = read_small(&env.at("/etc/default/locale")) {
        locale_lang(&String::from_utf8_lossy(&t))?;
    }
    Ok(())
}

/// Free space on /tmp in KiB, as `df -kP /tmp` gives it ("Available").
fn tmp_free_kib(env: &Env) -> Option<u64> {
    let st = sys::statvfs(&env.at("/tmp")).ok()?;
    Some(st.avail_bytes / 1024)
}

/// The built-in: mountall.sh's `start`.
pub(super) fn run(env: &Env, steps: &mut Steps) -> Result<(), String> {
    plain_enough(env)?;
    // mount_tmp: less than TMP_OVERFLOW_LIMIT (1024 KiB) free on the root's /tmp makes the
    // script mount a tmpfs there.
    if tmp_free_kib(env).is_some_and(|k| k < 1024) {
        return Err("less than 1 MiB free on /tmp: the script mounts a tmpfs there".into());
    }
    let lang = read_small(&env.at("/etc/default/locale"))
        .ok()
        .and_then(|t| locale_lang(&String::from_utf8_lossy(&t)).ok().flatten());
    steps.step()?;
    if is_mount_point(env, &env.at("/usr"))? {
        let usr = env.at("/usr").to_string_lossy().into_owned();
        exec("mount", &["-o", "remount", &usr], lang.as_deref(), false)?;
    }
    // A failed mount is reported by mount itself; the script goes on.
    exec("mount", &MOUNT_A, lang.as_deref(), false)?;
    steps.step()?;
    run_migrate(env, "/var/run", "/run")?;
    run_migrate(env, "/var/lock", "/run/lock")?;
    run_migrate(env, "/run/shm", "/dev/shm")?;
    fs::create_dir_all(env.at("/var/log/fsck"))
        .map_err(|e| format!("mkdir -p /var/log/fsck: {e}"))?;
    let cmdline = read_small(&env.proc_dir.join("cmdline"))
        .map(|t| String::from_utf8_lossy(&t).into_owned())
        .unwrap_or_default();
    let has_swap = read_small(&env.at("/etc/fstab"))
        .map(|t| {
            String::from_utf8_lossy(&t).lines().any(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.len() > 2 && !w[0].starts_with('#') && w[2] == "swap"
            })
        })
        .unwrap_or(false);
    if has_swap && !cmdline.split_whitespace().any(|w| w == "noswap") {
        exec("swapon", &["-a", "-e"], lang.as_deref(), true)?;
    }
    // mount_run, mount_lock, mount_shm once more: everything is mounted by now, so only
    // their bookkeeping is left.
    for point in ["/run", "/run/lock", "/dev/shm"] {
        if !is_mount_point(env, &env.at(point))? {
            return Err(format!("{point} is not mounted: the script mounts it"));
        }
    }
    super::ensure_dir_755(&env.at("/run/sendsigs.omit.d"))?;
    touch(&env.at("/run/.tmpfs"))?;
    touch(&env.at("/run/lock/.tmpfs"))?;
    touch(&env.at("/dev/shm/.tmpfs"))?;
    run_migrate(env, "/run/shm", "/dev/shm")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_locale_file_as_the_script_would_source_it() {
        assert_eq!(
            locale_lang("#  File generated by update-locale\n"),
            Ok(None)
        );
        assert_eq!(
            locale_lang("LANG=\"de_DE.UTF-8\"\nLANGUAGE=de:en\n"),
            Ok(Some("de_DE.UTF-8".into()))
        );
        assert!(locale_lang("LANG=$(cat /x)\n").is_err());
        assert!(locale_lang("export LANG=C\n").is_err());
    }
}
