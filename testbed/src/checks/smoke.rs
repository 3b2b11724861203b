//! `smoke`: the real-boot smoke test. Boots the current image with the recorder, copies the
//! trace out, runs `bootprint report --json` on it and checks what only a real boot shows.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::bench::figures::event_field;
use crate::checks::checklist::{self, Checks};
use crate::vm::image;
use crate::vm::qemu::{self, BootOpts, BootResult, Profile};
use crate::vm::util::{Error, Paths, Result};

/// How far the report's text-login time (kernel clock) may be from the host's measurement
/// minus the firmware estimate. Measured differences are in docs/testbed.md.
pub const TOLERANCE_S: f64 = 2.5;

/// Seconds the planted init script sleeps in the first boot.
pub const PLANT_SLEEP_S: u32 = 4;

/// The trace files every recorded boot must have.
pub const TRACE_FILES: &[&str] = &["header", "proc_stat.log", "proc_ps.log", "events.log"];

pub fn run(paths: &Paths, cargo: bool) -> Result<()> {
    checklist::run("smoke", |c| {
        // The first boot's trace: the module check compares the third boot with it.
        let mut first_trace = None;
        let disk = smoke(paths, cargo, c, &mut first_trace)?;
        let r = kernel_log(paths, c, disk.as_deref(), first_trace.as_deref());
        if let Some(d) = disk {
            let _ = std::fs::remove_file(d);
        }
        r?;
        rc_boot(paths, c, first_trace.as_deref())?;
        early_panic(paths, c)
    })
}

/// A guest kernel that dies before it runs any program (here on purpose: no init in the
/// initramfs and no root device, so PID 1 panics in the root mount) must end the boot at
/// once with the kernel's reason, and `qemu::boot` must boot it once more, keeping the first
/// serial log (the 2026-11-29 `Oops: int3` under TCG is the case this is for).
fn early_panic(paths: &Paths, c: &mut Checks) -> Result<()> {
    let img = image::ensure(paths, false)?;
    let mut opts = BootOpts::new(Profile::Fast);
    opts.append = "rdinit=/bootprint-no-such-init".to_string();
    opts.root = Some("/dev/bootprint-no-such-disk".to_string());
    let t = std::time::Instant::now();
    let err = match qemu::boot(paths, &img, &opts) {
        Ok(_) => {
            c.check(false, "a boot without init or root failed");
            return Ok(());
        }
        Err(e) => e.to_string(),
    };
    let secs = t.elapsed().as_secs_f64();
    c.check(
        err.contains("the guest kernel panicked before `login:`: Kernel panic - not syncing"),
        &format!(
            "a guest kernel panic ends the boot with the kernel's reason: {}",
            err.lines().next().unwrap_or("")
        ),
    );
    // Two boots of a few seconds each, never the login timeout.
    c.check(
        secs < 240.0,
        &format!("both boots ended within {secs:.0} s (limit 240 s)"),
    );
    let retried = crate::vm::util::newest_run(paths)
        .map(|run| {
            run.join("serial-kernel-fault.log").is_file() && run.join("serial.log").is_file()
        })
        .unwrap_or(false);
    c.check(
        retried,
        "a panic before init got one more boot (serial-kernel-fault.log beside serial.log)",
    );
    Ok(())
}

