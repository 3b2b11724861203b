//! `fleet`: a fleet's boots in a real Prometheus (docs/testbed.md, "`fleet`"; docs/export.md,
//! "Rules"). No VM: everything runs on the host, on loopback.
//!
//! A planted fleet of `machines`, `days` days of one boot a day: half of it moves from kernel
//! [`KERNEL_A`] to [`KERNEL_B`] three boots before the end (the odd-numbered machines), and
//! of those the ones numbered 1 or 5 modulo 10 (two in five) boot 40 % slower from then on;
//! readahead switched itself off on every eighth machine; the reboot before each live
//! machine's newest boot was recorded, its shutdown slow (30 s) on every ninth. Then:
//! 1. the history: each machine's series as `bootprint export` would have served them after
//!    each boot (the baselines by `analyze::baseline`, the same code), sampled hourly up to
//!    three hours ago, written as OpenMetrics and turned into TSDB blocks by
//!    `promtool tsdb create-blocks-from openmetrics`;
//! 2. the live machines (the first `live`): a log directory of the last ten boots, each a
//!    copy of a real test-bed trace (hard links but for `header` and `events.log`, which
//!    carry the machine's kernel, model, text login and lever verdict), and the textfile the
//!    real `bootprint export --prometheus` writes from it, served by one real node_exporter
//!    each (Debian's, textfile collector only);
//! 3. a real Prometheus (Debian's) over the blocks, scraping every node_exporter, with the
//!    package's rules (packaging/prometheus-rules.yml).
//!
//! Then the questions a fleet's admin asks, in PromQL over Prometheus' HTTP API, must give
//! exactly the planted answers: which machines regressed after the kernel change (now, and
//! over the 30 days, timed), the fleet's p95 text login by model (the recording rule against
//! the quantile of the planted figures), and the alerts that fire (each for exactly the
//! planted machines, kernel release or lever).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::checks::checklist::{self, Checks};
use crate::checks::host::{
    command, free_ports, http_get, on_path, read, unpack_testbed_trace, write, Children,
};
use crate::vm::util::{io_err, Error, Paths, Result};

/// The kernel the fleet boots first.
pub const KERNEL_A: &str = "6.1.0-26-amd64";
/// The kernel half of it moves to, three boots before the end.
pub const KERNEL_B: &str = "6.12.57+deb13-amd64";
/// Boots on the new kernel (the last ones).
const BOOTS_ON_B: usize = 3;
/// How much slower a planted machine boots on the new kernel.
const REGRESSION: f64 = 1.4;
/// The machines' models, by `vendor` and `product`.
const PRODUCTS: [(&str, &str); 3] = [
    ("Dell Inc.", "PowerEdge R650"),
    ("HPE", "ProLiant DL360 Gen10"),
    ("QEMU", "Standard PC (i440FX + PIIX, 1996)"),
];
/// Boots a live machine's log directory keeps (retention's default).
const KEPT: usize = 10;
/// The history's sample step, s.
const STEP_S: u64 = 3600;
/// The history ends this long before the live scrapes begin, s (clear of Prometheus' head).
const HISTORY_GAP_S: u64 = 3 * 3600;
/// The shutdown that led to a live machine's newest boot, s; [`SLOW_SHUTDOWN_S`] on every
/// ninth machine (a service that hangs its stop).
const SHUTDOWN_S: f64 = 4.0;
/// A slow shutdown, s.
const SLOW_SHUTDOWN_S: f64 = 30.0;
/// A shutdown slower than this is a slow one for the fleet's question, s.
const SLOW_SHUTDOWN_QUERY_S: f64 = 15.0;
/// From a shutdown's trace saved to the next kernel's start (reset, firmware, loader), s.
const GAP_S: f64 = 8.0;
/// The fleet's regression query must answer within this (issue 44's goal), s.
const QUERY_GOAL_S: f64 = 1.0;

/// How big a fleet.
#[derive(Debug, Clone, Copy)]
pub struct FleetSize {
    /// Machines in the history.
    pub machines: usize,
    /// Of them, machines served live by their own node_exporter (the first ones).
    pub live: usize,
    /// Days of history, one boot a day.
    pub days: usize,
}

