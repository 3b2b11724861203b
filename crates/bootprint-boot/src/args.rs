//! The command line of `bootprint-boot`, defined once as a table ([`VERBS`]): the parser
//! reads it and the usage text is generated from it, so neither can forget a flag the other
//! knows. Small on purpose: this binary is the boot path and must start fast.

/// One option of a verb.
pub struct Flag {
    /// `--name`.
    pub name: &'static str,
    /// What the value is (`DIR`, `N`), or None for a switch.
    pub value: Option<&'static str>,
}

/// One verb: its name, the words before its options, its options, and what it does.
pub struct Verb {
    /// The first argument (`record`, `rc`, ...).
    pub name: &'static str,
    /// Positional words shown in the synopsis (`RUNLEVEL`).
    pub operands: &'static str,
    /// Its options.
    pub flags: &'static [Flag],
    /// What it does (wrapped in the usage text).
    pub about: &'static str,
}

const fn value(name: &'static str, what: &'static str) -> Flag {
    Flag {
        name,
        value: Some(what),
    }
}

const fn switch(name: &'static str) -> Flag {
    Flag { name, value: None }
}

/// `record`.
pub const RECORD: Verb = Verb {
    name: "record",
    operands: "",
    flags: &[
        value("--out", "DIR"),
        value("--seconds", "S"),
        value("--hz", "N"),
    ],
    about: "record this running system for S seconds (default 10) into DIR/<boot id>/ \
            (default /var/log/bootprint)",
};

/// `rc RUNLEVEL`.
pub const RC: Verb = Verb {
    name: "rc",
    operands: "RUNLEVEL",
    flags: &[
        value("--action", "start|stop"),
        value("--previous", "P"),
        value("--root", "DIR"),
        value("--proc", "DIR"),
        value("--spans", "FILE"),
        switch("--no-detach"),
        switch("--dry-run"),
    ],
    about: "start (stop for 0, 6) the LSB scripts of RUNLEVEL in parallel, the path to the \
            login first (docs/rc.md); exit 0 once every script was run (in parallel or, on \
            any failure, serially in link order), else not 0",
};

/// `rc --startpar ...`: the runner called as Debian's startpar; its own options are
/// startpar's (parsed by `rc::run::Request::from_startpar`), plus these two for tests.
pub const RC_STARTPAR: Verb = Verb {
    name: "rc --startpar",
    operands: "-M boot|start|stop -P PREV -R RUNLEVEL [startpar options]",
    flags: &[value("--root", "DIR"), value("--proc", "DIR")],
    about: "the same, called as Debian's startpar",
};

/// `rc --enabled`.
pub const RC_ENABLED: Verb = Verb {
    name: "rc --enabled",
    operands: "",
    flags: &[
        value("--cmdline", "FILE"),
        value("--config", "FILE"),
        value("--levers", "FILE"),
    ],
    about: "exit 0 when the configuration turns the runner on (bootprint.rc=1, \
            bootprint.all=1, rc or all in bootprint.toml) and this boot does not hold it \
            back (its own comparison or verdict), 1 otherwise",
};

/// `rc-builtin SCRIPT ACTION`.
pub const RC_BUILTIN: Verb = Verb {
    name: "rc-builtin",
    operands: "SCRIPT ACTION",
    flags: &[],
    about: "(run by the runner) do what Debian's SCRIPT does, if the script and its \
            configuration are Debian's own; exit 254 when the script must run instead",
};

/// `late-start`.
pub const LATE_START: Verb = Verb {
    name: "late-start",
    operands: "",
    flags: &[],
    about: "(as bootprint-late.service on systemd) wait until the machine is idle, then \
            start bootprint-late.target",
};

/// `kexec-prepare`.
pub const KEXEC_PREPARE: Verb = Verb {
    name: "kexec-prepare",
    operands: "",
    flags: &[],
    about: "(as bootprint-kexec.service's stop on systemd, the kexec lever) when systemd is \
            rebooting, load the boot loader's next entry and mark the reboot for kexec, or \
            say why not (docs/reboot.md); exits 0 always",
};

/// `shutdown`.
pub const SHUTDOWN: Verb = Verb {
    name: "shutdown",
    operands: "",
    flags: &[
        value("--how", "TEXT"),
        switch("--save"),
        value("--wait", "S"),
        value("--log-dir", "DIR"),
        value("--pid-file", "FILE"),
    ],
    about: "record the shutdown that is beginning (how it was asked for: TEXT) until asked to \
            save, terminated, or 15 minutes, into LOG_DIR/<boot id>/shutdown/ when this boot \
            was recorded (docs/recorder.md, \"Shutdown\"); with --save, ask the running one \
            to write its trace now and wait up to S seconds (default 10) until it has",
};

/// Every verb, in the order the usage shows them.
pub const VERBS: &[&Verb] = &[
    &RECORD,
    &RC,
    &RC_STARTPAR,
    &RC_ENABLED,
    &RC_BUILTIN,
    &LATE_START,
    &KEXEC_PREPARE,
    &SHUTDOWN,
];

