//! `bootprint diff`: two boots side by side, as text and as one SVG with both boots on one
//! time axis (CPU, disk, milestones and service bars for each).

use std::fmt::Write as _;
use std::io::{self, Write};

use analyze::diff::{Diff, Pair, ProgramDiff};
use analyze::BootModel;

use crate::svg::escape_xml;
use crate::text::secs_or_dash;

fn d(v: Option<f64>) -> String {
    v.map_or("".into(), |x| format!("{x:+.2}"))
}

fn pairs(out: &mut impl Write, title: &str, list: &[Pair]) -> io::Result<()> {
    writeln!(out, "{title}:")?;
    writeln!(out, "  {:<22}{:>9}{:>9}{:>9}", "", "A s", "B s", "B-A")?;
    for p in list {
        writeln!(
            out,
            "  {:<22}{:>9}{:>9}{:>9}",
            p.name,
            secs_or_dash(p.a_s),
            secs_or_dash(p.b_s),
            d(p.delta_s)
        )?;
    }
    Ok(())
}

fn programs(out: &mut impl Write, title: &str, list: &[ProgramDiff]) -> io::Result<()> {
    if list.is_empty() {
        return Ok(());
    }
    writeln!(out, "{title}:")?;
    writeln!(
        out,
        "  {:<18}{:>7}{:>7}{:>9}{:>9}{:>9}{:>9}",
        "program", "runs A", "runs B", "cpu A", "cpu B", "life A", "life B"
    )?;
    for p in list {
        let (a, b) = (p.a.unwrap_or_default(), p.b.unwrap_or_default());
        writeln!(
            out,
            "  {:<18}{:>7}{:>7}{:>9.2}{:>9.2}{:>9.2}{:>9.2}",
            p.name, a.count, b.count, a.cpu_s, b.cpu_s, a.life_s, b.life_s
        )?;
    }
    Ok(())
}

/// The diff as JSON: its serde form with the two traces' names as `a` and `b`.
pub fn json(diff: &Diff, a: &str, b: &str) -> serde_json::Value {
    let mut v = serde_json::to_value(diff).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("a".into(), a.into());
        o.insert("b".into(), b.into());
    }
    v
}

/// Writes the comparison for people.
pub fn write_text(out: &mut impl Write, a: &str, b: &str, diff: &Diff) -> io::Result<()> {
    writeln!(out, "bootprint diff\n  A: {a}\n  B: {b}\n")?;
    pairs(
        out,
        "Milestones (seconds since the kernel started)",
        &diff.milestones,
    )?;
    writeln!(out)?;
    pairs(out, "Phases (seconds)", &diff.phases)?;
    if !diff.cycle.is_empty() {
        writeln!(out)?;
        pairs(
            out,
            "The reboot that led to each boot (seconds; shutdown: its request to its trace's save)",
            &diff.cycle,
        )?;
    }
    let moved: Vec<_> = diff
        .services
        .iter()
        .filter(|x| x.delta_s.abs() >= 0.05)
        .take(10)
        .collect();
    if !moved.is_empty() {
        writeln!(out, "\nServices that changed most (duration, seconds):")?;
        writeln!(
            out,
            "  {:<22}{:>9}{:>9}{:>9}{:>9}{:>9}",
            "service", "start A", "took A", "start B", "took B", "B-A"
        )?;
        for x in moved {
            writeln!(
                out,
                "  {:<22}{:>9}{:>9}{:>9}{:>9}{:>9}",
                x.name,
                secs_or_dash(x.a_start_s),
                secs_or_dash(x.a_duration_s),
                secs_or_dash(x.b_start_s),
                secs_or_dash(x.b_duration_s),
                format!("{:+.2}", x.delta_s)
            )?;
        }
    }
    writeln!(out)?;
    programs(
        out,
        "Programs that changed most (summed over their runs)",
        &diff.changed,
    )?;
    writeln!(out)?;
    programs(out, "Appeared in B", &diff.appeared)?;
    if diff.appeared.is_empty() {
        writeln!(out, "Appeared in B: none")?;
    }
    writeln!(out)?;
    programs(out, "Disappeared from B", &diff.disappeared)?;
    if diff.disappeared.is_empty() {
        writeln!(out, "Disappeared from B: none")?;
    }
    Ok(())
}

