//! What one runlevel runs: [`Plan`] (tasks, dependencies, the path to the login, late
//! services, priorities) and the login target.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::*;
use crate::builtin::{self, Builtin};
use crate::durations::Durations;
use crate::graph::EdgeKind;
use crate::header::Keyword;
use crate::system::{Runlevel, System};
use crate::Diagnostic;

/// One script to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Script name.
    pub name: String,
    /// Its file (absolute, under the plan's root).
    pub path: PathBuf,
    /// `start` or `stop`.
    pub action: String,
    /// Runs alone, on the console.
    pub interactive: bool,
    /// The script itself needs the console (its header or insserv.conf), even where its
    /// built-in does not: a script run after its built-in failed gets the console.
    pub interactive_script: bool,
    /// Started after the login target, once idle.
    pub late: bool,
    /// Runlevel S, planned with the next runlevel: off the path to the login, so it
    /// starts at once but rcS returns without waiting for it ([`Plan::start_boot`]).
    pub beside: bool,
    /// Tasks that must end first.
    pub preds: Vec<usize>,
    /// Scripts of runlevel S that must have ended first: S may have returned before them
    /// ([`crate::boot::BootState`]).
    pub boot_preds: Vec<String>,
    /// Expected duration (ms) from earlier boots.
    pub weight_ms: u64,
    /// `weight_ms` was learned on earlier boots (not the default).
    pub learned: bool,
    /// Run as this built-in (the script itself if the built-in declines or fails).
    pub builtin: Option<Builtin>,
}

/// The tasks of one runlevel.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Runlevel label (`S`, `2`, ...).
    pub runlevel: String,
    /// `start` or `stop`.
    pub action: String,
    /// The tasks, by name.
    pub tasks: Vec<Task>,
    /// Problems found while planning (missing dependencies, cycles, configuration).
    pub diagnostics: Vec<Diagnostic>,
    /// The dependency cycles broken (also in `diagnostics`): printed on the console when
    /// the plan runs, since they change the order the headers ask for.
    pub cycles: Vec<Diagnostic>,
}

/// The scripts a blank-separated list of names and `$facilities` stands for.
fn resolve(sys: &System, token: &str, out: &mut BTreeSet<usize>, depth: usize) {
    let t = token.trim_start_matches('+');
    if depth > 16 || t.is_empty() {
        return;
    }
    if t.starts_with('$') {
        if let Some(defs) = sys.conf.facilities.get(&t.to_ascii_lowercase()) {
            for d in defs {
                for n in &d.names {
                    resolve(sys, n, out, depth + 1);
                }
            }
        }
        return;
    }
    if let Some(&i) = sys.providers.get(t) {
        out.insert(i);
    }
    if let Some(i) = script_index(sys, t) {
        out.insert(i);
    }
}

/// A script by file name: `System::scripts` is sorted by name.
fn script_index(sys: &System, name: &str) -> Option<usize> {
    sys.scripts
        .binary_search_by(|s| s.name.as_str().cmp(name))
        .ok()
}

/// The entries of a runlevel directory (name, path), sorted by name: link order. An
/// unreadable directory has none.
fn sorted_links(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The K links of a runlevel directory: script indices, in link order.
fn stop_links(sys: &System, rl: Runlevel) -> Vec<usize> {
    let dir = sys.root.join(rl.dir());
    let names = sorted_links(&dir);
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (name, path) in names {
        let b = name.as_bytes();
        if b.len() < 4 || b[0] != b'K' || !b[1].is_ascii_digit() || !b[2].is_ascii_digit() {
            continue;
        }
        let target = std::fs::read_link(&path)
            .ok()
            .and_then(|t| t.file_name().map(|f| f.to_string_lossy().into_owned()))
            .unwrap_or_else(|| name[3..].to_string());
        if let Some(i) = script_index(sys, &target) {
            if seen.insert(i) {
                out.push(i);
            }
        }
    }
    out
}

/// The header line behind an edge of a stop plan.
#[derive(Debug, Clone)]
struct StopOrigin {
    keyword: Keyword,
    file: PathBuf,
    line: usize,
    token: String,
}

impl StopOrigin {
    /// Which edge of a cycle goes first: `X-Stop-After` < `Should-Stop` < `Required-Stop`.
    fn strength(&self) -> u8 {
        match self.keyword {
            Keyword::RequiredStop => 2,
            Keyword::ShouldStop => 1,
            _ => 0,
        }
    }

    fn kind(&self) -> &'static str {
        match self.keyword {
            Keyword::RequiredStop => "required-stop",
            Keyword::ShouldStop => "should-stop",
            _ => "stop-after",
        }
    }
}

