//! The services view of a boot (`analyze::services::ServicesView`: the scripts bootprint's
//! runner started, or systemd's units): as text (`bootprint services`, the text report's
//! services section), as JSON (`services --json`, `services` in `report --json`) and as an
//! HTML section.

use std::io::{self, Write};

use analyze::services::{ServicesView, Source, Span};
use serde_json::{json, Value};

use crate::svg::escape_xml as esc;

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The services view as text: every span (start, duration, outcome, late apart), the
/// blame list and the critical chain to the login. `bootprint rc services` prints it; the
/// text report embeds it.
pub fn text(v: &ServicesView) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    if v.source == Source::Systemd {
        units_text(&mut s, v);
        return s;
    }
    if v.spans.is_empty() {
        s.push_str("no rc spans (the boot did not use bootprint's runner)\n");
        return s;
    }
    for (title, late) in [
        ("services on the path to the login", false),
        ("late services", true),
    ] {
        let list: Vec<&Span> = v.spans.iter().filter(|x| x.late == late).collect();
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(s, "{title}:");
        let _ = writeln!(
            s,
            "  {:>8} {:>8}  {:<3} {:<7} {:<15} script",
            "start_s", "took_s", "rl", "action", "outcome"
        );
        for x in list {
            let took = took(x);
            let _ = writeln!(
                s,
                "  {:>8.3} {:>8}  {:<3} {:<7} {:<15} {}{}",
                secs(x.start_ns),
                took,
                x.runlevel,
                x.action,
                x.outcome,
                x.script,
                if x.builtin {
                    " (built-in)"
                } else if x.beside {
                    " (beside the path)"
                } else {
                    ""
                }
            );
        }
    }
    for (rl, ns) in &v.reached {
        let _ = writeln!(
            s,
            "runlevel {rl}: path to the login done at {:.3} s",
            secs(*ns)
        );
    }
    for (rl, ns, why) in &v.late_start {
        let _ = writeln!(
            s,
            "runlevel {rl}: late services let go at {:.3} s ({why})",
            secs(*ns)
        );
    }
    for (rl, why) in &v.fallbacks {
        let _ = writeln!(s, "runlevel {rl}: fell back to serial ({why})");
    }
    blame_and_chain(
        &mut s,
        v,
        "blame:",
        " (late)",
        "critical chain to the login:",
    );
    s
}

/// systemd's units: the spans (start, time to active, outcome), failed units, blame and
/// the critical chain to the login unit, as `systemd-analyze` names them.
fn units_text(s: &mut String, v: &ServicesView) {
    use std::fmt::Write as _;
    if v.spans.is_empty() {
        s.push_str("no systemd unit started (systemd-units.log holds no unit timing)\n");
        return;
    }
    let login = v
        .login_unit
        .as_deref()
        .unwrap_or("no login unit became active");
    for (title, late) in [
        ("systemd units before the login", false),
        ("systemd units started after the login", true),
    ] {
        let list: Vec<&Span> = v.spans.iter().filter(|x| x.late == late).collect();
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(s, "{title}:");
        let _ = writeln!(
            s,
            "  {:>8} {:>8}  {:<8} unit",
            "start_s", "took_s", "outcome"
        );
        for x in list {
            let took = took(x);
            let _ = writeln!(
                s,
                "  {:>8.3} {:>8}  {:<8} {}",
                secs(x.start_ns),
                took,
                x.outcome,
                x.script
            );
        }
    }
    if let Some((_, ns)) = v.reached.last() {
        let _ = writeln!(s, "login unit: {login} active at {:.3} s", secs(*ns));
    } else {
        let _ = writeln!(s, "login unit: {login}");
    }
    let failed = v.failed();
    if !failed.is_empty() {
        let _ = writeln!(s, "failed units: {}", failed.join(" "));
    }
    blame_and_chain(
        s,
        v,
        "blame (as systemd-analyze blame):",
        " (after the login)",
        &format!("critical chain to {login} (as systemd-analyze critical-chain):"),
    );
    if v.no_dependencies {
        s.push_str("critical chain: none (no unit's dependencies were recorded)\n");
    }
}