const W: f64 = 1200.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 20.0;
const GRAPH_H: f64 = 60.0;
const BAR_H: f64 = 11.0;

/// The shared time axis: 0 to the later boot done plus a little, across the picture.
struct TimeAxis {
    end: f64,
    scale: f64,
}

impl TimeAxis {
    fn new(a: &BootModel, b: &BootModel) -> TimeAxis {
        let end = [a, b]
            .iter()
            .map(|m| {
                m.milestones
                    .boot_done
                    .t_s
                    .max(m.last_sample_s.min(m.milestones.boot_done.t_s + 5.0))
            })
            .fold(1.0, f64::max);
        TimeAxis {
            end,
            scale: (W - LEFT - RIGHT) / end,
        }
    }

    fn x(&self, t: f64) -> f64 {
        LEFT + t.clamp(0.0, self.end) * self.scale
    }
}

/// Writes one SVG: boot A above boot B, one shared time axis (0 to the later boot done plus a
/// little), each with its CPU (user+system, iowait), busiest-disk utilisation, milestones and
/// one bar per service.
pub fn write_svg(
    out: &mut impl Write,
    a: (&str, &BootModel),
    b: (&str, &BootModel),
) -> io::Result<()> {
    let axis = TimeAxis::new(a.1, b.1);
    let mut body = String::new();
    let mut y = 30.0;
    for (label, m) in [a, b] {
        y = boot_lanes(&mut body, label, m, &axis, y);
    }
    y = time_ticks(&mut body, &axis, y);
    writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{y:.0}" viewBox="0 0 {W} {y:.0}" font-family="sans-serif">"##
    )?;
    writeln!(out, r##"<rect width="100%" height="100%" fill="white"/>"##)?;
    out.write_all(body.as_bytes())?;
    writeln!(out, "</svg>")
}

/// One boot's lanes from `y` down: its name, CPU, disk, services and milestones. Returns
/// where the next part of the picture starts.
fn boot_lanes(body: &mut String, label: &str, m: &BootModel, axis: &TimeAxis, y: f64) -> f64 {
    let _ = writeln!(
        body,
        r##"<text x="4" y="{:.1}" font-size="13" font-weight="bold">{}</text>"##,
        y + 4.0,
        escape_xml(label)
    );
    let y = cpu_graph(body, m, axis, y + 10.0);
    let top = disk_graph(body, m, axis, y);
    let y = service_bars(body, m, axis, top);
    milestone_lines(body, &m.milestones, axis, top, y);
    y + 30.0
}

/// The CPU graph (user+system, iowait above it) from `y`; returns the y below it.
fn cpu_graph(body: &mut String, m: &BootModel, axis: &TimeAxis, y: f64) -> f64 {
    let base = y + GRAPH_H;
    let _ = writeln!(
        body,
        r##"<rect x="{LEFT}" y="{y:.1}" width="{:.1}" height="{GRAPH_H}" fill="none" stroke="#bbb"/><text x="4" y="{:.1}" font-size="10">CPU</text>"##,
        W - LEFT - RIGHT,
        y + 12.0
    );
    for c in &m.cpu {
        let (x0, x1) = (axis.x(c.t_s - c.dt_s), axis.x(c.t_s));
        if x1 <= x0 {
            continue;
        }
        let hb = (c.user + c.sys).clamp(0.0, 1.0) * GRAPH_H;
        let hi = c.iowait.clamp(0.0, 1.0 - (c.user + c.sys).min(1.0)) * GRAPH_H;
        if hb > 0.1 {
            let _ = writeln!(
                body,
                r##"<rect x="{x0:.1}" y="{:.1}" width="{:.2}" height="{hb:.1}" fill="#668cb3"/>"##,
                base - hb,
                x1 - x0
            );
        }
        if hi > 0.1 {
            let _ = writeln!(
                body,
                r##"<rect x="{x0:.1}" y="{:.1}" width="{:.2}" height="{hi:.1}" fill="#c27a7a"/>"##,
                base - hb - hi,
                x1 - x0
            );
        }
    }
    base + 6.0
}

