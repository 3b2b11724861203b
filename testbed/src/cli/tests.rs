//! The command-line definition against what the hand-written parser it replaced accepted and
//! against every `bootprint-testbed` command line the repository writes down: parsed with
//! `parse_from`, no verb run (nothing here boots).

use std::path::{Path, PathBuf};

use clap::error::ErrorKind;
use clap::ValueEnum;

use super::*;

fn parse(line: &str) -> Result<Cli, clap::Error> {
    parse_from(line.split_whitespace())
}

fn verb(line: &str) -> Verb {
    match parse(line) {
        Ok(c) => c.verb,
        Err(e) => panic!("{line}: {}", e.render()),
    }
}

/// The error of a line that must not parse, rendered as the user sees it.
fn error(line: &str) -> (ErrorKind, String) {
    match parse(line) {
        Ok(c) => panic!("{line}: parsed as {c:?}"),
        Err(e) => {
            assert_eq!(e.exit_code(), 2, "{line}");
            (e.kind(), e.render().to_string())
        }
    }
}

/// The verbs, in the order the help lists them.
const VERBS: &[&str] = &[
    "deps",
    "image",
    "boot",
    "bench",
    "smoke",
    "faults",
    "soak",
    "stall-repro",
    "late",
    "self-off",
    "parity",
    "reboot",
    "fleet",
    "otlp",
    "verdict",
    "initramfs",
    "package",
    "desktop",
    "seekcheck",
    "cpuscale",
    "completions",
    "man",
];

fn verbs() -> Vec<String> {
    command()
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .filter(|n| n != "help")
        .collect()
}

/// The smallest command line of each verb (its required arguments filled in).
fn minimal(verb: &str) -> String {
    match verb {
        "bench" => "bootprint-testbed bench record".into(),
        "soak" => "bootprint-testbed soak plain".into(),
        "completions" => "bootprint-testbed completions bash".into(),
        "man" => "bootprint-testbed man /tmp".into(),
        "package" => "bootprint-testbed package --deb x.deb".into(),
        v => format!("bootprint-testbed {v}"),
    }
}

#[test]
fn the_verbs_are_the_known_ones() {
    assert_eq!(verbs(), VERBS);
    for v in VERBS {
        verb(&minimal(v));
    }
}

#[test]
fn help_for_the_program_and_every_verb_exits_0() {
    for line in [
        "bootprint-testbed --help",
        "bootprint-testbed -h",
        "bootprint-testbed help",
    ] {
        let e = parse(line).unwrap_err();
        assert_eq!(
            (e.kind(), e.exit_code()),
            (ErrorKind::DisplayHelp, 0),
            "{line}"
        );
    }
    let e = parse("bootprint-testbed --version").unwrap_err();
    assert_eq!((e.kind(), e.exit_code()), (ErrorKind::DisplayVersion, 0));
    for v in VERBS {
        for line in [
            format!("bootprint-testbed {v} --help"),
            format!("{} -h", minimal(v)),
            format!("bootprint-testbed help {v}"),
        ] {
            let e = parse(&line).unwrap_err();
            assert_eq!(
                (e.kind(), e.exit_code()),
                (ErrorKind::DisplayHelp, 0),
                "{line}"
            );
        }
    }
}

/// What the hand-written usage said, still said: every verb with its options, the
/// environment and the exit codes.
#[test]
fn the_top_level_help_has_every_command_line() {
    let help = command().render_long_help().to_string();
    for v in VERBS {
        assert!(
            help.contains(&format!("\n  bootprint-testbed {v} "))
                || help.contains(&format!("\n  bootprint-testbed {v}\n")),
            "{v} missing from\n{help}"
        );
    }
    for want in [
        "bootprint-testbed soak CONFIG [--boots N] [--until MARK]",
        "bootprint-testbed stall-repro [--no-flip] [--seconds N] [--no-cargo]",
        "BOOTPRINT_TESTBED_CACHE",
        "Exit codes: 0 ok, 1 failure, 2 usage.",
    ] {
        assert!(help.contains(want), "{want:?} missing from\n{help}");
    }
    // A verb's help lists its choices with what each is.
    let mut cmd = command();
    cmd.build();
    let bench = cmd.find_subcommand_mut("bench").unwrap().render_long_help();
    assert!(bench.to_string().contains("recorder-cost: "), "{bench}");
}