/// One planted machine.
#[derive(Debug, Clone)]
struct Machine {
    name: String,
    product: (&'static str, &'static str),
    /// Moves to [`KERNEL_B`] for its last [`BOOTS_ON_B`] boots.
    upgraded: bool,
    /// Boots [`REGRESSION`] times slower on [`KERNEL_B`].
    regresses: bool,
    /// Readahead switched itself off.
    readahead_off: bool,
    /// The shutdown before its newest boot took [`SLOW_SHUTDOWN_S`].
    slow_shutdown: bool,
    /// Its text login on each day's boot, s (rounded to ms, as the export writes it).
    logins: Vec<f64>,
}

impl Machine {
    fn kernel(&self, day: usize, days: usize) -> &'static str {
        if self.upgraded && day + BOOTS_ON_B >= days {
            KERNEL_B
        } else {
            KERNEL_A
        }
    }
}

/// The planted fleet: deterministic, so every run asks the same questions of the same data.
fn plant(size: FleetSize) -> Vec<Machine> {
    (0..size.machines)
        .map(|i| {
            let upgraded = i % 2 == 1;
            let regresses = upgraded && (i % 10 == 1 || i % 10 == 5);
            let base = 20.0 + (i % 7) as f64 * 0.5;
            let logins = (0..size.days)
                .map(|d| {
                    // +-2 % from boot to boot, never enough to pass for a regression.
                    let jitter = 1.0 + ((i * 31 + d * 17) % 5) as f64 * 0.01 - 0.02;
                    let slow = regresses && d + BOOTS_ON_B >= size.days;
                    let v = base * jitter * if slow { REGRESSION } else { 1.0 };
                    (v * 1000.0).round() / 1000.0
                })
                .collect();
            Machine {
                name: format!("m{i:04}"),
                product: PRODUCTS[i % PRODUCTS.len()],
                upgraded,
                regresses,
                readahead_off: i % 8 == 0,
                slow_shutdown: i % 9 == 4,
                logins,
            }
        })
        .collect()
}

/// Runs the check.
pub fn run(paths: &Paths, size: FleetSize) -> Result<()> {
    if size.days < KEPT || size.machines == 0 {
        return Err(Error::fail(format!(
            "fleet: --days {} --machines {}: expected {KEPT} days or more (a machine keeps \
             {KEPT} traces) and a machine at least",
            size.days, size.machines
        )));
    }
    checklist::run("fleet", |c| fleet(paths, size, c))
}

