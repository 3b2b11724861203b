//! The plan: which modules to load and what each must wait for. Built from requests (the
//! modaliases of the present devices and the module lists) through an [`Index`] (libkmod in
//! production, a fake in tests), with builtin and already-loaded modules left out.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

use serde::Serialize;

use crate::durations::Durations;
use crate::input::normalize;
use crate::{Error, Request, Source};

/// What the plan needs to know about one module.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModInfo {
    /// The `.ko` file; `None` when the index does not know the module.
    pub path: Option<PathBuf>,
    /// Modules it needs (`modules.dep`), names normalised.
    pub deps: Vec<String>,
    /// Soft dependencies loaded before it (`softdep NAME pre:`).
    pub pre: Vec<String>,
    /// Soft dependencies loaded after it (`softdep NAME post:`).
    pub post: Vec<String>,
    /// Options from modprobe.d and the kernel command line.
    pub options: String,
    /// An `install` command configured for it, if any.
    pub install: Option<String>,
}

/// Where the plan gets module facts. libkmod implements it (`kmod::KmodIndex`); tests may
/// implement it over a table.
pub trait Index {
    /// Module names (normalised) an alias or name resolves to, as modprobe resolves it.
    fn lookup(&mut self, alias: &str) -> Result<Vec<String>, Error>;
    /// Facts about a module by its normalised name.
    fn module(&mut self, name: &str) -> Result<ModInfo, Error>;
    /// Whether a `blacklist NAME` line names it.
    fn blacklisted(&self, name: &str) -> bool;
}

/// Why one module must wait for another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// A `modules.dep` dependency: loading fails without it.
    Dep,
    /// `softdep X pre: Y`: Y first; X is loaded even if Y fails.
    SoftPre,
    /// `softdep Y post: X`: X after Y; X is loaded even if Y fails.
    SoftPost,
}

impl EdgeKind {
    /// A hard edge: if the prerequisite fails, the module is not tried.
    pub fn is_hard(self) -> bool {
        self == EdgeKind::Dep
    }
}

/// One prerequisite of a planned module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Edge {
    /// Index into [`Plan::modules`] of the module that must be live first.
    pub module: usize,
    /// Why.
    pub kind: EdgeKind,
}

/// One module to load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Planned {
    /// Normalised name.
    pub name: String,
    /// The `.ko` file.
    pub path: PathBuf,
    /// Options to insert it with.
    pub options: String,
    /// Modules that must be live (or have failed, for soft edges) before it is inserted.
    pub after: Vec<Edge>,
    /// What asked for it, for the report (`modalias ...`, `/etc/modules:3`, `dep of X`).
    pub wanted_by: Vec<String>,
    /// Expected load time, microseconds (learned, or a default).
    pub expected_us: u64,
    /// Its own expected time plus the longest chain of modules waiting on it: the scheduler
    /// starts the highest first, so long waits overlap the rest.
    pub priority_us: u64,
}

/// Why a module the hardware or a list asked for is not in the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason", content = "detail")]
pub enum SkipReason {
    /// Built into the kernel (`modules.builtin`).
    Builtin,
    /// Already loaded (`/proc/modules`).
    Loaded,
    /// A `blacklist` line names it and it was reached through an alias (as udev applies it).
    Blacklisted,
    /// It has an `install` command: left to modprobe, which runs such commands.
    InstallCommand(String),
    /// Neither a module in the index nor builtin.
    NotFound,
}

/// A module left out of the plan, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// Normalised name (or the name as given, when not found).
    pub name: String,
    /// Why.
    #[serde(flatten)]
    pub reason: SkipReason,
    /// What asked for it first.
    pub wanted_by: String,
}

/// A soft dependency left out because it would close a cycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedEdge {
    /// The module that was to wait.
    pub module: String,
    /// The module it was to wait for.
    pub after: String,
    /// The kind of the dropped edge.
    pub kind: EdgeKind,
}

/// The set of modules to load, as a dependency graph with priorities.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// Modules to load; edges index into this.
    pub modules: Vec<Planned>,
    /// Modules asked for but not to be loaded.
    pub skipped: Vec<Skipped>,
    /// Modaliases no module matches (most devices: buses, bridges, CPUs).
    pub unmatched: Vec<String>,
    /// Soft-dependency edges dropped to break cycles.
    pub dropped: Vec<DroppedEdge>,
    /// Problems that did not stop the plan (an unreadable or malformed list file).
    pub warnings: Vec<String>,
}

/// What the plan starts from besides the index.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// Modaliases and listed modules, in the order they were found.
    pub requests: Vec<Request>,
    /// Builtin module names (normalised).
    pub builtin: HashSet<String>,
    /// Loaded module names (normalised).
    pub loaded: HashSet<String>,
    /// Learned durations.
    pub durations: Durations,
    /// Problems met while reading the inputs, passed on to [`Plan::warnings`].
    pub warnings: Vec<String>,
}

