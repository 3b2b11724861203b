//! The commented default `/etc/bootprint/bootprint.toml` the Debian package installs
//! (`packaging/bootprint.toml`): [`commented_default`] writes it from the schema's table
//! ([`crate::config::KEYS`]), as [`crate::config::markdown`] writes the docs' key list, so the
//! file cannot drift from what the parser accepts (a test keeps the two equal).
//!
//! Every key is there, commented out at its default with its meaning and type, so the file
//! as installed sets nothing: installing it changes nothing about a boot. Uncommenting a
//! key line gives that key its default, which is what the test checks.
//!
//! ```
//! let text = trace::config_default::commented_default();
//! assert!(trace::config::parse(&text, "bootprint.toml").unwrap().is_empty());
//! assert!(text.contains("\n#hz = 5\n"));
//! ```

use std::fmt::Write as _;

use crate::config::{keys, Section, CONFIG_FILE};

/// Comment lines are wrapped before this column.
const WIDTH: usize = 79;

/// The file's opening comment.
const HEAD: &str = "\
bootprint's settings. Every key is listed below, commented out at its default: the file as \
installed sets nothing, and installing bootprint changes nothing about the next boot (the \
boot path runs only once `bootprint enable` has turned a lever on). To change a setting, \
remove the `#` before its key and edit the value; `bootprint readahead on|off` and \
`bootprint modules on|off` edit this file for you. Syntax: a small TOML subset \
(`key = value`; \"strings\", numbers, true/false, [\"lists\", \"of strings\"]). A mistake \
is reported with this file's name and line, and the boot path then ignores the whole file. \
docs/configuration.md (in /usr/share/doc/bootprint) says more about each key.";

/// `[rc]`'s note: its header is commented out too (see [`commented_default`]).
const RC_NOTE: &str = "\
The header below is commented out because an [rc] section, even an empty one, makes the \
runner ignore the deprecated /etc/bootprint/rc.conf: remove its `#` together with the \
first key you set here.";

/// The commented default file: a header, then every section of [`Section::ALL`] with each of
/// its keys as a comment (meaning, type, other names) and a commented-out `key = default`.
/// The names on the kernel command line are said once per section (its `about`).
///
/// Section headers are real lines, so a key uncommented under one lands in its section;
/// `[rc]`'s is commented out as well, because the runner treats an `[rc]` header, even
/// with nothing under it, as the end of the deprecated `rc.conf`.
pub fn commented_default() -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {CONFIG_FILE}");
    let _ = writeln!(
        out,
        "# Generated from the schema (trace::config::KEYS) by trace::config_default."
    );
    out.push_str("#\n");
    comment(&mut out, "", HEAD);
    for section in Section::ALL {
        out.push('\n');
        comment(&mut out, "", &format!("{}.", plain(section.about())));
        if section == Section::Rc {
            comment(&mut out, "", RC_NOTE);
            let _ = writeln!(out, "#[{}]", section.name());
        } else {
            let _ = writeln!(out, "[{}]", section.name());
        }
        for k in keys(section) {
            out.push('\n');
            let mut about = format!("{}: {} ({}", k.name, plain(k.meaning), k.ty.describe());
            if !k.aliases.is_empty() {
                let _ = write!(about, "; also written {}", k.aliases.join(", "));
            }
            about.push(')');
            comment(&mut out, "  ", &about);
            let _ = writeln!(out, "#{} = {}", k.name, k.default);
        }
    }
    out
}

/// The schema's markdown without its code marks, for a plain-text comment.
fn plain(s: &str) -> String {
    s.replace('`', "")
}

/// `text` as `# ` comment lines wrapped before [`WIDTH`]; lines after the first are indented
/// by `indent` more.
fn comment(out: &mut String, indent: &str, text: &str) {
    let mut line = String::from("#");
    let mut words = 0;
    for word in text.split_whitespace() {
        if words > 0 && line.len() + 1 + word.len() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = format!("#{indent}");
            words = 0;
        }
        line.push(' ');
        line.push_str(word);
        words += 1;
    }
    out.push_str(&line);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse, KEYS};

    #[test]
    fn every_key_once_and_no_comment_line_too_long() {
        let text = commented_default();
        // Two sections may share a key's name (`enabled`): count within its section.
        let section_text = |s: Section| {
            let hash = if s == Section::Rc { "#" } else { "" };
            let start = text.find(&format!("\n{hash}[{}]\n", s.name())).unwrap();
            let rest = &text[start + 1..];
            let end = rest[1..]
                .find("\n[")
                .into_iter()
                .chain(rest[1..].find("\n#["))
                .min()
                .map_or(rest.len(), |e| e + 1);
            &rest[..end]
        };
        for k in KEYS {
            let line = format!("\n#{} = {}\n", k.name, k.default);
            assert_eq!(
                section_text(k.section).matches(&line).count(),
                1,
                "{}",
                k.name
            );
        }
        // Only the comments are wrapped; a key line with a long default list is one line.
        for l in text.lines().filter(|l| l.starts_with("# ")) {
            assert!(l.len() <= WIDTH, "{l}");
        }
    }

    #[test]
    fn a_long_text_wraps_at_words_with_the_indent() {
        let mut out = String::new();
        comment(&mut out, "  ", &"word ".repeat(30));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].len() <= WIDTH && lines[0].starts_with("# word"));
        assert!(lines[1].starts_with("#   word"), "{}", lines[1]);
        assert_eq!(out.matches("word").count(), 30);
    }

    #[test]
    fn as_installed_it_sets_nothing_and_has_no_rc_section() {
        let text = commented_default();
        assert!(parse(&text, "t").unwrap().is_empty());
        assert!(!crate::config::has_section(&text, Section::Rc));
    }
}