#[test]
fn a_wrong_option_shows_that_verbs_usage() {
    for v in VERBS {
        let (kind, text) = error(&format!("{} --badflag", minimal(v)));
        assert_eq!(kind, ErrorKind::UnknownArgument, "{v}");
        assert!(
            text.contains("'--badflag'") && text.contains(&format!("Usage: bootprint-testbed {v}")),
            "{v}: {text}"
        );
    }
}

/// The checks the old parser made (a positive count, one of a list), each error naming the
/// option, the value and what is expected, with the verb's usage.
#[test]
fn values_are_checked() {
    for (line, kind, says) in [
        (
            "bench record --runs 0",
            ErrorKind::ValueValidation,
            "expected a positive integer",
        ),
        (
            "bench record --runs=x",
            ErrorKind::ValueValidation,
            "expected a positive integer",
        ),
        (
            "soak plain --boots 0",
            ErrorKind::ValueValidation,
            "'--boots <N>'",
        ),
        (
            "verdict --boots=-1",
            ErrorKind::ValueValidation,
            "expected a positive integer",
        ),
        (
            "stall-repro --seconds 0",
            ErrorKind::ValueValidation,
            "'--seconds <N>'",
        ),
        (
            "boot --profile ssd",
            ErrorKind::InvalidValue,
            "[possible values: fast, sd, hdd, hdd-seek, sd-seek, hdd-scaled, sd-scaled]",
        ),
        (
            "bench rc --profile ssd",
            ErrorKind::InvalidValue,
            "fast, sd, hdd",
        ),
        ("bench nope", ErrorKind::InvalidValue, "recorder-cost"),
        ("soak nope", ErrorKind::InvalidValue, "initramfs-readahead"),
        (
            "soak plain --until boot",
            ErrorKind::InvalidValue,
            "init, login",
        ),
        (
            "faults --case nope",
            ErrorKind::InvalidValue,
            "recorder-killed",
        ),
        (
            "boot --trace-out",
            ErrorKind::InvalidValue,
            "'--trace-out <DIR>'",
        ),
        ("bench", ErrorKind::MissingRequiredArgument, "<NAME>"),
        ("soak", ErrorKind::MissingRequiredArgument, "<CONFIG>"),
        (
            "boot --desktop --desktop-systemd",
            ErrorKind::ArgumentConflict,
            "--desktop",
        ),
        (
            "image --desktop-systemd --desktop",
            ErrorKind::ArgumentConflict,
            "--desktop",
        ),
        (
            "soak list --boots 5",
            ErrorKind::ArgumentConflict,
            "takes no options",
        ),
        (
            "soak list --no-cargo",
            ErrorKind::ArgumentConflict,
            "'--no-cargo'",
        ),
        ("bench record extra", ErrorKind::UnknownArgument, "'extra'"),
        ("frobnicate", ErrorKind::InvalidSubcommand, "'frobnicate'"),
        ("completions tcsh", ErrorKind::InvalidValue, "bash"),
    ] {
        let (k, text) = error(&format!("bootprint-testbed {line}"));
        assert_eq!(k, kind, "{line}: {text}");
        let v = line.split_whitespace().next().unwrap();
        assert!(text.contains(says), "{line}: {says:?} missing from {text}");
        if v != "frobnicate" {
            assert!(
                text.contains(&format!("Usage: bootprint-testbed {v}")),
                "{line}: {text}"
            );
        }
    }
    let (kind, _) = error("bootprint-testbed");
    assert_eq!(kind, ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand);
}

