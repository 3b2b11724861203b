//! The runner: starts (or stops) the scripts of one runlevel in parallel, the path to the
//! login first, late services once the machine is idle. docs/rc.md describes the policy;
//! this module is its implementation.
//!
//! - [`Config`]: `/etc/bootprint/rc.conf` (login target, late services, timeouts, load and
//!   idle thresholds).
//! - [`Plan`]: the tasks of one runlevel with their dependencies, which of them are late,
//!   and their priorities (longest remaining path to the login, weighted by
//!   [`Durations`]).
//! - [`Runner`]: runs a plan: each script on its own pty, output printed whole and prefixed
//!   when it ends, interactive scripts alone on the console, per-script timeouts,
//!   concurrency following `procs_running + procs_blocked`, spans to a [`SpanLog`].
//! - [`run_runlevel`]: the whole of `bootprint-boot rc`, under a guard: any failure, in any
//!   phase, ends in [`crate::fallback`] (every script not yet started, serially in link
//!   order), so the runlevel is always run.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::builtin::{self, Builtin};
use crate::durations::Durations;
use crate::fallback::{self, Fault};
use crate::graph::EdgeKind;
use crate::header::Keyword;
use crate::spans::SpanLog;
use crate::sys;
use crate::system::{Runlevel, System};
use crate::Diagnostic;

/// Where the span log is copied at the end of each runlevel.
pub const KEEP_PATH: &str = "/var/lib/bootprint/rc-last.log";

/// Where the runner's configuration lives.
pub const DEFAULT_CONFIG: &str = "/etc/bootprint/rc.conf";

/// What the runner does, from `/etc/bootprint/rc.conf` (`key = value` lines, `#` comments;
/// lists are blank-separated). Every key is optional; docs/rc.md lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `login`: scripts or `$facilities` the login prompt needs (the login target); `auto`
    /// stands for what this system's logins need ([`crate::login`]).
    pub login: Vec<String>,
    /// `late`: scripts started only after the login target, once idle.
    pub late: Vec<String>,
    /// `timeout`: seconds one script may run before the boot goes on without it.
    pub timeout: Duration,
    /// `flush`: seconds after which a running script's complete output lines are printed.
    pub flush_after: Duration,
    /// `load-per-cpu`: start another script only while procs_running + procs_blocked
    /// (the runner itself not counted) is below this times the CPU count.
    pub load_per_cpu: f64,
    /// `max-parallel`: never more scripts at once (0: 4 per CPU).
    pub max_parallel: usize,
    /// `idle-busy`: CPU busy percent (all CPUs) below which the machine counts as idle.
    pub idle_busy_pct: f64,
    /// `idle-iowait`: iowait percent below which the disk counts as idle.
    pub idle_iowait_pct: f64,
    /// `idle-window`: seconds each idle measurement spans.
    pub idle_window: Duration,
    /// `late-max-wait`: seconds after the login target when late services start anyway.
    pub late_max_wait: Duration,
    /// `display-managers`: scripts (or `$facilities`) that are graphical login managers.
    pub display_managers: Vec<String>,
    /// `display-manager-needs`: scripts a display manager needs at run time although its
    /// LSB header does not say so; they join the login target when a display manager is
    /// started in the runlevel. LightDM and GDM block until a logind answers (seen on the
    /// test bed: Xorg started only once elogind was up), and Debian's lightdm header still
    /// names consolekit, logind's predecessor, as Should-Start.
    pub display_manager_needs: Vec<String>,
    /// `builtins`: run Debian's early-boot scripts that [`crate::builtin`] recognises as
    /// built-ins (`yes`, the default) or always as scripts (`no`).
    pub builtins: bool,
    /// `udev-off-path`: let udev run beside the path to the login where [`crate::udev`]
    /// finds it safe (`yes`, the default), or alone before it as Debian does (`no`).
    pub udev_off_path: bool,
}

/// The display managers Debian packages with an init script (`display-managers`).
const DISPLAY_MANAGERS: [&str; 9] = [
    "$x-display-manager",
    "gdm3",
    "lightdm",
    "sddm",
    "xdm",
    "lxdm",
    "slim",
    "nodm",
    "wdm",
];

impl Default for Config {
    fn default() -> Self {
        Config {
            // The text login's needs, and any display manager the runlevel starts.
            login: [
                "$local_fs",
                "$remote_fs",
                "$syslog",
                "$network",
                "$time",
                "rmnologin",
            ]
            .into_iter()
            .chain(DISPLAY_MANAGERS)
            .map(String::from)
            .collect(),
            late: Vec::new(),
            timeout: Duration::from_secs(120),
            flush_after: Duration::from_secs(10),
            load_per_cpu: 2.0,
            max_parallel: 0,
            idle_busy_pct: 30.0,
            idle_iowait_pct: 5.0,
            idle_window: Duration::from_millis(500),
            late_max_wait: Duration::from_secs(10),
            display_managers: DISPLAY_MANAGERS.map(String::from).to_vec(),
            display_manager_needs: ["elogind", "consolekit"].map(String::from).to_vec(),
            builtins: true,
            udev_off_path: true,
        }
    }
}

