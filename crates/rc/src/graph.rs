//! The start graph of one runlevel, its start order, and a scheduler over it.
//!
//! Nodes are the scripts the runlevel starts (`S??` links). An edge `a -> b` means "start
//! `a` before `b`"; it remembers every header line it came from ([`Origin`]):
//! - `Required-Start: x` in `b`: edge from the script providing `x`; if that script is not
//!   in this runlevel (nor, for 0..6, already started by the boot runlevel `S`), a
//!   diagnostic, no edge;
//! - `Should-Start: x` in `b`: the same edge, but only when `x` is started; silent if not;
//!   a `+x` inside a facility is optional in the same way;
//! - `X-Start-Before: x` in `a`: the edge `a -> x` when `x` is started;
//! - `$all` in `b`: `b` after every other started script that does not itself use `$all`
//!   and does not (transitively) wait for `b`;
//! - a script without header: after the header scripts with the highest link number below
//!   its own (insserv does the same).
//!
//! Cycles are broken deterministically, and the boot goes on: take the remaining node whose
//! name sorts first, walk back along its predecessors (always the first by name) until a
//! node repeats; that loop is the cycle. Remove its weakest edge (`$all` < link order <
//! `X-Start-Before` < `Should-Start`/optional < `Required-Start`), the first such edge in
//! path order when there is a tie; report the whole path; repeat until no cycle is left.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashSet};
use std::path::PathBuf;

use crate::header::Keyword;
use crate::system::{Runlevel, System};
use crate::Diagnostic;

/// Why an edge exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeKind {
    /// `$all` in the later script.
    All,
    /// Link order, for a script without header.
    LinkOrder,
    /// `X-Start-Before` in the earlier script.
    StartBefore,
    /// `Should-Start` in the later script, or an optional (`+`) provider of a facility.
    Should,
    /// `Required-Start` in the later script.
    Required,
}

impl EdgeKind {
    /// Short name used in output.
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::All => "all",
            EdgeKind::LinkOrder => "link-order",
            EdgeKind::StartBefore => "start-before",
            EdgeKind::Should => "should",
            EdgeKind::Required => "required",
        }
    }
}

/// One facility expansion step: `token` came from `facility` defined at `file:line`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Via {
    /// The facility, e.g. `$remote_fs`.
    pub facility: String,
    /// Its definition file.
    pub file: PathBuf,
    /// Its definition line.
    pub line: usize,
}

/// The header line an edge came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    /// The kind.
    pub kind: EdgeKind,
    /// The file (relative to the root): a script, or a link for [`EdgeKind::LinkOrder`].
    pub file: PathBuf,
    /// 1-based line of the keyword (none for link order).
    pub line: Option<usize>,
    /// The header keyword it came from (none for link order).
    pub keyword: Option<Keyword>,
    /// The keyword's word as written (`$remote_fs`, `+mountnfs`, `$all`).
    pub token: String,
    /// Facility expansions from `token` down to the provider, outermost first.
    pub via: Vec<Via>,
}

/// An edge: start `from` before `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// Earlier node.
    pub from: usize,
    /// Later node.
    pub to: usize,
    /// Every line that asked for it, in reading order.
    pub origins: Vec<Origin>,
    /// Removed to break a cycle.
    pub broken: bool,
}

impl Edge {
    /// The strongest kind among its origins.
    pub fn kind(&self) -> EdgeKind {
        self.origins
            .iter()
            .map(|o| o.kind)
            .max()
            .unwrap_or(EdgeKind::All)
    }
}

/// A started script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Script file name.
    pub name: String,
    /// Index into [`System::scripts`].
    pub script: usize,
    /// Link sequence number in this runlevel.
    pub seq: u8,
    /// Must run alone (`X-Interactive: true` or `<interactive>`).
    pub interactive: bool,
    /// Uses `$all`.
    pub all: bool,
    /// Has an LSB header.
    pub lsb: bool,
}

/// A broken cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CycleBreak {
    /// Node ids around the cycle, the first repeated at the end.
    pub path: Vec<usize>,
    /// The edge removed (index into [`Graph::edges`]).
    pub removed: usize,
    /// What was reported (also in [`Graph::diagnostics`]).
    pub diagnostic: Diagnostic,
}

