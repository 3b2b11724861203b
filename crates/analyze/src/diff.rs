//! Two boots side by side: milestones, phases, services and programs, with what changed most
//! and what appeared or disappeared. Programs are matched by name (`comm`, without an rc
//! link's `Snn` prefix, on its first 12 bytes since `comm` is cut at 15), services by script
//! name; pids mean nothing across boots.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::budget::{self, Budgets, PhaseId};
use crate::build::RECORDER_NAMES;
use crate::model::BootModel;
use crate::services;

/// One figure in both boots.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    /// What it is (`text_login`, a phase, a service).
    pub name: String,
    /// Value in boot A, seconds.
    pub a_s: Option<f64>,
    /// Value in boot B, seconds.
    pub b_s: Option<f64>,
    /// `b - a` when both are there.
    pub delta_s: Option<f64>,
}

fn pair(name: &str, a: Option<f64>, b: Option<f64>) -> Pair {
    Pair {
        name: name.to_string(),
        a_s: a,
        b_s: b,
        delta_s: a.zip(b).map(|(x, y)| y - x),
    }
}

/// A program's runs in one boot, summed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Runs {
    /// How many processes had this name.
    pub count: usize,
    /// Summed CPU seconds.
    pub cpu_s: f64,
    /// Summed seconds blocked on I/O.
    pub blocked_s: f64,
    /// Summed lifetimes (up to boot done), seconds.
    pub life_s: f64,
    /// The first start, seconds.
    pub first_start_s: f64,
}

/// A program in both boots.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgramDiff {
    /// `comm`.
    pub name: String,
    /// In boot A (`None`: it did not run there).
    pub a: Option<Runs>,
    /// In boot B.
    pub b: Option<Runs>,
    /// How much it changed: |ΔCPU| + |Δblocked| + |Δlifetime|, seconds.
    pub change_s: f64,
}

/// A service in both boots: start and duration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServiceDiff {
    /// Script name.
    pub name: String,
    /// Start in A.
    pub a_start_s: Option<f64>,
    /// Duration in A.
    pub a_duration_s: Option<f64>,
    /// Start in B.
    pub b_start_s: Option<f64>,
    /// Duration in B.
    pub b_duration_s: Option<f64>,
    /// B's duration minus A's (a missing run counts as 0).
    pub delta_s: f64,
}

/// The comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    /// Milestones (kernel, init_exec, text_login, graphical_login, the platform's, boot_done,
    /// then session_start and desktop_ready when either boot has them).
    pub milestones: Vec<Pair>,
    /// Phase lengths (see `budget::phases`).
    pub phases: Vec<Pair>,
    /// Services, most changed first.
    pub services: Vec<ServiceDiff>,
    /// Programs in both boots, most changed first.
    pub changed: Vec<ProgramDiff>,
    /// Programs only in B, heaviest first.
    pub appeared: Vec<ProgramDiff>,
    /// Programs only in A, heaviest first.
    pub disappeared: Vec<ProgramDiff>,
    /// The reboot cycle that led to each boot, stage by stage (`shutdown`, `to_kernel`,
    /// `to_login`, `whole_to_login`, `whole_to_boot_done`), when either boot has one
    /// ([`Diff::with_cycles`]); empty otherwise.
    pub cycle: Vec<Pair>,
}

impl Diff {
    /// Adds the stages of the reboot cycles that led to boot A and boot B
    /// ([`crate::cycle::Cycle`]), when either has one.
    pub fn with_cycles(
        mut self,
        a: Option<&crate::cycle::Cycle>,
        b: Option<&crate::cycle::Cycle>,
    ) -> Diff {
        if a.is_none() && b.is_none() {
            return self;
        }
        type Stage = fn(&crate::cycle::Cycle) -> Option<f64>;
        let stages: [(&str, Stage); 5] = [
            ("shutdown", |c| Some(c.shutdown_s)),
            ("to_kernel", |c| Some(c.gap_s)),
            ("to_login", |c| c.login_s),
            ("whole_to_login", |c| c.to_login_s),
            ("whole_to_boot_done", |c| Some(c.to_boot_done_s)),
        ];
        self.cycle = stages
            .into_iter()
            .map(|(name, f)| pair(name, a.and_then(f), b.and_then(f)))
            .collect();
        self
    }
}

