//! The entry Debian's GRUB boots next, from `/boot/grub/grub.cfg` and `/boot/grub/grubenv`
//! (what grub-mkconfig's 00_header and 10_linux write, GRUB 2.06 and 2.12): the top level's
//! `set default=` (`0`, an entry's id or title, `a>b` into a submenu, `${saved_entry}` from
//! grubenv), a one-time `next_entry` in grubenv when grub.cfg honours it, then that entry's
//! `linux` and `initrd` lines. Anything GRUB would compute at boot (a variable in the
//! command line, a `linux` line under an `if`) is an error that says so: the fast path boots
//! exactly what GRUB would, or nothing (GRUB manual, "default", "Multi-boot manual config",
//! "Environment block").

use std::path::{Path, PathBuf};

use crate::{error_in, BootEntry, Error};

/// Where Debian keeps GRUB's configuration and environment block, from the root.
pub const CFG: &str = "boot/grub/grub.cfg";
/// GRUB's environment block (`grub-editenv`).
pub const ENV: &str = "boot/grub/grubenv";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Entry,
    Submenu,
}

/// A menu item: a `menuentry` (its body lines) or a `submenu` (its items).
#[derive(Debug, Clone)]
struct Item {
    kind: Kind,
    title: String,
    id: Option<String>,
    line: usize,
    body: Vec<(usize, String)>,
    items: Vec<Item>,
}

/// Splits a GRUB script line into words as GRUB's lexer does for the cases grub-mkconfig
/// writes: single quotes verbatim, double quotes and backslash escapes, `#` comments at a
/// word's start.
pub fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                cur.push(e);
                            }
                        }
                        _ => cur.push(d),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(e) = chars.next() {
                    cur.push(e);
                }
            }
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// The key=value lines of a GRUB environment block (`#` lines are its padding).
pub fn parse_env(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// grub.cfg's menu and its top-level `set default=` values (with their lines).
struct Menu {
    items: Vec<Item>,
    defaults: Vec<(usize, String)>,
    honours_next_entry: bool,
}

fn parse_menu(file: &str, text: &str) -> Result<Menu, Error> {
    let err = error_in(file);
    // The open blocks: an item being read, or some other `{` block (a function).
    let mut stack: Vec<Option<Item>> = Vec::new();
    let mut top: Vec<Item> = Vec::new();
    let mut defaults = Vec::new();
    let mut honours_next_entry = false;
    for (n, raw) in text.lines().enumerate() {
        let n = n + 1;
        let w = words(raw);
        let Some(first) = w.first().map(String::as_str) else {
            continue;
        };
        let opens = w.last().is_some_and(|l| l == "{") || raw.trim_end().ends_with('{');
        if first == "}" {
            let Some(block) = stack.pop() else {
                return Err(err(n, "`}` closes no block".into()));
            };
            if let Some(item) = block {
                let parent = stack.iter_mut().rev().find_map(|b| b.as_mut());
                match parent {
                    Some(p) if p.kind == Kind::Submenu => p.items.push(item),
                    Some(_) => return Err(err(item.line, "a menu item inside a menuentry".into())),
                    None => top.push(item),
                }
            }
            continue;
        }
        if (first == "menuentry" || first == "submenu") && opens {
            let title = w
                .get(1)
                .filter(|t| t.as_str() != "{")
                .ok_or_else(|| err(n, format!("`{first}` without a title")))?
                .clone();
            let id = w
                .iter()
                .position(|x| x == "--id" || x == "$menuentry_id_option")
                .and_then(|i| w.get(i + 1))
                .cloned();
            stack.push(Some(Item {
                kind: if first == "menuentry" {
                    Kind::Entry
                } else {
                    Kind::Submenu
                },
                title,
                id,
                line: n,
                body: Vec::new(),
                items: Vec::new(),
            }));
            continue;
        }
        if opens {
            stack.push(None);
            continue;
        }
        match stack.last_mut() {
            Some(Some(item)) if item.kind == Kind::Entry => item.body.push((n, raw.to_string())),
            Some(_) => {}
            None => {
                if first == "set" {
                    if let Some(v) = w.get(1).and_then(|a| a.strip_prefix("default=")) {
                        if v.contains("next_entry") {
                            honours_next_entry = true;
                        } else {
                            defaults.push((n, v.to_string()));
                        }
                    }
                }
            }
        }
    }
    if !stack.is_empty() {
        return Err(err(
            0,
            "a block is not closed at the end of the file".into(),
        ));
    }
    Ok(Menu {
        items: top,
        defaults,
        honours_next_entry,
    })
}

/// Finds the item `path` names (`a>b>c`: each part an index, an id or a title) among
/// `items`, as GRUB's `default` is resolved.
fn find<'a>(items: &'a [Item], path: &str) -> Option<&'a Item> {
    let mut level = items;
    let mut found = None;
    for part in path.split('>') {
        let item = match part.parse::<usize>() {
            Ok(i) => level.get(i),
            Err(_) => level
                .iter()
                .find(|it| it.id.as_deref() == Some(part))
                .or_else(|| level.iter().find(|it| it.title == part)),
        }?;
        level = &item.items;
        found = Some(item);
    }
    found
}