/// The defaults the old parser applied, and the shapes it took: options anywhere,
/// `--opt=value`, kernel arguments that start with a dash.
#[test]
fn defaults_and_shapes_the_old_parser_took() {
    let Verb::Bench(b) = verb("bootprint-testbed bench record") else {
        panic!()
    };
    assert_eq!(
        (b.runs, b.profile, b.json, b.build.cargo()),
        (3, None, false, true)
    );
    assert_eq!(b.flavor.flavor(), Flavor::Text);
    let Verb::Bench(b) =
        verb("bootprint-testbed bench --runs=5 --desktop readahead --profile sd --no-cargo")
    else {
        panic!()
    };
    assert_eq!(b.name, "readahead");
    assert_eq!(
        (b.runs, b.profile, b.build.cargo()),
        (5, Some(Profile::Sd), false)
    );
    assert_eq!(b.flavor.flavor(), Flavor::Desktop);
    let Verb::Soak(s) = verb("bootprint-testbed soak plain") else {
        panic!()
    };
    assert_eq!(
        (s.boots, s.until, s.hold, s.fresh_copy),
        (30, None, false, false)
    );
    assert_eq!(s.append, None);
    let Verb::Soak(s) =
        verb("bootprint-testbed soak --boots 3 rc --until=login --hold --fresh-copy --append -x")
    else {
        panic!()
    };
    assert_eq!(
        (s.config.as_str(), s.boots, s.until),
        ("rc", 3, Some(Until::Login))
    );
    assert!(s.hold && s.fresh_copy);
    assert_eq!(s.append.as_deref(), Some("-x"));
    assert!(matches!(verb("bootprint-testbed soak list"), Verb::Soak(s) if s.config == SOAK_LIST));
    let Verb::Verdict(v) = verb("bootprint-testbed verdict") else {
        panic!()
    };
    assert_eq!(v.boots, 11);
    let Verb::StallRepro(r) = verb("bootprint-testbed stall-repro --no-flip") else {
        panic!()
    };
    assert_eq!((r.seconds, r.no_flip), (120, true));
    let Verb::Faults(f) = verb("bootprint-testbed faults --all --case pack-corrupt") else {
        panic!()
    };
    assert!(f.all && f.case.as_deref() == Some("pack-corrupt"));
    let Verb::Boot(b) = verb(
        "bootprint-testbed boot --json --record --profile=hdd --trace-out t --keep-disk \
         --disk-from d --initrd i --sync-disk --image m --aged --desktop-systemd \
         --guest-script g --append a --append b",
    ) else {
        panic!()
    };
    let o = &b.opts;
    assert_eq!(o.profile, Profile::Hdd);
    // The last of a repeated option wins.
    assert_eq!(o.append.as_deref(), Some("b"));
    assert!(o.record && o.keep_disk && o.sync_disk && b.json && b.aged);
    assert_eq!(
        (
            &o.trace_out,
            &o.disk_from,
            &o.initrd,
            &o.guest_script,
            &b.image
        ),
        (
            &Some("t".into()),
            &Some("d".into()),
            &Some("i".into()),
            &Some("g".into()),
            &Some("m".into())
        )
    );
    assert_eq!(b.flavor.flavor(), Flavor::DesktopSystemd);
    let Verb::Boot(b) = verb("bootprint-testbed boot") else {
        panic!()
    };
    assert_eq!(b.opts.profile, Profile::Fast);
    assert_eq!(b.flavor.flavor(), Flavor::Text);
    let Verb::Image(i) = verb("bootprint-testbed image --desktop --no-cargo") else {
        panic!()
    };
    assert!(!i.build.cargo() && i.flavor.flavor() == Flavor::Desktop);
}

/// The names on the command line are the ones results files and the modules use.
#[test]
fn choice_names_are_the_modules_names() {
    for p in Profile::value_variants() {
        assert_eq!(p.to_possible_value().unwrap().get_name(), p.name());
    }
    for c in crate::checks::soak::configs() {
        verb(&format!("bootprint-testbed soak {}", c.name));
    }
    for (name, _) in crate::bench::registry::BENCHMARKS {
        verb(&format!("bootprint-testbed bench {name}"));
    }
    for (name, _) in crate::checks::faults::names() {
        verb(&format!("bootprint-testbed faults --case {name}"));
    }
}

