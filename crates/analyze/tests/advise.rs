//! `analyze::advise` on real traces. Each rule is checked on a real boot where it has
//! evidence: bootchart2's example log (tests/fixtures/bootchart2-example1, Ubuntu 8.10) as it
//! is (udev's modprobe storm, the disk-bound readahead stretch), a copy of it with one cost
//! planted by a minimal edit (an `ifup` process waiting before the getty, a 2 s `sleep`, a
//! 2.2 s stretch where CPU and disk were idle), and a real test-bed boot
//! (tests/data/testbed-sysvinit.tgz: Debian 12, sysvinit, recorded by bootprint-boot under QEMU
//! on 2026-11-22).

mod common;

use std::path::Path;

use analyze::advise::{advise, Finding};
use common::{example, planted, ps_line, testbed};

fn findings_of(dir: &Path) -> (analyze::BootModel, Vec<Finding>) {
    let t = trace::Trace::open(dir).unwrap();
    let m = analyze::analyze(&t).unwrap();
    let k = t
        .dmesg
        .as_deref()
        .map(|d| kernel::Report::from_text("dmesg", d));
    let f = advise(&m, k.as_ref());
    (m, f)
}

fn with_id<'a>(f: &'a [Finding], id: &str) -> Vec<&'a Finding> {
    f.iter().filter(|x| x.id == id).collect()
}

#[test]
fn example_log_as_recorded() {
    let (_, f) = findings_of(&example());
    assert!(
        f.iter().all(|x| !x.evidence.is_empty()),
        "no finding without evidence"
    );
    // udevd ran modprobe 59 times between 13.2 and 15.4 s.
    let storm = with_id(&f, "storm");
    let modprobe = storm
        .iter()
        .find(|x| x.title.starts_with("modprobe was run"))
        .expect("modprobe storm");
    assert!(modprobe.title.contains("59 times"), "{}", modprobe.title);
    assert!(modprobe.title.contains("udevd"), "{}", modprobe.title);
    let e = &modprobe.evidence[0];
    assert!(e.from_s > 13.0 && e.to_s < 15.6, "{e:?}");
    // readahead-list read 42 MB with the disk ~100% busy from 5.5 to 12.5 s.
    let disk = with_id(&f, "disk-bound");
    let first = disk
        .iter()
        .find(|x| x.evidence[0].from_s < 6.0)
        .expect("disk-bound at 5.5 s");
    assert!(first.evidence[0].to_s > 12.0, "{:?}", first.evidence[0]);
    assert!(
        first.evidence.iter().any(|e| e.what == "readahead-list"),
        "the reader that waited is named: {:?}",
        first.evidence
    );
    assert!(first.gain_s.unwrap() > 1.0);
    // No network programs ran in that boot.
    assert!(with_id(&f, "network-wait").is_empty());
}

#[test]
fn planted_network_wait_before_the_getty() {
    // ifup (pid 9001, under init) asleep from 8.0 s to 12.0 s; the getty starts at 18.58 s.
    let dir_tmp = planted(|name, t, lines| {
        if name == "proc_ps.log" && (800..=1200).contains(&t) {
            lines.push(ps_line(9001, "ifup", 1, 800));
        }
    });
    let dir = dir_tmp.path();
    let (_, f) = findings_of(dir);
    let net = with_id(&f, "network-wait");
    assert_eq!(net.len(), 1, "{f:#?}");
    let e = &net[0].evidence[0];
    assert_eq!(e.pid, Some(9001));
    assert!(
        (e.from_s - 8.0).abs() < 0.01 && (e.to_s - 12.0).abs() < 0.25,
        "{e:?}"
    );
    assert!(e.samples >= 15, "{e:?}");
    let gain = net[0].gain_s.unwrap();
    assert!(gain > 3.7 && gain < 4.3, "{gain}");
}