/// The start graph of one runlevel.
#[derive(Debug, Clone)]
pub struct Graph {
    /// The runlevel.
    pub runlevel: Runlevel,
    /// Nodes, sorted by name (so node ids order like names).
    pub nodes: Vec<Node>,
    /// Edges sorted by (from, to).
    pub edges: Vec<Edge>,
    /// Cycles broken, in the order they were found.
    pub cycles: Vec<CycleBreak>,
    /// Missing dependencies and cycles, with file and line.
    pub diagnostics: Vec<Diagnostic>,
    /// For runlevels 0..6: (node, script) for each script runlevel `S` starts that a node
    /// names in `Required-Start` or `Should-Start` (directly or through a facility). The
    /// graph takes them as done; a runner that lets S end early must wait for them.
    pub boot_needs: Vec<(usize, usize)>,
    preds: Vec<Vec<usize>>,
    succs: Vec<Vec<usize>>,
}

struct Builder<'a> {
    sys: &'a System,
    rl: Runlevel,
    node_of: BTreeMap<usize, usize>,
    boot: BTreeSet<usize>,
    boot_needs: BTreeSet<(usize, usize)>,
    edges: BTreeMap<(usize, usize), Vec<Origin>>,
    /// Every (from, to, origin) added: a set, so a header naming 200k dependencies is not
    /// checked against every earlier origin of its edge (that was quadratic).
    seen: HashSet<(usize, usize, Origin)>,
    diags: Vec<Diagnostic>,
}

/// A provider found by expanding a token.
struct Target {
    name: String,
    optional: bool,
    via: Vec<Via>,
}

/// The header line being expanded, and what the expansion found.
struct Expansion<'p> {
    file: &'p std::path::Path,
    line: usize,
    /// Report unknown facilities (Required-Start only).
    must_know: bool,
    targets: Vec<Target>,
    all: bool,
}

impl Builder<'_> {
    fn expand(&mut self, token: &str, optional: bool, via: &[Via], out: &mut Expansion) {
        let (name, optional) = match token.strip_prefix('+') {
            Some(n) => (n, true),
            None => (token, optional),
        };
        if !name.starts_with('$') {
            out.targets.push(Target {
                name: name.to_string(),
                optional,
                via: via.to_vec(),
            });
            return;
        }
        let lname = name.to_ascii_lowercase();
        if lname == "$null" {
            return;
        }
        if lname == "$all" {
            out.all = true;
            return;
        }
        if via.iter().any(|v| v.facility == lname) {
            return; // a facility that names itself: nothing more to find
        }
        let mut known = false;
        if let Some(defs) = self.sys.conf.facilities.get(&lname).cloned() {
            known = true;
            for d in defs {
                let mut v = via.to_vec();
                v.push(Via {
                    facility: lname.clone(),
                    file: d.file.clone(),
                    line: d.line,
                });
                for n in &d.names {
                    self.expand(n, optional, &v, out);
                }
            }
        }
        if self.sys.providers.contains_key(name) {
            known = true;
            out.targets.push(Target {
                name: name.to_string(),
                optional,
                via: via.to_vec(),
            });
        }
        if !known && out.must_know && !optional {
            self.diags.push(Diagnostic::new(
                out.file,
                Some(out.line),
                format!("unknown facility {name}: expected it defined in etc/insserv.conf(.d) or provided by a script"),
            ));
        }
    }

    fn add(&mut self, from: usize, to: usize, o: Origin) {
        // Two optional providers of one facility can be the same script, and a word can
        // be repeated: one origin each.
        if from != to && self.seen.insert((from, to, o.clone())) {
            self.edges.entry((from, to)).or_default().push(o);
        }
    }

    /// Handles one dependency keyword of script `s` (node `me`). Returns whether `$all` was named.
    fn keyword(&mut self, s: usize, me: usize, kw: Keyword) -> bool {
        let script = &self.sys.scripts[s];
        let Some(field) = script.header.as_ref().and_then(|h| h.field(kw)).cloned() else {
            return false;
        };
        let file = script.path.clone();
        let mut all = false;
        for word in field.words() {
            let optional = kw != Keyword::RequiredStart;
            let mut x = Expansion {
                file: &file,
                line: field.line,
                must_know: kw == Keyword::RequiredStart,
                targets: Vec::new(),
                all: false,
            };
            self.expand(word, optional, &[], &mut x);
            all |= x.all;
            for t in x.targets {
                let kind = match kw {
                    Keyword::StartBefore => EdgeKind::StartBefore,
                    _ if t.optional => EdgeKind::Should,
                    _ => EdgeKind::Required,
                };
                let origin = Origin {
                    kind,
                    keyword: Some(kw),
                    file: file.clone(),
                    line: Some(field.line),
                    token: word.to_string(),
                    via: t.via,
                };
                let Some(&other) = self.sys.providers.get(&t.name) else {
                    if !t.optional {
                        self.diags.push(Diagnostic::new(&file, Some(field.line), format!("{} names {}, which no script provides: expected a script with 'Provides: {}'; dependency ignored", kw.name(), t.name, t.name)));
                    }
                    continue;
                };
                match self.node_of.get(&other).copied() {
                    Some(n) if kw == Keyword::StartBefore => self.add(me, n, origin),
                    Some(n) => self.add(n, me, origin),
                    None if self.boot.contains(&other) => {
                        if kw != Keyword::StartBefore {
                            self.boot_needs.insert((me, other));
                        }
                    }
                    None => {
                        if !t.optional {
                            self.diags.push(Diagnostic::new(&file, Some(field.line), format!(
                                "{} names {} ({}), which runlevel {} does not start{}: dependency ignored",
                                kw.name(), t.name, self.sys.scripts[other].name, self.rl.label(),
                                if self.rl == Runlevel::S { "" } else { " nor runlevel S" }
                            )));
                        }
                    }
                }
            }
        }
        all
    }
}

