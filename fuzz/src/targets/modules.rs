//! The modules crate: the module lists (`/etc/modules`, `modules-load.d`, `/proc/modules`,
//! `modules.builtin`), the durations state file, and the plan built over an index read from
//! a hostile `modules.dep` / `modules.softdep` / `modules.alias` / modprobe.d (a table in
//! place of libkmod, so a dependency cycle or a huge duration reaches the planner).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use modules::input;
use modules::plan::{self, Index, Inputs, ModInfo};
use modules::{Durations, Error, Request, Source};

use super::strict;
use crate::{container, seeds, Target};

/// The targets of this file.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "modules_lists",
            about: "modules::input::{parse_etc_modules, parse_modules_load, parse_proc_modules, parse_builtin}",
            run: |d| {
                if let Some(t) = strict(d) {
                    let p = Path::new("list");
                    let _ = input::parse_etc_modules(t, p);
                    let _ = input::parse_modules_load(t, p);
                    let _ = input::parse_proc_modules(t);
                    let _ = input::parse_builtin(t, p);
                }
            },
            seeds: || {
                let mut v = seeds::files(&[
                    "tests/fixtures/modules/root/etc/modules",
                    "tests/fixtures/modules/root/etc/modules-load.d/virtio.conf",
                    "tests/fixtures/modules/root/proc/modules",
                    "tests/fixtures/modules/root/lib/modules/6.1.0-56-amd64/modules.builtin",
                    "tests/fixtures/modcheck/a.proc_modules",
                ]);
                v.extend(seeds::lit(&["# comment\nloop max_loop=8\n; x\n"]));
                v
            },
            tokens: MODULE_TOKENS,
            structured: None,
        },
        Target {
            name: "modules_durations",
            about: "modules::durations::Durations::parse (/var/lib/bootprint/modules-durations), to_text, expected_us, learn",
            run: |d| {
                if let Some(t) = strict(d) {
                    if let Ok(mut dur) = Durations::parse(t, Path::new("modules-durations")) {
                        let names: Vec<String> = dur.us.keys().take(16).cloned().collect();
                        for n in &names {
                            let _ = dur.expected_us(n);
                            // What a boot measures: a load of 1 us or of 5 s.
                            dur.learn(n, 1);
                            dur.learn(n, 5_000_000);
                        }
                        let _ = Durations::parse(&dur.to_text(), Path::new("again"));
                    }
                }
            },
            seeds: || seeds::lit(&[DURATIONS]),
            tokens: &["bootprint-module-durations 1", "usb_storage", "e1000", "18446744073709551615"],
            structured: None,
        },
        Target {
            name: "modules_plan",
            about: "modules::plan::build over modules.dep/softdep/alias/modprobe.d, /etc/modules, modules.builtin, /proc/modules and durations; order",
            run: run_plan,
            seeds: plan_seeds,
            tokens: PLAN_TOKENS,
            structured: None,
        },
    ]
}

const MODULE_TOKENS: &[&str] = &[
    "kernel/drivers/block/virtio_blk.ko",
    ".ko",
    ".ko.xz",
    "usb-storage",
    "usb_storage",
    "# ",
    "; ",
    "options",
    " 16384 0 - Live 0x0000000000000000",
];

const DURATIONS: &str =
    "bootprint-module-durations 1\nusb_storage 1500000\ne1000 20000\nvirtio-blk 3000\n";

const PLAN_TOKENS: &[&str] = &[
    "@@ modules.dep\n",
    "@@ modules.softdep\n",
    "@@ modules.alias\n",
    "@@ modprobe.conf\n",
    "@@ modules\n",
    "@@ modalias\n",
    "@@ modules.builtin\n",
    "@@ proc-modules\n",
    "@@ durations\n",
    "kernel/a.ko: kernel/b.ko kernel/c.ko\n",
    "kernel/b.ko: kernel/a.ko\n",
    "softdep a pre: b post: c\n",
    "alias pci:v*d* a\n",
    "alias * b\n",
    "blacklist a\n",
    "install a /bin/true\n",
    "options a x=1\n",
    "pre:",
    "post:",
    "*",
    "?",
    "[a-z]",
    "[!",
];

/// libkmod's answers, from the texts of a modules directory and modprobe.d.
#[derive(Default)]
struct TableIndex {
    deps: HashMap<String, (String, Vec<String>)>,
    aliases: Vec<(String, String)>,
    pre: HashMap<String, Vec<String>>,
    post: HashMap<String, Vec<String>>,
    options: HashMap<String, String>,
    install: HashMap<String, String>,
    blacklist: HashSet<String>,
}

impl TableIndex {
    fn read(files: &[(String, &[u8])]) -> TableIndex {
        // modules.dep, modules.alias and modules.builtin as the initramfs reads them; the
        // softdep and modprobe.d lines as modprobe reads them.
        let mut ix = initramfs::plan::ModIndex::default();
        let mut t = TableIndex::default();
        for (name, body) in files {
            let Some(text) = strict(body) else { continue };
            match name.as_str() {
                "modules.dep" => {
                    let _ = ix.parse_dep(text, Path::new(name));
                }
                "modules.alias" => {
                    let _ = ix.parse_alias(text, Path::new(name));
                }
                "modules.softdep" | "modprobe.conf" => t.modprobe_conf(text),
                _ => {}
            }
        }
        t.deps = ix.deps;
        t.aliases = ix.aliases;
        t
    }

