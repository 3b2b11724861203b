//! `initramfs`: bootprint's own initramfs (crates/initramfs) in real boots. It is built
//! INSIDE the guest (`bootprint initramfs build` sees the guest's sysfs and modules), copied
//! out of the guest's disk with debugfs, cached under `cache/initramfs-<key>/`, then the
//! guest boots with it to `login:`; and a wrong `root=` must give the console message and a
//! clean stop (QEMU exits: the /init reboots and QEMU runs with -no-reboot). The login boots
//! run the recorder with readahead: the first learns a pack, the second has /init start its
//! replay before the switch to the real root.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::vm::image::{self, Image};
use crate::vm::initramfs::ensure_ours;
use crate::vm::qemu::{self, BootOpts, BootResult, Profile, BASE_APPEND};
use crate::vm::serial::{Seen, PANIC_MARK};
use crate::vm::util::{Error, Paths, Result};

/// The line our /init writes to the kernel log before it execs the real init.
pub const SWITCH_MARK: &str = "bootprint initramfs: root ";
/// The wrong-root boot must stop within this (kernel ~10-20 s under TCG, 5 s wait, 10 s
/// message delay).
const WRONG_ROOT_TIMEOUT: Duration = Duration::from_secs(240);

/// Milliseconds our /init reported between its start and the exec of the real init.
pub fn init_ms(serial_log: &Path) -> Option<u64> {
    let text = fs::read_to_string(serial_log).ok()?;
    let line = text.lines().find(|l| l.contains(SWITCH_MARK))?;
    let after = line.rsplit_once(" after ")?.1;
    after.strip_suffix(" ms")?.trim().parse().ok()
}

/// Boots with a wrong root and waits for the message and QEMU's exit. Returns the message
/// line and the seconds from the message to QEMU's exit. A guest kernel that died of what the
/// boot cannot have caused gets one more boot (`qemu::set_aside_kernel_fault`), as in
/// `qemu::boot`.
pub fn wrong_root(paths: &Paths, img: &Image, initrd: &Path) -> Result<(String, f64)> {
    let run = crate::vm::util::fresh_dir(&paths.cache.join("runs"))?;
    match wrong_root_once(&run, paths.firmware, img, initrd) {
        Err(e) => match qemu::set_aside_kernel_fault(&run, "initramfs") {
            Some(_) => wrong_root_once(&run, paths.firmware, img, initrd),
            None => Err(e),
        },
        ok => ok,
    }
}

fn wrong_root_once(
    run: &Path,
    firmware: qemu::Firmware,
    img: &Image,
    initrd: &Path,
) -> Result<(String, f64)> {
    let serial_log = run.join("serial.log");
    let cmdline =
        format!("{BASE_APPEND} root=UUID=00000000-0bad-4bad-8bad-000000000000 rootwait=5");
    let mut cmd = crate::vm::qemu::qemu_command(img, firmware, &img.kernel, initrd, &cmdline)?;
    cmd.arg("-drive")
        // snapshot=on: the guest never writes to the shared image.
        .arg(format!(
            "file={},format=raw,if=virtio,snapshot=on",
            img.rootfs.display()
        ));
    let _ = fs::write(run.join("qemu.cmd"), crate::vm::util::describe(&cmd) + "\n");
    let (mut child, con, start) = crate::vm::qemu::spawn_with_console(&mut cmd, &serial_log)?;
    eprintln!(
        "initramfs: wrong-root boot (serial log {})",
        serial_log.display()
    );
    let outcome = match con.wait_for(
        &["did not appear within", PANIC_MARK],
        0,
        WRONG_ROOT_TIMEOUT,
        start,
    ) {
        Seen::Match(0, _, t) => Ok(t),
        Seen::Match(..) => Err("the guest kernel panicked before the message".to_string()),
        Seen::Timeout => Err(format!(
            "no `did not appear` message within {} s",
            WRONG_ROOT_TIMEOUT.as_secs()
        )),
        Seen::Closed => Err("QEMU exited before the message".to_string()),
    };
    let msg_t = match outcome {
        Ok(t) => t,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::fail(format!("{e}; last lines:\n{}", con.tail(20))));
        }
    };
    // Then QEMU must exit by itself (reboot with -no-reboot) after the delay.
    let deadline = Instant::now() + Duration::from_secs(60);
    let exited = loop {
        match child.try_wait() {
            Ok(Some(_)) => break true,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => break false,
        }
    };
    let stop_t = start.elapsed().as_secs_f64();
    if !exited {
        let _ = child.kill();
        let _ = child.wait();
    }
    let lines = con.finish();
    let line = lines
        .iter()
        .find(|(_, l)| l.contains("did not appear within"))
        .map(|(_, l)| l.clone())
        .unwrap_or_default();
    if !exited {
        return Err(Error::fail(format!(
            "QEMU did not exit within 60 s of the message (a hang, not a clean stop): {line}"
        )));
    }
    if lines.iter().any(|(_, l)| l.contains(PANIC_MARK)) {
        return Err(Error::fail(format!(
            "kernel panic after the message (serial log {})",
            serial_log.display()
        )));
    }
    Ok((line, stop_t - msg_t))
}