impl Config {
    /// Parses the configuration text; unknown keys and bad values are diagnostics naming
    /// `file` and the line, and leave the default.
    pub fn parse(text: &str, file: &Path) -> (Config, Vec<Diagnostic>) {
        let mut c = Config::default();
        let mut diags = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                diags.push(Diagnostic::new(
                    file,
                    Some(i + 1),
                    format!("expected `key = value`, found {line:?}"),
                ));
                continue;
            };
            let (k, v) = (k.trim(), v.trim());
            let secs = |v: &str| v.parse::<f64>().ok().filter(|s| *s >= 0.0 && s.is_finite());
            // Too big for a Duration (1e300) is a bad value, not a panic at boot.
            let dur = |v: &str| secs(v).and_then(|s| Duration::try_from_secs_f64(s).ok());
            let mut bad = |what: &str| {
                diags.push(Diagnostic::new(
                    file,
                    Some(i + 1),
                    format!("{k}: expected {what}, found {v:?}"),
                ))
            };
            match k {
                "login" => c.login = v.split_whitespace().map(String::from).collect(),
                "late" => c.late = v.split_whitespace().map(String::from).collect(),
                "display-managers" => {
                    c.display_managers = v.split_whitespace().map(String::from).collect()
                }
                "display-manager-needs" => {
                    c.display_manager_needs = v.split_whitespace().map(String::from).collect()
                }
                "timeout" | "flush" | "idle-window" | "late-max-wait" => match dur(v) {
                    Some(d) => {
                        match k {
                            "timeout" => c.timeout = d,
                            "flush" => c.flush_after = d,
                            "idle-window" => c.idle_window = d,
                            _ => c.late_max_wait = d,
                        }
                    }
                    None => bad("seconds (a number >= 0)"),
                },
                "load-per-cpu" | "idle-busy" | "idle-iowait" => match secs(v) {
                    Some(x) => match k {
                        "load-per-cpu" => c.load_per_cpu = x,
                        "idle-busy" => c.idle_busy_pct = x,
                        _ => c.idle_iowait_pct = x,
                    },
                    None => bad("a number >= 0"),
                },
                "builtins" | "udev-off-path" => match v {
                    "yes" | "1" | "true" | "no" | "0" | "false" => {
                        let on = matches!(v, "yes" | "1" | "true");
                        if k == "builtins" {
                            c.builtins = on
                        } else {
                            c.udev_off_path = on
                        }
                    }
                    _ => bad("yes or no"),
                },
                "max-parallel" => match v.parse() {
                    Ok(n) => c.max_parallel = n,
                    Err(_) => bad("a whole number"),
                },
                _ => diags.push(Diagnostic::new(
                    file,
                    Some(i + 1),
                    format!("unknown key {k:?}: expected login, late, display-managers, display-manager-needs, timeout, flush, load-per-cpu, max-parallel, idle-busy, idle-iowait, idle-window, late-max-wait, builtins or udev-off-path"),
                )),
            }
        }
        (c, diags)
    }

    /// Reads the file; a missing file gives the defaults.
    pub fn load(path: &Path) -> (Config, Vec<Diagnostic>) {
        match std::fs::read_to_string(path) {
            Ok(t) => Config::parse(&t, path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Config::default(), vec![]),
            Err(e) => (
                Config::default(),
                vec![Diagnostic::new(path, None, format!("cannot read: {e}"))],
            ),
        }
    }
}

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
    /// Tasks that must end first.
    pub preds: Vec<usize>,
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
        let g = sys.graph(rl);
        let n = g.nodes.len();
        let mut diagnostics = g.diagnostics.clone();
        let skip: BTreeSet<usize> = match previous {
            Some(p) if p != rl && rl != Runlevel::S => sys.enabled(p).into_iter().collect(),
            _ => BTreeSet::new(),
        };
        // The login target and everything it needs ($all edges aside: a `$all` script on
        // the path waits for the path, not for late services).
        let mut path = vec![true; n];
        if rl != Runlevel::S {
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
            if !targets.is_empty() {
                // What each node needs, $all aside; indexed once, so the walk is linear.
                let mut needs: Vec<Vec<usize>> = vec![Vec::new(); n];
                for e in g.active_edges().filter(|e| e.kind() != EdgeKind::All) {
                    needs[e.to].push(e.from);
                }
                path = vec![false; n];
                let mut stack = targets;
                while let Some(x) = stack.pop() {
                    if path[x] {
                        continue;
                    }
                    path[x] = true;
                    stack.extend(&needs[x]);
                }
            }
            // Configured late services leave the path, unless something on it needs them.
            for name in &cfg.late {
                if let Some(i) = g.node(name) {
                    let needed = g.active_edges().any(|e| {
                        e.from == i && path[e.to] && e.to != i && e.kind() != EdgeKind::All
                    });
                    if needed && path[i] {
                        diagnostics.push(Diagnostic::new(
                            Path::new(DEFAULT_CONFIG),
                            None,
                            format!("late service {name} is needed on the path to the login: started early"),
                        ));
                    } else if g.nodes[i].interactive && path[i] {
                        diagnostics.push(Diagnostic::new(
                            Path::new(DEFAULT_CONFIG),
                            None,
                            format!("late service {name} is interactive (it needs the console): started early"),
                        ));
                    } else {
                        path[i] = false;
                    }
                }
            }
        }
        // udev beside the path (crate::udev): not alone, and mountdevsubfs.sh not after it.
        let udev_beside = if rl == Runlevel::S && cfg.udev_off_path {
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
        let freed = g.node(crate::udev::FREED);
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
        for e in g.active_edges() {
            if !path[e.from] && path[e.to] {
                continue; // only a $all edge can get here: the path does not wait for late ones
            }
            if udev_beside == Some(e.from) && freed == Some(e.to) && e.kind() == EdgeKind::Should {
                continue;
            }
            if skip.contains(&g.nodes[e.from].script) {
                continue;
            }
            preds[e.to].push(e.from);
        }
        let keep: Vec<usize> = (0..n)
            .filter(|&i| !skip.contains(&g.nodes[i].script))
            .collect();
        let new_id: BTreeMap<usize, usize> =
            keep.iter().enumerate().map(|(a, &b)| (b, a)).collect();
        let action = "start".to_string();
        let builtin_of = |i: usize| {
            let node = &g.nodes[i];
            let path = sys.root.join(&sys.scripts[node.script].path);
            cfg.builtins
                .then(|| builtin::recognise(&sys.root, &node.name, &path, "start").ok())
                .flatten()
        };
        let tasks = keep
            .iter()
            .map(|&i| {
                let node = &g.nodes[i];
                let builtin = builtin_of(i);
                Task {
                    name: node.name.clone(),
                    path: sys.root.join(&sys.scripts[node.script].path),
                    action: action.clone(),
                    // Debian 12's udev script reads the console only when run by hand; a
                    // built-in never does (checkroot.sh's only once its root is checked).
                    interactive: node.interactive && udev_beside != Some(i) && builtin.is_none(),
                    interactive_script: node.interactive,
                    late: !path[i],
                    preds: preds[i]
                        .iter()
                        .filter_map(|p| new_id.get(p).copied())
                        .collect(),
                    weight_ms: durations.get(&node.name, &action),
                    learned: durations
                        .map
                        .contains_key(&(node.name.clone(), action.clone())),
                    builtin,
                }
            })
            .collect();
        Plan {
            runlevel: rl.label(),
            action,
            tasks,
            diagnostics,
            cycles: g.cycles.iter().map(|c| c.diagnostic.clone()).collect(),
        }
    }

    /// The stop plan of `rl` (its `K` links; for a runlevel other than 0 and 6, only those
    /// `previous` started). A script stops before what its `Required-Stop` and
    /// `Should-Stop` name, and after what its `X-Stop-After` names.
    pub fn stop(
        sys: &System,
        rl: Runlevel,
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
                interactive: sys.is_interactive(s),
                interactive_script: sys.is_interactive(s),
                late: false,
                preds: preds[t].iter().copied().collect(),
                weight_ms: durations.get(&sys.scripts[s].name, &action),
                learned: durations
                    .map
                    .contains_key(&(sys.scripts[s].name.clone(), action.clone())),
                builtin: None,
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
                if tasks[y].late == tasks[x].late {
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
        order.sort_by_key(|&i| (self.tasks[i].late, std::cmp::Reverse(prio[i]), i));
        let mut s = format!(
            "runlevel {} {}: {} tasks, {} late\n",
            self.runlevel,
            self.action,
            self.tasks.len(),
            self.tasks.iter().filter(|t| t.late).count()
        );
        for i in order {
            let t = &self.tasks[i];
            let after: Vec<&str> = t
                .preds
                .iter()
                .map(|&p| self.tasks[p].name.as_str())
                .collect();
            s.push_str(&format!(
                "  {:<5} {:>7} ms  prio {:>7}  {}{}{}{}\n",
                if t.late { "late" } else { "path" },
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
        }
        for d in &self.diagnostics {
            s.push_str(&format!("  note: {d}\n"));
        }
        s
    }
}

/// `/proc/stat` as the runner uses it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// Sum of all `cpu` jiffies.
    pub total: u64,
    /// user + nice + system + irq + softirq + steal.
    pub busy: u64,
    /// iowait.
    pub iowait: u64,
    /// `procs_running`.
    pub running: u64,
    /// `procs_blocked`.
    pub blocked: u64,
}

impl ProcStat {
    /// Parses `/proc/stat` text. Pure.
    pub fn parse(text: &str) -> ProcStat {
        let mut s = ProcStat::default();
        for line in text.lines() {
            let mut w = line.split_whitespace();
            match w.next() {
                Some("cpu") => {
                    let v: Vec<u64> = w.filter_map(|x| x.parse().ok()).collect();
                    let at = |i: usize| v.get(i).copied().unwrap_or(0);
                    // user nice system idle iowait irq softirq steal (guest is in user);
                    // saturating, so absurd counters cannot overflow the sums.
                    let sum = |fields: &[usize]| {
                        fields
                            .iter()
                            .fold(0u64, |acc, &i| acc.saturating_add(at(i)))
                    };
                    s.total = sum(&[0, 1, 2, 3, 4, 5, 6, 7]);
                    s.busy = sum(&[0, 1, 2, 5, 6, 7]);
                    s.iowait = at(4);
                }
                Some("procs_running") => {
                    s.running = w.next().and_then(|x| x.parse().ok()).unwrap_or(0)
                }
                Some("procs_blocked") => {
                    s.blocked = w.next().and_then(|x| x.parse().ok()).unwrap_or(0)
                }
                _ => {}
            }
        }
        s
    }

    /// Reads `<proc>/stat`; unreadable counts as an empty (idle) machine.
    pub fn read(proc_dir: &Path) -> ProcStat {
        std::fs::read_to_string(proc_dir.join("stat"))
            .map(|t| ProcStat::parse(&t))
            .unwrap_or_default()
    }
}

/// Whether one more script may start: always when none runs; never at `max_parallel`;
/// otherwise while the machine's load (runnable and blocked tasks, the runner itself not
/// counted) is below `load_per_cpu * cpus`. Pure.
pub fn may_start(running: usize, stat: &ProcStat, cfg: &Config, cpus: usize) -> bool {
    let max = if cfg.max_parallel == 0 {
        4 * cpus.max(1)
    } else {
        cfg.max_parallel
    };
    if running == 0 {
        return true;
    }
    if running >= max {
        return false;
    }
    let load = stat.running.saturating_sub(1).saturating_add(stat.blocked);
    (load as f64) < cfg.load_per_cpu * cpus.max(1) as f64
}

/// Whether the interval between two samples was idle under `cfg`'s thresholds. Pure.
pub fn was_idle(a: &ProcStat, b: &ProcStat, cfg: &Config) -> bool {
    let total = b.total.saturating_sub(a.total);
    if total == 0 {
        return false;
    }
    let busy = b.busy.saturating_sub(a.busy) as f64 * 100.0 / total as f64;
    let io = b.iowait.saturating_sub(a.iowait) as f64 * 100.0 / total as f64;
    busy < cfg.idle_busy_pct && io < cfg.idle_iowait_pct && b.blocked == 0
}

/// How a script ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0.
    Ok,
    /// LSB exit 5: program not installed.
    NotInstalled,
    /// LSB exit 6: program not configured.
    NotConfigured,
    /// Any other exit status.
    Failed,
    /// Killed by a signal.
    Signal,
    /// Still running at its timeout: the boot went on without it.
    TimedOut,
    /// Could not be started.
    SpawnFailed,
}