/// Breaks every cycle of a stop plan as the start graph does ([`crate::graph`]): take the
/// first remaining task by name, walk back through its first predecessor by name until a
/// task repeats; drop the loop's weakest edge (the first in path order on a tie) and say
/// so; repeat. `preds[x]`: the tasks that stop before `x`. Returns the diagnostics.
fn break_stop_cycles(
    names: &[&str],
    preds: &mut [BTreeSet<usize>],
    why: &BTreeMap<(usize, usize), StopOrigin>,
    rl: Runlevel,
) -> Vec<Diagnostic> {
    let n = names.len();
    let mut diags = Vec::new();
    // Each round removes one edge, so this ends; the bound only guards against a bug.
    for _ in 0..=why.len() {
        let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (x, ps) in preds.iter().enumerate() {
            for &p in ps {
                succs[p].push(x);
            }
        }
        let mut indeg: Vec<usize> = preds.iter().map(BTreeSet::len).collect();
        let mut stack: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
        let mut done = vec![false; n];
        while let Some(x) = stack.pop() {
            done[x] = true;
            for &y in &succs[x] {
                indeg[y] -= 1;
                if indeg[y] == 0 {
                    stack.push(y);
                }
            }
        }
        let Some(start) = (0..n).find(|&i| !done[i]) else {
            break;
        };
        let mut walk = vec![start];
        let mut pos = BTreeMap::from([(start, 0usize)]);
        let from = loop {
            let cur = walk[walk.len() - 1];
            // A task left over always has a predecessor left over: it is on or behind a cycle.
            let Some(&p) = preds[cur].iter().find(|&&p| !done[p]) else {
                return diags;
            };
            if let Some(&i) = pos.get(&p) {
                break i;
            }
            pos.insert(p, walk.len());
            walk.push(p);
        };
        let mut path: Vec<usize> = walk[from..].iter().rev().copied().collect();
        let min_at = (0..path.len()).min_by_key(|&i| path[i]).unwrap_or(0);
        path.rotate_left(min_at);
        path.push(path[0]);
        let mut weakest: Option<(u8, (usize, usize))> = None;
        for w in path.windows(2) {
            let k = why.get(&(w[0], w[1])).map_or(0, StopOrigin::strength);
            if weakest.is_none_or(|(bk, _)| k < bk) {
                weakest = Some((k, (w[0], w[1])));
            }
        }
        let Some((_, (a, b))) = weakest else {
            break;
        };
        preds[b].remove(&a);
        let shown: Vec<&str> = path.iter().map(|&i| names[i]).collect();
        let message = |kind: &str, token: &str| {
            format!(
                "dependency cycle {} in runlevel {} (stop): broken by dropping {} -> {} ({kind}, {token}): expected no cycle",
                shown.join(" -> "),
                rl.label(),
                names[a],
                names[b]
            )
        };
        diags.push(match why.get(&(a, b)) {
            Some(o) => Diagnostic::new(&o.file, Some(o.line), message(o.kind(), &o.token)),
            None => Diagnostic::new(&rl.dir(), None, message("stop", "")),
        });
    }
    diags
}

/// The login target of `cfg`: its `login` list, where `auto` stands for what the system
/// itself needs ([`crate::login::learn`]) and every display manager.
pub fn login_target(sys: &System, cfg: &Config) -> Vec<String> {
    let mut out = Vec::new();
    for t in &cfg.login {
        if t == "auto" {
            out.extend(crate::login::target(&crate::login::learn(&sys.root)));
            out.extend(cfg.display_managers.iter().cloned());
        } else {
            out.push(t.clone());
        }
    }
    out
}