/// `bootprint-testbed initramfs`: build ours in the guest, boot it to login, boot it with a
/// wrong root. Prints ok/FAIL lines; an error if any failed.
pub fn run(paths: &Paths, cargo: bool) -> Result<()> {
    let t = Instant::now();
    let img = image::ensure(paths, cargo)?;
    let mut tally = Tally { failed: 0 };
    let ours = ensure_ours(paths, &img)?;
    let size = fs::metadata(&ours).map(|m| m.len()).unwrap_or(0);
    tally.check(
        size > 0,
        &format!(
            "our initramfs built in the guest: {} ({size} bytes)",
            ours.display()
        ),
    );
    // Two boots with the recorder and readahead: the first learns a pack, the second
    // (from the first's disk) has /init start its replay on the real root before the switch.
    let mut learn = BootOpts::new(Profile::Fast);
    learn.initrd = Some(ours.clone());
    learn.record = true;
    learn.append = "bootprint.readahead=1".into();
    learn.sync_disk = true;
    learn.keep_disk = true;
    let disk = match qemu::boot(paths, &img, &learn) {
        Ok(r) => {
            check_learning(&r, &mut tally);
            r.kept_disk()
        }
        Err(e) => {
            tally.check(false, &format!("boot with our initramfs: {e}"));
            None
        }
    };
    if let Some(disk) = disk {
        let mut replay = learn.clone();
        replay.keep_disk = false;
        replay.disk_from = Some(disk.clone());
        replay.append = "bootprint.readahead=1 bootprint.readahead_metadata=1".into();
        match qemu::boot(paths, &img, &replay) {
            Ok(r) => check_replay(&r, &mut tally),
            Err(e) => tally.check(false, &format!("second boot with our initramfs: {e}")),
        }
        let _ = fs::remove_file(&disk);
    }
    match wrong_root(paths, &img, &ours) {
        Ok((line, s)) => tally.check(
            line.contains("bootprint initramfs: root device UUID=") && s < 45.0,
            &format!(
                "wrong root=: {:?}, QEMU stopped {s:.1} s after it",
                line.trim()
            ),
        ),
        Err(e) => tally.check(false, &format!("wrong root=: {e}")),
    }
    println!("initramfs test took {:.0} s", t.elapsed().as_secs_f64());
    if tally.failed > 0 {
        return Err(Error::fail(format!(
            "initramfs test: {} failed",
            tally.failed
        )));
    }
    Ok(())
}

/// The checks' failures so far.
struct Tally {
    failed: usize,
}

impl Tally {
    /// Prints one check as `ok` or `FAIL` and counts a failure.
    fn check(&mut self, ok: bool, what: &str) {
        println!("{}  {what}", if ok { "ok  " } else { "FAIL" });
        if !ok {
            self.failed += 1;
        }
    }
}

