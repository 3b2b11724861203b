//! A `.tgz` given to `bootprint report` is unpacked in memory: one that expands past the cap
//! (a gzip bomb) is refused, not unpacked (found by the fuzzing of issue 14).
#![cfg(feature = "archive")]

use std::io::Write;

#[test]
fn an_archive_that_expands_past_the_cap_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let path = dir.join("bootchart.tgz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![0u8; 4 << 20]).unwrap();
    let bytes = gz.finish().unwrap();
    assert!(bytes.len() < 64 << 10, "{} bytes compressed", bytes.len());
    std::fs::write(&path, &bytes).unwrap();
    let Err(e) = trace::reader::RawTrace::from_archive_capped(&path, 1 << 20) else {
        panic!("a bomb was unpacked");
    };
    assert!(e.to_string().contains("more than 1048576 bytes"), "{e}");
    // Under the cap it is read: zeros are an empty tar archive.
    let raw = trace::reader::RawTrace::from_archive_capped(&path, 8 << 20).unwrap();
    assert!(raw.files.is_empty());
}
