//! A replay that yields the disk, on a real disk: a loop-mounted ext4 image whose only other
//! user is a `dd` this test starts. Alone in its test binary: the gate tells its own reads
//! from others' by the process's `read_bytes`, which a test reading another disk in a thread
//! beside it would add to.

mod common;

use std::fs;
use std::process::Command;
use std::time::{Duration, Instant};

use readahead::replay::{self, ReplayOptions, YieldTo};

fn gated(quiet_ms: u64) -> ReplayOptions {
    ReplayOptions {
        time_limit: Duration::from_secs(60),
        wait_settled: true,
        yield_to_others: Some(YieldTo {
            quiet: Duration::from_millis(quiet_ms),
            ..YieldTo::default()
        }),
        ..ReplayOptions::default()
    }
}

#[test]
fn a_yielding_replay_reads_only_while_no_one_else_uses_the_disk() {
    let Some(mut img) = testkit::ext4::Ext4Image::new(128) else {
        return;
    };
    // The test checks what is in the page cache (crates/testkit/src/reclaim.rs).
    let _reclaim = testkit::reclaim::PauseReclaim::new();
    let (a, b) = (img.path().join("a.bin"), img.path().join("b.bin"));
    // Not zeros: nothing between here and the disk may shortcut them.
    let data: Vec<u8> = (0..48u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    fs::write(&a, &data[..16 << 20]).unwrap();
    fs::write(&b, &data[16 << 20..]).unwrap();
    // A fresh mount empties the page cache of its files. No atime writes, and none of
    // ext4's own background reads: the filesystem itself must not use the disk while the
    // test watches it.
    img.mount_afresh_quiet("noatime");

    // Alone on the disk: everything is read, nothing of anyone else's is seen.
    let alone = replay::replay(&common::pack_of(&a), &gated(50));
    assert_eq!(alone.bytes_requested, 16 << 20, "{alone:?}");
    assert_eq!(alone.resident, 16 << 20, "{alone:?}");
    assert_eq!(alone.threads, 1);
    assert!(alone.request_bytes <= 256 << 10, "{alone:?}");
    assert_eq!(alone.others_bytes, 0, "{alone:?}");
    assert_eq!(alone.yield_waits, 0, "{alone:?}");

    // Beside a reader: `dd` reads b.bin around the page cache (O_DIRECT), 64 KiB at a time,
    // for 2 s. The replay starts while it reads and must not read a piece until it stopped.
    img.mount_afresh_quiet("noatime");
    let script = format!(
        "end=$(($(date +%s%N) + 2000000000)); \
         while [ $(date +%s%N) -lt $end ]; do \
           dd if={} of=/dev/null bs=64k count=64 iflag=direct status=none || exit 1; \
         done",
        b.display()
    );
    let mut dd = Command::new("sh").args(["-c", &script]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    let waiter = std::thread::spawn(move || {
        let ok = dd.wait().unwrap().success();
        (ok, t0.elapsed())
    });
    let beside = replay::replay(&common::pack_of(&a), &gated(100));
    let replay_done = t0.elapsed();
    let (dd_ok, dd_done) = waiter.join().unwrap();
    assert!(dd_ok, "dd failed");
    assert_eq!(beside.bytes_requested, 16 << 20, "{beside:?}");
    assert_eq!(beside.resident, 16 << 20, "{beside:?}");
    assert!(beside.others_bytes >= 4 << 20, "{beside:?}");
    assert!(beside.yield_waits >= 1, "{beside:?}");
    // Its first piece waited for the reader to stop, and a quiet period more; what it read
    // after that takes well under the 2 s the reader ran.
    assert!(
        Duration::from_nanos(beside.yielded_ns) + Duration::from_millis(200) >= dd_done,
        "waited {} ms, dd ran {dd_done:?}: {beside:?}",
        beside.yielded_ns / 1_000_000
    );
    assert!(
        replay_done > dd_done,
        "replay {replay_done:?}, dd {dd_done:?}"
    );
}
