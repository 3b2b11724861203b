//! `faults`: the fault matrix. Each case is a real boot of the test-bed image with one
//! thing broken on purpose (a killed process, a damaged pack, a full disk, a hostile init
//! script, a bad configuration...): it must reach `login:` and leave a trace that
//! `bootprint report` reads, or a clear reason why there is none.
//!
//! A case breaks things in one or more of three ways: kernel arguments; edits of the disk
//! before the boot (with `debugfs -w`: files written, FIFOs and device nodes made, inode
//! fields set, the readahead pack replaced); and a hook run by sysvinit before `rcS`
//! (an inittab `sysinit` line), for what must happen while the machine boots. After the
//! login a script in the guest waits for the trace (in /var/log/bootprint or, when that
//! cannot be written, /run/bootprint), runs `bootprint report --json` on it and prints its
//! events; the case's check reads that. `make test` runs the cheap cases, `make bench` all.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use readahead::pack::{Entry, Pack, Range};
use serde_json::json;

use crate::vm::image::{self, Image};
use crate::vm::qemu::{self, BootOpts, BootResult, Profile};
use crate::vm::util::{fresh_dir, io_err, run_logged, Error, Paths, Result};

const BOOT_INIT: &str = "init=/usr/lib/bootprint/bootprint-boot";
const PACK: &str = "/var/lib/bootprint/readahead.pack";

/// The disk a case starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    /// The image as built.
    Image,
    /// After one boot with the recorder and readahead learning: a pack and a history.
    Seasoned,
}

/// One case of the matrix.
struct Case {
    name: &'static str,
    what: &'static str,
    /// In `make test` (the whole matrix runs in `make bench`).
    cheap: bool,
    base: Base,
    /// bootprint's own initramfs instead of Debian's.
    ours: bool,
    append: &'static str,
    /// Disk edits before the boot.
    edit: fn(&Edits) -> Result<()>,
    /// A shell snippet run by sysvinit before rcS (in the background unless it says).
    hook: Option<&'static str>,
    /// Whether the recorder must leave a trace; else the guest waits only while a recorder
    /// runs.
    trace: Expect,
    /// The case's own check of what the guest reported; `Ok` says what was seen.
    check: fn(&Report) -> std::result::Result<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A trace, readable by `bootprint report`.
    Trace,
    /// No trace is possible (the recorder was killed, or never ran): the reason is the
    /// case's own.
    NoTrace(&'static str),
}

/// What the guest reported after the login.
#[derive(Debug, Default)]
pub struct Report {
    /// Where the trace was found, if anywhere.
    pub trace: Option<String>,
    /// `bootprint report --json` on it succeeded.
    pub report_ok: bool,
    /// The trace's events.log.
    pub events: Vec<trace::Event>,
    /// Everything the guest script printed.
    pub output: String,
}

impl Report {
    fn event(&self, kind: &str) -> Option<&trace::Event> {
        self.events.iter().find(|e| e.kind == kind)
    }

    fn warnings(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e.kind == "warning")
            .filter_map(|e| e.get("what").map(str::to_string))
            .collect()
    }
}

fn nothing(_: &Edits) -> Result<()> {
    Ok(())
}

/// Every case's name and what it breaks, for the command line's `--case`.
pub fn names() -> Vec<(&'static str, &'static str)> {
    cases().iter().map(|c| (c.name, c.what)).collect()
}