/// Every `bootprint-testbed ...` command line that README.md, docs/*.md, the Makefile,
/// .ci/run and scripts/* write down parses. Synopses are expanded (each `a|b` alternative,
/// optional parts left out and put in), placeholders filled with a value their argument
/// takes, and shell variables of a `for` loop replaced by each of its words; a line asking
/// for help counts as parsed. Every verb must
/// be named somewhere, and each source must yield at least as many lines as it had when this
/// test was written: fewer means the extraction broke, not that the docs are fine.
#[test]
fn documented_command_lines_parse() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // Somewhat below the counts when this was written (12, 17, 20, 29), so a doc losing a mention
    // does not fail this; an extractor that broke finds far fewer.
    let floors: &[(&str, usize)] = &[
        ("README.md", 10),
        ("docs/testbed.md", 12),
        ("docs/*.md but testbed.md", 15),
        ("Makefile", 25),
    ];
    let mut found = vec![0; floors.len()];
    let mut named: Vec<String> = Vec::new();
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in sources(&root) {
        let rel = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        let lines = if rel.ends_with(".md") {
            markdown_lines(&text)
        } else {
            shell_lines(&text)
        };
        let floor = match rel.as_str() {
            "README.md" | "docs/testbed.md" | "Makefile" => {
                floors.iter().position(|(f, _)| *f == rel)
            }
            r if r.starts_with("docs/") => Some(2),
            _ => None,
        };
        if let Some(i) = floor {
            found[i] += lines.len();
        }
        for line in lines {
            for words in expand(&line) {
                let args = fill(&words);
                checked += 1;
                match parse_from(&args) {
                    Ok(_) => {
                        // The verb, after any global options (`--release 13`).
                        let mut k = 1;
                        while args.get(k).is_some_and(|a| a.starts_with("--")) {
                            k += 2;
                        }
                        named.extend(args.get(k).cloned());
                    }
                    Err(e) if e.kind() == ErrorKind::DisplayHelp => {}
                    Err(e) => {
                        failures.push(format!("{rel}: `{line}` as {args:?}:\n{}", e.render()))
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for ((source, floor), n) in floors.iter().zip(&found) {
        assert!(
            n >= floor,
            "only {n} command lines found in {source} (at least {floor})"
        );
    }
    for v in VERBS {
        assert!(
            named.iter().any(|n| n == v),
            "no documented command line runs `{v}`"
        );
    }
    assert!(checked >= 100, "only {checked} command lines checked");
}

/// README.md, docs/*.md, the Makefile, .ci/run and scripts/*, the ones that exist.
fn sources(root: &Path) -> Vec<PathBuf> {
    let listed = |dir: &str, md_only: bool| -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        files.retain(|p| p.is_file() && (!md_only || p.extension().is_some_and(|x| x == "md")));
        files.sort();
        files
    };
    let mut files = vec![root.join("README.md")];
    files.extend(listed("docs", true));
    files.push(root.join("Makefile"));
    files.push(root.join(".ci/run"));
    files.extend(listed("scripts", false));
    files.retain(|p| p.is_file());
    files
}

/// The program's name as the sources write it.
fn is_program(word: &str) -> bool {
    word == "bootprint-testbed"
        || word.ends_with("/bootprint-testbed")
        || ["$(TESTBED)", "${TESTBED}", "$TESTBED"].contains(&word)
}

fn starts_command(s: &str) -> bool {
    let mut words = s.split_whitespace();
    words.next().is_some_and(is_program) && words.next().is_some()
}

/// The command lines in markdown: lines of code blocks (fenced, or indented four spaces)
/// that start with the program, with their continuation lines (starting with `[`) and
/// without a trailing `# comment`; code spans in paragraphs (which may wrap) that start with
/// it; and under a heading that names `bootprint-testbed`, the first cell of each table row
/// (`| \`boot [--record]\` | ...`), a verb's synopsis.
fn markdown_lines(markdown: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut fenced = false;
    let mut continuing = false;
    let mut verb_table = false;
    let mut paragraph: Vec<&str> = Vec::new();
    let flush = |paragraph: &mut Vec<&str>, out: &mut Vec<String>| {
        let joined = paragraph.join(" ");
        paragraph.clear();
        for span in joined.split('`').skip(1).step_by(2) {
            if starts_command(span) {
                out.push(span.trim().to_string());
            }
        }
    };
    for line in markdown.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            flush(&mut paragraph, &mut out);
            fenced = !fenced;
            continuing = false;
            continue;
        }
        if fenced || (line.starts_with("    ") && paragraph.is_empty()) {
            let code = t.split(" #").next().unwrap_or_default().trim();
            if starts_command(code) {
                out.push(code.to_string());
                continuing = true;
            } else if continuing && code.starts_with('[') {
                let last = out.last_mut().unwrap();
                last.push(' ');
                last.push_str(code);
            } else {
                continuing = false;
            }
            continue;
        }
        continuing = false;
        if t.starts_with('#') {
            flush(&mut paragraph, &mut out);
            verb_table = t.contains("`bootprint-testbed`");
            continue;
        }
        if t.starts_with('|') {
            flush(&mut paragraph, &mut out);
            let row = t.replace("\\|", "|");
            if verb_table {
                if let Some(cell) = row.split('`').nth(1).filter(|_| row.starts_with("| `")) {
                    out.push(format!("bootprint-testbed {cell}"));
                }
            } else {
                paragraph.push(t);
                flush(&mut paragraph, &mut out);
            }
            continue;
        }
        if t.is_empty() {
            flush(&mut paragraph, &mut out);
        } else {
            paragraph.push(t);
        }
    }
    flush(&mut paragraph, &mut out);
    out.into_iter().map(|l| l.replace("\\|", "|")).collect()
}

/// The command lines in a shell script or a Makefile: from the program, where a command
/// starts (a line's first word, or after `;`, `&&`, `||`, `|`, `do`, `then`), to the end of
/// that command. A `$VAR` of a `for VAR in WORDS; do` loop gives one line per word.
fn shell_lines(text: &str) -> Vec<String> {
    let text = text.replace("\\\n", " ");
    let separators = [
        ";", "&&", "||", "|", "do", "then", "else", "!", "time", "exec",
    ];
    let mut out = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            let at_start = i == 0 || {
                let prev = words[i - 1];
                separators.contains(&prev) || prev.ends_with(';')
            };
            if !(at_start && is_program(w)) {
                continue;
            }
            let mut command = vec!["bootprint-testbed".to_string()];
            for w in &words[i + 1..] {
                if separators[..4].contains(w) || w.starts_with('#') || w.starts_with('>') {
                    break;
                }
                command.push(w.trim_end_matches(';').to_string());
                if w.ends_with(';') {
                    break;
                }
            }
            if command.len() > 1 {
                out.extend(loop_words(&text, &command.join(" ")));
            }
        }
    }
    out
}

