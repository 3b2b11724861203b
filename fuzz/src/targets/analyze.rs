//! The analysis of a parsed trace (`analyze`), the `[budget]` section, and the report's
//! renderings (`render`): a trace whose files all parse can still hold any numbers, pids and
//! parents, and `bootprint report` takes it to the end.

use std::fmt::Write as _;
use std::io::sink;

use arbitrary::Unstructured;

use analyze::budget::Budgets;
use trace::reader::Trace;

use super::trace::{raw_trace, CONF_TOKENS};
use super::{strict, trace_container_seeds, trace_fixtures, TRACE_TOKENS};
use crate::{seeds, Target};

/// A small `systemd-units.log`: a chain to the getty through an ordering cycle.
const SYSTEMD_UNITS: &str = "# bootprint systemd units 1
clock boottime_minus_monotonic_ns=0
manager userspace_us=100 finish_us=9000
unit id=a.service type=oneshot active=inactive result=success activating_us=200 active_us=0 inactive_us=900 After=b.service
unit id=b.service active=failed result=exit-code activating_us=300 active_us=400 After=a.service
unit id=ssh.service active=active activating_us=300 active_us=5000 After=a.service,b.service
unit id=getty@tty1.service active=active activating_us=1000 active_us=1001 After=ssh.service,b.service
";

/// The targets of this file.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "analyze_trace",
            about: "analyze::analyze of a parsed trace, then budget phases, settle, services, advise, diff, the bootchart2 process tree",
            run: |d| {
                let _ = report_of(d);
            },
            seeds: trace_container_seeds,
            tokens: TRACE_TOKENS,
            structured: Some(hostile_trace),
        },
        Target {
            name: "systemd_units",
            about: "trace::units::parse (systemd-units.log), ServicesView::from_units, blame, critical chain, failed, the late-unit advice, its text and JSON",
            run: |d| {
                if let Some(t) = strict(d) {
                    let (units, _) = trace::units::parse(t, "systemd-units.log");
                    let _ = trace::units::write(&units);
                    let v = analyze::services::ServicesView::from_units(&units);
                    let _ = v.blame();
                    let _ = v.critical_chain();
                    let _ = v.failed();
                    let _ = analyze::advise::late_units(&v, 2);
                    let _ = render::services::text(&v);
                    let _ = render::services::json(&v);
                }
            },
            seeds: || {
                let mut s = seeds::files(&["tests/fixtures/systemd-units/systemd-units.log"]);
                s.extend(seeds::lit(&[SYSTEMD_UNITS]));
                s
            },
            tokens: &[
                "# bootprint systemd units 1",
                "clock boottime_minus_monotonic_ns=",
                "manager userspace_us=1 finish_us=",
                "unit id=",
                "a.service",
                "getty@tty1.service",
                " activating_us=",
                " active_us=",
                " inactive_us=",
                " active=failed",
                " result=exit-code",
                " After=",
                " TriggeredBy=",
                "note what=",
                ",",
                "%20",
            ],
            structured: None,
        },
        Target {
            name: "analyze_budget",
            about: "analyze::budget::Budgets::from_toml ([budget] of bootprint.toml)",
            run: |d| {
                if let Some(t) = strict(d) {
                    let _ = Budgets::from_toml(t, "bootprint.toml");
                }
            },
            seeds: || {
                seeds::lit(&[
                    "[budget]\nkernel_s = 1\nearly_s = 1.5\ntext_login_s = 3\ngraphical_login_s = 4\ndone_s = 5\n",
                    "record = true\n[budget]\nkernel_s = 0\n[other]\nx = \"y\"\n",
                ])
            },
            tokens: CONF_TOKENS,
            structured: None,
        },
        Target {
            name: "render_report",
            about: "render: text, JSON, SVG chart, HTML, Perfetto, Prometheus of an analysed trace (what `bootprint report` writes)",
            run: run_render,
            seeds: trace_container_seeds,
            tokens: TRACE_TOKENS,
            structured: Some(hostile_trace),
        },
    ]
}

/// What `bootprint report` computes from a trace, up to the renderings.
fn report_of(d: &[u8]) -> Option<analyze::Report> {
    let trace = Trace::parse(raw_trace(d)).ok()?;
    let report = analyze::Report::build(&trace, &Budgets::default(), "defaults").ok()?;
    let _ = analyze::budget::worst(&report.phases);
    let _ = analyze::diff::diff(&report.model, &report.model);
    if let Ok(log) = trace.ps_log() {
        let stats = analyze::bootchart::ps_stats(&log);
        let mut tree = analyze::bootchart::ProcessTree::build(&stats);
        tree.merge_logger("bootchartd");
        tree.prune();
        tree.merge_exploders(&["udevd", "modprobe"]);
        tree.merge_siblings();
        tree.merge_runs();
        let _ = tree.flatten();
    }
    Some(report)
}

