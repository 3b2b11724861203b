//! The end of a shutdown without the shell: `sendsigs`, `umountnfs.sh`, `umountfs`,
//! `umountroot`, `reboot` and `halt` `stop` (initscripts 3.06-4 and 3.14-4 ship the same
//! bytes).
//!
//! Under the runner these ran one after another, 1.5 s of a 5 s shutdown on the test image
//! (TCG), almost all of it the shell: sourcing `init-functions` and its hooks, and
//! `umountfs`'s `echo | grep` per mounted file system, to find that there is nothing to
//! unmount but the root. The built-ins do what the scripts do **when there is nothing to
//! unmount or switch off but what they leave alone**, and decline, before doing anything,
//! otherwise: the script then runs and does all of it. The programs the scripts run for
//! the work that is left (`killall5`, `halt -w`, `mount -o remount,ro`, `reboot`, `halt`)
//! run as the same programs with the same arguments.

use std::fs;
use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{is_mount_point, program, read_small, Env, Steps};

/// The scripts' `PATH`.
const SCRIPT_PATH: &str = "/usr/sbin:/usr/bin:/sbin:/bin";
/// umountroot's.
const UMOUNTROOT_PATH: &str = "/sbin:/bin";

/// `VERBOSE` as `/lib/init/vars.sh` leaves it with `/etc/default/rcS` setting nothing (the
/// built-ins run only then): `no`, unless `INIT_VERBOSE` says otherwise.
fn quiet() -> bool {
    match std::env::var("INIT_VERBOSE") {
        Ok(v) if !v.is_empty() => v == "no",
        _ => true,
    }
}

/// What the built-ins below refuse in common: a verbose shutdown (its messages are the
/// script's), and systemd running (`40-systemd` would hand the script to systemctl).
fn common_checks(env: &Env) -> Result<(), String> {
    super::common_runtime_checks(env)?;
    if !quiet() {
        return Err("INIT_VERBOSE is set: the script's verbose messages are its own".into());
    }
    Ok(())
}