#[test]
fn planted_sleep() {
    let dir_tmp = planted(|name, t, lines| {
        if name == "proc_ps.log" && (1620..=1820).contains(&t) {
            lines.push(ps_line(9002, "sleep", 1, 1620));
        }
    });
    let dir = dir_tmp.path();
    let (_, f) = findings_of(dir);
    let s = with_id(&f, "sleep");
    let planted = s
        .iter()
        .find(|x| x.evidence[0].pid == Some(9002))
        .expect("the planted sleep");
    let e = &planted.evidence[0];
    assert!(
        (e.from_s - 16.2).abs() < 0.01 && (e.to_s - 18.2).abs() < 0.25,
        "{e:?}"
    );
    assert!(planted.gain_s.unwrap() > 1.8);
    // The example's own sleeps under one second are found too, the short polls not.
    assert!(s.iter().all(|x| x.gain_s.unwrap() >= 0.5));
}

#[test]
fn planted_idle_gap() {
    // Everything from 16.01 s on happens 2 s later, and the CPUs were idle in between: the
    // blocks' times, the processes' start times and the idle counters move.
    let dir_tmp = planted(|name, t, lines| {
        if t < 1601 {
            return;
        }
        match name {
            "proc_stat.log" => {
                for l in lines.iter_mut() {
                    let mut f: Vec<String> = l.split_whitespace().map(String::from).collect();
                    if f[0].starts_with("cpu") {
                        let add = if f[0] == "cpu" { 400 } else { 200 };
                        f[4] = (f[4].parse::<u64>().unwrap() + add).to_string();
                        *l = f.join(" ");
                    }
                }
            }
            "proc_ps.log" => {
                for l in lines.iter_mut() {
                    let close = l.rfind(')').unwrap();
                    let (head, tail) = l.split_at(close + 2);
                    let mut f: Vec<String> = tail.split(' ').map(String::from).collect();
                    // tail starts at field 3 (state): starttime is field 22.
                    let start: u64 = f[19].parse().unwrap();
                    if start >= 1601 {
                        f[19] = (start + 200).to_string();
                    }
                    *l = format!("{head}{}", f.join(" "));
                }
            }
            _ => {}
        }
    });
    let dir = dir_tmp.path();
    // Shift the block times last (the edit above saw the original times).
    for name in ["proc_stat.log", "proc_diskstats.log", "proc_ps.log"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let out: Vec<String> = text
            .split("\n\n")
            .map(|b| {
                let mut lines: Vec<&str> = b.lines().collect();
                let Some(first) = lines.first().copied() else {
                    return String::new();
                };
                let shifted;
                if let Ok(t) = first.trim().parse::<u64>() {
                    if t >= 1601 {
                        shifted = (t + 200).to_string();
                        lines[0] = &shifted;
                        return lines.join("\n");
                    }
                }
                lines.join("\n")
            })
            .collect();
        std::fs::write(dir.join(name), out.join("\n\n")).unwrap();
    }
    let (m, f) = findings_of(dir);
    assert!((m.milestones.text_login.as_ref().unwrap().t_s - 20.58).abs() < 0.01);
    let gaps = with_id(&f, "idle-gap");
    let g = gaps
        .iter()
        .find(|x| x.evidence[0].from_s <= 16.1 && x.evidence[0].to_s >= 17.9)
        .unwrap_or_else(|| panic!("a gap over 16..18 s: {gaps:#?}"));
    assert!(g.gain_s.unwrap() >= 1.9, "{g:?}");
    assert!(g.evidence[0].samples >= 1);
    // The unplanted example has no such gap.
    let (_, f0) = findings_of(&example());
    assert!(with_id(&f0, "idle-gap")
        .iter()
        .all(|x| x.gain_s.unwrap() < 1.0));
}