impl Outcome {
    /// Name used in the span log.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::NotInstalled => "not_installed",
            Outcome::NotConfigured => "not_configured",
            Outcome::Failed => "failed",
            Outcome::Signal => "signal",
            Outcome::TimedOut => "timed_out",
            Outcome::SpawnFailed => "spawn_failed",
        }
    }

    /// From an exit code (LSB: 0 ok, 5 not installed, 6 not configured).
    pub fn from_exit(code: i32) -> Outcome {
        match code {
            0 => Outcome::Ok,
            5 => Outcome::NotInstalled,
            6 => Outcome::NotConfigured,
            _ => Outcome::Failed,
        }
    }
}

/// One task's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskResult {
    /// Exit code, if it exited.
    pub exit: Option<i32>,
    /// How it ended.
    pub outcome: Outcome,
    /// CLOCK_BOOTTIME at start and end.
    pub start_ns: u64,
    /// See `start_ns`.
    pub end_ns: u64,
}

/// Where the runner looks and what it passes on.
#[derive(Debug, Clone)]
pub struct Options {
    /// The proc file system (default `/proc`).
    pub proc_dir: PathBuf,
    /// CPUs, for the load limit.
    pub cpus: usize,
    /// `PREVLEVEL` for the scripts (`N` at boot).
    pub prevlevel: String,
    /// A failure to force (`bootprint.rc.fault=`): [`Fault::Run`] makes the parallel run
    /// panic once its first script has started. Other faults are not the runner's.
    pub fault: Option<Fault>,
    /// The program that runs built-ins (`bootprint-boot`, as `PROGRAM rc-builtin SCRIPT
    /// ACTION`); None: every task runs as its script.
    pub builtin_program: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            proc_dir: PathBuf::from("/proc"),
            cpus: sys::cpu_count(),
            prevlevel: "N".into(),
            fault: None,
            builtin_program: None,
        }
    }
}

struct Running {
    task: usize,
    /// The task runs as its built-in (a [`builtin::DECLINED`] exit runs the script).
    builtin: bool,
    /// It has the console and runs alone.
    alone: bool,
    child: Child,
    master: Option<OwnedFd>,
    buf: Vec<u8>,
    start_ns: u64,
    started: Instant,
    last_flush: Instant,
}

/// Runs a [`Plan`]. Never panics out of [`Runner::run_phase`]: a failure inside falls
/// back to running what is left serially.
pub struct Runner<'a> {
    /// The plan.
    pub plan: &'a Plan,
    cfg: &'a Config,
    opts: Options,
    log: &'a mut SpanLog,
    out: &'a mut dyn Write,
    prio: Vec<u64>,
    /// Per task: its result once it ended (or timed out).
    pub results: Vec<Option<TaskResult>>,
    started: Vec<bool>,
    waited_for: Vec<Option<usize>>,
    running: Vec<Running>,
    /// Per task: its built-in declined or failed, so it runs as the script.
    builtin_failed: Vec<bool>,
    /// Timed-out scripts, sent SIGTERM, whose process group may still be alive.
    orphans: Vec<Orphan>,
    /// [`Fault::Run`] has fired (once per runner).
    fault_fired: bool,
}

/// How long a timed-out script's process group has between SIGTERM and SIGKILL.
pub const KILL_DELAY: Duration = Duration::from_secs(5);

/// A timed-out script: its process group (its own session) and, until reaped, the script.
struct Orphan {
    pgid: u32,
    child: Option<Child>,
    termed: Instant,
}