impl System {
    /// Builds the start graph of a runlevel. For 0..6 the scripts runlevel `S` started are
    /// taken as already done.
    pub fn graph(&self, rl: Runlevel) -> Graph {
        let mut nodes = self.linked_nodes(rl);
        let boot = if rl == Runlevel::S {
            BTreeSet::new()
        } else {
            self.enabled(Runlevel::S).into_iter().collect()
        };
        let mut b = Builder {
            sys: self,
            rl,
            node_of: nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.script, i))
                .collect(),
            boot,
            boot_needs: BTreeSet::new(),
            edges: BTreeMap::new(),
            seen: HashSet::new(),
            diags: Vec::new(),
        };
        let all_origin = b.header_edges(&mut nodes);
        b.link_order_edges(&nodes);
        b.all_edges(&nodes, &all_origin);
        let edges: Vec<Edge> = b
            .edges
            .into_iter()
            .map(|((from, to), origins)| Edge {
                from,
                to,
                origins,
                broken: false,
            })
            .collect();
        let mut g = Graph {
            runlevel: rl,
            nodes,
            edges,
            cycles: Vec::new(),
            diagnostics: b.diags,
            boot_needs: b.boot_needs.into_iter().collect(),
            preds: Vec::new(),
            succs: Vec::new(),
        };
        g.break_cycles();
        g
    }

    /// One node per script the runlevel links, by name.
    fn linked_nodes(&self, rl: Runlevel) -> Vec<Node> {
        let links = self.links.get(&rl).cloned().unwrap_or_default();
        let mut ids: Vec<(String, usize, u8)> = Vec::new();
        let mut linked = BTreeSet::new();
        for l in &links {
            if !linked.insert(l.script) {
                continue; // two links to one script: the first (lowest number) counts
            }
            ids.push((self.scripts[l.script].name.clone(), l.script, l.seq));
        }
        ids.sort();
        ids.iter()
            .map(|(name, s, seq)| Node {
                name: name.clone(),
                script: *s,
                seq: *seq,
                interactive: self.is_interactive(*s),
                all: false,
                lsb: self.scripts[*s].header.is_some(),
            })
            .collect()
    }

    /// Where script `s`'s `$all` comes from: the first header line that gives it, or the
    /// line that names it directly.
    fn all_origin(&self, s: usize) -> Origin {
        let h = self.scripts[s].header.as_ref();
        let mut found = None;
        for (kw, f) in [
            (
                Keyword::RequiredStart,
                h.and_then(|h| h.required_start.as_ref()),
            ),
            (
                Keyword::ShouldStart,
                h.and_then(|h| h.should_start.as_ref()),
            ),
        ] {
            if let Some(f) = f {
                // `$all` may also come through a facility; name the first line then.
                let direct = f.words().any(|w| w.eq_ignore_ascii_case("$all"));
                if found.is_none() || direct {
                    found = Some((kw, f.line));
                }
                if direct {
                    break;
                }
            }
        }
        Origin {
            kind: EdgeKind::All,
            keyword: found.map(|(k, _)| k),
            file: self.scripts[s].path.clone(),
            line: found.map(|(_, l)| l),
            token: "$all".into(),
            via: Vec::new(),
        }
    }
}