fn fleet(paths: &Paths, size: FleetSize, c: &mut Checks) -> Result<()> {
    for tool in ["promtool", "prometheus", "prometheus-node-exporter"] {
        if !on_path(tool) {
            return Err(Error::fail(format!(
                "{tool}: not installed (scripts/install-deps.sh installs Debian's prometheus \
                 and prometheus-node-exporter)"
            )));
        }
    }
    let work = paths.cache.join("fleet");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| io_err("cannot create", &work, e))?;
    let machines = plant(size);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // The last boot a day ago; the history's samples end HISTORY_GAP_S before now.
    let first_boot = now - size.days as u64 * 86_400;

    let started = Instant::now();
    let tsdb = work.join("tsdb");
    let boots = boot_figures(&machines, size, first_boot);
    let end = now - HISTORY_GAP_S;
    // A file a day: promtool parses its whole input once per 2 h block it writes (Debian's
    // 2.42 has no larger blocks for OpenMetrics input), so one file for 30 days would be
    // parsed 360 times.
    let (mut samples, mut failed) = (0u64, Vec::new());
    let mut day = first_boot - first_boot % 86_400;
    while day <= end {
        let om = work.join("history.om");
        let n = write_history(&om, &machines, &boots, day, (day + 86_400).min(end + 1))?;
        if n > 0 {
            let (ok, said) = command(
                Command::new("promtool")
                    .args(["tsdb", "create-blocks-from", "openmetrics", "--quiet"])
                    .arg(&om)
                    .arg(&tsdb),
            )?;
            if !ok {
                failed.push(said);
            }
        }
        samples += n;
        let _ = fs::remove_file(&om);
        day += 86_400;
    }
    c.check(
        failed.is_empty(),
        &format!(
            "the history: {} machines x {} days, {samples} samples (hourly), into TSDB blocks \
             in {:.1} s{}",
            size.machines,
            size.days,
            started.elapsed().as_secs_f64(),
            failed.first().map_or(String::new(), |f| format!(": {f}"))
        ),
    );

    let started = Instant::now();
    let textfiles = live_textfiles(paths, &work, &machines[..size.live], size.days)?;
    println!(
        "fleet: {} live textfiles by `bootprint export` in {:.1} s",
        textfiles.len(),
        started.elapsed().as_secs_f64()
    );

    let mut children = Children::default();
    let mut targets = Vec::new();
    // Every port chosen while the ones before are still held: a port let go can be handed
    // out again at once, and two exporters on one port would serve one machine's textfile
    // under two names.
    let ports = free_ports(textfiles.len() + 1)?;
    for ((m, dir), port) in machines.iter().zip(&textfiles).zip(&ports) {
        let port = *port;
        let child = Command::new("prometheus-node-exporter")
            .arg("--collector.disable-defaults")
            .arg("--collector.textfile")
            .arg(format!("--collector.textfile.directory={}", dir.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Error::fail(format!("prometheus-node-exporter: {e}")))?;
        children.0.push(child);
        targets.push((m.name.clone(), port));
    }
    let prom_port = ports[textfiles.len()];
    let config = work.join("prometheus.yml");
    let rules = paths.repo.join("packaging/prometheus-rules.yml");
    fs::write(&config, prometheus_config(&targets, &rules))
        .map_err(|e| io_err("cannot write", &config, e))?;
    let prom = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", tsdb.display()))
        .arg("--storage.tsdb.retention.time=90d")
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .stdout(Stdio::null())
        .stderr(
            fs::File::create(work.join("prometheus.log"))
                .map_err(|e| io_err("cannot create", &work, e))?,
        )
        .spawn()
        .map_err(|e| Error::fail(format!("prometheus: {e}")))?;
    children.0.push(prom);
    let api = Api { port: prom_port };
    api.wait_ready(Duration::from_secs(120))?;
    // An exporter that could not listen has exited by now.
    let exited: Vec<&str> = children
        .0
        .iter_mut()
        .zip(&targets)
        .filter_map(|(c, t)| (!matches!(c.try_wait(), Ok(None))).then_some(t.0.as_str()))
        .collect();
    if !exited.is_empty() {
        return Err(Error::fail(format!(
            "node_exporters exited: {exited:?} (their ports taken?)"
        )));
    }
    // Every target scraped, then two rounds of the rules.
    let up = api.wait_for(
        "count(up == 1)",
        |v| v.first().map(|s| s.1) == Some(size.live as f64),
        Duration::from_secs(120),
    )?;
    c.check(
        up,
        &format!("Prometheus scrapes the {} node_exporters", size.live),
    );
    std::thread::sleep(Duration::from_secs(12));

    questions(c, &api, &machines, size)?;
    dashboard(
        c,
        &api,
        &paths.repo.join("packaging/grafana-dashboard.json"),
    )?;
    drop(children);
    Ok(())
}

