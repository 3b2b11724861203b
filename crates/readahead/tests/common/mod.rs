//! What the gated-replay tests (`yield_io.rs`, `yield_cpu.rs`) and the relocation tests
//! (`relocate.rs`, `relocate_running.rs`) share.
#![allow(dead_code)]

use std::fs;
use std::path::Path;

use readahead::pack::{Entry, Header, Pack, Range, RootId};

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

/// A pack of `entries` as relocation's tests learn it: on a rotating disk, with room for all.
pub fn relocation_pack(entries: Vec<Entry>) -> Pack {
    Pack {
        header: Header {
            created_unix_s: 1,
            kernel_release: "test".into(),
            root: RootId::default(),
            rotational: true,
            relocated: false,
            disk_bound: false,
            budget_bytes: 1 << 30,
            metadata: Vec::new(),
        },
        entries,
    }
}
