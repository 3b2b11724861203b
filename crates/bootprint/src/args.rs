//! The argument shape several verbs share: one input path, `--json`, `--svg FILE`, `--help`;
//! and the helpers every verb uses on arguments as the OS gives them: a path is bytes, not
//! text, so arguments stay `OsString` and only option names and values that must be text are
//! looked at as text.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// An argument as text, to match option names against: one that is not UTF-8 reads with
/// U+FFFD, so it matches no option and is named that way in messages.
pub fn lossy(a: &OsStr) -> Cow<'_, str> {
    a.to_string_lossy()
}

/// An argument that must be text (a runlevel, a number, a name), or a usage error naming it.
pub fn text<'a>(a: &'a OsStr, what: &str) -> Result<&'a str, String> {
    a.to_str()
        .ok_or_else(|| format!("{what}: {:?} is not text (UTF-8)", a.to_string_lossy()))
}

/// `--flag=value` split into the flag as text and the value as it is (a path need not be
/// UTF-8); any other argument is the flag whole, with no value.
pub fn split_flag(a: &OsStr) -> (Cow<'_, str>, Option<&OsStr>) {
    let b = a.as_bytes();
    if b.starts_with(b"--") {
        if let Some(i) = b.iter().position(|&c| c == b'=') {
            return (
                String::from_utf8_lossy(&b[..i]),
                Some(OsStr::from_bytes(&b[i + 1..])),
            );
        }
    }
    (a.to_string_lossy(), None)
}

/// Words as arguments, for tests.
#[cfg(test)]
pub fn os(words: &[&str]) -> Vec<OsString> {
    words.iter().map(OsString::from).collect()
}

/// `INPUT [--json] [--svg FILE]`.
pub struct InputArgs {
    /// The one positional argument.
    pub input: PathBuf,
    /// Print JSON instead of text.
    pub json: bool,
    /// Also write an SVG here.
    pub svg: Option<PathBuf>,
}

/// Parses `INPUT [--json] [--svg FILE]`; `Ok(None)` means help was asked for. `name` is how
/// the input is called in messages (e.g. `TRACE`), `required` the message when it is missing.
pub fn parse_input(
    args: &[OsString],
    name: &str,
    required: &str,
) -> Result<Option<InputArgs>, String> {
    let mut input = None;
    let mut json = false;
    let mut svg = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match split_flag(a) {
            (f, None) if f == "-h" || f == "--help" => return Ok(None),
            (f, None) if f == "--json" => json = true,
            (f, None) if f == "--svg" => {
                let file = it.next().ok_or("--svg needs a FILE")?;
                svg = Some(PathBuf::from(file));
            }
            (f, Some(v)) if f == "--svg" => svg = Some(PathBuf::from(v)),
            (s, _) if s.starts_with('-') && s != "-" => {
                return Err(format!("unknown option {:?}", lossy(a)))
            }
            _ => {
                if input.replace(PathBuf::from(a)).is_some() {
                    return Err(format!(
                        "only one {name} is allowed, found another: {:?}",
                        lossy(a)
                    ));
                }
            }
        }
    }
    let input = input.ok_or(required)?;
    Ok(Some(InputArgs { input, json, svg }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn shapes_and_errors() {
        let a = parse_input(&words("t --json --svg x.svg"), "TRACE", "need one")
            .unwrap()
            .unwrap();
        assert_eq!(a.input, PathBuf::from("t"));
        assert!(a.json);
        assert_eq!(a.svg, Some(PathBuf::from("x.svg")));
        let a = parse_input(&words("--svg=y.svg t"), "TRACE", "need one")
            .unwrap()
            .unwrap();
        assert_eq!(a.svg, Some(PathBuf::from("y.svg")));
        assert!(parse_input(&words("t --help"), "TRACE", "need one")
            .unwrap()
            .is_none());
        assert_eq!(
            parse_input(&[], "TRACE", "need one").err().unwrap(),
            "need one"
        );
        let e = parse_input(&words("a b"), "TRACE or DMESG", "x")
            .err()
            .unwrap();
        assert!(e.contains("only one TRACE or DMESG"), "{e}");
        assert!(parse_input(&words("t --svg"), "TRACE", "x")
            .err()
            .unwrap()
            .contains("--svg needs"));
        // A path is bytes: kept as it is, inline or not.
        let bytes = OsStr::from_bytes(b"/tmp/\xff");
        let mut with = OsString::from("--svg=");
        with.push(bytes);
        let a = parse_input(&[with, bytes.into()], "TRACE", "x")
            .unwrap()
            .unwrap();
        assert_eq!(
            (a.svg.unwrap().as_os_str(), a.input.as_os_str()),
            (bytes, bytes)
        );
        assert_eq!(
            text(bytes, "--runlevel").unwrap_err(),
            "--runlevel: \"/tmp/\u{fffd}\" is not text (UTF-8)"
        );
        assert!(parse_input(&words("t --bogus"), "TRACE", "x")
            .err()
            .unwrap()
            .contains("\"--bogus\""));
    }
}
