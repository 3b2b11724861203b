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