/// The mount table as a script reads it (`/etc/mtab` or `/proc/mounts`).
fn read_table(path: &Path) -> Result<String, String> {
    read_small(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// What `umountnfs.sh` would unmount from its `/etc/mtab` text: network file systems,
/// `_netdev` ones (not ocfs2 or gfs) and non-top-level virtual ones, outside the points it
/// skips.
pub fn umountnfs_targets(mtab: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    for line in mtab.lines() {
        let mut w = line.split_whitespace();
        let (_dev, point, fstype, opts) = (
            w.next().unwrap_or(""),
            w.next().unwrap_or(""),
            w.next().unwrap_or(""),
            w.next().unwrap_or(""),
        );
        let skipped = matches!(
            point,
            "/" | "/proc" | "/dev" | "/dev/pts" | "/dev/shm" | "/sys" | "/run"
        ) || point.starts_with("/proc/")
            || point.starts_with("/run/");
        if skipped {
            continue;
        }
        let network = matches!(
            fstype,
            "nfs" | "nfs4" | "smbfs" | "ncp" | "ncpfs" | "cifs" | "coda" | "ceph"
        );
        let virtual_fs = matches!(
            fstype,
            "proc" | "procfs" | "linprocfs" | "devpts" | "usbfs" | "usbdevfs" | "sysfs"
        );
        let netdev = opts.split(',').any(|o| o == "_netdev") && !matches!(fstype, "ocfs2" | "gfs");
        if network || virtual_fs || netdev {
            dirs.push(point.to_string());
        }
    }
    dirs
}

/// `umountnfs.sh stop` with nothing to unmount: `rm -f /tmp/.clean /run/.clean
/// /run/lock/.clean` (unlinked, never followed), then `halt -w` (the reboot record in
/// wtmp; its exit status ignored, as the script ignores it). The script's order is the
/// other way round; neither step reads what the other writes, and a built-in that fails
/// after `halt -w` would have the script write a second record.
pub(super) fn umountnfs(env: &Env, steps: &mut Steps) -> Result<(), String> {
    common_checks(env)?;
    let dirs = umountnfs_targets(&read_table(&env.at("/etc/mtab"))?);
    if !dirs.is_empty() {
        return Err(format!("{} to unmount: the script does it", dirs.join(" ")));
    }
    if env.at("/sbin/initctl").exists() {
        return Err("/sbin/initctl exists: the script emits upstart's event".into());
    }
    steps.step()?;
    for flag in ["/tmp/.clean", "/run/.clean", "/run/lock/.clean"] {
        match fs::remove_file(env.at(flag)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("rm -f {flag}: {e}")),
        }
    }
    steps.step()?;
    program("halt", &["-w"], SCRIPT_PATH)
        .status()
        .map(|_| ())
        .map_err(|e| format!("halt -w: {e}"))
}

/// What `umountfs` would unmount from its `/proc/mounts` text: (tmpfs, other) mount
/// points. The lines up to and including the last mounted on `/` are protected (the
/// script's `sed`), and so is any line whose `DEV MTPT ` a protected line holds (its
/// `grep -qsF`); then the points and types it skips.
pub fn umountfs_targets(mounts: &str) -> (Vec<String>, Vec<String>) {
    let lines: Vec<&str> = mounts.lines().collect();
    // The sed prints what it gathered at each line mounted on `/`: everything up to the
    // last such line.
    let protected: &[&str] = match lines.iter().rposition(|l| l.split(' ').nth(1) == Some("/")) {
        Some(i) => &lines[..=i],
        None => &[],
    };
    let (mut tmpfs, mut other) = (Vec::new(), Vec::new());
    for line in &lines {
        let mut w = line.split_whitespace();
        let (dev, point, fstype) = (
            w.next().unwrap_or(""),
            w.next().unwrap_or(""),
            w.next().unwrap_or(""),
        );
        let key = format!("{dev} {point} ");
        if protected.iter().any(|p| p.contains(&key)) {
            continue;
        }
        let skipped_point = matches!(
            point,
            "/" | "/usr"
                | "/proc"
                | "/dev"
                | "/.dev"
                | "/dev/pts"
                | "/dev/shm"
                | "/dev/.static/dev"
                | "/sys"
                | "/run"
                | "/run/lock"
                | "/run/shm"
                | "/run/rpc_pipefs"
                | "/dev/vcs"
        ) || point.starts_with("/proc/")
            || point.starts_with("/sys/");
        if skipped_point {
            continue;
        }
        match fstype {
            "proc" | "procfs" | "linprocfs" | "sysfs" | "securityfs" | "usbfs" | "usbdevfs"
            | "devpts" => {}
            "tmpfs" => tmpfs.push(point.to_string()),
            _ => other.push(point.to_string()),
        }
    }
    (tmpfs, other)
}

/// Whether `/proc/swaps` text lists a swap in use (`swapoff -a` would switch it off).
pub fn swap_in_use(swaps: &str) -> bool {
    swaps.lines().skip(1).any(|l| !l.trim().is_empty())
}

/// `umountfs stop` with nothing to unmount and no swap in use: what it prints
/// (`Deactivating swap...done.`); `swapoff -a` would find nothing to do.
pub(super) fn umountfs(env: &Env, steps: &mut Steps) -> Result<(), String> {
    common_checks(env)?;
    let (tmpfs, other) = umountfs_targets(&read_table(&env.proc_dir.join("mounts"))?);
    if !tmpfs.is_empty() || !other.is_empty() {
        let all = [tmpfs, other].concat().join(" ");
        return Err(format!("{all} to unmount: the script does it"));
    }
    if swap_in_use(&read_table(&env.proc_dir.join("swaps"))?) {
        return Err("swap in use: the script's swapoff -a switches it off".into());
    }
    steps.step()?;
    say("Deactivating swap...done.")
}

/// `umountroot stop` with /usr not a mount point of its own: the script's `remount_ro root
/// /`, the same three `mount` commands in turn (the first two quiet), their failure
/// ignored as the script ignores it.
pub(super) fn umountroot(env: &Env, steps: &mut Steps) -> Result<(), String> {
    common_checks(env)?;
    if is_mount_point(env, &env.at("/usr"))? {
        return Err("/usr is a mount point: the script remounts it too".into());
    }
    steps.step()?;
    let point = env.root.to_string_lossy().into_owned();
    let attempts: [&[&str]; 3] = [
        &["-n", "-o", "remount,ro", "-t", "dummytype", "dummydev"],
        &["-n", "-o", "remount,ro", "dummydev"],
        &["-n", "-o", "remount,ro"],
    ];
    for (n, args) in attempts.iter().enumerate() {
        let mut c = program("mount", args, UMOUNTROOT_PATH);
        c.arg(&point);
        if n < 2 {
            c.stderr(Stdio::null());
        }
        let ok = c.status().map_err(|e| format!("mount: {e}"))?.success();
        if ok {
            break;
        }
    }
    Ok(())
}

/// `/etc/default/halt` as the scripts source it: `HALT` and `NETDOWN` (Debian ships
/// `HALT=poweroff`, `NETDOWN=yes`). Anything else is an Err naming the line: the script
/// would run it as shell.
pub fn halt_defaults(text: &str) -> Result<(Option<String>, Option<String>), (usize, String)> {
    let (mut halt, mut netdown) = (None, None);
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let plain = |v: &str| {
            !v.is_empty()
                && v.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        };
        match t.split_once('=') {
            Some(("HALT", v)) if plain(v) => halt = Some(v.to_string()),
            Some(("NETDOWN", v)) if plain(v) => netdown = Some(v.to_string()),
            _ => return Err((n + 1, format!("{t:?} is not HALT=word or NETDOWN=word"))),
        }
    }
    Ok((halt, netdown))
}

