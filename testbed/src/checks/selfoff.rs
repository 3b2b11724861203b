//! `self-off`: a lever made to cost switches itself off, for real (issue 45, part 3;
//! `record::judged`). Two chains of boots of the text image, each boot from the disk the
//! last one left, as a user's machine boots day after day:
//!
//! 1. sysvinit with the runner on and forced slow (`bootprint.rc.fault=slow`: it waits 60 s
//!    before runlevel S, more than it gains over startpar on the test bed), judging itself
//!    (`bootprint.rc_compare_every=5`, the default the test bed otherwise turns off): the
//!    first boot learns, then boots with the runner and boots with Debian's startpar
//!    alternate until there are three of each, and the runner must find it does not make
//!    the login sooner and switch itself off within [`RC_WINDOW`] boots. A comparison boot must run no runner (no rc.log), a boot with it
//!    must. One more boot then runs Debian's startpar by the runner's own verdict, and
//!    `bootprint status` in the guest says so.
//! 2. systemd with late units on, judging themselves: learn, defer, then a comparison boot
//!    on which the generator must defer nothing (`late_control` in the late log, no
//!    `late_planned`) and the boot joins the history as a comparison.

use crate::bench::figures::{event_fields, event_seconds, field};
use crate::bench::runner::trace_file;
use crate::checks::checklist::{self, Checks};
use crate::checks::late_test;
use crate::vm::image;
use crate::vm::qemu::{self, BootOpts, BootResult, Profile};
use crate::vm::util::{Error, Paths, Result};

/// The boots within which the slow runner must have judged itself off: one learning boot,
/// three with it and three without ([`readahead::state::MIN_EACH`] of each, alternating),
/// and one spare for a boot another cause leaves out of the history.
const RC_WINDOW: usize = 8;

const RC_APPEND: &str = "bootprint.rc=1 bootprint.rc.fault=slow bootprint.rc_compare_every=5";
const LATE_APPEND: &str =
    "bootprint.init=/lib/systemd/systemd bootprint.late=1 bootprint.late_compare_every=5";

/// After the trace: what the status says of the levers, and the late log.
const GUEST_SCRIPT: &str = "#!/bin/sh\necho '== status'\nbootprint status 2>&1\necho '== late.log'\ncat /run/bootprint/late.log 2>/dev/null\necho '== end'\n";

pub fn run(paths: &Paths, cargo: bool) -> Result<()> {
    checklist::run("self-off", |c| {
        let img = image::ensure(paths, cargo)?;
        runner_switches_itself_off(paths, &img, c)?;
        late_units_compare(paths, &img, c)
    })
}

/// One boot from `disk` (the image when `None`), keeping its disk for the next.
fn boot(
    paths: &Paths,
    img: &image::Image,
    append: &str,
    disk: Option<std::path::PathBuf>,
) -> Result<BootResult> {
    let mut o = BootOpts::new(Profile::Fast);
    o.record = true;
    o.append = append.to_string();
    o.keep_disk = true;
    o.sync_disk = true;
    o.disk_from = disk;
    o.guest_script = Some(GUEST_SCRIPT.into());
    qemu::boot(paths, img, &o)
}

/// The guest output's `== name` section.
/// The guest output's `== name` section, its lines (sorted, as `late_test::sections` keeps
/// them) one a line.
fn section(r: &BootResult, name: &str) -> String {
    let out = r.guest_output.clone().unwrap_or_default();
    let all = late_test::sections(&out);
    late_test::section(&all, name)
        .map(|lines| lines.iter().cloned().collect::<Vec<_>>().join("\n"))
        .unwrap_or_default()
}

/// The lever's `NAME_history` kind on this boot (`*` when it was not counted), or `off`.
fn history_kind(events: &str, lever: &str) -> String {
    let h = event_fields(events, &format!("{lever}_history"));
    match field(&h, "kind") {
        Some(k) if field(&h, "counted").is_some() => format!("{k}*"),
        Some(k) => k,
        None if event_fields(events, &format!("{lever}_off")).is_some() => "off".into(),
        None => "-".into(),
    }
}