impl<'a> Runner<'a> {
    /// A runner writing spans to `log` and script output to `out` (the console).
    pub fn new(
        plan: &'a Plan,
        cfg: &'a Config,
        opts: Options,
        log: &'a mut SpanLog,
        out: &'a mut dyn Write,
    ) -> Runner<'a> {
        let n = plan.tasks.len();
        let prio = plan.priorities();
        Runner {
            plan,
            cfg,
            opts,
            log,
            out,
            prio,
            results: vec![None; n],
            started: vec![false; n],
            waited_for: vec![None; n],
            running: Vec::new(),
            builtin_failed: vec![false; n],
            orphans: Vec::new(),
            fault_fired: false,
        }
    }

    fn rl_kv(&self) -> Vec<(&'static str, String)> {
        vec![
            ("runlevel", self.plan.runlevel.clone()),
            ("action", self.plan.action.clone()),
        ]
    }

    /// Logs the beginning of the run (task counts).
    pub fn begin(&mut self) {
        let late = self.plan.tasks.iter().filter(|t| t.late).count();
        let mut kv = self.rl_kv();
        kv.push(("tasks", self.plan.tasks.len().to_string()));
        kv.push(("late", late.to_string()));
        // How many priorities rest on durations from earlier boots rather than the default.
        let learned = self.plan.tasks.iter().filter(|t| t.learned).count();
        kv.push(("learned", learned.to_string()));
        self.log.event(sys::boottime_ns(), "rc_begin", &kv);
    }

    /// Whether there are late tasks.
    pub fn has_late(&self) -> bool {
        self.plan.tasks.iter().any(|t| t.late)
    }

    /// Runs every task whose `late` flag equals `late`, in parallel; returns when they have
    /// all ended (or timed out). On an internal failure, runs the rest serially.
    pub fn run_phase(&mut self, late: bool) {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.phase(late)));
        if let Err(p) = r {
            let msg = panic_message(p.as_ref());
            let _ = writeln!(
                self.out,
                "bootprint rc: runlevel {}: the parallel run failed ({msg}): running the rest serially",
                self.plan.runlevel
            );
            let mut kv = self.rl_kv();
            kv.push(("reason", "run".into()));
            kv.push(("error", msg));
            self.log.event(sys::boottime_ns(), "rc_fallback", &kv);
            self.serial_rest(Some(late));
            self.settle_orphans();
        }
        if !late {
            let kv = self.rl_kv();
            self.log.event(sys::boottime_ns(), "rc_reached", &kv);
        }
    }

    fn pred_done(&self, t: usize) -> bool {
        self.plan.tasks[t]
            .preds
            .iter()
            .all(|&p| self.results[p].is_some())
    }

    fn phase(&mut self, late: bool) {
        let mine: Vec<usize> = (0..self.plan.tasks.len())
            .filter(|&i| self.plan.tasks[i].late == late)
            .collect();
        loop {
            self.reap();
            if mine.iter().all(|&i| self.results[i].is_some()) {
                break;
            }
            // Start what is ready, best first, while the load allows.
            let interactive_running = self.running.iter().any(|r| r.alone);
            if !interactive_running {
                let mut ready: Vec<usize> = mine
                    .iter()
                    .copied()
                    .filter(|&i| !self.started[i] && self.pred_done(i))
                    .collect();
                ready.sort_by_key(|&i| (std::cmp::Reverse(self.prio[i]), i));
                if ready.is_empty() && self.running.is_empty() {
                    // Nothing ready, nothing running, work left: a dependency that can
                    // never end (a cycle in a stop plan). Release the best waiting task.
                    if let Some(&i) = mine
                        .iter()
                        .filter(|&&i| !self.started[i])
                        .max_by_key(|&&i| (self.prio[i], std::cmp::Reverse(i)))
                    {
                        ready.push(i);
                    }
                }
                for i in ready {
                    let t = &self.plan.tasks[i];
                    if t.interactive {
                        if self.running.is_empty() {
                            self.spawn(i);
                        }
                        break; // alone: nothing else starts with or after it this round
                    }
                    let stat = ProcStat::read(&self.opts.proc_dir);
                    if !may_start(self.running.len(), &stat, self.cfg, self.opts.cpus) {
                        break;
                    }
                    self.spawn(i);
                    if self.opts.fault == Some(Fault::Run) && !self.fault_fired {
                        self.fault_fired = true;
                        panic!("{}", Fault::Run.message());
                    }
                }
            }
            // Wait for output or a short tick (child exits are polled).
            let fds: Vec<i32> = self
                .running
                .iter()
                .filter_map(|r| r.master.as_ref().map(|m| m.as_raw_fd()))
                .collect();
            sys::poll_read(&fds, 20);
            for k in 0..self.running.len() {
                let r = &mut self.running[k];
                if let Some(m) = &r.master {
                    if !sys::read_available(m.as_raw_fd(), &mut r.buf) {
                        r.master = None;
                    }
                }
            }
            self.flush_long();
            self.timeouts();
        }
        // Nothing that timed out outlives the phase: the rest of the kill delay, then SIGKILL.
        self.settle_orphans();
    }

    fn spawn(&mut self, i: usize) {
        self.started[i] = true;
        let t = &self.plan.tasks[i];
        // The dependency whose end made this task ready: the one that ended last.
        let waited = t
            .preds
            .iter()
            .copied()
            .filter(|&p| self.results[p].is_some())
            .max_by_key(|&p| self.results[p].as_ref().map(|r| r.end_ns));
        self.waited_for[i] = waited;
        let as_builtin = match (&t.builtin, &self.opts.builtin_program) {
            (Some(_), Some(p)) if !self.builtin_failed[i] => Some(p.clone()),
            _ => None,
        };
        let mut cmd = match &as_builtin {
            Some(program) => {
                let mut c = Command::new(program);
                c.arg("rc-builtin").arg(&t.name).arg(&t.action);
                if self.opts.fault == Some(Fault::Builtin) {
                    c.env(builtin::FAULT_ENV, "1");
                }
                c
            }
            None => fallback::command(&t.path, &t.name, &t.action),
        };
        cmd.env("RUNLEVEL", &self.plan.runlevel)
            .env("PREVLEVEL", &self.opts.prevlevel);
        let mut master = None;
        // A script whose built-in failed needs the console if the script itself does
        // (checkroot.sh's maintenance shell), even with others running.
        let alone = t.interactive || (self.builtin_failed[i] && t.interactive_script);
        if !alone {
            if let Ok((m, s)) = sys::open_pty() {
                if let (Ok(a), Ok(b)) = (s.try_clone(), s.try_clone()) {
                    cmd.stdin(Stdio::from(a))
                        .stdout(Stdio::from(b))
                        .stderr(Stdio::from(s));
                    master = Some(m);
                }
            }
            // SAFETY note lives in sys::new_session; pre_exec runs it in the child.
            new_session_on_exec(&mut cmd);
        } else {
            console_stdout(&mut cmd);
        }
        let start_ns = sys::boottime_ns();
        let spawned = cmd.spawn();
        drop(cmd); // closes our copies of the pty slave
        let mut kv = self.task_kv(i);
        kv.push((
            "waited_for",
            waited
                .map(|p| self.plan.tasks[p].name.clone())
                .unwrap_or_default(),
        ));
        if as_builtin.is_some() {
            kv.push(("builtin", "1".into()));
        }
        match spawned {
            Ok(child) => {
                kv.push(("pid", child.id().to_string()));
                self.log.event(start_ns, "rc_start", &kv);
                let now = Instant::now();
                self.running.push(Running {
                    task: i,
                    builtin: as_builtin.is_some(),
                    alone,
                    child,
                    master,
                    buf: Vec::new(),
                    start_ns,
                    started: now,
                    last_flush: now,
                });
            }
            Err(e) => {
                self.log.event(start_ns, "rc_start", &kv);
                let _ = writeln!(self.out, "{}: cannot start: {e}", t.name);
                self.finish(i, None, Outcome::SpawnFailed, start_ns);
            }
        }
    }

    fn task_kv(&self, i: usize) -> Vec<(&'static str, String)> {
        let t = &self.plan.tasks[i];
        vec![
            ("script", t.name.clone()),
            ("action", t.action.clone()),
            ("runlevel", self.plan.runlevel.clone()),
            ("late", if t.late { "1" } else { "0" }.into()),
        ]
    }

    fn finish(&mut self, i: usize, exit: Option<i32>, outcome: Outcome, start_ns: u64) {
        let end_ns = sys::boottime_ns();
        let mut kv = self.task_kv(i);
        kv.extend(end_fields(exit, outcome));
        self.log.event(end_ns, "rc_end", &kv);
        self.results[i] = Some(TaskResult {
            exit,
            outcome,
            start_ns,
            end_ns,
        });
    }

    fn print_lines(&mut self, name: &str, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let mut s = String::new();
        for line in text.split('\n') {
            let line = line.trim_end_matches('\r');
            if line.is_empty() {
                continue;
            }
            s.push_str(name);
            s.push_str(": ");
            s.push_str(line);
            s.push('\n');
        }
        if !s.is_empty() {
            let _ = self.out.write_all(s.as_bytes());
            let _ = self.out.flush();
        }
    }

    fn reap(&mut self) {
        let mut k = 0;
        while k < self.running.len() {
            let status = match self.running[k].child.try_wait() {
                Ok(Some(st)) => Some(st),
                Ok(None) => None,
                Err(_) => None,
            };
            let Some(st) = status else {
                k += 1;
                continue;
            };
            let (r, _) = self.retire(k);
            if r.builtin && st.code() != Some(0) {
                // The built-in declined or failed (or crashed): the script does the work,
                // and being idempotent, mends whatever the built-in left half done.
                let mut kv = self.task_kv(r.task);
                kv.push(("exit", st.code().map(|c| c.to_string()).unwrap_or_default()));
                self.log.event(sys::boottime_ns(), "rc_builtin_failed", &kv);
                self.builtin_failed[r.task] = true;
                self.spawn(r.task);
                continue;
            }
            let (exit, outcome) = match (st.code(), st.signal()) {
                (Some(c), _) => (Some(c), Outcome::from_exit(c)),
                _ => (None, Outcome::Signal),
            };
            let start_ns = r.start_ns;
            self.finish(r.task, exit, outcome, start_ns);
        }
    }

    /// Takes a script that ended (or is being given up on) out of the running set and prints
    /// what is left of its output; returns it and its name.
    fn retire(&mut self, k: usize) -> (Running, String) {
        let mut r = self.running.swap_remove(k);
        if let Some(m) = r.master.take() {
            sys::read_available(m.as_raw_fd(), &mut r.buf);
        }
        let name = self.plan.tasks[r.task].name.clone();
        let buf = std::mem::take(&mut r.buf);
        self.print_lines(&name, &buf);
        (r, name)
    }

    fn flush_long(&mut self) {
        let after = self.cfg.flush_after;
        for k in 0..self.running.len() {
            let r = &mut self.running[k];
            if r.last_flush.elapsed() < after {
                continue;
            }
            r.last_flush = Instant::now();
            let Some(cut) = r.buf.iter().rposition(|&b| b == b'\n') else {
                continue;
            };
            let head: Vec<u8> = r.buf.drain(..=cut).collect();
            let name = self.plan.tasks[r.task].name.clone();
            self.print_lines(&name, &head);
        }
    }

    fn timeouts(&mut self) {
        let limit = self.cfg.timeout;
        let mut k = 0;
        while k < self.running.len() {
            // An interactive script may be waiting for someone at the console (a passphrase,
            // fsck's question): it is not timed out.
            let interactive = self.plan.tasks[self.running[k].task].interactive;
            if interactive || self.running[k].started.elapsed() < limit {
                k += 1;
                continue;
            }
            let (r, name) = self.retire(k);
            let _ = writeln!(
                self.out,
                "{name}: timed out after {:.0} s; the boot goes on without it",
                limit.as_secs_f64()
            );
            // Its own session, so its process group is the script and what it started.
            sys::kill_group(r.child.id(), sys::SIGTERM);
            let start_ns = r.start_ns;
            self.finish(r.task, None, Outcome::TimedOut, start_ns);
            self.orphans.push(Orphan {
                pgid: r.child.id(),
                child: Some(r.child),
                termed: Instant::now(),
            });
        }
        self.tend_orphans(false);
    }

    /// Reaps timed-out scripts and forgets a group once it is empty; a group still alive
    /// [`KILL_DELAY`] after its SIGTERM (or at once when `kill_now`) gets SIGKILL and is
    /// forgotten. The group, not only the script: what it started and left behind in its
    /// session may ignore SIGTERM too.
    fn tend_orphans(&mut self, kill_now: bool) {
        self.orphans.retain_mut(|o| {
            if let Some(c) = &mut o.child {
                // Exited (reaped now) or not our child: either way its pid is done with.
                if !matches!(c.try_wait(), Ok(None)) {
                    o.child = None;
                }
            }
            // A group id stays reserved while the group has members, so this cannot hit a
            // stranger: with the leader reaped and the group empty, kill says ESRCH.
            if !sys::group_alive(o.pgid) {
                return false;
            }
            if kill_now || o.termed.elapsed() >= KILL_DELAY {
                sys::kill_group(o.pgid, sys::SIGKILL);
                if let Some(c) = &mut o.child {
                    let _ = c.try_wait();
                }
                return false;
            }
            true
        });
    }

    /// Waits (at most [`KILL_DELAY`]) until every timed-out group has ended or been
    /// SIGKILLed: the runner never returns, nor forks its late child, with one alive.
    fn settle_orphans(&mut self) {
        loop {
            self.tend_orphans(false);
            if self.orphans.is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the machine is idle (per the configuration) or the maximum wait passed;
    /// logs `rc_late` and returns the reason (`idle` or `max_wait`).
    pub fn wait_idle(&mut self) -> &'static str {
        let t0 = Instant::now();
        let mut prev = ProcStat::read(&self.opts.proc_dir);
        let reason = loop {
            let left = self.cfg.late_max_wait.saturating_sub(t0.elapsed());
            if left.is_zero() {
                break "max_wait";
            }
            // One measurement never outlasts the maximum wait.
            std::thread::sleep(self.cfg.idle_window.min(left));
            let cur = ProcStat::read(&self.opts.proc_dir);
            if was_idle(&prev, &cur, self.cfg) {
                break "idle";
            }
            prev = cur;
        };
        let mut kv = self.rl_kv();
        kv.push(("reason", reason.into()));
        kv.push(("waited_ms", t0.elapsed().as_millis().to_string()));
        self.log.event(sys::boottime_ns(), "rc_late", &kv);
        reason
    }

    /// Logs the end of the run.
    pub fn done(&mut self) {
        self.settle_orphans();
        let kv = self.rl_kv();
        self.log.event(sys::boottime_ns(), "rc_done", &kv);
    }

    /// The fallback: waits for what runs (bounded by its timeout), then runs every task not
    /// yet started, one at a time with the console, in plan priority order (dependencies
    /// first where known).
    pub fn serial_rest(&mut self, late: Option<bool>) {
        while !self.running.is_empty() {
            let mut r = self.running.swap_remove(0);
            let interactive = self.plan.tasks[r.task].interactive;
            let deadline = (!interactive).then(|| r.started + self.cfg.timeout);
            // Keep draining its pty: a script blocked on a full pty would never end.
            let (child, master, buf) = (&mut r.child, &r.master, &mut r.buf);
            let (exit, outcome) =
                fallback::wait_foreground(child, deadline, !interactive, &mut || {
                    if let Some(m) = master {
                        sys::read_available(m.as_raw_fd(), buf);
                    }
                });
            let start = r.start_ns;
            let task = r.task;
            self.running.push(r);
            let last = self.running.len() - 1;
            self.retire(last);
            self.finish(task, exit, outcome, start);
        }
        let mut order: Vec<usize> = (0..self.plan.tasks.len())
            .filter(|&i| !self.started[i] && late.is_none_or(|l| self.plan.tasks[i].late == l))
            .collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(self.prio[i]), i));
        // Dependencies first: repeatedly take the first whose predecessors are done.
        while !order.is_empty() {
            let pos = order.iter().position(|&i| self.pred_done(i)).unwrap_or(0);
            let i = order.remove(pos);
            self.started[i] = true;
            let t = &self.plan.tasks[i];
            let interactive = t.interactive;
            let mut cmd = fallback::command(&t.path, &t.name, &t.action);
            cmd.env("RUNLEVEL", &self.plan.runlevel)
                .env("PREVLEVEL", &self.opts.prevlevel);
            console_stdout(&mut cmd);
            if !interactive {
                new_session_on_exec(&mut cmd);
            }
            let start_ns = sys::boottime_ns();
            let mut kv = self.task_kv(i);
            kv.push(("waited_for", String::new()));
            let (exit, outcome) = match cmd.spawn() {
                Ok(mut child) => {
                    kv.push(("pid", child.id().to_string()));
                    self.log.event(start_ns, "rc_start", &kv);
                    let deadline = (!interactive).then(|| Instant::now() + self.cfg.timeout);
                    fallback::wait_foreground(&mut child, deadline, !interactive, &mut || {})
                }
                Err(e) => {
                    self.log.event(start_ns, "rc_start", &kv);
                    let _ = writeln!(self.out, "{}: cannot start: {e}", self.plan.tasks[i].name);
                    (None, Outcome::SpawnFailed)
                }
            };
            if outcome == Outcome::TimedOut {
                let _ = writeln!(
                    self.out,
                    "{}: timed out after {:.0} s; the boot goes on without it",
                    self.plan.tasks[i].name,
                    self.cfg.timeout.as_secs_f64()
                );
            }
            self.finish(i, exit, outcome, start_ns);
        }
    }

    /// startpar's answer for `/lib/init/rc` (`eval "$(startpar ...)"`): the failed,
    /// not-installed and not-configured scripts of the tasks that ended so far.
    pub fn startpar_summary(&self) -> String {
        startpar_answer(self.results.iter().enumerate().filter_map(|(i, r)| {
            r.as_ref()
                .map(|r| (self.plan.tasks[i].name.as_str(), r.outcome.name()))
        }))
    }

    /// Feeds the measured durations into `d`.
    pub fn learn(&self, d: &mut Durations) {
        for (i, r) in self.results.iter().enumerate() {
            let Some(r) = r else { continue };
            if r.outcome == Outcome::SpawnFailed {
                continue;
            }
            let t = &self.plan.tasks[i];
            let ms = r.end_ns.saturating_sub(r.start_ns) / 1_000_000;
            d.record(&t.name, &t.action, ms);
        }
    }
}