/// The name a program is matched by across boots: its `comm`, without the `Snn`/`Knn`
/// prefix of an rc link (a serial sysvinit runs `/etc/rcS.d/S02udev`, whose `comm` is
/// `S02udev`; startpar runs `/etc/init.d/udev`, `comm` `udev`).
pub fn program_key(comm: &str) -> &str {
    let b = comm.as_bytes();
    if b.len() > 3
        && (b[0] == b'S' || b[0] == b'K')
        && b[1].is_ascii_digit()
        && b[2].is_ascii_digit()
    {
        &comm[3..]
    } else {
        comm
    }
}

/// `comm` holds at most 15 bytes, so `S03mountdevsubfs.sh` shows as `S03mountdevsubf` and
/// `mountdevsubfs.sh` as `mountdevsubfs.s`: names are matched on their first 12 bytes.
const MATCH_LEN: usize = 12;

/// On Android the names are whole `argv[0]`s, not cut `comm`s (docs/trace-format.md): a path
/// is matched by its last part, and nothing is cut (the first 12 bytes of every
/// `/system/bin/...` would be one program).
fn match_key(name: &str, platform: crate::Platform) -> String {
    if platform == crate::Platform::Android {
        return name.rsplit('/').next().unwrap_or(name).to_string();
    }
    let k = program_key(name);
    let mut end = k.len().min(MATCH_LEN);
    while !k.is_char_boundary(end) {
        end -= 1;
    }
    k[..end].to_string()
}

/// Runs by match key, and the longest name seen for each key (for display).
fn programs(m: &BootModel, names: &mut BTreeMap<String, String>) -> BTreeMap<String, Runs> {
    let end = m.milestones.boot_done.t_s;
    let mut out: BTreeMap<String, Runs> = BTreeMap::new();
    for p in &m.processes {
        if p.kernel_thread || p.start_s > end || RECORDER_NAMES.contains(&p.name.as_str()) {
            continue;
        }
        let key = match_key(&p.name, m.platform);
        let shown = program_key(&p.name);
        let slot = names.entry(key.clone()).or_default();
        if shown.len() > slot.len() {
            *slot = shown.to_string();
        }
        let r = out.entry(key).or_insert(Runs {
            first_start_s: p.start_s,
            ..Runs::default()
        });
        r.count += 1;
        r.cpu_s += p.cpu_s;
        r.blocked_s += p.blocked_s;
        r.life_s += (p.end_s.min(end) - p.start_s).max(0.0);
        r.first_start_s = r.first_start_s.min(p.start_s);
    }
    out
}

/// How many programs each list keeps.
pub const LIST_N: usize = 15;

/// Compares boot `a` with boot `b`.
pub fn diff(a: &BootModel, b: &BootModel) -> Diff {
    diff_with(a, b, None, None)
}

