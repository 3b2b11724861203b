//! The bootchart as a standalone SVG: header with the milestone figures, CPU chart, disk
//! chart, and the process tree as a Gantt, on one time axis, with milestones drawn as
//! labelled vertical lines across all of it.
//!
//! The picture follows bootchart's conventions (colours and the meaning of the shading are
//! bootchart's; the code is ours): CPU in blue-grey, I/O wait in dull red, disk throughput in
//! green; a process bar is light grey while it sleeps, blue as dark as its CPU share while it
//! runs, and red while it is blocked in the kernel (`D`, usually waiting for the disk).
//!
//! Output is deterministic (same data, same bytes), uses no scripts and no external
//! references, and escapes every name. Which processes get a row is decided by
//! [`crate::chart::layout_rows`]; the chart says what was folded.

use crate::chart::{
    finite_or, layout_rows, truncate_chars, ChartData, ProcState, RowLayout, RowPolicy, Secs,
};
use std::fmt::Write as _;
use std::io;

// bootchart's palette, as hex.
const CPU_COLOR: &str = "#668cb3";
const IO_COLOR: &str = "#c27a7a";
const READ_COLOR: &str = "#33b533";
const WRITE_COLOR: &str = "#d9822b";
const SLEEP_COLOR: &str = "#f0f0f0";
/// Bar fill of a row of the user's desktop session (its manager and descendants), which a
/// desktop boot's chart tells apart from the boot's own processes.
const SESSION_COLOR: &str = "#d6e6fa";
const BORDER_COLOR: &str = "#b5b5b5";
const TICK_COLOR: &str = "#ebebeb";
const TICK_BOLD_COLOR: &str = "#d0d0d0";
const DEP_COLOR: &str = "#bfbfbf";
const MILESTONE_COLOR: &str = "#7b2fbf";
const TEXT_COLOR: &str = "#303030";

const LEFT: f64 = 70.0;
const RIGHT: f64 = 30.0;
const MIN_WIDTH: f64 = 900.0;
/// Target width of the time axis; the scale stays within `MIN_PX_PER_S..MAX_PX_PER_S`.
const TARGET_CHART_W: f64 = 1400.0;
const MIN_PX_PER_S: f64 = 4.0;
const MAX_PX_PER_S: f64 = 200.0;
/// The widest time axis (about 7 hours at `MIN_PX_PER_S`): beyond it the scale shrinks, so
/// no time read from a trace sizes the chart's buckets or its grid.
const MAX_CHART_W: f64 = 100_000.0;
/// Series are averaged into buckets this wide, so a 50 Hz trace does not become one SVG
/// element per sample.
const BUCKET_PX: f64 = 2.0;
const GRAPH_H: f64 = 80.0;
const ROW_H: f64 = 13.0;
const LABEL_LEVEL_H: f64 = 14.0;

/// Writes the report's boot as a standalone SVG bootchart.
pub fn report(out: &mut impl io::Write, r: &analyze::report::Report) -> io::Result<()> {
    render_svg(&ChartData::from_model(&r.model), out)
}

/// Writes `data` as a standalone SVG bootchart.
pub fn render_svg(data: &ChartData, out: &mut impl io::Write) -> io::Result<()> {
    let layout = layout_rows(data, &RowPolicy::default());
    let svg = Chart::new(data, &layout).draw();
    out.write_all(svg.as_bytes())
}

/// Escapes text for XML content and attribute values (this chart's, the kernel chart's and
/// the HTML report's). Control characters, which XML 1.0 does not allow even escaped, become
/// U+FFFD; tab and newline become references, so attribute values keep them too.
pub fn escape_xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' => o.push_str("&#9;"),
            '\n' => o.push_str("&#10;"),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// A coordinate or size with one decimal; `+ 0.0` turns -0.0 into 0.0.
fn n(x: f64) -> String {
    format!("{:.1}", finite_or(x, 0.0) + 0.0)
}

/// Seconds for labels: two decimals under 10 s, one above.
fn secs(t: f64) -> String {
    if !t.is_finite() {
        "n/a".to_string()
    } else if t.abs() < 10.0 {
        format!("{:.2} s", t + 0.0)
    } else {
        format!("{:.1} s", t + 0.0)
    }
}

/// Bytes per second, human-readable.
fn rate(bps: f64) -> String {
    if bps >= 1e6 {
        format!("{:.1} MB/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.0} kB/s", bps / 1e3)
    } else {
        format!("{bps:.0} B/s")
    }
}

/// Rough text width at `size` px in a sans-serif font, for placing labels.
fn text_w(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.58
}

/// Adds `value * overlap` of the interval `start..end` to the buckets it covers.
fn accumulate(buf: &mut [f64], t0: Secs, bs: Secs, start: Secs, end: Secs, value: f64) {
    let (start, end, value) = (
        finite_or(start, 0.0),
        finite_or(end, 0.0),
        finite_or(value, 0.0),
    );
    if end <= start || buf.is_empty() || value == 0.0 {
        return;
    }
    let first = (((start - t0) / bs).floor().max(0.0)) as usize;
    let last = (((end - t0) / bs).ceil().max(0.0) as usize).min(buf.len());
    for (k, b) in buf.iter_mut().enumerate().take(last).skip(first) {
        let b0 = t0 + k as f64 * bs;
        let overlap = end.min(b0 + bs) - start.max(b0);
        if overlap > 0.0 {
            *b += value * overlap / bs;
        }
    }
}