#[test]
fn real_testbed_boot() {
    let (m, f) = findings_of(&testbed());
    assert!(f.iter().all(|x| !x.evidence.is_empty()));
    // udev's init script waits in `udevadm settle` (pid 369) 12.56..13.88 s.
    let settle = with_id(&f, "settle");
    assert_eq!(settle.len(), 1, "{f:#?}");
    assert_eq!(settle[0].evidence[0].pid, Some(369));
    assert!(settle[0].gain_s.unwrap() > 1.0);
    // ssh starts before the getty (25.64 s) in runlevel 2.
    let late = with_id(&f, "late-service");
    assert_eq!(late.len(), 1);
    assert!(late[0].title.starts_with("ssh "), "{}", late[0].title);
    assert_eq!(late[0].evidence[0].pid, Some(850));
    // The udev script's mknod loop: 18 runs by pid 267.
    let storm = with_id(&f, "storm");
    let mknod = storm
        .iter()
        .find(|x| x.title.starts_with("mknod"))
        .expect("mknod storm");
    assert!(
        mknod.title.contains("18 times") && mknod.title.contains("pid 267"),
        "{}",
        mknod.title
    );
    // udev's worker pool is not a storm, nor are a script's subshells.
    assert!(storm.iter().all(|x| !x.title.contains("udev-worker")));
    assert!(storm
        .iter()
        .all(|x| !x.title.contains("mountkernfs.sh was run")));
    // The kernel's findings are carried over with their dmesg lines.
    let floppy = f
        .iter()
        .find(|x| x.id == "kernel:floppy")
        .expect("kernel floppy finding");
    assert!(floppy.evidence[0].what.starts_with("dmesg line"));
    // Sorted by gain, estimated ones first.
    let gains: Vec<f64> = f.iter().map_while(|x| x.gain_s).collect();
    assert!(gains.windows(2).all(|w| w[0] >= w[1]), "{gains:?}");
    assert!(m.milestones.text_login.is_some());
}

#[test]
fn disk_bound_after_a_readahead_replay_asks_for_a_new_pack() {
    // The hand-made mini-trace reads 1000 sectors per 0.5 s with the disk 60% busy from 5 to
    // 12 s; a copy with a `readahead_hit` event says this boot replayed a pack.
    let src = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/mini-trace");
    let (_, plain) = findings_of(&src);
    let d = with_id(&plain, "disk-bound");
    assert_eq!(d.len(), 1);
    assert!(d[0].fix.starts_with("enable readahead"), "{}", d[0].fix);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    let mut ev = std::fs::read_to_string(dir.join("events.log")).unwrap();
    ev.push_str("14000000000 readahead_hit replayed=50000000 resident=20000000 ratio=0.400\n");
    std::fs::write(dir.join("events.log"), ev).unwrap();
    let (m, f) = findings_of(dir);
    assert_eq!(m.readahead.unwrap().replayed_bytes, 50_000_000);
    let d = with_id(&f, "disk-bound");
    assert!(
        d[0].fix.contains("50.0 MB, 40% still cached"),
        "{}",
        d[0].fix
    );
    assert!(d[0].fix.contains("bootprint readahead relearn"));
}

/// Runs `f` on another thread and fails if it takes longer than a minute (a loop).
fn finishes<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} did not finish: a walk up the tree loops"))
}

/// Defect 3: a model whose parent links form a cycle (a pid reused by an ancestor) must not
/// make any walk up the tree loop: advise (owners, services) ends, and so does service_of.
#[test]
fn defect3_walks_up_a_parent_cycle_end() {
    let t = trace::Trace::open(&example()).unwrap();
    let mut m = analyze::analyze(&t).unwrap();
    // Every process's chain of parents now ends in a cycle through the roots.
    let deepest = (0..m.processes.len())
        .max_by_key(|&i| m.processes[i].depth)
        .unwrap();
    for i in 0..m.processes.len() {
        if m.processes[i].parent.is_none() {
            m.processes[i].parent = Some(deepest);
        }
    }
    let found = finishes("advise", {
        let m = m.clone();
        move || advise(&m, None).len()
    });
    assert!(found > 0);
    finishes("service_of", move || {
        let services = analyze::services::services(&m);
        (0..m.processes.len())
            .filter(|&i| analyze::services::service_of(&m, &services, i).is_some())
            .count()
    });
}
