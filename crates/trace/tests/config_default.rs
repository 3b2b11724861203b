//! packaging/bootprint.toml, the conffile the Debian package installs, is
//! `trace::config_default::commented_default()`: every key of the schema, commented out at
//! its default. `BOOTPRINT_BLESS=1 cargo test -p bootprint-trace --test config_default`
//! rewrites it after a change to the schema's table.

use trace::config::{parse, KEYS};

fn packaged() -> (std::path::PathBuf, String) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/bootprint.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    (path, text)
}

#[test]
fn the_packaged_file_is_the_schema_default() {
    let (path, have) = packaged();
    let want = trace::config_default::commented_default();
    if have != want {
        if std::env::var_os("BOOTPRINT_BLESS").is_some() {
            std::fs::write(&path, want).unwrap();
        } else {
            panic!(
                "{} is not the schema's commented default: run BOOTPRINT_BLESS=1 cargo test -p bootprint-trace --test config_default",
                path.display()
            );
        }
    }
}

#[test]
fn the_packaged_file_parses_to_the_defaults() {
    // The text the other test keeps the packaged file equal to (read here, it would race
    // with that test's rewrite under BOOTPRINT_BLESS).
    let text = trace::config_default::commented_default();
    let source = "packaging/bootprint.toml";
    // As installed: nothing set, so every reader keeps its built-in defaults.
    assert_eq!(parse(&text, source).unwrap(), Vec::new());
    // Every key line (and the commented `[rc]` header) uncommented: each key once, at the
    // value its table default parses to.
    let open: String = text
        .lines()
        .map(|l| match l.strip_prefix('#') {
            Some(rest) if rest.starts_with(|c: char| c.is_ascii_lowercase()) || rest == "[rc]" => {
                format!("{rest}\n")
            }
            _ => format!("{l}\n"),
        })
        .collect();
    let settings = parse(&open, source).unwrap_or_else(|e| panic!("uncommented: {e}"));
    assert_eq!(settings.len(), KEYS.len());
    for k in KEYS {
        let set: Vec<_> = settings.iter().filter(|s| std::ptr::eq(s.key, k)).collect();
        assert_eq!(set.len(), 1, "{} set {} times", k.name, set.len());
        let alone = format!("[{}]\n{} = {}\n", k.section.name(), k.name, k.default);
        assert_eq!(
            set[0].value,
            parse(&alone, "t").unwrap()[0].value,
            "{}",
            k.name
        );
    }
}
