//! The argument shape several verbs share: one input path, `--json`, `--svg FILE`, `--help`.

use std::path::PathBuf;

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
    args: &[String],
    name: &str,
    required: &str,
) -> Result<Option<InputArgs>, String> {
    let mut input = None;
    let mut json = false;
    let mut svg = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "--json" => json = true,
            "--svg" => {
                let file = it.next().ok_or("--svg needs a FILE")?;
                svg = Some(PathBuf::from(file));
            }
            s if s.starts_with("--svg=") => svg = Some(PathBuf::from(&s[6..])),
            s if s.starts_with('-') && s != "-" => return Err(format!("unknown option {s:?}")),
            s => {
                if input.replace(PathBuf::from(s)).is_some() {
                    return Err(format!("only one {name} is allowed, found another: {s:?}"));
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

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
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
        assert!(parse_input(&words("t --bogus"), "TRACE", "x")
            .err()
            .unwrap()
            .contains("\"--bogus\""));
    }
}