/// The entry GRUB boots next on the system under `root`: its files mapped from GRUB's root
/// device to this system's paths (`boot_separate`: /boot is a file system of its own, whose
/// root GRUB sees as `/`).
pub fn next_entry(
    root: &Path,
    cfg_text: &str,
    env_text: Option<&str>,
    boot_separate: bool,
) -> Result<BootEntry, Error> {
    let file = format!("/{CFG}");
    let err = error_in(&file);
    let menu = parse_menu(&file, cfg_text)?;
    let env = env_text.map(parse_env).unwrap_or_default();
    let var = |k: &str| {
        env.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    let (line, mut default, how) = match var("next_entry") {
        Some(v) if menu.honours_next_entry => (0, v, "grubenv's next_entry (a one-time entry)"),
        _ => {
            let mut values: Vec<&(usize, String)> = Vec::new();
            for d in &menu.defaults {
                if !values.iter().any(|v| v.1 == d.1) {
                    values.push(d);
                }
            }
            match values.as_slice() {
                [] => (0, "0".to_string(), "GRUB's default, the first entry"),
                [one] => (one.0, one.1.clone(), "`set default`"),
                [a, b, ..] => {
                    return Err(err(
                        b.0,
                        format!(
                            "`set default` is `{}` here and `{}` on line {}: which one GRUB \
                             takes depends on what it evaluates at boot",
                            b.1, a.1, a.0
                        ),
                    ))
                }
            }
        }
    };
    if default == "${saved_entry}" || default == "$saved_entry" {
        default = var("saved_entry").unwrap_or_else(|| "0".into());
    }
    if default.contains('$') {
        return Err(err(
            line,
            format!("the default entry `{default}` is a GRUB variable bootprint does not evaluate"),
        ));
    }
    let item = find(&menu.items, &default).ok_or_else(|| {
        err(
            line,
            format!("no menu entry `{default}` (from {how}): expected an index, an id or a title"),
        )
    })?;
    if item.kind == Kind::Submenu {
        return Err(err(
            item.line,
            format!("`{default}` names a submenu, not an entry"),
        ));
    }
    entry_of(root, &file, item, boot_separate, how)
}

fn entry_of(
    root: &Path,
    file: &str,
    item: &Item,
    boot_separate: bool,
    how: &str,
) -> Result<BootEntry, Error> {
    let err = error_in(file);
    let mut kernel: Option<(usize, String, String)> = None;
    let mut initrds = Vec::new();
    let mut depth = 0usize;
    for (n, raw) in &item.body {
        let w = words(raw);
        let Some(first) = w.first().map(String::as_str) else {
            continue;
        };
        // `if ...; then ...; fi` may open and close on one line.
        let opened = w.iter().filter(|x| x.as_str() == "if").count();
        let closed = w.iter().filter(|x| x.trim_end_matches(';') == "fi").count();
        let before = depth;
        depth = (depth + opened).saturating_sub(closed);
        match first {
            "linux" | "linux16" | "linuxefi" | "initrd" | "initrd16" | "initrdefi" => {
                if before > 0 {
                    return Err(err(
                        *n,
                        format!("`{first}` under an `if`: what GRUB loads depends on the boot"),
                    ));
                }
                if let Some(v) = w[1..].iter().find(|a| a.contains('$')) {
                    return Err(err(
                        *n,
                        format!("`{v}` is a GRUB variable bootprint does not evaluate"),
                    ));
                }
                if first.starts_with("linux") {
                    if kernel.is_some() {
                        return Err(err(*n, "a second `linux` line in the entry".into()));
                    }
                    let path = w
                        .get(1)
                        .ok_or_else(|| err(*n, "`linux` without a kernel".into()))?;
                    kernel = Some((*n, path.clone(), w[2..].join(" ")));
                } else {
                    initrds.extend(w[1..].iter().map(|p| (*n, p.clone())));
                }
            }
            _ => {}
        }
    }
    let (kn, kpath, cmdline) = kernel.ok_or_else(|| {
        err(
            item.line,
            format!("the entry `{}` has no `linux` line", item.title),
        )
    })?;
    let map = |n: usize, p: &str| -> Result<PathBuf, Error> {
        let rel = p.trim_start_matches('/');
        if rel.is_empty() || rel.split('/').any(|c| c == "..") || p.starts_with('(') {
            return Err(err(
                n,
                format!("`{p}`: expected a path on GRUB's root device"),
            ));
        }
        let on_system = if boot_separate {
            root.join("boot").join(rel)
        } else {
            root.join(rel)
        };
        if on_system.is_file() {
            Ok(on_system)
        } else {
            Err(err(
                n,
                format!("`{p}` is not a file here ({})", on_system.display()),
            ))
        }
    };
    Ok(BootEntry {
        kernel: map(kn, &kpath)?,
        initrds: initrds
            .iter()
            .map(|(n, p)| map(*n, p))
            .collect::<Result<_, _>>()?,
        cmdline,
        source: format!("{file}:{} `{}` ({how})", item.line, item.title),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_as_grub_splits_them() {
        assert_eq!(
            words("menuentry 'Debian GNU/Linux' --class debian $menuentry_id_option 'gnulinux-simple-1' {"),
            vec!["menuentry", "Debian GNU/Linux", "--class", "debian", "$menuentry_id_option", "gnulinux-simple-1", "{"]
        );
        assert_eq!(
            words("\tset default=\"${next_entry}\""),
            vec!["set", "default=${next_entry}"]
        );
        assert_eq!(
            words("linux /vmlinuz a\\ b # comment"),
            vec!["linux", "/vmlinuz", "a b"]
        );
    }

    #[test]
    fn env_block() {
        let env = parse_env("# GRUB Environment Block\nsaved_entry=1>2\nnext_entry=\n####\n");
        assert_eq!(
            env,
            vec![
                ("saved_entry".to_string(), "1>2".to_string()),
                ("next_entry".to_string(), String::new())
            ]
        );
    }
}