/// Geometry shared by every part of the chart.
struct Chart<'a> {
    data: &'a ChartData,
    layout: &'a RowLayout,
    t0: Secs,
    t1: Secs,
    px_per_s: f64,
    chart_w: f64,
    width: f64,
    buckets: usize,
    bucket_s: Secs,
    /// Milestones by time, each with its label level (labels that would overlap stack up)
    /// and whether the label is left of the line.
    milestones: Vec<(String, Secs, usize, bool)>,
    label_levels: usize,
    out: String,
}

impl<'a> Chart<'a> {
    fn new(data: &'a ChartData, layout: &'a RowLayout) -> Self {
        let (t0, t1) = data.span();
        let px_per_s = (TARGET_CHART_W / (t1 - t0))
            .clamp(MIN_PX_PER_S, MAX_PX_PER_S)
            .min(MAX_CHART_W / (t1 - t0));
        let chart_w = (t1 - t0) * px_per_s;
        let width = (LEFT + chart_w + RIGHT).max(MIN_WIDTH);
        let buckets = (chart_w / BUCKET_PX).ceil().max(1.0) as usize;
        let bucket_s = BUCKET_PX / px_per_s;

        let mut ms: Vec<(String, Secs)> = data
            .milestones
            .iter()
            .filter(|m| m.time.is_finite() && m.time >= t0)
            .map(|m| (m.name.clone(), m.time))
            .collect();
        ms.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        // Greedy levels: a label goes on the first level whose last label ends left of it.
        let mut level_end: Vec<f64> = Vec::new();
        let mut milestones = Vec::new();
        for (name, t) in ms {
            let x = LEFT + (t - t0) * px_per_s;
            let w = text_w(&format!("{name} {}", secs(t)), 10.0) + 8.0;
            // Near the right edge the label goes to the left of its line.
            let left = x + w > width;
            let from = if left { x - w } else { x };
            let level = match level_end.iter().position(|&e| e < from) {
                Some(l) => l,
                None => {
                    level_end.push(f64::MIN);
                    level_end.len() - 1
                }
            };
            level_end[level] = from + w;
            milestones.push((name, t, level, left));
        }
        Chart {
            data,
            layout,
            t0,
            t1,
            px_per_s,
            chart_w,
            width,
            buckets,
            bucket_s,
            label_levels: level_end.len(),
            milestones,
            out: String::new(),
        }
    }

    /// The x of time `t`, clamped to the axis (an unknown time maps to its start).
    fn x(&self, t: Secs) -> f64 {
        let t = if t.is_nan() {
            self.t0
        } else {
            t.clamp(self.t0, self.t1)
        };
        LEFT + (t - self.t0) * self.px_per_s
    }

    fn draw(mut self) -> String {
        let header_lines = 2 + self.data.info.len();
        let header_h = 34.0 + header_lines as f64 * 16.0;
        let labels_top = header_h + 4.0;
        let charts_top = labels_top + self.label_levels as f64 * LABEL_LEVEL_H + 4.0;
        let cpu_top = charts_top + 16.0;
        let disk_top = cpu_top + GRAPH_H + 34.0;
        let procs_top = disk_top + GRAPH_H + 40.0;
        let rows = self.layout.rows.len().max(1);
        let procs_h = rows as f64 * ROW_H;
        let height = procs_top + procs_h + 30.0;

        let _ = write!(
            self.out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"DejaVu Sans, Verdana, sans-serif\" \
             font-size=\"11\" fill=\"{TEXT_COLOR}\">\n\
             <rect class=\"background\" x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" \
             fill=\"#ffffff\"/>\n",
            w = n(self.width),
            h = n(height),
        );
        self.header();
        self.cpu_chart(cpu_top);
        self.disk_chart(disk_top);
        self.process_chart(procs_top);
        self.milestone_lines(labels_top, procs_top + procs_h);
        self.out.push_str("</svg>\n");
        self.out
    }

    fn header(&mut self) {
        let title = if self.data.title.is_empty() {
            "bootprint boot chart".to_string()
        } else {
            escape_xml(&self.data.title)
        };
        let _ = writeln!(
            self.out,
            "<text class=\"title\" x=\"10\" y=\"26\" font-size=\"18\" font-weight=\"bold\">{title}</text>"
        );
        let mut y = 26.0;
        let info: Vec<(String, String)> = self.data.info.clone();
        for (k, v) in &info {
            y += 16.0;
            let _ = writeln!(
                self.out,
                "<text class=\"meta\" x=\"10\" y=\"{}\" font-size=\"12\"><tspan font-weight=\"bold\">{}:</tspan> {}</text>",
                n(y),
                escape_xml(k),
                escape_xml(v)
            );
        }
        y += 16.0;
        let mut figures = String::new();
        for m in &self.data.milestones {
            if !figures.is_empty() {
                figures.push_str(" \u{b7} ");
            }
            let when = if m.time.is_finite() {
                secs(m.time)
            } else {
                "n/a".to_string()
            };
            let _ = write!(figures, "{}: {}", escape_xml(&m.name), when);
        }
        if figures.is_empty() {
            figures.push_str("no milestones recorded");
        }
        let _ = writeln!(
            self.out,
            "<text class=\"figures\" x=\"10\" y=\"{}\" font-size=\"13\" font-weight=\"bold\">{figures}</text>",
            n(y)
        );
        y += 16.0;
        let note = collapse_note(&self.layout.collapsed);
        let _ = writeln!(
            self.out,
            "<text class=\"collapsed\" x=\"10\" y=\"{}\" font-size=\"11\" fill=\"#606060\">{}</text>",
            n(y),
            escape_xml(&note)
        );
    }