struct Builder<'a> {
    index: &'a mut dyn Index,
    inputs: &'a Inputs,
    plan: Plan,
    by_name: HashMap<String, usize>,
    skipped: HashSet<String>,
    soft: Vec<(usize, usize, EdgeKind)>,
}

impl Builder<'_> {
    fn skip(&mut self, name: &str, reason: SkipReason, wanted_by: &str) {
        if self.skipped.insert(name.to_string()) {
            self.plan.skipped.push(Skipped {
                name: name.to_string(),
                reason,
                wanted_by: wanted_by.to_string(),
            });
        }
    }

    /// Adds a module and, depth first, all it needs; returns its index, or `None` when it
    /// is skipped (then nothing needs to wait for it).
    fn add(
        &mut self,
        name: &str,
        wanted_by: String,
        extra_options: &str,
    ) -> Result<Option<usize>, Error> {
        let name = normalize(name);
        if let Some(&i) = self.by_name.get(&name) {
            let m = &mut self.plan.modules[i];
            if !m.wanted_by.contains(&wanted_by) {
                m.wanted_by.push(wanted_by);
            }
            append_options(&mut m.options, extra_options);
            return Ok(Some(i));
        }
        if self.skipped.contains(&name) {
            return Ok(None);
        }
        if self.inputs.builtin.contains(&name) {
            self.skip(&name, SkipReason::Builtin, &wanted_by);
            return Ok(None);
        }
        if self.inputs.loaded.contains(&name) {
            self.skip(&name, SkipReason::Loaded, &wanted_by);
            return Ok(None);
        }
        let info = self.index.module(&name)?;
        let Some(path) = info.path.clone() else {
            self.skip(&name, SkipReason::NotFound, &wanted_by);
            return Ok(None);
        };
        if let Some(cmd) = info.install.clone() {
            self.skip(&name, SkipReason::InstallCommand(cmd), &wanted_by);
            return Ok(None);
        }
        let i = self.plan.modules.len();
        // Blacklisted through an alias, but named outright elsewhere: it is loaded after all.
        self.plan.skipped.retain(|s| s.name != name);
        let mut options = info.options.clone();
        append_options(&mut options, extra_options);
        self.plan.modules.push(Planned {
            name: name.clone(),
            path,
            options,
            after: Vec::new(),
            wanted_by: vec![wanted_by],
            expected_us: self.inputs.durations.expected_us(&name),
            priority_us: 0,
        });
        // Inserted before recursing, so a softdep loop back to this module ends here.
        self.by_name.insert(name.clone(), i);
        for dep in &info.deps {
            if let Some(j) = self.add(dep, format!("dep of {name}"), "")? {
                if j != i {
                    self.plan.modules[i].after.push(Edge {
                        module: j,
                        kind: EdgeKind::Dep,
                    });
                }
            }
        }
        for pre in &info.pre {
            if let Some(j) = self.add(pre, format!("softdep pre of {name}"), "")? {
                self.soft.push((i, j, EdgeKind::SoftPre));
            }
        }
        for post in &info.post {
            if let Some(j) = self.add(post, format!("softdep post of {name}"), "")? {
                self.soft.push((j, i, EdgeKind::SoftPost));
            }
        }
        Ok(Some(i))
    }

    /// Whether `to` can be reached from `from` along `after` edges (from waits, transitively,
    /// for to).
    fn waits_for(&self, from: usize, to: usize) -> bool {
        let mut seen = vec![false; self.plan.modules.len()];
        let mut stack = vec![from];
        while let Some(x) = stack.pop() {
            if x == to {
                return true;
            }
            if std::mem::replace(&mut seen[x], true) {
                continue;
            }
            stack.extend(self.plan.modules[x].after.iter().map(|e| e.module));
        }
        false
    }

    /// Adds the soft edges that keep the graph acyclic, in the order they were found, and
    /// records the others. Hard edges come from depmod, which refuses cycles.
    fn add_soft_edges(&mut self) {
        for (x, y, kind) in std::mem::take(&mut self.soft) {
            let dup = self.plan.modules[x].after.iter().any(|e| e.module == y);
            if dup {
                continue;
            }
            if x == y || self.waits_for(y, x) {
                self.plan.dropped.push(DroppedEdge {
                    module: self.plan.modules[x].name.clone(),
                    after: self.plan.modules[y].name.clone(),
                    kind,
                });
                continue;
            }
            self.plan.modules[x].after.push(Edge { module: y, kind });
        }
    }
}