/// The arguments the `reboot` script gives `reboot`: `-d -f`, and `-i` unless `NETDOWN=no`.
pub fn reboot_args(netdown: Option<&str>) -> Vec<&'static str> {
    let mut a = vec!["-d", "-f"];
    if netdown != Some("no") {
        a.push("-i");
    }
    a
}

/// The arguments the `halt` script gives `halt`: `-d -f`, `-i` unless `NETDOWN=no`, `-p`
/// unless halting (`INIT_HALT`, else `HALT`), `-h` unless an md array is active.
pub fn halt_args(
    init_halt: Option<&str>,
    halt: Option<&str>,
    netdown: Option<&str>,
    mdstat: &str,
) -> Vec<&'static str> {
    let init_halt = match init_halt.filter(|v| !v.is_empty()) {
        Some(v) => v.to_string(),
        None => match halt.and_then(|h| h.chars().next()) {
            Some('H' | 'h') => "HALT".into(),
            _ => "POWEROFF".into(),
        },
    };
    let md_active = mdstat
        .lines()
        .any(|l| l.starts_with("md") && l.contains("active"));
    let mut a = vec!["-d", "-f"];
    if netdown != Some("no") {
        a.push("-i");
    }
    if init_halt != "HALT" {
        a.push("-p");
    }
    if !md_active {
        a.push("-h");
    }
    a
}