/// The first boot: recorded, and learning a readahead pack (`bootprint.readahead=1`, no pack
/// yet); its disk is kept so the second boot replays the pack. Returns that disk; its trace
/// goes to `first_trace`.
fn smoke(
    paths: &Paths,
    cargo: bool,
    c: &mut Checks,
    first_trace: &mut Option<PathBuf>,
) -> Result<Option<PathBuf>> {
    let img = image::ensure(paths, cargo)?;
    let mut opts = BootOpts::new(Profile::Fast);
    opts.record = true;
    // Also a planted cost for `bootprint advise` (vm/image.rs PLANT_SCRIPT): a 4 s sleep in an
    // init script of runlevel 2, before the getty.
    opts.append = format!("bootprint.readahead=1 bootprint.plant=sleep:{PLANT_SLEEP_S}");
    opts.keep_disk = true;
    let boot = qemu::boot(paths, &img, &opts)?;
    let disk = boot.kept_disk();
    print_boot(&boot);
    c.check(
        boot.qemu_exit == "clean",
        &format!("guest powered off by itself (qemu_exit {})", boot.qemu_exit),
    );
    let Some(trace) = boot.trace_dir.as_ref().filter(|d| d.is_dir()) else {
        c.check(false, "the recorder's trace was copied out of the guest");
        return Ok(disk);
    };
    c.check(true, &format!("trace copied out to {}", trace.display()));
    *first_trace = Some(trace.clone());
    check_trace_files(c, trace);
    let report = run_report(paths, trace);
    let report = match report {
        Ok(v) => {
            c.check(true, "`bootprint report --json` ran and printed JSON");
            v
        }
        Err(e) => {
            c.check(false, &format!("`bootprint report --json`: {e}"));
            return Ok(disk);
        }
    };
    let text_login = check_login_time(c, &boot, &report);
    planted_sleep_found(paths, trace, text_login, c);
    if let Some(d) = &disk {
        prometheus_written(d, text_login, c);
    }
    check_events(c, &boot, trace);
    Ok(disk)
}

/// The boot's figures, printed.
fn print_boot(boot: &BootResult) {
    println!("boot: cmdline {}", boot.cmdline);
    println!("boot: host_login_s {:.3}", boot.host_login_s);
    println!(
        "boot: firmware_load_s {}",
        boot.firmware_load_s
            .map(|f| format!("{f:.3}"))
            .unwrap_or_else(|| "none".into())
    );
    println!("boot: serial log {}", boot.serial_log.display());
}

/// Every file the trace must have is there and not empty.
fn check_trace_files(c: &mut Checks, trace: &Path) {
    for f in TRACE_FILES {
        let p = trace.join(f);
        let size = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        c.check(
            size > 0,
            &format!("trace has a non-empty {f} ({size} bytes)"),
        );
    }
}

/// The report's text login, and that it agrees with the host's time to `login:`; returns it.
fn check_login_time(c: &mut Checks, boot: &BootResult, report: &Value) -> Option<f64> {
    let text_login = report.get("text_login_s").and_then(Value::as_f64);
    let kernel = report.get("kernel_s").and_then(Value::as_f64);
    println!(
        "report: text_login_s {} kernel_s {}",
        text_login
            .map(|t| format!("{t:.3}"))
            .unwrap_or_else(|| "none".into()),
        kernel
            .map(|t| format!("{t:.3}"))
            .unwrap_or_else(|| "none".into())
    );
    c.check(
        text_login.is_some(),
        "report found the text-login milestone (text_login_s is a number)",
    );
    let fw_ok = c.check(
        boot.firmware_load_s.is_some(),
        "firmware+kernel-loading time estimated from the serial log",
    );
    // The guest clock is placed on the host's time line with the offset of the kernel lines
    // just before `login:` (falls back to the firmware estimate).
    let offset = boot.clock_offset_s.or(boot.firmware_load_s);
    if let (Some(t), Some(off), true) = (text_login, offset, fw_ok) {
        let host = boot.host_login_s - off;
        let diff = t - host;
        c.check(
            diff.abs() <= TOLERANCE_S,
            &format!(
                "text_login_s {t:.3} agrees with host_login_s - clock offset = {:.3} - {off:.3} = {host:.3} \
                 (difference {diff:+.3} s, tolerance {TOLERANCE_S} s; firmware estimate {})",
                boot.host_login_s,
                boot.firmware_load_s.map(|f| format!("{f:.3} s")).unwrap_or_else(|| "none".into())
            ),
        );
    }
    text_login
}

