//! Inputs the fuzz runner (`fuzz/`, docs/fuzzing.md) found, each shrunk by hand to what
//! triggers it: the plan and the durations file must take any number a file may hold.

use std::path::{Path, PathBuf};

use modules::plan::{self, Index, Inputs, ModInfo};
use modules::{Durations, Error, Request, Source};

/// Module `a` needs `b`; nothing else is known.
struct Two;

impl Index for Two {
    fn lookup(&mut self, alias: &str) -> Result<Vec<String>, Error> {
        Ok(vec![alias.to_string()])
    }
    fn module(&mut self, name: &str) -> Result<ModInfo, Error> {
        let deps = if name == "a" {
            vec!["b".to_string()]
        } else {
            vec![]
        };
        Ok(ModInfo {
            path: Some(PathBuf::from(format!("kernel/{name}.ko"))),
            deps,
            ..ModInfo::default()
        })
    }
    fn blacklisted(&self, _: &str) -> bool {
        false
    }
}

/// fuzz target modules_plan: a durations file with `a 18446744073709551615` made the
/// priority of `a`'s dependency overflow (a panic with overflow checks, a wrapped, tiny
/// priority without them, which loads the slowest chain last).
#[test]
fn fuzz_modules_plan_priority_of_a_huge_duration_saturates() {
    let durations = Durations::parse(
        "bootprint-module-durations 1\na 18446744073709551615\nb 10\n",
        Path::new("modules-durations"),
    )
    .unwrap();
    let inputs = Inputs {
        requests: vec![Request {
            name: "a".into(),
            options: String::new(),
            source: Source::List(PathBuf::from("/etc/modules"), 1),
        }],
        durations,
        ..Inputs::default()
    };
    let p = plan::build(&mut Two, &inputs).unwrap();
    let b = p.find("b").unwrap();
    assert_eq!(p.modules[b].priority_us, u64::MAX);
    assert_eq!(p.order().len(), 2);
}

/// fuzz target modules_durations: learning a new time for a module whose stored time is
/// near u64::MAX overflowed the mean.
#[test]
fn fuzz_modules_durations_learn_from_a_huge_stored_time() {
    let mut d = Durations::parse(
        "bootprint-module-durations 1\nx 18446744073709551615\n",
        Path::new("modules-durations"),
    )
    .unwrap();
    d.learn("x", 5);
    assert_eq!(d.expected_us("x"), 9_223_372_036_854_775_810);
}
