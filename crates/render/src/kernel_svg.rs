//! `bootprint kernel --svg`: a standalone SVG timeline of the kernel's boot (`kernel::Report`): the phases on top, then one row per thread
//! that ran initcalls (pid 1 is `kernel_init`; module inits run in the modprobe processes),
//! so work done in parallel shows as parallel bars, as the kernel's `bootgraph.pl` draws it.
//! Output is deterministic: the same report gives the same bytes.

use std::io::{self, Write};

use kernel::boot::{KernelBoot, Landmarks};
use kernel::Report;

use crate::svg::escape_xml as escape;

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const ROW: f64 = 20.0;
const TOP: f64 = 70.0;
/// Bars at least this share of the basis, or among the slowest [`LABELLED`], get a label.
const LABEL_SHARE: f64 = 0.01;
const LABELLED: usize = 12;

/// A tick step near a tenth of the span: 1, 2 or 5 times a power of ten, in microseconds.
fn tick_step(span_us: u64) -> u64 {
    let target = (span_us / 10).max(1);
    let mut p = 1u64;
    while p * 10 <= target {
        p *= 10;
    }
    [1, 2, 5, 10]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= target)
        .unwrap_or(p * 10)
}

/// Where the timeline's microseconds go across the picture, and how tall it is.
struct Frame {
    span: u64,
    scale: f64,
    height: f64,
}

impl Frame {
    fn new(kb: &KernelBoot) -> Frame {
        let span = timeline_span(kb);
        let rows = kb.threads.len().max(2);
        Frame {
            span,
            scale: (WIDTH - LEFT - RIGHT) / span as f64,
            height: TOP + rows as f64 * ROW + 40.0,
        }
    }

    fn x(&self, us: u64) -> f64 {
        LEFT + us as f64 * self.scale
    }
}

