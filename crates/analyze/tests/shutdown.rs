//! A shutdown's view from its trace: the journal's unit stops (systemd) and the runner's
//! stop spans (sysvinit) take precedence over the process samples, in that order.

use std::fs;

use analyze::shutdown::{ShutdownView, StopSource};

const EVENTS: &str = "# bootprint events 1\n100000000000 recorder_start pid=7 hz=50\n\
    100000000000 shutdown_start how=systemd\n\
    108000000000 shutdown_end reason=terminated settle_s=3\n\
    108000000000 clock realtime_ns=5 monotonic_ns=107000000000\n";

#[test]
fn the_journals_unit_stops_with_a_timeout() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(d.join("events.log"), EVENTS).unwrap();
    fs::write(
        d.join("systemd-stops.log"),
        "# bootprint events 1\n\
         80000000000 unit_stopped unit=before.service result=done\n\
         100100000000 unit_stopping unit=bp-slowstop.service\n\
         100200000000 unit_stopping unit=cron.service\n\
         100300000000 unit_stopped unit=cron.service result=done\n\
         105100000000 unit_failed unit=bp-slowstop.service result=timeout\n\
         105150000000 unit_stopped unit=bp-slowstop.service result=done\n\
         106000000000 unit_stopped unit=quick.service result=done\n",
    )
    .unwrap();
    let (v, problems) = ShutdownView::load(d).unwrap();
    assert_eq!(problems, Vec::<String>::new());
    assert_eq!(v.source, StopSource::Systemd);
    assert_eq!(v.end_reason, "terminated");
    assert!((v.saved_s - 8.0).abs() < 1e-9);
    let names: Vec<&str> = v.stops.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["bp-slowstop.service", "cron.service", "quick.service"]
    );
    let blame = v.blame();
    assert_eq!(blame[0].name, "bp-slowstop.service");
    assert_eq!(blame[0].outcome, "timeout");
    assert!((blame[0].duration_s(v.saved_s) - 5.05).abs() < 1e-6);
    let quick = &v.stops[2];
    assert_eq!(quick.duration_s(v.saved_s), 0.0);
    assert!(
        v.chain().is_empty(),
        "the journal does not say what waited for what"
    );
}

#[test]
fn a_trace_without_its_end_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(
        d.join("events.log"),
        "# bootprint events 1\n100000000000 shutdown_start how=systemd\n",
    )
    .unwrap();
    let e = ShutdownView::load(d).unwrap_err();
    assert!(
        e.contains("events.log") && e.contains("expected a shutdown_end"),
        "{e}"
    );
}

/// systemd acts on the request before the recorder's unit runs: logind's record of it and a
/// stop that began first (both in the journal, before `shutdown_start`) move the start back.
#[test]
fn the_journal_knows_the_request_before_the_recorder_ran() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(d.join("events.log"), EVENTS).unwrap();
    fs::write(
        d.join("systemd-stops.log"),
        "# bootprint events 1\n\
         80000000000 unit_stopped unit=long-before.service result=done\n\
         99000000000 shutdown_requested verb=reboot\n\
         99200000000 unit_stopping unit=bp-slowstop.service\n\
         103300000000 unit_stopped unit=bp-slowstop.service result=done\n",
    )
    .unwrap();
    let (v, _) = ShutdownView::load(d).unwrap();
    assert!((v.start_uptime_s - 99.0).abs() < 1e-9, "{v:?}");
    assert!((v.saved_s - 9.0).abs() < 1e-9);
    let names: Vec<&str> = v.stops.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["bp-slowstop.service"],
        "an older stop is not the shutdown's"
    );
    assert!((v.stops[0].duration_s(v.saved_s) - 4.1).abs() < 1e-6);
}

