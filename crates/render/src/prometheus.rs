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

/// How many services `bootprint_service_seconds` carries, the slowest first: a bound on the
/// series each machine adds (a fleet's distinct names are its distribution's services).
pub const SERVICE_SERIES: usize = 10;

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
/// `bootprint_reboot_stage_seconds{stage}` (`shutdown`, `gap`, `firmware`, `loader`,
/// `kernel`, `login`, `to_login`, `to_boot_done`; docs/report.md, "The reboot cycle").
pub fn report(r: &analyze::report::Report) -> String {
    report_with(r, &Machine::default())
}

/// What the machine adds to a boot's figures, gathered by `bootprint export` on it.
#[derive(Debug, Clone, Default)]
pub struct Machine<'a> {
    /// Each lever with a kernel parameter, and whether the boot had it on its command line.
    pub levers_on: Vec<(&'a str, bool)>,
    /// The boot's milestones against the machine's own history (`analyze::baseline`).
    pub baselines: Vec<(&'a str, analyze::baseline::Baseline)>,
}

/// [`report`] with what the machine adds: `bootprint_lever_on{lever}`, and
/// `bootprint_baseline_seconds{milestone}`, `bootprint_baseline_boots{milestone}` and
/// `bootprint_over_baseline_boots{milestone}`.
pub fn report_with(r: &analyze::report::Report, machine: &Machine) -> String {
    let mut s = text_of(&r.model, &r.phases);
    write_levers_on(&mut s, &machine.levers_on);
    write_services(&mut s, &slowest_services(r));
    write_baselines(&mut s, &machine.baselines);
    if let Some(c) = &r.cycle {
        let _ = writeln!(
            s,
            "# HELP bootprint_reboot_stage_seconds The reboot that led to this boot, by stage: \
             shutdown (request to its trace's save), gap (to this kernel's start), firmware and \
             loader (of the gap, as they reported it), kernel (kernel start to init), login \
             (kernel start to login), to_login and to_boot_done (from the request)."
        );
        let _ = writeln!(s, "# TYPE bootprint_reboot_stage_seconds gauge");
        for (stage, v) in [
            ("shutdown", Some(c.shutdown_s)),
            ("gap", Some(c.gap_s)),
            ("firmware", c.firmware_s),
            ("loader", c.loader_s),
            ("kernel", c.kernel_s),
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

/// The [`SERVICE_SERIES`] slowest starts of the boot, seconds: the runner's or systemd's
/// spans when the trace has them (start actions only, not runlevels 0 and 6), else the init
/// scripts seen in the process samples.
pub fn slowest_services(r: &analyze::report::Report) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = match &r.services {
        Some(v) => v.start_times(),
        None => analyze::services::services(&r.model)
            .into_iter()
            .filter(|s| s.action.as_deref() != Some("stop"))
            .map(|s| (s.name, (s.end_s - s.start_s).max(0.0)))
            .collect(),
    };
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    // One series a name: a script run twice counts by its longest run.
    let mut seen = std::collections::HashSet::new();
    out.retain(|(n, _)| seen.insert(n.clone()));
    out.truncate(SERVICE_SERIES);
    out
}

fn write_baselines(s: &mut String, baselines: &[(&str, analyze::baseline::Baseline)]) {
    if baselines.is_empty() {
        return;
    }
    type Figure = fn(&analyze::baseline::Baseline) -> String;
    let metrics: [(&str, String, Figure); 3] = [
        (
            "bootprint_baseline_seconds",
            format!(
                "The median of a milestone over up to {} boots before this one on the same \
                 machine (its kept traces), seconds.",
                analyze::baseline::BASELINE_BOOTS
            ),
            |b| num(b.baseline_s),
        ),
        (
            "bootprint_baseline_boots",
            "How many earlier boots bootprint_baseline_seconds is the median of.".to_string(),
            |b| b.boots.to_string(),
        ),
        (
            "bootprint_over_baseline_boots",
            format!(
                "Boots in a row, ending with this one, whose milestone was more than {} times \
                 the median of the boots before each (0: this boot was not).",
                analyze::baseline::REGRESSION_RATIO
            ),
            |b| b.over_boots.to_string(),
        ),
    ];
    for (name, help, figure) in metrics {
        let _ = writeln!(s, "# HELP {name} {help}");
        let _ = writeln!(s, "# TYPE {name} gauge");
        for (milestone, b) in baselines {
            let _ = writeln!(s, "{name}{{milestone=\"{milestone}\"}} {}", figure(b));
        }
    }
}

fn write_services(s: &mut String, services: &[(String, f64)]) {
    if services.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "# HELP bootprint_service_seconds How long a service took to start, seconds: the {} \
         slowest of the boot.",
        SERVICE_SERIES
    );
    let _ = writeln!(s, "# TYPE bootprint_service_seconds gauge");
    for (name, v) in services {
        let _ = writeln!(
            s,
            "bootprint_service_seconds{{service=\"{}\"}} {}",
            escape_label(name),
            num(*v)
        );
    }
}

/// The machine and software a boot ran on: `bootprint_info`'s labels (empty where not
/// known).
#[derive(Debug, Clone, Default)]
pub struct Info {
    /// bootprint's version (the recorder's; the CLI's for a boot without a trace).
    pub version: String,
    /// The kernel release.
    pub kernel_release: String,
    /// The distribution (`PRETTY_NAME`).
    pub os: String,
    /// The machine's maker (DMI `sys_vendor`).
    pub vendor: String,
    /// The machine's model (DMI `product_name`).
    pub product: String,
}

impl Info {
    /// What a recorded boot's trace says.
    pub fn of(m: &BootModel) -> Info {
        let sys = &m.system;
        let v = |v: &Option<String>| v.clone().unwrap_or_default();
        Info {
            version: sys
                .recorder_version
                .as_deref()
                .unwrap_or("")
                .trim_start_matches("bootprint ")
                .to_string(),
            kernel_release: v(&sys.kernel_release),
            os: v(&sys.release),
            vendor: v(&sys.dmi_vendor),
            product: v(&sys.dmi_product),
        }
    }
}

fn write_info(s: &mut String, i: &Info) {
    let _ = writeln!(
        s,
        "# HELP bootprint_info The boot's machine and software: bootprint's version (the \
         recorder's; for a boot without a trace, the exporter's), the kernel release, the \
         distribution, the machine's maker and model (DMI)."
    );
    let _ = writeln!(s, "# TYPE bootprint_info gauge");
    let _ = writeln!(
        s,
        "bootprint_info{{version=\"{}\",kernel_release=\"{}\",os=\"{}\",vendor=\"{}\",\
         product=\"{}\"}} 1",
        escape_label(&i.version),
        escape_label(&i.kernel_release),
        escape_label(&i.os),
        escape_label(&i.vendor),
        escape_label(&i.product)
    );
}

/// A boot without a trace, as systemd timed it (`bootprint export --systemd`).
#[derive(Debug, Clone, Default)]
pub struct SystemdBoot<'a> {
    /// The machine and software.
    pub info: Info,
    /// systemd-analyze's stages, s (`systemd::learn::Stages::seconds`; None: not known).
    pub stages: Vec<(&'a str, Option<f64>)>,
    /// When the first getty became active, s since the kernel started.
    pub text_login_s: Option<f64>,
    /// The slowest unit starts, s, slowest first (at most [`SERVICE_SERIES`] are written).
    pub services: Vec<(String, f64)>,
    /// The text login against the boots before it (the journal's).
    pub baseline: Option<analyze::baseline::Baseline>,
}

/// The exposition text of a boot without a trace: `bootprint_info`,
/// `bootprint_systemd_stage_seconds{stage}`, `bootprint_milestone_seconds{milestone=
/// "text_login"}`, `bootprint_service_seconds` and the text login's baseline metrics; the
/// names, labels and units of a recorded boot's, so the same rules and dashboard read both.
pub fn systemd(b: &SystemdBoot) -> String {
    let mut s = String::new();
    write_info(&mut s, &b.info);
    let _ = writeln!(
        s,
        "# HELP bootprint_systemd_stage_seconds The boot's stages as systemd timed them \
         (systemd-analyze time): firmware, loader, kernel, initrd, userspace, total."
    );
    let _ = writeln!(s, "# TYPE bootprint_systemd_stage_seconds gauge");
    for (stage, v) in &b.stages {
        if let Some(v) = v {
            let _ = writeln!(
                s,
                "bootprint_systemd_stage_seconds{{stage=\"{stage}\"}} {}",
                num(*v)
            );
        }
    }
    if let Some(t) = b.text_login_s {
        let _ = writeln!(
            s,
            "# HELP bootprint_milestone_seconds Boot milestone, seconds since the kernel started."
        );
        let _ = writeln!(s, "# TYPE bootprint_milestone_seconds gauge");
        let _ = writeln!(
            s,
            "bootprint_milestone_seconds{{milestone=\"text_login\"}} {}",
            num(t)
        );
    }
    let mut services = b.services.clone();
    services.truncate(SERVICE_SERIES);
    write_services(&mut s, &services);
    if let Some(bl) = &b.baseline {
        write_baselines(&mut s, &[("text_login", bl.clone())]);
    }
    s
}

/// Which levers the boot ran with (their kernel parameters on its command line).
fn write_levers_on(s: &mut String, levers: &[(&str, bool)]) {
    if levers.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "# HELP bootprint_lever_on Whether the boot ran with a lever: its kernel parameter on \
         the command line (1) or not (0)."
    );
    let _ = writeln!(s, "# TYPE bootprint_lever_on gauge");
    for (lever, on) in levers {
        let _ = writeln!(
            s,
            "bootprint_lever_on{{lever=\"{lever}\"}} {}",
            u8::from(*on)
        );
    }
}

/// Which levers that judge themselves switched themselves off by their own verdict, as the
/// trace says (readahead, the module loader, the init script runner, late units).
fn write_levers_self_off(s: &mut String, m: &BootModel) {
    let _ = writeln!(
        s,
        "# HELP bootprint_lever_self_off Whether a lever that judges itself (readahead, \
         modules, rc, late) has switched itself off by its own verdict (1) or not (0), as this boot's \
         trace says."
    );
    let _ = writeln!(s, "# TYPE bootprint_lever_self_off gauge");
    for lever in ["readahead", "modules", "rc", "late"] {
        let off = m.self_off.iter().any(|l| l == lever);
        let _ = writeln!(
            s,
            "bootprint_lever_self_off{{lever=\"{lever}\"}} {}",
            u8::from(off)
        );
    }
}

fn text_of(m: &BootModel, phases: &[analyze::budget::Phase]) -> String {
    let mut s = String::new();
    write_info(&mut s, &Info::of(m));
    write_levers_self_off(&mut s, m);
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
