//! What the gated-replay tests (`yield_io.rs`, `yield_cpu.rs`) share.

use std::fs;
use std::path::Path;

use readahead::pack::{Entry, Header, Pack, Range};

/// A pack of one whole file.
pub fn pack_of(path: &Path) -> Pack {
    let md = fs::metadata(path).unwrap();
    Pack {
        header: Header {
            budget_bytes: 1 << 30,
            ..Header::default()
        },
        entries: vec![Entry::of_file(
            path.to_path_buf(),
            &md,
            vec![Range {
                offset: 0,
                len: md.len(),
            }],
        )],
    }
}
