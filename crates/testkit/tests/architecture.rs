//! docs/architecture.md's dependency table against the workspace's Cargo.toml files: every
//! edge between the workspace's crates (normal dependencies) must be in the table, and every
//! edge of the table in a Cargo.toml, so the document cannot fall behind the code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's members, from the root Cargo.toml's `members = [...]`.
fn members(root: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let start = text.find("members = [").expect("members");
    let end = start + text[start..].find(']').expect("end of members");
    text[start..end]
        .split('"')
        .skip(1)
        .step_by(2)
        .map(|m| root.join(m))
        .collect()
}

/// A crate's short name as the document writes it: the package name without `bootprint-`
/// (but `bootprint-boot`, `bootprint-testbed`, `bootprint-fuzz` and `bootprint` as they are).
fn short(package: &str) -> String {
    match package {
        "bootprint" | "bootprint-boot" | "bootprint-testbed" | "bootprint-fuzz" => package.into(),
        p => p.strip_prefix("bootprint-").unwrap_or(p).into(),
    }
}

/// `[package] name`, and the keys of `[dependencies]` (the workspace aliases).
fn manifest(path: &Path) -> (String, BTreeSet<String>) {
    let text = std::fs::read_to_string(path.join("Cargo.toml")).unwrap();
    let mut section = String::new();
    let mut name = String::new();
    let mut deps = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if section == "[package]" && key == "name" {
            name = value.trim().trim_matches('"').to_string();
        }
        if section == "[dependencies]" {
            // `sys.workspace = true` and `sys = { workspace = true }` alike.
            deps.insert(key.split('.').next().unwrap_or(key).to_string());
        }
    }
    (name, deps)
}

#[test]
fn the_dependency_table_is_the_cargo_graph() {
    let root = repo();
    // Workspace aliases (`sys = { path = ..., package = "bootprint-sys" }`) to short names.
    let text = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut alias: BTreeMap<String, String> = BTreeMap::new();
    for line in text.lines() {
        if let (Some((key, _)), Some(p)) = (line.split_once('='), line.split("package = \"").nth(1))
        {
            alias.insert(key.trim().to_string(), short(p.split('"').next().unwrap()));
        }
    }
    let mut code: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for m in members(&root) {
        let (name, deps) = manifest(&m);
        let ours = deps.iter().filter_map(|d| alias.get(d).cloned()).collect();
        code.insert(short(&name), ours);
    }
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let table = doc
        .split("## Dependencies")
        .nth(1)
        .expect("a `## Dependencies` section")
        .split("\n## ")
        .next()
        .unwrap();
    let mut documented: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let names = |cell: &str| -> Vec<String> {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(String::from)
                .collect()
        };
        let krate = names(cells[1]).pop().expect("a crate name");
        documented.insert(krate, names(cells[2]).into_iter().collect());
    }
    assert_eq!(
        documented.keys().collect::<Vec<_>>(),
        code.keys().collect::<Vec<_>>(),
        "the table's crates are the workspace's members"
    );
    for (krate, deps) in &code {
        let doc_deps = &documented[krate];
        let missing: Vec<_> = deps.difference(doc_deps).collect();
        let extra: Vec<_> = doc_deps.difference(deps).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "docs/architecture.md, {krate}: edges not in the table {missing:?}, in the table but not in Cargo.toml {extra:?}"
        );
    }
}