/// The last moment the timeline shows: the latest initcall, phase end or landmark, at least 1.
fn timeline_span(kb: &KernelBoot) -> u64 {
    let ic_end = kb
        .initcalls
        .iter()
        .filter_map(|i| i.end_us.or(i.start_us))
        .max()
        .unwrap_or(0);
    let span = [
        ic_end,
        kb.phases.to_real_init_us.unwrap_or(0),
        kb.phases.kernel_us.unwrap_or(0),
        kb.landmarks.root_mounted.as_ref().map_or(0, |m| m.us),
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    // Nothing to place on the timeline: show the whole log.
    if span == 0 { kb.last_us } else { span }.max(1)
}

/// Writes the SVG.
pub fn write(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let kb = &r.boot;
    let f = Frame::new(kb);
    write_header(out, r, &f)?;
    write_phase_band(out, kb, &f)?;
    write_axis(out, &f)?;
    write_landmarks(out, &kb.landmarks, &f)?;
    write_thread_names(out, kb)?;
    write_initcall_bars(out, kb, &f)?;
    write_initcall_labels(out, r, &f)?;
    if !kb.has_initcalls() {
        write_silences(out, kb, &f)?;
    }
    writeln!(out, "</svg>")
}

/// The XML declaration, the `<svg>` element with its styles, the background and the title.
fn write_header(out: &mut dyn Write, r: &Report, f: &Frame) -> io::Result<()> {
    let kb = &r.boot;
    let height = f.height;
    writeln!(
        out,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="sans-serif" font-size="10">
<style>.b{{fill:#4a7fb5}}.m{{fill:#5a9e5a}}.e{{fill:#b0b0b0}}.b,.m,.e{{stroke:white;stroke-width:0.3}}.k{{fill:#d9e6f2}}.i{{fill:#e3f0d8}}.l{{stroke:#c0392b;stroke-dasharray:3,3}}</style>
<rect width="100%" height="100%" fill="white"/>"#
    )?;
    writeln!(
        out,
        r#"<text x="{LEFT}" y="14" font-size="12">{}</text>"#,
        escape(&format!(
            "kernel boot: {} ({} initcalls on {} threads)",
            r.source,
            kb.initcalls.len(),
            kb.threads.len()
        ))
    )
}

/// The phases band on top: the kernel's own time, then the initramfs's.
fn write_phase_band(out: &mut dyn Write, kb: &KernelBoot, f: &Frame) -> io::Result<()> {
    let band_y = 22.0;
    let Some(k) = kb.phases.kernel_us else {
        return Ok(());
    };
    writeln!(
        out,
        r#"<rect class="k" x="{:.1}" y="{band_y}" width="{:.1}" height="14"><title>{}</title></rect><text x="{:.1}" y="{:.1}">kernel {:.2} s</text>"#,
        f.x(0),
        f.x(k) - f.x(0),
        escape("kernel: start to the first program"),
        f.x(0) + 3.0,
        band_y + 11.0,
        k as f64 / 1e6
    )?;
    if let (Some(i), Some(real)) = (kb.phases.initramfs_us, kb.phases.to_real_init_us) {
        writeln!(
            out,
            r#"<rect class="i" x="{:.1}" y="{band_y}" width="{:.1}" height="14"><title>initramfs</title></rect><text x="{:.1}" y="{:.1}">initramfs {:.2} s</text>"#,
            f.x(k),
            f.x(real) - f.x(k),
            f.x(k) + 3.0,
            band_y + 11.0,
            i as f64 / 1e6
        )?;
    }
    Ok(())
}

/// The time axis: a labelled grid line at each tick.
fn write_axis(out: &mut dyn Write, f: &Frame) -> io::Result<()> {
    let axis_y = TOP - 8.0;
    let step = tick_step(f.span);
    let mut t = 0;
    while t <= f.span {
        writeln!(
            out,
            r##"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#e0e0e0"/><text x="{0:.1}" y="{3:.1}" text-anchor="middle">{4}</text>"##,
            f.x(t),
            axis_y,
            f.height - 30.0,
            axis_y - 3.0,
            fmt_tick(t, step)
        )?;
        // A span near u64::MAX (a corrupt timestamp) would overflow the next tick.
        match t.checked_add(step) {
            Some(next) => t = next,
            None => break,
        }
    }
    Ok(())
}

/// The landmarks: a dashed line each, labels on two alternating levels at the bottom.
fn write_landmarks(out: &mut dyn Write, lm: &Landmarks, f: &Frame) -> io::Result<()> {
    let axis_y = TOP - 8.0;
    let marks = [
        ("initramfs unpacked", &lm.initramfs_unpack_end),
        ("/init", &lm.run_init),
        ("root", &lm.root_mounted),
        ("real init", &lm.real_init),
    ];
    for (i, (name, m)) in marks.iter().enumerate() {
        if let Some(m) = m {
            writeln!(
                out,
                r##"<line class="l" x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}"/><text x="{3:.1}" y="{4:.1}" fill="#c0392b" text-anchor="{6}">{5}</text>"##,
                f.x(m.us),
                axis_y,
                f.height - 30.0,
                f.x(m.us) + if f.x(m.us) > WIDTH - 150.0 { -2.0 } else { 2.0 },
                f.height - 28.0 + 9.0 * (i % 2) as f64,
                escape(&format!("{name} {:.2} s", m.us as f64 / 1e6)),
                if f.x(m.us) > WIDTH - 150.0 {
                    "end"
                } else {
                    "start"
                }
            )?;
        }
    }
    Ok(())
}

/// The row of the thread an initcall ran in.
fn thread_row(kb: &KernelBoot, pid: Option<u32>) -> Option<usize> {
    kb.threads.iter().position(|t| Some(t.pid) == pid)
}

/// Each row's name: the thread's pid.
fn write_thread_names(out: &mut dyn Write, kb: &KernelBoot) -> io::Result<()> {
    for (row, th) in kb.threads.iter().enumerate() {
        let y = TOP + row as f64 * ROW;
        writeln!(
            out,
            r#"<text x="4" y="{:.1}">{}</text>"#,
            y + 13.0,
            escape(&format!("pid {}", th.pid))
        )?;
    }
    Ok(())
}

/// One bar per initcall in its thread's row, coloured by built-in, module or failed.
fn write_initcall_bars(out: &mut dyn Write, kb: &KernelBoot, f: &Frame) -> io::Result<()> {
    for ic in &kb.initcalls {
        let (Some(row), Some(s)) = (thread_row(kb, ic.pid), ic.timeline_start()) else {
            continue;
        };
        let y = TOP + row as f64 * ROW;
        let e = ic.end_us.unwrap_or(kb.last_us).max(s);
        let class = if ic.ret.is_some_and(|r| r < 0) {
            "e"
        } else if ic.module.is_some() {
            "m"
        } else {
            "b"
        };
        let w = (f.x(e) - f.x(s)).max(0.5);
        writeln!(
            out,
            r#"<rect class="{class}" x="{:.1}" y="{:.1}" width="{w:.1}" height="{:.1}"><title>{}</title></rect>"#,
            f.x(s),
            y + 2.0,
            ROW - 4.0,
            escape(&format!(
                "{} @ {}: {:.3} ms, {:.3}-{:.3} s{}",
                ic.label(),
                ic.pid.unwrap_or(0),
                ic.cost_us() as f64 / 1e3,
                s as f64 / 1e6,
                e as f64 / 1e6,
                ic.ret
                    .map(|r| format!(", returned {r}"))
                    .unwrap_or_default()
            ))
        )?;
    }
    Ok(())
}

/// Labels for the costly bars, slowest first, each only where it overlaps no label already
/// placed in its row.
fn write_initcall_labels(out: &mut dyn Write, r: &Report, f: &Frame) -> io::Result<()> {
    let kb = &r.boot;
    let labelled: Vec<usize> = kb.slowest().into_iter().take(LABELLED).collect();
    let mut placed: Vec<Vec<(f64, f64)>> = vec![Vec::new(); kb.threads.len()];
    let mut order = kb.slowest();
    order.retain(|&i| r.share(kb.initcalls[i].cost_us()) >= LABEL_SHARE || labelled.contains(&i));
    for i in order {
        let ic = &kb.initcalls[i];
        let (Some(row), Some(s)) = (thread_row(kb, ic.pid), ic.timeline_start()) else {
            continue;
        };
        let text = format!(
            "{} {}",
            ic.label(),
            if ic.cost_us() >= 1_000_000 {
                format!("{:.2} s", ic.cost_us() as f64 / 1e6)
            } else {
                format!("{:.0} ms", ic.cost_us() as f64 / 1e3)
            }
        );
        // About 5.5 px a character at font-size 10.
        let (a, b) = (
            f.x(s) + 2.0,
            f.x(s) + 2.0 + text.chars().count() as f64 * 5.5,
        );
        if placed[row].iter().any(|&(pa, pb)| a < pb && pa < b) {
            continue;
        }
        placed[row].push((a, b));
        writeln!(
            out,
            r#"<text x="{a:.1}" y="{:.1}">{}</text>"#,
            TOP + row as f64 * ROW + 13.0,
            escape(&text)
        )?;
    }
    Ok(())
}

/// Without initcalls, the silences in the log are what can be shown: one row of them, and a
/// note on how to see the initcalls.
fn write_silences(out: &mut dyn Write, kb: &KernelBoot, f: &Frame) -> io::Result<()> {
    writeln!(out, r#"<text x="4" y="{:.1}">silences</text>"#, TOP + 13.0)?;
    for g in &kb.gaps {
        writeln!(
            out,
            r#"<rect class="e" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"><title>{}</title></rect>"#,
            f.x(g.before.us),
            TOP + 2.0,
            (f.x(g.after.us) - f.x(g.before.us)).max(0.5),
            ROW - 4.0,
            escape(&format!(
                "{:.2} s without a kernel line, after line {}: {}",
                g.us as f64 / 1e6,
                g.before.lineno,
                g.before.text
            ))
        )?;
    }
    writeln!(
        out,
        r#"<text x="{LEFT}" y="{:.1}">{}</text>"#,
        TOP + ROW + 13.0,
        escape("no initcall lines in this log: boot with initcall_debug to see them")
    )
}

fn fmt_tick(us: u64, step: u64) -> String {
    if step >= 1_000_000 {
        format!("{} s", us / 1_000_000)
    } else {
        format!("{:.1} s", us as f64 / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape(r#"a<b>&"c'"#), "a&lt;b&gt;&amp;&quot;c&apos;");
        assert_eq!(escape("x\u{1}y\tz\n"), "x\u{fffd}y&#9;z&#10;");
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(7_340_000), 1_000_000);
        assert_eq!(tick_step(14_000_000), 2_000_000);
        assert_eq!(tick_step(400_000), 50_000);
    }
}