/// The learning boot's checks: /init ran and switched, checked the root, and left the
/// learning to the recorder.
fn check_learning(r: &BootResult, tally: &mut Tally) {
    let ms = init_ms(&r.serial_log);
    let trace = r.trace_dir.clone().unwrap_or_default();
    let steps = fs::read_to_string(trace.join("initramfs.log")).unwrap_or_default();
    let events = read_events(&trace);
    let learned = events
        .iter()
        .find(|e| e.kind == "readahead_learn")
        .and_then(|e| e.get("entries").map(|n| (n.to_string(), e.get("error"))));
    tally.check(
        ms.is_some() && steps.contains(" switch-root exec "),
        &format!(
            "booted to login: in {:.1} s with it, the recorder as init=; /init ran {} ms \
             to it; the trace has its initramfs.log",
            r.host_login_s,
            ms.map(|m| m.to_string()).unwrap_or("?".into())
        ),
    );
    // The root checked before the mount, as initramfs-tools does (boot::check_root).
    let fsck = steps.lines().find(|l| l.contains(" fsck "));
    tally.check(
        fsck.is_some_and(|l| {
            l.contains("/sbin/e2fsck -p /dev/vda: exit 0")
                || l.contains("/sbin/e2fsck -p /dev/vda: exit 1")
        }),
        &format!("/init checked the root before mounting it: {fsck:?}"),
    );
    let replays = events
        .iter()
        .filter(|e| e.kind == "readahead_replay_start")
        .count();
    tally.check(
        steps.contains(" readahead deciding in pid ")
            && replays == 0
            && matches!(&learned, Some((n, None)) if n.parse::<u32>().unwrap_or(0) > 10),
        &format!(
            "no pack yet: /init's readahead process left it to the recorder, which \
             learned one ({learned:?} entries)"
        ),
    );
}

/// The replaying boot's checks: /init's readahead process replayed right after the switch
/// and the recorder took it over.
fn check_replay(r: &BootResult, tally: &mut Tally) {
    let trace = r.trace_dir.clone().unwrap_or_default();
    let steps = fs::read_to_string(trace.join("initramfs.log")).unwrap_or_default();
    let step = steps
        .lines()
        .find(|l| l.contains(" readahead "))
        .unwrap_or_default()
        .to_string();
    let events = read_events(&trace);
    let starts: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "readahead_replay_start")
        .collect();
    // The process /init forked is the one that replayed.
    let forked = step.rsplit_once(" deciding in pid ").map(|x| x.1.trim());
    let from_initramfs = starts.len() == 1
        && starts[0].get("from") == Some("initramfs")
        && forked.is_some()
        && starts[0].get("pid") == forked;
    // It began within a second of the switch (not when the recorder started).
    let switch_ns = steps
        .lines()
        .find(|l| l.contains(" switch-root "))
        .and_then(|l| l.split(' ').next()?.parse::<u64>().ok());
    let after_switch_ms = match (starts.first(), switch_ns) {
        (Some(s), Some(sw)) => Some((s.t_ns as i64 - sw as i64) / 1_000_000),
        _ => None,
    };
    let replay_field = |key: &str| {
        events
            .iter()
            .find(|e| e.kind == "readahead_replay")
            .and_then(|e| e.get(key)?.parse::<u64>().ok())
    };
    let replayed = replay_field("bytes");
    // Its metadata pre-read found the root's device from the new root too.
    let metadata = replay_field("metadata_bytes");
    tally.check(
        from_initramfs
            && after_switch_ms.is_some_and(|ms| ms < 1000)
            && replayed.is_some_and(|b| b > 1_000_000)
            && metadata.is_some_and(|n| n > 0),
        &format!(
            "second boot: /init's readahead process ({:?}) replayed, starting \
             {after_switch_ms:?} ms after the switch; the recorder took it over (one \
             readahead_replay_start, from={:?} pid={:?}) and got its figures \
             ({replayed:?} bytes read ahead, {metadata:?} bytes of metadata \
             first); login in {:.1} s",
            step.split_once(' ').map(|x| x.1).unwrap_or(""),
            starts.first().and_then(|e| e.get("from")),
            starts.first().and_then(|e| e.get("pid")),
            r.host_login_s
        ),
    );
}

/// The trace's events (none when unreadable: the checks then fail on what is missing).
fn read_events(trace: &Path) -> Vec<trace::Event> {
    let text = fs::read_to_string(trace.join("events.log")).unwrap_or_default();
    trace::events::parse(&text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_ms_from_the_serial_log() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("serial.log");
        fs::write(
            &p,
            "   9.1 | [    5.3] bootprint initramfs: root /dev/vda (/dev/vda) mounted, running /sbin/init after 412 ms\n",
        )
        .unwrap();
        assert_eq!(init_ms(&p), Some(412));
        fs::write(&p, "nothing\n").unwrap();
        assert_eq!(init_ms(&p), None);
    }
}