/// What the recorder's events say: exec events from the connector, the delay-accounting
/// switch left alone, no kernel stall, a readahead pack learned.
fn check_events(c: &mut Checks, boot: &BootResult, trace: &Path) {
    let events = std::fs::read_to_string(trace.join("events.log")).unwrap_or_default();
    // Exec events come from the kernel's process events connector, with the program's path
    // while the process runs (the planted service's `sleep` runs for seconds).
    let from_connector = events
        .lines()
        .any(|l| l.contains(" recorder_stats ") && l.contains(" exec_source=connector"));
    let sleep_exec = events
        .lines()
        .any(|l| l.contains(" exec ") && l.trim_end().ends_with("/sleep"));
    c.check(
        from_connector && sleep_exec,
        &format!(
            "exec events came from the process events connector ({from_connector}) and name \
             the planted service's sleep ({sleep_exec})"
        ),
    );
    // The recorder leaves the kernel's code alone unless asked: flipping the delay-accounting
    // static key while init forks is what wedged the test bed's guests (`stall-repro`).
    let delayacct = event_field(&events, "recorder_stats", "delayacct");
    c.check(
        delayacct == Some(0.0),
        &format!(
            "the recorder left kernel.task_delayacct off (recorder_stats delayacct={delayacct:?})"
        ),
    );
    let serial = std::fs::read(&boot.serial_log).unwrap_or_default();
    let stall = crate::vm::serial::kernel_stall(&String::from_utf8_lossy(&serial));
    c.check(
        stall.is_none(),
        &format!("the guest kernel reported no stall ({stall:?})"),
    );
    let learned = event_field(&events, "readahead_learn", "entries");
    c.check(
        learned.is_some_and(|n| n > 10.0) && !events.contains(" readahead_learn error="),
        &format!("readahead learned a pack ({learned:?} entries) and wrote it"),
    );
}

/// A second boot with `initcall_debug`: the recorder keeps the kernel log in the trace, and
/// `bootprint kernel` must read it the way the log's own timestamps say.
/// It starts from the first boot's disk, so it also replays the readahead pack learned there
/// (`first_trace` is the learning boot's trace).
fn kernel_log(
    paths: &Paths,
    c: &mut Checks,
    disk: Option<&Path>,
    first_trace: Option<&Path>,
) -> Result<()> {
    let img = image::Image::current(paths)?;
    let mut opts = BootOpts::new(Profile::Fast);
    opts.record = true;
    opts.append =
        "initcall_debug log_buf_len=16M bootprint.readahead=1 bootprint.readahead_metadata=1"
            .into();
    opts.disk_from = disk.map(Path::to_path_buf);
    let boot = qemu::boot(paths, &img, &opts)?;
    println!("boot: cmdline {}", boot.cmdline);
    let Some(trace) = boot.trace_dir.as_ref().filter(|d| d.is_dir()) else {
        c.check(false, "initcall_debug boot: the trace was copied out");
        return Ok(());
    };
    let events = std::fs::read_to_string(trace.join("events.log")).unwrap_or_default();
    check_replay(c, &events, disk, first_trace);
    let dmesg = std::fs::read_to_string(trace.join("dmesg")).unwrap_or_default();
    // The log's own figures, read here independently of the kernel crate.
    let stamp = |line: &str| -> Option<f64> {
        let rest = line.strip_prefix('[')?;
        rest[..rest.find(']')?].trim().parse().ok()
    };
    let run_init = dmesg
        .lines()
        .find(|l| l.contains("] Run /init as init process"))
        .and_then(stamp);
    let returns = dmesg
        .lines()
        .filter(|l| l.contains("] initcall ") && l.contains(" returned "))
        .count();
    let first_call = dmesg
        .lines()
        .find(|l| l.contains("] calling  "))
        .and_then(stamp);
    c.check(
        run_init.is_some() && returns > 100,
        &format!("the trace's dmesg holds the initcall_debug log ({returns} initcall returns, Run /init at {run_init:?})"),
    );
    check_kernel_report(paths, trace, c, run_init, returns, first_call);
    Ok(())
}

