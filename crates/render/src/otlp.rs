//! `bootprint export --otlp`: a boot as one OpenTelemetry trace, in OTLP's JSON encoding (an
//! `ExportTraceServiceRequest`, the body of `POST /v1/traces`; the protocol's JSON mapping:
//! ids in hex, times as decimal strings of Unix nanoseconds).
//!
//! The spans ([`spans`]), all children of one root span `boot`: the budget phases, the
//! reboot cycle's stages before the kernel (the shutdown that ended the boot before, the gap,
//! and within it the firmware and loader where they reported their time), every service or
//! unit that ended, the critical chain to the login as one span, and the slowest processes
//! (the report's `top_cpu` and `top_blocked`, each process once). Their names and times are
//! those of `bootprint report --json` (docs/export.md gives the mapping key by key).
//! The trace id is the boot id, so a boot sent twice is the same trace; span ids are derived
//! from the trace id and the span's place in the list.

use analyze::report::Report;
use serde_json::{json, Value};

/// One span, in seconds since the kernel started (before it: negative).
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// The operation name: a phase id, a stage, a service's script or unit, a process name.
    pub name: String,
    /// What it is: `boot`, `phase`, `cycle`, `service`, `critical_chain`, `process`.
    pub kind: &'static str,
    /// Start, seconds since the kernel started.
    pub start_s: f64,
    /// End, seconds since the kernel started.
    pub end_s: f64,
    /// Index of the parent span in the list (None: the root).
    pub parent: Option<usize>,
    /// Attributes, as they are sent.
    pub attributes: Vec<(&'static str, Value)>,
}

