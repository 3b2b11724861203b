//! `late`: systemd late units for real (docs/systemd.md). Four boots of the text image with
//! systemd as init, recorded:
//!
//! 1. `bootprint.late=1`, nothing learned yet: a stock boot that learns at boot done;
//! 2. from that disk, `bootprint.late=1`: the learned units start after the login, once idle;
//! 3. from the same disk, the switch off: systemd's own boot, the reference;
//! 4. from the same disk with the state file made invalid: the generator must write nothing.
//!
//! After boot done, boots 2 and 4 must leave the machine as the reference did: the same active
//! units, daemons, mounts, modules, hostname, random seed, no failed unit and no queued job.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bench::figures::event_seconds;
use crate::checks::checklist::{self, Checks};
use crate::vm::image;
use crate::vm::qemu::{self, BootOpts, BootResult, Profile};
use crate::vm::util::{io_err, run_logged, Error, Paths, Result};

const SYSTEMD: &str = "bootprint.init=/lib/systemd/systemd";

/// Run after the trace is written (so after boot done, and so after the late units started),
/// after [`checklist::COMMON_STATE`].
/// Each section is a sorted list; the session of the login this script runs in is the same
/// in every boot, and its units are left out.
const STATE_SCRIPT: &str = r#"echo "== units"
systemctl list-units --state=active --plain --no-legend --no-pager | awk '{print $1}' \
  | grep -v -e '^bootprint-late\.' -e '^session-' -e '^user' | sort
echo "== random-seed"
test -s /var/lib/systemd/random-seed && echo present
echo "== failed"
systemctl --failed --plain --no-legend --no-pager | awk '{print $1}'
echo "== jobs"
systemctl list-jobs --plain --no-legend --no-pager
echo "== late.log"
cat /run/bootprint/late.log 2>/dev/null
echo "== end"
"#;

/// Run after [`STATE_SCRIPT`] in the stock boot only: systemd's own reading of the boot, to
/// check bootprint's reading of the trace's `systemd-units.log` against ([`check_units`]),
/// and `bootprint report --systemd`, its reading of the running boot without a trace
/// ([`check_live`]); then boot 1 read back from the journal (`--journal -1`) and the running
/// boot's figures for Prometheus without a trace (`export --systemd`) ([`check_journal`]). Each output between `=== NAME` and `=== end NAME` lines, as printed.
const ANALYZE_SCRIPT: &str = r#"echo "=== blame"
systemd-analyze blame --no-pager
echo "=== end blame"
login=$(systemctl show --property=Id,ActiveEnterTimestampMonotonic 'getty@*' 'serial-getty@*' \
  'console-getty.service' display-manager.service 2>/dev/null \
  | awk -F= '/^Id=/{id=$2} /^ActiveEnterTimestampMonotonic=/{if ($2>0) print $2, id}' \
  | sort -n | head -1 | cut -d' ' -f2)
echo "=== login $login"
echo "=== critical-chain"
systemd-analyze critical-chain --no-pager "$login"
echo "=== end critical-chain"
echo "=== time"
systemd-analyze time --no-pager
echo "=== end time"
echo "=== live"
bootprint report --systemd --json
echo "=== end live"
echo "=== journal"
bootprint report --systemd --journal -1 --json
echo "=== end journal"
echo "=== prom"
mkdir -p /run/bp-textfile && bootprint export --systemd --prometheus /run/bp-textfile \
  && cat /run/bp-textfile/bootprint.prom
echo "=== end prom"
"#;

/// How many of `systemd-analyze blame`'s first units must be bootprint's first too.
const BLAME_TOP: usize = 5;

/// How far bootprint's times may be from systemd-analyze's (a fraction).
const TOLERANCE: f64 = 0.10;

/// The text between `=== NAME` and `=== end NAME` in the guest's output.
fn block<'a>(out: &'a str, name: &str) -> Option<&'a str> {
    let start = out.find(&format!("=== {name}\n"))? + name.len() + 5;
    let len = out[start..].find(&format!("=== end {name}\n"))?;
    Some(&out[start..start + len])
}

