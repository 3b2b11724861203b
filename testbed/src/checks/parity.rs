//! `parity`: a bootprint boot must leave the machine as a stock boot does (issue 15, part 4).
//! Two recorded boots of the text image from copies of one disk: Debian's own (sysvinit,
//! startpar, initramfs-tools) and every sysvinit lever of bootprint on (its initramfs, the
//! runner, the module loader, readahead). After boot done both must have the same daemons,
//! mounts, loaded modules, hostname, random seed, runlevel, clean /tmp and the same /run
//! (bootprint's own directory there aside, and initramfs-tools' /run/initramfs: its own
//! log and flags, which Debian's scripts only read when present), the same mount options,
//! modes and links. Two more boots force the fallbacks of what bootprint does in their
//! place: every built-in of the runner failing half-way; and the initramfs not checking the
//! root together with runlevel S's worker lost after rcS returned; both must end in the
//! same state. systemd's side is the `late` test.

use crate::checks::checklist::{self, Checks};
use crate::checks::late_test::{same_sections, section, sections};
use crate::vm::image;
use crate::vm::qemu::{self, BootOpts, Profile};
use crate::vm::util::{Error, Paths, Result};

/// Mount options are compared too, but for the size of /dev: the kernel sizes its one
/// devtmpfs by the RAM it counts when it makes it, before the initramfs is freed, and
/// Debian's initramfs is ten times bootprint's (udev's remount with `size=10M` does not
/// change it).
///
/// Run after the trace is written (so after boot done), after [`checklist::COMMON_STATE`].
const STATE_SCRIPT: &str = r#"echo "== random-seed"
test -s /var/lib/urandom/random-seed && echo present
echo "== runlevel"
runlevel
echo "== tmp"
ls -A /tmp
echo "== run"
ls -A /run | grep -v -e '^bootprint$' -e '^initramfs$'
echo "== mount-options"
awk '$3 == "devtmpfs" { gsub(/,(size|nr_inodes)=[0-9]+k?/, "", $4) } {print $2, $3, $4}' /proc/mounts | sort
echo "== modes"
stat -c '%n %a %U %G' /run/lock /dev/shm /dev/pts /run/sendsigs.omit.d /var/lib/urandom/random-seed 2>&1
for l in /dev/fd /dev/stdin /dev/stdout /dev/stderr /run/shm; do echo "$l -> $(readlink $l)"; done
echo "== fsck"
test -e /run/initramfs/fsck-root && echo "root checked in the initramfs"
echo "== utmp"
who -l | awk '{print $1, $2}' | sort
echo "== one-graph"
[ -e /run/bootprint/rc.log ] && awk '/ rc_begin runlevel=2 /{b=$1} / rc_end script=udev .*runlevel=S/{u=$1} / rc_start script=udev .*runlevel=S.*beside=1/{ub=1} / rc_handoff runlevel=S /{h=1} / rc_fallback runlevel=S .*reason=worker/{w=1} END{ if (h) print "rcS returned early"; if (ub) print "udev beside the path"; if (b && u > b) print "udev ended after runlevel 2 began"; if (!u) print "udev end not logged"; if (w) print "runlevel 2 ran the lost worker'"'"'s scripts" }' /run/bootprint/rc.log
echo "== builtins"
[ -e /run/bootprint/rc.log ] && sed -n 's/.* rc_start script=\([^ ]*\) .*builtin=1.*/ran \1/p; s/.* rc_builtin_failed script=\([^ ]*\) .*/failed \1/p' /run/bootprint/rc.log | sort
echo "== end"
"#;

const COMPARED: &[&str] = &[
    "daemons",
    "mounts",
    "modules",
    "hostname",
    "random-seed",
    "runlevel",
    "tmp",
    "run",
    "mount-options",
    "modes",
    "utmp",
];

/// The boot's built-ins (rc::builtin; the shutdown's are the `reboot` check's), by script:
/// each must have run on the test image, whose scripts and configuration are Debian's own
/// (checkroot.sh's only once the initramfs has checked the root).
const BUILTINS: [&str; 7] = [
    "checkfs.sh",
    "checkroot.sh",
    "hostname.sh",
    "mountall.sh",
    "mountdevsubfs.sh",
    "mountkernfs.sh",
    "urandom",
];

/// Every sysvinit lever bootprint has, on the kernel command line (with its initramfs).
pub const SYSV_LEVERS: &str = "bootprint.rc=1 bootprint.modules=1 bootprint.readahead=1";

pub fn run(paths: &Paths, cargo: bool) -> Result<()> {
    checklist::run("parity", |c| parity(paths, cargo, c))
}