/// What each node of `g` needs (its predecessors), `$all` edges and those `skip` says aside;
/// indexed once, so a walk is linear.
fn needs_of(
    g: &crate::graph::Graph,
    skip: impl Fn(&crate::graph::Edge) -> bool,
) -> Vec<Vec<usize>> {
    let mut needs: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    for e in g
        .active_edges()
        .filter(|e| e.kind() != EdgeKind::All && !skip(e))
    {
        needs[e.to].push(e.from);
    }
    needs
}

/// The nodes `targets` and everything they need, transitively.
fn reach(needs: &[Vec<usize>], targets: Vec<usize>) -> Vec<bool> {
    let mut path = vec![false; needs.len()];
    let mut stack = targets;
    while let Some(x) = stack.pop() {
        if !path[x] {
            path[x] = true;
            stack.extend(&needs[x]);
        }
    }
    path
}

/// The path to the login of a runlevel other than S: the login target's scripts that `g`
/// starts, the interactive ones, and everything they need ($all aside), minus the
/// configured late services nothing on the path needs. Everything when `g` starts none of
/// the target. Also returns the diagnostics about `late`.
fn login_path(sys: &System, g: &crate::graph::Graph, cfg: &Config) -> (Vec<bool>, Vec<Diagnostic>) {
    let n = g.nodes.len();
    let mut diagnostics = Vec::new();
    let mut want = BTreeSet::new();
    for t in &login_target(sys, cfg) {
        resolve(sys, t, &mut want, 0);
    }
    let mut dms = BTreeSet::new();
    for t in &cfg.display_managers {
        resolve(sys, t, &mut dms, 0);
    }
    if (0..n).any(|i| dms.contains(&g.nodes[i].script)) {
        for t in &cfg.display_manager_needs {
            resolve(sys, t, &mut want, 0);
        }
    }
    // Interactive scripts too: a late one would run in the detached child, whose
    // stdin is /dev/null, after the gettys have taken the console.
    let targets: Vec<usize> = (0..n)
        .filter(|&i| want.contains(&g.nodes[i].script) || g.nodes[i].interactive)
        .collect();
    let mut path = vec![true; n];
    if !targets.is_empty() {
        path = reach(&needs_of(g, |_| false), targets);
    }
    // Configured late services leave the path, unless something on it needs them.
    for name in &cfg.late {
        if let Some(i) = g.node(name) {
            let needed = g
                .active_edges()
                .any(|e| e.from == i && path[e.to] && e.to != i && e.kind() != EdgeKind::All);
            if needed && path[i] {
                diagnostics.push(Diagnostic::new(
                    Path::new(DEFAULT_CONFIG),
                    None,
                    format!(
                        "late service {name} is needed on the path to the login: started early"
                    ),
                ));
            } else if g.nodes[i].interactive && path[i] {
                diagnostics.push(Diagnostic::new(
                    Path::new(DEFAULT_CONFIG),
                    None,
                    format!(
                        "late service {name} is interactive (it needs the console): started early"
                    ),
                ));
            } else {
                path[i] = false;
            }
        }
    }
    (path, diagnostics)
}

/// udev beside the path (crate::udev): its node, and the scripts it frees, which no longer
/// wait for it.
struct UdevBeside {
    udev: Option<usize>,
    freed: BTreeSet<usize>,
}

impl UdevBeside {
    /// Whether `e` is a freed script's `Should-Start: udev`: the path does not wait for it.
    fn frees(&self, e: &crate::graph::Edge) -> bool {
        self.udev == Some(e.from) && self.freed.contains(&e.to) && e.kind() == EdgeKind::Should
    }
}

/// What one start plan is made from.
struct Planning<'a> {
    sys: &'a System,
    g: crate::graph::Graph,
    rl: Runlevel,
    cfg: &'a Config,
    durations: &'a Durations,
}

