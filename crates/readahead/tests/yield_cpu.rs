//! A replay that yields the CPUs as well as the disk, for real: a loop-mounted ext4 image
//! nobody else reads, while busy-looping child processes fill every CPU. Alone in its test
//! binary, as `yield_io.rs` is: the gate counts this process's CPU time and `read_bytes` as
//! its own.

mod common;

use std::fs;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use readahead::replay::{self, ReplayOptions, YieldTo};

/// Busy loops, one per CPU, ended (killed) on drop.
struct Burners(Vec<Child>);

impl Drop for Burners {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_replay_yielding_the_cpus_waits_while_others_keep_them_busy() {
    let Some(mut img) = testkit::ext4::Ext4Image::new(64) else {
        return;
    };
    let _reclaim = testkit::reclaim::PauseReclaim::new();
    let file = img.path().join("a.bin");
    let data: Vec<u8> = (0..8u32 << 20)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    fs::write(&file, &data).unwrap();
    img.mount_afresh_quiet("noatime");

    // Others' share must pass 40 % of all CPUs while the loops run and stay under it after:
    // a loop per CPU makes it near 100 %, far from the line both ways.
    let opts = ReplayOptions {
        time_limit: Duration::from_secs(60),
        wait_settled: true,
        yield_to_others: Some(YieldTo {
            quiet: Duration::from_millis(100),
            cpu_max_share: Some(0.4),
            ..YieldTo::default()
        }),
        ..ReplayOptions::default()
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let burners = Burners(
        (0..cpus)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .spawn()
                    .unwrap()
            })
            .collect(),
    );
    std::thread::sleep(Duration::from_millis(200));
    let t0 = Instant::now();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        drop(burners);
        t0.elapsed()
    });
    let st = replay::replay(&common::pack_of(&file), &opts);
    let replay_done = t0.elapsed();
    let burned = stopper.join().unwrap();
    assert_eq!(st.bytes_requested, 8 << 20, "{st:?}");
    assert_eq!(st.resident, 8 << 20, "{st:?}");
    assert!(st.yield_cpu_waits >= 1, "{st:?}");
    // Nothing was read before the loops ended: the first piece waited for them.
    assert!(
        replay_done > burned,
        "replay {replay_done:?}, loops {burned:?}"
    );
    assert!(
        Duration::from_nanos(st.yielded_ns) + Duration::from_millis(200) >= burned,
        "waited {} ms, loops ran {burned:?}: {st:?}",
        st.yielded_ns / 1_000_000
    );
    assert!(!st.timed_out, "{st:?}");
}
