//! The command-line definition against the docs and against what the hand-written parsers it
//! replaced accepted: parsed with `parse_from`, no verb run.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use clap::error::ErrorKind;

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

fn kind(line: &str) -> ErrorKind {
    match parse(line) {
        Ok(c) => panic!("{line}: parsed as {c:?}"),
        Err(e) => e.kind(),
    }
}

/// Every sub-verb there is, by the full path; the review found `rc services` and `modules
/// load` missing from the hand-written top-level help.
const LEAVES: &[&str] = &[
    "report",
    "advise",
    "diff",
    "export",
    "fleet",
    "list",
    "keep",
    "prune",
    "kernel",
    "modules plan",
    "modules load",
    "modules status",
    "modules on",
    "modules off",
    "initramfs build",
    "initramfs plan",
    "services",
    "rc graph",
    "rc services",
    "rc login",
    "readahead status",
    "readahead show",
    "readahead relearn",
    "readahead on",
    "readahead off",
    "readahead relocate",
    "readahead replay",
    "preload status",
    "preload show",
    "preload relearn",
    "preload on",
    "preload off",
    "preload run",
    "preload desktop-time",
    "enable",
    "disable",
    "status",
    "reboot",
    "completions",
    "man",
];

fn leaf_paths() -> Vec<String> {
    cliutil::leaves(&command(), Vec::new())
        .into_iter()
        .map(|(path, _)| path.join(" "))
        .collect()
}

#[test]
fn the_leaves_are_the_known_ones() {
    assert_eq!(leaf_paths(), LEAVES);
}

#[test]
fn top_level_help_names_every_verb_and_sub_verb_with_its_options() {
    let help = command().render_long_help().to_string();
    for leaf in LEAVES {
        assert!(
            help.contains(&format!("\n  bootprint {leaf} "))
                || help.contains(&format!("\n  bootprint {leaf}\n")),
            "{leaf} missing from\n{help}"
        );
    }
    for want in [
        "bootprint report [TRACE] [--systemd] [--journal BOOT] [--journal-dir DIR] [--json]",
        "bootprint export [TRACE] [--prometheus DIR] [--otlp URL|FILE]",
        "bootprint rc graph [--root DIR] [--runlevel N] [--json] [--dot]",
        "bootprint modules load [--workers N] [--only NAMES]...",
    ] {
        assert!(help.contains(want), "{want:?} missing from\n{help}");
    }
    // Hidden compatibility flags stay out of it.
    assert!(!help.contains("relearn [--root DIR] [--json]"), "{help}");
}

#[test]
fn a_wrong_option_shows_that_verbs_usage() {
    for leaf in LEAVES {
        let e = parse(&format!("bootprint {leaf} --badflag")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnknownArgument, "{leaf}");
        assert_eq!(e.exit_code(), 2);
        let text = e.render().to_string();
        assert!(
            text.contains("'--badflag'") && text.contains(&format!("Usage: bootprint {leaf} ")),
            "{leaf}: {text}"
        );
    }
    // A wrong value shows it too.
    let e = parse("bootprint rc graph --runlevel 7").unwrap_err();
    let text = e.render().to_string();
    assert!(
        text.contains("expected S or 0-6") && text.contains("Usage: bootprint rc graph"),
        "{text}"
    );
}