/// The questions and the alerts against what was planted.
fn questions(c: &mut Checks, api: &Api, machines: &[Machine], size: FleetSize) -> Result<()> {
    let live = &machines[..size.live];
    let names = |ms: &mut dyn Iterator<Item = &Machine>| -> BTreeSet<String> {
        ms.map(|m| m.name.clone()).collect()
    };
    let planted_live = names(&mut live.iter().filter(|m| m.regresses));
    let planted_all = names(&mut machines.iter().filter(|m| m.regresses));

    let q = format!(
        "bootprint_over_baseline_boots{{milestone=\"text_login\"}} >= 2 and on (instance, job) \
         bootprint_info{{kernel_release=\"{KERNEL_B}\"}}"
    );
    let got: BTreeSet<String> = api.query(&q)?.into_iter().map(|s| s.0).collect();
    c.check(
        got == planted_live,
        &format!(
            "which machines regressed after kernel {KERNEL_B} (now): {} found, {} planted{}",
            got.len(),
            planted_live.len(),
            diff_note(&got, &planted_live)
        ),
    );

    let q = format!(
        "max_over_time(bootprint_over_baseline_boots{{milestone=\"text_login\"}}[{}d]) >= 2",
        size.days
    );
    let started = Instant::now();
    let got: BTreeSet<String> = api.query(&q)?.into_iter().map(|s| s.0).collect();
    let took = started.elapsed().as_secs_f64();
    c.check(
        got == planted_all,
        &format!(
            "which machines regressed over the {} days ({} machines): {} found, {} planted{}",
            size.days,
            size.machines,
            got.len(),
            planted_all.len(),
            diff_note(&got, &planted_all)
        ),
    );
    c.check(
        took < QUERY_GOAL_S,
        &format!("that query answered in {took:.3} s (goal: under {QUERY_GOAL_S} s)"),
    );

    // The fleet's p95 text login by model: the recording rule against the planted figures.
    let rule = api.query("product:bootprint_text_login_seconds:p95")?;
    // What the rule's input holds now, by model, for a failure's message.
    let counts = api.query(
        "count by (product) (bootprint_milestone_seconds{milestone=\"text_login\"} * on \
         (instance, job) group_left (vendor, product) bootprint_info)",
    )?;
    for (vendor, product) in PRODUCTS {
        let figures: Vec<f64> = live
            .iter()
            .filter(|m| m.product == (vendor, product))
            .map(|m| *m.logins.last().unwrap_or(&0.0))
            .collect();
        let planted = figures.len();
        let want = quantile(0.95, figures);
        let got = rule
            .iter()
            .find(|s| s.2.contains(&format!("\"product\":\"{product}\"")))
            .map(|s| s.1);
        c.check(
            matches!((got, want), (Some(g), Some(w)) if (g - w).abs() < 1e-6),
            &format!(
                "p95 text login of the {product}s: {got:?} s by the rule, {want:?} s planted \
                 ({} machines; Prometheus has {:?})",
                planted,
                counts
                    .iter()
                    .find(|s| s.2.contains(&format!("\"product\":\"{product}\"")))
                    .map(|s| s.1)
            ),
        );
    }

    // Which machines' last reboot spent long in its shutdown.
    let want = names(&mut live.iter().filter(|m| m.slow_shutdown));
    let got: BTreeSet<String> = api
        .query(&format!(
            "bootprint_reboot_stage_seconds{{stage=\"shutdown\"}} > {SLOW_SHUTDOWN_QUERY_S}"
        ))?
        .into_iter()
        .map(|s| s.0)
        .collect();
    c.check(
        got == want,
        &format!(
            "which machines' last shutdown took over {SLOW_SHUTDOWN_QUERY_S} s: {} found, {} \
             planted{}",
            got.len(),
            want.len(),
            diff_note(&got, &want)
        ),
    );
    let gaps = api.query("bootprint_reboot_stage_seconds{stage=\"gap\"}")?;
    c.check(
        gaps.len() == live.len() && gaps.iter().all(|s| (s.1 - GAP_S).abs() < 1e-3),
        &format!(
            "every live machine's reboot gap is the planted {GAP_S} s ({} series, {:?})",
            gaps.len(),
            gaps.iter().map(|s| s.1).find(|v| (v - GAP_S).abs() >= 1e-3)
        ),
    );

    // The alerts that fire.
    let alerts = api.alerts()?;
    let fired = |name: &str, label: &str| -> BTreeSet<String> {
        alerts
            .iter()
            .filter(|a| a.0 == name)
            .filter_map(|a| a.1.get(label).and_then(|v| v.as_str()).map(String::from))
            .collect()
    };
    let got = fired("BootprintBootRegressed", "instance");
    c.check(
        got == planted_live,
        &format!(
            "BootprintBootRegressed fires for the planted machines and no other: {} of {}{}",
            got.len(),
            planted_live.len(),
            diff_note(&got, &planted_live)
        ),
    );
    let on_b = live.iter().filter(|m| m.upgraded).count();
    let want: BTreeSet<String> = (on_b >= 5
        && planted_live.len() as f64 / on_b.max(1) as f64 > 0.2)
        .then(|| KERNEL_B.to_string())
        .into_iter()
        .collect();
    let got = fired("BootprintFleetRegression", "kernel_release");
    c.check(
        got == want,
        &format!("BootprintFleetRegression fires for {got:?}, planted {want:?}"),
    );
    let off = live.iter().filter(|m| m.readahead_off).count();
    let want: BTreeSet<String> = (off >= 5)
        .then(|| "readahead".to_string())
        .into_iter()
        .collect();
    let got = fired("BootprintLeverSwitchedOff", "lever");
    c.check(
        got == want,
        &format!(
            "BootprintLeverSwitchedOff fires for {got:?} ({off} machines off), planted {want:?}"
        ),
    );
    Ok(())
}

