//! `bootprint report`: a short readable report: milestones, idle time, top lists, then the
//! phases against their budgets, the boot-done view, the kernel's share and the services.

use std::io::{self, Write};

use analyze::report::Report;
use analyze::{BlockedSource, BootModel, Milestone};

/// How many processes each top list shows.
pub const TOP_N: usize = 10;

fn line(out: &mut impl Write, label: &str, m: Option<&Milestone>) -> io::Result<()> {
    match m {
        Some(m) => writeln!(out, "  {label:<22}{:>9.2} s   ({})", m.t_s, m.source),
        None => writeln!(out, "  {label:<22}{:>9}", "-"),
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// Writes the whole text report.
pub fn report(out: &mut impl Write, r: &Report) -> io::Result<()> {
    write(&r.model, &r.origin, out)?;
    writeln!(out)?;
    crate::judge::write_budgets(out, &r.phases, &r.budget_source)?;
    writeln!(out)?;
    crate::judge::write_settle(out, &r.settle)?;
    if let Some(k) = &r.kernel {
        write_kernel(out, k)?;
    }
    if let Some(c) = &r.cycle {
        write_cycle(out, c)?;
    }
    if let Some(a) = &r.account {
        write_account(out, a)?;
    }
    if let Some(v) = &r.services {
        let source = match v.source {
            analyze::services::Source::Runner => "bootprint rc",
            analyze::services::Source::Systemd => "systemd units",
        };
        write!(
            out,
            "\nServices ({source}; details: bootprint services TRACE):\n{}",
            crate::services::text(v)
        )?;
    }
    Ok(())
}

/// What each segment of a systemd boot's time to the login is, for the text report.
fn segment_label(name: &str) -> &str {
    match name {
        "kernel" => "kernel, to its first program",
        "initramfs" => "initramfs, to the root",
        "to_init" => "to systemd's exec",
        "systemd_start" => "systemd, before its generators",
        "generators" => "generators, to the first unit",
        "units" => "units, to the login unit",
        "login_wait" => "login unit to the prompt",
        other => other,
    }
}

/// Where the time to the login went on a systemd boot (docs/report.md, "The login's
/// account").
pub fn write_account(out: &mut impl Write, a: &analyze::account::LoginAccount) -> io::Result<()> {
    writeln!(
        out,
        "
The time to the {} ({:.2} s), segment by segment:",
        a.login.replace('_', " "),
        a.login_s
    )?;
    for s in &a.segments {
        writeln!(
            out,
            "  {:<32}{:>7.2} s  ({:.2} to {:.2} s)",
            segment_label(&s.name),
            s.seconds(),
            s.from_s,
            s.to_s
        )?;
    }
    if !a.chain.is_empty() {
        writeln!(
            out,
            "  the critical chain in the units' segment (waited, then took):"
        )?;
        for c in &a.chain {
            writeln!(
                out,
                "    {:>6.2} s {:>6.2} s  {}",
                c.waited_s, c.took_s, c.unit
            )?;
        }
    }
    write!(
        out,
        "  CPU before the login: {:.2} s; systemd {:.2} s, generators {:.2} s",
        a.cpu_s, a.systemd_cpu_s, a.generators_cpu_s
    )?;
    let top: Vec<String> = a
        .top_cpu
        .iter()
        .map(|u| format!("{} {:.2} s", u.name, u.cpu_s))
        .collect();
    if top.is_empty() {
        writeln!(out)
    } else {
        writeln!(out, "; then {}", top.join(", "))
    }
}

/// The reboot that led to this boot, stage by stage (docs/report.md, "Reboot cycle").
pub fn write_cycle(out: &mut impl Write, c: &analyze::cycle::Cycle) -> io::Result<()> {
    let secs = |v: Option<f64>| v.map_or("-".to_string(), |s| format!("{s:.2} s"));
    writeln!(out)?;
    writeln!(
        out,
        "Reboot cycle (from boot {}'s shutdown; details: bootprint services TRACE --shutdown):",
        c.previous_boot
    )?;
    writeln!(
        out,
        "  shutdown ({}) to its trace's save  {:.2} s",
        c.shutdown_how, c.shutdown_s
    )?;
    if let Some(st) = crate::shutdown::storage_summary(&c.shutdown.storage) {
        writeln!(out, "    storage: {st}")?;
    }
    let parts = match (c.firmware_s, c.loader_s) {
        (None, None) => "the firmware and loader reported nothing".to_string(),
        (f, l) => format!(
            "firmware {} and loader {} of it, as reported",
            secs(f),
            secs(l)
        ),
    };
    let clock = match c.clock {
        analyze::cycle::CycleClock::Rtc => "hardware clock",
        analyze::cycle::CycleClock::Wall => "wall clock",
    };
    writeln!(
        out,
        "  save to this kernel's start        {:.2} s  (end of shutdown, reset, firmware, loader; {parts}; by the {clock})",
        c.gap_s
    )?;
    writeln!(
        out,
        "  kernel start to login             {}",
        secs(c.login_s)
    )?;
    writeln!(
        out,
        "  whole cycle: to the login {}, to boot done {:.2} s",
        secs(c.to_login_s),
        c.to_boot_done_s
    )?;
    for n in &c.notes {
        writeln!(out, "  note: {n}")?;
    }
    Ok(())
}

/// The kernel's share in a few lines (details: `bootprint kernel`).
fn write_kernel(out: &mut impl Write, k: &kernel::Report) -> io::Result<()> {
    let secs = |v: Option<u64>| v.map_or("-".to_string(), |u| format!("{:.2} s", u as f64 / 1e6));
    writeln!(out)?;
    writeln!(
        out,
        "Kernel (from the trace's dmesg; details: bootprint kernel TRACE):"
    )?;
    writeln!(
        out,
        "  to the first program {}, in initramfs {}, to the real init {}",
        secs(k.boot.phases.kernel_us),
        secs(k.boot.phases.initramfs_us),
        secs(k.boot.phases.to_real_init_us)
    )?;
    for f in k.findings.iter().take(5) {
        let gain = f.gain_us.map_or(String::new(), |g| {
            format!(" (gain ~{:.2} s)", g as f64 / 1e6)
        });
        writeln!(out, "  finding {}: {}{gain}", f.id, f.title)?;
    }
    Ok(())
}

/// The recorder's own cost in words (the text and the HTML report say it alike).
/// Seconds with two decimals, or "-" where there is no figure (tables of the text, HTML
/// and diff renderings).
pub(crate) fn secs_or_dash(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}"))
}

pub(crate) fn recorder_cost(r: &analyze::RecorderCost) -> String {
    let share = match (r.share_pct, r.boot_cpu_s) {
        (Some(p), Some(b)) => format!(", {p:.1} % of the {b:.2} s the boot used"),
        _ => String::new(),
    };
    format!("{:.2} s of CPU{share}", r.cpu_s)
}

/// Writes the boot model's part of the text report: milestones, idle time, top lists.
pub fn write(m: &BootModel, origin: &str, out: &mut impl Write) -> io::Result<()> {
    let s = &m.system;
    writeln!(out, "bootprint report: {origin}")?;
    let mut sys = Vec::new();
    if let Some(r) = &s.release {
        sys.push(r.clone());
    }
    if let Some(u) = &s.uname {
        sys.push(u.clone());
    }
    let cpu = match &s.cpu_model {
        Some(model) => format!("{} CPUs ({model})", s.ncpus),
        None => format!("{} CPUs", s.ncpus),
    };
    sys.push(cpu);
    writeln!(out, "System: {}", sys.join(", "))?;
    writeln!(
        out,
        "Samples: {:.2} s to {:.2} s, every {:.3} s",
        m.first_sample_s, m.last_sample_s, s.sample_interval_s
    )?;
    if let Some(r) = &m.recorder {
        writeln!(out, "Recorder: {}", recorder_cost(r))?;
    }
    // Linux is the default and says nothing new: its reports stay as they were.
    if m.platform != analyze::Platform::Linux {
        writeln!(out, "Platform: {} ({})", m.platform.name(), m.platform_rule)?;
    }
    writeln!(out)?;
    writeln!(out, "Milestones (seconds since the kernel started):")?;
    let ms = &m.milestones;
    line(out, "kernel (init starts)", ms.kernel.as_ref())?;
    line(out, "real init exec'd", ms.init_exec.as_ref())?;
    line(out, "text login", ms.text_login.as_ref())?;
    // The platform's own milestones go in by time around the graphical login.
    let at = ms.graphical_login.as_ref().map_or(f64::INFINITY, |g| g.t_s);
    let (before, after): (Vec<_>, Vec<_>) = ms.platform.iter().partition(|p| p.t_s <= at);
    for p in before {
        writeln!(out, "  {:<22}{:>9.2} s   ({})", p.label, p.t_s, p.source)?;
    }
    line(out, "graphical login", ms.graphical_login.as_ref())?;
    for p in after {
        writeln!(out, "  {:<22}{:>9.2} s   ({})", p.label, p.t_s, p.source)?;
    }
    line(out, "boot done", Some(&ms.boot_done))?;
    // When an event gave boot done, show what the samples say too if it differs: a recorder
    // that timed out, or one whose idea of idle differs from the analysis.
    if ms.boot_done.source.starts_with("event") {
        let computed = analyze::build::computed_boot_done(m, &analyze::Options::default());
        match computed {
            Some(c) if (c.t_s - ms.boot_done.t_s).abs() >= 0.5 => {
                line(out, "boot done (computed)", Some(&c))?
            }
            None => writeln!(
                out,
                "  {:<22}{:>9}   (CPU and disk never settled after the login)",
                "boot done (computed)", "-"
            )?,
            _ => {}
        }
    }
    // The third boot time, after boot done: only where a session was recorded.
    if ms.session_start.is_some() || ms.desktop_ready.is_some() {
        line(out, "session start", ms.session_start.as_ref())?;
        match (&ms.desktop_ready, ms.desktop_start_s()) {
            (Some(d), Some(took)) => writeln!(
                out,
                "  {:<22}{:>9.2} s   ({}; desktop start {took:.2} s)",
                "desktop ready", d.t_s, d.source
            )?,
            (d, _) => line(out, "desktop ready", d.as_ref())?,
        }
    }
    writeln!(out)?;
    let c = &m.cpu_totals;
    writeln!(
        out,
        "CPU from {:.2} s to {:.2} s (all {} CPUs): idle {}, iowait {}, user {}, system {}",
        c.from_s,
        c.to_s,
        s.ncpus,
        pct(c.idle_fraction),
        pct(c.iowait_fraction),
        pct(c.user_fraction),
        pct(c.sys_fraction)
    )?;
    writeln!(out)?;
    writeln!(out, "Top processes by CPU time:")?;
    top(out, m, &m.top_cpu, |i| m.processes[i].cpu_s)?;
    writeln!(out)?;
    let how = match m.blocked_source {
        BlockedSource::DelayAcct => "delayacct_blkio_ticks",
        BlockedSource::DStateSamples => "samples in state D x sample interval",
    };
    writeln!(out, "Top processes by time blocked on I/O (from {how}):")?;
    top(out, m, &m.top_blocked, |i| m.processes[i].blocked_s)?;
    if !m.notes.is_empty() {
        writeln!(out)?;
        writeln!(out, "Notes:")?;
        for n in &m.notes {
            writeln!(out, "  - {n}")?;
        }
    }
    Ok(())
}

fn top(
    out: &mut impl Write,
    m: &BootModel,
    list: &[usize],
    value: impl Fn(usize) -> f64,
) -> io::Result<()> {
    if list.is_empty() {
        return writeln!(out, "  (none)");
    }
    writeln!(
        out,
        "  {:>9}  {:>7}  {:>8}  command",
        "seconds", "pid", "start s"
    )?;
    for &i in list.iter().take(TOP_N) {
        let p = &m.processes[i];
        let mut cmd = p.cmdline.clone().unwrap_or_else(|| p.name.clone());
        if cmd.chars().count() > 60 {
            cmd = cmd.chars().take(57).collect::<String>() + "...";
        }
        writeln!(
            out,
            "  {:>9.2}  {:>7}  {:>8.2}  {cmd}",
            value(i),
            p.pid,
            p.start_s
        )?;
    }
    Ok(())
}