/// The time a span took, `-` while it had not ended.
fn took(x: &Span) -> String {
    match x.end_ns {
        Some(_) => format!("{:.3}", secs(x.duration_ns())),
        None => "-".into(),
    }
}

/// The 15 costliest spans (`late_note` after a late one), then the critical chain, under
/// the given titles: the runner's view and systemd's units name them differently.
fn blame_and_chain(
    s: &mut String,
    v: &ServicesView,
    blame_title: &str,
    late_note: &str,
    chain_title: &str,
) {
    use std::fmt::Write as _;
    let _ = writeln!(s, "{blame_title}");
    for x in v.blame().iter().take(15) {
        let _ = writeln!(
            s,
            "  {:>8.3} s  {}{}",
            secs(x.duration_ns()),
            x.script,
            if x.late { late_note } else { "" }
        );
    }
    let chain = v.critical_chain();
    if !chain.is_empty() {
        let _ = writeln!(s, "{chain_title}");
        for x in chain {
            let _ = writeln!(
                s,
                "  {} @{:.3} s +{:.3} s",
                x.script,
                secs(x.start_ns),
                secs(x.duration_ns())
            );
        }
    }
}

/// The view as JSON. Key names are a contract (docs/rc.md); add keys, never rename them.
pub fn json(view: &ServicesView) -> Value {
    let span = |s: &Span| {
        json!({
            "script": s.script, "action": s.action, "runlevel": s.runlevel,
            "start_s": secs(s.start_ns),
            "end_s": s.end_ns.map(secs),
            "duration_s": secs(s.duration_ns()),
            "exit": s.exit, "outcome": s.outcome, "late": s.late,
            "waited_for": s.waited_for,
        })
    };
    let names = |list: Vec<&Span>| list.iter().map(|s| s.script.clone()).collect::<Vec<_>>();
    json!({
        "spans": view.spans.iter().map(span).collect::<Vec<_>>(),
        "blame": names(view.blame()),
        "critical_chain": names(view.critical_chain()),
        "reached": view.reached.iter().map(|(rl, ns)| json!({"runlevel": rl, "at_s": secs(*ns)})).collect::<Vec<_>>(),
        "late_start": view.late_start.iter().map(|(rl, ns, why)| json!({"runlevel": rl, "at_s": secs(*ns), "reason": why})).collect::<Vec<_>>(),
        "fallbacks": view.fallbacks.iter().map(|(rl, why)| json!({"runlevel": rl, "reason": why})).collect::<Vec<_>>(),
        "source": match view.source { Source::Runner => "rc", Source::Systemd => "systemd" },
        "login_unit": view.login_unit,
        "failed": view.failed(),
        "no_dependencies": view.no_dependencies,
    })
}