/// The usage text, from [`VERBS`].
pub fn usage() -> String {
    let mut s = String::from(
        "usage:\n  bootprint-boot\n        as PID 1, from init=: record and exec the real init\n",
    );
    for v in VERBS {
        let mut words = vec![format!("bootprint-boot {}", v.name)];
        words.extend(v.operands.split_whitespace().map(String::from));
        words.extend(v.flags.iter().map(|f| match f.value {
            Some(what) => format!("[{} {what}]", f.name),
            None => format!("[{}]", f.name),
        }));
        s.push_str(&wrap(&words, "  ", "      "));
        let about: Vec<String> = v.about.split_whitespace().map(String::from).collect();
        s.push_str(&wrap(&about, "        ", "        "));
    }
    s.push_str(
        "  bootprint-late-generator DIR [DIR DIR]\n        (a link to this binary in \
         systemd's generator directory) defer the learned\n        late units\n  \
         bootprint-boot --help | --version",
    );
    s
}

/// Lines of at most 92 columns (a word longer than that stands alone).
fn wrap(words: &[String], first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = String::from(first);
    let mut empty = true;
    for word in words {
        if !empty && line.len() + 1 + word.len() > 92 {
            out.push_str(&line);
            out.push('\n');
            line = String::from(rest);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// The options of one verb's command line, as given.
#[derive(Debug, Default)]
pub struct Given<'a> {
    /// (flag, value) in command-line order; a switch has no value.
    pub options: Vec<(&'static str, Option<&'a str>)>,
    /// The words that are not options, in order.
    pub operands: Vec<&'a str>,
}

impl<'a> Given<'a> {
    /// The last value given for `flag`.
    pub fn value(&self, flag: &str) -> Option<&'a str> {
        self.options
            .iter()
            .rev()
            .find(|(f, _)| *f == flag)
            .and_then(|(_, v)| *v)
    }

    /// Whether the switch `flag` was given.
    pub fn has(&self, flag: &str) -> bool {
        self.options.iter().any(|(f, _)| *f == flag)
    }
}

/// Reads `args` (after the verb) by `verb`'s table: an option it does not list, or one
/// without its value, is an error saying so.
pub fn parse<'a>(verb: &Verb, args: &'a [String]) -> Result<Given<'a>, String> {
    let mut given = Given::default();
    let mut it = args.iter();
    while let Some(word) = it.next() {
        if !word.starts_with("--") {
            given.operands.push(word);
            continue;
        }
        let Some(flag) = verb.flags.iter().find(|f| f.name == word) else {
            return Err(format!("{}: unknown option {word:?}", verb.name));
        };
        let value = match flag.value {
            Some(what) => match it.next() {
                Some(v) => Some(v.as_str()),
                None => return Err(format!("{} needs {what}", flag.name)),
            },
            None => None,
        };
        given.options.push((flag.name, value));
    }
    Ok(given)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options_are_read_by_the_table() {
        let args = words("2 --root /r --dry-run --root /s");
        let g = parse(&RC, &args).unwrap();
        assert_eq!(g.operands, ["2"]);
        assert_eq!(g.value("--root"), Some("/s"));
        assert!(g.has("--dry-run") && !g.has("--no-detach"));
        assert_eq!(
            parse(&RC, &words("2 --bogus")).unwrap_err(),
            "rc: unknown option \"--bogus\""
        );
        assert_eq!(parse(&RECORD, &words("--hz")).unwrap_err(), "--hz needs N");
    }

    #[test]
    fn the_usage_names_every_flag_of_every_verb() {
        let u = usage();
        for v in VERBS {
            assert!(u.contains(&format!("bootprint-boot {}", v.name)), "{u}");
            for f in v.flags {
                assert!(u.contains(&format!("[{}", f.name)), "{} {u}", f.name);
            }
        }
        assert!(u.lines().all(|l| l.len() <= 92), "{u}");
    }

    /// Every option a document shows after `bootprint-boot VERB` is one the table knows for
    /// that verb (startpar's own options, after `rc --startpar`, are startpar's to read).
    #[test]
    fn every_documented_option_is_in_the_table() {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = vec![repo.join("README.md")];
        for e in std::fs::read_dir(repo.join("docs")).unwrap() {
            files.push(e.unwrap().path());
        }
        let mut checked = 0;
        for file in files
            .iter()
            .filter(|f| f.extension().is_some_and(|x| x == "md"))
        {
            let text = std::fs::read_to_string(file).unwrap();
            for (n, line) in text.lines().enumerate() {
                for (i, _) in line.match_indices("bootprint-boot ") {
                    // The command runs to the end of its code span, table cell or line.
                    let rest = &line[i + "bootprint-boot ".len()..];
                    let cmd = rest.split(['`', '|', '(']).next().unwrap_or("");
                    let words: Vec<&str> = cmd.split_whitespace().collect();
                    let verb = match words[..] {
                        ["rc", "--startpar", ..] => &RC_STARTPAR,
                        ["rc", "--enabled", ..] => &RC_ENABLED,
                        ["rc", ..] => &RC,
                        ["record", ..] => &RECORD,
                        ["rc-builtin", ..] => &RC_BUILTIN,
                        ["late-start", ..] => &LATE_START,
                        _ => continue,
                    };
                    checked += 1;
                    if verb.name == RC_STARTPAR.name {
                        continue;
                    }
                    for w in words.iter().filter(|w| w.starts_with("--")) {
                        let w = w.trim_start_matches('[').trim_end_matches(']');
                        if ["--startpar", "--enabled"].contains(&w) {
                            continue;
                        }
                        assert!(
                            verb.flags.iter().any(|f| f.name == w),
                            "{}:{}: `bootprint-boot {}` has no option {w}",
                            file.display(),
                            n + 1,
                            verb.name
                        );
                    }
                }
            }
        }
        assert!(
            checked >= 15,
            "only {checked} documented command lines found"
        );
    }
}
