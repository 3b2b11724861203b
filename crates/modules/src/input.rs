//! Reading what the plan starts from: the modaliases of the present devices, the module lists
//! (`/etc/modules`, `modules-load.d`), the modules already loaded (`/proc/modules`) and the
//! builtin ones (`modules.builtin`). Parsing is pure (takes text); the functions that read the
//! filesystem take their paths as parameters.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::{Error, Request, Source};

/// Module names the kernel and libkmod treat alike: `-` and `_` are the same.
pub fn normalize(name: &str) -> String {
    name.replace('-', "_")
}

/// Walks `sys_devices` (normally `/sys/devices`) and returns one request per distinct
/// modalias, naming the first device file that had it. Symlinks are not followed (sysfs is
/// full of them, and they lead back into the tree); unreadable files are skipped (some
/// devices refuse reads), but a missing root is an error.
pub fn read_modaliases(sys_devices: &Path) -> Result<Vec<Request>, Error> {
    let mut seen = BTreeMap::new();
    fs::metadata(sys_devices).map_err(|e| Error::io(sys_devices, e))?;
    let mut stack = vec![sys_devices.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_symlink() {
                continue;
            }
            let path = entry.path();
            if ft.is_dir() {
                stack.push(path);
            } else if entry.file_name() == "modalias" {
                if let Ok(text) = fs::read_to_string(&path) {
                    let alias = text.trim();
                    if !alias.is_empty() {
                        seen.entry(alias.to_string()).or_insert(path);
                    }
                }
            }
        }
    }
    // A BTreeMap keeps the output deterministic whatever order read_dir gives.
    Ok(seen
        .into_iter()
        .map(|(alias, path)| Request {
            name: alias,
            options: String::new(),
            source: Source::Modalias(path),
        })
        .collect())
}

/// Parses `/etc/modules` (Debian): one module per line, optionally followed by its options;
/// `#` starts a comment.
pub fn parse_etc_modules(text: &str, file: &Path) -> Vec<Request> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (name, options) = match line.split_once(char::is_whitespace) {
            Some((name, rest)) => (name, rest.trim()),
            None => (line, ""),
        };
        out.push(Request {
            name: name.to_string(),
            options: options.to_string(),
            source: Source::List(file.to_path_buf(), n + 1),
        });
    }
    out
}

/// Parses a `modules-load.d` file: one module name per line; `#` and `;` start comment lines.
/// A line with more than a name is an error naming file and line, as systemd rejects it.
pub fn parse_modules_load(text: &str, file: &Path) -> Result<Vec<Request>, Error> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.split_whitespace().count() != 1 {
            return Err(Error::parse(
                file,
                n + 1,
                format!("expected one module name, found {line:?}"),
            ));
        }
        out.push(Request {
            name: line.to_string(),
            options: String::new(),
            source: Source::List(file.to_path_buf(), n + 1),
        });
    }
    Ok(out)
}

