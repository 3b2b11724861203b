//! The boot as Chrome trace-event JSON (the "JSON Object Format" of the Trace Event Format
//! document, which ui.perfetto.dev and chrome://tracing open): every process as a complete
//! event (`ph: "X"`) on its own pid/tid, services and the kernel's initcalls on their own
//! tracks, milestones as global instant events, CPU and disk as counters (`ph: "C"`).
//! Timestamps (`ts`) and durations (`dur`) are microseconds since the kernel started.

use std::io::{self, Write};

use analyze::BootModel;
use serde_json::{json, Value};

/// The pid of the services track (above any real pid: Linux's pid_max is at most 2^22).
pub const SERVICES_PID: u64 = 1 << 23;
/// The pid of the kernel initcalls track.
pub const INITCALLS_PID: u64 = SERVICES_PID + 1;
/// The pid the machine-wide counters (CPU, disk) belong to.
pub const COUNTERS_PID: u64 = SERVICES_PID + 2;

fn us(t_s: f64) -> f64 {
    (t_s * 1e6).round()
}

fn meta(pid: u64, tid: u64, what: &str, name: &str) -> Value {
    json!({"ph": "M", "name": what, "pid": pid, "tid": tid, "ts": 0, "args": {"name": name}})
}

/// All events, in the order written.
pub fn events(m: &BootModel, kernel: Option<&kernel::Report>) -> Vec<Value> {
    let mut ev = Vec::new();
    for p in &m.processes {
        let pid = u64::from(p.pid);
        ev.push(meta(pid, pid, "process_name", &p.name));
        ev.push(meta(pid, pid, "thread_name", &p.name));
        ev.push(json!({
            "name": p.name,
            "cat": if p.kernel_thread { "kernel_thread" } else { "process" },
            "ph": "X",
            "ts": us(p.start_s),
            "dur": us((p.end_s - p.start_s).max(0.0)),
            "pid": pid,
            "tid": pid,
            "args": {
                "ppid": p.ppid,
                "cmdline": p.cmdline,
                "cpu_s": p.cpu_s,
                "blocked_s": p.blocked_s,
            },
        }));
    }
    ev.push(meta(SERVICES_PID, 0, "process_name", "services"));
    for (k, s) in analyze::services::services(m).iter().enumerate() {
        let tid = k as u64 + 1;
        ev.push(meta(SERVICES_PID, tid, "thread_name", &s.name));
        ev.push(json!({
            "name": s.name,
            "cat": "service",
            "ph": "X",
            "ts": us(s.start_s),
            "dur": us((s.end_s - s.start_s).max(0.0)),
            "pid": SERVICES_PID,
            "tid": tid,
            "args": {"pid": s.pid, "action": s.action},
        }));
    }
    if let Some(k) = kernel {
        let calls: Vec<_> = k
            .boot
            .initcalls
            .iter()
            .filter(|c| c.start_us.is_some())
            .collect();
        if !calls.is_empty() {
            ev.push(meta(INITCALLS_PID, 0, "process_name", "kernel initcalls"));
        }
        for c in calls {
            // One track per kernel thread that ran initcalls (async probes run beside pid 1).
            let tid = u64::from(c.pid.unwrap_or(1));
            ev.push(json!({
                "name": c.func,
                "cat": "initcall",
                "ph": "X",
                "ts": c.start_us.unwrap_or(0),
                "dur": c.cost_us(),
                "pid": INITCALLS_PID,
                "tid": tid,
                "args": {"module": c.module, "ret": c.ret, "level": c.level},
            }));
        }
    }
    ev.push(meta(COUNTERS_PID, 0, "process_name", "machine"));
    for c in &m.cpu {
        ev.push(json!({
            "name": "cpu %", "ph": "C", "ts": us(c.t_s), "pid": COUNTERS_PID, "tid": 0,
            "args": {"user+sys": (c.user + c.sys) * 100.0, "iowait": c.iowait * 100.0},
        }));
    }
    for d in &m.disk {
        ev.push(json!({
            "name": "disk", "ph": "C", "ts": us(d.t_s), "pid": COUNTERS_PID, "tid": 0,
            "args": {"util %": d.util * 100.0, "read MB/s": d.read_bps / 1e6, "write MB/s": d.write_bps / 1e6},
        }));
    }
    let ms = &m.milestones;
    for (name, t) in [
        ("kernel done", ms.kernel.as_ref().map(|x| x.t_s)),
        ("init exec", ms.init_exec.as_ref().map(|x| x.t_s)),
        ("text login", ms.text_login.as_ref().map(|x| x.t_s)),
        (
            "graphical login",
            ms.graphical_login.as_ref().map(|x| x.t_s),
        ),
        ("boot done", Some(ms.boot_done.t_s)),
        ("session start", ms.session_start.as_ref().map(|x| x.t_s)),
        ("desktop ready", ms.desktop_ready.as_ref().map(|x| x.t_s)),
    ] {
        if let Some(t) = t {
            ev.push(
                json!({"name": name, "cat": "milestone", "ph": "i", "s": "g", "ts": us(t),
                           "pid": COUNTERS_PID, "tid": 0}),
            );
        }
    }
    for p in &ms.platform {
        ev.push(
            json!({"name": p.label, "cat": "milestone", "ph": "i", "s": "g", "ts": us(p.t_s),
                       "pid": COUNTERS_PID, "tid": 0}),
        );
    }
    ev
}

/// Writes the report's boot and its kernel's initcalls as Perfetto JSON ([`write`]).
pub fn report(out: &mut impl Write, r: &analyze::report::Report) -> io::Result<()> {
    write(out, &r.model, &r.origin, r.kernel.as_ref())
}

/// Writes `{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}`.
pub fn write(
    out: &mut impl Write,
    m: &BootModel,
    origin: &str,
    kernel: Option<&kernel::Report>,
) -> io::Result<()> {
    let v = json!({
        "traceEvents": events(m, kernel),
        "displayTimeUnit": "ms",
        "otherData": {"trace": origin, "producer": concat!("bootprint ", env!("CARGO_PKG_VERSION"))},
    });
    serde_json::to_writer(&mut *out, &v)?;
    out.write_all(b"\n")
}