fn parity(paths: &Paths, cargo: bool, c: &mut Checks) -> Result<()> {
    let img = image::ensure(paths, cargo)?;
    let ours = crate::vm::initramfs::ensure_ours(paths, &img)?;
    let boot = |append: &str, initrd: Option<&std::path::Path>| {
        let mut o = BootOpts::new(Profile::Fast);
        o.record = true;
        o.append = append.to_string();
        o.initrd = initrd.map(|p| p.to_path_buf());
        o.guest_script = Some(format!(
            "#!/bin/sh\n{}{STATE_SCRIPT}",
            checklist::COMMON_STATE
        ));
        let r = qemu::boot(paths, &img, &o)?;
        println!(
            "boot: {append:?}{}: login after {:.2} s, serial log {}",
            if initrd.is_some() {
                " (bootprint's initramfs)"
            } else {
                ""
            },
            r.host_login_s,
            r.serial_log.display()
        );
        Ok::<_, Error>(r.guest_output.unwrap_or_default())
    };
    let stock = boot("", None)?;
    let ours_out = boot(SYSV_LEVERS, Some(&ours))?;
    same_sections(c, "sysvinit + bootprint", &ours_out, &stock, COMPARED, &[]);
    builtins_ran(c, "sysvinit + bootprint", &ours_out, "ran", &BUILTINS);
    // Not compared with the stock boot: the test image's Debian initramfs carries no fsck
    // (initramfs-tools skips the root then, and checkroot.sh checks it); ours checks it.
    let s = sections(&ours_out);
    c.check(
        section(&s, "fsck").is_some_and(|set| set.len() == 1),
        "sysvinit + bootprint: the initramfs checked the root (fsck-root flag), so checkroot.sh did not",
    );
    one_graph(c, "sysvinit + bootprint", &ours_out, false);
    // Every built-in failing half-way (bootprint.rc.fault=builtin): the scripts mend it.
    let label = "sysvinit + bootprint, built-ins failing";
    let faulty = boot(
        &format!("{SYSV_LEVERS} bootprint.rc.fault=builtin"),
        Some(&ours),
    )?;
    same_sections(c, label, &faulty, &stock, COMPARED, &[]);
    builtins_ran(c, label, &faulty, "failed", &BUILTINS);
    // The initramfs leaving the root's check to checkroot.sh, which is then no built-in:
    // it checks the root itself, with the console. The same boot loses runlevel S's worker
    // right after rcS returned (bootprint.rc.fault=beside): runlevel 2's runner runs S's
    // scripts it had not started. Two independent fallbacks, one boot (make test's time).
    let label = "sysvinit + bootprint, no fsck in the initramfs, S's worker lost";
    let unchecked = boot(
        &format!("{SYSV_LEVERS} bootprint.initramfs.fault=fsck bootprint.rc.fault=beside"),
        Some(&ours),
    )?;
    same_sections(c, label, &unchecked, &stock, COMPARED, &[]);
    one_graph(c, label, &unchecked, true);
    let but_checkroot: Vec<&str> = BUILTINS
        .iter()
        .copied()
        .filter(|b| *b != "checkroot.sh")
        .collect();
    builtins_ran(c, label, &unchecked, "ran", &but_checkroot);
    let s = sections(&unchecked);
    c.check(
        section(&s, "fsck").is_some_and(|set| set.is_empty()),
        &format!("{label}: no fsck-root flag, so checkroot.sh checked the root"),
    );
    Ok(())
}

/// Checks that rcS returned at the S part of the login path with udev beside it, as one
/// graph for the boot plans on the test image, and (`lost`) that runlevel 2's runner ran the lost worker's scripts.
fn one_graph(c: &mut Checks, label: &str, out: &str, lost: bool) {
    let s = sections(out);
    let has =
        |line: &str| section(&s, "one-graph").is_some_and(|set| set.iter().any(|l| l == line));
    c.check(
        has("rcS returned early") && has("udev beside the path"),
        &format!(
            "{label}: rcS returned at the S part of the login path (rc_handoff), udev beside it"
        ),
    );
    // When udev ended is a matter of timing, not of the plan: shown, not checked.
    println!(
        "      {label}: udev ended {} runlevel 2 began",
        if has("udev ended after runlevel 2 began") {
            "after"
        } else {
            "before"
        }
    );
    if lost {
        c.check(
            has("runlevel 2 ran the lost worker's scripts"),
            &format!("{label}: runlevel 2's runner ran what the lost worker had not started"),
        );
    }
}

/// Checks that the `builtins` section lists `what` (`ran` or `failed`) for exactly `want`.
fn builtins_ran(c: &mut Checks, label: &str, out: &str, what: &str, want: &[&str]) {
    let s = sections(out);
    let got: Vec<&str> = section(&s, "builtins")
        .map(|set| {
            set.iter()
                .filter_map(|l| l.strip_prefix(what)?.strip_prefix(' '))
                .collect()
        })
        .unwrap_or_default();
    c.check(
        got == want,
        &format!(
            "{label}: rc.log says these built-ins {what}: {} (got {got:?})",
            want.join(" ")
        ),
    );
}