fn run_render(d: &[u8]) {
    let Some(r) = report_of(d) else {
        return;
    };
    let _ = render::text::report(&mut sink(), &r);
    let _ = render::json::report(&r);
    let _ = render::advice::report(&mut sink(), &r);
    let _ = render::prometheus::report(&r);
    let _ = render::perfetto::report(&mut sink(), &r);
    let _ = render::html::report(&mut sink(), &r);
    let diff = analyze::diff::diff(&r.model, &r.model);
    let _ = render::diff::write_text(&mut sink(), "a", "b", &diff);
}

/// A trace whose files all parse, with a hostile process table: pids from a small pool (so
/// they are reused, parents form chains, forests, cycles), any counters and start times,
/// times that jump or go back, the names analysis looks for, and milestones and command
/// lines that point at those processes.
fn hostile_trace(u: &mut Unstructured) -> arbitrary::Result<Vec<u8>> {
    const NAMES: &[&str] = &[
        "init",
        "rc",
        "startpar",
        "sh",
        "agetty",
        "getty",
        "login",
        "gdm-greeter",
        "lightdm-greeter",
        "udevd",
        "modprobe",
        "bootchartd",
        "sleep",
        "kworker/0:1",
        "a (b) c",
        "",
    ];
    let base = trace_fixtures().first().cloned().unwrap_or_default();
    let mut files: Vec<(String, Vec<u8>)> = base
        .into_iter()
        .filter(|(n, _)| n != "proc_ps.log" && n != "cmdline2.log")
        .collect();
    let pool: u32 = u.int_in_range(1..=40)?;
    let pid = |u: &mut Unstructured| -> arbitrary::Result<u32> {
        Ok(match u.int_in_range(0..=15)? {
            0 => u.arbitrary()?,
            1 => 0,
            _ => u.int_in_range(1..=pool)?,
        })
    };
    let num = |u: &mut Unstructured| -> arbitrary::Result<u64> {
        Ok(match u.int_in_range(0..=9)? {
            0 => u.arbitrary()?,
            1 => u64::MAX,
            _ => u.int_in_range(0..=5000)?,
        })
    };
    let mut ps = String::new();
    let mut t: u64 = u.int_in_range(0..=1000)?;
    for _ in 0..u.int_in_range(1..=30)? {
        t = match u.int_in_range(0..=9)? {
            0 => u.arbitrary()?,
            1 => t.saturating_sub(u.int_in_range(0..=100)?),
            _ => t.saturating_add(u.int_in_range(1..=100)?),
        };
        let _ = writeln!(ps, "{t}");
        for _ in 0..u.int_in_range(0..=12)? {
            let state = *u.choose(&['R', 'S', 'D', 'Z', 'I', 'T'])?;
            let name = *u.choose(NAMES)?;
            let (p, pp) = (pid(u)?, pid(u)?);
            let (ut, st, start, rss, blkio) = (num(u)?, num(u)?, num(u)?, num(u)?, num(u)?);
            let (prio, nice): (i64, i64) = (u.arbitrary()?, u.int_in_range(-20..=19)?);
            let threads = num(u)?;
            let _ = writeln!(
                ps,
                "{p} ({name}) {state} {pp} 0 0 0 0 0 0 0 0 0 {ut} {st} 0 0 {prio} {nice} {threads} 0 {start} 0 {rss} 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 {blkio}"
            );
        }
        ps.push('\n');
    }
    let mut cmdlines = String::new();
    for _ in 0..u.int_in_range(0..=6)? {
        let script = *u.choose(&[
            "/etc/init.d/ssh",
            "/etc/init.d/rc",
            "/sbin/startpar",
            "/bin/sleep",
        ])?;
        let _ = write!(cmdlines, "{}\n:{script}\n:{script}\0start\0\n\n", pid(u)?);
    }
    let mut events = String::from("# bootprint events 1\n");
    for _ in 0..u.int_in_range(0..=6)? {
        let ns: u64 = if u.ratio(1, 4)? {
            u.arbitrary()?
        } else {
            u.int_in_range(0..=60_000_000_000)?
        };
        let what = *u.choose(&[
            "milestone name=text_login",
            "milestone name=graphical_login",
            "boot_done reason=idle settle_s=3",
            "init_exec path=/sbin/init",
            "recorder_start hz=50",
            "exec path=/bin/sh",
        ])?;
        let _ = writeln!(events, "{ns} {what} pid={}", pid(u)?);
    }
    files.retain(|(n, _)| n != "events.log");
    files.push(("proc_ps.log".into(), ps.into_bytes()));
    files.push(("cmdline2.log".into(), cmdlines.into_bytes()));
    files.push(("events.log".into(), events.into_bytes()));
    Ok(crate::container::join(&files))
}
