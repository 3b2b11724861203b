//! The test bed's layer rule (src/lib.rs): `vm` imports nothing of `bench`, `checks` or
//! `cli`, and `bench` nothing of `checks` or `cli`. Read from the sources, so a new import
//! that breaks the rule fails here rather than growing a circle.

use std::fs;
use std::path::{Path, PathBuf};

/// Every .rs file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The lines of layer `layer` that name one of `forbidden` (`crate::NAME`).
fn breaches(layer: &str, forbidden: &[&str]) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(layer);
    breaches_in(&dir, forbidden)
}

/// The lines of the files under `dir` that name one of `forbidden`, with file and line.
fn breaches_in(dir: &Path, forbidden: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for file in sources(dir) {
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            // A grouped `use crate::{...}` could hide a layer's name: not allowed either.
            let grouped = line.contains("crate::{");
            let named = forbidden.iter().any(|f| {
                line.match_indices(&format!("crate::{f}")).any(|(i, m)| {
                    !line[i + m.len()..].starts_with(|c: char| c == '_' || c.is_alphanumeric())
                })
            });
            if grouped || named {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn vm_imports_nothing_above_it() {
    let found = breaches("vm", &["bench", "checks", "cli"]);
    assert!(
        found.is_empty(),
        "vm/ imports a layer above it:\n{}",
        found.join("\n")
    );
}

#[test]
fn bench_imports_neither_checks_nor_cli() {
    let found = breaches("bench", &["checks", "cli"]);
    assert!(
        found.is_empty(),
        "bench/ imports checks or cli:\n{}",
        found.join("\n")
    );
}

#[test]
fn checks_import_no_cli() {
    let found = breaches("checks", &["cli"]);
    assert!(
        found.is_empty(),
        "checks/ imports cli:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_sees_a_breach() {
    let dir = tempfile::tempdir().unwrap();
    let text = "use crate::bench::runner;\nuse crate::vm::qemu;\nuse crate::client;\n";
    fs::write(dir.path().join("a.rs"), text).unwrap();
    let found = breaches_in(dir.path(), &["bench", "cli"]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].ends_with(":1: use crate::bench::runner;"),
        "{found:?}"
    );
}
