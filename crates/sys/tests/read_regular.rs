//! `sys::read_regular`: what the boot path reads of its own files must be a regular file of
//! bounded size; anything else is refused at once, without blocking or a big allocation.

use std::fs;
use std::time::{Duration, Instant};

use sys::{read_regular, read_regular_text};

#[test]
fn regular_files_symlinks_fifos_devices_and_huge_files() {
    let d_tmp = tempfile::tempdir().unwrap();
    let d = d_tmp.path();
    let file = d.join("state");
    fs::write(&file, "hello\n").unwrap();
    assert_eq!(read_regular(&file, 6).unwrap(), b"hello\n");
    assert_eq!(read_regular_text(&file, 100).unwrap(), "hello\n");
    let e = read_regular(&file, 5).unwrap_err();
    assert!(e.to_string().contains("larger than 5 bytes"), "{e}");

    let link = d.join("link");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    assert_eq!(read_regular(&link, 100).unwrap(), b"hello\n");

    let fifo = d.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let t = Instant::now();
    let e = read_regular(&fifo, 100).unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(2), "blocked on the FIFO");
    assert!(e.to_string().contains("not a regular file"), "{e}");

    let e = read_regular(std::path::Path::new("/dev/zero"), 100).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");

    let huge = d.join("huge");
    fs::File::create(&huge).unwrap().set_len(1 << 40).unwrap();
    let e = read_regular(&huge, 1 << 20).unwrap_err();
    assert!(e.to_string().contains("larger than"), "{e}");

    fs::write(&file, [0xffu8, 0xfe]).unwrap();
    assert!(read_regular_text(&file, 100).is_err());
}