fn span(name: impl Into<String>, kind: &'static str, start_s: f64, end_s: f64) -> Span {
    Span {
        name: name.into(),
        kind,
        start_s,
        end_s,
        parent: Some(0),
        attributes: Vec::new(),
    }
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The boot's spans, the root first.
pub fn spans(r: &Report) -> Vec<Span> {
    let m = &r.model;
    let ms = &m.milestones;
    let mut out = vec![Span {
        name: "boot".into(),
        kind: "boot",
        start_s: 0.0,
        end_s: ms.boot_done.t_s,
        parent: None,
        attributes: vec![("bootprint.boot_done_source", json!(ms.boot_done.source))],
    }];
    for (key, milestone) in [
        ("bootprint.text_login_s", &ms.text_login),
        ("bootprint.graphical_login_s", &ms.graphical_login),
        ("bootprint.desktop_ready_s", &ms.desktop_ready),
    ] {
        if let Some(t) = milestone {
            out[0].attributes.push((key, json!(t.t_s)));
        }
    }
    for p in &r.phases {
        let mut s = span(
            serde_json::to_value(p.id)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            "phase",
            p.from_s,
            p.to_s,
        );
        s.attributes.push(("bootprint.budget_s", json!(p.budget_s)));
        s.attributes.push(("bootprint.over_s", json!(p.over_s)));
        out.push(s);
    }
    if let Some(c) = &r.cycle {
        let mut s = span("shutdown", "cycle", -(c.gap_s + c.shutdown_s), -c.gap_s);
        s.attributes
            .push(("bootprint.previous_boot", json!(c.previous_boot)));
        s.attributes.push(("bootprint.how", json!(c.shutdown_how)));
        out.push(s);
        out.push(span("gap", "cycle", -c.gap_s, 0.0));
        // Within the gap the loader runs last, just before the kernel; the firmware before it.
        let loader = c.loader_s.unwrap_or(0.0);
        if let Some(f) = c.firmware_s {
            out.push(span("firmware", "cycle", -(loader + f), -loader));
        }
        if c.loader_s.is_some() {
            out.push(span("loader", "cycle", -loader, 0.0));
        }
    }
    if let Some(v) = &r.services {
        let chain = v.critical_chain();
        for x in &v.spans {
            let Some(end) = x.end_ns else { continue };
            let mut s = span(x.script.clone(), "service", secs(x.start_ns), secs(end));
            s.attributes.push(("bootprint.action", json!(x.action)));
            s.attributes.push(("bootprint.runlevel", json!(x.runlevel)));
            s.attributes.push(("bootprint.outcome", json!(x.outcome)));
            s.attributes.push(("bootprint.late", json!(x.late)));
            let on_chain = chain.iter().any(|c| std::ptr::eq(*c, x));
            s.attributes
                .push(("bootprint.critical_chain", json!(on_chain)));
            out.push(s);
        }
        if let (Some(first), Some(last)) = (chain.first(), chain.last()) {
            let mut s = span(
                "critical chain",
                "critical_chain",
                secs(first.start_ns),
                secs(last.end_ns.unwrap_or(last.start_ns)),
            );
            let names: Vec<&str> = chain.iter().map(|c| c.script.as_str()).collect();
            s.attributes
                .push(("bootprint.chain", json!(names.join(" > "))));
            out.push(s);
        }
    }
    let mut seen = Vec::new();
    for &i in m
        .top_cpu
        .iter()
        .take(crate::json::TOP_N)
        .chain(m.top_blocked.iter().take(crate::json::TOP_N))
    {
        if seen.contains(&i) {
            continue;
        }
        seen.push(i);
        let p = &m.processes[i];
        let mut s = span(p.name.clone(), "process", p.start_s, p.end_s);
        s.attributes.push(("process.pid", json!(p.pid)));
        s.attributes
            .push(("process.command_line", json!(p.cmdline)));
        s.attributes.push(("bootprint.cpu_s", json!(p.cpu_s)));
        s.attributes
            .push(("bootprint.blocked_s", json!(p.blocked_s)));
        out.push(s);
    }
    // The root spans everything it holds (a cycle begins before the kernel).
    let start = out.iter().map(|s| s.start_s).fold(0.0, f64::min);
    let end = out.iter().map(|s| s.end_s).fold(out[0].end_s, f64::max);
    out[0].start_s = start;
    out[0].end_s = end;
    out
}

/// The trace id: the boot id's 16 bytes, else (a trace without one: a bootchart2 archive)
/// a hash of the report's origin and boot-done time.
pub fn trace_id(r: &Report) -> [u8; 16] {
    let hex: String = r
        .model
        .system
        .boot_id
        .as_deref()
        .unwrap_or("")
        .chars()
        .filter(|c| *c != '-')
        .collect();
    let mut id = [0u8; 16];
    let parsed = hex.len() == 32
        && (0..16).all(|i| match u8::from_str_radix(&hex[2 * i..2 * i + 2], 16) {
            Ok(b) => {
                id[i] = b;
                true
            }
            Err(_) => false,
        });
    if parsed && id != [0; 16] {
        return id;
    }
    let seed = format!("{}\n{}", r.origin, r.model.milestones.boot_done.t_s);
    id[..8].copy_from_slice(&fnv1a(seed.as_bytes(), 0xcbf2_9ce4_8422_2325).to_be_bytes());
    id[8..].copy_from_slice(&fnv1a(seed.as_bytes(), 0x6c62_272e_07bb_0142).to_be_bytes());
    id
}

fn fnv1a(bytes: &[u8], basis: u64) -> u64 {
    bytes.iter().fold(basis, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The span id of the span at `index`: never zero (OTLP's invalid id).
pub fn span_id(trace: &[u8; 16], index: usize) -> [u8; 8] {
    let mut seed = trace.to_vec();
    seed.extend_from_slice(&(index as u64).to_le_bytes());
    let h = fnv1a(&seed, 0xcbf2_9ce4_8422_2325);
    if h == 0 { 1u64 } else { h }.to_be_bytes()
}

/// Ids as OTLP's JSON writes them: lowercase hex (the queue names its entries by it too).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attr_value(v: &Value) -> Value {
    match v {
        Value::Bool(b) => json!({ "boolValue": b }),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({ "intValue": n.to_string() }),
        Value::Number(n) => json!({ "doubleValue": n.as_f64() }),
        Value::String(s) => json!({ "stringValue": s }),
        Value::Null => json!({ "stringValue": "" }),
        other => json!({ "stringValue": other.to_string() }),
    }
}

fn attributes(list: &[(&str, Value)]) -> Value {
    list.iter()
        .map(|(k, v)| json!({ "key": k, "value": attr_value(v) }))
        .collect()
}

/// Unix nanoseconds of `t_s` seconds after the kernel started at `boot_unix_ns`.
fn unix_ns(boot_unix_ns: u64, t_s: f64) -> String {
    let ns = boot_unix_ns as i128 + (t_s * 1e9).round() as i128;
    ns.max(0).to_string()
}

/// The boot's resource: who sent it and the machine it describes (the semantic
/// conventions' `service.*`, `os.*`, `host.*` where they have a key, `bootprint.*` else).
fn resource(r: &Report) -> Vec<(&'static str, Value)> {
    let s = &r.model.system;
    let mut out: Vec<(&'static str, Value)> = vec![
        ("service.name", json!("bootprint")),
        ("os.type", json!("linux")),
    ];
    let mut opt = |key: &'static str, v: &Option<String>| {
        if let Some(v) = v {
            out.push((key, json!(v)));
        }
    };
    opt("service.version", &s.recorder_version);
    opt("os.description", &s.release);
    opt("os.version", &s.kernel_release);
    opt("bootprint.boot_id", &s.boot_id);
    opt("bootprint.dmi_vendor", &s.dmi_vendor);
    opt("bootprint.dmi_product", &s.dmi_product);
    opt("bootprint.kernel_options", &s.kernel_options);
    out.push(("bootprint.trace", json!(r.origin)));
    out
}

/// The whole request: one resource, one scope, the spans of [`spans`] placed at
/// `boot_unix_ns` (the kernel's start, Unix nanoseconds).
pub fn request(r: &Report, boot_unix_ns: u64, scope_version: &str) -> Value {
    let trace = trace_id(r);
    let list = spans(r);
    let spans: Vec<Value> = list
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut attrs = vec![("bootprint.kind", json!(s.kind))];
            attrs.extend(s.attributes.iter().cloned());
            json!({
                "traceId": hex(&trace),
                "spanId": hex(&span_id(&trace, i)),
                "parentSpanId": s.parent.map_or(String::new(), |p| hex(&span_id(&trace, p))),
                "name": s.name,
                // SPAN_KIND_INTERNAL
                "kind": 1,
                "startTimeUnixNano": unix_ns(boot_unix_ns, s.start_s),
                "endTimeUnixNano": unix_ns(boot_unix_ns, s.end_s.max(s.start_s)),
                "attributes": attributes(&attrs),
            })
        })
        .collect();
    json!({
        "resourceSpans": [{
            "resource": { "attributes": attributes(&resource(r)) },
            "scopeSpans": [{
                "scope": { "name": "bootprint", "version": scope_version },
                "spans": spans,
            }],
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_ids_differ_and_are_never_zero() {
        let t = [7u8; 16];
        assert_ne!(span_id(&t, 0), span_id(&t, 1));
        assert!((0..1000).all(|i| span_id(&t, i) != [0; 8]));
        assert_eq!(hex(&[0, 0xab, 0x10]), "00ab10");
    }

    #[test]
    fn times_are_unix_nanoseconds_from_the_kernels_start() {
        assert_eq!(
            unix_ns(1_700_000_000_000_000_000, 1.5),
            "1700000001500000000"
        );
        assert_eq!(
            unix_ns(1_700_000_000_000_000_000, -2.0),
            "1699999998000000000"
        );
        assert_eq!(attr_value(&json!(3)), json!({"intValue": "3"}));
        assert_eq!(attr_value(&json!(0.5)), json!({"doubleValue": 0.5}));
        assert_eq!(attr_value(&json!(true)), json!({"boolValue": true}));
    }
}