/// The second boot replayed the learned pack, its metadata first, and again after
/// checkroot.sh's remount.
fn check_replay(c: &mut Checks, events: &str, disk: Option<&Path>, first_trace: Option<&Path>) {
    let replayed = event_field(events, "readahead_replay", "bytes");
    let hit = event_field(events, "readahead_hit", "ratio");
    c.check(
        disk.is_some() && replayed.is_some_and(|b| b > 1e6) && hit.is_some_and(|h| h >= 0.9),
        &format!(
            "second boot replayed the learned pack ({replayed:?} bytes, hit ratio {hit:?} at boot done)"
        ),
    );
    // Before the files, from the root's block device (devtmpfs's node: udev has not run),
    // the ranges the learning boot listed in the pack.
    let learned_meta = first_trace
        .and_then(|t| std::fs::read_to_string(t.join("events.log")).ok())
        .and_then(|ev| event_field(&ev, "readahead_learn", "metadata_bytes"));
    let meta = event_field(events, "readahead_replay", "metadata_bytes");
    let meta_requests = event_field(events, "readahead_replay", "metadata_requests");
    c.check(
        learned_meta.is_some_and(|b| b > 0.0)
            && meta == learned_meta
            && meta_requests.is_some_and(|n| n > 0.0),
        &format!(
            "second boot's replay read the pack's metadata first ({meta:?} bytes in \
             {meta_requests:?} reads; the pack lists {learned_meta:?})"
        ),
    );
    // The image boots with `rw`: checkroot.sh remounts the root read-only for its fsck,
    // which drops the root device's cache, and the recorder reads the metadata again.
    let again = event_field(events, "readahead_metadata_again", "bytes");
    c.check(
        again.is_some() && again == meta,
        &format!(
            "after checkroot.sh's read-only remount the recorder read the metadata again \
             ({again:?} bytes)"
        ),
    );
}

/// `bootprint kernel --json` on the trace agrees with the log's own figures: the time to
/// Run /init, every initcall return, PID 1's built-in initcalls within their span.
fn check_kernel_report(
    paths: &Paths,
    trace: &Path,
    c: &mut Checks,
    run_init: Option<f64>,
    returns: usize,
    first_call: Option<f64>,
) {
    let k = match run_cli(paths, "kernel", trace) {
        Ok(v) => v,
        Err(e) => {
            c.check(false, &format!("`bootprint kernel --json`: {e}"));
            return;
        }
    };
    let kernel_s = k["boot"]["phases"]["kernel_us"].as_f64().map(|us| us / 1e6);
    c.check(
        matches!((kernel_s, run_init), (Some(a), Some(b)) if (a - b).abs() < 1e-6),
        &format!(
            "kernel time to Run /init {kernel_s:?} s equals the log's timestamp {run_init:?} s"
        ),
    );
    let initcalls = k["boot"]["initcalls"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let paired = initcalls
        .iter()
        .filter(|i| !i["return_line"].is_null())
        .count();
    c.check(
        paired == returns,
        &format!(
            "every initcall return in the log is an initcall of the report ({paired} of {returns})"
        ),
    );
    // Built-in initcalls run one after another on PID 1, so their total cannot exceed the
    // time from the first `calling` line to `Run /init`.
    let pid1_total: f64 = initcalls
        .iter()
        .filter(|i| i["pid"].as_u64() == Some(1) && i["module"].is_null())
        .filter_map(|i| i["duration_us"].as_f64())
        .sum::<f64>()
        / 1e6;
    if let (Some(first), Some(init)) = (first_call, run_init) {
        let span = init - first;
        c.check(
            pid1_total > 0.0 && pid1_total <= span + 0.01,
            &format!("built-in initcalls on PID 1 total {pid1_total:.3} s, within the {span:.3} s from the first call to Run /init"),
        );
    }
}

/// `bootprint advise` finds the planted sleep: a `sleep` finding whose evidence is the
/// `sleep 4` process, about 4 s long, started before the text login.
fn planted_sleep_found(paths: &Paths, trace: &Path, text_login: Option<f64>, c: &mut Checks) {
    let advice = match run_cli(paths, "advise", trace) {
        Ok(v) => v,
        Err(e) => {
            c.check(false, &format!("`bootprint advise --json`: {e}"));
            return;
        }
    };
    let want = format!("sleep {PLANT_SLEEP_S}");
    let found = advice["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|f| {
            let ev = f["evidence"].as_array()?.first()?;
            (f["id"] == "sleep" && ev["what"].as_str()?.starts_with(&want)).then(|| {
                (
                    ev["from_s"].as_f64().unwrap_or(0.0),
                    ev["to_s"].as_f64().unwrap_or(0.0),
                    ev["pid"].as_u64(),
                )
            })
        });
    let ok = matches!((found, text_login), (Some((from, to, Some(_))), Some(login))
        if (to - from - PLANT_SLEEP_S as f64).abs() < 1.0 && from < login);
    c.check(
        ok,
        &format!(
            "`bootprint advise` found the planted `{want}` before the login with its evidence \
             (from, to, pid: {found:?}; text login {text_login:?})"
        ),
    );
}

