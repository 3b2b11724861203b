//! `bootprint readahead show`: a readahead pack (`readahead::pack::Pack`) as text, one line
//! per file in replay order. Its JSON is the pack format's own dump (`Pack::to_json`).

use std::io::{self, Write};
use std::path::Path;

use readahead::pack::Pack;

use crate::readahead_status::{mb, utc};

/// The pack at `path` as text: a summary line (files, size, when and on which kernel it was
/// learned), the root filesystem's metadata replay reads first, then every file with its
/// bytes and ranges.
pub fn text(out: &mut impl Write, path: &Path, p: &Pack) -> io::Result<()> {
    writeln!(
        out,
        "{}: {} files, {}, learned {} on kernel {}",
        path.display(),
        p.entries.len(),
        mb(p.bytes()),
        utc(p.header.created_unix_s),
        p.header.kernel_release
    )?;
    let meta = &p.header.metadata;
    if meta.is_empty() {
        writeln!(
            out,
            "metadata: none listed (replay reads the files' inode-table blocks)"
        )?;
    } else {
        writeln!(
            out,
            "metadata: {} in {} ranges (inode-table and directory blocks, read first)",
            mb(p.header.metadata_bytes()),
            meta.len()
        )?;
    }
    writeln!(out, "{:>5} {:>10} {:>7}  path", "#", "bytes", "ranges")?;
    for (i, e) in p.entries.iter().enumerate() {
        writeln!(
            out,
            "{:>5} {:>10} {:>7}  {}",
            i + 1,
            e.bytes(),
            e.ranges.len(),
            e.path.display()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use readahead::pack::{Entry, Header, Range};
    use std::path::PathBuf;

    #[test]
    fn a_line_per_file_in_replay_order() {
        let entry = |path: &str, len: u64| Entry {
            path: PathBuf::from(path),
            ranges: vec![Range { offset: 0, len }],
            ..Entry::default()
        };
        let p = Pack {
            header: Header {
                created_unix_s: 1_795_350_000,
                kernel_release: "6.1.0-56-amd64".into(),
                metadata: vec![
                    Range {
                        offset: 4096,
                        len: 4096,
                    },
                    Range {
                        offset: 65536,
                        len: 8192,
                    },
                ],
                ..Header::default()
            },
            entries: vec![
                entry("/usr/bin/bash", 69_632),
                entry("/etc/ld.so.cache", 30_000),
            ],
        };
        let mut out = Vec::new();
        text(&mut out, Path::new("/var/lib/bootprint/readahead.pack"), &p).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "/var/lib/bootprint/readahead.pack: 2 files, 0.1 MB, learned 2026-11-22 12:20 UTC \
             on kernel 6.1.0-56-amd64\n\
             metadata: 0.0 MB in 2 ranges (inode-table and directory blocks, read first)\n\
             \x20   #      bytes  ranges  path\n\
             \x20   1      69632       1  /usr/bin/bash\n\
             \x20   2      30000       1  /etc/ld.so.cache\n"
        );
    }
}