impl Drop for Runner<'_> {
    /// However the runner ends (a panic unwinding included), no timed-out group outlives it.
    fn drop(&mut self) {
        self.tend_orphans(true);
    }
}

/// `KEY=0|1` (or `no|yes`) on a kernel command line, the last one winning:
/// `bootprint.rc.builtins` and `bootprint.rc.udev-off-path` override rc.conf for one boot
/// (the A/B benchmarks switch them this way).
pub fn cmdline_switch(cmdline: &str, key: &str) -> Option<bool> {
    let prefix = format!("{key}=");
    cmdline
        .split_whitespace()
        .filter_map(|w| w.strip_prefix(&prefix))
        .next_back()
        .and_then(|v| match v {
            "0" | "no" => Some(false),
            "1" | "yes" => Some(true),
            _ => None,
        })
}

/// The text of a panic's payload (`panic!` with a message gives a `String` or a `&str`).
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into())
}

/// startpar's answer from (script, outcome name) pairs: `failed_service='...'`,
/// `skipped_service_not_installed='...'`, `skipped_service_not_configured='...'`.
pub fn startpar_answer<'s>(ended: impl Iterator<Item = (&'s str, &'s str)>) -> String {
    let mut failed = Vec::new();
    let mut ni = Vec::new();
    let mut nc = Vec::new();
    for (name, outcome) in ended {
        match outcome {
            "ok" => {}
            "not_installed" => ni.push(name),
            "not_configured" => nc.push(name),
            _ => failed.push(name),
        }
    }
    let q = |v: &[&str]| v.join(" ").replace('\'', "");
    format!(
        "failed_service='{}'\nskipped_service_not_installed='{}'\nskipped_service_not_configured='{}'\n",
        q(&failed),
        q(&ni),
        q(&nc)
    )
}

