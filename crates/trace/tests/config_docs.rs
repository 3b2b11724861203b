//! docs/configuration.md's key list is `trace::config::markdown()`, the schema's table: the
//! docs cannot drift from what the parser accepts. `BOOTPRINT_BLESS=1 cargo test -p
//! bootprint-trace --test config_docs` rewrites the generated part after a change to the table.

const BEGIN: &str = "<!-- keys: generated from trace::config::KEYS; do not edit by hand -->\n";
const END: &str = "<!-- end of generated keys -->\n";

#[test]
fn the_docs_key_list_is_the_schema_table() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (Some(a), Some(b)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("{} lacks the generated-keys markers", path.display());
    };
    let want = format!("{BEGIN}\n{}{END}", trace::config::markdown());
    let have = &doc[a..b + END.len()];
    if have != want {
        if std::env::var_os("BOOTPRINT_BLESS").is_some() {
            let new = format!("{}{want}{}", &doc[..a], &doc[b + END.len()..]);
            std::fs::write(&path, new).unwrap();
        } else {
            panic!(
                "{} is not the schema's table: run BOOTPRINT_BLESS=1 cargo test -p bootprint-trace --test config_docs",
                path.display()
            );
        }
    }
}