/// Every query of the package's Grafana dashboard answers with data: no panel is empty.
fn dashboard(c: &mut Checks, api: &Api, path: &Path) -> Result<()> {
    let text = read(path)?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::fail(format!("{}: {e}", path.display())))?;
    let panels = v["panels"]
        .as_array()
        .map(|p| p.as_slice())
        .unwrap_or_default();
    let mut empty = Vec::new();
    let mut queries = 0;
    for p in panels {
        for t in p["targets"]
            .as_array()
            .map(|t| t.as_slice())
            .unwrap_or_default()
        {
            let Some(expr) = t["expr"].as_str() else {
                continue;
            };
            queries += 1;
            if api.query(expr)?.is_empty() {
                empty.push(format!("{}: {expr}", p["title"].as_str().unwrap_or("?")));
            }
        }
    }
    c.check(
        !panels.is_empty() && empty.is_empty(),
        &format!(
            "the dashboard's {queries} queries in {} panels all answer with data (empty: {empty:?})",
            panels.len()
        ),
    );
    Ok(())
}

/// What two sets do not share, for a message.
fn diff_note(got: &BTreeSet<String>, want: &BTreeSet<String>) -> String {
    let extra: Vec<&String> = got.difference(want).take(5).collect();
    let missing: Vec<&String> = want.difference(got).take(5).collect();
    if extra.is_empty() && missing.is_empty() {
        String::new()
    } else {
        format!(" (not planted: {extra:?}; missed: {missing:?})")
    }
}

/// Prometheus' `quantile`: linear between the closest ranks (`(n - 1) * q`).
fn quantile(q: f64, mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = q * (v.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    Some(v[lo] + (v[hi] - v[lo]) * (rank - lo as f64))
}

/// One boot's figures: its time (s since the epoch), kernel, text login and baseline.
type BootFigures = (u64, &'static str, f64, Option<analyze::baseline::Baseline>);

/// Every machine's boots, with the baselines its kept traces give each (`analyze::baseline`,
/// over the last [`KEPT`] boots, as `bootprint export` on the machine computes them).
fn boot_figures(machines: &[Machine], size: FleetSize, first_boot: u64) -> Vec<Vec<BootFigures>> {
    machines
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut history: Vec<Option<f64>> = Vec::new();
            (0..size.days)
                .map(|d| {
                    history.push(Some(m.logins[d]));
                    let from = history.len().saturating_sub(KEPT);
                    // Each machine boots at its own minute of the day.
                    let t = first_boot + d as u64 * 86_400 + (i as u64 * 37) % 3_600;
                    (
                        t,
                        m.kernel(d, size.days),
                        m.logins[d],
                        analyze::baseline::of(&history[from..]),
                    )
                })
                .collect()
        })
        .collect()
}