/// A script's stdout goes to the console (our stderr), never to our stdout: that is the
/// pipe `/lib/init/rc` evaluates (`eval "$(startpar ...)"`).
pub(crate) fn console_stdout(cmd: &mut Command) {
    use std::os::fd::AsFd;
    if let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() {
        cmd.stdout(Stdio::from(fd));
    }
}

/// The script leads a new session (its own process group, which a timeout can signal).
pub(crate) fn new_session_on_exec(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only calls setsid (async-signal-safe) between fork and exec.
    unsafe {
        cmd.pre_exec(sys::new_session);
    }
}

/// One invocation of the runner, as `bootprint-boot rc` builds it from its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The system's root (default `/`).
    pub root: PathBuf,
    /// The proc file system (`stat`: the load; `cmdline`: the fault switch, [`Fault`]).
    pub proc_dir: PathBuf,
    /// The span log.
    pub spans: PathBuf,
    /// The learned durations.
    pub durations: PathBuf,
    /// The configuration.
    pub config: PathBuf,
    /// Where the span log is copied when a runlevel is done (so it outlives /run on a
    /// system without the recorder); under `root`.
    pub keep: PathBuf,
    /// The runlevel to enter.
    pub runlevel: Runlevel,
    /// The runlevel the system comes from (None: boot, `N`).
    pub previous: Option<Runlevel>,
    /// `start` or `stop` (default: `stop` for 0 and 6, else `start`).
    pub action: String,
    /// Answer like startpar on stdout (for `/lib/init/rc`'s `eval`).
    pub startpar: bool,
    /// Return to the caller once the login path is done and leave late services to a
    /// detached child (default on; off to wait for everything).
    pub detach: bool,
    /// Print the plan and run nothing.
    pub dry_run: bool,
    /// The program that runs built-ins ([`Options::builtin_program`]); None: none run.
    pub builtin_program: Option<PathBuf>,
}

impl Request {
    /// Defaults for a runlevel: real paths, start (stop for 0 and 6), detach.
    pub fn new(runlevel: Runlevel) -> Request {
        Request {
            root: PathBuf::from("/"),
            proc_dir: PathBuf::from("/proc"),
            spans: PathBuf::from(crate::spans::DEFAULT_PATH),
            durations: PathBuf::from(crate::durations::DEFAULT_PATH),
            config: PathBuf::from(DEFAULT_CONFIG),
            keep: PathBuf::from(KEEP_PATH),
            runlevel,
            previous: None,
            action: match runlevel {
                Runlevel::Num(0) | Runlevel::Num(6) => "stop".into(),
                _ => "start".into(),
            },
            startpar: false,
            detach: true,
            dry_run: false,
            builtin_program: None,
        }
    }

    /// Reads startpar's command line as `/lib/init/rc` passes it:
    /// `-p N -t N -T N -M boot|start|stop -P PREV -R RUNLEVEL` (other options ignored).
    pub fn from_startpar(args: &[String]) -> Result<Request, String> {
        let mut mode = None;
        let mut prev = None;
        let mut rl = None;
        let mut it = args.iter();
        while let Some(a) = it.next() {
            match a.as_str() {
                "-M" => mode = it.next().cloned(),
                "-P" => prev = it.next().cloned(),
                "-R" => rl = it.next().cloned(),
                "-p" | "-t" | "-T" | "-a" | "-i" | "-e" => {
                    it.next();
                }
                _ => {}
            }
        }
        let rl = rl.ok_or("startpar arguments: expected -R RUNLEVEL")?;
        let runlevel = Runlevel::parse(&rl).ok_or(format!(
            "startpar arguments: -R {rl:?} is not a runlevel (S, 0-6)"
        ))?;
        let mut r = Request::new(runlevel);
        r.previous = prev.as_deref().and_then(Runlevel::parse);
        r.action = match mode.as_deref() {
            Some("stop") => "stop".into(),
            Some("boot") | Some("start") => "start".into(),
            Some(m) => {
                return Err(format!(
                    "startpar arguments: -M {m:?}: expected boot, start or stop"
                ))
            }
            None => return Err("startpar arguments: expected -M boot|start|stop".into()),
        };
        r.startpar = true;
        Ok(r)
    }
}

/// The exit code of a runner that could not run the runlevel at all (not even serially:
/// its link directory cannot be read, or the fallback itself failed). The startpar wrapper
/// runs Debian's startpar on any exit but 0.
pub const EXIT_NOT_RUN: i32 = 1;

/// How far the runner got: what its fallback needs when it fails.
struct Progress {
    /// The phase under way: `config`, `load`, `plan`, `run`, `answer`, `late`, `save`.
    /// It is the `reason` of `rc_fallback` when the runner fails in it.
    phase: &'static str,
    /// startpar's answer was printed (or stdout is no longer the caller's pipe).
    answered: bool,
    /// The configured per-script timeout, once read.
    timeout: Duration,
}