    /// Vertical second lines over `top..top+h`, bold every fifth, with labels if `labels_at`.
    fn grid(&mut self, top: f64, h: f64, labels_at: Option<f64>) {
        let step = tick_step(self.px_per_s);
        let first = (self.t0 / step).ceil() as i64;
        let last = (self.t1 / step).floor() as i64;
        let _ = writeln!(self.out, "<g class=\"grid\">");
        for k in first..=last {
            let t = k as f64 * step;
            let x = self.x(t);
            let color = if k % 5 == 0 {
                TICK_BOLD_COLOR
            } else {
                TICK_COLOR
            };
            let _ = writeln!(
                self.out,
                "<line x1=\"{x}\" y1=\"{y1}\" x2=\"{x}\" y2=\"{y2}\" stroke=\"{color}\"/>",
                x = n(x),
                y1 = n(top),
                y2 = n(top + h)
            );
            if let Some(ly) = labels_at {
                let label = if step < 1.0 {
                    format!("{t:.1}s")
                } else {
                    format!("{t:.0}s")
                };
                let _ = writeln!(
                    self.out,
                    "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{label}</text>",
                    n(x),
                    n(ly)
                );
            }
        }
        let _ = writeln!(self.out, "</g>");
    }

    fn frame(&mut self, top: f64, h: f64) {
        let _ = writeln!(
            self.out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{BORDER_COLOR}\"/>",
            n(LEFT),
            n(top),
            n(self.chart_w),
            n(h)
        );
    }

    fn legend(&mut self, x: f64, y: f64, items: &[(&str, &str)]) {
        let mut x = x;
        for (color, label) in items {
            let _ = writeln!(
                self.out,
                "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{color}\"/><text x=\"{}\" y=\"{}\">{}</text>",
                n(x),
                n(y - 9.0),
                n(x + 14.0),
                n(y),
                escape_xml(label)
            );
            x += 24.0 + text_w(label, 11.0);
        }
    }

    /// A step-shaped filled area of `values` (0..=1) over the chart at `top`.
    fn area(&mut self, top: f64, values: &[f64], color: &str, opacity: f64) {
        let base = top + GRAPH_H;
        let mut d = format!("M{},{}", n(LEFT), n(base));
        let mut prev: Option<String> = None;
        for (k, v) in values.iter().enumerate() {
            let y = n(base - v.clamp(0.0, 1.0) * GRAPH_H);
            if prev.as_deref() != Some(y.as_str()) {
                // A step: across at the old height, then up or down.
                let x = n(LEFT + k as f64 * BUCKET_PX);
                let _ = write!(d, "L{x},{}L{x},{y}", prev.as_deref().unwrap_or(&n(base)));
                prev = Some(y);
            }
        }
        let end_x = n(LEFT + values.len() as f64 * BUCKET_PX);
        if let Some(y) = prev {
            let _ = write!(d, "L{end_x},{y}");
        }
        let _ = write!(d, "L{end_x},{}Z", n(base));
        let _ = writeln!(
            self.out,
            "<path d=\"{d}\" fill=\"{color}\" fill-opacity=\"{opacity}\" stroke=\"none\"/>"
        );
    }

    /// A step line of `values` (0..=1) over the chart at `top`; NaN marks buckets without data.
    fn line(&mut self, top: f64, values: &[f64], color: &str) {
        let base = top + GRAPH_H;
        let mut d = String::new();
        let mut prev: Option<String> = None;
        for (k, v) in values.iter().enumerate() {
            let x = n(LEFT + k as f64 * BUCKET_PX);
            if v.is_nan() {
                // No data here: end the line, start again where data resumes.
                if let Some(p) = prev.take() {
                    let _ = write!(d, "L{x},{p}");
                }
                continue;
            }
            let y = n(base - v.clamp(0.0, 1.0) * GRAPH_H);
            match &prev {
                None => {
                    let _ = write!(d, "M{x},{y}");
                }
                Some(p) if *p != y => {
                    let _ = write!(d, "L{x},{p}L{x},{y}");
                }
                _ => continue,
            }
            prev = Some(y);
        }
        if let Some(p) = prev {
            let _ = write!(d, "L{},{p}", n(LEFT + values.len() as f64 * BUCKET_PX));
        }
        if !d.is_empty() {
            let _ = writeln!(
                self.out,
                "<path d=\"{d}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.2\"/>"
            );
        }
    }

