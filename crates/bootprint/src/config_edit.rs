//! In-place edits of `bootprint.toml` (`bootprint readahead on|off`, `bootprint modules
//! on|off`) through `toml_edit`, a format-preserving TOML editor: comments, blank lines, key
//! order and spacing are kept byte for byte; only the value edited changes (its trailing
//! comment kept). The file is first checked against its schema (`trace::config`, the reader
//! the boot path uses): a file the boot would refuse is not edited, and the error names the
//! file and line. Only this crate links `toml_edit`; the boot path never does.

use toml_edit::{DocumentMut, Item, Table, Value};

/// `text` (a `bootprint.toml` named `source` in errors) with the boolean `key` of
/// `[section]` set to `on`. Where the file already sets that key (in its section, or by its
/// command-line name in `[record]`, `[boot]` or before any section), the setting that wins
/// (the last) is changed in place; else the key is added to `[section]`, which is appended
/// when the file lacks it. A file that does not parse is an error and nothing is changed.
pub fn set_bool(
    text: &str,
    source: &str,
    section: &str,
    key: &str,
    on: bool,
) -> Result<String, String> {
    let settings = trace::config::parse(text, source).map_err(|e| e.to_string())?;
    let target = trace::config::lookup(section, key).map_err(|e| format!("{source}: {e}"))?;
    let (header, written) = settings
        .iter()
        .rev()
        .find(|s| std::ptr::eq(s.key, target))
        .map_or((section.to_string(), key.to_string()), |s| {
            (s.header.clone(), s.written.trim().to_string())
        });
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| format!("{source}: not TOML that can be edited: {e}"))?;
    let table = if header.is_empty() {
        doc.as_table_mut()
    } else {
        if !doc.contains_key(&header) {
            // Appended at the end: comments after the last entry stay above it, and a blank
            // line parts it from what was there.
            let tail = doc.trailing().as_str().unwrap_or("").to_string();
            let mut t = Table::new();
            if !text.trim().is_empty() {
                t.decor_mut().set_prefix(format!("{tail}\n"));
            }
            doc.set_trailing("");
            doc.insert(&header, Item::Table(t));
        }
        doc[&header]
            .as_table_mut()
            .ok_or_else(|| format!("{source}: [{header}] is not a table"))?
    };
    match table.get_mut(&written).and_then(Item::as_value_mut) {
        Some(v) => {
            let decor = v.decor().clone();
            *v = Value::from(on);
            *v.decor_mut() = decor;
        }
        None => {
            table.insert(&written, toml_edit::value(on));
        }
    }
    let out = doc.to_string();
    // What the boot path will read back: the edit must parse and be the setting that wins.
    let back = trace::config::parse(&out, source).map_err(|e| format!("after the edit: {e}"))?;
    let wins = back.iter().rev().find(|s| std::ptr::eq(s.key, target));
    if wins.map(|s| s.value.bool()) != Some(on) {
        return Err(format!(
            "{source}: the edit of {key} in [{section}] would not take effect"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A comment, blank lines, spacing and every other key survive an edit byte for byte;
    /// the edited value keeps its trailing comment.
    #[test]
    fn an_edit_keeps_comments_and_other_keys_byte_for_byte() {
        let text = "# site settings: keep me\n[record]\nhz   =  25   # fast\nlogin_names = [\"getty\",\"my-login\"]\n\n\
                    [readahead]\nenabled = false # since May\npack = \"/x\"\n\n# the runner\n[rc]\nlate = [\"cups\"]\n";
        let on = set_bool(text, "t", "readahead", "enabled", true).unwrap();
        assert_eq!(on, text.replace("enabled = false #", "enabled = true #"));
        let back = set_bool(&on, "t", "readahead", "enabled", false).unwrap();
        assert_eq!(back, text);
    }

    #[test]
    fn adds_the_key_or_the_section() {
        assert_eq!(
            set_bool("", "t", "readahead", "enabled", true).unwrap(),
            "[readahead]\nenabled = true\n"
        );
        assert_eq!(
            set_bool(
                "[record]\nhz = 5 # mine\n",
                "t",
                "readahead",
                "enabled",
                false
            )
            .unwrap(),
            "[record]\nhz = 5 # mine\n\n[readahead]\nenabled = false\n"
        );
        assert_eq!(
            set_bool(
                "[readahead]\npack = \"/x\"\n\n[rc]\nlate = []\n",
                "t",
                "readahead",
                "enabled",
                true
            )
            .unwrap(),
            "[readahead]\npack = \"/x\"\nenabled = true\n\n[rc]\nlate = []\n"
        );
        assert_eq!(
            set_bool("# only a comment\n", "t", "record", "modules", true).unwrap(),
            "# only a comment\n\n[record]\nmodules = true\n"
        );
    }

    /// The setting that wins is the one changed: `readahead = true` before any section
    /// means `[readahead] enabled`, so `off` changes it there instead of adding a second.
    #[test]
    fn the_winning_setting_is_the_one_changed() {
        let text = "readahead = true # top\nhz = 5\n";
        assert_eq!(
            set_bool(text, "t", "readahead", "enabled", false).unwrap(),
            "readahead = false # top\nhz = 5\n"
        );
        let text = "[boot]\nmodules = false\n";
        assert_eq!(
            set_bool(text, "t", "record", "modules", true).unwrap(),
            "[boot]\nmodules = true\n"
        );
    }

    #[test]
    fn a_bad_file_is_an_error_naming_file_and_line() {
        let e = set_bool(
            "[readahead]\nenabled = maybe\n",
            "/etc/b.toml",
            "readahead",
            "enabled",
            true,
        )
        .unwrap_err();
        assert!(e.starts_with("/etc/b.toml:2: expected"), "{e}");
        let e = set_bool(
            "[readahead]\nenabeld = true\n",
            "/etc/b.toml",
            "readahead",
            "enabled",
            true,
        )
        .unwrap_err();
        assert!(
            e.starts_with("/etc/b.toml:2: expected one of enabled"),
            "{e}"
        );
        // Valid for the boot path's reader, not TOML (a key given twice): refused, not mangled.
        let e = set_bool(
            "[record]\nhz = 5\nhz = 6\n",
            "/etc/b.toml",
            "record",
            "modules",
            true,
        )
        .unwrap_err();
        assert!(e.contains("not TOML that can be edited"), "{e}");
    }
}