/// bootprint's reading of the stock boot's `systemd-units.log` against `systemd-analyze`
/// run in the same guest after the trace was written: blame's first [`BLAME_TOP`] units the
/// same, the critical chain to the login unit the same, times within [`TOLERANCE`].
fn check_units(c: &mut Checks, r: &BootResult) {
    let out = r.guest_output.clone().unwrap_or_default();
    let trace = r
        .trace_dir
        .as_deref()
        .ok_or_else(|| "no trace".to_string())
        .and_then(|d| trace::Trace::open(d).map_err(|e| e.to_string()));
    let view = match trace {
        Ok(t) => analyze::services::view_of(&t).0,
        Err(e) => {
            c.check(false, &format!("boot 3: its trace opens ({e})"));
            return;
        }
    };
    let Some(view) = view.filter(|v| v.source == analyze::services::Source::Systemd) else {
        c.check(false, "boot 3: the trace holds systemd-units.log");
        return;
    };
    let login = out
        .lines()
        .find_map(|l| l.strip_prefix("=== login "))
        .unwrap_or_default();
    c.check(
        view.login_unit.as_deref() == Some(login),
        &format!(
            "boot 3: bootprint's login unit {:?} is the first to become active ({login:?})",
            view.login_unit
        ),
    );
    use analyze::systemd_analyze::{check_blame, check_chain};
    let blame = block(&out, "blame").unwrap_or_default();
    let chain = block(&out, "critical-chain").unwrap_or_default();
    for k in check_blame(&view, blame, BLAME_TOP, TOLERANCE)
        .into_iter()
        .chain(check_chain(&view, chain, TOLERANCE))
    {
        c.check(k.ok, &format!("boot 3: {}", k.what));
    }
}