    fn no_data(&mut self, top: f64, what: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" fill=\"#909090\">{what}</text>",
            n(LEFT + 8.0),
            n(top + GRAPH_H / 2.0)
        );
    }

    fn axis_labels(&mut self, top: f64, max_label: &str) {
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>\
             <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">0</text>",
            n(LEFT - 4.0),
            n(top + 9.0),
            escape_xml(max_label),
            n(LEFT - 4.0),
            n(top + GRAPH_H)
        );
    }

    fn cpu_chart(&mut self, top: f64) {
        let _ = writeln!(self.out, "<g class=\"cpu\">");
        self.legend(
            LEFT,
            top - 4.0,
            &[(CPU_COLOR, "CPU (user + sys)"), (IO_COLOR, "I/O wait")],
        );
        self.grid(top, GRAPH_H, None);
        let mut busy = vec![0.0; self.buckets];
        let mut total = vec![0.0; self.buckets];
        for s in &self.data.cpu {
            let b = finite_or(s.user, 0.0) + finite_or(s.sys, 0.0);
            accumulate(&mut busy, self.t0, self.bucket_s, s.start, s.end, b);
            let w = b + finite_or(s.iowait, 0.0);
            accumulate(&mut total, self.t0, self.bucket_s, s.start, s.end, w);
        }
        if self.data.cpu.is_empty() {
            self.no_data(top, "no CPU samples");
        } else {
            // I/O wait is stacked on CPU: draw the sum in red, then CPU over it.
            self.area(top, &total, IO_COLOR, 0.7);
            self.area(top, &busy, CPU_COLOR, 1.0);
        }
        self.axis_labels(top, "100%");
        self.frame(top, GRAPH_H);
        let _ = writeln!(self.out, "</g>");
    }

    fn disk_chart(&mut self, top: f64) {
        let _ = writeln!(self.out, "<g class=\"disk\">");
        let mut read = vec![0.0; self.buckets];
        let mut write = vec![0.0; self.buckets];
        let mut util = vec![0.0; self.buckets];
        for s in &self.data.disk {
            accumulate(
                &mut read,
                self.t0,
                self.bucket_s,
                s.start,
                s.end,
                s.read_bps,
            );
            accumulate(
                &mut write,
                self.t0,
                self.bucket_s,
                s.start,
                s.end,
                s.write_bps,
            );
            accumulate(&mut util, self.t0, self.bucket_s, s.start, s.end, s.util);
        }
        let max = read
            .iter()
            .chain(write.iter())
            .fold(0.0f64, |m, &v| m.max(v));
        let (max_r, max_w) = (
            self.data.disk.iter().fold(0.0f64, |m, s| m.max(s.read_bps)),
            self.data
                .disk
                .iter()
                .fold(0.0f64, |m, s| m.max(s.write_bps)),
        );
        let read_label = format!("read (peak {})", rate(max_r));
        let write_label = format!("write (peak {})", rate(max_w));
        self.legend(
            LEFT,
            top - 4.0,
            &[
                (IO_COLOR, "disk utilisation"),
                (READ_COLOR, &read_label),
                (WRITE_COLOR, &write_label),
            ],
        );
        self.grid(top, GRAPH_H, None);
        if self.data.disk.is_empty() {
            self.no_data(top, "no disk samples");
        } else {
            self.area(top, &util, IO_COLOR, 0.35);
            if max > 0.0 {
                let mut covered = vec![0.0; self.buckets];
                for s in &self.data.disk {
                    accumulate(&mut covered, self.t0, self.bucket_s, s.start, s.end, 1.0);
                }
                let scale = |v: &Vec<f64>| {
                    v.iter()
                        .zip(&covered)
                        .map(|(x, c)| if *c < 0.5 { f64::NAN } else { x / max })
                        .collect::<Vec<f64>>()
                };
                let (r, w) = (scale(&read), scale(&write));
                self.line(top, &r, READ_COLOR);
                self.line(top, &w, WRITE_COLOR);
            }
        }
        let max_label = if max > 0.0 {
            rate(max)
        } else {
            "100%".to_string()
        };
        self.axis_labels(top, &max_label);
        self.frame(top, GRAPH_H);
        let _ = writeln!(self.out, "</g>");
    }

    fn process_chart(&mut self, top: f64) {
        let rows = &self.layout.rows;
        let h = rows.len().max(1) as f64 * ROW_H;
        let _ = writeln!(self.out, "<g class=\"processes\">");
        self.legend(
            LEFT,
            top - 20.0,
            &[
                (SLEEP_COLOR, "sleeping"),
                (CPU_COLOR, "running (darker = more CPU)"),
                (IO_COLOR, "blocked on I/O (D)"),
            ],
        );
        self.grid(top, h, Some(top - 4.0));
        self.grid(top + h, 0.0, Some(top + h + 12.0));
        if rows.is_empty() {
            let _ = writeln!(
                self.out,
                "<text x=\"{}\" y=\"{}\" fill=\"#909090\">no process samples</text>",
                n(LEFT + 8.0),
                n(top + ROW_H - 3.0)
            );
        }
        // Tree connectors first, so bars are drawn over them.
        let _ = writeln!(
            self.out,
            "<g class=\"tree\" stroke=\"{DEP_COLOR}\" fill=\"none\">"
        );
        for (r, row) in rows.iter().enumerate() {
            if let Some(pr) = row.parent_row {
                let x = n(self.x(self.data.processes[row.owner].start));
                let _ = writeln!(
                    self.out,
                    "<path d=\"M{x},{}L{x},{}\"/>",
                    n(top + pr as f64 * ROW_H + ROW_H / 2.0),
                    n(top + r as f64 * ROW_H + ROW_H / 2.0)
                );
            }
        }
        let _ = writeln!(self.out, "</g>");
        for r in 0..rows.len() {
            self.process_row(top + r as f64 * ROW_H, r);
        }
        let _ = writeln!(self.out, "</g>");
    }

    fn process_row(&mut self, y: f64, r: usize) {
        let row = &self.layout.rows[r];
        let procs = &self.data.processes;
        let owner = &procs[row.owner];
        let class = if owner.session { "row session" } else { "row" };
        let _ = writeln!(self.out, "<g class=\"{class}\">");
        let bar_y = n(y + 1.0);
        let bar_h = n(ROW_H - 2.0);
        for &b in &row.bars {
            let p = &procs[b];
            let (x0, x1) = (self.x(p.start), self.x(p.end));
            let fill = if p.session {
                SESSION_COLOR
            } else {
                SLEEP_COLOR
            };
            let _ = writeln!(
                self.out,
                "<rect x=\"{}\" y=\"{bar_y}\" width=\"{}\" height=\"{bar_h}\" fill=\"{fill}\" stroke=\"{BORDER_COLOR}\" stroke-width=\"0.5\"/>",
                n(x0),
                n((x1 - x0).max(1.0))
            );
        }
        // Activity of the row and everything folded into it, per bucket.
        let mut cpu = vec![0.0; self.buckets];
        let mut blocked = vec![0.0; self.buckets];
        let mut cpu_s = 0.0;
        for &m in &row.members {
            for s in &procs[m].samples {
                let c = finite_or(s.cpu, 0.0).clamp(0.0, 1.0);
                cpu_s += c * finite_or(s.end - s.start, 0.0).max(0.0);
                accumulate(&mut cpu, self.t0, self.bucket_s, s.start, s.end, c);
                if s.state == ProcState::Blocked {
                    accumulate(&mut blocked, self.t0, self.bucket_s, s.start, s.end, 1.0);
                }
            }
        }
        // Quantise to four shades so neighbouring buckets merge into one rectangle.
        let shade = |k: usize| -> (u8, u8) {
            let (c, b) = (cpu[k].min(1.0), blocked[k].min(1.0));
            let level = |v: f64| ((v * 4.0).ceil() as u8).min(4);
            if b > c && b > 0.02 {
                (2, level(b))
            } else if c > 0.0 {
                (1, level(c))
            } else {
                (0, 0)
            }
        };
        let mut k = 0;
        while k < self.buckets {
            let s = shade(k);
            let mut e = k + 1;
            while e < self.buckets && shade(e) == s {
                e += 1;
            }
            if s.0 != 0 {
                let color = if s.0 == 1 { CPU_COLOR } else { IO_COLOR };
                let _ = writeln!(
                    self.out,
                    "<rect x=\"{}\" y=\"{bar_y}\" width=\"{}\" height=\"{bar_h}\" fill=\"{color}\" fill-opacity=\"{}\"/>",
                    n(LEFT + k as f64 * BUCKET_PX),
                    n((e - k) as f64 * BUCKET_PX),
                    f64::from(s.1) / 4.0
                );
            }
            k = e;
        }
        let mut label = truncate_chars(&owner.name, 40);
        if row.bars.len() > 1 {
            let _ = write!(label, " \u{d7}{}", row.bars.len());
        }
        if row.folded > 0 {
            let _ = write!(label, " +{}", row.folded);
        }
        if owner.session {
            label.push_str(" \u{b7} session");
        }
        // Inside the bar if it fits, else after its end, else before its start: the label
        // stays beside its bar and off other rows' time.
        let x0 = self.x(owner.start);
        let x_end = row
            .bars
            .iter()
            .map(|&b| self.x(procs[b].end))
            .fold(x0, f64::max);
        let w = text_w(&label, 10.0);
        let (lx, anchor) = if x0 + 3.0 + w <= x_end {
            (x0 + 3.0, "start")
        } else if x_end + 4.0 + w < LEFT + self.chart_w {
            (x_end + 4.0, "start")
        } else {
            (x0 - 3.0, "end")
        };
        let mut tip = format!(
            "{} (pid {}) {} to {}, CPU {:.2} s",
            owner.name,
            owner.pid,
            secs(owner.start),
            secs(owner.end),
            cpu_s
        );
        if row.bars.len() > 1 {
            let _ = write!(tip, ", {} processes of this name", row.bars.len());
        }
        if row.folded > 0 {
            let _ = write!(tip, ", with {} folded child processes", row.folded);
        }
        if owner.session {
            tip.push_str(", the user's desktop session");
        }
        if let Some(cmd) = owner.cmdline.as_deref().filter(|c| !c.is_empty()) {
            let _ = write!(tip, "\n{}", truncate_chars(cmd, 200));
        }
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"{anchor}\" \
             stroke=\"#ffffff\" stroke-width=\"2.5\" stroke-opacity=\"0.8\" paint-order=\"stroke\">{}</text><title>{}</title>",
            n(lx),
            n(y + ROW_H - 3.0),
            escape_xml(&label),
            escape_xml(&tip)
        );
        let _ = writeln!(self.out, "</g>");
    }

    fn milestone_lines(&mut self, labels_top: f64, bottom: f64) {
        let ms = std::mem::take(&mut self.milestones);
        let mut ids: Vec<String> = Vec::new();
        for (name, t, level, left) in &ms {
            // Ids must be unique; a repeated name gets a number.
            let mut id = ident(name);
            let mut k = 1;
            while ids.contains(&id) {
                k += 1;
                id = format!("{}-{k}", ident(name));
            }
            ids.push(id.clone());
            let x = n(self.x(*t));
            let ly = labels_top + (*level as f64 + 1.0) * LABEL_LEVEL_H - 3.0;
            let _ = writeln!(
                self.out,
                "<g class=\"milestone\" id=\"milestone-{id}\">\
                 <line x1=\"{x}\" y1=\"{y1}\" x2=\"{x}\" y2=\"{y2}\" stroke=\"{MILESTONE_COLOR}\" stroke-width=\"1.5\" stroke-dasharray=\"6,3\"/>\
                 <text x=\"{lx}\" y=\"{ly}\" font-size=\"10\" font-weight=\"bold\" fill=\"{MILESTONE_COLOR}\" text-anchor=\"{anchor}\">{label}</text></g>",
                id = escape_xml(&id),
                y1 = n(ly - 9.0),
                y2 = n(bottom),
                lx = n(self.x(*t) + if *left { -3.0 } else { 3.0 }),
                anchor = if *left { "end" } else { "start" },
                ly = n(ly),
                label = escape_xml(&format!("{name} {}", secs(*t))),
            );
        }
        self.milestones = ms;
    }
}