fn append_options(options: &mut String, extra: &str) {
    let extra = extra.trim();
    if extra.is_empty() {
        return;
    }
    if !options.is_empty() {
        options.push(' ');
    }
    options.push_str(extra);
}

/// Builds the plan. Errors only when the index fails (not when a module is missing: that is
/// a skip).
pub fn build(index: &mut dyn Index, inputs: &Inputs) -> Result<Plan, Error> {
    let mut b = Builder {
        index,
        inputs,
        plan: Plan::default(),
        by_name: HashMap::new(),
        skipped: HashSet::new(),
        soft: Vec::new(),
    };
    let mut unmatched = BTreeSet::new();
    for req in &inputs.requests {
        let names = b.index.lookup(&req.name)?;
        let (wanted_by, alias_only) = match &req.source {
            Source::Modalias(path) => (format!("modalias {} ({})", req.name, path.display()), true),
            Source::List(path, line) => (format!("{}:{line}", path.display()), false),
        };
        if names.is_empty() {
            match req.source {
                Source::Modalias(_) => {
                    unmatched.insert(req.name.clone());
                }
                Source::List(..) => b.skip(&req.name, SkipReason::NotFound, &wanted_by),
            }
            continue;
        }
        for name in names {
            // udev applies the blacklist to what a modalias resolves to; modprobe (Debian's
            // /etc/modules loader) only to aliases, never to a module named outright.
            let by_alias = alias_only || name != normalize(&req.name);
            if by_alias && b.index.blacklisted(&name) {
                // Not through `skip`: a later request naming it outright still loads it.
                if !b.by_name.contains_key(&name) && !b.plan.skipped.iter().any(|s| s.name == name)
                {
                    b.plan.skipped.push(Skipped {
                        name: name.clone(),
                        reason: SkipReason::Blacklisted,
                        wanted_by: wanted_by.clone(),
                    });
                }
                continue;
            }
            b.add(&name, wanted_by.clone(), &req.options)?;
        }
    }
    b.add_soft_edges();
    let mut plan = b.plan;
    plan.unmatched = unmatched.into_iter().collect();
    plan.warnings = inputs.warnings.clone();
    compute_priorities(&mut plan);
    Ok(plan)
}

/// priority = own expected time + the largest priority among the modules waiting on it.
fn compute_priorities(plan: &mut Plan) {
    let n = plan.modules.len();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut pending: Vec<usize> = vec![0; n];
    for (i, m) in plan.modules.iter().enumerate() {
        for e in &m.after {
            dependents[e.module].push(i);
            pending[i] += 1;
        }
    }
    // Kahn's order, then walk it backwards so every dependent is done before its prerequisite.
    let mut order: Vec<usize> = (0..n).filter(|&i| pending[i] == 0).collect();
    let mut k = 0;
    while k < order.len() {
        let i = order[k];
        k += 1;
        for &d in &dependents[i] {
            pending[d] -= 1;
            if pending[d] == 0 {
                order.push(d);
            }
        }
    }
    for &i in order.iter().rev() {
        let tail = dependents[i]
            .iter()
            .map(|&d| plan.modules[d].priority_us)
            .max()
            .unwrap_or(0);
        // Saturating: a durations file may hold any number (a hostile or corrupt one),
        // and a wrapped sum would put the slowest chain last.
        plan.modules[i].priority_us = plan.modules[i].expected_us.saturating_add(tail);
    }
}

impl Plan {
    /// The order a single worker would insert the modules in (each step: the ready module
    /// with the highest priority), all loads assumed to succeed.
    pub fn order(&self) -> Vec<usize> {
        let mut s = crate::sched::Scheduler::new(self);
        let mut out = Vec::with_capacity(self.modules.len());
        while let Some(i) = s.take() {
            out.push(i);
            s.finish(i, true);
        }
        out
    }