#[test]
fn shapes_the_old_parsers_accepted() {
    // Options anywhere, `--opt=value`, the last of a repeated option wins.
    let Verb::Report(r) = verb("bootprint report --svg=y.svg t --json --svg x.svg --json") else {
        panic!()
    };
    assert_eq!(
        (r.trace, r.json, r.svg),
        (Some(PathBuf::from("t")), true, Some(PathBuf::from("x.svg")))
    );
    let Verb::Report(r) = verb("bootprint report - --config c --html h --perfetto p") else {
        panic!()
    };
    assert_eq!(r.trace, Some(PathBuf::from("-")));
    assert_eq!(
        (r.config, r.html, r.perfetto),
        (Some("c".into()), Some("h".into()), Some("p".into()))
    );
    assert!(
        matches!(verb("bootprint diff a b --json"), Verb::Diff(d) if d.json && d.b == Path::new("b"))
    );
    assert!(matches!(
        verb("bootprint export t --prometheus d --config c"),
        Verb::Export(e) if e.prometheus.as_deref() == Some(Path::new("d")) && e.config.is_some()
    ));
    assert!(matches!(
        verb("bootprint export t --otlp http://c:4318 --otlp-header A=b --otlp-header C=d"),
        Verb::Export(e) if e.otlp.as_deref() == Some("http://c:4318") && e.otlp_headers.len() == 2
            && e.otlp_queue_max == 100 && e.otlp_tries == 3 && !e.flush
    ));
    assert!(matches!(
        verb("bootprint report --systemd --json"),
        Verb::Report(r) if r.systemd && r.json && r.trace.is_none()
    ));
    assert!(matches!(
        verb("bootprint export --flush --otlp http://c"),
        Verb::Export(e) if e.flush && e.trace.is_none()
    ));
    // A journal offset is a value, not an option.
    assert!(matches!(
        verb("bootprint report --systemd --journal -1 --journal-dir j"),
        Verb::Report(r) if r.journal.as_deref() == Some("-1") && r.journal_dir.is_some()
    ));
    assert!(matches!(
        verb("bootprint export --systemd --prometheus d --journal -2"),
        Verb::Export(e) if e.systemd && e.journal.as_deref() == Some("-2") && e.trace.is_none()
    ));
    // --journal alone implies --systemd.
    assert!(matches!(
        verb("bootprint report --journal -1 --json"),
        Verb::Report(r) if r.journal.as_deref() == Some("-1") && r.trace.is_none()
    ));
    assert!(matches!(
        verb("bootprint export --journal 0 --prometheus d"),
        Verb::Export(e) if e.journal.as_deref() == Some("0") && e.trace.is_none()
    ));
    for bad in [
        "bootprint report --journal -1 t",
        "bootprint report --systemd --journal",
        "bootprint export --systemd",
        "bootprint export --systemd --prometheus d t",
        "bootprint export --systemd --prometheus d --otlp http://c",
        "bootprint export --journal 0 --prometheus d t",
        "bootprint export --journal 0",
        "bootprint report --journal-dir d t",
        "bootprint report --journal 0 --svg x",
        "bootprint report --systemd t",
        "bootprint report --systemd --svg x",
        "bootprint export --flush t --otlp http://c",
        "bootprint export --flush",
        "bootprint export --otlp http://c",
        "bootprint",
        "bootprint frobnicate",
        "bootprint report",
        "bootprint report a b",
        "bootprint report t --svg",
        "bootprint advise t --svg x",
        "bootprint diff a",
        "bootprint export t",
        "bootprint modules",
        "bootprint initramfs",
        "bootprint readahead",
        "bootprint readahead bogus",
    ] {
        let e = parse(bad).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{bad}: {}", e.render());
    }
    assert_eq!(kind("bootprint --help"), ErrorKind::DisplayHelp);
    assert_eq!(kind("bootprint help"), ErrorKind::DisplayHelp);
    assert_eq!(kind("bootprint -V"), ErrorKind::DisplayVersion);
    assert_eq!(kind("bootprint report t --help"), ErrorKind::DisplayHelp);
    // `bootprint rc` alone showed rc's help with exit 0: it still parses.
    assert!(matches!(
        verb("bootprint rc"),
        Verb::Rc(RcVerb { sub: None })
    ));
}