/// A grid step in seconds that puts ticks at least ~40 px apart (beyond 300 s, a multiple of
/// 300 s, for the scales of very long charts).
fn tick_step(px_per_s: f64) -> f64 {
    const STEPS: [f64; 11] = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0];
    STEPS
        .iter()
        .copied()
        .find(|s| s * px_per_s >= 40.0)
        .unwrap_or_else(|| (40.0 / px_per_s / 300.0).ceil().max(1.0) * 300.0)
}

/// The chart's sentence about what the row policy did.
fn collapse_note(c: &crate::chart::Collapsed) -> String {
    let mut parts = Vec::new();
    if c.short_lived > 0 {
        parts.push(format!("{} short-lived", c.short_lived));
    }
    if c.idle > 0 {
        parts.push(format!("{} idle", c.idle));
    }
    let mut s = format!("{} processes in {} rows", c.processes, c.rows);
    if !parts.is_empty() {
        let _ = write!(
            s,
            "; {} processes folded into their parent's row (+N)",
            parts.join(" and ")
        );
    }
    if c.same_name > 0 {
        let _ = write!(
            s,
            "; {} merged with a same-name sibling (\u{d7}N)",
            c.same_name
        );
    }
    if c.over_cap > 0 {
        let _ = write!(
            s,
            "; {} of the least active folded to keep at most {} rows",
            c.over_cap,
            RowPolicy::default().max_rows
        );
    }
    s
}