/// `bootprint report --systemd --json` in the stock boot against `systemd-analyze time` and
/// `blame` run beside it: every stage systemd-analyze names the same to the millisecond it
/// prints (both read the manager's timestamps), and blame's first [`BLAME_TOP`] units among
/// bootprint's first [`BLAME_TOP`] * 2 (a unit still running when one of them asked may
/// move).
fn check_live(c: &mut Checks, r: &BootResult) {
    let out = r.guest_output.clone().unwrap_or_default();
    let live: serde_json::Value = match serde_json::from_str(block(&out, "live").unwrap_or("")) {
        Ok(v) => v,
        Err(e) => {
            c.check(
                false,
                &format!("boot 3: `bootprint report --systemd --json` printed JSON ({e})"),
            );
            return;
        }
    };
    let time = analyze::systemd_analyze::parse_time(block(&out, "time").unwrap_or_default());
    c.check(
        live["source"] == "systemd" && !time.is_empty(),
        &format!(
            "boot 3: report --systemd answered ({}), systemd-analyze time too ({} stages)",
            live["source"],
            time.len()
        ),
    );
    for (stage, us) in &time {
        let ours = live["stages"][format!("{stage}_s")].as_f64();
        c.check(
            ours.is_some_and(|o| (o - *us as f64 / 1e6).abs() <= 0.0015),
            &format!(
                "boot 3: report --systemd's {stage} {ours:?} s is systemd-analyze time's {:.3} s",
                *us as f64 / 1e6
            ),
        );
    }
    let ours: Vec<&str> = live["services"]["blame"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
        .take(BLAME_TOP * 2)
        .collect();
    let theirs: Vec<String> =
        analyze::systemd_analyze::parse_blame(block(&out, "blame").unwrap_or_default())
            .into_iter()
            .take(BLAME_TOP)
            .map(|(u, _)| u)
            .collect();
    c.check(
        theirs.len() == BLAME_TOP && theirs.iter().all(|u| ours.contains(&u.as_str())),
        &format!(
            "boot 3: systemd-analyze blame's top {BLAME_TOP} {theirs:?} are among report \
             --systemd's top {} {ours:?}",
            BLAME_TOP * 2
        ),
    );
}

/// How far a unit's time in the journal (when journald stamped the manager's entry) may be
/// from the manager's own timestamp for it, s.
const JOURNAL_TOLERANCE_S: f64 = 0.5;

/// Boot 1 as boot 3 read it back from the journal (`report --systemd --journal -1`) against
/// what boot 1's recorder asked the manager at boot done (its trace's `systemd-units.log`):
/// the same boot id, the userspace stage to the microsecond (both are the manager's own
/// timestamps), the text login within [`JOURNAL_TOLERANCE_S`]; and `export --systemd`'s file
/// in boot 3: passes `promtool check metrics`, its text login is `report --systemd`'s.
fn check_journal(c: &mut Checks, first: &BootResult, stock: &BootResult) {
    let out = stock.guest_output.clone().unwrap_or_default();
    let journal: serde_json::Value =
        serde_json::from_str(block(&out, "journal").unwrap_or("")).unwrap_or_default();
    let header = read_trace(first, "header");
    let boot1_id = header
        .lines()
        .find_map(|l| l.strip_prefix("bootprint.boot_id = "))
        .unwrap_or_default()
        .replace('-', "");
    c.check(
        journal["source"] == "journal" && !boot1_id.is_empty() && journal["boot_id"] == boot1_id,
        &format!(
            "boot 3: report --systemd --journal -1 read boot 1 ({} of {:?}, boot 1 is {boot1_id:?})",
            journal["source"], journal["boot_id"]
        ),
    );
    let (units, problems) =
        trace::units::parse(&read_trace(first, "systemd-units.log"), "systemd-units.log");
    let manager_userspace = (units.finish_us > 0)
        .then(|| units.finish_us.saturating_sub(units.userspace_us) as f64 / 1e6);
    let ours = journal["stages"]["userspace_s"].as_f64();
    c.check(
        problems.is_empty()
            && manager_userspace.is_some()
            && ours
                .zip(manager_userspace)
                .is_some_and(|(a, b)| (a - b).abs() < 1e-6),
        &format!(
            "boot 3: boot 1's userspace stage from the journal {ours:?} s is its manager's \
             {manager_userspace:?} s"
        ),
    );
    let manager_login = units
        .units
        .iter()
        .filter(|u| analyze::services::login_unit_name(&u.id) && u.active_us > 0)
        .map(|u| u.active_us as f64 / 1e6)
        .min_by(f64::total_cmp);
    let ours = journal["text_login_s"].as_f64();
    c.check(
        ours.zip(manager_login)
            .is_some_and(|(a, b)| (a - b).abs() <= JOURNAL_TOLERANCE_S),
        &format!(
            "boot 3: boot 1's text login from the journal {ours:?} s is its manager's \
             {manager_login:?} s within {JOURNAL_TOLERANCE_S} s"
        ),
    );
    // How far the journal's unit times are from the manager's, for the results log.
    let mut gaps: Vec<f64> = journal["services"]["spans"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let u = units.units.iter().find(|u| s["script"] == u.id.as_str())?;
            let end = s["end_s"].as_f64()?;
            (u.active_us > 0).then(|| (end - u.active_us as f64 / 1e6).abs())
        })
        .collect();
    gaps.sort_by(f64::total_cmp);
    if let Some(max) = gaps.last() {
        println!(
            "journal: {} units in both; |journal - manager| active time: median {:.3} s, max {max:.3} s",
            gaps.len(),
            gaps[gaps.len() / 2]
        );
    }
    c.check(
        gaps.len() >= 20,
        &format!(
            "boot 3: the journal gave boot 1's units ({} matched the manager's)",
            gaps.len()
        ),
    );
    let prom = block(&out, "prom").unwrap_or_default();
    let live: serde_json::Value =
        serde_json::from_str(block(&out, "live").unwrap_or("")).unwrap_or_default();
    let login_line = live["text_login_s"].as_f64().map(|t| {
        format!(
            "bootprint_milestone_seconds{{milestone=\"text_login\"}} {}",
            (t * 1000.0).round() / 1000.0
        )
    });
    c.check(
        login_line
            .as_deref()
            .is_some_and(|l| prom.lines().any(|p| p == l))
            && prom.contains("bootprint_systemd_stage_seconds{stage=\"userspace\"}"),
        &format!("boot 3: export --systemd wrote the text login {login_line:?} and the stages"),
    );
    let file = std::env::temp_dir().join(format!("bootprint-late-{}.prom", std::process::id()));
    let (ok, said) = fs::write(&file, prom)
        .and_then(|()| fs::File::open(&file))
        .map_err(|e| e.to_string())
        .and_then(|f| {
            crate::checks::host::command(
                Command::new("promtool").args(["check", "metrics"]).stdin(f),
            )
            .map_err(|e| e.to_string())
        })
        .unwrap_or_else(|e| (false, e));
    let _ = fs::remove_file(&file);
    c.check(
        ok && !prom.is_empty(),
        &format!("boot 3: promtool check metrics accepts export --systemd's file ({said})"),
    );
}

