//! `bootprint report --html FILE`: one self-contained HTML file (inline CSS, JS, data and SVG;
//! nothing is fetched from the network) with the milestones, the phases against their
//! budgets, the boot-done view, the findings, the top lists, a chart that zooms and pans
//! along time (mouse wheel or the buttons; drag to pan; `#FROM-TO` in the URL opens it on that
//! span), and the static bootchart SVG.

use std::io::{self, Write};

use analyze::report::Report;
use analyze::BootModel;
use serde_json::json;

use crate::svg::escape_xml as esc;
use crate::text::secs_or_dash;

/// At most this many process rows go into the zoomable chart (the heaviest, in tree order).
pub const MAX_ROWS: usize = 400;

/// The data the chart's script draws, as JSON.
pub fn chart_data(m: &BootModel) -> serde_json::Value {
    let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
    let cpu: Vec<_> = m
        .cpu
        .iter()
        .map(|c| {
            json!([
                r3(c.t_s - c.dt_s),
                r3(c.t_s),
                r3(c.user + c.sys),
                r3(c.iowait)
            ])
        })
        .collect();
    let disk: Vec<_> = m
        .disk
        .iter()
        .map(|d| {
            json!([
                r3(d.t_s - d.dt_s),
                r3(d.t_s),
                r3(d.util),
                r3(d.read_bps / 1e6)
            ])
        })
        .collect();
    // Rows: the processes that did something, heaviest kept, shown in tree order.
    let mut weight: Vec<(usize, f64)> = m
        .processes
        .iter()
        .enumerate()
        .filter(|(_, p)| !analyze::build::RECORDER_NAMES.contains(&p.name.as_str()))
        .map(|(i, p)| {
            (
                i,
                p.cpu_s + p.blocked_s + 0.01 * (p.end_s - p.start_s).clamp(0.0, 30.0),
            )
        })
        .filter(|(_, w)| *w > 0.0)
        .collect();
    weight.sort_by(|a, b| b.1.total_cmp(&a.1));
    weight.truncate(MAX_ROWS);
    let mut keep: Vec<usize> = weight.into_iter().map(|(i, _)| i).collect();
    let quantum = (m.last_sample_s / 2000.0).max(m.system.sample_interval_s);
    keep.sort_unstable();
    let rows: Vec<_> = keep
        .iter()
        .map(|&i| {
            let p = &m.processes[i];
            // Segments [from, to, state, cpu], merged so the file stays small: samples within
            // one quantum (1/2000 of the trace, at least a sample interval) become one
            // segment (blocked if any was, mean CPU), and neighbours with the same state and
            // CPU step join. Sleeping without CPU is not listed: the row's bar shows it.
            let mut segs: Vec<(f64, f64, char, f64)> = Vec::new();
            let mut cur: Option<(f64, f64, char, f64)> = None; // from, to, state, cpu-seconds
            let flush = |c: (f64, f64, char, f64), segs: &mut Vec<(f64, f64, char, f64)>| {
                let cpu = if c.1 > c.0 { c.3 / (c.1 - c.0) } else { 0.0 };
                let cpu = (cpu * 4.0).round() / 4.0;
                if c.2 == 'S' && cpu == 0.0 {
                    return;
                }
                match segs.last_mut() {
                    Some(l) if l.2 == c.2 && l.3 == cpu && (l.1 - c.0).abs() < 1e-6 => l.1 = c.1,
                    _ => segs.push((c.0, c.1, c.2, cpu)),
                }
            };
            let rank = |st: char| match st {
                'D' => 2,
                'R' => 1,
                _ => 0,
            };
            for (a, b, cpu, st) in analyze::usage::intervals(p, m.system.sample_interval_s) {
                let st = if st == 'R' || st == 'D' { st } else { 'S' };
                cur = match cur {
                    Some(c) if b - c.0 <= quantum => Some((
                        c.0,
                        b,
                        if rank(st) > rank(c.2) { st } else { c.2 },
                        c.3 + cpu * (b - a),
                    )),
                    Some(c) => {
                        flush(c, &mut segs);
                        Some((a, b, st, cpu * (b - a)))
                    }
                    None => Some((a, b, st, cpu * (b - a))),
                };
            }
            if let Some(c) = cur {
                flush(c, &mut segs);
            }
            json!({
                "pid": p.pid,
                "name": p.name,
                "cmd": p.cmdline,
                "depth": p.depth,
                "start": r3(p.start_s),
                "end": r3(p.end_s),
                "cpu_s": r3(p.cpu_s),
                "session": p.session,
                "segs": segs.iter().map(|s| json!([r3(s.0), r3(s.1), s.2.to_string(), s.3])).collect::<Vec<_>>(),
            })
        })
        .collect();
    let ms = &m.milestones;
    let mut marks = Vec::new();
    for (name, v) in [
        ("kernel", &ms.kernel),
        ("init", &ms.init_exec),
        ("text login", &ms.text_login),
        ("graphical login", &ms.graphical_login),
    ] {
        if let Some(v) = v {
            marks.push(json!([name, r3(v.t_s)]));
        }
    }
    for p in &ms.platform {
        marks.push(json!([p.label, r3(p.t_s)]));
    }
    marks.push(json!(["boot done", r3(ms.boot_done.t_s)]));
    for (name, v) in [
        ("session start", &ms.session_start),
        ("desktop ready", &ms.desktop_ready),
    ] {
        if let Some(v) = v {
            marks.push(json!([name, r3(v.t_s)]));
        }
    }
    json!({
        "end": r3(m.last_sample_s.max(ms.boot_done.t_s)),
        "cpu": cpu,
        "disk": disk,
        "rows": rows,
        "marks": marks,
    })
}