    fn modprobe_conf(&mut self, text: &str) {
        for line in text.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            match w.as_slice() {
                ["softdep", m, rest @ ..] => {
                    let m = input::normalize(m);
                    let mut post = false;
                    for x in rest {
                        match *x {
                            "pre:" => post = false,
                            "post:" => post = true,
                            n => {
                                let map = if post { &mut self.post } else { &mut self.pre };
                                map.entry(m.clone()).or_default().push(input::normalize(n));
                            }
                        }
                    }
                }
                ["options", m, rest @ ..] => {
                    self.options.insert(input::normalize(m), rest.join(" "));
                }
                ["install", m, rest @ ..] => {
                    self.install.insert(input::normalize(m), rest.join(" "));
                }
                ["blacklist", m] => {
                    self.blacklist.insert(input::normalize(m));
                }
                ["alias", pattern, m] => self
                    .aliases
                    .push((pattern.to_string(), input::normalize(m))),
                _ => {}
            }
        }
    }
}

impl Index for TableIndex {
    fn lookup(&mut self, alias: &str) -> Result<Vec<String>, Error> {
        let n = input::normalize(alias);
        if self.deps.contains_key(&n) {
            return Ok(vec![n]);
        }
        let mut out: Vec<String> = Vec::new();
        // A modalias is one sysfs attribute: at most a page.
        let text: String = alias.chars().take(4096).collect();
        for (pattern, m) in &self.aliases {
            if initramfs::plan::glob_match(pattern, &text) && !out.contains(m) {
                out.push(m.clone());
            }
        }
        Ok(out)
    }

    fn module(&mut self, name: &str) -> Result<ModInfo, Error> {
        let Some((path, deps)) = self.deps.get(name) else {
            return Ok(ModInfo::default());
        };
        Ok(ModInfo {
            path: Some(PathBuf::from(path)),
            deps: deps.clone(),
            pre: self.pre.get(name).cloned().unwrap_or_default(),
            post: self.post.get(name).cloned().unwrap_or_default(),
            options: self.options.get(name).cloned().unwrap_or_default(),
            install: self.install.get(name).cloned(),
        })
    }

    fn blacklisted(&self, name: &str) -> bool {
        self.blacklist.contains(name)
    }
}

fn run_plan(d: &[u8]) {
    let files = container::split(d);
    let mut index = TableIndex::read(&files);
    let mut inputs = Inputs::default();
    for (name, body) in &files {
        let Some(text) = strict(body) else { continue };
        let p = Path::new(name.as_str());
        match name.as_str() {
            "modules" => inputs.requests.extend(input::parse_etc_modules(text, p)),
            "modules-load" => inputs
                .requests
                .extend(input::parse_modules_load(text, p).unwrap_or_default()),
            "modalias" => inputs.requests.extend(text.lines().map(|l| Request {
                name: l.trim().to_string(),
                options: String::new(),
                source: Source::Modalias(PathBuf::from("/sys/devices/x/modalias")),
            })),
            "modules.builtin" => inputs
                .builtin
                .extend(input::parse_builtin(text, p).unwrap_or_default()),
            "proc-modules" => inputs.loaded.extend(input::parse_proc_modules(text)),
            "durations" => {
                if let Ok(dur) = Durations::parse(text, p) {
                    inputs.durations = dur;
                }
            }
            _ => {}
        }
    }
    if let Ok(plan) = plan::build(&mut index, &inputs) {
        let order = plan.order();
        assert!(
            order.len() <= plan.modules.len(),
            "the order holds each module once"
        );
        let _ = plan.skip_reasons();
    }
}

fn plan_seeds() -> Vec<Vec<u8>> {
    let dir = "tests/fixtures/modules/root/lib/modules/6.1.0-56-amd64";
    let mut modaliases: Vec<u8> = Vec::new();
    for (p, b) in seeds::dir("tests/fixtures/modules/root/sys/devices") {
        if p.file_name().is_some_and(|n| n == "modalias") {
            modaliases.extend_from_slice(&b);
            if !b.ends_with(b"\n") {
                modaliases.push(b'\n');
            }
        }
    }
    let mut conf = seeds::file("tests/fixtures/modules/root/etc/modprobe.d/fixture.conf");
    conf.extend(seeds::file(
        "tests/fixtures/modules/root/lib/modprobe.d/aliases.conf",
    ));
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("modules.dep", seeds::file(&format!("{dir}/modules.dep"))),
        (
            "modules.softdep",
            seeds::file(&format!("{dir}/modules.softdep")),
        ),
        (
            "modules.alias",
            seeds::file(&format!("{dir}/modules.alias")),
        ),
        ("modprobe.conf", conf),
        (
            "modules.builtin",
            seeds::file(&format!("{dir}/modules.builtin")),
        ),
        (
            "modules",
            seeds::file("tests/fixtures/modules/root/etc/modules"),
        ),
        ("modalias", modaliases),
        (
            "proc-modules",
            seeds::file("tests/fixtures/modules/root/proc/modules"),
        ),
        ("durations", DURATIONS.as_bytes().to_vec()),
    ];
    let small = container::join(&[
        (
            "modules.dep",
            "kernel/a.ko: kernel/b.ko\nkernel/b.ko:\nkernel/c.ko: kernel/a.ko\n",
        ),
        ("modules.softdep", "softdep a pre: c post: b\n"),
        ("modules.alias", "alias pci:v00008086d* a\nalias usb:* c\n"),
        ("modprobe.conf", "blacklist c\noptions a x=1\n"),
        ("modules", "a\nb opt=2\n"),
        ("modalias", "pci:v00008086d00001234\nusb:v1d2\n"),
        (
            "durations",
            "bootprint-module-durations 1\na 18446744073709551615\nb 1\n",
        ),
    ]);
    vec![container::join(&files), small]
}