impl Planning<'_> {
    /// udev beside the path: not alone, and the scripts it frees not after it.
    fn udev_beside(&self, next: Option<Runlevel>, diagnostics: &mut Vec<Diagnostic>) -> UdevBeside {
        let (sys, g) = (self.sys, &self.g);
        let udev = if self.rl == Runlevel::S && self.cfg.udev_off_path {
            match crate::udev::off_path(&sys.root) {
                Ok(()) => g
                    .node("udev")
                    .filter(|_| g.node(crate::udev::FREED).is_some()),
                Err(why) => {
                    if g.node("udev").is_some() {
                        diagnostics.push(Diagnostic::new(
                            Path::new("etc/init.d/udev"),
                            None,
                            format!("udev stays on the path to the login: {why}"),
                        ));
                    }
                    None
                }
            }
        } else {
            None
        };
        let mut freed: BTreeSet<usize> = BTreeSet::new();
        if udev.is_some() {
            freed.extend(g.node(crate::udev::FREED));
            // The others matter only where S may end before udev does.
            if next.is_some() {
                let (more, kept) = crate::udev::also_freed(&sys.root);
                freed.extend(more.iter().filter_map(|m| g.node(m)));
                for why in kept {
                    diagnostics.push(Diagnostic::new(Path::new("etc/init.d/udev"), None, why));
                }
            }
        }
        UdevBeside { udev, freed }
    }

    /// The login target and everything it needs ($all edges aside: a `$all` script on
    /// the path waits for the path, not for late services); in runlevel S planned with
    /// `next`, what that path needs from S.
    fn path(
        &self,
        next: Option<Runlevel>,
        udev: &UdevBeside,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Vec<bool> {
        let (sys, g, cfg) = (self.sys, &self.g, self.cfg);
        let n = g.nodes.len();
        let mut path = vec![true; n];
        if self.rl != Runlevel::S {
            let (p, d) = login_path(sys, g, cfg);
            path = p;
            diagnostics.extend(d);
        } else if let Some(next) = next {
            path = self.boot_path(next, udev);
        }
        path
    }

    /// One graph: what the next runlevel's path needs from S, what must finish in S, and
    /// the interactive scripts (the console is S's until rcS returns).
    fn boot_path(&self, next: Runlevel, udev: &UdevBeside) -> Vec<bool> {
        let (sys, g, cfg) = (self.sys, &self.g, self.cfg);
        let n = g.nodes.len();
        let g2 = sys.graph(next);
        let (path2, _) = login_path(sys, &g2, cfg);
        let mut want: BTreeSet<usize> = BTreeSet::new();
        for &(node, script) in &g2.boot_needs {
            if path2[node] {
                want.insert(script);
            }
        }
        if (0..g2.nodes.len()).any(|i| path2[i] && g2.nodes[i].all) {
            want.extend(sys.enabled(Runlevel::S)); // `$all` on the path: all of S
        }
        for t in &cfg.finish_in_s {
            resolve(sys, t, &mut want, 0);
        }
        let targets = (0..n)
            .filter(|&i| {
                want.contains(&g.nodes[i].script)
                    || (g.nodes[i].interactive && udev.udev != Some(i))
            })
            .collect();
        reach(&needs_of(g, |e| udev.frees(e)), targets)
    }

    /// Each node's predecessors the runner waits for.
    fn preds(&self, path: &[bool], skip: &BTreeSet<usize>, udev: &UdevBeside) -> Vec<Vec<usize>> {
        let g = &self.g;
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
        for e in g.active_edges() {
            if !path[e.from] && path[e.to] {
                continue; // a $all edge or a freed udev edge: the path does not wait for it
            }
            if udev.frees(e) {
                continue;
            }
            if skip.contains(&g.nodes[e.from].script) {
                continue;
            }
            preds[e.to].push(e.from);
        }
        preds
    }

    /// Runlevel S's scripts task `i` names (all of them for `$all`): a runner after an S
    /// that ended early waits for those still running.
    fn boot_preds(&self, i: usize) -> Vec<String> {
        let (sys, g) = (self.sys, &self.g);
        if self.rl == Runlevel::S {
            return Vec::new();
        }
        let scripts: BTreeSet<usize> = if g.nodes[i].all {
            sys.enabled(Runlevel::S).into_iter().collect()
        } else {
            g.boot_needs
                .iter()
                .filter(|(node, _)| *node == i)
                .map(|&(_, s)| s)
                .collect()
        };
        scripts
            .into_iter()
            .map(|s| sys.scripts[s].name.clone())
            .collect()
    }

    /// One task per node not skipped, its predecessors renumbered.
    fn tasks(
        &self,
        action: &str,
        skip: &BTreeSet<usize>,
        path: &[bool],
        preds: &[Vec<usize>],
        udev: Option<usize>,
    ) -> Vec<Task> {
        let (sys, g, rl, durations) = (self.sys, &self.g, self.rl, self.durations);
        let keep: Vec<usize> = (0..g.nodes.len())
            .filter(|&i| !skip.contains(&g.nodes[i].script))
            .collect();
        let new_id: BTreeMap<usize, usize> =
            keep.iter().enumerate().map(|(a, &b)| (b, a)).collect();
        keep.iter()
            .map(|&i| {
                let node = &g.nodes[i];
                let builtin = builtin_of(sys, self.cfg, node.script, action);
                Task {
                    name: node.name.clone(),
                    path: sys.root.join(&sys.scripts[node.script].path),
                    action: action.to_string(),
                    // Debian 12's udev script reads the console only when run by hand; a
                    // built-in never does (checkroot.sh's only once its root is checked).
                    interactive: node.interactive && udev != Some(i) && builtin.is_none(),
                    interactive_script: node.interactive,
                    late: rl != Runlevel::S && !path[i],
                    beside: rl == Runlevel::S && !path[i],
                    preds: preds[i]
                        .iter()
                        .filter_map(|p| new_id.get(p).copied())
                        .collect(),
                    boot_preds: self.boot_preds(i),
                    weight_ms: durations.get(&node.name, action),
                    learned: durations
                        .map
                        .contains_key(&(node.name.clone(), action.to_string())),
                    builtin,
                }
            })
            .collect()
    }
}