/// What the boot path (record's modload and export), the test bed and its guest scripts run.
#[test]
fn the_command_lines_bootprint_itself_runs() {
    for line in [
        "bootprint modules load",
        "bootprint modules load --no-learn --only usb-storage,evdev",
        "bootprint modules load --no-learn --workers 1 --only usb-storage,evdev",
        "bootprint export --prometheus /var/lib/prometheus/node-exporter /var/log/bootprint/1",
        "bootprint report /var/log/bootprint/1 --json",
        "bootprint report --json /var/log/bootprint/1",
        "bootprint kernel --json /var/log/bootprint/1",
        "bootprint advise --json /var/log/bootprint/1",
        "bootprint initramfs build --out /boot/x.img",
        // enable's build and the kernel hooks (packaging/kernel-postinst, kernel-postrm).
        "bootprint initramfs build --kernel 6.1.0-9-amd64 --out /boot/bootprint-initrd.img-6.1.0-9-amd64",
        "bootprint enable --root / --kernel-installed 6.1.0-9-amd64",
        "bootprint disable --root / --kernel-removed 6.1.0-9-amd64",
        "bootprint disable",
    ] {
        verb(line);
    }
}

#[test]
fn modules_options() {
    let Verb::Modules(Modules::Load(a)) = verb(
        "bootprint modules load --only kvm_amd,evdev, --only button --no-learn --workers 2 --state /tmp/d",
    ) else {
        panic!()
    };
    assert_eq!(
        a.only,
        vec![
            Names(vec!["kvm_amd".into(), "evdev".into()]),
            Names(vec!["button".into()])
        ]
    );
    assert!(a.no_learn);
    assert_eq!((a.workers, a.learn_wait), (Some(2), 120));
    assert_eq!(a.state, Some(PathBuf::from("/tmp/d")));
    let Verb::Modules(Modules::Load(d)) = verb("bootprint modules load") else {
        panic!()
    };
    assert!(!d.no_learn && d.only.is_empty() && d.workers.is_none());
    for bad in [
        "bootprint modules load --only ,",
        "bootprint modules load --workers 0",
        "bootprint modules load --workers 65",
        "bootprint modules load --learn-wait x",
        "bootprint modules load --learn-wait 3601",
    ] {
        assert_eq!(kind(bad), ErrorKind::ValueValidation, "{bad}");
    }
    assert_eq!(
        kind("bootprint modules load --only"),
        ErrorKind::InvalidValue
    );
    let Verb::Modules(Modules::Plan(p)) =
        verb("bootprint modules plan --root=/x --kernel 6.1 --json")
    else {
        panic!()
    };
    assert_eq!(
        (p.root, p.kernel, p.json),
        ("/x".into(), Some("6.1".into()), true)
    );
    let Verb::Modules(Modules::Plan(p)) = verb("bootprint modules plan") else {
        panic!()
    };
    assert_eq!(p.root, Path::new("/"));
    assert!(
        matches!(verb("bootprint modules status --json"), Verb::Modules(Modules::Status(s)) if s.json)
    );
    // `--json` is status's only.
    assert_eq!(
        kind("bootprint modules on --json"),
        ErrorKind::UnknownArgument
    );
}

#[test]
fn rc_options() {
    let Verb::Rc(RcVerb {
        sub: Some(Rc::Graph(g)),
    }) = verb("bootprint rc graph --root /x --runlevel=S --dot")
    else {
        panic!()
    };
    assert_eq!(g.root, Path::new("/x"));
    assert_eq!(g.runlevel, Some(rc::system::Runlevel::S));
    assert!(g.dot && !g.json);
    let Verb::Rc(RcVerb {
        sub: Some(Rc::Graph(g)),
    }) = verb("bootprint rc graph")
    else {
        panic!()
    };
    assert_eq!((g.root, g.runlevel), (PathBuf::from("/"), None));
    assert_eq!(
        kind("bootprint rc graph --runlevel 7"),
        ErrorKind::ValueValidation
    );
    assert_eq!(
        kind("bootprint rc graph --json --dot"),
        ErrorKind::ArgumentConflict
    );
    assert_eq!(kind("bootprint rc graph --root"), ErrorKind::InvalidValue);
    assert_eq!(kind("bootprint rc frob"), ErrorKind::InvalidSubcommand);
    assert_eq!(
        kind("bootprint rc services"),
        ErrorKind::MissingRequiredArgument
    );
    assert_eq!(
        kind("bootprint rc services x --bogus"),
        ErrorKind::UnknownArgument
    );
    assert!(matches!(
        verb("bootprint rc login --root /r --json"),
        Verb::Rc(RcVerb { sub: Some(Rc::Login(l)) }) if l.json && l.root == Path::new("/r")
    ));
}