/// The `modules-load.d` directories under `root`, in systemd's order of precedence.
pub fn modules_load_dirs(root: &Path) -> Vec<PathBuf> {
    [
        "etc/modules-load.d",
        "run/modules-load.d",
        "usr/local/lib/modules-load.d",
        "usr/lib/modules-load.d",
        "lib/modules-load.d",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect()
}

/// Reads `etc_modules` (if it exists) and every `*.conf` in `load_dirs`. A file name found in
/// an earlier directory hides the same name in later ones; files are read in name order. A
/// file that cannot be read or parsed is returned among the problems and the rest go on, as
/// systemd-modules-load does; a missing file (Debian's `modules.conf` is a symlink to
/// `/etc/modules`, which may be absent) is not a problem, and a `.conf` that is
/// `etc_modules` under another name is not read twice.
pub fn read_module_lists(etc_modules: &Path, load_dirs: &[PathBuf]) -> (Vec<Request>, Vec<Error>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    match fs::read_to_string(etc_modules) {
        Ok(text) => out.extend(parse_etc_modules(&text, etc_modules)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => problems.push(Error::io(etc_modules, e)),
    }
    let etc_real = fs::canonicalize(etc_modules).ok();
    let mut files: BTreeMap<String, PathBuf> = BTreeMap::new();
    for dir in load_dirs {
        let Ok(entries) = fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".conf") {
                files.entry(name).or_insert_with(|| entry.path());
            }
        }
    }
    for path in files.values() {
        if etc_real.is_some() && fs::canonicalize(path).ok() == etc_real {
            continue;
        }
        match fs::read_to_string(path) {
            Ok(text) => match parse_modules_load(&text, path) {
                Ok(r) => out.extend(r),
                Err(e) => problems.push(e),
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => problems.push(Error::io(path, e)),
        }
    }
    (out, problems)
}

/// Names of the loaded modules from `/proc/modules` text (first field of each line).
pub fn parse_proc_modules(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(normalize)
        .collect()
}

/// Names of the builtin modules from `modules.builtin` text (`kernel/dir/name.ko` lines).
pub fn parse_builtin(text: &str, file: &Path) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let base = line.rsplit('/').next().unwrap_or(line);
        let name = base.strip_suffix(".ko").ok_or_else(|| {
            Error::parse(
                file,
                n + 1,
                format!("expected a path ending in .ko, found {line:?}"),
            )
        })?;
        out.push(normalize(name));
    }
    Ok(out)
}

/// Reads a file that may be absent (an absent file reads as empty).
pub fn read_optional(path: &Path) -> Result<String, Error> {
    match fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Error::io(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etc_modules_keeps_options_and_drops_comments() {
        let r = parse_etc_modules(
            "# /etc/modules\nloop\n\nlp io=0x378 # printer\n",
            Path::new("/etc/modules"),
        );
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].name, "lp");
        assert_eq!(r[1].options, "io=0x378");
        assert_eq!(r[1].source, Source::List("/etc/modules".into(), 4));
    }

    #[test]
    fn modules_load_rejects_two_words_with_file_and_line() {
        let e = parse_modules_load("; c\n#c\nfoo\nfoo bar\n", Path::new("x.conf")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.conf:4: expected one module name, found \"foo bar\""
        );
    }

    #[test]
    fn module_lists_survive_dangling_links_bad_files_and_aliases_of_etc_modules() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let load = dir.join("modules-load.d");
        fs::create_dir_all(&load).unwrap();
        let etc_modules = dir.join("modules");
        // Debian: modules.conf -> ../modules; first with /etc/modules absent (dangling).
        std::os::unix::fs::symlink("../modules", load.join("modules.conf")).unwrap();
        fs::write(load.join("bad.conf"), "two words\n").unwrap();
        fs::write(load.join("good.conf"), "loop\n").unwrap();
        let (r, problems) = read_module_lists(&etc_modules, std::slice::from_ref(&load));
        assert_eq!(
            r.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            vec!["loop"]
        );
        assert_eq!(problems.len(), 1);
        assert!(problems[0]
            .to_string()
            .ends_with("bad.conf:1: expected one module name, found \"two words\""));
        // With /etc/modules present it is read once, under its own name.
        fs::write(&etc_modules, "dm_mod\n").unwrap();
        let (r, _) = read_module_lists(&etc_modules, &[load]);
        let names: Vec<_> = r.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, vec!["dm_mod", "loop"]);
        assert_eq!(r[0].source, Source::List(etc_modules.clone(), 1));
    }

    #[test]
    fn builtin_names_are_normalized_and_checked() {
        let n = parse_builtin(
            "kernel/fs/ext4/ext4.ko\nkernel/a/usb-common.ko\n",
            Path::new("b"),
        )
        .unwrap();
        assert_eq!(n, vec!["ext4", "usb_common"]);
        let e = parse_builtin("kernel/a/x.o\n", Path::new("b")).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("b:1: expected a path ending in .ko"));
    }

    #[test]
    fn proc_modules_first_field() {
        let t = "e1000 155648 0 - Live 0x0000000000000000\nsnd-hda 1 0 - Live 0x0\n";
        assert_eq!(parse_proc_modules(t), vec!["e1000", "snd_hda"]);
    }
}