/// Every case, in the order they run.
fn cases() -> Vec<Case> {
    [
        recorder_cases(),
        readahead_cases(),
        pack_entry_cases(),
        disk_cases(),
        config_cases(),
        rc_script_cases(),
        rc_fault_cases(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The recorder killed or stopped mid-boot.
fn recorder_cases() -> Vec<Case> {
    vec![
        Case {
            name: "recorder-killed",
            what: "the recorder SIGKILLed 2 s into rcS",
            cheap: true,
            base: Base::Image,
            ours: false,
            append: BOOT_INIT,
            edit: nothing,
            hook: Some("sleep 2; kill_recorder KILL"),
            trace: Expect::NoTrace("the recorder was killed before it could write"),
            check: |r| match &r.trace {
                None => Ok("no trace, as expected of a killed recorder".into()),
                Some(t) => Err(format!("a trace at {t} from a recorder that was killed")),
            },
        },
        Case {
            name: "recorder-terminated",
            what: "the recorder sent SIGTERM 2 s into rcS: it writes what it has",
            cheap: false,
            base: Base::Image,
            ours: false,
            append: BOOT_INIT,
            edit: nothing,
            hook: Some("sleep 2; kill_recorder TERM"),
            trace: Expect::Trace,
            check: |r| match r.event("boot_done") {
                Some(e) if e.get("reason") == Some("terminated") => {
                    Ok("boot_done reason=terminated".into())
                }
                other => Err(format!(
                    "expected boot_done reason=terminated, got {other:?}"
                )),
            },
        },
    ]
}

/// The readahead replay killed, and packs damaged or learned elsewhere: the pack is refused and readahead learns again.
fn readahead_cases() -> Vec<Case> {
    vec![
        Case {
            name: "replay-killed",
            what: "the readahead replay child SIGKILLed as it starts",
            cheap: false,
            base: Base::Seasoned,
            ours: false,
            append: "bootprint.readahead=1 init=/usr/lib/bootprint/bootprint-boot",
            edit: nothing,
            hook: Some("kill_replay"),
            trace: Expect::Trace,
            check: |r| {
                if r.event("readahead_replay_start").is_none() {
                    return Err("no readahead_replay_start: nothing was replayed".into());
                }
                Ok(format!(
                    "replay started, then: {}",
                    r.event("readahead_replay")
                        .map(|_| "it reported (it had finished before the kill)".to_string())
                        .unwrap_or_else(|| r.warnings().join("; "))
                ))
            },
        },
        Case {
            name: "pack-corrupt",
            what: "a byte in the middle of the pack flipped",
            cheap: false,
            base: Base::Seasoned,
            ours: false,
            append: "bootprint.readahead=1 init=/usr/lib/bootprint/bootprint-boot",
            edit: |e| {
                e.edit_pack(|b| {
                    let i = b.len() / 2;
                    b[i] ^= 0x5a;
                })
            },
            hook: None,
            trace: Expect::Trace,
            check: |r| relearns(r, "checksum"),
        },
        Case {
            name: "pack-truncated",
            what: "the pack cut to half its length",
            cheap: false,
            base: Base::Seasoned,
            ours: false,
            append: "bootprint.readahead=1 init=/usr/lib/bootprint/bootprint-boot",
            edit: |e| e.edit_pack(|b| b.truncate(b.len() / 2)),
            hook: None,
            trace: Expect::Trace,
            check: |r| relearns(r, "truncated"),
        },
        Case {
            name: "pack-foreign",
            what: "a valid pack learned on another root file system",
            cheap: false,
            base: Base::Seasoned,
            ours: false,
            append: "bootprint.readahead=1 init=/usr/lib/bootprint/bootprint-boot",
            edit: |e| {
                let mut p = e.pack()?;
                p.header.root.uuid = "00000000-0000-4000-8000-0000000000f0".into();
                p.header.root.fsid ^= 0xffff;
                e.put_pack(&p.encode())
            },
            hook: None,
            trace: Expect::Trace,
            check: |r| relearns(r, "foreign_root"),
        },
    ]
}

/// Packs whose entries are hostile or out of date: the replay skips them.
fn pack_entry_cases() -> Vec<Case> {
    vec![
        Case {
            name: "pack-hostile-entries",
            what: "a pack naming a FIFO, a device node and a 64 GiB sparse file",
            cheap: false,
            base: Base::Seasoned,
            ours: false,
            append: "bootprint.readahead=1 init=/usr/lib/bootprint/bootprint-boot",
            edit: hostile_pack,
            hook: None,
            trace: Expect::Trace,
            check: |r| {
                let e = r
                    .event("readahead_replay")
                    .ok_or("no readahead_replay event: the replay reported nothing")?;
                let not_regular: u64 = e
                    .get("skipped_not_regular")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                if not_regular < 2 {
                    return Err(format!("the FIFO and the device were not skipped: {e:?}"));
                }
                Ok(format!(
                    "FIFO and device skipped (skipped_not_regular={not_regular}); replay took \
                     {} ms, timed_out={}",
                    e.get("duration_ns")
                        .and_then(|v| v.parse::<u64>().ok())
                        .map_or(0, |n| n / 1_000_000),
                    e.get("timed_out").unwrap_or("?")
                ))
            },
        },
        Case {
            name: "files-changed",
            what: "the first 20 files of the pack changed (mtime) since it was learned",
            cheap: false,
            base: Base::Seasoned,
            ours: false,
            append: "bootprint.readahead=1 init=/usr/lib/bootprint/bootprint-boot",
            edit: |e| {
                let p = e.pack()?;
                let cmds: Vec<String> = p
                    .entries
                    .iter()
                    .take(20)
                    .map(|en| format!("sif {} mtime 0x5f5e1000", en.path.display()))
                    .collect();
                e.debugfs(&cmds)
            },
            hook: None,
            trace: Expect::Trace,
            check: |r| {
                let e = r
                    .event("readahead_replay")
                    .ok_or("no readahead_replay event")?;
                match e.get("skipped_changed").and_then(|v| v.parse::<u64>().ok()) {
                    Some(n) if n >= 20 => Ok(format!("skipped_changed={n}")),
                    other => Err(format!("expected skipped_changed >= 20, got {other:?}")),
                }
            },
        },
    ]
}

/// The disk full, read-only, or its power cut while the trace is written.
fn disk_cases() -> Vec<Case> {
    vec![
        Case {
            name: "var-full",
            what: "the root file system filled (fallocate) early in rcS",
            cheap: false,
            base: Base::Image,
            ours: false,
            append: BOOT_INIT,
            edit: nothing,
            hook: Some(
                "fallocate -l $(( $(stat -f -c '%a*%S' /) )) /var/tmp/bp-fill 2>/dev/null \
                 || dd if=/dev/zero of=/var/tmp/bp-fill bs=1M 2>/dev/null; sync",
            ),
            trace: Expect::Trace,
            check: |r| match &r.trace {
                Some(t) => Ok(format!("trace at {t}")),
                None => Err("no trace".into()),
            },
        },
        Case {
            name: "root-read-only",
            what: "the root mounted read-only for the whole boot (ro, fstab ro)",
            cheap: false,
            base: Base::Image,
            ours: false,
            append: "ro init=/usr/lib/bootprint/bootprint-boot",
            edit: |e| {
                e.write(
                    "/etc/fstab",
                    "/dev/vda / ext4 ro,errors=remount-ro 0 0\nproc /proc proc defaults 0 0\n",
                )
            },
            hook: None,
            trace: Expect::Trace,
            check: |r| match &r.trace {
                Some(t) if t.starts_with("/run/") => Ok(format!("trace kept in {t}")),
                Some(t) => Err(format!("trace at {t}: the root was writable after all")),
                None => Err("no trace in /run/bootprint either".into()),
            },
        },
        Case {
            name: "poweroff-in-trace",
            what: "the power cut while the recorder writes the trace (bootprint.fault=)",
            cheap: false,
            base: Base::Image,
            ours: false,
            append: "bootprint.fault=poweroff-in-trace init=/usr/lib/bootprint/bootprint-boot",
            edit: nothing,
            hook: None,
            trace: Expect::NoTrace("the power was cut while it was written"),
            // Checked by `power_cut` (two boots and the disk between them).
            check: |_| Ok(String::new()),
        },
        Case {
            name: "poweroff-in-shutdown-trace",
            what: "the power cut while the shutdown's recorder writes its trace (bootprint.fault=)",
            cheap: false,
            base: Base::Image,
            ours: false,
            append: "bootprint.rc=1 bootprint.fault=poweroff-in-shutdown-trace \
                     init=/usr/lib/bootprint/bootprint-boot",
            edit: nothing,
            hook: None,
            trace: Expect::Trace,
            // Checked by `shutdown_power_cut` (two boots and the disk between them).
            check: |_| Ok(String::new()),
        },
    ]
}

/// A missing init and a garbage configuration: the boot goes on, with a warning.
fn config_cases() -> Vec<Case> {
    vec![
        Case {
            name: "init-missing",
            what: "bootprint.init= names a file that does not exist",
            cheap: true,
            base: Base::Image,
            ours: false,
            append: "bootprint.init=/sbin/no-such-init init=/usr/lib/bootprint/bootprint-boot",
            edit: nothing,
            hook: None,
            trace: Expect::Trace,
            check: |r| {
                let e = r.event("init_exec").ok_or("no init_exec event")?;
                if e.get("path") != Some("/sbin/init") {
                    return Err(format!(
                        "init_exec path {:?}, expected /sbin/init",
                        e.get("path")
                    ));
                }
                match r
                    .warnings()
                    .iter()
                    .find(|w| w.contains("/sbin/no-such-init"))
                {
                    Some(w) => Ok(format!("warned {w:?}")),
                    None => Err("no warning naming /sbin/no-such-init".into()),
                }
            },
        },
        Case {
            name: "initramfs-init-missing",
            what: "bootprint's initramfs with init= naming a file that does not exist",
            cheap: true,
            base: Base::Image,
            ours: true,
            append: "init=/usr/lib/bootprint/no-such-init",
            edit: nothing,
            hook: None,
            trace: Expect::NoTrace("init= named no program, so /init ran /sbin/init: no recorder"),
            check: |r| {
                if r.output.contains("running /sbin/init instead") {
                    Ok("/init said so and ran /sbin/init".into())
                } else {
                    Err("no \"running /sbin/init instead\" in the kernel log".into())
                }
            },
        },
        Case {
            name: "garbage-config",
            what: "/etc/bootprint/bootprint.toml and rc.conf full of garbage",
            cheap: true,
            base: Base::Image,
            ours: false,
            append: "bootprint.rc=1 init=/usr/lib/bootprint/bootprint-boot",
            edit: |e| {
                e.write(
                    "/etc/bootprint/bootprint.toml",
                    "[record\nhz = = fast\n\u{1}\u{2}\n",
                )?;
                e.write(
                    "/etc/bootprint/rc.conf",
                    "login-target = = \nlate\n\u{7f}=\n",
                )
            },
            hook: None,
            trace: Expect::Trace,
            check: |r| {
                let w = r.warnings();
                if w.iter().any(|w| w.contains("bootprint.toml")) {
                    Ok(format!("warned: {}", w.join("; ")))
                } else {
                    Err(format!("no warning naming bootprint.toml: {w:?}"))
                }
            },
        },
    ]
}

/// Init scripts that hang, fail, ask or depend on each other, under bootprint's runner.
fn rc_script_cases() -> Vec<Case> {
    vec![
        Case {
            name: "rc-hanging-script",
            what: "an init script that never returns (ignores SIGTERM), with bootprint's runner",
            cheap: false,
            base: Base::Image,
            ours: false,
            append: "bootprint.rc=1 init=/usr/lib/bootprint/bootprint-boot",
            edit: |e| {
                e.init_script(
                    "bp-hang",
                    "trap '' TERM; while :; do sleep 1; done",
                    "$remote_fs",
                )
            },
            hook: None,
            trace: Expect::Trace,
            check: |r| rc_ran(r, "bp-hang"),
        },
        Case {
            name: "rc-failing-script",
            what: "an init script that fails (exit 1), with bootprint's runner",
            cheap: false,
            base: Base::Image,
            ours: false,
            append: "bootprint.rc=1 init=/usr/lib/bootprint/bootprint-boot",
            edit: |e| e.init_script("bp-fail", "echo failing; exit 1", "$remote_fs"),
            hook: None,
            trace: Expect::Trace,
            check: |r| rc_ran(r, "bp-fail"),
        },
        Case {
            name: "rc-interactive-script",
            what: "an X-Interactive init script that asks on the console (no answer comes)",
            cheap: false,
            base: Base::Image,
            ours: false,
            append: "bootprint.rc=1 init=/usr/lib/bootprint/bootprint-boot",
            edit: |e| {
                e.init_script_with(
                    "bp-ask",
                    "printf 'bp-ask: continue? '; read -t 5 answer || true; echo",
                    "$remote_fs",
                    "# X-Interactive: yes\n",
                )
            },
            hook: None,
            trace: Expect::Trace,
            check: |r| rc_ran(r, "bp-ask"),
        },
        Case {
            name: "rc-cycle",
            what: "two init scripts that require each other, with bootprint's runner",
            cheap: false,
            base: Base::Image,
            ours: false,
            append: "bootprint.rc=1 init=/usr/lib/bootprint/bootprint-boot",
            edit: |e| {
                e.init_script("bp-cycle-a", "echo a", "$remote_fs bp-cycle-b")?;
                e.init_script("bp-cycle-b", "echo b", "$remote_fs bp-cycle-a")
            },
            hook: None,
            trace: Expect::Trace,
            check: |r| {
                rc_ran(r, "bp-cycle-a")?;
                rc_ran(r, "bp-cycle-b")
            },
        },
    ]
}

/// bootprint's runner failing on purpose: the scripts still run.
fn rc_fault_cases() -> Vec<Case> {
    vec![
        Case {
            name: "rc-fails-planning",
            what: "bootprint's runner forced to fail while planning (bootprint.rc.fault=plan)",
            cheap: true,
            base: Base::Image,
            ours: false,
            append: "bootprint.rc=1 bootprint.rc.fault=plan init=/usr/lib/bootprint/bootprint-boot",
            edit: |e| e.init_script("bp-witness", "echo witness ran", "$remote_fs"),
            hook: None,
            trace: Expect::Trace,
            check: |r| {
                if r.output.contains("BPWITNESS=yes") {
                    Ok("every script still ran (the witness script did)".into())
                } else {
                    Err("the witness script of runlevel 2 did not run".into())
                }
            },
        },
        Case {
            name: "rc-worker-lost",
            what: "runlevel S's worker (one graph) killed by SIGABRT before rcS may return \
                   (bootprint.rc.fault=worker): rcS runs what it had not started",
            cheap: false,
            base: Base::Image,
            ours: false,
            append:
                "bootprint.rc=1 bootprint.rc.fault=worker init=/usr/lib/bootprint/bootprint-boot",
            edit: |e| e.init_script("bp-witness", "echo witness ran", "$remote_fs"),
            hook: None,
            trace: Expect::Trace,
            check: |r| {
                if !r.output.contains("BPWITNESS=yes") {
                    Err("the witness script of runlevel 2 did not run".into())
                } else if !r
                    .output
                    .contains("ended before the path to the login was done")
                {
                    Err("no console line saying the worker was lost".into())
                } else {
                    Ok("the worker was lost; rcS ran the rest and runlevel 2 ran".into())
                }
            },
        },
        Case {
            name: "rc-aborts",
            what: "bootprint's runner killed by SIGABRT at once (bootprint.rc.fault=abort): the \
                   startpar wrapper falls back to Debian's startpar",
            cheap: false,
            base: Base::Image,
            ours: false,
            append:
                "bootprint.rc=1 bootprint.rc.fault=abort init=/usr/lib/bootprint/bootprint-boot",
            // Debian's startpar runs only the scripts insserv put in its .depend files: the
            // witnesses are the image's own services of runlevel 2.
            edit: nothing,
            hook: None,
            trace: Expect::Trace,
            check: |r| {
                let running = |d: &str| r.output.contains(&format!("BPRUNNING {d}"));
                if running("cron") && running("rsyslogd") {
                    Ok("Debian's startpar started runlevel 2 (cron and rsyslogd run)".into())
                } else {
                    Err("cron or rsyslogd (runlevel 2) is not running".into())
                }
            },
        },
    ]
}

/// A case's readahead fell back to learning with `why` (the pack refused).
fn relearns(r: &Report, why: &str) -> std::result::Result<String, String> {
    match r.event("readahead_learn_start") {
        Some(e) if e.get("why") == Some(why) => Ok(format!("pack refused ({why}); learning")),
        Some(e) => Err(format!(
            "learning, but why={:?}, expected {why}",
            e.get("why")
        )),
        None => Err(format!(
            "expected readahead_learn_start why={why}; readahead events: {:?}",
            r.events
                .iter()
                .filter(|e| e.kind.starts_with("readahead"))
                .collect::<Vec<_>>()
        )),
    }
}

/// `script` ran (it left its mark in /run) and the boot went on; what the runner's span
/// log says of its end, if anything.
fn rc_ran(r: &Report, script: &str) -> std::result::Result<String, String> {
    if !r.output.contains(&format!("{script} started")) {
        return Err(format!("{script} never ran"));
    }
    let marker = format!("BPRC {script} ");
    Ok(match r.output.lines().find(|l| l.starts_with(&marker)) {
        Some(l) => format!("{script} ran: {}", l.trim_start_matches(&marker)),
        None => format!("{script} ran (no rc_end in the runner's span log)"),
    })
}

/// Disk edits with debugfs on a case's disk copy.
pub struct Edits {
    disk: PathBuf,
    dir: PathBuf,
}

impl Edits {
    /// Runs debugfs -w with these commands (one per line); fails on a command's error.
    fn debugfs(&self, cmds: &[String]) -> Result<()> {
        let file = self.dir.join("debugfs.cmds");
        fs::write(&file, cmds.join("\n") + "\n").map_err(|e| io_err("cannot write", &file, e))?;
        let out = Command::new("debugfs")
            .arg("-w")
            .arg("-f")
            .arg(&file)
            .arg(&self.disk)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Error::fail(format!("cannot run debugfs: {e}")))?;
        let err = String::from_utf8_lossy(&out.stderr);
        // debugfs exits 0 even when a command fails; its complaints name the command.
        let bad: Vec<&str> = err
            .lines()
            .filter(|l| !l.starts_with("debugfs ") && !l.trim().is_empty())
            .collect();
        if !out.status.success() || !bad.is_empty() {
            return Err(Error::fail(format!(
                // The disk's own path would put this machine's paths in the results file.
                "debugfs on the case's disk copy failed: {}",
                bad.join("; ")
            )));
        }
        Ok(())
    }

    fn cat(&self, path: &str) -> Result<Vec<u8>> {
        let out = Command::new("debugfs")
            .arg("-R")
            .arg(format!("cat {path}"))
            .arg(&self.disk)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| Error::fail(format!("cannot run debugfs: {e}")))?;
        Ok(out.stdout)
    }

    /// Replaces the file at `path` (root's, mode 0644) with `text`.
    fn write(&self, path: &str, text: &str) -> Result<()> {
        self.write_bytes(path, text.as_bytes(), 0o100644)
    }

    fn write_bytes(&self, path: &str, bytes: &[u8], mode: u32) -> Result<()> {
        let host = self.dir.join("upload");
        fs::write(&host, bytes).map_err(|e| io_err("cannot write", &host, e))?;
        // The directory may not be there yet (/etc/bootprint); an error says it is.
        if let Some(parent) = Path::new(path).parent() {
            let _ = self.debugfs(&[format!("mkdir {}", parent.display())]);
        }
        let _ = self.debugfs(&[format!("rm {path}")]);
        self.debugfs(&[
            format!("write {} {path}", host.display()),
            format!("sif {path} mode 0{mode:o}"),
            format!("sif {path} uid 0"),
            format!("sif {path} gid 0"),
        ])
    }

    fn pack_bytes(&self) -> Result<Vec<u8>> {
        let b = self.cat(PACK)?;
        if b.is_empty() {
            return Err(Error::fail(format!(
                "no {PACK} on the seasoned disk {}",
                self.disk.display()
            )));
        }
        Ok(b)
    }

    fn pack(&self) -> Result<Pack> {
        readahead::pack::check(&self.pack_bytes()?)
            .map_err(|e| Error::fail(format!("the seasoned pack does not load: {e}")))
    }

    fn put_pack(&self, bytes: &[u8]) -> Result<()> {
        self.write_bytes(PACK, bytes, 0o100644)
    }

    fn edit_pack(&self, f: impl FnOnce(&mut Vec<u8>)) -> Result<()> {
        let mut b = self.pack_bytes()?;
        f(&mut b);
        self.put_pack(&b)
    }

    /// An LSB init script `name` in runlevels 2-5 doing `body` on start.
    fn init_script(&self, name: &str, body: &str, requires: &str) -> Result<()> {
        self.init_script_with(name, body, requires, "")
    }

    fn init_script_with(&self, name: &str, body: &str, requires: &str, extra: &str) -> Result<()> {
        let text = format!(
            "#!/bin/sh\n### BEGIN INIT INFO\n# Provides:          {name}\n\
             # Required-Start:    {requires}\n# Required-Stop:\n\
             # Default-Start:     2 3 4 5\n# Default-Stop:\n{extra}\
             # Short-Description: bootprint fault matrix\n### END INIT INFO\n\
             case \"$1\" in\n  start)\n    echo \"$(date +%s) {name} started\" >> /run/bp-fault-scripts\n    {body}\n    ;;\nesac\nexit 0\n"
        );
        let path = format!("/etc/init.d/{name}");
        self.write_bytes(&path, text.as_bytes(), 0o100755)?;
        let mut cmds = Vec::new();
        for rl in 2..=5 {
            let link = format!("/etc/rc{rl}.d/S99{name}");
            cmds.push(format!("symlink {link} ../init.d/{name}"));
        }
        self.debugfs(&cmds)
    }

    /// The inode number, size and mtime (seconds, nanoseconds) of `path`, from debugfs.
    fn stat(&self, path: &str) -> Result<(u64, u64, i64, u32)> {
        let out = Command::new("debugfs")
            .arg("-R")
            .arg(format!("stat {path}"))
            .arg(&self.disk)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| Error::fail(format!("cannot run debugfs: {e}")))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        parse_debugfs_stat(&text)
            .ok_or_else(|| Error::fail(format!("debugfs stat {path}: cannot read {text:?}")))
    }

    /// A sysvinit `sysinit` hook before rcS: `/etc/bp-fault.sh`, run in the background.
    fn hook(&self, body: &str) -> Result<()> {
        let script = format!("#!/bin/sh\n{HOOK_FUNCTIONS}\n( {body} ) >/dev/console 2>&1 &\n");
        self.write_bytes("/etc/bp-fault.sh", script.as_bytes(), 0o100755)?;
        let inittab = String::from_utf8_lossy(&self.cat("/etc/inittab")?).into_owned();
        let mut out = String::new();
        for l in inittab.lines() {
            if l.starts_with("si::sysinit:") {
                out.push_str("bp::sysinit:/etc/bp-fault.sh\n");
            }
            out.push_str(l);
            out.push('\n');
        }
        if !out.contains("bp::sysinit") {
            return Err(Error::fail(
                "no si::sysinit line in the image's /etc/inittab",
            ));
        }
        self.write("/etc/inittab", &out)
    }
}