#[test]
fn initramfs_options() {
    let Verb::Initramfs(Initramfs::Build(b)) = verb(
        "bootprint initramfs build --out /tmp/x --root /dev/vda --compression zstd --kernel 6.1",
    ) else {
        panic!()
    };
    assert_eq!(b.out, Some(PathBuf::from("/tmp/x")));
    assert_eq!(b.target.root.as_deref(), Some("/dev/vda"));
    assert_eq!(
        b.compression,
        Some(Compression(Some(initramfs::compress::Method::Zstd)))
    );
    assert_eq!(b.target.kernel.as_deref(), Some("6.1"));
    // The last of --root and --root-from-running wins; auto is no method.
    let Verb::Initramfs(Initramfs::Build(b)) =
        verb("bootprint initramfs build --root /dev/vda --root-from-running --compression auto")
    else {
        panic!()
    };
    assert_eq!(b.target.root, None);
    assert_eq!(b.compression, Some(Compression(None)));
    let Verb::Initramfs(Initramfs::Plan(p)) =
        verb("bootprint initramfs plan --root-from-running --root /dev/vdb --workers 1")
    else {
        panic!()
    };
    assert_eq!(p.target.root.as_deref(), Some("/dev/vdb"));
    assert_eq!(p.target.workers, Some(1));
    assert_eq!(
        kind("bootprint initramfs build --compression lzma"),
        ErrorKind::InvalidValue
    );
    // `install` is gone: `bootprint enable --initramfs` makes the GRUB entry (docs/enable.md).
    assert_eq!(
        kind("bootprint initramfs install"),
        ErrorKind::InvalidSubcommand
    );
    assert_eq!(
        kind("bootprint initramfs plan --out x"),
        ErrorKind::UnknownArgument
    );
    assert_eq!(
        kind("bootprint initramfs build --workers 0"),
        ErrorKind::ValueValidation
    );
    assert_eq!(
        kind("bootprint initramfs burn"),
        ErrorKind::InvalidSubcommand
    );
}

#[test]
fn readahead_verbs_still_take_every_option_they_took() {
    for v in ["status", "show", "relearn", "on", "off"] {
        verb(&format!(
            "bootprint readahead {v} --root /r --json --pack p"
        ));
    }
    let Verb::Readahead(Readahead::Show(s)) = verb("bootprint readahead show --pack p") else {
        panic!()
    };
    assert_eq!((s.root, s.pack), (PathBuf::from("/"), Some("p".into())));
}

#[test]
fn readahead_relocate_options() {
    let Verb::Readahead(Readahead::Relocate(r)) =
        verb("bootprint readahead relocate --dry-run --force-media --pack p")
    else {
        panic!()
    };
    assert!(r.dry_run && r.force_media && !r.json);
    assert_eq!(r.pack, Some("p".into()));
    assert_eq!(
        kind("bootprint readahead relocate --force"),
        ErrorKind::UnknownArgument
    );
}

#[test]
fn readahead_replay_options() {
    let Verb::Readahead(Readahead::Replay(r)) = verb(
        "bootprint readahead replay --merge-gap-kb 0 --metadata --pack p --json --time-limit 900",
    ) else {
        panic!()
    };
    assert!(r.metadata.as_deref() == Some("on") && r.json);
    assert_eq!(r.time_limit, 900);
    assert_eq!((r.merge_gap_kb, r.pack), (Some(0), Some("p".into())));
    let Verb::Readahead(Readahead::Replay(r)) = verb("bootprint readahead replay") else {
        panic!()
    };
    assert!(r.metadata.is_none() && r.merge_gap_kb.is_none());
    assert_eq!(r.time_limit, 30);
    let Verb::Readahead(Readahead::Replay(r)) = verb("bootprint readahead replay --metadata off")
    else {
        panic!()
    };
    assert_eq!(r.metadata.as_deref(), Some("off"));
    assert_eq!(
        kind("bootprint readahead replay --metadata sometimes"),
        ErrorKind::InvalidValue
    );
    assert_eq!(
        kind("bootprint readahead replay --merge-gap-kb x"),
        ErrorKind::ValueValidation
    );
}