/// The sections compared between a boot and the reference.
const COMPARED: &[&str] = &[
    "units",
    "daemons",
    "mounts",
    "modules",
    "hostname",
    "random-seed",
];

/// A bad state file: the generator must name its line and defer nothing.
const BAD_STATE: &str =
    "# bootprint systemd late units 2\nunits 0000000000000000\nnot a unit name\n";

/// Units a state file may list but the generator must never defer (the security issue's
/// defect 7): the manager's, the bus, the login's, the one that makes / writable.
const NEVER_DEFERRED: [&str; 4] = [
    "dbus.service",
    "systemd-journald.service",
    "getty@tty1.service",
    "systemd-remount-fs.service",
];

pub fn run(paths: &Paths, cargo: bool) -> Result<()> {
    checklist::run("late", |c| late(paths, cargo, c))
}

fn boot(
    paths: &Paths,
    img: &image::Image,
    append: &str,
    disk: Option<&Path>,
    keep: bool,
    extra_script: &str,
) -> Result<BootResult> {
    let mut o = BootOpts::new(Profile::Fast);
    o.record = true;
    o.append = append.to_string();
    o.keep_disk = keep;
    o.disk_from = disk.map(Path::to_path_buf);
    o.guest_script = Some(format!(
        "#!/bin/sh\n{}{STATE_SCRIPT}{extra_script}",
        checklist::COMMON_STATE
    ));
    let r = qemu::boot(paths, img, &o)?;
    println!(
        "boot: {append}: login after {:.2} s, serial log {}",
        r.host_login_s,
        r.serial_log.display()
    );
    Ok(r)
}

fn read_trace(r: &BootResult, file: &str) -> String {
    crate::bench::runner::trace_file(r, file).unwrap_or_default()
}

/// `== name` sections of the guest script's output.
pub(crate) fn sections(out: &str) -> Vec<(String, BTreeSet<String>)> {
    let mut v: Vec<(String, BTreeSet<String>)> = Vec::new();
    for line in out.lines() {
        let line = line.trim_end();
        if let Some(name) = line.strip_prefix("== ") {
            v.push((name.to_string(), BTreeSet::new()));
        } else if let Some((_, set)) = v.last_mut() {
            if !line.is_empty() {
                set.insert(line.to_string());
            }
        }
    }
    v
}

pub(crate) fn section<'a>(
    s: &'a [(String, BTreeSet<String>)],
    name: &str,
) -> Option<&'a BTreeSet<String>> {
    s.iter().find(|(n, _)| n == name).map(|(_, set)| set)
}