impl Plan {
    /// The start plan of `rl`. `previous`: the runlevel the system comes from (scripts it
    /// started already run and are skipped, as startpar does); None at boot.
    pub fn start(
        sys: &System,
        rl: Runlevel,
        cfg: &Config,
        durations: &Durations,
        previous: Option<Runlevel>,
    ) -> Plan {
        Plan::start_inner(sys, rl, cfg, durations, previous, None)
    }

    /// The start plan of runlevel S planned with `next`, the runlevel init enters after
    /// it (one graph for the boot, docs/rc.md): the S scripts `next`'s path to the login
    /// needs, those of `finish-in-s` and the interactive ones, with all they need, are the
    /// path; every other S script is [`Task::beside`] it: it starts at once but rcS need not
    /// wait for it.
    pub fn start_boot(sys: &System, cfg: &Config, durations: &Durations, next: Runlevel) -> Plan {
        Plan::start_inner(sys, Runlevel::S, cfg, durations, None, Some(next))
    }

    fn start_inner(
        sys: &System,
        rl: Runlevel,
        cfg: &Config,
        durations: &Durations,
        previous: Option<Runlevel>,
        next: Option<Runlevel>,
    ) -> Plan {
        let p = Planning {
            sys,
            g: sys.graph(rl),
            rl,
            cfg,
            durations,
        };
        let mut diagnostics = p.g.diagnostics.clone();
        let skip: BTreeSet<usize> = match previous {
            Some(prev) if prev != rl && rl != Runlevel::S => {
                sys.enabled(prev).into_iter().collect()
            }
            _ => BTreeSet::new(),
        };
        let udev = p.udev_beside(next, &mut diagnostics);
        let path = p.path(next, &udev, &mut diagnostics);
        let preds = p.preds(&path, &skip, &udev);
        let action = "start".to_string();
        let tasks = p.tasks(&action, &skip, &path, &preds, udev.udev);
        Plan {
            runlevel: rl.label(),
            action,
            tasks,
            diagnostics,
            cycles: p.g.cycles.iter().map(|c| c.diagnostic.clone()).collect(),
        }
    }

