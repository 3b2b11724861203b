//! `otlp`: boots' OpenTelemetry traces in a real Jaeger (docs/testbed.md, "`otlp`";
//! docs/export.md, "`bootprint export --otlp`"). No VM: everything runs on the host, on
//! loopback.
//!
//! Jaeger ([`JAEGER_VERSION`], built from Go's module proxy by scripts/build-jaeger.sh into
//! the test bed's cache) runs with its in-memory store, an OTLP/HTTP receiver in the clear
//! and one over TLS (a CA and a server certificate made by openssl for the check). Four
//! boots, each a copy of a real test-bed trace with its own boot id and boot time (one with
//! a real systemd units log, so units and the critical chain are spans too), go through the
//! real `bootprint export --otlp`:
//! 1. while the endpoint is down: two boots queued (and one of them exported again, which
//!    must not queue it twice);
//! 2. Jaeger started, `--flush` sends the queue; a third boot is sent at once;
//! 3. the fourth over TLS: refused without the check's CA (kept queued), sent with it and
//!    an auth header.
//!
//! Then Jaeger's query API must return each boot whole: as many spans as the report's JSON
//! gives (docs/export.md's table, computed here from `bootprint report --json`, not by the
//! exporter's code), each name at its time and length to the microsecond, no span twice.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::checks::checklist::{self, Checks};
use crate::checks::host::{
    command, free_ports, http_get, read, unpack_testbed_trace, write, Children,
};
use crate::vm::util::{io_err, Error, Paths, Result};

/// The Jaeger the check runs (issue 44: the OTLP backend of the test).
pub const JAEGER_VERSION: &str = "v1.76.0";

/// Where scripts/build-jaeger.sh puts Jaeger.
pub fn jaeger_binary(paths: &Paths) -> PathBuf {
    paths
        .cache
        .join(format!("tools/jaeger-{JAEGER_VERSION}/jaeger"))
}

/// Runs the check.
pub fn run(paths: &Paths) -> Result<()> {
    checklist::run("otlp", |c| otlp(paths, c))
}

/// One boot of the check: its trace directory, trace id and boot time.
struct Boot {
    name: &'static str,
    dir: PathBuf,
    trace_id: String,
    boot_unix_s: u64,
}

/// The loopback ports: OTLP/HTTP in the clear and over TLS, the query API (HTTP and gRPC),
/// the health check, Jaeger's own metrics.
struct Ports {
    otlp: u16,
    otlp_tls: u16,
    query: u16,
    query_grpc: u16,
    health: u16,
    metrics: u16,
}