/// Checks that `got` left the machine as `reference` did, section by section.
fn same_state(c: &mut Checks, label: &str, got: &str, reference: &str) {
    same_sections(c, label, got, reference, COMPARED, &["failed", "jobs"]);
}

/// Checks that the sections `compared` of `got` equal the reference's and that the sections
/// `empty` of `got` are empty.
pub(crate) fn same_sections(
    c: &mut Checks,
    label: &str,
    got: &str,
    reference: &str,
    compared: &[&str],
    empty: &[&str],
) {
    let (g, r) = (sections(got), sections(reference));
    c.check(
        section(&g, "end").is_some() && section(&r, "end").is_some(),
        &format!("{label}: the state script ran to its end in both boots"),
    );
    for name in compared {
        let (a, b) = (section(&g, name), section(&r, name));
        let same = a.is_some() && a == b;
        let detail = match (a, b) {
            (Some(a), Some(b)) if a != b => format!(
                ": only here {:?}, only in the reference {:?}",
                a.difference(b).collect::<Vec<_>>(),
                b.difference(a).collect::<Vec<_>>()
            ),
            (Some(a), _) => format!(" ({} lines)", a.len()),
            _ => " (missing)".into(),
        };
        c.check(
            same,
            &format!("{label}: {name} as in the reference{detail}"),
        );
    }
    for name in empty {
        let empty = section(&g, name).is_some_and(BTreeSet::is_empty);
        c.check(
            empty,
            &format!("{label}: no {name} ({:?})", section(&g, name)),
        );
    }
}

fn late(paths: &Paths, cargo: bool, c: &mut Checks) -> Result<()> {
    let img = image::ensure(paths, cargo)?;

    // 1. Learning.
    let first = boot(
        paths,
        &img,
        &format!("{SYSTEMD} bootprint.late=1"),
        None,
        true,
        "",
    )?;
    let disk = first
        .kept_disk()
        .ok_or_else(|| Error::fail("the learning boot kept no disk"))?;
    let (learned, choice) = check_learning(c, &first);

    // 2. Deferred.
    let deferred = boot(
        paths,
        &img,
        &format!("{SYSTEMD} bootprint.late=1"),
        Some(&disk),
        false,
        "",
    );
    // 3. The reference, where systemd-analyze also reads the boot.
    let stock = boot(paths, &img, SYSTEMD, Some(&disk), false, ANALYZE_SCRIPT);
    // 4. A bad state file. 5. The learned state with units listed that are never deferred.
    let bad_disk = with_state(&disk, BAD_STATE, "bad-state");
    let forged = forged_state(&choice);
    let forged_disk = with_state(&disk, &forged, "forged-state");
    let _ = fs::remove_file(&disk);
    let (deferred, stock) = (deferred?, stock?);
    let (bad_disk, forged_disk) = (bad_disk?, forged_disk?);
    let forged_boot = boot(
        paths,
        &img,
        &format!("{SYSTEMD} bootprint.late=1"),
        Some(&forged_disk),
        false,
        "",
    );
    let _ = fs::remove_file(&forged_disk);
    let forged_boot = forged_boot?;
    let bad = boot(
        paths,
        &img,
        &format!("{SYSTEMD} bootprint.late=1"),
        Some(&bad_disk),
        false,
        "",
    );
    let _ = fs::remove_file(&bad_disk);
    let bad = bad?;

    let s_out = stock.guest_output.clone().unwrap_or_default();
    check_deferred(c, &deferred, &stock, &s_out, learned);
    check_journal(c, &first, &stock);
    check_bad_state(c, &bad, &s_out);
    check_forged(c, &forged_boot, &s_out, learned);
    Ok(())
}