/// Functions the hooks use: the recorder is the bootprint-boot process at nice 19; the
/// replay child the one that is not (before the runner starts, there is no other).
const HOOK_FUNCTIONS: &str = r#"kill_recorder() {
  for p in $(pidof bootprint-boot); do
    [ "$(cut -d' ' -f19 /proc/$p/stat)" = 19 ] && kill -$1 $p && echo "bp-fault: sent SIG$1 to the recorder ($p)"
  done
}
kill_replay() {
  i=0
  while [ $i -lt 50 ]; do
    for p in $(pidof bootprint-boot); do
      if [ "$(cut -d' ' -f19 /proc/$p/stat)" != 19 ]; then kill -KILL $p; echo "bp-fault: killed the replay ($p)"; return; fi
    done
    i=$((i+1)); sleep 0.1
  done
}"#;

/// `Inode: N`, `Size: N` and `mtime: 0xSECONDS:0xEXTRA` of `debugfs stat` output (the
/// extra field holds nanoseconds << 2).
pub fn parse_debugfs_stat(text: &str) -> Option<(u64, u64, i64, u32)> {
    let after = |key: &str| {
        let i = text.find(key)?;
        text[i + key.len()..].split_whitespace().next()
    };
    let ino = after("Inode:")?.parse().ok()?;
    let size = after("Size:")?.parse().ok()?;
    let mtime = after("mtime:")?;
    let (s, extra) = mtime.split_once(':').unwrap_or((mtime, "0x0"));
    let secs = i64::from_str_radix(s.trim_start_matches("0x"), 16).ok()?;
    let extra = u32::from_str_radix(extra.trim_start_matches("0x"), 16).unwrap_or(0);
    Some((ino, size, secs, extra >> 2))
}