/// `/etc/default/halt`'s values (absent: none).
fn read_halt_defaults(env: &Env) -> Result<(Option<String>, Option<String>), String> {
    let path = env.at("/etc/default/halt");
    match read_small(&path) {
        Ok(b) => halt_defaults(&String::from_utf8_lossy(&b))
            .map_err(|(line, why)| format!("/etc/default/halt:{line}: {why}")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok((None, None)),
        Err(e) => Err(format!("/etc/default/halt: {e}")),
    }
}

/// `reboot stop`: `Will now restart.`, then `reboot -d -f -i` in this process's place.
/// Returns only if that program could not be started.
pub(super) fn reboot(env: &Env, steps: &mut Steps) -> Result<(), String> {
    common_checks(env)?;
    let (_, netdown) = read_halt_defaults(env)?;
    steps.step()?;
    say("Will now restart.")?;
    steps.step()?;
    let e = program("reboot", &reboot_args(netdown.as_deref()), SCRIPT_PATH).exec();
    Err(format!("reboot: {e}"))
}

/// `halt stop`: `Will now halt.`, then `halt -d -f ...` in this process's place. Declines
/// where a UPS is to be told to cut the power (`/etc/init.d/ups-monitor`).
pub(super) fn halt(env: &Env, steps: &mut Steps) -> Result<(), String> {
    common_checks(env)?;
    let (halt, netdown) = read_halt_defaults(env)?;
    if env.at("/etc/init.d/ups-monitor").exists() {
        return Err("/etc/init.d/ups-monitor exists: the script runs it".into());
    }
    let mdstat = read_small(&env.proc_dir.join("mdstat"))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let init_halt = std::env::var("INIT_HALT").ok();
    let args = halt_args(
        init_halt.as_deref(),
        halt.as_deref(),
        netdown.as_deref(),
        &mdstat,
    );
    steps.step()?;
    say("Will now halt.")?;
    steps.step()?;
    let e = program("halt", &args, SCRIPT_PATH).exec();
    Err(format!("halt: {e}"))
}

/// How long sendsigs waits for what its SIGTERM did not end before the SIGKILL: its ten
/// rounds of `sleep 1`.
pub const SENDSIGS_WAIT: Duration = Duration::from_secs(10);

/// The longest pause between two of the built-in sendsigs' looks (`killall5 -18`): the
/// script looks once a second.
const SENDSIGS_POLL_MAX: Duration = Duration::from_millis(200);

/// The words sendsigs passes as `-o WORD`: those of `/run/sendsigs.omit` (when it exists),
/// then of each regular file in `/run/sendsigs.omit.d` (in name order, dot files left out,
/// as the shell's `*`), split at white space as `$(cat FILE)` is. killall5 itself skips a
/// word that is not a pid, as it would from the script.
fn sendsigs_omits(env: &Env) -> Result<Vec<String>, String> {
    let mut files = Vec::new();
    let first = env.at("/run/sendsigs.omit");
    if fs::symlink_metadata(&first).is_ok() {
        files.push(first);
    }
    if let Ok(dir) = fs::read_dir(env.at("/run/sendsigs.omit.d")) {
        let mut names: Vec<_> = dir
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| !n.to_string_lossy().starts_with('.'))
            })
            .filter(|p| p.is_file())
            .collect();
        names.sort();
        files.extend(names);
    }
    let mut words = Vec::new();
    for f in files {
        let text = read_small(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        words.extend(
            String::from_utf8_lossy(&text)
                .split_whitespace()
                .map(str::to_string),
        );
    }
    Ok(words)
}

/// `killall5 -SIG -o WORD...`; whether it exited 0 (it found a process to signal). A
/// killall5 that cannot be started is an Err.
fn killall5(signal: i32, omits: &[String]) -> io::Result<bool> {
    let mut c = program("killall5", &[&format!("-{signal}")], SCRIPT_PATH);
    for w in omits {
        c.arg("-o").arg(w);
    }
    c.status().map(|s| s.success())
}

/// Whether `init-functions` would print in colour (`log_use_fancy_output`): the output a
/// terminal, `TERM` set and not `dumb`, tput and expr there (the built-in does not ask
/// tput about the terminal's capabilities).
fn fancy_output(env: &Env) -> bool {
    let term = std::env::var("TERM").unwrap_or_default();
    ::sys::stdout_is_tty()
        && !term.is_empty()
        && term != "dumb"
        && env.at("/usr/bin/tput").is_file()
        && env.at("/usr/bin/expr").is_file()
}

/// `sendsigs stop`: the pids to spare as the script reads them, `sync`, `killall5 -15`,
/// then what is left looked at with `killall5 -18` until nothing is or [`SENDSIGS_WAIT`]
/// has passed (the script looks once a second; the built-in every 50 ms at first, then
/// every [`SENDSIGS_POLL_MAX`]: the same wait, over as soon as the last process is gone);
/// then, with something left, the process list (`pstree`, else `ps -ef`) and
/// `killall5 -9`. Its messages are the script's. Declines only before the SIGTERM: where
/// upstart's `initctl` exists, or an omit file cannot be read.
pub(super) fn sendsigs(env: &Env, steps: &mut Steps) -> Result<(), String> {
    super::common_runtime_checks(env)?;
    if env.at("/sbin/initctl").exists() {
        return Err("/sbin/initctl exists: the script spares upstart's jobs".into());
    }
    let omits = sendsigs_omits(env)?;
    steps.step()?;
    ::sys::sync();
    steps.step()?;
    say_part("Asking all remaining processes to terminate...")?;
    killall5(libc::SIGTERM, &omits).map_err(|e| format!("killall5: {e}"))?;
    // From here on the SIGTERM is sent: nothing may hand over to the script (it would send
    // it again and wait again).
    let _ = say("done.");
    let start = Instant::now();
    let mut pause = Duration::from_millis(50);
    let ended = loop {
        // A killall5 that cannot run is the script's `else` branch too: nothing to wait for.
        if !killall5(libc::SIGCONT, &omits).unwrap_or(false) {
            break Some(start.elapsed());
        }
        if start.elapsed() >= SENDSIGS_WAIT {
            break None;
        }
        std::thread::sleep(pause.min(SENDSIGS_WAIT.saturating_sub(start.elapsed())));
        pause = (pause * 2).min(SENDSIGS_POLL_MAX);
    };
    match ended {
        // The script's `$seq`: the round of its loop that found nothing.
        Some(after) => {
            let seq = (after.as_secs() + 1).min(10);
            let _ = say(&format!("All processes ended within {seq} seconds...done."));
        }
        None => {
            report_unkillable(env);
            let _ = say_part("Killing all remaining processes...");
            let _ = killall5(libc::SIGKILL, &omits);
            let failed = if fancy_output(env) {
                "\x1b[31mfailed.\x1b[0m"
            } else {
                "failed."
            };
            let _ = say(failed);
        }
    }
    Ok(())
}