/// Boot 1's checks: it learned late units, and which; returns how many and its choice
/// (the trace's systemd-late.txt).
fn check_learning(c: &mut Checks, first: &BootResult) -> (f64, String) {
    let events = read_trace(first, "events.log");
    let learned =
        crate::bench::figures::event_field(&events, "late_learned", "late").unwrap_or(0.0);
    c.check(
        learned >= 3.0,
        &format!("boot 1 learned late units at boot done (late_learned late={learned})"),
    );
    let choice = read_trace(first, "systemd-late.txt");
    for unit in ["cron.service", "exim4.service", "ssh.service"] {
        c.check(
            choice.lines().any(|l| l == unit),
            &format!("{unit} is late in the trace's systemd-late.txt"),
        );
    }
    c.check(
        choice.contains("# kept rsyslog.service: started by syslog.socket"),
        "a socket-activated unit is kept early, with its reason",
    );
    let history = crate::bench::figures::event_fields(&events, "late_history");
    c.check(
        crate::bench::figures::field(&history, "kind").as_deref() == Some("learn"),
        &format!("boot 1 joins late units' own history as their learning boot (late_history {history:?})"),
    );
    (learned, choice)
}

/// Boots 2 and 3: the deferred boot started what boot 1 learned after the login, before boot
/// done, and left the machine as the stock boot (3) did.
fn check_deferred(
    c: &mut Checks,
    deferred: &BootResult,
    stock: &BootResult,
    s_out: &str,
    learned: f64,
) {
    let d_out = deferred.guest_output.clone().unwrap_or_default();
    let late_log = read_trace(deferred, "late.log");
    // The test bed keeps late units from comparing (qemu::NO_JUDGING), so boot 2 defers and
    // counts as such (docs/systemd.md, "Proving itself").
    let history =
        crate::bench::figures::event_fields(&read_trace(deferred, "events.log"), "late_history");
    c.check(
        history.as_ref().is_some_and(|f| {
            f.iter().any(|(k, v)| k == "kind" && v == "defer")
                && !f.iter().any(|(k, _)| k == "counted")
        }),
        &format!(
            "boot 2 joins late units' own history as a deferring boot (late_history {history:?})"
        ),
    );
    let planned = crate::bench::figures::event_field(&late_log, "late_planned", "units");
    c.check(
        planned == Some(learned),
        &format!(
            "boot 2: the generator deferred what boot 1 learned (late_planned units={planned:?})"
        ),
    );
    let login = event_seconds(
        &read_trace(deferred, "events.log"),
        "milestone",
        Some("name=text_login"),
    );
    let started = event_seconds(&late_log, "late_start", None);
    let done = event_seconds(&late_log, "late_done", Some("result=ok"));
    c.check(
        matches!((login, started), (Some(l), Some(s)) if s > l),
        &format!("boot 2: the late units started after the text login (login {login:?} s, late_start {started:?} s)"),
    );
    c.check(
        done.is_some(),
        &format!(
            "boot 2: the waiter started bootprint-late.target (late_done result=ok at {done:?} s)"
        ),
    );
    let boot_done = event_seconds(&read_trace(deferred, "events.log"), "boot_done", None);
    c.check(
        matches!((done, boot_done), (Some(d), Some(b)) if b > d),
        &format!("boot 2: boot done came after the late units ({boot_done:?} s)"),
    );
    c.check(
        !read_trace(stock, "late.log").contains("late_planned"),
        "boot 3: with the switch off the generator wrote nothing",
    );
    same_state(c, "boot 2 (late units)", &d_out, s_out);
    check_units(c, stock);
    check_live(c, stock);
}

/// Boot 4: a bad state file is reported, nothing deferred, the machine as the stock boot's.
fn check_bad_state(c: &mut Checks, bad: &BootResult, s_out: &str) {
    let b_out = bad.guest_output.clone().unwrap_or_default();
    let b_late = sections(&b_out);
    let b_log = section(&b_late, "late.log").cloned().unwrap_or_default();
    c.check(
        b_log
            .iter()
            .any(|l| l.contains("late_skipped") && l.contains("systemd-late:3:")),
        &format!("boot 4: a bad state file is reported with its line ({b_log:?})"),
    );
    c.check(
        !b_log.iter().any(|l| l.contains("late_planned")),
        "boot 4: and nothing is deferred",
    );
    same_state(c, "boot 4 (bad state file)", &b_out, s_out);
}