/// A pack whose entries are a FIFO, a character device and a 64 GiB sparse file, made on the
/// disk here, with the seasoned pack's header (so it is this root's and replays).
fn hostile_pack(e: &Edits) -> Result<()> {
    let mut p = e.pack()?;
    let empty = e.dir.join("empty");
    fs::write(&empty, b"").map_err(|er| io_err("cannot write", &empty, er))?;
    // debugfs's mknod takes a name in its working directory, not a path.
    e.debugfs(&[
        "cd /var/tmp".into(),
        "mknod bp-fifo p".into(),
        "mknod bp-null c 1 3".into(),
        "cd /".into(),
        format!("write {} /var/tmp/bp-sparse", empty.display()),
        format!("sif /var/tmp/bp-sparse size {}", 64u64 << 30),
    ])?;
    let mut entries = Vec::new();
    for (path, size) in [
        ("/var/tmp/bp-fifo", 4096u64),
        ("/var/tmp/bp-null", 4096),
        ("/var/tmp/bp-sparse", 64 << 30),
    ] {
        let (ino, real_size, mtime_s, mtime_ns) = e.stat(path)?;
        entries.push(Entry {
            path: PathBuf::from(path),
            dev: 0,
            ino,
            // The FIFO and the device have size 0; the entry claims a page to read.
            size: size.max(real_size),
            mtime_s,
            mtime_ns,
            ranges: vec![Range {
                offset: 0,
                len: size,
            }],
            first_access: entries.len() as u32,
        });
    }
    p.entries = entries;
    e.put_pack(&p.encode())
}