/// bootprint-boot exported the boot's figures at boot done into node_exporter's textfile
/// directory (the image has it): the file on the kept disk has the text-login milestone the
/// report found.
fn prometheus_written(disk: &Path, text_login: Option<f64>, c: &mut Checks) {
    let file = format!("{}/bootprint.prom", image::PROMETHEUS_DIR);
    let text = Command::new("debugfs")
        .args(["-R", &format!("cat {file}")])
        .arg(disk)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let login = text
        .lines()
        .find(|l| l.starts_with("bootprint_milestone_seconds{milestone=\"text_login\"}"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse::<f64>().ok());
    c.check(
        text.contains("# TYPE bootprint_phase_seconds gauge")
            && matches!((login, text_login), (Some(a), Some(b)) if (a - b).abs() < 0.01),
        &format!(
            "bootprint-boot exported the boot to {file} at boot done (text login {login:?} s; report {text_login:?} s)"
        ),
    );
}

fn run_report(paths: &Paths, trace: &Path) -> Result<Value> {
    run_cli(paths, "report", trace)
}

/// `target/release/bootprint VERB --json TRACE`, its output parsed.
pub(crate) fn run_cli(paths: &Paths, verb: &str, trace: &Path) -> Result<Value> {
    let cli = paths.repo.join("target/release/bootprint");
    let out = Command::new(&cli)
        .args([verb, "--json"])
        .arg(trace)
        .output()
        .map_err(|e| Error::fail(format!("cannot run {}: {e}", cli.display())))?;
    if !out.status.success() {
        return Err(Error::fail(format!(
            "exit status {}; stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        Error::fail(format!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
                .chars()
                .take(200)
                .collect::<String>()
        ))
    })
}

/// A boot with bootprint's LSB runner (`bootprint.rc=1`): it reaches `login:`, script output
/// comes prefixed with the script's name, and once the recorder copies the runner's span
/// log into the trace, that log has the login path reached and rsyslog's span, and the
/// report shows the services view.
fn rc_boot(paths: &Paths, c: &mut Checks, first_trace: Option<&Path>) -> Result<()> {
    let img = image::Image::current(paths)?;
    let mut opts = BootOpts::new(Profile::Fast);
    opts.record = true;
    // Also the parallel module loader, compared with the first boot's udev coldplug.
    opts.append = "bootprint.rc=1 bootprint.modules=1".into();
    let boot = qemu::boot(paths, &img, &opts)?;
    println!("boot: cmdline {}", boot.cmdline);
    println!("boot: host_login_s {:.3}", boot.host_login_s);
    c.check(true, "bootprint.rc=1 boot reached login:");
    modules_match_udev(c, first_trace, boot.trace_dir.as_deref());
    let serial = std::fs::read_to_string(&boot.serial_log).unwrap_or_default();
    c.check(
        serial.contains("| rsyslog: Starting"),
        "bootprint.rc=1: rsyslog's output on the console, prefixed `rsyslog: `",
    );
    c.check(
        !serial.contains("/etc/init.d/rc: "),
        "bootprint.rc=1: /lib/init/rc evaluated the runner's answer without error",
    );
    let log = boot
        .trace_dir
        .as_ref()
        .map(|t| t.join("rc.log"))
        .filter(|p| p.is_file());
    let Some(p) = log else {
        c.check(
            false,
            "the recorder copied the runner's rc.log into the trace",
        );
        return Ok(());
    };
    let text = std::fs::read_to_string(&p).unwrap_or_default();
    c.check(
        text.contains(" rc_reached runlevel=2") && text.contains(" rc_start script=rsyslog "),
        "trace rc.log has runlevel 2 reached and rsyslog's span",
    );
    let trace = p.parent().unwrap_or(Path::new("."));
    match run_report(paths, trace) {
        Ok(v) => {
            let spans = v["services"]["spans"].as_array().map_or(0, Vec::len);
            let chain = v["services"]["critical_chain"]
                .as_array()
                .map_or(0, Vec::len);
            c.check(
                spans > 5 && chain > 0,
                &format!("`bootprint report --json` has the services view ({spans} spans, critical chain of {chain})"),
            );
        }
        Err(e) => {
            c.check(
                false,
                &format!("`bootprint report --json` on the rc boot: {e}"),
            );
        }
    }
    Ok(())
}

/// `bootprint.modules=1` (this boot, `trace`) loads the set udev's coldplug loaded in the
/// first boot (`first_trace`), every difference explained by a rule of `modcheck`; and the loader folded
/// its measured load times into the durations state file.
fn modules_match_udev(c: &mut Checks, first_trace: Option<&Path>, trace: Option<&Path>) {
    let read = |d: Option<&Path>, f: &str| d.and_then(|d| std::fs::read_to_string(d.join(f)).ok());
    let a = read(first_trace, "proc_modules");
    let (b, events) = (read(trace, "proc_modules"), read(trace, "events.log"));
    let (Some(a), Some(b), Some(events)) = (a, b, events) else {
        c.check(
            false,
            "bootprint.modules=1: both boots' proc_modules and events.log to compare",
        );
        return;
    };
    let run = match crate::bench::modcheck::loader_run(&events) {
        Ok(r) => r,
        Err(e) => {
            c.check(
                false,
                &format!("bootprint.modules=1: the loader's lines in the trace: {e}"),
            );
            return;
        }
    };
    let (a, b) = (
        crate::bench::modcheck::proc_modules(&a),
        crate::bench::modcheck::proc_modules(&b),
    );
    let cmp = crate::bench::modcheck::compare(&a, &b, &run);
    for d in cmp.differences() {
        println!("modules: {d}");
    }
    let same = cmp.count(|r| *r == crate::bench::modcheck::Rule::Same);
    c.check(
        cmp.unexplained.is_empty() && same > 0,
        &format!(
            "bootprint.modules=1 loaded udev's real-root set ({same} modules; {} planned, {} from \
             the initramfs, {} differences explained); unexplained: {:?}",
            run.planned.len(),
            run.loaded_before.len(),
            cmp.differences().len(),
            cmp.unexplained
        ),
    );
    // Only the modules it inserted itself are learned (not udev's, `already_loaded`).
    let inserted = run
        .planned
        .values()
        .filter(|l| l.outcome == "loaded")
        .count();
    let learned = event_field(&events, "modules_learned", "modules");
    c.check(
        inserted > 0 && learned == Some(inserted as f64),
        &format!(
            "the loader wrote the durations of the {inserted} modules it inserted ({learned:?} learned)"
        ),
    );
}