/// Boot 5: the learned state with units that are never deferred: those refused, the rest
/// deferred.
fn check_forged(c: &mut Checks, forged_boot: &BootResult, s_out: &str, learned: f64) {
    let f_out = forged_boot.guest_output.clone().unwrap_or_default();
    let f_late = sections(&f_out);
    let f_log = section(&f_late, "late.log").cloned().unwrap_or_default();
    for unit in NEVER_DEFERRED {
        c.check(
            f_log
                .iter()
                .any(|l| l.contains("late_refused") && l.contains(&format!("unit={unit} "))),
            &format!("boot 5: the generator refused to defer {unit} ({f_log:?})"),
        );
    }
    let f_planned = f_log
        .iter()
        .find_map(|l| crate::bench::figures::event_field(l, "late_planned", "units"));
    c.check(
        f_planned == Some(learned),
        &format!("boot 5: and deferred what boot 1 learned (late_planned units={f_planned:?})"),
    );
    same_state(c, "boot 5 (core units in the state)", &f_out, s_out);
}

/// The state boot 1 learned (its trace's systemd-late.txt) with [`NEVER_DEFERRED`] added
/// to its late units: the unit files' fingerprint still holds.
fn forged_state(learned: &str) -> String {
    let mut out = String::new();
    for line in learned.lines() {
        out.push_str(line);
        out.push('\n');
        if line.starts_with("pins late_units") {
            for u in NEVER_DEFERRED {
                out.push_str(u);
                out.push('\n');
            }
        }
    }
    out
}

/// A copy of `disk` whose learned state (/var/lib/bootprint/systemd-late) is `state`;
/// `name` names the copy and its scratch files.
fn with_state(disk: &Path, state: &str, name: &str) -> Result<PathBuf> {
    let dir = disk.parent().unwrap_or(Path::new("."));
    let copy = dir.join(format!("disk-{name}.raw"));
    let status = Command::new("cp")
        .args(["--sparse=always"])
        .arg(disk)
        .arg(&copy)
        .status()
        .map_err(|e| io_err("cannot run cp for", disk, e))?;
    if !status.success() {
        return Err(Error::fail(format!("cp {} failed", disk.display())));
    }
    let file = dir.join(name);
    fs::write(&file, state).map_err(|e| io_err("cannot write", &file, e))?;
    let script = dir.join(format!("{name}.debugfs"));
    fs::write(
        &script,
        format!(
            "cd /var/lib/bootprint\nrm systemd-late\nwrite {} systemd-late\n",
            file.display()
        ),
    )
    .map_err(|e| io_err("cannot write", &script, e))?;
    run_logged(
        Command::new("debugfs")
            .arg("-w")
            .arg("-f")
            .arg(&script)
            .arg(&copy),
        &dir.join(format!("{name}.log")),
    )?;
    Ok(copy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_sets_and_differences_fail() {
        let a = "== units\nb.service\na.service\n== jobs\n== end\n";
        let s = sections(a);
        assert_eq!(
            section(&s, "units").unwrap().iter().collect::<Vec<_>>(),
            ["a.service", "b.service"]
        );
        assert!(section(&s, "jobs").unwrap().is_empty());
        let mut c = Checks {
            passed: 0,
            failed: 0,
        };
        let reference = format!("{a}== daemons\ncron\n== mounts\n== modules\n== hostname\nh\n== random-seed\npresent\n== failed\n");
        same_state(&mut c, "same", &reference, &reference);
        assert_eq!(c.failed, 0);
        let other = reference.replace("cron", "sshd");
        same_state(&mut c, "other", &other, &reference);
        assert_eq!(c.failed, 1, "one section differs");
    }
}
