//! The hand-made bootprint trace in `tests/fixtures/mini-trace` (see its README for the boot
//! it describes): milestones, boot done, idle fractions, top lists, processes, series, and
//! the fallbacks when events.log and dmesg are missing.

use std::path::{Path, PathBuf};

use analyze::{analyze, BlockedSource, BootModel, TraceKind};
use trace::Trace;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/mini-trace")
}

fn model_of(dir: &Path) -> BootModel {
    analyze(&Trace::open(dir).unwrap()).unwrap()
}

/// A copy of the fixture without some files, in a fresh temporary directory.
fn copy_without(drop: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for entry in std::fs::read_dir(fixture()).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if !drop.contains(&name.as_str()) {
            std::fs::copy(entry.path(), dir.join(&name)).unwrap();
        }
    }
    tmp
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn milestones_from_events_and_dmesg() {
    let m = model_of(&fixture());
    assert_eq!(m.source, TraceKind::Bootprint);
    let ms = &m.milestones;
    let k = ms.kernel.as_ref().unwrap();
    assert!(near(k.t_s, 4.2) && k.source == "dmesg", "{k:?}");
    assert!(near(ms.init_exec.as_ref().unwrap().t_s, 5.1));
    assert!(near(ms.text_login.as_ref().unwrap().t_s, 12.0));
    assert_eq!(ms.text_login.as_ref().unwrap().source, "event");
    assert!(ms.graphical_login.is_none());
    assert!(near(ms.boot_done.t_s, 14.0));
    assert_eq!(ms.boot_done.source, "event (idle)");
    assert!(near(m.first_sample_s, 5.0) && near(m.last_sample_s, 20.0));
}

#[test]
fn idle_and_iowait_fractions_to_boot_done() {
    let m = model_of(&fixture());
    // 14 busy intervals (idle 20, iowait 20 of 100 ticks) and 4 settling ones (idle 60,
    // iowait 10) between 5 s and 14 s.
    let c = &m.cpu_totals;
    assert!(near(c.idle_fraction, 520.0 / 1800.0), "{c:?}");
    assert!(near(c.iowait_fraction, 320.0 / 1800.0), "{c:?}");
    assert!(
        near(c.user_fraction, (14.0 * 40.0 + 4.0 * 20.0) / 1800.0),
        "{c:?}"
    );
    assert!(near(c.from_s, 5.0) && near(c.to_s, 14.0));
    assert_eq!(m.system.ncpus, 2);
    assert_eq!(m.system.clk_tck, 100);
    assert_eq!(m.system.hz, Some(2.0));
    assert!(near(m.system.sample_interval_s, 0.5));
    assert!(m.notes.is_empty(), "{:?}", m.notes);
}

#[test]
fn series_per_interval() {
    let m = model_of(&fixture());
    assert_eq!(m.cpu.len(), 30);
    let first = m.cpu[0];
    assert!(near(first.t_s, 5.5) && near(first.dt_s, 0.5));
    assert!(near(first.user, 0.4) && near(first.sys, 0.2) && near(first.iowait, 0.2));
    let last = m.cpu[29];
    assert!(near(last.user, 0.02) && near(last.iowait, 0.0));
    assert_eq!(m.disk.len(), 30);
    // vda only: vda1 is its partition and loop0 is virtual.
    let d = m.disk[0];
    assert!(near(d.read_bps, 1000.0 * 512.0 / 0.5), "{d:?}");
    assert!(near(d.util, 0.6), "{d:?}");
    let settling = m.disk.iter().find(|d| near(d.t_s, 12.5)).unwrap();
    assert!(near(settling.write_bps, 64.0 * 512.0 / 0.5) && near(settling.util, 0.04));
    assert_eq!(m.memory.len(), 31);
    assert_eq!(m.memory[1].free_kb, 799_000);
}

#[test]
fn processes_tree_and_top_lists() {
    let m = model_of(&fixture());
    assert_eq!(m.blocked_source, BlockedSource::DelayAcct);
    let names: Vec<(&str, u32)> = m
        .processes
        .iter()
        .map(|p| (p.name.as_str(), p.depth))
        .collect();
    // Tree order: roots by start time, children by start time.
    assert_eq!(
        names,
        vec![
            ("kthreadd", 0),
            ("kworker/0:1", 1),
            ("init", 0),
            ("udevd", 1),
            ("modprobe", 2),
            ("agetty", 1),
            ("sleep", 1),
        ]
    );
    let udev = m.process(200).unwrap();
    assert!(near(udev.start_s, 5.2) && near(udev.cpu_s, 4.2) && near(udev.blocked_s, 1.4));
    assert_eq!(
        udev.cmdline.as_deref(),
        Some("/lib/systemd/systemd-udevd --daemon")
    );
    assert_eq!(udev.exe.as_deref(), Some("/lib/systemd/systemd-udevd"));
    assert!(udev.alive_at_end && !udev.kernel_thread);
    assert_eq!(m.processes[udev.parent.unwrap()].pid, 1);
    // Busy intervals: 30 ticks in 0.5 s on 100 ticks/s is 0.6 of a CPU.
    assert!(near(udev.samples[1].cpu, 0.6), "{:?}", udev.samples[1]);
    assert!(udev.samples.iter().any(|s| s.state == 'D'));
    // Pid 250 is used twice: modprobe under udevd, later sleep under init.
    let twice: Vec<_> = m.processes.iter().filter(|p| p.pid == 250).collect();
    assert_eq!(twice.len(), 2);
    assert!(near(twice[0].start_s, 6.1) && near(twice[0].end_s, 6.5) && !twice[0].alive_at_end);
    assert!(near(twice[1].start_s, 15.0) && near(twice[1].end_s, 16.0));
    assert!(m.processes[0].kernel_thread && m.processes[1].kernel_thread);
    let top_cpu: Vec<&str> = m
        .top_cpu
        .iter()
        .map(|&i| m.processes[i].name.as_str())
        .collect();
    assert_eq!(top_cpu[..3], ["udevd", "init", "modprobe"]);
    let top_io: Vec<&str> = m
        .top_blocked
        .iter()
        .map(|&i| m.processes[i].name.as_str())
        .collect();
    assert_eq!(top_io, ["udevd"]);
}

