//! The TOML subset of `/etc/bootprint/bootprint.toml`: `[section]` lines, `key = value` with
//! integers, floats, booleans, `"strings"` and one-line `["arrays", "of strings"]`, `#`
//! comments. This is the syntax only; what the sections and keys mean, their types and
//! defaults, is the schema in [`crate::config`], through which the boot path (`record`), the
//! runner (`rc`) and the report (`analyze`) all read the file, so there is one parser and none
//! needs a TOML crate. Parsing takes text; reading the file is the caller's business.

use std::fmt;

/// A value as written in the file.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `"text"`.
    Str(String),
    /// A number (`_` separators allowed).
    Num(f64),
    /// `true` / `false`.
    Bool(bool),
    /// `["a", "b"]`.
    List(Vec<String>),
}

/// One `key = value` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The section it is in (`""` before the first `[section]`).
    pub section: String,
    /// The key, trimmed.
    pub key: String,
    /// The parsed value.
    pub value: Value,
    /// 1-based line number.
    pub line: usize,
}

/// A syntax error: the file, the line and what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfError {
    /// The file name given to the parser.
    pub source: String,
    /// 1-based line.
    pub line: usize,
    /// What was expected.
    pub expected: String,
}

impl fmt::Display for ConfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: expected {}",
            self.source, self.line, self.expected
        )
    }
}

impl std::error::Error for ConfError {}

/// Every `key = value` line of the text, in order. `source` names the file in errors. A
/// syntax error anywhere fails the whole text, so a half-read file is never used.
pub fn entries(text: &str, source: &str) -> Result<Vec<Entry>, ConfError> {
    let mut section = String::new();
    let mut out = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let err = |expected: String| ConfError {
            source: source.to_string(),
            line: index + 1,
            expected,
        };
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[') {
            section = name
                .strip_suffix(']')
                .ok_or_else(|| err("']' to close the section name".into()))?
                .trim()
                .to_string();
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| err("`key = value` or `[section]`".into()))?;
        let value = parse_value(value.trim()).map_err(err)?;
        out.push(Entry {
            section: section.clone(),
            key: key.trim().to_string(),
            value,
            line: index + 1,
        });
    }
    Ok(out)
}

/// The entries of one section (the whole text must still parse).
pub fn read_section(text: &str, source: &str, section: &str) -> Result<Vec<Entry>, ConfError> {
    Ok(entries(text, source)?
        .into_iter()
        .filter(|e| e.section == section)
        .collect())
}

fn strip_comment(line: &str) -> &str {
    let mut in_str = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_str = !in_str,
            '#' if !in_str => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Parses one value as written after `=`.
pub fn parse_value(v: &str) -> Result<Value, String> {
    if let Some(inner) = v.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or("']' to close the array (arrays must be on one line)")?;
        let mut items = Vec::new();
        for item in inner.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match parse_value(item)? {
                Value::Str(s) => items.push(s),
                _ => return Err(format!("a quoted string in the array, found {item}")),
            }
        }
        return Ok(Value::List(items));
    }
    if let Some(inner) = v.strip_prefix('"') {
        let s = inner.strip_suffix('"').ok_or("a closing '\"'")?;
        return Ok(Value::Str(s.to_string()));
    }
    match v {
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        _ => {}
    }
    v.replace('_', "")
        .parse::<f64>()
        .map(Value::Num)
        .map_err(|_| format!("a number, true/false, a \"string\" or [\"list\"], found {v}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_values_and_lines() {
        let text = "top = 1\n# c\n[budget]\nkernel_s = 1.5 # s\nname = \"a # b\"\n[x]\nl = [\"p\", \"q\"]\nok = true\n";
        let all = entries(text, "f").unwrap();
        assert_eq!(all.len(), 5);
        assert_eq!(all[0].section, "");
        let b = read_section(text, "f", "budget").unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].key, "kernel_s");
        assert_eq!(b[0].value, Value::Num(1.5));
        assert_eq!(b[0].line, 4);
        assert_eq!(b[1].value, Value::Str("a # b".into()));
        let x = read_section(text, "f", "x").unwrap();
        assert_eq!(x[0].value, Value::List(vec!["p".into(), "q".into()]));
        assert_eq!(x[1].value, Value::Bool(true));
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = entries("[a]\n\nk = nope\n", "/etc/b.toml").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string()
                .starts_with("/etc/b.toml:3: expected a number"),
            "{e}"
        );
        let e = entries("[a\n", "f").unwrap_err();
        assert!(e.expected.contains("']'"), "{e}");
        let e = entries("just words\n", "f").unwrap_err();
        assert!(e.expected.contains("key = value"), "{e}");
    }
}
