//! The judgement sections of the report: phases against their budgets and the boot-done
//! (CPU and disk idle) view, as text and JSON. The figures come from `analyze::budget` and
//! `analyze::settle`.

use std::io::{self, Write};

use analyze::budget::Phase;
use analyze::settle::Settle;
use analyze::usage::Use;
use serde_json::{json, Value};

fn cmd(u: &Use) -> String {
    let c = u
        .cmdline
        .as_deref()
        .filter(|c| !c.is_empty())
        .unwrap_or(&u.name);
    if c.chars().count() > 60 {
        format!("{}...", c.chars().take(57).collect::<String>())
    } else {
        c.to_string()
    }
}

fn uses(out: &mut impl Write, list: &[Use], indent: &str) -> io::Result<()> {
    writeln!(out, "{indent}  cpu s  blocked s      pid  command")?;
    for u in list {
        writeln!(
            out,
            "{indent}{:>7.2}  {:>9.2}  {:>7}  {}",
            u.cpu_s,
            u.blocked_s,
            u.pid,
            cmd(u)
        )?;
    }
    Ok(())
}

/// Writes the budget table. `source` says where the budgets came from.
pub fn write_budgets(out: &mut impl Write, phases: &[Phase], source: &str) -> io::Result<()> {
    writeln!(out, "Phases against their budgets ({source}):")?;
    if phases.is_empty() {
        return writeln!(out, "  (no milestones in the trace)");
    }
    writeln!(
        out,
        "  {:<20}{:>8}{:>8}{:>8}{:>8}{:>9}",
        "phase", "from s", "to s", "took s", "budget", "over s"
    )?;
    for p in phases {
        let over = if p.over_s > 0.0 {
            format!("+{:.2}", p.over_s)
        } else {
            "ok".into()
        };
        writeln!(
            out,
            "  {:<20}{:>8.2}{:>8.2}{:>8.2}{:>8.2}{:>9}",
            p.id.label(),
            p.from_s,
            p.to_s,
            p.duration_s,
            p.budget_s,
            over
        )?;
    }
    let mut over: Vec<&Phase> = phases.iter().filter(|p| p.over_s > 0.0).collect();
    over.sort_by(|a, b| b.over_s.total_cmp(&a.over_s));
    for p in over {
        if p.blame.is_empty() {
            writeln!(
                out,
                "  {} overran by {:.2} s; no process used CPU or waited on I/O in it (kernel \
                 time before the first sample, or waiting)",
                p.id.label(),
                p.over_s
            )?;
            continue;
        }
        writeln!(
            out,
            "  {} overran by {:.2} s; heaviest inside it ({:.2} s to {:.2} s):",
            p.id.label(),
            p.over_s,
            p.from_s,
            p.to_s
        )?;
        uses(out, &p.blame, "    ")?;
    }
    Ok(())
}

/// Writes the boot-done view.
pub fn write_settle(out: &mut impl Write, s: &Settle) -> io::Result<()> {
    writeln!(
        out,
        "Boot done = CPU and disk idle (CPU busy < {:.0}%, busiest disk < {:.0}%):",
        s.idle_cpu * 100.0,
        s.idle_disk * 100.0
    )?;
    let held = if s.idle_to_end {
        format!("held to the end of the trace ({:.2} s)", s.idle_until_s)
    } else {
        format!("held until {:.2} s", s.idle_until_s)
    };
    if s.idle_found {
        writeln!(
            out,
            "  idle from {:.2} s ({}), {held}",
            s.idle_from_s, s.idle_source
        )?;
    } else {
        writeln!(
            out,
            "  CPU and disk never stayed idle after the login; boot done is {:.2} s ({})",
            s.idle_from_s, s.idle_source
        )?;
    }
    let (Some(login), Some(tail)) = (s.login_s, s.tail_s) else {
        return writeln!(
            out,
            "  no login milestone: nothing to measure the tail from"
        );
    };
    if s.idle_found {
        writeln!(
            out,
            "  {tail:.2} s of work after the login at {login:.2} s before the machine was idle"
        )?;
    } else {
        writeln!(
            out,
            "  at least {tail:.2} s of work after the login at {login:.2} s"
        )?;
    }
    if !s.busy.is_empty() {
        writeln!(out, "  what ran in between:")?;
        uses(out, &s.busy, "    ")?;
    }
    if !s.started.is_empty() {
        let list: Vec<String> = s
            .started
            .iter()
            .map(|(pid, name, t)| format!("{name}({pid}) {t:.2}"))
            .collect();
        writeln!(out, "  started in between: {}", list.join(", "))?;
    }
    Ok(())
}

fn use_json(u: &Use) -> Value {
    json!({"pid": u.pid, "name": u.name, "cmdline": u.cmdline, "cpu_s": u.cpu_s,
           "blocked_s": u.blocked_s, "samples": u.samples})
}

/// The budget table as JSON: `{source, phases: [...], worst}`.
pub fn budgets_json(phases: &[Phase], source: &str) -> Value {
    json!({
        "source": source,
        "phases": phases.iter().map(|p| json!({
            "phase": p.id,
            "from_s": p.from_s,
            "to_s": p.to_s,
            "duration_s": p.duration_s,
            "budget_s": p.budget_s,
            "over_s": p.over_s,
            "blame": p.blame.iter().map(use_json).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "worst": analyze::budget::worst(phases).map(|p| p.id),
    })
}

/// The boot-done view as JSON.
pub fn settle_json(s: &Settle) -> Value {
    json!({
        "login_s": s.login_s,
        "idle_from_s": s.idle_from_s,
        "idle_source": s.idle_source,
        "idle_found": s.idle_found,
        "idle_until_s": s.idle_until_s,
        "idle_to_end": s.idle_to_end,
        "idle_cpu": s.idle_cpu,
        "idle_disk": s.idle_disk,
        "tail_s": s.tail_s,
        "busy": s.busy.iter().map(use_json).collect::<Vec<_>>(),
        "started": s.started.iter().map(|(pid, name, t)| json!({"pid": pid, "name": name, "start_s": t})).collect::<Vec<_>>(),
    })
}