/// The history from `from` to `to` (s since the epoch) as OpenMetrics: for every machine and
/// every hourly step, the gauges its last boot before then exported. Returns the number of
/// samples.
fn write_history(
    path: &Path,
    machines: &[Machine],
    boots: &[Vec<BootFigures>],
    from: u64,
    to: u64,
) -> Result<u64> {
    let file = fs::File::create(path).map_err(|e| io_err("cannot create", path, e))?;
    let mut w = std::io::BufWriter::new(file);
    let mut n = 0u64;
    let err = |e| io_err("cannot write", path, e);
    type Family<'a> = (&'a str, &'a str);
    let families: [Family; 4] = [
        ("bootprint_info", ""),
        ("bootprint_milestone_seconds", "milestone=\"text_login\""),
        ("bootprint_over_baseline_boots", "milestone=\"text_login\""),
        ("bootprint_lever_self_off", "lever=\"readahead\""),
    ];
    for (family, labels) in families {
        writeln!(w, "# TYPE {family} gauge").map_err(err)?;
        for (m, boots) in machines.iter().zip(boots) {
            // The hourly steps of the window, on the hour.
            let mut t = from.div_ceil(STEP_S) * STEP_S;
            let mut line = String::new();
            while t < to {
                let Some(b) = boots.iter().rev().find(|b| b.0 <= t) else {
                    t += STEP_S;
                    continue;
                };
                let id = format!("instance=\"{}\",job=\"node\"", m.name);
                line.clear();
                let (extra, value) = match family {
                    "bootprint_info" => (
                        format!(
                            ",version=\"0.1.0\",kernel_release=\"{}\",os=\"Debian GNU/Linux 13 \
                             (trixie)\",vendor=\"{}\",product=\"{}\"",
                            b.1, m.product.0, m.product.1
                        ),
                        "1".to_string(),
                    ),
                    "bootprint_milestone_seconds" => (format!(",{labels}"), format!("{}", b.2)),
                    "bootprint_over_baseline_boots" => match &b.3 {
                        Some(bl) => (format!(",{labels}"), bl.over_boots.to_string()),
                        None => {
                            t += STEP_S;
                            continue;
                        }
                    },
                    _ => (format!(",{labels}"), u8::from(m.readahead_off).to_string()),
                };
                let _ = write!(line, "{family}{{{id}{extra}}} {value} {t}");
                writeln!(w, "{line}").map_err(err)?;
                n += 1;
                t += STEP_S;
            }
        }
    }
    writeln!(w, "# EOF").map_err(err)?;
    w.flush().map_err(err)?;
    Ok(n)
}

/// For each live machine, a log directory of its last [`KEPT`] boots, each a copy of a real
/// test-bed trace (crates/analyze/tests/data/testbed-sysvinit.tgz) with the machine's
/// kernel, model, text login and verdicts in `header` and `events.log`, and the textfile the
/// real `bootprint export --prometheus` writes from the newest. Returns each machine's
/// textfile directory.
fn live_textfiles(
    paths: &Paths,
    work: &Path,
    machines: &[Machine],
    days: usize,
) -> Result<Vec<PathBuf>> {
    let source = work.join("source-trace");
    unpack_testbed_trace(&paths.repo, &source)?;
    let header = read(&source.join("header"))?;
    let events = read(&source.join("events.log"))?;
    let login_line = events
        .lines()
        .find(|l| l.contains(" milestone name=text_login "))
        .ok_or_else(|| Error::fail("the source trace has no text_login milestone"))?
        .to_string();
    let login_rest = login_line.split_once(' ').map(|x| x.1).unwrap_or_default();
    let bootprint = paths.repo.join("target/release/bootprint");
    let mut out = Vec::new();
    for m in machines {
        let log = work.join("log").join(&m.name);
        let from = days.saturating_sub(KEPT);
        for d in from..days {
            let t = log.join(format!("boot-{d:03}"));
            fs::create_dir_all(&t).map_err(|e| io_err("cannot create", &t, e))?;
            for e in fs::read_dir(&source).map_err(|e| io_err("cannot read", &source, e))? {
                let e = e.map_err(|e| io_err("cannot read", &source, e))?;
                let name = e.file_name();
                if name == "header" || name == "events.log" {
                    continue;
                }
                fs::hard_link(e.path(), t.join(&name))
                    .map_err(|err| io_err("cannot link", &t.join(&name), err))?;
            }
            let kernel = m.kernel(d, days);
            let mut h = String::new();
            for line in header.lines() {
                let line = match line.split_once(" = ") {
                    Some(("bootprint.kernel_release", _)) => {
                        format!("bootprint.kernel_release = {kernel}")
                    }
                    _ => line.to_string(),
                };
                h.push_str(&line);
                h.push('\n');
            }
            let _ = writeln!(h, "bootprint.dmi_vendor = {}", m.product.0);
            let _ = writeln!(h, "bootprint.dmi_product = {}", m.product.1);
            write(&t.join("header"), &h)?;
            let login_ns = (m.logins[d] * 1e9).round() as u64;
            let mut ev = events.replace(&login_line, &format!("{login_ns} {login_rest}"));
            if m.readahead_off {
                ev.push_str("8000000000 readahead_off by=itself reason=planted\n");
            }
            if d == days - 1 && d > 0 {
                plant_cycle(&log, d, m, &mut ev)?;
            }
            write(&t.join("events.log"), &ev)?;
            write(&t.join("seq"), &format!("{}\n", d + 1))?;
        }
        let dir = work.join("textfiles").join(&m.name);
        fs::create_dir_all(&dir).map_err(|e| io_err("cannot create", &dir, e))?;
        let newest = log.join(format!("boot-{:03}", days - 1));
        let (ok, said) = command(
            Command::new(&bootprint)
                .args(["export", "--prometheus"])
                .arg(&dir)
                .arg(&newest),
        )?;
        if !ok {
            return Err(Error::fail(format!(
                "bootprint export --prometheus {} {}: {said}",
                dir.display(),
                newest.display()
            )));
        }
        out.push(dir);
    }
    Ok(out)
}