    /// The stop plan of `rl` (its `K` links; for a runlevel other than 0 and 6, only those
    /// `previous` started), with `cfg`'s built-ins. A script stops before what its `Required-Stop` and
    /// `Should-Stop` name, and after what its `X-Stop-After` names.
    pub fn stop(
        sys: &System,
        rl: Runlevel,
        cfg: &Config,
        durations: &Durations,
        previous: Option<Runlevel>,
    ) -> Plan {
        let mut scripts = stop_links(sys, rl);
        if let (Some(p), Runlevel::Num(1..=5)) = (previous, rl) {
            let before: BTreeSet<usize> = sys.enabled(p).into_iter().collect();
            scripts.retain(|s| before.contains(s));
        }
        scripts.sort_by(|a, b| sys.scripts[*a].name.cmp(&sys.scripts[*b].name));
        let id: BTreeMap<usize, usize> = scripts.iter().enumerate().map(|(t, &s)| (s, t)).collect();
        let mut preds: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); scripts.len()];
        // Why each edge (earlier, later) exists: the strongest header line asking for it.
        let mut why: BTreeMap<(usize, usize), StopOrigin> = BTreeMap::new();
        for (me, &s) in scripts.iter().enumerate() {
            let Some(h) = sys.scripts[s].header.as_ref() else {
                continue;
            };
            for (kw, before) in [
                (Keyword::RequiredStop, true),
                (Keyword::ShouldStop, true),
                (Keyword::StopAfter, false),
            ] {
                let Some(f) = h.field(kw) else { continue };
                for w in f.words() {
                    let mut set = BTreeSet::new();
                    resolve(sys, w, &mut set, 0);
                    for o in set {
                        let Some(&other) = id.get(&o) else { continue };
                        if other == me {
                            continue;
                        }
                        let edge = if before {
                            (me, other) // `other` stops after me
                        } else {
                            (other, me)
                        };
                        preds[edge.1].insert(edge.0);
                        let origin = StopOrigin {
                            keyword: kw,
                            file: sys.scripts[s].path.clone(),
                            line: f.line,
                            token: w.to_string(),
                        };
                        let e = why.entry(edge).or_insert_with(|| origin.clone());
                        if origin.strength() > e.strength() {
                            *e = origin;
                        }
                    }
                }
            }
        }
        let names: Vec<&str> = scripts
            .iter()
            .map(|&s| sys.scripts[s].name.as_str())
            .collect();
        let cycles = break_stop_cycles(&names, &mut preds, &why, rl);
        let action = "stop".to_string();
        let tasks = scripts
            .iter()
            .enumerate()
            .map(|(t, &s)| Task {
                name: sys.scripts[s].name.clone(),
                path: sys.root.join(&sys.scripts[s].path),
                action: action.clone(),
                // A stop asks nothing of the console: `X-Interactive` and insserv.conf's
                // `<interactive>` (udev) are about starting. Run alone, udev's stop held
                // everything after it in priority, umountfs among them; startpar's stop
                // mode runs it beside the others.
                interactive: false,
                interactive_script: sys.is_interactive(s),
                late: false,
                beside: false,
                preds: preds[t].iter().copied().collect(),
                boot_preds: Vec::new(),
                weight_ms: durations.get(&sys.scripts[s].name, &action),
                learned: durations
                    .map
                    .contains_key(&(sys.scripts[s].name.clone(), action.clone())),
                // The shutdown's ends (`builtin::shutdown`) without the shell.
                builtin: builtin_of(sys, cfg, s, &action),
            })
            .collect();
        Plan {
            runlevel: rl.label(),
            action,
            tasks,
            diagnostics: cycles.clone(),
            cycles,
        }
    }

    /// Priority of each task: its weight plus the heaviest chain of same-phase tasks that
    /// wait for it (the longest remaining path to the login for tasks on the path).
    pub fn priorities(&self) -> Vec<u64> {
        let n = self.tasks.len();
        let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, t) in self.tasks.iter().enumerate() {
            for &p in &t.preds {
                succs[p].push(i);
            }
        }
        let mut memo: Vec<Option<u64>> = vec![None; n];
        // Recursive DFS with an on-stack mark: a cycle (stop plans break theirs, but this
        // must not loop whatever the plan) counts
        // its back edge as nothing instead of looping.
        fn cp(
            x: usize,
            tasks: &[Task],
            succs: &[Vec<usize>],
            memo: &mut Vec<Option<u64>>,
            on: &mut Vec<bool>,
        ) -> u64 {
            if let Some(v) = memo[x] {
                return v;
            }
            if on[x] {
                return 0;
            }
            on[x] = true;
            let mut best = 0;
            for &y in &succs[x] {
                if (tasks[y].late, tasks[y].beside) == (tasks[x].late, tasks[x].beside) {
                    best = best.max(cp(y, tasks, succs, memo, on));
                }
            }
            on[x] = false;
            // Saturating: weights come from the learned durations file.
            let v = tasks[x].weight_ms.saturating_add(best);
            memo[x] = Some(v);
            v
        }
        let mut on = vec![false; n];
        (0..n)
            .map(|i| cp(i, &self.tasks, &succs, &mut memo, &mut on))
            .collect()
    }
}