#[test]
fn preload_verbs() {
    for v in [
        "status --json",
        "show --model m --json",
        "relearn",
        "on",
        "off",
    ] {
        verb(&format!("bootprint preload {v} --root /r"));
    }
    let Verb::Preload(Preload::Run(r)) = verb("bootprint preload run --prefetch --time-limit 2.5")
    else {
        panic!()
    };
    assert!(r.prefetch && !r.learn);
    assert_eq!(r.time_limit, Some(2.5));
    let Verb::Preload(Preload::DesktopTime(d)) = verb("bootprint preload desktop-time 4.25") else {
        panic!()
    };
    assert_eq!(d.seconds, 4.25);
    assert_eq!(
        kind("bootprint preload run --prefetch --learn"),
        ErrorKind::ArgumentConflict
    );
    assert_eq!(
        kind("bootprint preload desktop-time -3"),
        ErrorKind::UnknownArgument
    );
    assert_eq!(
        kind("bootprint preload desktop-time inf"),
        ErrorKind::ValueValidation
    );
}

/// A path is bytes: kept as it is, inline or not; a value that must be text names itself.
#[test]
fn arguments_that_are_not_utf8() {
    let bytes = OsStr::from_bytes(b"/tmp/\xff");
    let mut inline = OsString::from("--svg=");
    inline.push(bytes);
    let args: Vec<OsString> = vec!["bootprint".into(), "report".into(), inline, bytes.into()];
    let Verb::Report(r) = parse_from(args).unwrap().verb else {
        panic!()
    };
    assert_eq!(
        (r.svg.unwrap().as_os_str(), r.trace.unwrap().as_os_str()),
        (bytes, bytes)
    );
    let args: Vec<OsString> = vec![
        "bootprint".into(),
        "rc".into(),
        "graph".into(),
        "--runlevel".into(),
        bytes.into(),
    ];
    let e = parse_from(args).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    let text = e.render().to_string();
    assert!(
        text.contains("'/tmp/\u{fffd}' for '--runlevel <N>'")
            && text.contains("text (UTF-8)")
            && text.contains("Usage: bootprint rc graph"),
        "{text}"
    );
}