/// A name reduced to characters safe in an XML id.
fn ident(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::{ChartProcess, CpuSample, DiskSample, Milestone, ProcSample};
    use testkit::check_xml;

    /// A tiny deterministic random source, so the synthetic boot is the same every run.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    fn samples(rng: &mut Lcg, start: f64, end: f64, period: f64, busy: f64) -> Vec<ProcSample> {
        let mut v = Vec::new();
        let mut t = (start / period).floor() * period;
        while t < end {
            let r = rng.next();
            let (state, cpu) = if r < busy {
                (ProcState::Running, rng.next())
            } else if r < busy * 1.3 {
                (ProcState::Blocked, 0.0)
            } else {
                (ProcState::Sleeping, 0.0)
            };
            v.push(ProcSample {
                start: t,
                end: t + period,
                state,
                cpu,
            });
            t += period;
        }
        v
    }

    /// A boot like Debian's sysvinit one, with `n` processes: kernel threads, udev workers
    /// running modprobe, init scripts forking many short helpers, daemons, a getty.
    pub(super) fn synthetic_boot(n: usize) -> ChartData {
        let period = 0.02;
        let end = 30.0;
        let mut rng = Lcg(42);
        let mut ps: Vec<ChartProcess> = Vec::new();
        let add = |ps: &mut Vec<ChartProcess>, rng: &mut Lcg, ppid, name: &str, s, e, busy| {
            let pid = ps.len() as u32 + 1;
            let samples = samples(rng, s, e, period, busy);
            ps.push(ChartProcess {
                pid,
                ppid,
                name: name.to_string(),
                cmdline: None,
                start: s,
                end: e,
                samples,
                session: false,
            });
            pid
        };
        add(&mut ps, &mut rng, 0, "init", 1.5, end, 0.01);
        add(&mut ps, &mut rng, 0, "kthreadd", 0.0, end, 0.0);
        for k in 0..60 {
            let name = format!("kworker/{}:{}", k % 2, k);
            add(&mut ps, &mut rng, 2, &name, 0.01 * k as f64, end, 0.0);
        }
        add(&mut ps, &mut rng, 2, "jbd2/vda-8", 3.0, end, 0.05);
        let udevd = add(&mut ps, &mut rng, 1, "systemd-udevd", 3.0, end, 0.05);
        let rc = add(&mut ps, &mut rng, 1, "rc", 2.5, 24.0, 0.02);
        let mut t = 3.0;
        let scripts = [
            "mountall.sh",
            "hostname.sh",
            "networking",
            "rsyslog",
            "cron",
            "dbus",
            "ssh",
        ];
        let mut script_pids = Vec::new();
        for s in scripts {
            let pid = add(&mut ps, &mut rng, rc, s, t, t + 2.5, 0.2);
            script_pids.push((pid, t));
            t += 2.8;
        }
        add(&mut ps, &mut rng, 1, "rsyslogd", 12.0, end, 0.02);
        add(&mut ps, &mut rng, 1, "cron", 14.0, end, 0.01);
        add(&mut ps, &mut rng, 1, "dbus-daemon", 16.0, end, 0.03);
        add(&mut ps, &mut rng, 1, "sshd", 20.0, end, 0.01);
        add(&mut ps, &mut rng, 1, "getty", 24.5, end, 0.02);
        let helpers = ["sed", "grep", "cat", "mount", "readlink", "run-parts"];
        while ps.len() < n {
            let r = rng.next();
            if r < 0.3 {
                // udev worker loading a module
                let s = 3.0 + rng.next() * 8.0;
                let w = add(&mut ps, &mut rng, udevd, "systemd-udevd", s, s + 0.5, 0.3);
                if ps.len() < n {
                    add(&mut ps, &mut rng, w, "modprobe", s + 0.1, s + 0.14, 0.8);
                }
            } else {
                let (sp, st) = script_pids[(rng.next() * script_pids.len() as f64) as usize];
                let s = st + rng.next() * 2.4;
                let name = helpers[(rng.next() * helpers.len() as f64) as usize];
                let e = s + 0.02 + rng.next() * 0.03;
                add(&mut ps, &mut rng, sp, name, s, e, 0.7);
            }
        }
        let mut cpu = Vec::new();
        let mut disk = Vec::new();
        let mut t = 0.0;
        while t < end {
            let boot = if t < 25.0 { 1.0 } else { 0.05 };
            cpu.push(CpuSample {
                start: t,
                end: t + period,
                user: 0.5 * rng.next() * boot,
                sys: 0.3 * rng.next() * boot,
                iowait: 0.2 * rng.next() * boot,
            });
            disk.push(DiskSample {
                start: t,
                end: t + period,
                read_bps: 20e6 * rng.next() * boot,
                write_bps: 2e6 * rng.next() * boot,
                util: rng.next() * boot,
            });
            t += period;
        }
        ChartData {
            title: "debian (6.1.0-26-amd64) & <friends>".into(),
            info: vec![
                ("kernel".into(), "Linux 6.1.0-26-amd64".into()),
                ("cpu".into(), "QEMU Virtual CPU (2)".into()),
            ],
            start: 0.0,
            end,
            cpu,
            disk,
            processes: ps,
            milestones: vec![
                Milestone {
                    name: "kernel".into(),
                    time: 1.5,
                },
                Milestone {
                    name: "text_login".into(),
                    time: 24.5,
                },
                Milestone {
                    name: "boot_done".into(),
                    time: 25.0,
                },
            ],
        }
    }

    fn render(data: &ChartData) -> String {
        let mut v = Vec::new();
        render_svg(data, &mut v).unwrap();
        String::from_utf8(v).unwrap()
    }

    fn attr(svg: &str, name: &str) -> f64 {
        let key = format!(" {name}=\"");
        let i = svg.find(&key).unwrap() + key.len();
        svg[i..i + svg[i..].find('"').unwrap()].parse().unwrap()
    }

    #[test]
    fn two_thousand_processes_stay_readable() {
        let data = synthetic_boot(2000);
        assert_eq!(data.processes.len(), 2000);
        let svg = render(&data);
        check_xml(&svg).unwrap();
        let height = attr(&svg, "height");
        assert!(height < 2600.0, "height {height}");
        let rows = svg.matches("<g class=\"row\">").count();
        assert!(rows <= RowPolicy::default().max_rows, "{rows} rows");
        assert!(rows >= 20, "{rows} rows: the policy folded too much");
        assert!(svg.contains("2000 processes in"), "no collapse note");
        // Same-name udev workers share one row; the modprobes they ran are folded into it.
        assert!(svg.contains(">systemd-udevd \u{d7}"));
        // A 50 Hz trace does not turn into one element per sample.
        assert!(svg.len() < 2_000_000, "{} bytes", svg.len());
    }

    #[test]
    fn tooltips_carry_the_command_line() {
        let mut data = synthetic_boot(100);
        data.processes[0].cmdline = Some("/sbin/init splash <x>".into());
        let svg = render(&data);
        check_xml(&svg).unwrap();
        assert!(svg.contains("&#10;/sbin/init splash &lt;x&gt;</title>"));
    }

    #[test]
    fn worst_case_is_capped() {
        // 2,000 busy, long-lived processes with distinct names: nothing to fold but the cap.
        let mut data = synthetic_boot(0);
        data.processes.truncate(1);
        let mut rng = Lcg(7);
        for k in 0..2000u32 {
            let s = 2.0 + f64::from(k) * 0.01;
            data.processes.push(ChartProcess {
                pid: 1000 + k,
                // A third are orphans whose parent was never seen.
                ppid: if k % 3 == 0 { 99_999 } else { 1 },
                name: format!("daemon{k}"),
                cmdline: Some(format!("/usr/sbin/daemon{k} --foreground")),
                start: s,
                end: 30.0,
                samples: samples(&mut rng, s, 30.0, 0.1, 0.3),
                session: false,
            });
        }
        let svg = render(&data);
        check_xml(&svg).unwrap();
        let rows = svg.matches("<g class=\"row\">").count();
        assert_eq!(rows, RowPolicy::default().max_rows);
        assert!(attr(&svg, "height") < 2600.0);
        assert!(svg.contains("of the least active folded to keep at most 150 rows"));
    }

    #[test]
    fn milestones_are_labelled_lines() {
        let data = synthetic_boot(300);
        let svg = render(&data);
        check_xml(&svg).unwrap();
        assert_eq!(svg.matches("<g class=\"milestone\"").count(), 3);
        let mut twice = data.clone();
        twice.milestones.push(twice.milestones[1].clone());
        let svg2 = render(&twice);
        assert!(
            svg2.contains("id=\"milestone-text_login\"")
                && svg2.contains("id=\"milestone-text_login-2\"")
        );
        for label in ["kernel 1.50 s", "text_login 24.5 s", "boot_done 25.0 s"] {
            assert!(svg.contains(&format!(">{label}</text>")), "{label}");
        }
        // Each line crosses the charts: from above the CPU chart to the bottom of the rows.
        let g = &svg[svg.find("id=\"milestone-text_login\"").unwrap()..];
        let y1 = attr(g, "y1");
        let y2 = attr(g, "y2");
        let cpu_top = attr(&svg[svg.find("<g class=\"cpu\">").unwrap()..], "y");
        assert!(
            y1 < cpu_top && y2 > attr(&svg, "height") - 40.0,
            "{y1} {y2}"
        );
        // The header gives the figures.
        assert!(svg.contains("text_login: 24.5 s"));
        // A milestone before the chart's start is in the header but not drawn at the edge.
        let late = ChartData {
            start: 2.0,
            ..data.clone()
        };
        let svg = render(&late);
        assert!(svg.contains("kernel: 1.50 s"));
        assert!(!svg.contains("id=\"milestone-kernel\""));
        assert_eq!(svg.matches("<g class=\"milestone\"").count(), 2);
    }

    #[test]
    fn names_are_escaped() {
        let mut data = synthetic_boot(100);
        data.processes[3].name = "<a&b>\"'\u{1}".into();
        data.processes[3].samples[0].cpu = 1.0;
        data.milestones[0].name = "k<e>rnel&".into();
        data.info.push(("x&y".into(), "<z>".into()));
        let svg = render(&data);
        check_xml(&svg).unwrap();
        assert!(svg.contains("&lt;a&amp;b&gt;&quot;&apos;\u{fffd}"));
        assert!(!svg.contains("<a&b>"));
        assert!(svg.contains("debian (6.1.0-26-amd64) &amp; &lt;friends&gt;"));
        assert!(svg.contains("k&lt;e&gt;rnel&amp; 1.50 s"));
        assert_eq!(
            escape_xml("a<b>&\"c'\n"),
            "a&lt;b&gt;&amp;&quot;c&apos;&#10;"
        );
    }

    #[test]
    fn empty_data_is_a_valid_svg() {
        let svg = render(&ChartData::default());
        check_xml(&svg).unwrap();
        assert!(svg.contains("no process samples"));
        assert!(svg.contains("no CPU samples"));
        assert!(svg.contains("no milestones recorded"));
        assert!(attr(&svg, "height") > 100.0);
    }

    #[test]
    fn bad_numbers_do_not_leak_into_the_svg() {
        let mut data = synthetic_boot(50);
        data.cpu[0].user = f64::NAN;
        data.processes[5].end = f64::INFINITY;
        data.milestones[1].time = f64::NAN;
        let svg = render(&data);
        check_xml(&svg).unwrap();
        assert!(!svg.contains("NaN") && !svg.contains("inf s") && !svg.contains("\"inf"));
    }

    #[test]
    fn throughput_lines_only_where_there_are_samples() {
        let data = ChartData {
            start: 0.0,
            end: 20.0,
            disk: (0..10)
                .map(|k| DiskSample {
                    start: 10.0 + f64::from(k),
                    end: 11.0 + f64::from(k),
                    read_bps: 1e6,
                    write_bps: 0.0,
                    util: 0.5,
                })
                .collect(),
            ..ChartData::default()
        };
        let svg = render(&data);
        // 1400 px for 20 s: 10 s is x = 70 + 700. Both lines (read, write) start there.
        assert!(
            svg.matches("<path d=\"M770.0,").count() == 2,
            "a throughput line starts before its data"
        );
    }

    #[test]
    fn output_is_deterministic() {
        let data = synthetic_boot(500);
        assert_eq!(render(&data), render(&data));
    }

    #[test]
    fn accumulate_weights_by_overlap() {
        let mut b = vec![0.0; 4];
        // 0.5..2.0 with buckets of 1 s: half of bucket 0, all of bucket 1.
        accumulate(&mut b, 0.0, 1.0, 0.5, 2.0, 0.8);
        assert_eq!(b, vec![0.4, 0.8, 0.0, 0.0]);
        // Past the end is clipped, before the start too.
        accumulate(&mut b, 0.0, 1.0, -1.0, 9.0, 1.0);
        assert_eq!(b, vec![1.4, 1.8, 1.0, 1.0]);
    }

    /// Writes the synthetic chart for a person to look at, when asked:
    /// `BOOTPRINT_CHART_DEMO=/tmp/demo.svg cargo test -p bootprint-render demo`.
    #[test]
    fn demo() {
        if let Ok(path) = std::env::var("BOOTPRINT_CHART_DEMO") {
            std::fs::write(path, render(&synthetic_boot(2000))).unwrap();
        }
    }
}