/// The busiest disk's utilisation as a line, half the CPU graph's height, from `y`; returns
/// the y below it.
fn disk_graph(body: &mut String, m: &BootModel, axis: &TimeAxis, y: f64) -> f64 {
    let dbase = y + GRAPH_H / 2.0;
    let _ = writeln!(
        body,
        r##"<rect x="{LEFT}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#bbb"/><text x="4" y="{:.1}" font-size="10">disk util</text>"##,
        W - LEFT - RIGHT,
        GRAPH_H / 2.0,
        y + 12.0
    );
    let mut pts = String::new();
    for dk in &m.disk {
        let _ = write!(
            pts,
            "{:.1},{:.1} ",
            axis.x(dk.t_s),
            dbase - dk.util.clamp(0.0, 1.0) * GRAPH_H / 2.0
        );
    }
    let _ = writeln!(
        body,
        r##"<polyline points="{pts}" fill="none" stroke="#33b533"/>"##
    );
    dbase + 6.0
}

/// One named bar per service, each on its own line from `y`; returns the y below the last.
fn service_bars(body: &mut String, m: &BootModel, axis: &TimeAxis, mut y: f64) -> f64 {
    for s in &analyze::services::services(m) {
        let (x0, x1) = (
            axis.x(s.start_s),
            axis.x(s.end_s).max(axis.x(s.start_s) + 1.0),
        );
        let _ = writeln!(
            body,
            r##"<g><title>{} {:.2}-{:.2} s</title><rect x="{x0:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="#d9b36c"/><text x="{:.1}" y="{:.1}" font-size="9">{}</text></g>"##,
            escape_xml(&s.name),
            s.start_s,
            s.end_s,
            x1 - x0,
            BAR_H - 2.0,
            x1 + 2.0,
            y + BAR_H - 3.0,
            escape_xml(&s.name)
        );
        y += BAR_H;
    }
    y
}

/// The milestones as dashed lines across this boot's lanes, from above its CPU graph down to
/// `bottom`; `services_top` is where its service bars start.
fn milestone_lines(
    body: &mut String,
    ms: &analyze::model::Milestones,
    axis: &TimeAxis,
    services_top: f64,
    bottom: f64,
) {
    for (name, t) in [
        ("kernel", ms.kernel.as_ref().map(|v| v.t_s)),
        ("init", ms.init_exec.as_ref().map(|v| v.t_s)),
        ("text login", ms.text_login.as_ref().map(|v| v.t_s)),
        (
            "graphical login",
            ms.graphical_login.as_ref().map(|v| v.t_s),
        ),
        ("done", Some(ms.boot_done.t_s)),
        ("session", ms.session_start.as_ref().map(|v| v.t_s)),
        ("desktop", ms.desktop_ready.as_ref().map(|v| v.t_s)),
    ] {
        if let Some(t) = t {
            let _ = writeln!(
                body,
                r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#7b2fbf" stroke-dasharray="3,2"/><text x="{3:.1}" y="{4:.1}" font-size="9" fill="#7b2fbf">{5} {6:.2}</text>"##,
                axis.x(t),
                services_top - GRAPH_H * 1.5 - 12.0,
                bottom,
                axis.x(t) + 2.0,
                services_top - GRAPH_H * 1.5 - 4.0,
                name,
                t
            );
        }
    }
}

/// The shared axis's grid lines and labels, across both boots, labelled at `y`; returns the
/// picture's height.
fn time_ticks(body: &mut String, axis: &TimeAxis, y: f64) -> f64 {
    let step = [0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0]
        .into_iter()
        .find(|s| s * axis.scale >= 50.0)
        .unwrap_or(120.0);
    let mut t = 0.0;
    while t <= axis.end + 1e-9 {
        let _ = writeln!(
            body,
            r##"<line x1="{0:.1}" y1="20" x2="{0:.1}" y2="{1:.1}" stroke="#eee"/><text x="{0:.1}" y="{2:.1}" font-size="10" text-anchor="middle">{3}s</text>"##,
            axis.x(t),
            y - 10.0,
            y + 2.0,
            t
        );
        t += step;
    }
    y + 12.0
}