/// sendsigs' `report_unkillable`: the process tree, or list, on the console.
fn report_unkillable(env: &Env) {
    let (what, prog, args): (&str, &str, &[&str]) = if env.at("/usr/bin/pstree").is_file() {
        ("pstree", "/usr/bin/pstree", &[])
    } else if env.at("/bin/ps").is_file() {
        ("ps", "/bin/ps", &["-ef"])
    } else {
        return;
    };
    let _ = say(&format!("Currently running processes ({what}):"));
    let _ = program(prog, args, SCRIPT_PATH).status();
}

/// A line on the console, as the script's `echo`.
fn say(line: &str) -> Result<(), String> {
    say_part(&format!("{line}\n"))
}

/// Text on the console without a newline, as `echo -n`.
fn say_part(text: &str) -> Result<(), String> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| format!("writing to the console: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test image's table at shutdown (Debian 13, sysvinit, after the daemons stopped).
    const IMAGE_MOUNTS: &str = "\
/dev/vda / ext4 rw,relatime 0 0
devtmpfs /dev devtmpfs rw,nosuid,relatime,size=493916k,nr_inodes=123479,mode=755 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /run tmpfs rw,nosuid,nodev,noexec,relatime,size=101036k,mode=755 0 0
tmpfs /run/lock tmpfs rw,nosuid,nodev,noexec,relatime,size=5120k 0 0
securityfs /sys/kernel/security securityfs rw,nosuid,nodev,noexec,relatime 0 0
pstore /sys/fs/pstore pstore rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=202072k 0 0
devpts /dev/pts devpts rw,nosuid,noexec,relatime,gid=5,mode=620,ptmxmode=000 0 0
";

    #[test]
    fn on_the_image_there_is_nothing_to_unmount() {
        assert!(umountnfs_targets(IMAGE_MOUNTS).is_empty());
        assert_eq!(umountfs_targets(IMAGE_MOUNTS), (vec![], vec![]));
    }

    #[test]
    fn what_the_scripts_would_unmount_is_found() {
        let t = format!(
            "{IMAGE_MOUNTS}\
server:/export /srv/nfs nfs4 rw,relatime 0 0
/dev/vdb /data ext4 rw,_netdev 0 0
/dev/vdc /cluster ocfs2 rw,_netdev 0 0
proc /srv/chroot/proc proc rw 0 0
tmpfs /run/user/0 tmpfs rw 0 0
tmpfs /tmp tmpfs rw 0 0
/dev/vdd /home ext4 rw 0 0
"
        );
        assert_eq!(
            umountnfs_targets(&t),
            ["/srv/nfs", "/data", "/srv/chroot/proc"]
        );
        let (tmpfs, other) = umountfs_targets(&t);
        // /run/user/0 is not among umountfs's skipped points (only /run, /run/lock, ...).
        assert_eq!(tmpfs, ["/run/user/0", "/tmp"]);
        // umountfs leaves proc to umountnfs.sh.
        assert_eq!(other, ["/srv/nfs", "/data", "/cluster", "/home"]);
    }

    #[test]
    fn umountfs_protects_what_was_mounted_before_the_root() {
        // The initramfs's /dev and a bind of /dev/vda elsewhere: the first is before the
        // root's line, the second names the root's "DEV MTPT " only if it is the same.
        let t = "\
udev /dev devtmpfs rw 0 0
tmpfs /early tmpfs rw 0 0
/dev/vda / ext4 rw 0 0
/dev/vda /srv/bind ext4 rw 0 0
tmpfs /early tmpfs rw 0 0
";
        let (tmpfs, other) = umountfs_targets(t);
        // "tmpfs /early " is in a protected line: skipped both times.
        assert!(tmpfs.is_empty(), "{tmpfs:?}");
        assert_eq!(other, ["/srv/bind"]);
        // Two lines on `/` (an initramfs's rootfs under the real root): all up to the last.
        let (tmpfs, _) = umountfs_targets(
            "rootfs / rootfs rw 0 0\ntmpfs /early tmpfs rw 0 0\n/dev/vda / ext4 rw 0 0\n",
        );
        assert!(tmpfs.is_empty(), "{tmpfs:?}");
        // No root line: nothing is protected.
        let (tmpfs, _) = umountfs_targets("tmpfs /early tmpfs rw 0 0\n");
        assert_eq!(tmpfs, ["/early"]);
    }

    #[test]
    fn swaps_in_use_are_the_lines_after_the_header() {
        let header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
        assert!(!swap_in_use(header));
        assert!(!swap_in_use(""));
        assert!(swap_in_use(&format!(
            "{header}/dev/vdb1 partition\t1048572\t0\t-2\n"
        )));
    }

    #[test]
    fn sendsigs_spares_the_words_of_its_omit_files_as_the_shell_reads_them() {
        let tmp = tempfile::tempdir().unwrap();
        let env = Env::under(tmp.path());
        assert!(sendsigs_omits(&env).unwrap().is_empty());
        let dir = tmp.path().join("run/sendsigs.omit.d");
        fs::create_dir_all(&dir).unwrap();
        fs::write(tmp.path().join("run/sendsigs.omit"), "12\n").unwrap();
        fs::write(dir.join("rsyslog"), "605 606\n").unwrap();
        fs::write(dir.join("bootprint-rc"), "1029\n1030 junk\n").unwrap();
        fs::write(dir.join(".hidden"), "7\n").unwrap();
        fs::create_dir(dir.join("sub")).unwrap();
        std::os::unix::fs::symlink(dir.join("rsyslog"), dir.join("zz-link")).unwrap();
        assert_eq!(
            sendsigs_omits(&env).unwrap(),
            ["12", "1029", "1030", "junk", "605", "606", "605", "606"]
        );
    }

    #[test]
    fn halt_defaults_as_debian_ships_them_and_otherwise() {
        let debian =
            "# Default behaviour of shutdown -h / halt. Set to \"halt\" or \"poweroff\".\n\
                      HALT=poweroff\n\n# Bring networking down ...\nNETDOWN=yes\n";
        assert_eq!(
            halt_defaults(debian),
            Ok((Some("poweroff".into()), Some("yes".into())))
        );
        assert_eq!(halt_defaults(""), Ok((None, None)));
        let (line, why) = halt_defaults("HALT=halt\nNETDOWN=$(cat /x)\n").unwrap_err();
        assert_eq!(line, 2);
        assert!(why.contains("NETDOWN"), "{why}");
        assert!(halt_defaults("export HALT=halt\n").is_err());
    }

    #[test]
    fn reboot_and_halt_get_the_scripts_arguments() {
        assert_eq!(reboot_args(Some("yes")), ["-d", "-f", "-i"]);
        assert_eq!(reboot_args(None), ["-d", "-f", "-i"]);
        assert_eq!(reboot_args(Some("no")), ["-d", "-f"]);
        let md = "Personalities : [raid1]\nmd0 : active raid1 vdb1[1] vda1[0]\n";
        assert_eq!(
            halt_args(None, Some("poweroff"), Some("yes"), ""),
            ["-d", "-f", "-i", "-p", "-h"]
        );
        assert_eq!(halt_args(None, Some("halt"), Some("no"), md), ["-d", "-f"]);
        // shutdown -H exports INIT_HALT=HALT: it wins over the file.
        assert_eq!(
            halt_args(Some("HALT"), Some("poweroff"), None, ""),
            ["-d", "-f", "-i", "-h"]
        );
        assert_eq!(
            halt_args(Some("POWEROFF"), Some("halt"), None, ""),
            ["-d", "-f", "-i", "-p", "-h"]
        );
    }
}
