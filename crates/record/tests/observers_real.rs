//! The done rule's observers on the real /proc: a read that misses the page cache is counted
//! in the reading process's `read_bytes`, as the recorder takes preload's reads out of the
//! disk's busy time (crates/record/src/observers.rs).

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;

use record::observers::Observers;
use sample::procfs::{self, ProcFs};

#[test]
fn a_real_processs_reads_from_disk_are_counted() {
    // Under the target directory: a real disk file system (O_DIRECT fails on tmpfs).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("data");
    std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
    std::fs::File::open(&path).unwrap().sync_all().unwrap();
    let proc = ProcFs::new("/proc");
    let pid = std::process::id();
    let me = || {
        let stat = proc.read(&format!("{pid}/stat")).unwrap();
        procfs::parse_stat_line(&stat).unwrap()
    };
    let mut observers = Observers::default();
    observers.set(&proc, &me(), true);

    // O_DIRECT: read from the disk whatever the page cache holds. Its buffer must be
    // aligned to the logical block size; a page is.
    let mut direct = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .unwrap();
    let mut space = vec![0u8; (1 << 20) + 4096];
    let start = space.as_ptr().align_offset(4096);
    let n = direct.read(&mut space[start..start + (1 << 20)]).unwrap();
    assert_eq!(n, 1 << 20);
    assert!(space[start..start + n].iter().all(|&b| b == 7));

    observers.update(&proc, &[me()]);
    // Other tests' threads in this binary may read too: at least this read.
    assert!(observers.read_bytes >= 1 << 20, "{}", observers.read_bytes);
}