fn otlp(paths: &Paths, c: &mut Checks) -> Result<()> {
    let jaeger = jaeger_binary(paths);
    if !jaeger.is_file() {
        return Err(Error::fail(format!(
            "{}: missing (scripts/build-jaeger.sh builds it; `make otlp-test` runs it first)",
            jaeger.display()
        )));
    }
    let work = paths.cache.join("otlp");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| io_err("cannot create", &work, e))?;
    let boots = plant_boots(paths, &work)?;
    let tls = certificates(&work)?;
    let p = free_ports(6)?;
    let ports = Ports {
        otlp: p[0],
        otlp_tls: p[1],
        query: p[2],
        query_grpc: p[3],
        health: p[4],
        metrics: p[5],
    };
    let bootprint = paths.repo.join("target/release/bootprint");
    let url = format!("http://127.0.0.1:{}", ports.otlp);
    let queue = work.join("queue");
    // The real `bootprint export` with its own queue directory.
    let export_with = |queue: &Path, args: &[&str]| -> Result<(bool, String)> {
        command(
            Command::new(&bootprint)
                .arg("export")
                .args(args)
                .arg("--otlp-queue")
                .arg(queue),
        )
    };
    let export = |args: &[&str]| export_with(&queue, args);
    let queued = |q: &Path| -> usize {
        fs::read_dir(q).map_or(0, |d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".json"))
            })
            .count()
        })
    };

    // 1. The endpoint down.
    let path = |b: &Boot| b.dir.to_string_lossy().into_owned();
    for b in [&boots[0], &boots[1], &boots[0]] {
        let (ok, said) = export(&["--otlp", &url, "--otlp-tries", "2", &path(b)])?;
        c.check(
            !ok && said.contains("0 sent") && said.contains("not sent, kept"),
            &format!("endpoint down: {} exported, kept: {}", b.name, said.trim()),
        );
    }
    c.check(
        queued(&queue) == 2,
        &format!(
            "endpoint down: the queue holds 2 boots (one exported twice is queued once): {}",
            queued(&queue)
        ),
    );

    // 2. Jaeger up.
    let config = work.join("jaeger.yaml");
    write(&config, &jaeger_config(&ports, &tls))?;
    let mut children = Children::default();
    let log = work.join("jaeger.log");
    children.0.push(
        Command::new(&jaeger)
            .arg(format!("--config={}", config.display()))
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).map_err(|e| io_err("cannot create", &log, e))?)
            .spawn()
            .map_err(|e| Error::fail(format!("{}: {e}", jaeger.display())))?,
    );
    let started = Instant::now();
    while !matches!(http_get(ports.health, "/status"), Ok((200, _))) {
        if started.elapsed() > Duration::from_secs(120)
            || !matches!(children.0[0].try_wait(), Ok(None))
        {
            return Err(Error::fail(format!(
                "Jaeger never became healthy: {}",
                crate::vm::util::tail(&log, 20)
            )));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    println!(
        "otlp: Jaeger {JAEGER_VERSION} healthy in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let (ok, said) = export(&["--flush", "--otlp", &url])?;
    c.check(
        ok && said.contains("2 sent") && queued(&queue) == 0,
        &format!("endpoint up: --flush sends the queue: {}", said.trim()),
    );
    let (ok, said) = export(&["--otlp", &url, &path(&boots[2])])?;
    c.check(
        ok && said.contains("1 sent"),
        &format!("{} sent at once: {}", boots[2].name, said.trim()),
    );

    // 3. TLS: the check's CA or nothing.
    let tls_url = format!("https://127.0.0.1:{}", ports.otlp_tls);
    let tls_queue = work.join("queue-tls");
    let tls_export = |args: &[&str]| export_with(&tls_queue, args);
    let (ok, said) = tls_export(&["--otlp", &tls_url, "--otlp-tries", "1", &path(&boots[3])])?;
    c.check(
        !ok && queued(&tls_queue) == 1,
        &format!(
            "TLS without the CA: not sent, kept: {}",
            said.trim().replace('\n', " / ")
        ),
    );
    let ca = tls.ca.to_string_lossy().into_owned();
    let (ok, said) = tls_export(&[
        "--flush",
        "--otlp",
        &tls_url,
        "--otlp-ca",
        &ca,
        "--otlp-header",
        "Authorization=Bearer check",
    ])?;
    c.check(
        ok && said.contains("1 sent") && queued(&tls_queue) == 0,
        &format!("TLS with the CA: sent: {}", said.trim()),
    );

    // Every boot whole in Jaeger: the report's spans, at their times.
    let mut total = 0;
    for b in &boots {
        let want = expected_spans(&bootprint, b)?;
        total += want.len();
        let got = jaeger_spans(ports.query, &b.trace_id)?;
        compare(c, b, &want, &got);
    }
    // And none sent twice: Jaeger's store keeps a span id once, so its query cannot tell;
    // its receivers' own count of the spans they accepted can.
    let (accepted, refused) = receiver_counts(ports.metrics)?;
    c.check(
        accepted == total as f64 && refused == 0.0,
        &format!(
            "Jaeger's receivers accepted {accepted} spans (refused {refused}): the four boots' \
             {total}, none twice"
        ),
    );
    drop(children);
    Ok(())
}

/// Copies of the real test-bed trace (crates/analyze/tests/data/testbed-sysvinit.tgz), each
/// with its own boot id and `bootprint.boot_unix_s` in `header`; the second also holds the
/// real units log of tests/fixtures/systemd-units.
fn plant_boots(paths: &Paths, work: &Path) -> Result<Vec<Boot>> {
    let source = work.join("source-trace");
    unpack_testbed_trace(&paths.repo, &source)?;
    let header = read(&source.join("header"))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut out = Vec::new();
    for (i, name) in ["boot-a", "boot-b", "boot-c", "boot-d"]
        .into_iter()
        .enumerate()
    {
        let dir = work.join(name);
        fs::create_dir_all(&dir).map_err(|e| io_err("cannot create", &dir, e))?;
        for e in fs::read_dir(&source).map_err(|e| io_err("cannot read", &source, e))? {
            let e = e.map_err(|e| io_err("cannot read", &source, e))?;
            if e.file_name() != "header" {
                fs::copy(e.path(), dir.join(e.file_name()))
                    .map_err(|err| io_err("cannot copy", &e.path(), err))?;
            }
        }
        if i == 1 {
            let units = paths
                .repo
                .join("tests/fixtures/systemd-units/systemd-units.log");
            fs::copy(&units, dir.join("systemd-units.log"))
                .map_err(|e| io_err("cannot copy", &units, e))?;
        }
        let id = format!("0e1f0000-0000-4000-8000-{:012x}", 0x44_0000 + i);
        let boot_unix_s = now - 86_400 + 3600 * i as u64;
        let mut h: String = header
            .lines()
            .filter(|l| {
                !l.starts_with("bootprint.boot_id") && !l.starts_with("bootprint.boot_unix_s")
            })
            .map(|l| format!("{l}\n"))
            .collect();
        h.push_str(&format!(
            "bootprint.boot_id = {id}\nbootprint.boot_unix_s = {boot_unix_s}\n"
        ));
        write(&dir.join("header"), &h)?;
        out.push(Boot {
            name,
            dir,
            trace_id: id.replace('-', ""),
            boot_unix_s,
        });
    }
    Ok(out)
}

/// The check's TLS files: a CA, and a server certificate for 127.0.0.1 it signed.
struct Tls {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

fn certificates(work: &Path) -> Result<Tls> {
    let d = work.join("tls");
    fs::create_dir_all(&d).map_err(|e| io_err("cannot create", &d, e))?;
    let f = |n: &str| d.join(n);
    let ext = f("server.ext");
    write(
        &ext,
        "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )?;
    let p = |n: &str| f(n).to_string_lossy().into_owned();
    let steps: [Vec<String>; 3] = [
        [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=bootprint otlp check CA",
            "-keyout",
            &p("ca.key"),
            "-out",
            &p("ca.pem"),
        ]
        .map(String::from)
        .to_vec(),
        [
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            &p("server.key"),
            "-out",
            &p("server.csr"),
        ]
        .map(String::from)
        .to_vec(),
        [
            "x509",
            "-req",
            "-in",
            &p("server.csr"),
            "-CA",
            &p("ca.pem"),
            "-CAkey",
            &p("ca.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &p("server.ext"),
            "-out",
            &p("server.pem"),
        ]
        .map(String::from)
        .to_vec(),
    ];
    for args in steps {
        let (ok, said) = command(Command::new("openssl").args(&args))?;
        if !ok {
            return Err(Error::fail(format!("openssl {}: {said}", args.join(" "))));
        }
    }
    Ok(Tls {
        ca: f("ca.pem"),
        cert: f("server.pem"),
        key: f("server.key"),
    })
}

/// Jaeger's configuration: in-memory store, the two OTLP/HTTP receivers, the query API, the
/// health check and its own metrics (the receivers' span counts), every one on its own
/// loopback port.
fn jaeger_config(p: &Ports, tls: &Tls) -> String {
    format!(
        "service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp, otlp/tls]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: {metrics}
    logs:
      level: info
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:{health}
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:{query}
    grpc:
      endpoint: 127.0.0.1:{query_grpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{otlp}
  otlp/tls:
    protocols:
      http:
        endpoint: 127.0.0.1:{otlp_tls}
        tls:
          cert_file: {cert}
          key_file: {key}
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
",
        health = p.health,
        metrics = p.metrics,
        query = p.query,
        query_grpc = p.query_grpc,
        otlp = p.otlp,
        otlp_tls = p.otlp_tls,
        cert = tls.cert.display(),
        key = tls.key.display(),
    )
}

/// A span as compared: name, start and length in microseconds.
type Want = (String, i64, i64);

/// The spans docs/export.md's table gives for the boot, from `bootprint report --json`.
fn expected_spans(bootprint: &Path, b: &Boot) -> Result<Vec<Want>> {
    let out = Command::new(bootprint)
        .arg("report")
        .arg("--json")
        .arg(&b.dir)
        .output()
        .map_err(|e| Error::fail(format!("{}: {e}", bootprint.display())))?;
    if !out.status.success() {
        return Err(Error::fail(format!(
            "bootprint report --json {}: {}",
            b.dir.display(),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let j: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| Error::fail(format!("report --json of {}: {e}", b.name)))?;
    let base_ns = b.boot_unix_s as i128 * 1_000_000_000;
    let at = |s: f64| ((base_ns + (s * 1e9).round() as i128) / 1000) as i64;
    let mut spans: Vec<(String, f64, f64)> = Vec::new();
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    for p in j["budgets"]["phases"].as_array().into_iter().flatten() {
        spans.push((
            p["phase"].as_str().unwrap_or("").into(),
            f(&p["from_s"]),
            f(&p["to_s"]),
        ));
    }
    if j["cycle"].is_object() {
        return Err(Error::fail(
            "the check's boots have no reboot cycle; the table's cycle rows are the unit test's",
        ));
    }
    let services = j["services"]["spans"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for s in &services {
        if !s["end_s"].is_null() {
            spans.push((
                s["script"].as_str().unwrap_or("").into(),
                f(&s["start_s"]),
                f(&s["end_s"]),
            ));
        }
    }
    let chain: Vec<&str> = j["services"]["critical_chain"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if let (Some(first), Some(last)) = (chain.first(), chain.last()) {
        let find = |n: &str| services.iter().find(|s| s["script"] == n);
        if let (Some(a), Some(z)) = (find(first), find(last)) {
            let end = if z["end_s"].is_null() {
                f(&z["start_s"])
            } else {
                f(&z["end_s"])
            };
            spans.push(("critical chain".into(), f(&a["start_s"]), end));
        }
    }
    let mut pids = Vec::new();
    for p in j["top_cpu"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(j["top_blocked"].as_array().into_iter().flatten())
    {
        let pid = p["pid"].as_i64().unwrap_or(-1);
        if pids.contains(&pid) {
            continue;
        }
        pids.push(pid);
        let proc = j["processes"]
            .as_array()
            .and_then(|a| a.iter().find(|q| q["pid"].as_i64() == Some(pid)))
            .ok_or_else(|| Error::fail(format!("{}: top pid {pid} not in processes", b.name)))?;
        spans.push((
            proc["name"].as_str().unwrap_or("").into(),
            f(&proc["start_s"]),
            f(&proc["end_s"]),
        ));
    }
    // The root: from 0 to the latest end, at least boot done.
    let end = spans
        .iter()
        .map(|s| s.2)
        .fold(f(&j["boot_done_s"]), f64::max);
    spans.insert(0, ("boot".into(), 0.0, end));
    Ok(spans
        .into_iter()
        .map(|(n, s, e)| (n, at(s), at(e.max(s)) - at(s)))
        .collect())
}

/// Jaeger's spans of the trace, as compared, and their span ids.
fn jaeger_spans(port: u16, trace_id: &str) -> Result<(Vec<Want>, Vec<String>)> {
    // The receiver hands spans to the store at once, but give it a few seconds.
    let started = Instant::now();
    loop {
        let (code, body) = http_get(port, &format!("/api/traces/{trace_id}"))?;
        if code == 200 {
            let v: Value = serde_json::from_str(&body)
                .map_err(|e| Error::fail(format!("/api/traces/{trace_id}: {e}")))?;
            let spans = v["data"][0]["spans"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let want = spans
                .iter()
                .map(|s| {
                    (
                        s["operationName"].as_str().unwrap_or("").to_string(),
                        s["startTime"].as_i64().unwrap_or(-1),
                        s["duration"].as_i64().unwrap_or(-1),
                    )
                })
                .collect();
            let ids = spans
                .iter()
                .map(|s| s["spanID"].as_str().unwrap_or("").to_string())
                .collect();
            return Ok((want, ids));
        }
        if started.elapsed() > Duration::from_secs(10) {
            return Err(Error::fail(format!(
                "Jaeger has no trace {trace_id}: HTTP {code}: {}",
                body.chars().take(200).collect::<String>()
            )));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The spans Jaeger's receivers accepted and refused in all, from its own metrics
/// (`otelcol_receiver_accepted_spans`, `otelcol_receiver_refused_spans`, every receiver).
fn receiver_counts(port: u16) -> Result<(f64, f64)> {
    let (code, body) = http_get(port, "/metrics")?;
    if code != 200 {
        return Err(Error::fail(format!("Jaeger's metrics: HTTP {code}")));
    }
    let sum = |name: &str| -> f64 {
        body.lines()
            .filter(|l| l.starts_with(name) && !l.starts_with('#'))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let accepted = sum("otelcol_receiver_accepted_spans");
    if !body.contains("otelcol_receiver_accepted_spans") {
        return Err(Error::fail(
            "Jaeger's metrics have no otelcol_receiver_accepted_spans",
        ));
    }
    Ok((accepted, sum("otelcol_receiver_refused_spans")))
}

fn compare(c: &mut Checks, b: &Boot, want: &[Want], got: &(Vec<Want>, Vec<String>)) {
    let (spans, ids) = got;
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    let kinds = |k: &str| want.iter().filter(|w| w.0 == k).count();
    c.check(
        spans.len() == want.len() && unique.len() == ids.len(),
        &format!(
            "{}: Jaeger holds {} spans, {} ids different; the report gives {} (a critical chain: {})",
            b.name,
            spans.len(),
            unique.len(),
            want.len(),
            kinds("critical chain")
        ),
    );
    // Each wanted span matched by one of Jaeger's: its name, start and length to 1 us
    // (Jaeger keeps microseconds; the exporter sends nanoseconds).
    let mut left: Vec<&Want> = spans.iter().collect();
    let mut missing = Vec::new();
    for w in want {
        match left
            .iter()
            .position(|g| g.0 == w.0 && (g.1 - w.1).abs() <= 1 && (g.2 - w.2).abs() <= 1)
        {
            Some(i) => {
                left.swap_remove(i);
            }
            None => missing.push(w),
        }
    }
    c.check(
        missing.is_empty(),
        &format!(
            "{}: every span at its time and length (to 1 us){}",
            b.name,
            missing.first().map_or(String::new(), |m| format!(
                ": not found {m:?} of {} missing",
                missing.len()
            ))
        ),
    );
}
