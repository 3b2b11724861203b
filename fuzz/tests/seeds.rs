//! Every target on every seed, in this process: a seed (a fixture) that makes a parser
//! panic fails here, in the unit tests, before any fuzzing.

#[test]
fn every_target_takes_its_seeds() {
    let targets = bootprint_fuzz::all();
    assert!(targets.len() >= 40, "{} targets", targets.len());
    let mut names = std::collections::BTreeSet::new();
    for t in &targets {
        assert!(names.insert(t.name), "two targets named {}", t.name);
        let seeds = (t.seeds)();
        assert!(
            !seeds.is_empty(),
            "{} has no seeds (fixtures moved?)",
            t.name
        );
        for s in &seeds {
            (t.run)(s);
        }
    }
}

#[test]
fn generated_inputs_run() {
    // A few generated inputs of every target, the structured ones among them.
    for t in bootprint_fuzz::all() {
        let g = bootprint_fuzz::mutate::Generator::new(&t, 7, 1 << 16);
        for i in 0..40 {
            (t.run)(&g.input(g.seeds().len() as u64 + i));
        }
    }
}

/// Inputs the runs found (`fuzz/regressions/TARGET-HASH`, copied from the crash directory
/// once fixed), each through its target: they must stay fixed. Built in the test profile,
/// so with overflow checks, as the fuzz profile is.
#[test]
fn found_inputs_stay_fixed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let targets = bootprint_fuzz::all();
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let (target, _) = name.rsplit_once('-').expect("TARGET-HASH");
        let t = targets
            .iter()
            .find(|t| t.name == target)
            .unwrap_or_else(|| panic!("{name}: no target {target}"));
        (t.run)(&std::fs::read(e.path()).unwrap());
        n += 1;
    }
    assert!(n >= 5, "{n} inputs in {}", dir.display());
}