/// The guest's part after the login: find the trace, report on it, print what the checks
/// read. `WAIT` seconds at most for the trace; without a recorder running, less.
const GUEST_CHECK: &str = r#"id=$(cat /proc/sys/kernel/random/boot_id)
i=0; t=
while [ $i -lt WAIT ]; do
  for d in /var/log/bootprint/$id /run/bootprint/$id; do [ -e $d/events.log ] && t=$d; done
  [ -n "$t" ] && break
  rec=
  for p in $(pidof bootprint-boot); do [ "$(cut -d' ' -f19 /proc/$p/stat)" = 19 ] && rec=$p; done
  [ -z "$rec" ] && [ $i -gt 10 ] && break
  sleep 2; i=$((i+2))
done
echo "BPTRACE=${t:-none}"
if [ -n "$t" ]; then
  if bootprint report "$t" --json > /run/bp-report.json 2> /run/bp-report.err; then echo BPREPORT=ok; else echo BPREPORT=fail; cat /run/bp-report.err; fi
  echo BPEVENTS=begin; cat "$t/events.log"; echo BPEVENTS=end
fi
[ -e /run/bootprint/rc.log ] && sed -n 's/.* rc_end .*script=\([^ ]*\) .*outcome=\([^ ]*\).*/BPRC \1 \2/p' /run/bootprint/rc.log
grep -q 'bp-witness started' /run/bp-fault-scripts 2>/dev/null && echo BPWITNESS=yes
for d in cron rsyslogd sshd; do pidof $d >/dev/null && echo "BPRUNNING $d"; done
cat /run/bp-fault-scripts 2>/dev/null
dmesg | grep 'bootprint initramfs' | tail -n 5
"#;

/// One case's outcome.
struct Outcome {
    name: &'static str,
    ok: bool,
    login_s: Option<f64>,
    said: String,
}