/// Every `bootprint ...` command line README.md and docs/*.md name parses: synopses are
/// expanded (each `a|b` alternative, optional parts left out and put in) and placeholders
/// filled. A mention that leaves out a required argument (`bootprint rc services`) counts as
/// naming the verb; a wrong option, value or sub-verb fails.
#[test]
fn documented_command_lines_parse() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let verbs: Vec<String> = command()
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for line in command_lines(&text) {
            let words: Vec<&str> = line.split_whitespace().collect();
            if words.len() < 2 || !verbs.iter().any(|v| v == words[1]) {
                continue; // a log line (`bootprint initramfs: ...`), not a command
            }
            for variant in expand(&line) {
                let args = fill(&variant);
                checked += 1;
                match parse_from(&args) {
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            ErrorKind::DisplayHelp
                                | ErrorKind::MissingRequiredArgument
                                | ErrorKind::MissingSubcommand
                                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                        ) => {}
                    Err(e) => failures.push(format!(
                        "{}: `{line}` as {args:?}:\n{}",
                        file.strip_prefix(&root).unwrap_or(file).display(),
                        e.render()
                    )),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The docs name well over a hundred variants; far fewer means the extraction broke.
    assert!(checked > 100, "only {checked} command lines found");
}

/// The command lines in markdown: lines of code blocks (fenced, or indented four spaces)
/// starting with `bootprint `, with their continuation lines (starting with `[`), and code
/// spans in paragraphs (which may wrap) starting with `bootprint ` or `.../bootprint `.
/// Annotations after them (`(docs/advise.md)`) are cut off.
fn command_lines(markdown: &str) -> Vec<String> {
    let starts = |s: &str| {
        s.split_whitespace()
            .next()
            .is_some_and(|w| w == "bootprint" || w.ends_with("/bootprint"))
            && s.contains(' ')
    };
    let mut out: Vec<String> = Vec::new();
    let mut fenced = false;
    let mut paragraph: Vec<&str> = Vec::new();
    let mut continuing = false;
    let spans = |paragraph: &mut Vec<&str>, out: &mut Vec<String>| {
        let joined = paragraph.join(" ");
        paragraph.clear();
        for span in joined.split('`').skip(1).step_by(2) {
            if starts(span.trim()) {
                out.push(span.trim().to_string());
            }
        }
    };
    for line in markdown.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            spans(&mut paragraph, &mut out);
            fenced = !fenced;
            continuing = false;
            continue;
        }
        if fenced || line.starts_with("    ") {
            if starts(t) {
                out.push(t.to_string());
                continuing = true;
            } else if continuing && t.starts_with('[') {
                let last = out.last_mut().unwrap();
                last.push(' ');
                last.push_str(t);
            } else {
                continuing = false;
            }
            continue;
        }
        continuing = false;
        if t.is_empty() {
            spans(&mut paragraph, &mut out);
        } else {
            paragraph.push(t);
        }
    }
    spans(&mut paragraph, &mut out);
    out.into_iter()
        .map(|l| {
            l.split_whitespace()
                .take_while(|w| !w.starts_with('('))
                .filter(|w| *w != "...")
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// A synopsis piece: a word with its `a|b` alternatives, or an optional `[...]` group with
/// its ` | `-separated alternatives.
#[derive(Debug)]
enum Piece {
    Word(Vec<String>),
    Optional(Vec<Vec<Piece>>),
}

/// The command lines a synopsis stands for: for each k, the k-th alternative everywhere (the
/// last where there are fewer), once without the optional parts and once with them all.
fn expand(synopsis: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for chunk in synopsis.split_whitespace() {
        let inner = chunk.trim_start_matches('[');
        tokens.extend(std::iter::repeat_n(
            "[".to_string(),
            chunk.len() - inner.len(),
        ));
        let word = inner.trim_end_matches(']');
        if !word.is_empty() {
            tokens.push(word.to_string());
        }
        tokens.extend(std::iter::repeat_n(
            "]".to_string(),
            inner.len() - word.len(),
        ));
    }
    let mut it = tokens.into_iter();
    let alternatives = group(&mut it);
    let most = widest(&alternatives);
    let mut out = Vec::new();
    for k in 0..most {
        for with in [false, true] {
            let mut words = Vec::new();
            let seq = &alternatives[k.min(alternatives.len() - 1)];
            pick(seq, k, with, &mut words);
            let line = words.join(" ");
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}

/// Pieces up to the closing `]` (or the end), split at ` | `.
fn group(it: &mut impl Iterator<Item = String>) -> Vec<Vec<Piece>> {
    let mut alternatives = vec![Vec::new()];
    while let Some(t) = it.next() {
        match t.as_str() {
            "]" => break,
            "[" => alternatives
                .last_mut()
                .unwrap()
                .push(Piece::Optional(group(it))),
            "|" => alternatives.push(Vec::new()),
            w => alternatives
                .last_mut()
                .unwrap()
                .push(Piece::Word(w.split('|').map(String::from).collect())),
        }
    }
    alternatives
}

fn widest(alternatives: &[Vec<Piece>]) -> usize {
    let inner = alternatives
        .iter()
        .flatten()
        .map(|p| match p {
            Piece::Word(w) => w.len(),
            Piece::Optional(a) => widest(a),
        })
        .max()
        .unwrap_or(1);
    inner.max(alternatives.len())
}

fn pick(seq: &[Piece], k: usize, with_optional: bool, out: &mut Vec<String>) {
    for p in seq {
        match p {
            Piece::Word(w) => out.push(w[k.min(w.len() - 1)].clone()),
            Piece::Optional(a) if with_optional => {
                pick(&a[k.min(a.len() - 1)], k, with_optional, out)
            }
            Piece::Optional(_) => {}
        }
    }
}

/// The words of a command line with placeholders (`TRACE`, `N`, `--root=DIR`, `<FILE>`)
/// replaced by values their options take, the program's path by `bootprint`, and a value
/// added after an option named without one (`bootprint report --html`).
fn fill(line: &str) -> Vec<String> {
    let value = |w: &str| -> String {
        let w = w.trim_start_matches('<').trim_end_matches('>');
        // Upper case (a number such as `900` is a value, not a placeholder).
        let placeholder = w.chars().any(|c| c.is_ascii_uppercase())
            && w.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if !placeholder {
            return w.to_string();
        }
        match w {
            "N" => "2",
            "KIB" => "32",
            "S" | "SECONDS" => "5",
            "RELEASE" => "6.1.0",
            "NAMES" | "SET" => "evdev",
            "SHELL" => "bash",
            "METHOD" => "gzip",
            _ => "x",
        }
        .to_string()
    };
    let mut out: Vec<String> = vec!["bootprint".into()];
    for w in line.split_whitespace().skip(1) {
        match w.split_once('=') {
            Some((flag, v)) if flag.starts_with("--") => out.push(format!("{flag}={}", value(v))),
            _ => out.push(value(w)),
        }
    }
    // An option that takes a value, named last or before another option without its value.
    let mut cmd = command();
    cmd.build();
    let mut filled = Vec::new();
    let mut sub = &cmd;
    for (i, w) in out.iter().enumerate() {
        filled.push(w.clone());
        if let Some(s) = sub.find_subcommand(w) {
            sub = s;
            continue;
        }
        let Some(long) = w.strip_prefix("--") else {
            continue;
        };
        // (Not one whose value may be left out: `--metadata` alone means `on`.)
        let takes = sub.get_arguments().any(|a| {
            a.get_long() == Some(long)
                && a.get_action().takes_values()
                && a.get_num_args().is_none_or(|n| n.min_values() > 0)
        });
        let next = out.get(i + 1);
        if takes && next.is_none_or(|n| n.starts_with("--")) {
            filled.push("x".into());
        }
    }
    filled
}

#[test]
fn reboot_takes_one_fast_path_and_a_kernel_only_with_kexec() {
    match verb("bootprint reboot --kexec --kernel /boot/vmlinuz-6.1 --initrd /a --initrd /b --reuse-cmdline") {
        Verb::Reboot(r) => {
            assert!(r.kexec && !r.soft && r.reuse_cmdline);
            assert_eq!(r.initrd, [PathBuf::from("/a"), PathBuf::from("/b")]);
        }
        v => panic!("{v:?}"),
    }
    assert!(
        matches!(verb("bootprint reboot --soft --dry-run"), Verb::Reboot(r) if r.soft && r.dry_run)
    );
    assert_eq!(kind("bootprint reboot"), ErrorKind::MissingRequiredArgument);
    assert_eq!(
        kind("bootprint reboot --kexec --soft"),
        ErrorKind::ArgumentConflict
    );
    assert_eq!(
        kind("bootprint reboot --soft --kernel /k"),
        ErrorKind::ArgumentConflict
    );
    assert_eq!(
        kind("bootprint reboot --kexec --initrd /i"),
        ErrorKind::MissingRequiredArgument
    );
    assert_eq!(
        kind("bootprint reboot --kexec --kernel /k --append x --reuse-cmdline"),
        ErrorKind::ArgumentConflict
    );
}