/// `line` with a shell variable (`$c`, `$$c` in a Makefile, `${c}`) replaced by each word
/// of the `for c in WORDS; do` that sets it; as it is when there is none.
fn loop_words(text: &str, line: &str) -> Vec<String> {
    let var = line.split_whitespace().find_map(|w| {
        let v = w.trim_start_matches('$');
        let v = v
            .strip_prefix('{')
            .and_then(|v| v.strip_suffix('}'))
            .unwrap_or(v);
        (w.starts_with('$') && !v.is_empty() && v.chars().all(|c| c.is_alphanumeric() || c == '_'))
            .then(|| (w.to_string(), v.to_string()))
    });
    let Some((word, var)) = var else {
        return vec![line.to_string()];
    };
    let head = format!("for {var} in ");
    let Some(start) = text.find(&head) else {
        return vec![line.to_string()];
    };
    let rest = &text[start + head.len()..];
    let list = rest.split(';').next().unwrap_or_default();
    list.split_whitespace()
        .map(|value| {
            line.split_whitespace()
                .map(|w| if w == word { value } else { w })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// A piece of a synopsis: a word with its `a|b` alternatives, or an optional `[...]` group
/// with its ` | `-separated alternatives.
#[derive(Debug)]
enum Piece {
    Word(Vec<String>),
    Optional(Vec<Vec<Piece>>),
}

/// The words of a synopsis: quotes group (`--append 'A B'` is two words) and are dropped,
/// `[` and `]` outside quotes open and close a group, `|` outside quotes separates
/// alternatives (a word of its own separates the group's).
fn tokens(synopsis: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    let mut in_word = false;
    let end =
        |word: &mut Vec<String>, current: &mut String, in_word: &mut bool, out: &mut Vec<Token>| {
            if *in_word {
                word.push(std::mem::take(current));
                let alternatives = std::mem::take(word);
                out.push(if alternatives == ["", ""] {
                    Token::Bar
                } else {
                    Token::Word(alternatives)
                });
                *in_word = false;
            }
        };
    for c in synopsis.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '[') if !in_word => out.push(Token::Open),
            (None, ']') => {
                end(&mut word, &mut current, &mut in_word, &mut out);
                out.push(Token::Close);
            }
            (None, '|') => {
                word.push(std::mem::take(&mut current));
                in_word = true;
            }
            (None, c) if c.is_whitespace() => end(&mut word, &mut current, &mut in_word, &mut out),
            (None, c) => {
                current.push(c);
                in_word = true;
            }
        }
    }
    end(&mut word, &mut current, &mut in_word, &mut out);
    out
}

#[derive(Debug, PartialEq)]
enum Token {
    Open,
    Close,
    Bar,
    Word(Vec<String>),
}