/// `bootprint-testbed faults [--all] [--case NAME]`: runs the cheap cases (or all, or one),
/// prints the table, fails if any case failed.
pub fn run(paths: &Paths, all: bool, only: Option<&str>, cargo: bool) -> Result<()> {
    let t = Instant::now();
    let img = image::ensure(paths, cargo)?;
    let chosen: Vec<Case> = cases()
        .into_iter()
        .filter(|c| match only {
            Some(n) => c.name == n,
            None => all || c.cheap,
        })
        .collect();
    if chosen.is_empty() {
        return Err(Error::Usage(format!(
            "no fault case {:?}; cases: {}",
            only.unwrap_or(""),
            cases()
                .iter()
                .map(|c| c.name)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let run = fresh_dir(&paths.cache.join("faults"))?;
    let ours = if chosen.iter().any(|c| c.ours) {
        Some(crate::vm::initramfs::ensure_ours(paths, &img)?)
    } else {
        None
    };
    let seasoned = if chosen.iter().any(|c| c.base == Base::Seasoned) {
        Some(season(paths, &img, &run)?)
    } else {
        None
    };
    let mut outcomes = Vec::new();
    for c in &chosen {
        eprintln!("faults: {} ({})", c.name, c.what);
        let o = match run_case(paths, &img, c, &run, seasoned.as_deref(), ours.as_deref()) {
            Ok(o) => o,
            Err(e) => Outcome {
                name: c.name,
                ok: false,
                login_s: None,
                said: e
                    .to_string()
                    .lines()
                    .take(6)
                    .collect::<Vec<_>>()
                    .join(" | "),
            },
        };
        println!(
            "{}  {:<24} login {:>7}  {}",
            if o.ok { "ok  " } else { "FAIL" },
            o.name,
            o.login_s.map_or("-".into(), |s| format!("{s:.1} s")),
            o.said
        );
        outcomes.push(o);
    }
    let failed = outcomes.iter().filter(|o| !o.ok).count();
    let result = json!({
        "date": crate::vm::util::today(),
        "commit": crate::vm::util::git_commit(&paths.repo),
        "cases": outcomes.iter().map(|o| json!({
            "case": o.name, "ok": o.ok, "login_s": o.login_s.map(qemu::round3), "outcome": o.said,
        })).collect::<Vec<_>>(),
    });
    let _ = fs::write(run.join("result.json"), format!("{result:#}\n"));
    if all {
        let file = paths.repo.join(format!(
            "testbed/results/{}-faults.json",
            crate::vm::util::today()
        ));
        let _ = fs::write(&file, format!("{result:#}\n"));
    }
    println!(
        "faults: {} cases, {failed} failed, in {:.0} s",
        outcomes.len(),
        t.elapsed().as_secs_f64()
    );
    if failed > 0 {
        return Err(Error::fail(format!("faults: {failed} case(s) failed")));
    }
    Ok(())
}

/// One boot with the recorder and readahead learning; its disk (with a pack) is the base of
/// the seasoned cases.
fn season(paths: &Paths, img: &Image, run: &Path) -> Result<PathBuf> {
    let mut opts = BootOpts::new(Profile::Fast);
    opts.record = true;
    opts.keep_disk = true;
    opts.sync_disk = true;
    opts.append = "bootprint.readahead=1".into();
    eprintln!("faults: seasoning boot (readahead learns a pack)");
    let r = qemu::boot(paths, img, &opts)?;
    let kept = r
        .kept_disk()
        .ok_or_else(|| Error::fail("the seasoning boot's disk was not kept"))?;
    let disk = run.join("seasoned.raw");
    fs::rename(&kept, &disk).map_err(|e| io_err("cannot move", &kept, e))?;
    Ok(disk)
}

fn run_case(
    paths: &Paths,
    img: &Image,
    c: &Case,
    run: &Path,
    seasoned: Option<&Path>,
    ours: Option<&Path>,
) -> Result<Outcome> {
    let dir = run.join(c.name);
    fs::create_dir_all(&dir).map_err(|e| io_err("cannot create", &dir, e))?;
    let disk = dir.join("disk.raw");
    let base = match c.base {
        Base::Image => img.rootfs.as_path(),
        Base::Seasoned => seasoned.ok_or_else(|| Error::fail("no seasoned disk"))?,
    };
    run_logged(
        Command::new("cp")
            .arg("--sparse=always")
            .arg(base)
            .arg(&disk),
        &dir.join("host.log"),
    )?;
    let edits = Edits {
        disk: disk.clone(),
        dir: dir.clone(),
    };
    (c.edit)(&edits)?;
    if let Some(h) = c.hook {
        edits.hook(h)?;
    }
    if c.name == "poweroff-in-trace" {
        return power_cut(paths, img, c, &dir, &disk);
    }
    if c.name == "poweroff-in-shutdown-trace" {
        return shutdown_power_cut(paths, img, c, &dir, &disk);
    }
    let mut opts = BootOpts::new(Profile::Fast);
    opts.disk_from = Some(disk.clone());
    opts.sync_disk = true;
    opts.append = c.append.to_string();
    if c.ours {
        opts.initrd = ours.map(Path::to_path_buf);
    }
    let wait = match c.trace {
        Expect::Trace => 240,
        Expect::NoTrace(_) => 30,
    };
    opts.guest_script = Some(GUEST_CHECK.replace("WAIT", &wait.to_string()));
    let r = qemu::boot(paths, img, &opts)?;
    let _ = fs::remove_file(&disk);
    let output = r.guest_output.clone().unwrap_or_default();
    let mut report = Report {
        output: output.clone(),
        ..Report::default()
    };
    for l in output.lines() {
        if let Some(t) = l.strip_prefix("BPTRACE=") {
            report.trace = (t.trim() != "none").then(|| t.trim().to_string());
        }
        if l.trim() == "BPREPORT=ok" {
            report.report_ok = true;
        }
    }
    if let (Some(a), Some(b)) = (output.find("BPEVENTS=begin"), output.find("BPEVENTS=end")) {
        let text = &output[a + "BPEVENTS=begin".len()..b];
        report.events = trace::events::parse(text.trim_start_matches('\n')).unwrap_or_default();
    }
    // The kernel's lines (the initramfs's messages) are in the serial log.
    if let Ok(serial) = fs::read_to_string(&r.serial_log) {
        report.output.push_str(&serial);
    }
    let base_check = match c.trace {
        Expect::Trace if report.trace.is_none() => Err("no trace".to_string()),
        Expect::Trace if !report.report_ok => Err(format!(
            "`bootprint report` cannot read the trace at {}",
            report.trace.as_deref().unwrap_or("?")
        )),
        Expect::Trace => Ok(format!(
            "trace readable at {}",
            report.trace.as_deref().unwrap_or("?")
        )),
        Expect::NoTrace(why) => Ok(format!("no trace expected: {why}")),
    };
    let (ok, said) = match (base_check, (c.check)(&report)) {
        (Ok(a), Ok(b)) => (true, format!("{b}; {a}")),
        (Err(a), _) | (_, Err(a)) => (false, a),
    };
    let _ = fs::write(dir.join("guest.out"), &output);
    Ok(Outcome {
        name: c.name,
        ok,
        login_s: Some(r.host_login_s),
        said,
    })
}

/// The first boot of a power-cut case: its run directory, serial log and login (None when
/// QEMU ended before the boot's script did, as a cut does).
struct Cut {
    run_dir: Option<PathBuf>,
    serial: String,
    login_s: Option<f64>,
}

impl Cut {
    /// Boots case `c` from `disk`, keeping the disk, with `script` at the shell.
    fn boot(paths: &Paths, img: &Image, c: &Case, disk: &Path, script: &str) -> Cut {
        let mut opts = BootOpts::new(Profile::Fast);
        opts.disk_from = Some(disk.to_path_buf());
        opts.sync_disk = true;
        opts.keep_disk = true;
        opts.append = c.append.to_string();
        opts.guest_script = Some(script.into());
        let first = qemu::boot(paths, img, &opts);
        let run_dir = match &first {
            Ok(r) => r.serial_log.parent().map(Path::to_path_buf),
            Err(_) => crate::vm::util::newest_run(paths),
        };
        let serial = run_dir
            .as_ref()
            .and_then(|d| fs::read_to_string(d.join("serial.log")).ok())
            .unwrap_or_default();
        Cut {
            run_dir,
            serial,
            login_s: first.as_ref().ok().map(|r| r.host_login_s),
        }
    }

    /// Whether the kernel log says the power was cut at fault point `point`.
    fn came_at(&self, point: &str) -> bool {
        self.serial
            .contains(&format!("cutting the power at {point}"))
    }

    /// The run directory as docs name paths.
    fn shown_dir(&self) -> String {
        self.run_dir
            .as_deref()
            .map(crate::vm::util::shown_path)
            .unwrap_or_default()
    }

    /// The kept disk, its journal replayed as the next boot's mount would.
    fn replayed_disk(&self, log: &Path) -> Result<PathBuf> {
        let kept = self
            .run_dir
            .as_ref()
            .map(|d| d.join("disk.raw"))
            .filter(|d| d.is_file())
            .ok_or_else(|| Error::fail("the power-cut boot's disk was not kept"))?;
        let _ = crate::vm::qemu::replay_journal(&kept, log);
        Ok(kept)
    }
}

/// The boot after a power cut, recording, from the cut boot's disk `kept` (moved into the
/// case's directory and removed after), with `script` at the shell.
fn boot_after_cut(
    paths: &Paths,
    img: &Image,
    dir: &Path,
    kept: &Path,
    script: String,
) -> Result<BootResult> {
    let disk2 = dir.join("disk2.raw");
    fs::rename(kept, &disk2).map_err(|e| io_err("cannot move", kept, e))?;
    let mut again = BootOpts::new(Profile::Fast);
    again.disk_from = Some(disk2.clone());
    again.sync_disk = true;
    again.append = BOOT_INIT.into();
    again.guest_script = Some(script);
    let r = qemu::boot(paths, img, &again);
    let _ = fs::remove_file(&disk2);
    r
}

/// The power-cut case: a boot whose recorder cuts the power while it writes the trace;
/// then, as the next boot's mount would, the journal is replayed, and `latest` must be
/// absent or name a complete trace; then the machine must boot again with a readable trace.
fn power_cut(paths: &Paths, img: &Image, c: &Case, dir: &Path, disk: &Path) -> Result<Outcome> {
    // Waits at the shell (up to 300 s) for the power cut, which ends QEMU.
    let cut = Cut::boot(
        paths,
        img,
        c,
        disk,
        "i=0; while [ $i -lt 150 ]; do sleep 2; i=$((i+1)); done\n",
    );
    if !cut.came_at("poweroff-in-trace") {
        return Err(Error::fail(format!(
            "the recorder did not cut the power (no fault-injection line in {})",
            cut.shown_dir()
        )));
    }
    let login_s = cut.login_s;
    let log = dir.join("host.log");
    let kept = cut.replayed_disk(&log)?;
    let stat = crate::vm::util::output_logged(
        Command::new("debugfs")
            .arg("-R")
            .arg("stat /var/log/bootprint/latest")
            .arg(&kept),
        &log,
    )
    .unwrap_or_default();
    let latest = crate::vm::qemu::symlink_target(&stat);
    let left = match &latest {
        None => "`latest` absent after the cut".to_string(),
        Some(target) => {
            let name = target
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or("");
            if !trace_readable(paths, dir, &kept, &log, name)? {
                return Ok(Outcome {
                    name: c.name,
                    ok: false,
                    login_s,
                    said: format!("`latest` names {name}, which `bootprint report` cannot read"),
                });
            }
            format!("`latest` names {name}, a complete trace")
        }
    };
    // And the machine boots again, recording.
    let r = boot_after_cut(paths, img, dir, &kept, GUEST_CHECK.replace("WAIT", "240"))?;
    let out = r.guest_output.unwrap_or_default();
    let ok = out.contains("BPREPORT=ok");
    Ok(Outcome {
        name: c.name,
        ok,
        login_s,
        said: if ok {
            format!(
                "{left}; the next boot reached login in {:.1} s with a readable trace",
                r.host_login_s
            )
        } else {
            format!("{left}; but the next boot's trace was not readable")
        },
    })
}

/// Boot 1 of the shutdown's power cut: once its trace is written, `reboot`; the
/// shutdown's recorder cuts the power while it writes (which ends QEMU).
const REBOOT_WHEN_RECORDED: &str = r#"id=$(cat /proc/sys/kernel/random/boot_id)
i=0; while [ ! -e /var/log/bootprint/$id/events.log ] && [ $i -lt 240 ]; do sleep 2; i=$((i+2)); done
echo "BPBOOT1=$id"
reboot
i=0; while [ $i -lt 150 ]; do sleep 2; i=$((i+1)); done
"#;

/// The shutdown's power-cut case: a recorded boot under the runner whose shutdown's
/// recorder cuts the power after writing its files into `.shutdown.tmp`, before the sync
/// and the rename. After the journal's replay the boot's own trace must be whole and
/// readable, with no `shutdown` in it; then the next boot must reach the login, record, and
/// remove what the cut left (`shutdown_incomplete ... removed=1` in its trace).
fn shutdown_power_cut(
    paths: &Paths,
    img: &Image,
    c: &Case,
    dir: &Path,
    disk: &Path,
) -> Result<Outcome> {
    let cut = Cut::boot(paths, img, c, disk, REBOOT_WHEN_RECORDED);
    let login_s = cut.login_s;
    let fail = |said: String| {
        Ok(Outcome {
            name: c.name,
            ok: false,
            login_s,
            said,
        })
    };
    if !cut.came_at("poweroff-in-shutdown-trace") {
        return fail(format!(
            "the shutdown's recorder did not cut the power (no fault-injection line in {})",
            cut.shown_dir()
        ));
    }
    let Some(boot1) = cut
        .serial
        .lines()
        .find_map(|l| l.split("BPBOOT1=").nth(1))
        .map(|id| id.trim().to_string())
        .filter(|id| id.len() == 36)
    else {
        return fail("boot 1 did not say its boot id".into());
    };
    let log = dir.join("host.log");
    let kept = cut.replayed_disk(&log)?;
    let listing = crate::vm::util::output_logged(
        Command::new("debugfs")
            .arg("-R")
            .arg(format!("ls -l /var/log/bootprint/{boot1}"))
            .arg(&kept),
        &log,
    )
    .unwrap_or_default();
    let names: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    if !names.contains(&"events.log") {
        return fail(format!(
            "boot 1's trace has no events.log after the cut: {names:?}"
        ));
    }
    if names.contains(&"shutdown") {
        return fail("boot 1 has a `shutdown` although its write was cut".into());
    }
    if !trace_readable(paths, dir, &kept, &log, &boot1)? {
        return fail(format!(
            "boot 1's trace {boot1} is not readable after the cut"
        ));
    }
    let left = if names.contains(&".shutdown.tmp") {
        "`.shutdown.tmp` left"
    } else {
        "nothing left (the cut came before the journal had it)"
    };
    // The next boot: it records, and removes what the cut left.
    let script = format!(
        "{}\n[ -e /var/log/bootprint/{boot1}/.shutdown.tmp ] && echo BPLEFT=yes\n\
         [ -e /var/log/bootprint/{boot1}/shutdown ] && echo BPSHUTDOWN=yes\n\
         bootprint list > /dev/null && echo BPLIST=ok\n",
        GUEST_CHECK.replace("WAIT", "240")
    );
    let r = boot_after_cut(paths, img, dir, &kept, script)?;
    let out = r.guest_output.unwrap_or_default();
    let _ = fs::write(dir.join("guest.out"), &out);
    let events = match (out.find("BPEVENTS=begin"), out.find("BPEVENTS=end")) {
        (Some(a), Some(b)) => {
            trace::events::parse(out[a + "BPEVENTS=begin".len()..b].trim_start_matches('\n'))
                .unwrap_or_default()
        }
        _ => Vec::new(),
    };
    let cleaned = events.iter().find(|e| e.kind == "shutdown_incomplete");
    let said = match cleaned {
        _ if !out.contains("BPREPORT=ok") => Err("the next boot's trace was not readable".into()),
        _ if out.contains("BPLEFT=yes") => Err(format!(
            "the next boot left boot 1's .shutdown.tmp ({})",
            cleaned
                .map(|e| format!("{e:?}"))
                .unwrap_or("no event".into())
        )),
        _ if out.contains("BPSHUTDOWN=yes") => {
            Err("boot 1 has a `shutdown` after the next boot".into())
        }
        _ if !out.contains("BPLIST=ok") => Err("`bootprint list` failed".into()),
        Some(e) if e.get("boot") == Some(&boot1) && e.get("removed") == Some("1") => Ok(format!(
            "boot 1's trace whole without a shutdown, {left}; the next boot reached login in \
             {:.1} s, removed it (shutdown_incomplete) and recorded",
            r.host_login_s
        )),
        None if left.starts_with("nothing") => Ok(format!(
            "boot 1's trace whole without a shutdown, {left}; the next boot reached login in \
             {:.1} s and recorded",
            r.host_login_s
        )),
        other => Err(format!(
            "{left}, but the next boot's trace says {:?}",
            other.map(|e| format!("{e:?}"))
        )),
    };
    Ok(Outcome {
        name: c.name,
        ok: said.is_ok(),
        login_s,
        said: said.unwrap_or_else(|e: String| e),
    })
}

/// Copies the trace `name` out of the disk `kept` into `dir` and reads it with
/// `bootprint report`; whether it could.
fn trace_readable(paths: &Paths, dir: &Path, kept: &Path, log: &Path, name: &str) -> Result<bool> {
    let out = dir.join("latest-trace");
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(&out).map_err(|e| io_err("cannot create", &out, e))?;
    run_logged(
        Command::new("debugfs")
            .arg("-R")
            .arg(format!("rdump /var/log/bootprint/{name} {}", out.display()))
            .arg(kept),
        log,
    )?;
    let bootprint = paths.repo.join("target/release/bootprint");
    let ok = Command::new(&bootprint)
        .arg("report")
        .arg(out.join(name))
        .arg("--json")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debugfs_stat_fields() {
        let text = "Inode: 1234   Type: regular    Mode:  0644   Flags: 0x80000\n\
                    User:     0   Group:     0   Project:     0   Size: 68719476736\n \
                    ctime: 0x6563a1b2:00000004 -- Sun Nov 26 2023\n \
                    mtime: 0x6563a1b0:3b9ac9fc -- Sun Nov 26 2023\n";
        assert_eq!(
            parse_debugfs_stat(text),
            Some((1234, 64 << 30, 0x6563a1b0, 0x3b9ac9fc >> 2))
        );
        assert_eq!(parse_debugfs_stat("nothing"), None);
    }

    #[test]
    fn cases_are_named_once_and_some_are_cheap() {
        let all = cases();
        let mut names: Vec<_> = all.iter().map(|c| c.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert!(all.len() >= 12);
        assert!(all.iter().filter(|c| c.cheap).count() >= 3);
    }
}
