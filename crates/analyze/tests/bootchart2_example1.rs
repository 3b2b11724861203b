//! bootchart2 compatibility: the example boot log from bootchart2 (`examples/1`) parses and
//! every figure and tree stage agrees with that project's reference extracts.

use std::path::PathBuf;

use analyze::bootchart::{self, ProcessTree, TreeRow};
use trace::Trace;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bootchart2-example1")
}

fn trace() -> Trace {
    Trace::open(&dir()).expect("example trace parses")
}

fn extract(name: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(dir().join(name)).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(['\t', ' ']).map(str::to_string).collect())
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn cpu_series_equals_extract() {
    let t = trace();
    let ours = bootchart::cpu_series(&t.stat);
    let want = extract("extract.proc_stat.log");
    assert_eq!(ours.len(), want.len());
    assert_eq!(ours.len(), 141);
    for (o, w) in ours.iter().zip(&want) {
        assert_eq!(o.t_cs, w[0].parse::<u64>().unwrap());
        let f = |i: usize| w[i].parse::<f64>().unwrap();
        assert!(
            close(o.user, f(1)) && close(o.sys, f(2)) && close(o.io, f(3)),
            "{o:?} vs {w:?}"
        );
    }
}

#[test]
fn disk_series_equals_extract() {
    let t = trace();
    let ncpus = bootchart::num_cpus(&t.header);
    assert_eq!(ncpus, 2);
    let ours = bootchart::disk_series(&t.disk, ncpus);
    let want = extract("extract.proc_diskstats.log");
    assert_eq!(ours.len(), want.len());
    let mut nonzero = 0;
    for (o, w) in ours.iter().zip(&want) {
        assert_eq!(o.t_cs, w[0].parse::<u64>().unwrap());
        let f = |i: usize| w[i].parse::<f64>().unwrap();
        assert!(
            close(o.read_kibs, f(1)) && close(o.write_kibs, f(2)) && close(o.util, f(3)),
            "{o:?} vs {w:?}"
        );
        nonzero += usize::from(o.read_kibs > 0.0);
    }
    assert!(nonzero > 50, "the comparison must cover real disk activity");
}

#[test]
fn per_process_sample_counts_equal_extract2() {
    let t = trace();
    let stats = bootchart::ps_stats(&t.ps_log().unwrap());
    let want = extract("extract2.proc_ps.log");
    assert_eq!(stats.processes.len(), want.len());
    for w in &want {
        let pid: u32 = w[0].parse().unwrap();
        let p = stats.processes.iter().find(|p| p.pid == pid).unwrap();
        // The command may hold spaces; pid first, ppid and count last.
        let n = w.len();
        assert_eq!(p.cmd, w[1..n - 2].join(" "), "pid {pid}");
        assert_eq!(p.ppid, w[n - 2].parse::<u32>().unwrap(), "pid {pid}");
        assert_eq!(
            p.samples.len(),
            w[n - 1].parse::<usize>().unwrap(),
            "pid {pid}"
        );
    }
}

fn check_tree(rows: &[TreeRow], file: &str) {
    let text = std::fs::read_to_string(dir().join(file)).unwrap();
    let want: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('\t').collect())
        .collect();
    assert_eq!(rows.len(), want.len(), "{file}: number of processes");
    for (i, (r, w)) in rows.iter().zip(&want).enumerate() {
        let ctx = format!("{file} line {}: ours {r:?}, want {w:?}", i + 1);
        assert_eq!(r.pid, w[0].parse::<u32>().unwrap(), "{ctx}");
        assert_eq!(r.cmd, w[1], "{ctx}");
        assert_eq!(r.start_ms, w[2].parse::<f64>().unwrap(), "{ctx}");
        // The reference durations come from integer arithmetic; bootchart2's own test allows
        // them to lie below ours by less than 5 ms.
        let d = w[3].parse::<f64>().unwrap();
        assert!(
            (d - r.duration_ms).abs() < 5.0 + 1e-9 || (d == 0.0 && r.duration_ms == 0.0),
            "{ctx}"
        );
        assert_eq!(r.children, w[4].parse::<usize>().unwrap(), "{ctx}");
        assert_eq!(r.samples, w[5].trim().parse::<usize>().unwrap(), "{ctx}");
    }
}

#[test]
fn tree_stages_equal_extracts() {
    let t = trace();
    let stats = bootchart::ps_stats(&t.ps_log().unwrap());
    let mut tree = ProcessTree::build(&stats);
    check_tree(&tree.flatten(), "extract.processtree.1.log");
    assert_eq!(tree.merge_logger("bootchartd"), 0);
    check_tree(&tree.flatten(), "extract.processtree.2.log");
    let pruned = tree.prune();
    assert!(pruned > 0);
    check_tree(&tree.flatten(), "extract.processtree.3b.log");
    tree.merge_exploders(&["hwup"]);
    check_tree(&tree.flatten(), "extract.processtree.3c.log");
    assert!(tree.merge_siblings() > 0);
    check_tree(&tree.flatten(), "extract.processtree.3d.log");
    assert!(tree.merge_runs() > 0);
    check_tree(&tree.flatten(), "extract.processtree.3e.log");
}
