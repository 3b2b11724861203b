//! Seeds from the repository's fixtures. Paths are relative to the workspace root, found from
//! this crate's manifest directory at build time or `BOOTPRINT_ROOT` at run time (so a copied
//! binary still finds them when told where the checkout is).

use std::path::{Path, PathBuf};

/// Seeds longer than this are cut at a line end: a long seed makes every input slow, and the
/// parsers' paths are all reached in the first tens of kB of every fixture here.
pub const MAX_SEED: usize = 64 << 10;

/// The workspace root.
pub fn root() -> PathBuf {
    match std::env::var_os("BOOTPRINT_ROOT") {
        Some(r) => PathBuf::from(r),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    }
}

/// A fixture's bytes (cut to [`MAX_SEED`]); empty when it cannot be read, so a moved
/// fixture costs a seed, not the run.
pub fn file(rel: &str) -> Vec<u8> {
    cut(std::fs::read(root().join(rel)).unwrap_or_default())
}

/// Every regular file under a fixture directory, recursively, in name order.
pub fn dir(rel: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    walk(&root().join(rel), &mut out);
    out.sort();
    out
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(&p, out);
        } else if ft.is_file() {
            if let Ok(b) = std::fs::read(&p) {
                out.push((p, cut(b)));
            }
        }
    }
}

/// Several fixture files, one seed each (unreadable ones skipped).
pub fn files(rels: &[&str]) -> Vec<Vec<u8>> {
    rels.iter()
        .map(|r| file(r))
        .filter(|b| !b.is_empty())
        .collect()
}

/// Cuts a seed to [`MAX_SEED`] at the last newline before it.
pub fn cut(b: Vec<u8>) -> Vec<u8> {
    cut_to(b, MAX_SEED)
}

/// Cuts a seed to `max` bytes at the last newline before it.
pub fn cut_to(mut b: Vec<u8>, max: usize) -> Vec<u8> {
    if b.len() > max {
        let end = b[..max]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(max, |p| p + 1);
        b.truncate(end);
    }
    b
}

/// Literal seeds.
pub fn lit(items: &[&str]) -> Vec<Vec<u8>> {
    items.iter().map(|s| s.as_bytes().to_vec()).collect()
}
