//! Learn and replay for real on this machine: real fanotify, page cache, mincore, FIEMAP and
//! readahead(2), on a few tens of MB of files in a temporary directory. Needs root (fanotify
//! filesystem marks); without it the tests say so and pass vacuously.
//!
//! The page cache is emptied with posix_fadvise(DONTNEED) on the test's own files only, so
//! the rest of the machine is not disturbed.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use readahead::learn::{self, LearnConfig, PackOptions};
use readahead::pack::Pack;
use readahead::replay::{self, ReplayOptions};
use readahead::{sys, system};

const FILES: usize = 24;
const FILE_SIZE: u64 = 1 << 20;
const READS: usize = 3000;

fn root_or_skip() -> bool {
    if ::sys::euid() != 0 {
        testkit::skip("needs root for fanotify filesystem marks");
        return false;
    }
    true
}

/// A directory of FILES files of FILE_SIZE bytes each, written, synced and dropped from the
/// page cache.
fn setup() -> (tempfile::TempDir, Vec<PathBuf>) {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut files = Vec::new();
    for i in 0..FILES {
        let p = d.join(format!("f{i:02}.bin"));
        let mut buf = vec![0u8; FILE_SIZE as usize];
        for b in buf.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b.copy_from_slice(&x.to_le_bytes()[..b.len()]);
        }
        let mut f = File::create(&p).unwrap();
        f.write_all(&buf).unwrap();
        f.sync_all().unwrap();
        files.push(p);
    }
    drop_cache(&files);
    (tmp, files)
}

fn drop_cache(files: &[PathBuf]) {
    for p in files {
        let f = File::open(p).unwrap();
        sys::fadvise_dontneed(&f, 0, 0).unwrap();
    }
}

fn resident_pages(p: &Path) -> Vec<bool> {
    let f = File::open(p).unwrap();
    sys::mincore(&f, f.metadata().unwrap().len()).unwrap()
}

/// The order in which the workload first touches the files.
fn first_order() -> Vec<usize> {
    (0..FILES).map(|i| (i * 7 + 3) % FILES).collect()
}

/// A file mapped read-only, without readahead on faults (MADV_RANDOM), its pages locked as
/// they are faulted in (mlock2 MLOCK_ONFAULT). The workload touches each page it read
/// through it so that the page stays resident until the pack is built: the machines this
/// runs on use a kernel whose DAMON `pageout` scheme (a kdamond on physical memory evicting
/// regions idle for 60 s) evicts page-cache pages read once within seconds, and mincore
/// learning can only learn what is still resident (this test failed in a CI run as "page 18
/// of file 0 not learned"). Reading through the mapping instead of pread is not the same:
/// faults brought in 12.8 MB for 7.8 MB touched; touching after pread also adds pages (seen
/// with the tracepoints), so only the mincore test pins.
struct Pinned {
    ptr: *mut u8,
    len: usize,
}

impl Pinned {
    fn map(f: &File, len: usize) -> Pinned {
        use std::os::fd::AsRawFd;
        // SAFETY: a fresh read-only shared mapping of an open file; checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        assert_ne!(
            ptr,
            libc::MAP_FAILED,
            "mmap: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: `ptr..ptr+len` is the mapping made above.
        unsafe {
            assert_eq!(libc::madvise(ptr, len, libc::MADV_RANDOM), 0);
            assert_eq!(
                libc::mlock2(ptr, len, libc::MLOCK_ONFAULT),
                0,
                "mlock2: {}",
                std::io::Error::last_os_error()
            );
        }
        Pinned {
            ptr: ptr.cast(),
            len,
        }
    }

