//! The boot's figures in Prometheus' text exposition format, for node_exporter's textfile
//! collector (`--collector.textfile.directory`): `# HELP` and `# TYPE` lines, then samples,
//! every metric named `bootprint_*`. [`text`] makes the text (the recorder can call it at boot
//! done); the caller writes it to `DIR/bootprint.prom` ([`FILE_NAME`]) with
//! `sys::write_atomic`, so the collector never reads half a file (its temporary name ends in
//! `.tmp`, which the collector does not read).

use std::fmt::Write as _;

use analyze::BootModel;

/// The file name inside the collector's directory.
pub const FILE_NAME: &str = "bootprint.prom";

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn num(x: f64) -> String {
    // Prometheus reads Go floats; keep millisecond precision, no exponent for usual values.
    let r = (x * 1000.0).round() / 1000.0;
    format!("{r}")
}

/// The exposition text of one boot: milestone times (`bootprint_milestone_seconds{milestone}`),
/// phase lengths and budgets (`bootprint_phase_seconds{phase}`,
/// `bootprint_phase_budget_seconds{phase}`), the idle fraction, and the readahead hit rate
/// when the boot replayed a pack. The budgets are the defaults ([`text_with`] takes others).
pub fn text(m: &BootModel) -> String {
    text_with(m, &analyze::budget::Budgets::default())
}

/// [`text`] with the given budgets.
pub fn text_with(m: &BootModel, budgets: &analyze::budget::Budgets) -> String {
    text_of(m, &analyze::budget::phases(m, budgets))
}

/// [`text`] of a whole report (its phases, against the budgets it was judged by).
/// With the reboot cycle that led to the boot, when known:
/// `bootprint_reboot_stage_seconds{stage}` (`shutdown`, `gap`, `login`, `to_login`,
/// `to_boot_done`; docs/report.md, "The reboot cycle").
pub fn report(r: &analyze::report::Report) -> String {
    let mut s = text_of(&r.model, &r.phases);
    if let Some(c) = &r.cycle {
        let _ = writeln!(
            s,
            "# HELP bootprint_reboot_stage_seconds The reboot that led to this boot, by stage: \
             shutdown (request to its trace's save), gap (to this kernel's start), login \
             (kernel start to login), to_login and to_boot_done (from the request)."
        );
        let _ = writeln!(s, "# TYPE bootprint_reboot_stage_seconds gauge");
        for (stage, v) in [
            ("shutdown", Some(c.shutdown_s)),
            ("gap", Some(c.gap_s)),
            ("login", c.login_s),
            ("to_login", c.to_login_s),
            ("to_boot_done", Some(c.to_boot_done_s)),
        ] {
            if let Some(v) = v {
                let _ = writeln!(
                    s,
                    "bootprint_reboot_stage_seconds{{stage=\"{stage}\"}} {}",
                    num(v)
                );
            }
        }
    }
    s
}

fn text_of(m: &BootModel, phases: &[analyze::budget::Phase]) -> String {
    let mut s = String::new();
    let ms = &m.milestones;
    let _ = writeln!(
        s,
        "# HELP bootprint_milestone_seconds Boot milestone, seconds since the kernel started."
    );
    let _ = writeln!(s, "# TYPE bootprint_milestone_seconds gauge");
    for (name, v) in [
        ("kernel", ms.kernel.as_ref()),
        ("init_exec", ms.init_exec.as_ref()),
        ("text_login", ms.text_login.as_ref()),
        ("graphical_login", ms.graphical_login.as_ref()),
        ("boot_done", Some(&ms.boot_done)),
        ("session_start", ms.session_start.as_ref()),
        ("desktop_ready", ms.desktop_ready.as_ref()),
    ] {
        if let Some(v) = v {
            let _ = writeln!(
                s,
                "bootprint_milestone_seconds{{milestone=\"{name}\"}} {}",
                num(v.t_s)
            );
        }
    }
    for p in &ms.platform {
        let _ = writeln!(
            s,
            "bootprint_milestone_seconds{{milestone=\"{}\"}} {}",
            p.name,
            num(p.t_s)
        );
    }
    let phase = |p: &analyze::budget::Phase| {
        serde_json::to_value(p.id)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    };
    let _ = writeln!(
        s,
        "# HELP bootprint_phase_seconds Length of a boot phase, seconds."
    );
    let _ = writeln!(s, "# TYPE bootprint_phase_seconds gauge");
    for p in phases {
        let _ = writeln!(
            s,
            "bootprint_phase_seconds{{phase=\"{}\"}} {}",
            escape_label(&phase(p)),
            num(p.duration_s)
        );
    }
    let _ = writeln!(
        s,
        "# HELP bootprint_phase_budget_seconds Time budget of a boot phase, seconds."
    );
    let _ = writeln!(s, "# TYPE bootprint_phase_budget_seconds gauge");
    for p in phases {
        let _ = writeln!(
            s,
            "bootprint_phase_budget_seconds{{phase=\"{}\"}} {}",
            escape_label(&phase(p)),
            num(p.budget_s)
        );
    }
    let _ = writeln!(s, "# HELP bootprint_cpu_idle_ratio Share of CPU time idle from the first sample to boot done.");
    let _ = writeln!(s, "# TYPE bootprint_cpu_idle_ratio gauge");
    let _ = writeln!(
        s,
        "bootprint_cpu_idle_ratio {}",
        num(m.cpu_totals.idle_fraction)
    );
    let _ = writeln!(s, "# HELP bootprint_cpu_iowait_ratio Share of CPU time in iowait from the first sample to boot done.");
    let _ = writeln!(s, "# TYPE bootprint_cpu_iowait_ratio gauge");
    let _ = writeln!(
        s,
        "bootprint_cpu_iowait_ratio {}",
        num(m.cpu_totals.iowait_fraction)
    );
    if let Some(r) = &m.recorder {
        let _ = writeln!(
            s,
            "# HELP bootprint_recorder_cpu_seconds CPU time the recorder itself used."
        );
        let _ = writeln!(s, "# TYPE bootprint_recorder_cpu_seconds gauge");
        let _ = writeln!(s, "bootprint_recorder_cpu_seconds {}", num(r.cpu_s));
        if let Some(p) = r.share_pct {
            let _ = writeln!(s, "# HELP bootprint_recorder_cpu_share_ratio The recorder's CPU time over all the CPU time the boot used.");
            let _ = writeln!(s, "# TYPE bootprint_recorder_cpu_share_ratio gauge");
            let _ = writeln!(s, "bootprint_recorder_cpu_share_ratio {}", num(p / 100.0));
        }
    }
    if let Some(r) = &m.readahead {
        let _ = writeln!(s, "# HELP bootprint_readahead_hit_ratio Share of the bytes readahead replayed that were still cached at boot done.");
        let _ = writeln!(s, "# TYPE bootprint_readahead_hit_ratio gauge");
        let _ = writeln!(s, "bootprint_readahead_hit_ratio {}", num(r.ratio));
        let _ = writeln!(
            s,
            "# HELP bootprint_readahead_replayed_bytes Bytes readahead replayed."
        );
        let _ = writeln!(s, "# TYPE bootprint_readahead_replayed_bytes gauge");
        let _ = writeln!(s, "bootprint_readahead_replayed_bytes {}", r.replayed_bytes);
    }
    s
}