/// The storage figures: dirty data and disk writes from the samples up to the save (not
/// after), the unmount units' extent, the closing sync; bad files are named, not fatal.
#[test]
fn storage_figures_from_the_samples_the_unmounts_and_the_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fs::write(d.join("events.log"), EVENTS).unwrap();
    fs::write(
        d.join("systemd-stops.log"),
        "# bootprint events 1\n\
         100100000000 unit_stopping unit=cron.service\n\
         100300000000 unit_stopped unit=cron.service result=done\n\
         106000000000 unit_stopping unit=home.mount\n\
         106100000000 unit_stopping unit=dev-vdb.swap\n\
         106900000000 unit_stopped unit=dev-vdb.swap result=done\n\
         107000000000 unit_stopped unit=home.mount result=done\n",
    )
    .unwrap();
    let mem = |t: u64, dirty: u64, wb: Option<u64>| {
        let wb = wb.map_or(String::new(), |w| format!("Writeback: {w} kB\n"));
        format!("{t}\nMemTotal: 1000 kB\nDirty: {dirty} kB\n{wb}\n")
    };
    // The first block has no Writeback (as traces before it was sampled); the last is after
    // the save and not counted.
    let meminfo = [
        mem(10000, 100, None),
        mem(10400, 2000, Some(48)),
        mem(10780, 60, Some(4)),
        mem(10900, 9999, Some(0)),
    ]
    .concat();
    fs::write(d.join("proc_meminfo.log"), meminfo).unwrap();
    let disk = |t: u64, vda: u64, vda1: u64| {
        format!(
            "{t}\n 254 0 vda 1 0 8 1 2 0 {vda} 3 0 4 5\n 254 1 vda1 1 0 8 1 2 0 {vda1} 3 0 4 5\n\
              253 0 dm-0 1 0 8 1 2 0 {vda1} 3 0 4 5\n\n"
        )
    };
    let diskstats = [
        disk(10000, 1000, 900),
        disk(10700, 5096, 4996),
        disk(10900, 99999, 0),
    ]
    .concat();
    fs::write(d.join("proc_diskstats.log"), diskstats).unwrap();
    fs::write(
        d.join("sync.log"),
        "# bootprint events 1\n108100000000 shutdown_sync ms=250 dirty_kb=60 writeback_kb=4 \
         after_dirty_kb=0 after_writeback_kb=0 written_kb=64\n",
    )
    .unwrap();
    let (v, problems) = ShutdownView::load(d).unwrap();
    assert_eq!(problems, Vec::<String>::new());
    let st = &v.storage;
    assert_eq!(st.dirty_first_kib, Some(100));
    assert_eq!(st.dirty_peak_kib, Some(2048));
    assert_eq!(st.dirty_last_kib, Some(64));
    assert_eq!(st.written_kib, Some(2048), "vda only: 4096 sectors");
    assert_eq!(st.unmounts, ["home.mount", "dev-vdb.swap"]);
    assert!((st.unmount_s.unwrap() - 1.0).abs() < 1e-9, "{st:?}");
    let sync = st.sync.as_ref().unwrap();
    assert!((sync.start_s - 8.1).abs() < 1e-9 && (sync.took_s - 0.25).abs() < 1e-9);
    assert_eq!(
        (sync.dirty_kib, sync.after_dirty_kib, sync.written_kib),
        (Some(64), Some(0), Some(64))
    );

    // A sync file without its figure, and a sample file that cannot be read: named.
    fs::write(
        d.join("sync.log"),
        "# bootprint events 1\n5 shutdown_sync dirty_kb=1\n",
    )
    .unwrap();
    fs::write(d.join("proc_meminfo.log"), "10000\nDirty: many kB\n").unwrap();
    let (v, problems) = ShutdownView::load(d).unwrap();
    assert!(v.storage.sync.is_none() && v.storage.dirty_first_kib.is_none());
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems
            .iter()
            .any(|p| p.contains("sync.log") && p.contains("`ms`")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("/proc_meminfo.log:2: expected a number")),
        "{problems:?}"
    );
    // Without any of the files: no figures, no problems, the stops as before.
    for f in ["sync.log", "proc_meminfo.log", "proc_diskstats.log"] {
        fs::remove_file(d.join(f)).unwrap();
    }
    let (v, problems) = ShutdownView::load(d).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(v.storage.written_kib, None);
    assert_eq!(v.storage.unmount_s.map(|u| (u * 10.0).round()), Some(10.0));
}