impl Builder<'_> {
    /// The edges the LSB headers ask for; marks the `$all` nodes and returns, per node,
    /// where its `$all` comes from.
    fn header_edges(&mut self, nodes: &mut [Node]) -> Vec<Option<Origin>> {
        let mut all_origin: Vec<Option<Origin>> = vec![None; nodes.len()];
        for (me, node) in nodes.iter_mut().enumerate() {
            let s = node.script;
            if !node.lsb {
                continue;
            }
            let mut all = self.keyword(s, me, Keyword::RequiredStart);
            all |= self.keyword(s, me, Keyword::ShouldStart);
            self.keyword(s, me, Keyword::StartBefore);
            if all {
                node.all = true;
                all_origin[me] = Some(self.sys.all_origin(s));
            }
        }
        all_origin
    }

    /// Scripts without header: after the header scripts with the highest lower number.
    fn link_order_edges(&mut self, nodes: &[Node]) {
        let rl = self.rl;
        let mut lsb_by_seq: BTreeMap<u8, Vec<usize>> = BTreeMap::new();
        for (i, n) in nodes.iter().enumerate() {
            if n.lsb {
                lsb_by_seq.entry(n.seq).or_default().push(i);
            }
        }
        for (me, node) in nodes.iter().enumerate() {
            if node.lsb {
                continue;
            }
            if let Some((&max, below)) = lsb_by_seq.range(..node.seq).next_back() {
                for &other in below {
                    let file = rl.dir().join(format!("S{:02}{}", node.seq, node.name));
                    self.add(
                        other,
                        me,
                        Origin {
                            kind: EdgeKind::LinkOrder,
                            keyword: None,
                            file,
                            line: None,
                            token: format!("S{:02}", max),
                            via: Vec::new(),
                        },
                    );
                }
            }
        }
    }

    /// $all: after every non-$all node that does not wait for it.
    fn all_edges(&mut self, nodes: &[Node], all_origin: &[Option<Origin>]) {
        let n = nodes.len();
        let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(f, t) in self.edges.keys() {
            succ[f].push(t);
        }
        for (a, origin) in all_origin.iter().enumerate() {
            let Some(origin) = origin else { continue };
            let mut seen = vec![false; n];
            let mut stack = vec![a];
            while let Some(x) = stack.pop() {
                for &y in &succ[x] {
                    if !seen[y] {
                        seen[y] = true;
                        stack.push(y);
                    }
                }
            }
            for x in 0..n {
                if x != a && !nodes[x].all && !seen[x] {
                    self.add(x, a, origin.clone());
                }
            }
        }
    }
}

impl Graph {
    fn index(&mut self) {
        let n = self.nodes.len();
        self.preds = vec![Vec::new(); n];
        self.succs = vec![Vec::new(); n];
        for e in self.edges.iter().filter(|e| !e.broken) {
            self.preds[e.to].push(e.from);
            self.succs[e.from].push(e.to);
        }
    }

    fn break_cycles(&mut self) {
        loop {
            self.index();
            let n = self.nodes.len();
            let mut indeg: Vec<usize> = self.preds.iter().map(Vec::len).collect();
            let mut stack: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
            let mut done = vec![false; n];
            while let Some(x) = stack.pop() {
                done[x] = true;
                for &y in &self.succs[x] {
                    indeg[y] -= 1;
                    if indeg[y] == 0 {
                        stack.push(y);
                    }
                }
            }
            let Some(start) = (0..n).find(|&i| !done[i]) else {
                return;
            };
            // Walk back through remaining predecessors until a node repeats.
            let mut walk = vec![start];
            let mut pos = BTreeMap::from([(start, 0usize)]);
            let cycle_start = loop {
                let cur = *walk.last().expect("non-empty");
                let p = *self.preds[cur]
                    .iter()
                    .filter(|&&p| !done[p])
                    .min()
                    .expect("a remaining node has a remaining predecessor");
                if let Some(&i) = pos.get(&p) {
                    break i;
                }
                pos.insert(p, walk.len());
                walk.push(p);
            };
            // walk[cycle_start..] goes backwards; forward order is its reverse.
            let mut path: Vec<usize> = walk[cycle_start..].iter().rev().copied().collect();
            // Rotate so the path starts at its first node by name (= smallest id).
            let min_at = path
                .iter()
                .enumerate()
                .min_by_key(|(_, &v)| v)
                .map(|(i, _)| i)
                .expect("non-empty");
            path.rotate_left(min_at);
            path.push(path[0]);
            let mut best: Option<(EdgeKind, usize)> = None;
            for w in path.windows(2) {
                // Edges are sorted by (from, to) and unique: a binary search, not a scan.
                let e = self
                    .edges
                    .binary_search_by(|e| (e.from, e.to).cmp(&(w[0], w[1])))
                    .expect("cycle edge exists");
                let k = self.edges[e].kind();
                if best.is_none_or(|(bk, _)| k < bk) {
                    best = Some((k, e));
                }
            }
            let (_, removed) = best.expect("a cycle has edges");
            self.edges[removed].broken = true;
            let e = &self.edges[removed];
            let names: Vec<&str> = path.iter().map(|&i| self.nodes[i].name.as_str()).collect();
            let o = &e.origins[0];
            let diagnostic = Diagnostic::new(
                &o.file,
                o.line,
                format!(
                    "dependency cycle {} in runlevel {}: broken by dropping {} -> {} ({}, {}): expected no cycle",
                    names.join(" -> "),
                    self.runlevel.label(),
                    self.nodes[e.from].name,
                    self.nodes[e.to].name,
                    e.kind().name(),
                    o.token
                ),
            );
            self.diagnostics.push(diagnostic.clone());
            self.cycles.push(CycleBreak {
                path,
                removed,
                diagnostic,
            });
        }
    }