/// Runs a runlevel as [`Request`] says: plan, login path in parallel, the startpar answer,
/// then (in a detached child when `detach`) the late services once idle; learned durations
/// saved at the end.
///
/// Never fails the boot: any failure, an error or a panic, in any phase, ends in
/// [`fallback::run_links`]: every script of the runlevel not yet started is run serially
/// in link order with the right action, and startpar's answer is still printed. Returns
/// the exit code for this process: 0 when every script was run (in parallel or by the
/// fallback), [`EXIT_NOT_RUN`] when not even the fallback could run them (or on a failed
/// `dry_run`, which runs nothing).
pub fn run_runlevel(req: &Request, out: &mut dyn Write) -> i32 {
    // The test bed's fault switch (docs/rc.md); /proc/cmdline is a few hundred bytes.
    let (fault, fdiag) = Fault::read(&req.proc_dir.join("cmdline"));
    if let Some(d) = fdiag {
        let _ = writeln!(out, "bootprint rc: {d}");
    }
    if fault == Some(Fault::Abort) {
        let _ = writeln!(out, "bootprint rc: {}: aborting", Fault::Abort.message());
        std::process::abort();
    }
    let mut log = if req.dry_run {
        SpanLog::none()
    } else {
        SpanLog::open(&req.spans)
    };
    let mut progress = Progress {
        phase: "config",
        answered: false,
        timeout: Config::default().timeout,
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_guarded(req, fault, &mut log, out, &mut progress)
    }));
    let why = match r {
        Ok(Ok(code)) => return code,
        Ok(Err(msg)) => msg,
        Err(p) => format!("panic: {}", panic_message(p.as_ref())),
    };
    // The last resort must not die either: if it does, the wrapper runs Debian's startpar.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_fallback(req, &why, &mut log, out, &progress)
    }))
    .unwrap_or(EXIT_NOT_RUN)
}

/// Everything [`run_runlevel`] does when nothing fails. An error is the message for the
/// console; `progress` says where it happened.
fn run_guarded(
    req: &Request,
    fault: Option<Fault>,
    log: &mut SpanLog,
    out: &mut dyn Write,
    progress: &mut Progress,
) -> Result<i32, String> {
    progress.phase = "config";
    let (mut cfg, cdiags) = Config::load(
        &req.root
            .join(req.config.strip_prefix("/").unwrap_or(&req.config)),
    );
    let cmdline = std::fs::read_to_string(req.proc_dir.join("cmdline")).unwrap_or_default();
    if let Some(on) = cmdline_switch(&cmdline, "bootprint.rc.builtins") {
        cfg.builtins = on;
    }
    if let Some(on) = cmdline_switch(&cmdline, "bootprint.rc.udev-off-path") {
        cfg.udev_off_path = on;
    }
    for d in &cdiags {
        let _ = writeln!(out, "bootprint rc: {d}");
    }
    if fault == Some(Fault::Config) {
        return Err(Fault::Config.message());
    }
    progress.timeout = cfg.timeout;
    let dpath = req
        .root
        .join(req.durations.strip_prefix("/").unwrap_or(&req.durations));
    let (mut durations, _) = Durations::load(&dpath);
    progress.phase = "load";
    if fault == Some(Fault::Load) {
        return Err(Fault::Load.message());
    }
    let sys = System::load(&req.root).map_err(|e| e.to_string())?;
    progress.phase = "plan";
    if fault == Some(Fault::Plan) {
        panic!("{}", Fault::Plan.message());
    }
    let plan = if req.action == "stop" {
        Plan::stop(&sys, req.runlevel, &durations, req.previous)
    } else {
        Plan::start(&sys, req.runlevel, &cfg, &durations, req.previous)
    };
    if req.dry_run {
        let _ = out.write_all(plan.describe().as_bytes());
        return Ok(0);
    }
    // A broken cycle changes the order the headers ask for: say so where the boot shows.
    for d in &plan.cycles {
        let _ = writeln!(out, "bootprint rc: {d}");
    }
    progress.phase = "run";
    let opts = Options {
        proc_dir: req.proc_dir.clone(),
        builtin_program: req.builtin_program.clone(),
        prevlevel: req.previous.map_or("N".into(), |p| p.label()),
        fault,
        ..Options::default()
    };
    let mut runner = Runner::new(&plan, &cfg, opts, log, out);
    runner.begin();
    runner.run_phase(false);
    progress.phase = "answer";
    if fault == Some(Fault::Panic) {
        panic!("{}", Fault::Panic.message());
    }
    if req.startpar {
        let mut o = std::io::stdout();
        let _ = o.write_all(runner.startpar_summary().as_bytes());
        let _ = o.flush();
    }
    progress.answered = true;
    if runner.has_late() {
        progress.phase = "late";
        if req.detach {
            match sys::fork_detached() {
                Ok(false) => return Ok(0), // the parent: init may go on to the gettys
                Ok(true) => {}
                Err(_) => {} // no fork: finish the late ones here
            }
        }
        runner.wait_idle();
        runner.run_phase(true);
    }
    runner.done();
    progress.phase = "save";
    runner.learn(&mut durations);
    drop(runner);
    let _ = durations.save(&dpath);
    keep_span_log(req);
    Ok(0)
}

/// Copies the span log to `rc-last.log` (replaced whole), so it outlives /run.
fn keep_span_log(req: &Request) {
    let keep = req
        .root
        .join(req.keep.strip_prefix("/").unwrap_or(&req.keep));
    if keep != req.spans {
        // Replaced whole, never written in place: a crash leaves the last copy intact.
        if let Ok(bytes) = std::fs::read(&req.spans) {
            let _ = crate::state::write_atomic(&keep, &bytes);
        }
    }
}

