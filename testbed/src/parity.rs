//! `parity`: a bootprint boot must leave the machine as a stock boot does (issue 15, part 4).
//! Two recorded boots of the text image from copies of one disk: Debian's own (sysvinit,
//! startpar, initramfs-tools) and every sysvinit lever of bootprint on (its initramfs, the
//! runner, the module loader, readahead). After boot done both must have the same daemons,
//! mounts, loaded modules, hostname, random seed, runlevel, clean /tmp and the same /run
//! (bootprint's own directory there aside, and initramfs-tools' /run/initramfs: its own
//! log and flags, which Debian's scripts only read when present). systemd's side is the
//! `late` test.

use crate::checks::{self, Checks};
use crate::image;
use crate::late_test::same_sections;
use crate::qemu::{self, BootOpts, Profile};
use crate::util::{Error, Paths, Result};

/// Run after the trace is written (so after boot done), after [`checks::COMMON_STATE`].
const STATE_SCRIPT: &str = r#"echo "== random-seed"
test -s /var/lib/urandom/random-seed && echo present
echo "== runlevel"
runlevel
echo "== tmp"
ls -A /tmp
echo "== run"
ls -A /run | grep -v -e '^bootprint$' -e '^initramfs$'
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
];

/// Every sysvinit lever bootprint has, on the kernel command line (with its initramfs).
pub const SYSV_LEVERS: &str = "bootprint.rc=1 bootprint.modules=1 bootprint.readahead=1";

pub fn run(paths: &Paths, cargo: bool) -> Result<()> {
    checks::run("parity", |c| parity(paths, cargo, c))
}

fn parity(paths: &Paths, cargo: bool, c: &mut Checks) -> Result<()> {
    let img = image::ensure(paths, cargo)?;
    let ours = crate::initramfs_test::ensure_ours(paths, &img)?;
    let boot = |append: &str, initrd: Option<&std::path::Path>| {
        let mut o = BootOpts::new(Profile::Fast);
        o.record = true;
        o.append = append.to_string();
        o.initrd = initrd.map(|p| p.to_path_buf());
        o.guest_script = Some(format!("#!/bin/sh\n{}{STATE_SCRIPT}", checks::COMMON_STATE));
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
    Ok(())
}