/// Pieces up to the closing `]` (or the end), split at a `|` of their own.
fn group(it: &mut impl Iterator<Item = Token>) -> Vec<Vec<Piece>> {
    let mut alternatives = vec![Vec::new()];
    while let Some(t) = it.next() {
        match t {
            Token::Close => break,
            Token::Open => alternatives
                .last_mut()
                .unwrap()
                .push(Piece::Optional(group(it))),
            Token::Bar => alternatives.push(Vec::new()),
            Token::Word(w) => alternatives.last_mut().unwrap().push(Piece::Word(w)),
        }
    }
    alternatives
}

/// The command lines a synopsis stands for, as words: for each k, the k-th alternative
/// everywhere (the last where there are fewer), once without the optional parts and once
/// with all of them.
fn expand(synopsis: &str) -> Vec<Vec<String>> {
    fn widest(alternatives: &[Vec<Piece>]) -> usize {
        let inner = alternatives.iter().flatten().map(|p| match p {
            Piece::Word(w) => w.len(),
            Piece::Optional(a) => widest(a),
        });
        inner.max().unwrap_or(1).max(alternatives.len())
    }
    fn pick(seq: &[Piece], k: usize, optional: bool, out: &mut Vec<String>) {
        for p in seq {
            match p {
                Piece::Word(w) => out.push(w[k.min(w.len() - 1)].clone()),
                Piece::Optional(a) if optional => pick(&a[k.min(a.len() - 1)], k, optional, out),
                Piece::Optional(_) => {}
            }
        }
    }
    let alternatives = group(&mut tokens(synopsis).into_iter());
    let mut out: Vec<Vec<String>> = Vec::new();
    for k in 0..widest(&alternatives) {
        for optional in [false, true] {
            let mut words = Vec::new();
            pick(
                &alternatives[k.min(alternatives.len() - 1)],
                k,
                optional,
                &mut words,
            );
            if !out.contains(&words) {
                out.push(words);
            }
        }
    }
    out
}

/// The arguments of a command line: placeholders (`VERB`, `N`, `CONFIG`, `<FILE>`, `--runs=N`)
/// replaced by a value their argument takes (one of its choices, a count, a name), and a
/// value added after an option written without one (`boot --guest-script`).
fn fill(words: &[String]) -> Vec<String> {
    let mut cmd = command();
    cmd.build();
    // `NAME`, `<NAME>`, a make variable (`$(PACKAGE_RELEASE)`) or a shell variable in a
    // recipe (`$${RELEASE}`).
    let placeholder = |w: &str| {
        let w = w.trim_start_matches('<').trim_end_matches('>');
        let w = w
            .strip_prefix("$(")
            .and_then(|v| v.strip_suffix(')'))
            .or_else(|| w.strip_prefix("$${").and_then(|v| v.strip_suffix('}')))
            .unwrap_or(w);
        w.chars().any(|c| c.is_ascii_uppercase())
            && w.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    };
    // The last choice: soak's first, `list`, takes no options.
    let sample = |a: &Arg| match a.get_possible_values().last() {
        Some(v) => v.get_name().to_string(),
        None if a.get_value_names().is_some_and(|n| n == ["N"]) => "2".into(),
        None => "x".into(),
    };
    let mut out = vec!["bootprint-testbed".to_string()];
    // Global options before the verb (`--release 13`).
    let mut at = 1;
    while let Some(w) = words.get(at).filter(|w| w.starts_with("--")) {
        let Some(a) = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(&w[2..]) && a.get_action().takes_values())
        else {
            break;
        };
        out.push(w.clone());
        match words.get(at + 1) {
            Some(v) if !placeholder(v) => out.push(v.clone()),
            _ => out.push(sample(a)),
        }
        at += 2;
    }
    let Some(mut verb) = words.get(at).cloned() else {
        return out;
    };
    if placeholder(&verb) {
        // `bootprint-testbed VERB --help`
        verb = cmd.get_subcommands().next().unwrap().get_name().to_string();
    }
    out.push(verb.clone());
    let Some(sub) = cmd.find_subcommand(&verb) else {
        return out;
    };
    let takes_value = |long: &str| {
        sub.get_arguments()
            .find(|a| a.get_long() == Some(long) && a.get_action().takes_values())
    };
    let positionals: Vec<&Arg> = sub.get_positionals().collect();
    let mut next_positional = 0;
    let mut i = at + 1;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        if let Some((flag, value)) = w.split_once('=').filter(|(f, _)| f.starts_with("--")) {
            let value = match takes_value(&flag[2..]) {
                Some(a) if placeholder(value) => sample(a),
                _ => value.to_string(),
            };
            out.push(format!("{flag}={value}"));
            continue;
        }
        if let Some(a) = w.strip_prefix("--").and_then(takes_value) {
            out.push(w.clone());
            match words.get(i) {
                Some(v) if !v.starts_with("--") => {
                    out.push(if placeholder(v) { sample(a) } else { v.clone() });
                    i += 1;
                }
                _ => out.push(sample(a)),
            }
            continue;
        }
        if !w.starts_with('-') {
            let arg = positionals.get(next_positional);
            next_positional += 1;
            if let Some(a) = arg.filter(|_| placeholder(w)) {
                out.push(sample(a));
                continue;
            }
        }
        out.push(w.clone());
    }
    out
}