const CSS: &str = r#"
body{font-family:sans-serif;margin:1em 2em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.4em 0}td,th{padding:2px 8px;text-align:right;font-size:.9em}
th{background:#f0f0f0}td.l,th.l{text-align:left}tr.over td{background:#fde8e8}
.finding{border-left:4px solid #7b2fbf;padding:.2em .8em;margin:.6em 0;background:#faf7fd}
.finding .ev{font-family:monospace;font-size:.85em;color:#444}
#chartbox{border:1px solid #bbb;position:relative}
#chart{display:block;width:100%;cursor:grab}
#tip{position:absolute;background:#ffe;border:1px solid #999;padding:2px 5px;font-size:12px;pointer-events:none;display:none}
button{margin-right:.4em}
"#;

const JS: &str = r#"
(function(){
var D=JSON.parse(document.getElementById('bp-data').textContent);
var cv=document.getElementById('chart'),ctx=cv.getContext('2d'),tip=document.getElementById('tip');
var LEFT=140,ROW=12,GH=70,TOP=24;
var t0=0,t1=D.end>0?D.end:1;
var H=TOP+GH+10+GH/2+10+D.rows.length*ROW+20;
function size(){var w=cv.parentNode.clientWidth||1000;cv.width=w;cv.height=H;draw();}
function X(t){return LEFT+(t-t0)*(cv.width-LEFT-10)/(t1-t0);}
function T(x){return t0+(x-LEFT)*(t1-t0)/(cv.width-LEFT-10);}
function step(){var s=[0.01,0.02,0.05,0.1,0.2,0.5,1,2,5,10,20,30,60,120,300];var px=(cv.width-LEFT-10)/(t1-t0);for(var i=0;i<s.length;i++){if(s[i]*px>=60)return s[i];}return 600;}
function draw(){
 ctx.clearRect(0,0,cv.width,cv.height);ctx.fillStyle='#fff';ctx.fillRect(0,0,cv.width,cv.height);
 ctx.font='10px sans-serif';var st=step();
 for(var t=Math.ceil(t0/st)*st;t<=t1;t+=st){var x=X(t);ctx.strokeStyle='#eee';ctx.beginPath();ctx.moveTo(x,TOP-4);ctx.lineTo(x,H);ctx.stroke();ctx.fillStyle='#444';ctx.fillText((Math.round(t*100)/100)+'s',x+2,TOP-8);}
 var y=TOP;ctx.fillStyle='#222';ctx.fillText('CPU',4,y+12);ctx.strokeStyle='#bbb';ctx.strokeRect(LEFT,y,cv.width-LEFT-10,GH);
 D.cpu.forEach(function(c){if(c[1]<t0||c[0]>t1)return;var a=X(c[0]),b=X(c[1]);var hb=Math.min(c[2],1)*GH,hi=Math.min(c[3],1-Math.min(c[2],1))*GH;ctx.fillStyle='#668cb3';ctx.fillRect(a,y+GH-hb,Math.max(b-a,0.5),hb);ctx.fillStyle='#c27a7a';ctx.fillRect(a,y+GH-hb-hi,Math.max(b-a,0.5),hi);});
 y+=GH+10;ctx.fillStyle='#222';ctx.fillText('disk',4,y+12);ctx.strokeStyle='#bbb';ctx.strokeRect(LEFT,y,cv.width-LEFT-10,GH/2);
 ctx.fillStyle='#33b533';D.disk.forEach(function(d){if(d[1]<t0||d[0]>t1)return;var a=X(d[0]),b=X(d[1]);var h=Math.min(d[2],1)*GH/2;ctx.fillRect(a,y+GH/2-h,Math.max(b-a,0.5),h);});
 y+=GH/2+10;
 D.rows.forEach(function(r,i){var ry=y+i*ROW;ctx.fillStyle='#222';ctx.fillText((' '.repeat(Math.min(r.depth,8)))+r.name,2,ry+9);
  if(r.end<t0||r.start>t1)return;var a=X(Math.max(r.start,t0)),b=X(Math.min(r.end,t1));ctx.fillStyle=r.session?'#d6e6fa':'#f0f0f0';ctx.fillRect(a,ry+1,Math.max(b-a,1),ROW-2);
  r.segs.forEach(function(s){if(s[1]<t0||s[0]>t1)return;var a=X(s[0]),b=X(s[1]);if(s[2]==='D'){ctx.fillStyle='#c27a7a';}else if(s[3]>0){ctx.fillStyle='rgba(80,120,180,'+(0.25+0.75*Math.min(s[3],1))+')';}else return;ctx.fillRect(a,ry+1,Math.max(b-a,0.5),ROW-2);});});
 D.marks.forEach(function(m){var x=X(m[1]);if(x<LEFT)return;ctx.strokeStyle='#7b2fbf';ctx.setLineDash([3,2]);ctx.beginPath();ctx.moveTo(x,TOP);ctx.lineTo(x,H);ctx.stroke();ctx.setLineDash([]);ctx.fillStyle='#7b2fbf';ctx.fillText(m[0]+' '+m[1].toFixed(2),x+2,TOP+10);});
 document.getElementById('span').textContent=t0.toFixed(2)+' s to '+t1.toFixed(2)+' s';
}
function zoom(f,at){var c=at===undefined?(t0+t1)/2:at;var n0=c-(c-t0)*f,n1=c+(t1-c)*f;if(n1-n0<0.02)return;t0=Math.max(0,n0);t1=Math.min(D.end>0?D.end:1,n1);if(t1-t0<0.02)t1=t0+0.02;draw();}
document.getElementById('zin').onclick=function(){zoom(0.5);};
document.getElementById('zout').onclick=function(){zoom(2);};
document.getElementById('zreset').onclick=function(){t0=0;t1=D.end>0?D.end:1;draw();};
cv.addEventListener('wheel',function(e){e.preventDefault();var r=cv.getBoundingClientRect();zoom(e.deltaY<0?0.8:1.25,T(e.clientX-r.left));},{passive:false});
var drag=null;cv.addEventListener('mousedown',function(e){drag={x:e.clientX,t0:t0,t1:t1};});
window.addEventListener('mouseup',function(){drag=null;});
cv.addEventListener('mousemove',function(e){var r=cv.getBoundingClientRect();
 if(drag){var dt=(drag.x-e.clientX)*(t1-t0)/(cv.width-LEFT-10);var end=D.end>0?D.end:1;var w=drag.t1-drag.t0;t0=Math.min(Math.max(0,drag.t0+dt),end-w);t1=t0+w;draw();return;}
 var y=e.clientY-r.top,i=Math.floor((y-(TOP+GH+10+GH/2+10))/ROW);
 if(i>=0&&i<D.rows.length){var row=D.rows[i];tip.style.display='block';tip.style.left=(e.clientX-r.left+12)+'px';tip.style.top=(y+12)+'px';tip.textContent=row.pid+' '+(row.cmd||row.name)+' ('+row.start.toFixed(2)+'-'+row.end.toFixed(2)+' s, '+row.cpu_s.toFixed(2)+' s CPU'+(row.session?', the desktop session':'')+')';}else{tip.style.display='none';}});
cv.addEventListener('mouseleave',function(){tip.style.display='none';});
// A link can open the chart on a span: report.html#10.5-12 (seconds).
var h=/^#([0-9.]+)-([0-9.]+)$/.exec(location.hash);if(h){var a=parseFloat(h[1]),b=parseFloat(h[2]);if(b>a){t0=Math.max(0,a);t1=Math.min(D.end>0?D.end:1,b);}}
window.addEventListener('resize',size);size();
})();
"#;

/// JSON text that is safe inside a `<script>` element whatever its strings hold (process
/// names and command lines are anyone's choice): `<`, `>` and `&` are written as `\u003c`,
/// `\u003e`, `\u0026`, so no `</script>`, `<!--` or `]]>` can appear, and U+2028/U+2029
/// (line ends to older JavaScript) as `\u2028`/`\u2029`. These characters only occur inside
/// JSON strings, where the escapes mean the same.
pub fn script_json(v: &serde_json::Value) -> String {
    let text = v.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The kernel's share: its phases and its costliest initcalls (details: `bootprint kernel`).
fn write_kernel(out: &mut impl Write, k: &kernel::Report) -> io::Result<()> {
    let secs = |v: Option<u64>| secs_or_dash(v.map(|u| u as f64 / 1e6));
    writeln!(
        out,
        "<h2>Kernel</h2><p>From the trace's kernel log: to the first program {} s, in the initramfs {} s, to the real init {} s.</p>",
        secs(k.boot.phases.kernel_us),
        secs(k.boot.phases.initramfs_us),
        secs(k.boot.phases.to_real_init_us)
    )?;
    let slowest = crate::json::slowest_initcalls(k);
    if !slowest.is_empty() {
        writeln!(
            out,
            "<table><tr><th>seconds</th><th class=l>initcall</th><th class=l>module</th></tr>"
        )?;
        for c in slowest {
            writeln!(
                out,
                "<tr><td>{:.3}</td><td class=l>{}</td><td class=l>{}</td></tr>",
                c.cost_us() as f64 / 1e6,
                esc(&c.func),
                esc(c.module.as_deref().unwrap_or("built-in"))
            )?;
        }
        writeln!(out, "</table>")?;
    }
    Ok(())
}

/// The reboot that led to this boot, stage by stage, and the shutdown's longest stops
/// (docs/report.md, "The reboot cycle"; the text report's section as a table).
fn write_cycle(out: &mut impl Write, c: &analyze::cycle::Cycle) -> io::Result<()> {
    let clock = match c.clock {
        analyze::cycle::CycleClock::Rtc => "the hardware clock",
        analyze::cycle::CycleClock::Wall => "the wall clock",
    };
    let parts = match (c.firmware_s, c.loader_s) {
        (None, None) => "the firmware and loader reported nothing".to_string(),
        (f, l) => format!(
            "firmware {} s and loader {} s of it, as reported",
            secs_or_dash(f),
            secs_or_dash(l)
        ),
    };
    writeln!(
        out,
        "<h2>Reboot cycle</h2><p>From boot {}'s shutdown ({}), joined by {clock} (details: <code>bootprint services TRACE --shutdown</code> on that boot's trace).</p>",
        esc(&c.previous_boot),
        esc(&c.shutdown_how)
    )?;
    writeln!(
        out,
        "<table><tr><th class=l>stage</th><th>seconds</th><th class=l>what</th></tr>"
    )?;
    for (stage, s, what) in [
        (
            "shutdown",
            Some(c.shutdown_s),
            "the request to its trace's save".to_string(),
        ),
        (
            "to this kernel",
            Some(c.gap_s),
            format!("the end of the shutdown, the reset, firmware and loader ({parts})"),
        ),
        (
            "to the login",
            c.login_s,
            "this kernel's start to the login".to_string(),
        ),
        (
            "whole, to the login",
            c.to_login_s,
            "the request to the login".to_string(),
        ),
        (
            "whole, to boot done",
            Some(c.to_boot_done_s),
            "the request to boot done".to_string(),
        ),
    ] {
        writeln!(
            out,
            "<tr><td class=l>{stage}</td><td>{}</td><td class=l>{}</td></tr>",
            secs_or_dash(s),
            esc(&what)
        )?;
    }
    writeln!(out, "</table>")?;
    if let Some(st) = crate::shutdown::storage_summary(&c.shutdown.storage) {
        writeln!(out, "<p>The shutdown's storage: {}.</p>", esc(&st))?;
    }
    if !c.notes.is_empty() {
        writeln!(out, "<ul>")?;
        for n in &c.notes {
            writeln!(out, "<li>{}</li>", esc(n))?;
        }
        writeln!(out, "</ul>")?;
    }
    let blame = c.shutdown.blame();
    if !blame.is_empty() {
        writeln!(
            out,
            "<table><tr><th>seconds</th><th>start s</th><th class=l>the shutdown's longest stops</th><th class=l>outcome</th></tr>"
        )?;
        for s in blame.into_iter().take(10) {
            writeln!(
                out,
                "<tr><td>{:.2}</td><td>{:.2}</td><td class=l>{}</td><td class=l>{}</td></tr>",
                s.duration_s(c.shutdown.saved_s),
                s.start_s,
                esc(&s.name),
                esc(&s.outcome)
            )?;
        }
        writeln!(out, "</table>")?;
    }
    Ok(())
}

/// Writes the HTML report, the static bootchart SVG inlined.
pub fn report(out: &mut impl Write, inp: &Report) -> io::Result<()> {
    let mut svg = Vec::new();
    crate::svg::report(&mut svg, inp)?;
    let svg = String::from_utf8_lossy(&svg);
    let m = &inp.model;
    write_head(out, inp)?;
    write_system(out, m)?;
    write_milestones(out, &m.milestones)?;
    write_phases(out, &inp.phases, &inp.budget_source)?;
    write_settle(out, &inp.settle)?;
    write_chart_box(out)?;
    write_findings(out, &inp.findings)?;
    if let Some(k) = &inp.kernel {
        write_kernel(out, k)?;
    }
    if let Some(c) = &inp.cycle {
        write_cycle(out, c)?;
    }
    if let Some(v) = &inp.services {
        crate::services::write_html(out, v)?;
    }
    write_top_lists(out, m)?;
    write_bootchart(out, &svg)?;
    write_chart_script(out, m)
}

/// The document's head (title, inline CSS) and the page's heading.
fn write_head(out: &mut impl Write, inp: &Report) -> io::Result<()> {
    let title = format!("bootprint report: {}", inp.origin);
    writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head><body>",
        esc(&title)
    )?;
    writeln!(out, "<h1>{}</h1>", esc(&title))
}

/// The machine and the sampling, the recorder's cost, the CPU totals and the model's notes.
fn write_system(out: &mut impl Write, m: &BootModel) -> io::Result<()> {
    let s = &m.system;
    writeln!(
        out,
        "<p>{} &middot; {} &middot; {} CPUs &middot; samples {:.2} s to {:.2} s every {:.3} s</p>",
        esc(s.release.as_deref().unwrap_or("")),
        esc(s.uname.as_deref().unwrap_or("")),
        s.ncpus,
        m.first_sample_s,
        m.last_sample_s,
        s.sample_interval_s
    )?;

    if let Some(r) = &m.recorder {
        writeln!(out, "<p>Recorder: {}</p>", crate::text::recorder_cost(r))?;
    }
    let c = &m.cpu_totals;
    writeln!(
        out,
        "<p>CPU from {:.2} s to {:.2} s (all {} CPUs): idle {:.1}%, iowait {:.1}%, user {:.1}%, system {:.1}%</p>",
        c.from_s,
        c.to_s,
        s.ncpus,
        c.idle_fraction * 100.0,
        c.iowait_fraction * 100.0,
        c.user_fraction * 100.0,
        c.sys_fraction * 100.0
    )?;
    if !m.notes.is_empty() {
        writeln!(out, "<h2>Notes</h2><ul>")?;
        for n in &m.notes {
            writeln!(out, "<li>{}</li>", esc(n))?;
        }
        writeln!(out, "</ul>")?;
    }
    Ok(())
}

/// The milestones table: the boot's, the platform's, and the session's where one was recorded.
fn write_milestones(out: &mut impl Write, ms: &analyze::model::Milestones) -> io::Result<()> {
    writeln!(out, "<h2>Milestones</h2><table><tr><th class=l>milestone</th><th>seconds</th><th class=l>how</th></tr>")?;
    let row = |name: &str, v: Option<&analyze::model::Milestone>| {
        format!(
            "<tr><td class=l>{name}</td><td>{}</td><td class=l>{}</td></tr>",
            secs_or_dash(v.map(|x| x.t_s)),
            esc(v.map_or("", |x| x.source.as_str()))
        )
    };
    for (name, v) in [
        ("kernel (init starts)", ms.kernel.as_ref()),
        ("real init exec'd", ms.init_exec.as_ref()),
        ("text login", ms.text_login.as_ref()),
        ("graphical login", ms.graphical_login.as_ref()),
        ("boot done", Some(&ms.boot_done)),
    ] {
        writeln!(out, "{}", row(name, v))?;
    }
    for p in &ms.platform {
        writeln!(
            out,
            "<tr><td class=l>{}</td><td>{}</td><td class=l>{}</td></tr>",
            esc(&p.label),
            secs_or_dash(Some(p.t_s)),
            esc(&p.source)
        )?;
    }
    // The third boot time, only where a session was recorded.
    if ms.session_start.is_some() || ms.desktop_ready.is_some() {
        writeln!(out, "{}", row("session start", ms.session_start.as_ref()))?;
        writeln!(out, "{}", row("desktop ready", ms.desktop_ready.as_ref()))?;
        writeln!(
            out,
            "<tr><td class=l>desktop start</td><td>{}</td><td class=l>desktop ready - session start</td></tr>",
            secs_or_dash(ms.desktop_start_s())
        )?;
    }
    writeln!(out, "</table>")
}

/// The phases against their budgets, each with the heaviest processes inside it.
fn write_phases(
    out: &mut impl Write,
    phases: &[analyze::budget::Phase],
    budget_source: &str,
) -> io::Result<()> {
    writeln!(
        out,
        "<h2>Phases against their budgets</h2><p>Budgets: {}</p><table><tr><th class=l>phase</th><th>from s</th><th>to s</th><th>took s</th><th>budget s</th><th>over s</th><th class=l>heaviest inside (CPU s / blocked s)</th></tr>",
        esc(budget_source)
    )?;
    for p in phases {
        let blame: Vec<String> = p
            .blame
            .iter()
            .take(3)
            .map(|u| {
                format!(
                    "{} ({}) {:.2}/{:.2}",
                    esc(&u.name),
                    u.pid,
                    u.cpu_s,
                    u.blocked_s
                )
            })
            .collect();
        writeln!(
            out,
            "<tr{}><td class=l>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td class=l>{}</td></tr>",
            if p.over_s > 0.0 { " class=over" } else { "" },
            p.id.label(),
            p.from_s,
            p.to_s,
            p.duration_s,
            p.budget_s,
            if p.over_s > 0.0 { format!("+{:.2}", p.over_s) } else { "ok".into() },
            blame.join(", ")
        )?;
    }
    writeln!(out, "</table>")
}

/// The boot-done view: when CPU and disk went idle, and what kept them busy after the login.
fn write_settle(out: &mut impl Write, st: &analyze::settle::Settle) -> io::Result<()> {
    if !st.idle_found {
        writeln!(
            out,
            "<h2>Boot done: CPU and disk idle</h2><p>CPU and disk never stayed idle (CPU busy &lt; {:.0}%, busiest disk &lt; {:.0}%, for the settle time) after the login; boot done is {:.2} s ({}).</p>",
            st.idle_cpu * 100.0,
            st.idle_disk * 100.0,
            st.idle_from_s,
            esc(&st.idle_source)
        )?;
    } else {
        writeln!(
        out,
        "<h2>Boot done: CPU and disk idle</h2><p>Idle (CPU busy &lt; {:.0}%, busiest disk &lt; {:.0}%) from {:.2} s ({}), {} {:.2} s.{}</p>",
        st.idle_cpu * 100.0,
        st.idle_disk * 100.0,
        st.idle_from_s,
        esc(&st.idle_source),
        if st.idle_to_end { "held to the end of the trace at" } else { "held until" },
        st.idle_until_s,
        match (st.login_s, st.tail_s) {
            (Some(l), Some(t)) => format!(" The boot kept working {t:.2} s after the login at {l:.2} s."),
            _ => " No login milestone.".into(),
        }
    )?;
    }
    if !st.busy.is_empty() {
        writeln!(
            out,
            "<table><tr><th>pid</th><th class=l>command</th><th>CPU s</th><th>blocked s</th></tr>"
        )?;
        for u in &st.busy {
            writeln!(
                out,
                "<tr><td>{}</td><td class=l>{}</td><td>{:.2}</td><td>{:.2}</td></tr>",
                u.pid,
                esc(u
                    .cmdline
                    .as_deref()
                    .filter(|c| !c.is_empty())
                    .unwrap_or(&u.name)),
                u.cpu_s,
                u.blocked_s
            )?;
        }
        writeln!(out, "</table>")?;
    }
    Ok(())
}

/// The zoomable chart's controls and its empty canvas; the script at the end draws it.
fn write_chart_box(out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "<h2>Chart</h2><p><button id=zin>zoom in</button><button id=zout>zoom out</button><button id=zreset>whole boot</button> <span id=span></span> &middot; wheel: zoom at the pointer, drag: pan. CPU: blue busy, red iowait; rows: blue running (darker = more CPU), red blocked on I/O.</p>")?;
    writeln!(
        out,
        "<div id=chartbox><canvas id=chart></canvas><div id=tip></div></div>"
    )
}

/// The findings, each with its evidence, gain and fix.
fn write_findings(out: &mut impl Write, findings: &[analyze::advise::Finding]) -> io::Result<()> {
    writeln!(out, "<h2>Findings ({})</h2>", findings.len())?;
    if findings.is_empty() {
        writeln!(out, "<p>No rule found evidence of a known cost.</p>")?;
    }
    for f in findings {
        writeln!(
            out,
            "<div class=finding><b>[{}] {}</b> ({})",
            esc(&f.id),
            esc(&f.title),
            f.gain_s
                .map_or("gain not estimated".into(), |g| format!("gain ~{g:.2} s"))
        )?;
        for e in &f.evidence {
            writeln!(
                out,
                "<div class=ev>{}{} {:.2}-{:.2} s, {} samples: {}</div>",
                e.pid.map_or(String::new(), |p| format!("pid {p} ")),
                esc(&e.what),
                e.from_s,
                e.to_s,
                e.samples,
                esc(&e.detail)
            )?;
        }
        writeln!(
            out,
            "<div>gain basis: {}</div><div><b>fix:</b> {}</div></div>",
            esc(&f.gain_basis),
            esc(&f.fix)
        )?;
    }
    Ok(())
}

/// The ten processes with the most CPU time, then the ten blocked longest on I/O.
fn write_top_lists(out: &mut impl Write, m: &BootModel) -> io::Result<()> {
    for (title, list, cpu) in [
        ("Top processes by CPU time", &m.top_cpu, true),
        (
            "Top processes by time blocked on I/O",
            &m.top_blocked,
            false,
        ),
    ] {
        writeln!(out, "<h2>{title}</h2><table><tr><th>seconds</th><th>pid</th><th>start s</th><th class=l>command</th></tr>")?;
        for &i in list.iter().take(10) {
            let p = &m.processes[i];
            writeln!(
                out,
                "<tr><td>{:.2}</td><td>{}</td><td>{:.2}</td><td class=l>{}</td></tr>",
                if cpu { p.cpu_s } else { p.blocked_s },
                p.pid,
                p.start_s,
                esc(p
                    .cmdline
                    .as_deref()
                    .filter(|c| !c.is_empty())
                    .unwrap_or(&p.name))
            )?;
        }
        writeln!(out, "</table>")?;
    }
    Ok(())
}

/// The static bootchart SVG, folded away in a `<details>`.
fn write_bootchart(out: &mut impl Write, svg: &str) -> io::Result<()> {
    writeln!(
        out,
        "<h2>Bootchart</h2><details><summary>the full chart (static SVG)</summary>"
    )?;
    // The SVG's own XML declaration, if any, is not allowed inside HTML.
    let svg_body = svg.trim_start();
    let svg_body = match svg_body.strip_prefix("<?xml") {
        Some(rest) => rest.split_once("?>").map_or(svg_body, |x| x.1),
        None => svg_body,
    };
    out.write_all(svg_body.as_bytes())?;
    writeln!(out, "</details>")
}

/// The chart's data and the script that draws it, then the end of the page.
fn write_chart_script(out: &mut impl Write, m: &BootModel) -> io::Result<()> {
    let data = script_json(&chart_data(m));
    writeln!(
        out,
        "<script type=\"application/json\" id=\"bp-data\">{data}</script>"
    )?;
    writeln!(out, "<script>{JS}</script>\n</body></html>")
}