impl Plan {
    /// The plan as text, tasks in the serial order of their priorities: name, phase, expected
    /// ms, priority, what it waits for. For `bootprint-boot rc --dry-run`.
    pub fn describe(&self) -> String {
        let prio = self.priorities();
        let mut order: Vec<usize> = (0..self.tasks.len()).collect();
        order.sort_by_key(|&i| {
            let t = &self.tasks[i];
            (t.late, t.beside, std::cmp::Reverse(prio[i]), i)
        });
        let beside = self.tasks.iter().filter(|t| t.beside).count();
        let mut s = format!(
            "runlevel {} {}: {} tasks, {} late{}\n",
            self.runlevel,
            self.action,
            self.tasks.len(),
            self.tasks.iter().filter(|t| t.late).count(),
            if beside > 0 {
                format!(", {beside} beside the path (rcS returns without them)")
            } else {
                String::new()
            }
        );
        for i in order {
            let t = &self.tasks[i];
            let after: Vec<&str> = t
                .preds
                .iter()
                .map(|&p| self.tasks[p].name.as_str())
                .collect();
            s.push_str(&format!(
                "  {:<6} {:>7} ms  prio {:>7}  {}{}{}{}\n",
                if t.late {
                    "late"
                } else if t.beside {
                    "beside"
                } else {
                    "path"
                },
                t.weight_ms,
                prio[i],
                t.name,
                if t.interactive { " (interactive)" } else { "" },
                if t.builtin.is_some() {
                    " (built-in)"
                } else {
                    ""
                },
                if after.is_empty() {
                    String::new()
                } else {
                    format!("  after {}", after.join(" "))
                }
            ));
            if !t.boot_preds.is_empty() && !t.late {
                s.push_str(&format!("          and S's {}\n", t.boot_preds.join(" ")));
            }
        }
        for d in &self.diagnostics {
            s.push_str(&format!("  note: {d}\n"));
        }
        s
    }
}

/// The built-in the runner may run for script `s`'s `action` instead of the script, where
/// `cfg` allows built-ins.
fn builtin_of(sys: &System, cfg: &Config, s: usize, action: &str) -> Option<Builtin> {
    let script = &sys.scripts[s];
    let path = sys.root.join(&script.path);
    cfg.builtins
        .then(|| builtin::recognise(&sys.root, &script.name, &path, action).ok())
        .flatten()
}