/// [`diff`], the services of a boot taken from its services view when it has one (the
/// runner's spans, or systemd's units by unit name) rather than from its process tree.
pub fn diff_with(
    a: &BootModel,
    b: &BootModel,
    va: Option<&services::ServicesView>,
    vb: Option<&services::ServicesView>,
) -> Diff {
    let (ma, mb) = (&a.milestones, &b.milestones);
    let t = |m: &Option<crate::Milestone>| m.as_ref().map(|x| x.t_s);
    let mut milestones = vec![
        pair("kernel", t(&ma.kernel), t(&mb.kernel)),
        pair("init_exec", t(&ma.init_exec), t(&mb.init_exec)),
        pair("text_login", t(&ma.text_login), t(&mb.text_login)),
        pair(
            "graphical_login",
            t(&ma.graphical_login),
            t(&mb.graphical_login),
        ),
        pair("boot_done", Some(ma.boot_done.t_s), Some(mb.boot_done.t_s)),
    ];
    // The platform's own (Android's zygote, launcher, ...), by name, before boot done.
    let mut names: Vec<&str> = Vec::new();
    for p in ma.platform.iter().chain(&mb.platform) {
        if !names.contains(&p.name.as_str()) {
            names.push(&p.name);
        }
    }
    let platform_t = |list: &[crate::PlatformMilestone], name: &str| {
        list.iter().find(|p| p.name == name).map(|p| p.t_s)
    };
    let done = milestones.pop();
    for name in names {
        milestones.push(pair(
            name,
            platform_t(&ma.platform, name),
            platform_t(&mb.platform, name),
        ));
    }
    milestones.extend(done);
    // The desktop's, after boot done, only when a session was recorded in either boot.
    for (name, fa, fb) in [
        ("session_start", t(&ma.session_start), t(&mb.session_start)),
        ("desktop_ready", t(&ma.desktop_ready), t(&mb.desktop_ready)),
    ] {
        if fa.is_some() || fb.is_some() {
            milestones.push(pair(name, fa, fb));
        }
    }
    let pa = budget::phases(a, &Budgets::default());
    let pb = budget::phases(b, &Budgets::default());
    let len =
        |ps: &[budget::Phase], id: PhaseId| ps.iter().find(|p| p.id == id).map(|p| p.duration_s);
    let phases = [
        PhaseId::Kernel,
        PhaseId::Early,
        PhaseId::TextLogin,
        PhaseId::GraphicalLogin,
        PhaseId::Done,
        PhaseId::Desktop,
    ]
    .into_iter()
    .filter(|&id| len(&pa, id).is_some() || len(&pb, id).is_some())
    .map(|id| pair(id.label(), len(&pa, id), len(&pb, id)))
    .collect();

    let first_runs = |m: &BootModel, v: Option<&services::ServicesView>| {
        let mut out: BTreeMap<String, (f64, f64)> = BTreeMap::new();
        if let Some(v) = v.filter(|v| !v.spans.is_empty()) {
            for s in &v.spans {
                out.entry(s.script.clone())
                    .or_insert((s.start_ns as f64 / 1e9, s.duration_ns() as f64 / 1e9));
            }
            return out;
        }
        for s in services::services(m) {
            out.entry(s.name)
                .or_insert((s.start_s, (s.end_s - s.start_s).max(0.0)));
        }
        out
    };
    let (sa, sb) = (first_runs(a, va), first_runs(b, vb));
    let mut names: Vec<&String> = sa.keys().chain(sb.keys()).collect();
    names.sort();
    names.dedup();
    let mut services: Vec<ServiceDiff> = names
        .into_iter()
        .map(|n| {
            let x = sa.get(n);
            let y = sb.get(n);
            ServiceDiff {
                name: n.clone(),
                a_start_s: x.map(|v| v.0),
                a_duration_s: x.map(|v| v.1),
                b_start_s: y.map(|v| v.0),
                b_duration_s: y.map(|v| v.1),
                delta_s: y.map_or(0.0, |v| v.1) - x.map_or(0.0, |v| v.1),
            }
        })
        .collect();
    services.sort_by(|x, y| y.delta_s.abs().total_cmp(&x.delta_s.abs()));

    let mut names = BTreeMap::new();
    let (ra, rb) = (programs(a, &mut names), programs(b, &mut names));
    let shown = |key: &String| names.get(key).cloned().unwrap_or_else(|| key.clone());
    let mut changed = Vec::new();
    let mut appeared = Vec::new();
    let mut disappeared = Vec::new();
    let weight = |r: &Runs| r.cpu_s + r.blocked_s + r.life_s;
    for (name, x) in &ra {
        match rb.get(name) {
            Some(y) => changed.push(ProgramDiff {
                name: shown(name),
                a: Some(*x),
                b: Some(*y),
                change_s: (y.cpu_s - x.cpu_s).abs()
                    + (y.blocked_s - x.blocked_s).abs()
                    + (y.life_s - x.life_s).abs(),
            }),
            None => disappeared.push(ProgramDiff {
                name: shown(name),
                a: Some(*x),
                b: None,
                change_s: weight(x),
            }),
        }
    }
    for (name, y) in &rb {
        if !ra.contains_key(name) {
            appeared.push(ProgramDiff {
                name: shown(name),
                a: None,
                b: Some(*y),
                change_s: weight(y),
            });
        }
    }
    for list in [&mut changed, &mut appeared, &mut disappeared] {
        list.sort_by(|x, y| y.change_s.total_cmp(&x.change_s));
        list.truncate(LIST_N);
    }
    Diff {
        milestones,
        phases,
        services,
        changed,
        appeared,
        disappeared,
        cycle: Vec::new(),
    }
}
