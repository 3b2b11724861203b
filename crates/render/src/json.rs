//! `bootprint report --json`: the boot model as one JSON object. Key names are a contract
//! (documented in `docs/report.md`); add keys, never rename them.

use std::io;

use analyze::report::Report;
use analyze::{BlockedSource, BootModel, Milestone, Process, TraceKind};
use serde_json::{json, Map, Value};

/// How many processes each top list holds.
pub const TOP_N: usize = 10;

fn opt_s(m: &Option<Milestone>) -> Value {
    m.as_ref().map_or(Value::Null, |m| json!(m.t_s))
}

fn opt_src(m: &Option<Milestone>) -> Value {
    m.as_ref().map_or(Value::Null, |m| json!(m.source))
}

fn process(p: &Process) -> Value {
    json!({
        "pid": p.pid,
        "ppid": p.ppid,
        "name": p.name,
        "start_s": p.start_s,
        "end_s": p.end_s,
        "cpu_s": p.cpu_s,
        "blocked_s": p.blocked_s,
        "cmdline": p.cmdline,
        "exe": p.exe,
        "alive_at_end": p.alive_at_end,
        "kernel_thread": p.kernel_thread,
        "session": p.session,
        "parent_index": p.parent,
        "depth": p.depth,
        "samples": p.samples.len(),
    })
}

/// The report as a JSON value.
pub fn to_value(m: &BootModel, origin: &str) -> Value {
    let ms = &m.milestones;
    let top = |list: &[usize], key: &str| -> Value {
        list.iter()
            .take(TOP_N)
            .map(|&i| {
                let p = &m.processes[i];
                let v = if key == "cpu_s" { p.cpu_s } else { p.blocked_s };
                let mut o = Map::new();
                o.insert("pid".into(), json!(p.pid));
                o.insert("name".into(), json!(p.name));
                o.insert(key.into(), json!(v));
                o.insert("cmdline".into(), json!(p.cmdline));
                Value::Object(o)
            })
            .collect()
    };
    json!({
        "trace": origin,
        "format": match m.source { TraceKind::Bootprint => "bootprint", TraceKind::Bootchart2 => "bootchart2" },
        "platform": m.platform.name(),
        "platform_rule": m.platform_rule,
        "system": m.system,
        "first_sample_s": m.first_sample_s,
        "last_sample_s": m.last_sample_s,
        "kernel_s": opt_s(&ms.kernel),
        "kernel_source": opt_src(&ms.kernel),
        "init_exec_s": opt_s(&ms.init_exec),
        "text_login_s": opt_s(&ms.text_login),
        "text_login_source": opt_src(&ms.text_login),
        "graphical_login_s": opt_s(&ms.graphical_login),
        "graphical_login_source": opt_src(&ms.graphical_login),
        "session_start_s": opt_s(&ms.session_start),
        "session_start_source": opt_src(&ms.session_start),
        "desktop_ready_s": opt_s(&ms.desktop_ready),
        "desktop_ready_source": opt_src(&ms.desktop_ready),
        "desktop_start_s": ms.desktop_start_s(),
        "boot_done_s": ms.boot_done.t_s,
        "boot_done_source": ms.boot_done.source,
        "platform_milestones": ms.platform,
        "boot_done_computed_s": analyze::build::computed_boot_done(m, &analyze::Options::default())
            .map(|c| c.t_s),
        "idle_fraction": m.cpu_totals.idle_fraction,
        "iowait_fraction": m.cpu_totals.iowait_fraction,
        "user_fraction": m.cpu_totals.user_fraction,
        "sys_fraction": m.cpu_totals.sys_fraction,
        "cpu_span_s": [m.cpu_totals.from_s, m.cpu_totals.to_s],
        "blocked_source": match m.blocked_source {
            BlockedSource::DelayAcct => "delayacct_blkio_ticks",
            BlockedSource::DStateSamples => "d_state_samples",
        },
        "top_cpu": top(&m.top_cpu, "cpu_s"),
        "top_blocked": top(&m.top_blocked, "blocked_s"),
        "processes": m.processes.iter().map(process).collect::<Vec<_>>(),
        "series": {
            "cpu": m.cpu,
            "disk": m.disk,
            "memory": m.memory,
        },
        "notes": m.notes,
        "readahead": m.readahead,
        "recorder": m.recorder,
        "started_after_first_sample": m.started_after_first_sample,
        "clock_offset_s": m.clock_offset_s,
    })
}

