//! The parallel loader's ordering logic with a fake inserter (loading for real needs a VM):
//! ready set, priorities, at most once, EEXIST as done, failures blocking only what needs
//! them. The plan is the real one built from the fixture root.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use modules::kmod::{self, Paths};
use modules::{load, Insert, Inserter, Outcome, Plan, Planned};

fn fixture_plan() -> Plan {
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/modules/root")
        .canonicalize()
        .unwrap();
    kmod::plan_system(&Paths::new(&root, "6.1.0-56-amd64")).unwrap()
}

/// A fake: records each call, answers from a table (default: Loaded), and yields so that
/// workers interleave.
struct Fake<'a> {
    calls: &'a Mutex<Vec<String>>,
    answers: &'a HashMap<&'static str, Insert>,
}

impl Inserter for Fake<'_> {
    fn insert(&mut self, m: &Planned) -> Insert {
        self.calls.lock().unwrap().push(m.name.clone());
        std::thread::yield_now();
        if m.name == "failover" {
            panic!("a bug in an inserter");
        }
        self.answers
            .get(m.name.as_str())
            .cloned()
            .unwrap_or(Insert::Loaded)
    }
}

/// A logical clock: every reading is later than the one before, across threads.
fn ticker() -> impl Fn() -> u64 + Sync {
    let t = AtomicU64::new(1);
    move || t.fetch_add(1, Ordering::SeqCst)
}

fn run(
    plan: &Plan,
    workers: usize,
    answers: HashMap<&'static str, Insert>,
) -> (modules::LoadReport, Vec<String>) {
    let calls = Mutex::new(Vec::new());
    let report = load(
        plan,
        workers,
        |_| {
            Ok::<_, String>(Fake {
                calls: &calls,
                answers: &answers,
            })
        },
        ticker(),
    );
    (report, calls.into_inner().unwrap())
}

fn outcome<'a>(plan: &Plan, r: &'a modules::LoadReport, name: &str) -> &'a Outcome {
    &r.modules[plan.find(name).unwrap()].outcome
}

#[test]
fn each_module_once_and_after_everything_it_waits_for() {
    let plan = fixture_plan();
    for workers in [1, 2, 4, 8] {
        for _ in 0..20 {
            let (r, calls) = run(&plan, workers, HashMap::new());
            // failover panics in the fake: recorded, its dependents not tried.
            assert_eq!(
                calls.len(),
                plan.modules.len() - 2,
                "net_failover and virtio_net not tried"
            );
            let mut sorted = calls.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), calls.len(), "a module was inserted twice");
            for (i, m) in plan.modules.iter().enumerate() {
                let t = &r.modules[i];
                if t.outcome != Outcome::Loaded {
                    continue;
                }
                assert!(t.start_ns < t.end_ns);
                for e in &m.after {
                    let p = &r.modules[e.module];
                    assert!(
                        p.end_ns < t.start_ns,
                        "{} started before {} ended",
                        m.name,
                        p.name
                    );
                }
            }
            assert_eq!(
                outcome(&plan, &r, "failover"),
                &Outcome::Failed("the inserter panicked".into())
            );
            assert_eq!(
                outcome(&plan, &r, "net_failover"),
                &Outcome::Blocked("failover".into())
            );
            assert_eq!(
                outcome(&plan, &r, "virtio_net"),
                &Outcome::Blocked("failover".into())
            );
        }
    }
}

#[test]
fn one_worker_follows_the_plan_order() {
    let plan = fixture_plan();
    let (_, calls) = run(&plan, 1, HashMap::new());
    let expected: Vec<String> = plan
        .order()
        .into_iter()
        .map(|i| plan.modules[i].name.clone())
        .filter(|n| n != "net_failover" && n != "virtio_net")
        .collect();
    assert_eq!(calls, expected);
    let mut first = calls[..2].to_vec();
    first.sort();
    assert_eq!(first, ["scsi_common", "usb_common"]);
}

#[test]
fn eexist_counts_as_done_and_failures_block_only_hard_dependents() {
    let plan = fixture_plan();
    let answers = HashMap::from([
        ("virtio_ring", Insert::AlreadyLoaded),
        ("usbcore", Insert::Failed("Exec format error".into())),
        ("crc32c_intel", Insert::Failed("No such device".into())),
    ]);
    let (r, calls) = run(&plan, 3, answers);
    assert_eq!(outcome(&plan, &r, "virtio_ring"), &Outcome::AlreadyLoaded);
    // Everything on top of virtio_ring still loads.
    assert_eq!(outcome(&plan, &r, "virtio_blk"), &Outcome::Loaded);
    assert_eq!(outcome(&plan, &r, "virtio_pci"), &Outcome::Loaded);
    // usbcore failed: every module that needs it is not tried, and says why.
    for m in ["usb_storage", "uas", "ehci_hcd", "uhci_hcd"] {
        assert_eq!(
            outcome(&plan, &r, m),
            &Outcome::Blocked("usbcore".into()),
            "{m}"
        );
        assert!(!calls.contains(&m.to_string()));
    }
    // crc32c_intel is only a soft dependency of ext4 and jbd2 (no SSE4.2 here): they load.
    assert_eq!(outcome(&plan, &r, "ext4"), &Outcome::Loaded);
    assert_eq!(outcome(&plan, &r, "jbd2"), &Outcome::Loaded);
    // Unrelated modules go on.
    assert_eq!(outcome(&plan, &r, "snd_hda_intel"), &Outcome::Loaded);
    assert_eq!(outcome(&plan, &r, "scsi_mod"), &Outcome::Loaded);
}

#[test]
fn workers_that_cannot_open_leave_the_work_to_the_others() {
    let plan = fixture_plan();
    let calls = Mutex::new(Vec::new());
    let answers = HashMap::new();
    let r = load(
        &plan,
        3,
        |w| {
            if w == 2 {
                Err("libkmod could not open /lib/modules/x".to_string())
            } else {
                Ok(Fake {
                    calls: &calls,
                    answers: &answers,
                })
            }
        },
        ticker(),
    );
    assert_eq!(
        r.worker_errors,
        vec!["worker 2: libkmod could not open /lib/modules/x"]
    );
    assert!(r.modules.iter().all(|t| t.worker != 2));
    assert_eq!(r.live(), plan.modules.len() - 3);

    // No worker at all: nothing runs, nothing hangs, every module says so.
    let r = load(&plan, 2, |_| Err::<Fake, _>("no".to_string()), ticker());
    assert_eq!(r.worker_errors.len(), 2);
    assert!(r.modules.iter().all(|t| t.outcome == Outcome::NotRun));
}

/// Workers really run side by side: with inserts that take a while, some overlap in time.
/// (Not a speed goal, which belongs to the test bed: only that the pool is a pool.)
#[test]
fn workers_overlap() {
    struct Slow;
    impl Inserter for Slow {
        fn insert(&mut self, _: &Planned) -> Insert {
            std::thread::sleep(std::time::Duration::from_millis(3));
            Insert::Loaded
        }
    }
    let plan = fixture_plan();
    let r = load(&plan, 4, |_| Ok::<_, String>(Slow), modules::boottime_ns);
    assert_eq!(r.live(), plan.modules.len());
    let workers: std::collections::HashSet<usize> = r.modules.iter().map(|t| t.worker).collect();
    assert!(workers.len() > 1, "only worker(s) {workers:?} ran");
    let overlap = r.modules.iter().enumerate().any(|(i, a)| {
        r.modules[i + 1..]
            .iter()
            .any(|b| a.start_ns < b.end_ns && b.start_ns < a.end_ns)
    });
    assert!(overlap, "no two inserts overlapped");
}