/// The reboot that led to boot `d` of a live machine, as the recorder leaves it: boot
/// `d - 1`'s shutdown trace (`shutdown/events.log`: the request, the save, the wall clock
/// then) and boot `d`'s `previous_boot` and wall clock, [`GAP_S`] apart on the hardware
/// clock, so `bootprint export` writes `bootprint_reboot_stage_seconds` (docs/report.md,
/// "The reboot cycle").
fn plant_cycle(log: &Path, d: usize, m: &Machine, events: &mut String) -> Result<()> {
    let previous = format!("boot-{:03}", d - 1);
    let dir = log.join(&previous).join("shutdown");
    fs::create_dir_all(&dir).map_err(|e| io_err("cannot create", &dir, e))?;
    let took = if m.slow_shutdown {
        SLOW_SHUTDOWN_S
    } else {
        SHUTDOWN_S
    };
    let (start_ns, saved_real_ns) = (100_000_000_000u64, 1_000_000_060_000_000_000u64);
    let saved_ns = start_ns + (took * 1e9) as u64;
    write(
        &dir.join("events.log"),
        &format!(
            "# bootprint events 1\n{start_ns} recorder_start pid=7 hz=50\n\
             {start_ns} shutdown_start how=systemd\n\
             {saved_ns} shutdown_end reason=saved settle_s=3\n\
             {saved_ns} clock realtime_ns={saved_real_ns} rtc_offset_ns=0\n"
        ),
    )?;
    // This boot's clock event, 20.5 s after its kernel started.
    let at_ns = 20_500_000_000u64;
    let real = saved_real_ns + (GAP_S * 1e9) as u64 + at_ns;
    let _ = writeln!(events, "{at_ns} clock realtime_ns={real} rtc_offset_ns=0");
    let _ = writeln!(events, "{at_ns} previous_boot id={previous}");
    Ok(())
}

/// Prometheus' configuration: one scrape target a machine, its `instance` the machine's
/// name, and the package's rules.
fn prometheus_config(targets: &[(String, u16)], rules: &Path) -> String {
    let mut s =
        String::from("global:\n  scrape_interval: 5s\n  evaluation_interval: 5s\nrule_files:\n");
    let _ = writeln!(s, "  - {}", rules.display());
    s.push_str("scrape_configs:\n  - job_name: node\n    static_configs:\n");
    for (name, port) in targets {
        let _ = writeln!(
            s,
            "      - targets: ['127.0.0.1:{port}']\n        labels: {{instance: '{name}'}}"
        );
    }
    s
}

/// Prometheus' HTTP API on loopback.
struct Api {
    port: u16,
}