    /// Node id by script name.
    pub fn node(&self, name: &str) -> Option<usize> {
        self.nodes
            .binary_search_by(|n| n.name.as_str().cmp(name))
            .ok()
    }

    /// Nodes that must start before `id` (cycle-broken edges left out).
    pub fn predecessors(&self, id: usize) -> &[usize] {
        &self.preds[id]
    }

    /// Nodes that wait for `id`.
    pub fn successors(&self, id: usize) -> &[usize] {
        &self.succs[id]
    }

    /// Edges in force (not removed to break a cycle).
    pub fn active_edges(&self) -> impl Iterator<Item = &Edge> {
        self.edges.iter().filter(|e| !e.broken)
    }

    /// For each node, the heaviest chain from it to the end of the boot, itself included:
    /// the priority that puts the critical path first. `weight[i]` is node `i`'s expected
    /// duration (any unit; 1 each when nothing was learned yet).
    pub fn critical_path(&self, weight: &[u64]) -> Vec<u64> {
        let order = self.topo(&vec![0; self.nodes.len()]);
        let mut cp = vec![0u64; self.nodes.len()];
        for &x in order.iter().rev() {
            let tail = self.succs[x].iter().map(|&y| cp[y]).max().unwrap_or(0);
            // Saturating: learned durations are whatever the state file holds.
            cp[x] = weight.get(x).copied().unwrap_or(1).saturating_add(tail);
        }
        cp
    }

    fn topo(&self, prio: &[u64]) -> Vec<usize> {
        let mut indeg: Vec<usize> = self.preds.iter().map(Vec::len).collect();
        // Highest priority first, then first by name (smaller id).
        let mut heap: BinaryHeap<(u64, std::cmp::Reverse<usize>)> = (0..self.nodes.len())
            .filter(|&i| indeg[i] == 0)
            .map(|i| (prio[i], std::cmp::Reverse(i)))
            .collect();
        let mut out = Vec::with_capacity(self.nodes.len());
        while let Some((_, std::cmp::Reverse(x))) = heap.pop() {
            out.push(x);
            for &y in &self.succs[x] {
                indeg[y] -= 1;
                if indeg[y] == 0 {
                    heap.push((prio[y], std::cmp::Reverse(y)));
                }
            }
        }
        out
    }

    /// A serial start order: dependencies first; among ready scripts the longest chain
    /// (unit weights) first, then by name. Deterministic.
    pub fn order(&self) -> Vec<usize> {
        self.order_by(&self.critical_path(&vec![1; self.nodes.len()]))
    }

    /// A start order with the given priority per node (higher first).
    pub fn order_by(&self, priority: &[u64]) -> Vec<usize> {
        self.topo(priority)
    }

    /// Depth of each node: 1 for nodes with no predecessor, else 1 + the deepest
    /// predecessor. Nodes of one depth may all run at once (like insserv's numbers).
    pub fn levels(&self) -> Vec<u32> {
        let mut lv = vec![1u32; self.nodes.len()];
        for x in self.order() {
            lv[x] = self.preds[x].iter().map(|&p| lv[p] + 1).max().unwrap_or(1);
        }
        lv
    }
}