/// The view as a section of the HTML report: the spans on the path to the login and the
/// late ones, the critical chain.
pub fn write_html(out: &mut impl Write, v: &ServicesView) -> io::Result<()> {
    let title = match v.source {
        Source::Runner => "Services (bootprint rc)",
        Source::Systemd => "Services (systemd units)",
    };
    writeln!(
        out,
        "<h2>{title}</h2><table><tr><th>start s</th><th>took s</th><th class=l>runlevel</th><th class=l>action</th><th class=l>outcome</th><th class=l>script</th></tr>"
    )?;
    for x in &v.spans {
        let took = x
            .end_ns
            .map_or("-".into(), |_| format!("{:.3}", secs(x.duration_ns())));
        let note = if x.late && v.source == Source::Systemd {
            " (after the login)"
        } else if x.late {
            " (late)"
        } else if x.builtin {
            " (built-in)"
        } else if x.beside {
            " (beside the path)"
        } else {
            ""
        };
        writeln!(
            out,
            "<tr{}><td>{:.3}</td><td>{took}</td><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td class=l>{}{note}</td></tr>",
            if x.outcome == "ok" || x.outcome == "running" { "" } else { " class=over" },
            secs(x.start_ns),
            esc(&x.runlevel),
            esc(&x.action),
            esc(&x.outcome),
            esc(&x.script),
        )?;
    }
    writeln!(out, "</table>")?;
    let chain: Vec<String> = v
        .critical_chain()
        .iter()
        .map(|x| {
            format!(
                "{} @{:.3} s +{:.3} s",
                esc(&x.script),
                secs(x.start_ns),
                secs(x.duration_ns())
            )
        })
        .collect();
    if !chain.is_empty() {
        writeln!(
            out,
            "<p>Critical chain to the login: {}</p>",
            chain.join(" &rarr; ")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "# bootprint rc 1
10 rc_start script=mountall action=start runlevel=S late=0 waited_for=
20 rc_start script=udev action=start runlevel=S late=0 beside=1 waited_for=
90 rc_end script=mountall action=start runlevel=S late=0 exit=0 outcome=ok timed_out=0
95 rc_reached runlevel=S
900 rc_end script=udev action=start runlevel=S late=0 beside=1 exit=0 outcome=ok timed_out=0
1000 rc_start script=a<b action=start runlevel=2 late=0 waited_for=
2000 rc_end script=a<b action=start runlevel=2 late=0 exit=1 outcome=failed timed_out=0
2000 rc_reached runlevel=2
";

    #[test]
    fn every_format_shows_the_spans_and_the_chain() {
        let (v, problems) = ServicesView::from_text(LOG, "rc.log");
        assert!(problems.is_empty(), "{problems:?}");
        let t = text(&v);
        assert!(t.contains("udev (beside the path)"), "{t}");
        assert!(
            t.contains("critical chain to the login:\n  mountall @0.000 s +0.000 s\n  a<b"),
            "{t}"
        );
        let j = json(&v);
        assert_eq!(j["critical_chain"], json!(["mountall", "a<b"]));
        assert_eq!(j["spans"][2]["outcome"], "failed");
        let mut h = Vec::new();
        write_html(&mut h, &v).unwrap();
        let h = String::from_utf8(h).unwrap();
        assert!(h.contains("<tr class=over>") && h.contains("a&lt;b"), "{h}");
        assert!(h.contains("Critical chain to the login: mountall"), "{h}");
    }

    #[test]
    fn systemd_units_show_as_units() {
        let units = "# bootprint systemd units 1\nmanager userspace_us=1000000 finish_us=0\n\
unit id=a.service activating_us=2000000 active_us=2500000\n\
unit id=b.service active=failed result=exit-code activating_us=2100000 active_us=0 inactive_us=2200000\n\
unit id=getty@tty1.service activating_us=3000000 active_us=3000000 After=a.service,b.service\n";
        let (v, problems) = ServicesView::from_units_text(units, "systemd-units.log");
        assert!(problems.is_empty(), "{problems:?}");
        let t = text(&v);
        assert!(
            t.contains("login unit: getty@tty1.service active at 3.000 s"),
            "{t}"
        );
        assert!(t.contains("failed units: b.service"), "{t}");
        assert!(
            t.contains("critical chain to getty@tty1.service (as systemd-analyze critical-chain):\n  a.service @2.000 s +0.500 s\n  getty@tty1.service"),
            "{t}"
        );
        let j = json(&v);
        assert_eq!(j["source"], "systemd");
        assert_eq!(j["blame"], json!(["a.service", "b.service"]));
        assert_eq!(
            j["critical_chain"],
            json!(["a.service", "getty@tty1.service"])
        );
        let mut h = Vec::new();
        write_html(&mut h, &v).unwrap();
        assert!(String::from_utf8(h)
            .unwrap()
            .contains("Services (systemd units)"));
    }
}