/// The whole report as one JSON value: the boot model's keys ([`to_value`]), then `kernel`,
/// `budgets`, `settle`, `services`, `cycle` and `login_account` (null when the trace has no
/// kernel log, no span log, no recorded shutdown before it, is not a systemd boot with a
/// login).
pub fn report(r: &Report) -> Value {
    let mut value = to_value(&r.model, &r.origin);
    if let Some(obj) = value.as_object_mut() {
        obj.insert(
            "kernel".into(),
            r.kernel.as_ref().map_or(Value::Null, kernel_summary),
        );
        obj.insert(
            "budgets".into(),
            crate::judge::budgets_json(&r.phases, &r.budget_source),
        );
        obj.insert("settle".into(), crate::judge::settle_json(&r.settle));
        obj.insert(
            "services".into(),
            r.services
                .as_ref()
                .map_or(Value::Null, crate::services::json),
        );
        obj.insert(
            "cycle".into(),
            r.cycle
                .as_ref()
                .and_then(|c| serde_json::to_value(c).ok())
                .unwrap_or(Value::Null),
        );
        obj.insert(
            "login_account".into(),
            r.account
                .as_ref()
                .and_then(|a| serde_json::to_value(a).ok())
                .unwrap_or(Value::Null),
        );
    }
    value
}

/// The kernel's initcalls that cost the most, costliest first (at most five); those that
/// started after the real init (udev's module loads) are not the kernel's time to init.
pub fn slowest_initcalls(k: &kernel::Report) -> Vec<&kernel::Initcall> {
    let mut slow: Vec<&kernel::Initcall> = k
        .boot
        .initcalls
        .iter()
        .filter(|c| k.boot.within_basis(c))
        .collect();
    slow.sort_by_key(|c| std::cmp::Reverse(c.cost_us()));
    slow.truncate(5);
    slow
}

/// The kernel figures the main report carries: phases, the slowest initcalls, the findings
/// (the whole kernel report: `bootprint kernel --json`).
fn kernel_summary(k: &kernel::Report) -> Value {
    let us = |v: Option<u64>| v.map(|u| u as f64 / 1e6);
    json!({
        "kernel_s": us(k.boot.phases.kernel_us),
        "initramfs_s": us(k.boot.phases.initramfs_us),
        "to_real_init_s": us(k.boot.phases.to_real_init_us),
        "initcalls": k.boot.initcalls.len(),
        "initcalls_after_init": k.after.initcalls.len(),
        "initramfs_init": k.boot.initramfs_init,
        "slowest_initcalls": slowest_initcalls(k).iter().map(|c| json!({
            "func": c.func,
            "module": c.module,
            "duration_s": c.cost_us() as f64 / 1e6,
        })).collect::<Vec<_>>(),
        "findings": k.findings.iter().map(|f| json!({
            "id": f.id,
            "title": f.title,
            "gain_s": us(f.gain_us),
        })).collect::<Vec<_>>(),
    })
}

/// Writes the kernel's report (`bootprint kernel --json`) as one JSON object, its serde
/// form, and a newline.
pub fn kernel(r: &kernel::Report, out: &mut impl io::Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, r)?;
    writeln!(out)
}

/// Writes the report as one JSON object and a newline.
pub fn write(m: &BootModel, origin: &str, out: &mut impl io::Write) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &to_value(m, origin))?;
    out.write_all(b"\n")
}