fn runner_switches_itself_off(paths: &Paths, img: &image::Image, c: &mut Checks) -> Result<()> {
    println!("self-off: sysvinit, {RC_APPEND}, each boot from the last one's disk");
    let mut disk = None;
    let mut kinds = Vec::new();
    let mut switched_at = None;
    let (mut run_logins, mut control_logins) = (Vec::new(), Vec::new());
    for i in 1..=RC_WINDOW {
        let from = disk.take();
        let r = boot(paths, img, RC_APPEND, from.clone())?;
        if let Some(old) = from {
            let _ = std::fs::remove_file(old);
        }
        let events = trace_file(&r, "events.log").unwrap_or_default();
        let has_rc_log = trace_file(&r, "rc.log").is_some();
        let kind = history_kind(&events, "rc");
        let login = event_seconds(&events, "milestone", Some("name=text_login"));
        println!(
            "  boot {i}: {kind:<8} text login {} s, rc.log {}",
            login.map_or("-".into(), |s| format!("{s:.2}")),
            if has_rc_log { "yes" } else { "no" }
        );
        match kind.as_str() {
            "control" => {
                c.check(!has_rc_log, &format!("boot {i} compares: Debian's startpar ran the scripts, no runner (no rc.log)"));
                control_logins.extend(login);
            }
            "run" | "learn" => {
                c.check(
                    has_rc_log,
                    &format!("boot {i} ({kind}) ran the runner (rc.log)"),
                );
                if kind == "run" {
                    run_logins.extend(login);
                }
            }
            _ => {}
        }
        kinds.push(kind);
        disk = r.kept_disk();
        let off = event_fields(&events, "rc_off");
        if off.is_some() {
            c.check(
                field(&off, "by").as_deref() == Some("itself")
                    && field(&off, "reason").is_some_and(|r| {
                        r.starts_with("the runner does not make boots faster here")
                    }),
                &format!(
                    "boot {i}: the runner switched itself off: {:?}",
                    field(&off, "reason")
                ),
            );
            switched_at = Some(i);
            break;
        }
        if disk.is_none() {
            return Err(Error::fail(format!("boot {i} kept no disk")));
        }
    }
    c.check(
        switched_at.is_some(),
        &format!(
            "the runner forced slow switched itself off within {RC_WINDOW} boots: {kinds:?} \
             (logins with it {run_logins:?} s, with startpar {control_logins:?} s)"
        ),
    );
    c.check(
        kinds.first().map(String::as_str) == Some("learn")
            && kinds.iter().filter(|k| *k == "control").count() >= 3
            && kinds.iter().filter(|k| *k == "run").count() >= 3,
        &format!("a learning boot, then at least three boots of each kind: {kinds:?}"),
    );
    let Some(disk) = disk.filter(|_| switched_at.is_some()) else {
        return Ok(());
    };
    let after = boot(paths, img, RC_APPEND, Some(disk.clone()))?;
    let _ = std::fs::remove_file(&disk);
    let events = trace_file(&after, "events.log").unwrap_or_default();
    let off = event_fields(&events, "rc_off");
    c.check(
        field(&off, "by").as_deref() == Some("itself") && trace_file(&after, "rc.log").is_none(),
        "the boot after the verdict: Debian's startpar ran the scripts, by the runner's own verdict (rc_off by=itself, no rc.log)",
    );
    let status = section(&after, "status");
    let rc_line = status
        .lines()
        .find(|l| l.trim_start().starts_with("rc "))
        .unwrap_or("");
    c.check(
        rc_line.contains("switched itself off: the runner does not make boots faster here"),
        &format!(
            "`bootprint status` shows the runner's verdict: {:?}",
            rc_line.trim()
        ),
    );
    if let Some(d) = after.kept_disk() {
        let _ = std::fs::remove_file(d);
    }
    Ok(())
}

fn late_units_compare(paths: &Paths, img: &image::Image, c: &mut Checks) -> Result<()> {
    println!("self-off: systemd, {LATE_APPEND}, each boot from the last one's disk");
    let mut disk = None;
    let mut kinds = Vec::new();
    for i in 1..=3 {
        let r = boot(paths, img, LATE_APPEND, disk.take())?;
        let events = trace_file(&r, "events.log").unwrap_or_default();
        let kind = history_kind(&events, "late");
        let late_log = section(&r, "late.log");
        let planned = late_log.lines().any(|l| l.contains(" late_planned"));
        let control = late_log.lines().any(|l| l.contains(" late_control"));
        println!("  boot {i}: {kind:<8} late_planned {planned}, late_control {control}");
        match i {
            2 => c.check(
                kind == "defer" && planned && !control,
                &format!("boot 2 defers the learned units: {kind}, late log {late_log:?}"),
            ),
            3 => c.check(
                kind == "control"
                    && !planned
                    && control
                    && event_fields(&events, "late_control").is_some(),
                &format!(
                    "boot 3 compares: the generator deferred nothing (late_control), counted as a comparison: {kind}, late log {late_log:?}"
                ),
            ),
            _ => c.check(kind == "learn", &format!("boot 1 learns: {kind}")),
        };
        kinds.push(kind);
        if let Some(old) = &disk {
            let _ = std::fs::remove_file(old);
        }
        disk = r.kept_disk();
        if disk.is_none() {
            return Err(Error::fail(format!("boot {i} kept no disk")));
        }
    }
    if let Some(d) = disk {
        let _ = std::fs::remove_file(d);
    }
    Ok(())
}
