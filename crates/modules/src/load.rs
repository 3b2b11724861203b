//! The parallel loader: N workers, each with its own inserter (a libkmod context: libkmod is
//! not thread-safe), take ready modules from the plan in priority order and insert them,
//! recording when each started and ended. A failure is recorded and the rest go on; modules
//! that need a failed one are not tried.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex};

use serde::Serialize;

use crate::plan::{Plan, Planned};
use crate::sched::{Scheduler, State};

/// What inserting one module came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Insert {
    /// Inserted now.
    Loaded,
    /// The kernel already had it (`EEXIST`): as good as loaded.
    AlreadyLoaded,
    /// Failed; the message says why.
    Failed(String),
}

/// Inserts one module. The real one is [`KmodInserter`](crate::kmod::KmodInserter); tests use
/// fakes. Each worker thread makes its own, so it need not be `Send`.
pub trait Inserter {
    /// Inserts `module` with its options.
    fn insert(&mut self, module: &Planned) -> Insert;
}

/// What happened to one module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome", content = "detail")]
pub enum Outcome {
    /// Inserted now.
    Loaded,
    /// Already loaded (`EEXIST`).
    AlreadyLoaded,
    /// Insertion failed.
    Failed(String),
    /// Not tried: this hard prerequisite failed.
    Blocked(String),
    /// Not tried: no worker was left to take it (every inserter failed to open).
    NotRun,
}

/// One module's load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Timing {
    /// Module name.
    pub name: String,
    /// Start, from the clock given to [`load`] (`CLOCK_BOOTTIME` ns in production); 0 when
    /// not tried.
    pub start_ns: u64,
    /// End, same clock.
    pub end_ns: u64,
    /// Worker that ran it (0 when not tried).
    pub worker: usize,
    /// What happened.
    pub outcome: Outcome,
}

/// The loader's result: one timing per planned module, in plan order, and the problems of
/// workers that could not start.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LoadReport {
    /// Per module, indexed like [`Plan::modules`].
    pub modules: Vec<Timing>,
    /// Workers whose inserter could not be made, with the reason.
    pub worker_errors: Vec<String>,
}

impl LoadReport {
    /// Modules that ended live (loaded now or already).
    pub fn live(&self) -> usize {
        self.modules
            .iter()
            .filter(|t| matches!(t.outcome, Outcome::Loaded | Outcome::AlreadyLoaded))
            .count()
    }
}

struct Shared {
    sched: Scheduler,
    timings: Vec<Option<Timing>>,
}

/// Loads the plan with `workers` threads (at least one). `make` builds each worker's inserter
/// (it gets the worker number, from 1); `clock` gives timestamps in ns. Never panics on an
/// inserter's panic or error: those are recorded as failures.
pub fn load<I, M, C>(plan: &Plan, workers: usize, make: M, clock: C) -> LoadReport
where
    I: Inserter,
    M: Fn(usize) -> Result<I, String> + Sync,
    C: Fn() -> u64 + Sync,
{
    let shared = Mutex::new(Shared {
        sched: Scheduler::new(plan),
        timings: vec![None; plan.modules.len()],
    });
    let wake = Condvar::new();
    let worker_errors = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for w in 1..=workers.max(1) {
            let (shared, wake, worker_errors, make, clock) =
                (&shared, &wake, &worker_errors, &make, &clock);
            scope.spawn(move || {
                let mut inserter = match make(w) {
                    Ok(i) => i,
                    Err(e) => {
                        lock(worker_errors).push(format!("worker {w}: {e}"));
                        return;
                    }
                };
                loop {
                    let i = {
                        let mut s = lock(shared);
                        loop {
                            if let Some(i) = s.sched.take() {
                                break Some(i);
                            }
                            // Nothing ready and nothing running: nothing will become ready.
                            if s.sched.idle() {
                                break None;
                            }
                            s = wake.wait(s).unwrap_or_else(|p| p.into_inner());
                        }
                    };
                    let Some(i) = i else {
                        wake.notify_all();
                        return;
                    };
                    let module = &plan.modules[i];
                    let start = clock();
                    let result = catch_unwind(AssertUnwindSafe(|| inserter.insert(module)))
                        .unwrap_or_else(|_| Insert::Failed("the inserter panicked".into()));
                    let end = clock();
                    let outcome = match result {
                        Insert::Loaded => Outcome::Loaded,
                        Insert::AlreadyLoaded => Outcome::AlreadyLoaded,
                        Insert::Failed(e) => Outcome::Failed(e),
                    };
                    let ok = matches!(outcome, Outcome::Loaded | Outcome::AlreadyLoaded);
                    let mut s = lock(shared);
                    s.timings[i] = Some(Timing {
                        name: module.name.clone(),
                        start_ns: start,
                        end_ns: end,
                        worker: w,
                        outcome,
                    });
                    s.sched.finish(i, ok);
                    drop(s);
                    wake.notify_all();
                }
            });
        }
    });
    let shared = shared.into_inner().unwrap_or_else(|p| p.into_inner());
    let modules = shared
        .timings
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            t.unwrap_or_else(|| Timing {
                name: plan.modules[i].name.clone(),
                start_ns: 0,
                end_ns: 0,
                worker: 0,
                outcome: match shared.sched.state(i) {
                    State::Blocked(by) => Outcome::Blocked(plan.modules[by].name.clone()),
                    _ => Outcome::NotRun,
                },
            })
        })
        .collect();
    LoadReport {
        modules,
        worker_errors: worker_errors
            .into_inner()
            .unwrap_or_else(|p| p.into_inner()),
    }
}

/// Locks, going on after a poisoned lock: the data is plain bookkeeping, still consistent.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