/// The extraction and expansion on made-up text, so a broken extractor shows here first.
#[test]
fn the_extraction_finds_what_is_written() {
    let md = "Run `bootprint-testbed\nsmoke` first.\n\n\
              ```\n\
              target/release/bootprint-testbed boot [--profile fast|sd|hdd]   # one boot\n\
              \x20                                     [--append 'A B']\n\
              cargo build -p bootprint-testbed\n\
              ```\n\n\
              ### `bootprint-testbed`\n\
              | verb | what |\n|---|---|\n\
              | `soak CONFIG [--until init\\|login]` | soaks |\n\n\
              ## Other\n\n    bootprint-testbed faults [--all] [--case NAME]\n";
    assert_eq!(
        markdown_lines(md),
        [
            "bootprint-testbed smoke",
            "target/release/bootprint-testbed boot [--profile fast|sd|hdd] [--append 'A B']",
            "bootprint-testbed soak CONFIG [--until init|login]",
            "bootprint-testbed faults [--all] [--case NAME]",
        ]
    );
    let make = "TESTBED := target/release/bootprint-testbed\n\
                soak:\n\tfailed=0; $(TESTBED) soak all --boots 1 || failed=1; \\\n\
                \tfor c in plain rc; do \\\n\t\t$(TESTBED) soak $$c --no-cargo; done\n";
    assert_eq!(
        shell_lines(make),
        [
            "bootprint-testbed soak all --boots 1",
            "bootprint-testbed soak plain --no-cargo",
            "bootprint-testbed soak rc --no-cargo",
        ]
    );
    let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
    assert_eq!(
        expand("bootprint-testbed boot [--profile fast|sd] [--append 'A B']"),
        [
            words("bootprint-testbed boot"),
            vec![
                "bootprint-testbed".into(),
                "boot".into(),
                "--profile".into(),
                "fast".into(),
                "--append".into(),
                "A B".into()
            ],
            {
                let mut w = words("bootprint-testbed boot --profile sd --append");
                w.push("A B".into());
                w
            },
        ]
    );
    assert_eq!(
        fill(&words("bootprint-testbed soak CONFIG --until MARK --boots")),
        words("bootprint-testbed soak all --until login --boots 2")
    );
    assert_eq!(
        fill(&words("bootprint-testbed boot --guest-script --runs=N")),
        words("bootprint-testbed boot --guest-script x --runs=N")
    );
}

/// `seekcheck` offers only the profiles with a seekdisk model.
#[test]
fn seekcheck_takes_the_seek_profiles() {
    let Verb::Seekcheck(a) = verb("bootprint-testbed seekcheck --profile sd-seek --reads 50")
    else {
        panic!()
    };
    assert_eq!((a.profile.as_deref(), a.reads), (Some("sd-seek"), 50));
    let Verb::Seekcheck(a) = verb("bootprint-testbed seekcheck") else {
        panic!()
    };
    assert_eq!((a.profile, a.reads), (None, 200));
    let (k, text) = error("bootprint-testbed seekcheck --profile hdd");
    assert_eq!(k, ErrorKind::InvalidValue, "{text}");
    assert!(
        text.contains("[possible values: hdd-seek, sd-seek]"),
        "{text}"
    );
    let Verb::Boot(b) = verb("bootprint-testbed boot --profile hdd-seek") else {
        panic!()
    };
    assert_eq!(b.opts.profile, Profile::HddSeek);
    assert!(Profile::HddSeek.seek_model().is_some() && Profile::Hdd.seek_model().is_none());
}