    /// Reads `n` bytes at `off` through the mapping (faulting its page in).
    fn read(&self, off: u64, n: usize) -> u64 {
        let off = off as usize;
        assert!(off + n <= self.len);
        // SAFETY: in bounds of the live mapping (checked above); volatile so the reads happen.
        (off..off + n)
            .map(|i| u64::from(unsafe { std::ptr::read_volatile(self.ptr.add(i)) }))
            .sum()
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once (which also unlocks it).
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// Reads 512 bytes in each of READS scattered pages (first one page of every file, in
/// `first_order`); returns the (file, page) pairs it touched and the mappings that keep
/// those pages resident (drop them to let the pages go).
fn workload(files: &[PathBuf], pin: bool) -> (BTreeSet<(usize, u64)>, Vec<Pinned>) {
    let page = ::sys::page_size();
    let pages = FILE_SIZE / page;
    // Opened at first use, so opens happen in first-access order too.
    let mut handles: Vec<Option<(File, Pinned)>> = files.iter().map(|_| None).collect();
    let mut touched = BTreeSet::new();
    let mut sum = 0u64;
    let mut buf = [0u8; 512];
    let mut x = 12345u64;
    let mut next = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x
    };
    let mut seq: Vec<usize> = first_order();
    seq.extend((0..READS - FILES).map(|_| ((next() >> 33) as usize) % FILES));
    for (n, fi) in seq.into_iter().enumerate() {
        let x = next();
        // Pages are drawn from the first half of each file only, so part of every file is
        // never used and a replay that read whole files would show.
        let pg = (x >> 29) % (pages / 2);
        let off = pg * page + (n as u64 % 7) * 500;
        let (f, pinned) = handles[fi].get_or_insert_with(|| {
            let f = File::open(&files[fi]).unwrap();
            let pinned = Pinned::map(&f, FILE_SIZE as usize);
            (f, pinned)
        });
        // Read as programs do (pread: the page cache's read path and its tracepoint), then
        // touch the page, now cached, through the locked mapping: no I/O, and it stays.
        f.read_exact_at(&mut buf, off).unwrap();
        if pin {
            sum = sum.wrapping_add(pinned.read(off, 1));
        }
        touched.insert((fi, pg));
    }
    std::hint::black_box(sum);
    let pins = handles.into_iter().flatten().map(|(_, p)| p).collect();
    (touched, pins)
}

fn in_pack(p: &Pack, path: &Path, page_index: u64, page: u64) -> bool {
    p.entries.iter().any(|e| {
        e.path == path
            && e.ranges
                .iter()
                .any(|r| r.offset <= page_index * page && page_index * page < r.end())
    })
}

fn real_read_ahead_kb() -> Option<(PathBuf, String)> {
    let mi = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mounts = system::parse_mountinfo(&mi, "/proc/self/mountinfo").ok()?;
    let r = system::root_mount(&mounts)?;
    let path = system::queue_file(Path::new("/sys"), r.major, r.minor, "read_ahead_kb");
    let v = fs::read_to_string(&path).ok()?;
    Some((path, v))
}

#[test]
fn learn_then_replay_brings_back_exactly_the_used_pages() {
    learn_then_replay(false);
}

/// The same with the pages from the filemap tracepoints, where the kernel has them (6.10+):
/// then the pack holds exactly the pages read, nothing of the kernel's own readahead.
#[test]
fn learn_with_filemap_tracepoints_then_replay() {
    learn_then_replay(true);
}

/// Whether the running kernel is at least `major.minor`.
fn kernel_at_least(major: u32, minor: u32) -> bool {
    let r = ::sys::kernel_release().unwrap_or_default();
    let mut it = r.split(|c: char| !c.is_ascii_digit());
    let ma: u32 = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
    let mi: u32 = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
    (ma, mi) >= (major, minor)
}

/// The learning tests change (and check) the real disk's read_ahead_kb: one at a time.
static REAL_KNOB: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn learn_then_replay(tracepoints: bool) {
    if !root_or_skip() {
        return;
    }
    // The machine's DAMON reclaim would page out what was just read (testkit::reclaim).
    let _reclaim = testkit::reclaim::PauseReclaim::new();
    let _one_at_a_time = REAL_KNOB.lock().unwrap_or_else(|e| e.into_inner());
    if tracepoints && !kernel_at_least(6, 10) {
        testkit::skip("the filemap tracepoints need Linux 6.10");
        return;
    }
    let page = ::sys::page_size();
    let (dir_tmp, files) = setup();
    let dir = dir_tmp.path();
    let knob_before = real_read_ahead_kb();

    for f in &files {
        assert!(
            resident_pages(f).iter().all(|r| !r),
            "{f:?} cached after DONTNEED"
        );
    }

    // Learn while the workload runs.
    let cfg = LearnConfig {
        only_under: vec![dir.to_path_buf()],
        tracefs: tracepoints.then(|| PathBuf::from(readahead::filemap::TRACEFS)),
        ..LearnConfig::default()
    };
    let t0 = Instant::now();
    let learner = learn::LearnThread::spawn(&cfg).expect("fanotify learning");
    if let (Some((path, _)), Some(kb), false) = (&knob_before, cfg.read_ahead_kb, tracepoints) {
        assert_eq!(fs::read_to_string(path).unwrap().trim(), kb.to_string());
    }
    // mincore learning needs what was read to stay resident: pin it. The tracepoints see
    // every read as it happens, so nothing is pinned there (and touching through the mapping
    // is not free: the traced pages grew from 7.8 MB to 13 MB with it).
    let (touched, pins) = workload(&files, !tracepoints);
    // Let the learner drain the last events.
    std::thread::sleep(Duration::from_millis(200));
    let learned = learner.stop();
    let learn_s = t0.elapsed().as_secs_f64();
    if let Some((path, v)) = &knob_before {
        assert_eq!(
            &fs::read_to_string(path).unwrap(),
            v,
            "read_ahead_kb not restored"
        );
    }
    assert!(!learned.overflowed, "fanotify queue overflowed");
    assert_eq!(
        learned.page_source(),
        if tracepoints { "filemap" } else { "mincore" },
        "{:?}",
        learned.trace_stats
    );
    let order: Vec<PathBuf> = learned.files.iter().map(|f| f.path.clone()).collect();
    let expect: Vec<PathBuf> = first_order()
        .into_iter()
        .map(|i| files[i].clone())
        .collect();
    assert_eq!(order, expect, "files not in first-access order");

    // Pack (solid-state order, generous budget) and check it covers what was touched.
    let (p, stats) = learn::build_pack(
        &learned,
        &PackOptions {
            rotational: Some(false),
            budget_bytes: Some(64 << 20),
            ..PackOptions::default()
        },
    );
    assert_eq!(stats.files_learned, FILES);
    assert_eq!(p.entries.len(), FILES);
    let pack_paths: Vec<PathBuf> = p.entries.iter().map(|e| e.path.clone()).collect();
    assert_eq!(pack_paths, expect);
    for &(fi, pg) in &touched {
        assert!(
            in_pack(&p, &files[fi], pg, page),
            "page {pg} of file {fi} not learned"
        );
    }
    let touched_bytes = touched.len() as u64 * page;
    let total = FILES as u64 * FILE_SIZE;
    assert!(p.bytes() >= touched_bytes);
    if tracepoints {
        // Every 512-byte read lies within one page: the pack is exactly the pages read.
        assert_eq!(p.bytes(), touched_bytes, "traced pages beyond those read");
    }
    assert!(
        p.bytes() < total / 2 + total / 8,
        "pack {} of {total}",
        p.bytes()
    );

    // The touched pages may go now.
    drop(pins);

    // Write, load as the boot path would.
    let mounts =
        system::parse_mountinfo(&fs::read_to_string("/proc/self/mountinfo").unwrap(), "mi")
            .unwrap();
    let ours = system::root_id(&system::Paths::default(), system::root_mount(&mounts));
    let pack_path = dir.join("readahead.pack");
    let mut p = p;
    p.header.root = ours.clone();
    p.write_file(&pack_path).unwrap();
    let loaded = replay::load(&pack_path, &ours, 0).expect("pack refused");
    assert_eq!(loaded, p);

    let st = replay_cold_reads_the_pack(&loaded, &files, page);
    eprintln!(
        "learned {} files, {} events, {} touched pages, pack {} KiB of {} KiB, learn {:.2} s, \
         replay {:.1} ms",
        learned.files.len(),
        learned.events,
        touched.len(),
        p.bytes() / 1024,
        total / 1024,
        learn_s,
        st.duration_ns as f64 / 1e6
    );

    packs_in_disk_order_and_within_budget(&learned, &expect, page);
}

/// Replay from a cold cache: every file read, the learned ranges resident when it returns,
/// and little more than the pack read (the merged gaps, not whole files).
fn replay_cold_reads_the_pack(loaded: &Pack, files: &[PathBuf], page: u64) -> replay::ReplayStats {
    // Cold: nothing of the pack resident.
    drop_cache(files);
    let before = replay::hit_rate(loaded);
    assert_eq!(before.bytes_replayed, loaded.bytes());
    assert_eq!(before.bytes_resident, 0, "pages resident before replay");

    let st = replay::replay(loaded, &ReplayOptions::default());
    assert_eq!(st.files_read, FILES as u64);
    assert_eq!(st.files_skipped, 0);
    assert_eq!(st.bytes_requested, loaded.bytes());
    assert!(!st.timed_out);
    // readahead(2) only starts the reads; replay waited until they were done.
    assert_eq!(st.resident, loaded.bytes(), "{st:?}");
    assert!(st.settled_ns >= st.duration_ns, "{st:?}");
    let after = replay::hit_rate(loaded);
    assert_eq!(
        after.bytes_resident, after.bytes_replayed,
        "not all replayed pages resident"
    );
    // Replay read the learned ranges and the small gaps it merged across (request-sized
    // replay), not whole files.
    let resident_total: u64 = files
        .iter()
        .map(|f| resident_pages(f).iter().filter(|&&r| r).count() as u64 * page)
        .sum();
    assert!(
        resident_total <= loaded.bytes() + st.gap_bytes + FILES as u64 * 64 * 1024,
        "replay read {resident_total} bytes for a pack of {} and {} bytes of gaps",
        loaded.bytes(),
        st.gap_bytes
    );
    // The workload read only the first half of each file.
    assert!(
        resident_total <= FILES as u64 * (FILE_SIZE / 2 + 64 * 1024),
        "replay read {resident_total} bytes: beyond the halves the workload read"
    );
    st
}

/// What `build_pack` makes of a real learning: on a rotating device, the files in ascending
/// physical order (real FIEMAP); with a small budget, no more than it, the first file first.
fn packs_in_disk_order_and_within_budget(learned: &learn::Learned, expect: &[PathBuf], page: u64) {
    // Rotating order from real FIEMAP: ascending physical addresses.
    let (rp, _) = learn::build_pack(
        learned,
        &PackOptions {
            rotational: Some(true),
            budget_bytes: Some(64 << 20),
            ..PackOptions::default()
        },
    );
    let phys: Vec<u64> = rp
        .entries
        .iter()
        .map(|e| {
            let f = File::open(&e.path).unwrap();
            sys::fiemap_physical(&f, e.ranges[0].offset).expect("FIEMAP on a disk filesystem")
        })
        .collect();
    assert!(phys.windows(2).all(|w| w[0] <= w[1]), "{phys:?}");
    assert!(rp.header.rotational);

    // A small budget is respected by a real pack.
    let (bp, _) = learn::build_pack(
        learned,
        &PackOptions {
            rotational: Some(false),
            budget_bytes: Some(100_000),
            ..PackOptions::default()
        },
    );
    assert!(bp.bytes() <= 100_000 && bp.bytes() > 100_000 - page);
    assert_eq!(bp.entries[0].path, expect[0]);
}

#[test]
fn learner_lowers_and_restores_read_ahead_kb_of_a_fake_tree() {
    if !root_or_skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (proc, sys_dir) = (d.join("proc"), d.join("sys"));
    fs::create_dir_all(proc.join("self")).unwrap();
    fs::create_dir_all(sys_dir.join("dev/block/8:1")).unwrap();
    fs::create_dir_all(sys_dir.join("dev/block/queue")).unwrap();
    fs::write(sys_dir.join("dev/block/8:1/partition"), "1\n").unwrap();
    // 8:1 is a partition: its disk's queue (the parent directory's) is the one changed.
    let knob = sys_dir.join("dev/block/queue/read_ahead_kb");
    fs::write(&knob, "4096\n").unwrap();
    fs::write(
        proc.join("self/mountinfo"),
        "27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n30 27 0:45 / /run rw - tmpfs tmpfs rw\n",
    )
    .unwrap();
    let cfg = LearnConfig {
        paths: system::Paths {
            proc,
            sys: sys_dir,
            ..system::Paths::default()
        },
        read_ahead_kb: Some(16),
        // The fake root is not mounted: watch the real filesystem of the temp dir.
        marks: Some(vec![d.to_path_buf()]),
        // The knob is only lowered on the mincore path.
        tracefs: None,
        ..LearnConfig::default()
    };
    let l = learn::Learner::start(&cfg).expect("fanotify");
    assert_eq!(fs::read_to_string(&knob).unwrap(), "16");
    drop(l.finish());
    assert_eq!(fs::read_to_string(&knob).unwrap(), "4096");
    {
        let _l = learn::Learner::start(&cfg).unwrap();
        assert_eq!(fs::read_to_string(&knob).unwrap(), "16");
    }
    assert_eq!(
        fs::read_to_string(&knob).unwrap(),
        "4096",
        "not restored on drop"
    );
}

/// The page-cache additions for real: a child process reads one file and this process
/// another, both dropped from the cache first; with this process ignored, the trace has
/// every page of the child's file and nothing of ours (which it counts as ignored).
#[test]
fn page_cache_additions_are_charged_to_the_reading_process() {
    if !root_or_skip() {
        return;
    }
    // The machine's DAMON reclaim would page out what was just read (testkit::reclaim).
    let _reclaim = testkit::reclaim::PauseReclaim::new();
    // One at a time with the other tracing tests: each mounts tracefs when it is not.
    let _one = REAL_KNOB.lock().unwrap_or_else(|e| e.into_inner());
    let (_tmp, files) = setup();
    let me = std::process::id() as i32;
    let trace = match readahead::filemap::FilemapTrace::start_added(
        Path::new(readahead::filemap::TRACEFS),
        &[me],
        Path::new("/proc"),
    ) {
        Ok(t) => t,
        Err(e) => {
            testkit::skip(&format!("no mm_filemap_add_to_page_cache here: {e}"));
            return;
        }
    };
    let status = std::process::Command::new("cat")
        .arg(&files[0])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    // Ours, from a second thread of this process (a thread's id is not the process's).
    let mine = files[1].clone();
    std::thread::spawn(move || fs::read(mine).unwrap())
        .join()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let (map, stats) = trace.stop();
    assert_eq!(stats.source, readahead::filemap::PageSource::Added);
    assert_eq!(stats.lost, 0, "{stats:?}");
    let page = ::sys::page_size();
    let ranges = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        let md = fs::metadata(p).unwrap();
        map.ranges(
            libc::major(md.dev()),
            libc::minor(md.dev()),
            md.ino(),
            md.size(),
            page,
        )
    };
    let child: Vec<(u64, u64)> = ranges(&files[0])
        .iter()
        .map(|r| (r.offset, r.len))
        .collect();
    assert_eq!(child, [(0, FILE_SIZE)], "the child's read, whole");
    assert!(
        ranges(&files[1]).is_empty(),
        "this process's own read was taken"
    );
    assert!(
        stats.ignored >= 1,
        "this process's additions were not seen at all: {stats:?}"
    );
}