/// One sample of a query's answer: its `instance` (or empty), value, and labels as JSON text.
type Sample = (String, f64, String);

impl Api {
    fn get(&self, path: &str) -> Result<String> {
        let (code, body) =
            http_get(self.port, path).map_err(|e| Error::fail(format!("Prometheus: {e}")))?;
        if code != 200 {
            return Err(Error::fail(format!("GET {path}: HTTP {code}: {body}")));
        }
        Ok(body)
    }

    fn wait_ready(&self, limit: Duration) -> Result<()> {
        let started = Instant::now();
        loop {
            if self.get("/-/ready").is_ok() {
                return Ok(());
            }
            if started.elapsed() > limit {
                return Err(Error::fail("Prometheus never became ready"));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Waits until `query`'s answer satisfies `done`; false when `limit` passed first.
    fn wait_for(
        &self,
        query: &str,
        done: impl Fn(&[Sample]) -> bool,
        limit: Duration,
    ) -> Result<bool> {
        let started = Instant::now();
        loop {
            if done(&self.query(query)?) {
                return Ok(true);
            }
            if started.elapsed() > limit {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// An instant query now.
    fn query(&self, q: &str) -> Result<Vec<Sample>> {
        let body = self.get(&format!("/api/v1/query?query={}", percent(q)))?;
        let v: serde_json::Value = serde_json::from_str(&body)
            .map_err(|e| Error::fail(format!("query {q}: {e}: {body}")))?;
        let result = v["data"]["result"]
            .as_array()
            .ok_or_else(|| Error::fail(format!("query {q}: no result: {body}")))?;
        Ok(result
            .iter()
            .map(|s| {
                (
                    s["metric"]["instance"].as_str().unwrap_or("").to_string(),
                    s["value"][1]
                        .as_str()
                        .and_then(|x| x.parse().ok())
                        .unwrap_or(f64::NAN),
                    s["metric"].to_string(),
                )
            })
            .collect())
    }

    /// The firing alerts: name and labels.
    fn alerts(&self) -> Result<Vec<(String, serde_json::Value)>> {
        let body = self.get("/api/v1/alerts")?;
        let v: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| Error::fail(format!("alerts: {e}")))?;
        Ok(v["data"]["alerts"]
            .as_array()
            .map(|a| a.as_slice())
            .unwrap_or_default()
            .iter()
            .filter(|a| a["state"] == "firing")
            .map(|a| {
                (
                    a["labels"]["alertname"].as_str().unwrap_or("").to_string(),
                    a["labels"].clone(),
                )
            })
            .collect())
    }
}

/// A query string's bytes percent-encoded but for the unreserved ones (RFC 3986).
fn percent(q: &str) -> String {
    let mut s = String::new();
    for b in q.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            s.push(b as char);
        } else {
            let _ = write!(s, "%{b:02X}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_planted_fleet() {
        let m = plant(FleetSize {
            machines: 200,
            live: 50,
            days: 30,
        });
        let regress = m.iter().filter(|m| m.regresses).count();
        let upgraded = m.iter().filter(|m| m.upgraded).count();
        assert_eq!((regress, upgraded), (40, 100));
        assert_eq!(m.iter().filter(|m| m.readahead_off).count(), 25);
        // A planted machine's last boots are over its baseline, two or more in a row; an
        // upgraded one that is not planted never is.
        let over = |m: &Machine| {
            let from = m.logins.len() - KEPT;
            let h: Vec<Option<f64>> = m.logins[from..].iter().map(|x| Some(*x)).collect();
            analyze::baseline::of(&h).unwrap().over_boots
        };
        assert!(m
            .iter()
            .filter(|m| m.regresses)
            .all(|m| over(m) == BOOTS_ON_B));
        assert!(m.iter().filter(|m| !m.regresses).all(|m| over(m) == 0));
        assert_eq!(
            quantile(0.95, vec![10.0, 10.0, 10.0, 12.0, 14.0, 15.0]),
            Some(14.75)
        );
        assert_eq!(
            percent("a{b=\"c\"} >= 2"),
            "a%7Bb%3D%22c%22%7D%20%3E%3D%202"
        );
    }
}
