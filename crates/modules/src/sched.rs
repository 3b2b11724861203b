//! The ready set: which planned module may be inserted next. Pure bookkeeping, shared by the
//! loader's workers under a lock and by [`Plan::order`](crate::Plan::order).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::plan::Plan;

/// Where one module stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Some prerequisite is not finished.
    Waiting,
    /// May be taken.
    Ready,
    /// Taken by a worker.
    Running,
    /// Live (inserted now or already loaded).
    Done,
    /// Its insertion failed.
    Failed,
    /// Not tried: the module at this index (a hard prerequisite) failed or was blocked.
    Blocked(usize),
}

/// The ready set with priorities. Each module is handed out at most once.
#[derive(Debug, Clone)]
pub struct Scheduler {
    priority: Vec<u64>,
    pending: Vec<usize>,
    dependents: Vec<Vec<(usize, bool)>>,
    state: Vec<State>,
    ready: BinaryHeap<(u64, Reverse<usize>)>,
    running: usize,
    finished: usize,
}

impl Scheduler {
    /// Starts with every module that waits for nothing ready.
    pub fn new(plan: &Plan) -> Scheduler {
        let n = plan.modules.len();
        let mut s = Scheduler {
            priority: plan.modules.iter().map(|m| m.priority_us).collect(),
            pending: vec![0; n],
            dependents: vec![Vec::new(); n],
            state: vec![State::Waiting; n],
            ready: BinaryHeap::new(),
            running: 0,
            finished: 0,
        };
        for (i, m) in plan.modules.iter().enumerate() {
            for e in &m.after {
                s.dependents[e.module].push((i, e.kind.is_hard()));
                s.pending[i] += 1;
            }
        }
        for i in 0..n {
            if s.pending[i] == 0 {
                s.make_ready(i);
            }
        }
        s
    }

    fn make_ready(&mut self, i: usize) {
        self.state[i] = State::Ready;
        // Highest priority first; among equals the one found first (lower index).
        self.ready.push((self.priority[i], Reverse(i)));
    }

    /// Takes the ready module with the highest priority.
    pub fn take(&mut self) -> Option<usize> {
        let (_, Reverse(i)) = self.ready.pop()?;
        self.state[i] = State::Running;
        self.running += 1;
        Some(i)
    }

    /// Records the end of module `i` (taken with [`take`](Self::take)): `ok` when it is live.
    /// Returns the modules that will not be tried because of it.
    pub fn finish(&mut self, i: usize, ok: bool) -> Vec<usize> {
        assert_eq!(
            self.state[i],
            State::Running,
            "module {i} finished without being taken"
        );
        self.running -= 1;
        self.finished += 1;
        self.state[i] = if ok { State::Done } else { State::Failed };
        let mut blocked = Vec::new();
        let mut stack = vec![(i, ok)];
        while let Some((x, x_ok)) = stack.pop() {
            for k in 0..self.dependents[x].len() {
                let (d, hard) = self.dependents[x][k];
                if self.state[d] != State::Waiting {
                    continue;
                }
                if hard && !x_ok {
                    self.state[d] = State::Blocked(x);
                    self.finished += 1;
                    blocked.push(d);
                    stack.push((d, false));
                    continue;
                }
                self.pending[d] -= 1;
                if self.pending[d] == 0 {
                    self.make_ready(d);
                }
            }
        }
        blocked
    }

    /// Where module `i` stands.
    pub fn state(&self, i: usize) -> State {
        self.state[i]
    }

    /// Modules taken and not finished.
    pub fn running(&self) -> usize {
        self.running
    }

    /// True when nothing is left to hand out and nothing runs: the loaders may stop.
    pub fn idle(&self) -> bool {
        self.ready.is_empty() && self.running == 0
    }

    /// True when every module is done, failed or blocked.
    pub fn all_finished(&self) -> bool {
        self.finished == self.state.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Edge, EdgeKind, Planned};

    /// (name, priority, edges as (prerequisite index, kind)).
    type Spec<'a> = (&'a str, u64, &'a [(usize, EdgeKind)]);

    fn plan(mods: &[Spec<'_>]) -> Plan {
        Plan {
            modules: mods
                .iter()
                .map(|(name, prio, after)| Planned {
                    name: name.to_string(),
                    path: format!("/m/{name}.ko").into(),
                    options: String::new(),
                    after: after
                        .iter()
                        .map(|&(module, kind)| Edge { module, kind })
                        .collect(),
                    wanted_by: vec![],
                    expected_us: *prio,
                    priority_us: *prio,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn ready_set_by_priority_and_each_once() {
        // 0 and 1 are ready; 2 waits for 0; 1 has the higher priority.
        let p = plan(&[
            ("a", 5, &[]),
            ("b", 9, &[]),
            ("c", 1, &[(0, EdgeKind::Dep)]),
        ]);
        let mut s = Scheduler::new(&p);
        assert_eq!(s.take(), Some(1));
        assert_eq!(s.take(), Some(0));
        assert_eq!(s.take(), None, "c waits for a");
        assert!(!s.idle());
        s.finish(1, true);
        assert_eq!(s.take(), None);
        s.finish(0, true);
        assert_eq!(s.take(), Some(2));
        s.finish(2, true);
        assert_eq!(s.take(), None);
        assert!(s.idle() && s.all_finished());
    }

    #[test]
    fn failure_blocks_hard_chain_but_not_soft_dependents() {
        // b needs a; c needs b; d soft-waits for a; e soft-waits for c.
        let p = plan(&[
            ("a", 1, &[]),
            ("b", 1, &[(0, EdgeKind::Dep)]),
            ("c", 1, &[(1, EdgeKind::Dep)]),
            ("d", 1, &[(0, EdgeKind::SoftPre)]),
            ("e", 1, &[(2, EdgeKind::SoftPost)]),
        ]);
        let mut s = Scheduler::new(&p);
        assert_eq!(s.take(), Some(0));
        let mut blocked = s.finish(0, false);
        blocked.sort();
        assert_eq!(blocked, vec![1, 2]);
        assert_eq!(s.state(2), State::Blocked(1));
        // d and e go ahead: their edges are soft.
        let mut ready = vec![s.take().unwrap(), s.take().unwrap()];
        ready.sort();
        assert_eq!(ready, vec![3, 4]);
        s.finish(3, true);
        s.finish(4, true);
        assert!(s.all_finished());
    }
}