#[test]
fn fallbacks_without_events_and_dmesg() {
    let dir_tmp = copy_without(&["events.log", "dmesg", "cmdline2.log"]);
    let dir = dir_tmp.path();
    let m = model_of(dir);
    let ms = &m.milestones;
    // Kernel: the first sample; login: agetty's start; boot done: computed, and it agrees
    // with what the recorder wrote (idle from 14 s, held 3 s).
    let k = ms.kernel.as_ref().unwrap();
    assert!(near(k.t_s, 5.0) && k.source == "first sample");
    assert!(ms.init_exec.is_none());
    let login = ms.text_login.as_ref().unwrap();
    assert!(
        near(login.t_s, 12.0) && login.source == "process agetty (300)",
        "{login:?}"
    );
    assert!(near(ms.boot_done.t_s, 14.0), "{:?}", ms.boot_done);
    assert_eq!(ms.boot_done.source, "computed: idle after login");
    assert!(m.process(200).unwrap().cmdline.is_none());
    assert!(m.notes.iter().any(|n| n.contains("dmesg")));
}

#[test]
fn d_state_estimate_when_delay_accounting_is_off() {
    let dir_tmp = copy_without(&["proc_ps.log"]);
    let dir = dir_tmp.path();
    let text = std::fs::read_to_string(fixture().join("proc_ps.log")).unwrap();
    // Zero field 42 (delayacct_blkio_ticks) on every line.
    let zeroed: String = text
        .lines()
        .map(|l| {
            if let Some((head, tail)) = l.split_once(") ") {
                let mut f: Vec<&str> = tail.split(' ').collect();
                f[42 - 3] = "0";
                format!("{head}) {}\n", f.join(" "))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(dir.join("proc_ps.log"), zeroed).unwrap();
    let m = model_of(dir);
    assert_eq!(m.blocked_source, BlockedSource::DStateSamples);
    let udev = m.process(200).unwrap();
    let d = udev.samples.iter().filter(|s| s.state == 'D').count();
    assert!(d > 0);
    assert!(near(udev.blocked_s, d as f64 * 0.5));
}

#[test]
fn reads_a_gzipped_tar_like_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bootchart.tgz");
    {
        let f = std::fs::File::create(&path).unwrap();
        let gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        for name in [
            "header",
            "proc_stat.log",
            "proc_diskstats.log",
            "proc_ps.log",
            "events.log",
        ] {
            tar.append_path_with_name(fixture().join(name), format!("./{name}"))
                .unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap();
    }
    let from_tgz = model_of(&path);
    let from_dir = model_of(&fixture());
    assert!(near(
        from_tgz.milestones.boot_done.t_s,
        from_dir.milestones.boot_done.t_s
    ));
    assert_eq!(from_tgz.processes.len(), from_dir.processes.len());
    assert_eq!(from_tgz.cpu, from_dir.cpu);
    // No dmesg in the archive: kernel falls back to the first sample.
    assert_eq!(
        from_tgz.milestones.kernel.as_ref().unwrap().source,
        "first sample"
    );
}

#[test]
fn errors_name_file_line_and_expectation() {
    let dir_tmp = copy_without(&["proc_ps.log", "proc_diskstats.log"]);
    let dir = dir_tmp.path();
    let err = Trace::open(dir).unwrap_err().to_string();
    assert!(
        err.contains("required file proc_diskstats.log is missing"),
        "{err}"
    );
    std::fs::copy(
        fixture().join("proc_diskstats.log"),
        dir.join("proc_diskstats.log"),
    )
    .unwrap();
    std::fs::write(dir.join("proc_ps.log"), "500\n1 (init) S 0 0 0\n\n").unwrap();
    let t = Trace::open(dir).unwrap();
    let err = analyze(&t).unwrap_err().to_string();
    assert_eq!(
        err,
        "proc_ps.log:2: expected at least 20 fields after the command, found 4"
    );
    std::fs::write(
        dir.join("events.log"),
        "# bootprint events 1\n12 milestone oops\n",
    )
    .unwrap();
    let err = Trace::open(dir).unwrap_err().to_string();
    assert!(err.starts_with("events.log:2: expected key=value"), "{err}");
}
