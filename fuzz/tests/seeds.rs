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