/// The fallback of [`run_runlevel`]: every script of the runlevel this process has not
/// started yet, serially in link order ([`fallback::run_links`]), then startpar's answer
/// if it is still owed.
fn run_fallback(
    req: &Request,
    why: &str,
    log: &mut SpanLog,
    out: &mut dyn Write,
    progress: &Progress,
) -> i32 {
    let rl = req.runlevel.label();
    let _ = writeln!(
        out,
        "bootprint rc: runlevel {rl}: the runner failed (phase {}): {why}",
        progress.phase
    );
    let dir = req.root.join(req.runlevel.dir());
    let links = match fallback::links(&req.root, req.runlevel, &req.action, req.previous) {
        Ok(v) => v,
        Err(e) => {
            let _ = writeln!(
                out,
                "bootprint rc: {}: {e}: expected the runlevel's links; nothing run",
                dir.display()
            );
            return EXIT_NOT_RUN;
        }
    };
    let todo: Vec<fallback::Link> = links
        .into_iter()
        .filter(|l| !log.started().contains(&l.name))
        .collect();
    let names: Vec<&str> = todo.iter().map(|l| l.name.as_str()).collect();
    if req.dry_run {
        let _ = writeln!(
            out,
            "bootprint rc: would run serially in link order: {}",
            names.join(" ")
        );
        return EXIT_NOT_RUN;
    }
    let _ = writeln!(
        out,
        "bootprint rc: running serially in link order ({} {}): {}",
        todo.len(),
        req.action,
        names.join(" ")
    );
    let kv = |extra: &[(&'static str, String)]| {
        let mut v = vec![("runlevel", rl.clone()), ("action", req.action.clone())];
        v.extend_from_slice(extra);
        v
    };
    // rc_fallback first: it ends what an earlier rc_begin opened; the fallback's own
    // rc_begin .. rc_done then spans the serial run (the recorder waits for it).
    log.event(
        sys::boottime_ns(),
        "rc_fallback",
        &kv(&[("reason", progress.phase.into()), ("error", why.into())]),
    );
    log.event(
        sys::boottime_ns(),
        "rc_begin",
        &kv(&[
            ("tasks", todo.len().to_string()),
            ("late", "0".into()),
            ("learned", "0".into()),
        ]),
    );
    let prevlevel = req.previous.map_or("N".into(), |p| p.label());
    let how = fallback::Serial {
        root: &req.root,
        runlevel: req.runlevel,
        action: &req.action,
        prevlevel: &prevlevel,
        timeout: progress.timeout,
    };
    fallback::run_links(&todo, &how, log, out);
    log.event(sys::boottime_ns(), "rc_reached", &kv(&[]));
    log.event(sys::boottime_ns(), "rc_done", &kv(&[]));
    if req.startpar && !progress.answered {
        let answer = startpar_answer(log.ended().iter().map(|(n, o)| (n.as_str(), o.as_str())));
        let mut o = std::io::stdout();
        let _ = o.write_all(answer.as_bytes());
        let _ = o.flush();
    }
    keep_span_log(req);
    0
}

/// The fields of an `rc_end` line after the script's own: `exit`, `outcome`, `timed_out`.
pub(crate) fn end_fields(exit: Option<i32>, outcome: Outcome) -> [(&'static str, String); 3] {
    [
        ("exit", exit.map(|c| c.to_string()).unwrap_or_default()),
        ("outcome", outcome.name().into()),
        (
            "timed_out",
            u8::from(outcome == Outcome::TimedOut).to_string(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 0 50 800 40 5 5 0 0 0\ncpu0 50 0 25 400 20 2 3 0 0 0\n\
                        intr 1\nprocs_running 3\nprocs_blocked 2\n";

    #[test]
    fn proc_stat_and_the_load_rule() {
        let s = ProcStat::parse(STAT);
        assert_eq!((s.total, s.busy, s.iowait), (1000, 160, 40));
        assert_eq!((s.running, s.blocked), (3, 2));
        let cfg = Config::default(); // 2 per CPU
                                     // load = (3 - 1) + 2 = 4: below 2 * 4 CPUs, not below 2 * 2 CPUs.
        assert!(may_start(1, &s, &cfg, 4));
        assert!(!may_start(1, &s, &cfg, 2));
        assert!(may_start(0, &s, &cfg, 2), "nothing running: always one");
        let cap = Config {
            max_parallel: 1,
            load_per_cpu: 100.0,
            ..Config::default()
        };
        assert!(!may_start(1, &s, &cap, 8));
    }

    #[test]
    fn idle_needs_low_cpu_low_iowait_and_nothing_blocked() {
        let a = ProcStat::parse(STAT);
        let mut b = a;
        let cfg = Config::default();
        b.total += 1000;
        b.busy += 100; // 10 %
        b.iowait += 10; // 1 %
        b.blocked = 0;
        assert!(was_idle(&a, &b, &cfg));
        let mut busy = b;
        busy.busy += 300; // 40 %
        assert!(!was_idle(&a, &busy, &cfg));
        let mut io = b;
        io.iowait += 90; // 10 %
        assert!(!was_idle(&a, &io, &cfg));
        let mut blocked = b;
        blocked.blocked = 1;
        assert!(!was_idle(&a, &blocked, &cfg));
        assert!(!was_idle(&a, &a, &cfg), "no time passed: not idle");
    }

    #[test]
    fn config_keys_and_errors() {
        let (c, d) = Config::parse(
            "# comment\nlogin = $syslog ssh\nlate = exim4 cups\ntimeout = 30\n\
             load-per-cpu = 1.5\nmax-parallel = 3\nlate-max-wait = 2.5\nbogus = 1\ntimeout = x\n",
            Path::new("/etc/bootprint/rc.conf"),
        );
        assert_eq!(c.login, ["$syslog", "ssh"]);
        assert_eq!(c.late, ["exim4", "cups"]);
        assert_eq!(c.timeout, Duration::from_secs(30));
        assert_eq!(c.load_per_cpu, 1.5);
        assert_eq!(c.max_parallel, 3);
        assert_eq!(c.late_max_wait, Duration::from_millis(2500));
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].line, Some(8));
        assert!(d[0].message.contains("unknown key \"bogus\""));
        assert_eq!(d[1].line, Some(9));
        assert!(d[1].message.contains("expected seconds"));
    }

    #[test]
    fn startpar_arguments() {
        let a: Vec<String> = "-p 4 -t 20 -T 3 -M boot -P N -R S"
            .split(' ')
            .map(String::from)
            .collect();
        let r = Request::from_startpar(&a).unwrap();
        assert_eq!(
            (r.runlevel, r.previous, r.action.as_str()),
            (Runlevel::S, None, "start")
        );
        assert!(r.startpar);
        let a: Vec<String> = "-M stop -P 2 -R 0".split(' ').map(String::from).collect();
        let r = Request::from_startpar(&a).unwrap();
        assert_eq!(
            (r.runlevel, r.previous, r.action.as_str()),
            (Runlevel::Num(0), Some(Runlevel::Num(2)), "stop")
        );
        let a: Vec<String> = "-M start".split(' ').map(String::from).collect();
        assert!(Request::from_startpar(&a).unwrap_err().contains("-R"));
        let a: Vec<String> = "-M go -R 2".split(' ').map(String::from).collect();
        assert!(Request::from_startpar(&a)
            .unwrap_err()
            .contains("boot, start or stop"));
    }

    #[test]
    fn switches_on_the_command_line() {
        let b = "bootprint.rc.builtins";
        assert_eq!(cmdline_switch("quiet bootprint.rc=1", b), None);
        assert_eq!(cmdline_switch("bootprint.rc.builtins=0", b), Some(false));
        assert_eq!(
            cmdline_switch("bootprint.rc.builtins=0 bootprint.rc.builtins=yes", b),
            Some(true)
        );
        assert_eq!(cmdline_switch("bootprint.rc.builtins=maybe", b), None);
        assert_eq!(
            cmdline_switch("bootprint.rc.builtins=0", "bootprint.rc.udev-off-path"),
            None
        );
    }

    #[test]
    fn lsb_exit_codes() {
        assert_eq!(Outcome::from_exit(0), Outcome::Ok);
        assert_eq!(Outcome::from_exit(5), Outcome::NotInstalled);
        assert_eq!(Outcome::from_exit(6), Outcome::NotConfigured);
        assert_eq!(Outcome::from_exit(1), Outcome::Failed);
        assert_eq!(Outcome::from_exit(7), Outcome::Failed);
    }

    /// A number too big for a Duration (`timeout = 1e300`) panicked while reading the
    /// configuration, before any script ran: now a diagnostic, and the default.
    #[test]
    fn config_seconds_too_big_are_a_diagnostic_not_a_panic() {
        let (c, d) = Config::parse(
            "timeout = 1e300\nidle-window = 1e30\n",
            Path::new("/etc/bootprint/rc.conf"),
        );
        assert_eq!(c.timeout, Config::default().timeout);
        assert_eq!(c.idle_window, Config::default().idle_window);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[0].line, Some(1));
        assert!(d[0].message.contains("timeout: expected seconds"), "{d:?}");
    }

    /// The idle wait is bounded by `late-max-wait` even when one idle measurement
    /// (`idle-window`) is longer: before, it slept the whole window first.
    #[test]
    fn the_idle_wait_never_outlasts_late_max_wait() {
        // A /proc/stat that never changes is never idle (no ticks passed), so the wait can
        // only end at its maximum: the host's own /proc/stat made this pass or fail with
        // the host's load (an idle host ended the 200 ms measurement as "idle").
        let proc_dir = std::env::temp_dir().join(format!("bp-rc-idle-wait-{}", std::process::id()));
        std::fs::create_dir_all(&proc_dir).unwrap();
        std::fs::write(
            proc_dir.join("stat"),
            "cpu  100 0 100 1000 0 0 0 0 0 0\nprocs_running 1\nprocs_blocked 0\n",
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let opts = Options {
            proc_dir: proc_dir.clone(),
            ..Options::default()
        };
        std::thread::spawn(move || {
            let plan = Plan {
                runlevel: "2".into(),
                action: "start".into(),
                tasks: Vec::new(),
                diagnostics: Vec::new(),
                cycles: Vec::new(),
            };
            let cfg = Config {
                idle_window: Duration::from_secs(3600),
                late_max_wait: Duration::from_millis(200),
                ..Config::default()
            };
            let mut log = SpanLog::none();
            let mut out = Vec::new();
            let mut r = Runner::new(&plan, &cfg, opts, &mut log, &mut out);
            let _ = tx.send(r.wait_idle());
        });
        let reason = rx.recv_timeout(Duration::from_secs(10));
        let _ = std::fs::remove_dir_all(&proc_dir);
        assert_eq!(reason, Ok("max_wait"));
    }
}