    /// Index of a module by name.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.modules.iter().position(|m| m.name == name)
    }

    /// Skip reasons by name, for tests and reports.
    pub fn skip_reasons(&self) -> BTreeMap<&str, &SkipReason> {
        self.skipped
            .iter()
            .map(|s| (s.name.as_str(), &s.reason))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index over a table: name -> (deps, pre, post).
    #[derive(Default)]
    struct Table {
        mods: HashMap<String, ModInfo>,
        aliases: HashMap<String, Vec<String>>,
        blacklist: HashSet<String>,
    }

    impl Table {
        fn with(mut self, name: &str, deps: &[&str], pre: &[&str], post: &[&str]) -> Self {
            let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
            self.mods.insert(
                name.into(),
                ModInfo {
                    path: Some(format!("/m/{name}.ko").into()),
                    deps: s(deps),
                    pre: s(pre),
                    post: s(post),
                    ..Default::default()
                },
            );
            self
        }
    }

    impl Index for Table {
        fn lookup(&mut self, alias: &str) -> Result<Vec<String>, Error> {
            if let Some(v) = self.aliases.get(alias) {
                return Ok(v.clone());
            }
            Ok(self
                .mods
                .get(alias)
                .map(|_| vec![alias.to_string()])
                .unwrap_or_default())
        }
        fn module(&mut self, name: &str) -> Result<ModInfo, Error> {
            Ok(self.mods.get(name).cloned().unwrap_or_default())
        }
        fn blacklisted(&self, name: &str) -> bool {
            self.blacklist.contains(name)
        }
    }

    fn list(names: &[&str]) -> Inputs {
        Inputs {
            requests: names
                .iter()
                .enumerate()
                .map(|(n, x)| Request {
                    name: x.to_string(),
                    options: String::new(),
                    source: Source::List("/etc/modules".into(), n + 1),
                })
                .collect(),
            ..Default::default()
        }
    }

    fn names(plan: &Plan, order: &[usize]) -> Vec<String> {
        order
            .iter()
            .map(|&i| plan.modules[i].name.clone())
            .collect()
    }

    #[test]
    fn softdep_cycle_is_broken_and_recorded() {
        let mut t = Table::default()
            .with("a", &[], &["b"], &[])
            .with("b", &[], &["c"], &[])
            .with("c", &[], &["a"], &[]);
        let plan = build(&mut t, &list(&["a"])).unwrap();
        assert_eq!(plan.modules.len(), 3);
        assert_eq!(plan.dropped.len(), 1, "{:?}", plan.dropped);
        // Every module is still scheduled exactly once.
        let mut o = names(&plan, &plan.order());
        o.sort();
        assert_eq!(o, vec!["a", "b", "c"]);
    }

    #[test]
    fn softdep_against_a_hard_dep_drops_the_soft_edge() {
        // b needs a (hard); a softdep-pre on b would make a wait for b: a cycle.
        let mut t = Table::default()
            .with("a", &[], &["b"], &[])
            .with("b", &["a"], &[], &[]);
        let plan = build(&mut t, &list(&["a"])).unwrap();
        assert_eq!(
            plan.dropped,
            vec![DroppedEdge {
                module: "a".into(),
                after: "b".into(),
                kind: EdgeKind::SoftPre
            }]
        );
        assert_eq!(names(&plan, &plan.order()), vec!["a", "b"]);
    }

    #[test]
    fn self_softdep_is_dropped() {
        let mut t = Table::default().with("a", &[], &["a"], &[]);
        let plan = build(&mut t, &list(&["a"])).unwrap();
        assert_eq!(plan.modules.len(), 1);
        assert_eq!(plan.dropped.len(), 1);
        assert!(plan.modules[0].after.is_empty());
    }

    #[test]
    fn priority_carries_the_slow_dependent_to_its_prerequisites() {
        let mut t = Table::default()
            .with("usb_common", &[], &[], &[])
            .with("usbcore", &["usb_common"], &[], &[])
            .with("usb_storage", &["usbcore", "usb_common"], &[], &[])
            .with("e1000", &[], &[], &[]);
        let plan = build(&mut t, &list(&["e1000", "usb_storage"])).unwrap();
        let p = |n: &str| plan.modules[plan.find(n).unwrap()].priority_us;
        assert_eq!(p("usb_storage"), 1_000_000);
        assert_eq!(p("usbcore"), 1_005_000);
        assert_eq!(p("usb_common"), 1_010_000);
        assert_eq!(p("e1000"), 5_000);
        // e1000 was asked for first but waits: the chain to usb-storage goes first.
        assert_eq!(
            names(&plan, &plan.order()),
            vec!["usb_common", "usbcore", "usb_storage", "e1000"]
        );
    }

    #[test]
    fn blacklist_applies_to_aliases_not_to_names() {
        let mut t = Table::default().with("floppy", &[], &[], &[]);
        t.aliases
            .insert("acpi:PNP0700:".into(), vec!["floppy".into()]);
        t.blacklist.insert("floppy".into());
        let plan = build(&mut t, &list(&["acpi:PNP0700:"])).unwrap();
        assert!(plan.modules.is_empty());
        assert_eq!(plan.skip_reasons()["floppy"], &SkipReason::Blacklisted);
        let plan = build(&mut t, &list(&["floppy"])).unwrap();
        assert_eq!(plan.modules.len(), 1);
        // Both in one plan: the explicit name wins and the skip entry goes.
        let plan = build(&mut t, &list(&["acpi:PNP0700:", "floppy"])).unwrap();
        assert_eq!(plan.modules.len(), 1);
        assert!(plan.skipped.is_empty(), "{:?}", plan.skipped);
    }
}
