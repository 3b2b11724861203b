//! The rc crate: LSB headers, insserv.conf, rc.conf, the durations file, the span log,
//! /proc/stat as the runner reads it, and a whole system (scripts, facilities, links) taken
//! through the start graph, the scheduler and the runner's plan.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rc::conf::{is_leftover, Conf};
use rc::durations::Durations;
use rc::header::{self, Parsed};
use rc::run::{self, Plan, ProcStat};
use rc::system::{Link, Runlevel, Script, System};

use super::{lossy, strict};
use crate::{container, seeds, Target};

/// The targets of this file.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "rc_header",
            about: "rc::header::parse (the LSB header of an init script)",
            run: |d| {
                let (parsed, _) = header::parse(&lossy(d), Path::new("etc/init.d/x"));
                if let Parsed::Lsb(h) = parsed {
                    let _ = h.provided();
                    let _ = h.is_interactive();
                }
            },
            seeds: script_seeds,
            tokens: HEADER_TOKENS,
            structured: None,
        },
        Target {
            name: "rc_insserv_conf",
            about: "rc::conf::Conf::parse_into (/etc/insserv.conf and insserv.conf.d)",
            run: |d| {
                if let Some(t) = strict(d) {
                    let mut c = Conf::default();
                    let _ = c.parse_into(t, Path::new("etc/insserv.conf"));
                    let _ = c.is_interactive("x");
                }
            },
            seeds: || {
                let mut v = seeds::files(&[
                    "tests/fixtures/initscripts/debian-bookworm/etc/insserv.conf",
                    "tests/fixtures/initscripts/lenient/etc/insserv.conf",
                ]);
                for root in ROOTS {
                    v.extend(seeds::dir(&format!("{root}/etc/insserv.conf.d")).into_iter().map(|(_, b)| b));
                }
                v
            },
            tokens: HEADER_TOKENS,
            structured: None,
        },
        Target {
            name: "rc_conf",
            about: "rc::run::Config::parse (the deprecated /etc/bootprint/rc.conf)",
            run: |d| {
                if let Some(t) = strict(d) {
                    let _ = run::Config::parse(t, Path::new("rc.conf"));
                }
            },
            seeds: || seeds::lit(&[RC_CONF]),
            tokens: RC_CONF_TOKENS,
            structured: None,
        },
        Target {
            name: "rc_durations",
            about: "rc::durations::Durations::parse (/var/lib/bootprint/rc-durations), format, record",
            run: |d| {
                if let Some(t) = strict(d) {
                    let (mut dur, _) = Durations::parse(t, Path::new("rc-durations"));
                    let _ = dur.get("ssh", "start");
                    dur.record("ssh", "start", 120);
                    let _ = dur.format();
                }
            },
            seeds: || seeds::lit(&[RC_DURATIONS]),
            tokens: &["# bootprint rc durations 1", "start", "stop", "ssh"],
            structured: None,
        },
        Target {
            name: "rc_spans",
            about: "trace::rclog::parse (rc.log span log), ServicesView::from_events, blame, critical chain, its text and JSON",
            run: |d| {
                if let Some(t) = strict(d) {
                    let (s, _) = analyze::services::ServicesView::from_text(t, "rc.log");
                    let _ = s.blame();
                    let _ = s.critical_chain();
                    let _ = render::services::text(&s);
                    let _ = render::services::json(&s);
                }
            },
            seeds: || seeds::lit(&[RC_LOG]),
            tokens: &[
                "# bootprint rc 1",
                "rc_start",
                "rc_end",
                "rc_begin",
                "rc_done",
                "script=",
                "action=start",
                "outcome=ok",
                "late=1",
                "login=1",
                "pid=",
                "status=",
                "after=",
                "%20",
            ],
            structured: None,
        },
        Target {
            name: "rc_proc_stat",
            about: "rc::run::ProcStat::parse (/proc/stat as the runner reads it), may_start, was_idle",
            run: |d| {
                if let Some(t) = strict(d) {
                    let a = ProcStat::parse(t);
                    let cfg = run::Config::default();
                    let _ = run::may_start(3, &a, &cfg, 2);
                    let _ = run::was_idle(&ProcStat::default(), &a, &cfg);
                    let _ = run::was_idle(&a, &a, &cfg);
                }
            },
            seeds: || {
                let mut v = seeds::lit(&["cpu  10 0 20 300 4 0 1 0 0 0\ncpu0 5 0 10 150 2 0 0 0 0 0\nprocs_running 2\nprocs_blocked 1\n"]);
                v.extend(super::trace_file_seeds("proc_stat.log"));
                v
            },
            tokens: super::TRACE_TOKENS,
            structured: None,
        },
        Target {
            name: "rc_system",
            about: "rc::system::System (scripts, insserv.conf, rcN.d links) -> graph, order, levels, critical path, run::Plan::start, priorities, describe",
            run: run_system,
            seeds: system_seeds,
            tokens: SYSTEM_TOKENS,
            structured: None,
        },
    ]
}

const ROOTS: [&str; 2] = [
    "tests/fixtures/initscripts/debian-bookworm",
    "tests/fixtures/initscripts/lenient",
];

fn script_seeds() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for root in ROOTS {
        for (p, b) in seeds::dir(&format!("{root}/etc/init.d")) {
            if !p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                v.push(b);
            }
        }
    }
    v
}

const HEADER_TOKENS: &[&str] = &[
    "### BEGIN INIT INFO\n",
    "### END INIT INFO\n",
    "# Provides:",
    "# Required-Start:",
    "# Required-Stop:",
    "# Should-Start:",
    "# Should-Stop:",
    "# X-Start-Before:",
    "# X-Stop-After:",
    "# Default-Start:",
    "# Default-Stop:",
    "# X-Interactive: true",
    "# Short-Description:",
    "# Description:",
    "#\t",
    "# X-Vendor-",
    "required_start",
    "$local_fs",
    "$remote_fs",
    "$network",
    "$syslog",
    "$time",
    "$named",
    "$all",
    "$null",
    "<interactive>",
    "+",
    " S",
    " 2 3 4 5",
    " 0 1 6",
];

const RC_CONF: &str = "# /etc/bootprint/rc.conf\nlogin = getty gdm3 lightdm\nlate = cron exim4\ntimeout = 120\nflush = 10\nload-per-cpu = 2\nmax-parallel = 0\nidle-busy = 30\nidle-iowait = 5\nidle-window = 0.5\nlate-max-wait = 10\ndisplay-managers = gdm3 lightdm sddm\ndisplay-manager-needs = elogind\n";

const RC_CONF_TOKENS: &[&str] = &[
    "login",
    "late",
    "timeout",
    "flush",
    "load-per-cpu",
    "max-parallel",
    "idle-busy",
    "idle-iowait",
    "idle-window",
    "late-max-wait",
    "display-managers",
    "display-manager-needs",
    " = ",
];

const RC_DURATIONS: &str = "# bootprint rc durations 1\nssh start 120 3\nudev start 900 3\ncron start 15 1\nsendsigs stop 2000 2\n";

const RC_LOG: &str = "# bootprint rc 1\n1000000 rc_begin runlevel=2 action=start\n1100000 rc_start script=udev action=start pid=10\n900000000 rc_end script=udev action=start status=0 outcome=ok\n900000001 rc_start script=getty action=start login=1 after=udev\n1200000000 rc_end script=getty action=start status=0 outcome=ok\n1300000000 rc_start script=cron action=start late=1\n1400000000 rc_end script=cron action=start status=1 outcome=failed\n1500000000 rc_done runlevel=2\n";

const SYSTEM_TOKENS: &[&str] = &[
    "@@ init.d/a\n",
    "@@ init.d/b\n",
    "@@ insserv.conf\n",
    "@@ insserv.conf.d/x\n",
    "@@ rcS.d/S01a\n",
    "@@ rc2.d/S01a\n",
    "@@ rc2.d/S02b\n",
    "@@ rc2.d/S99c\n",
    "@@ rc.conf\n",
    "@@ rc-durations\n",
    "### BEGIN INIT INFO\n",
    "### END INIT INFO\n",
    "# Provides: a\n",
    "# Required-Start: b\n",
    "# Required-Start: $all\n",
    "# Should-Start: a\n",
    "# X-Start-Before: a\n",
    "# Default-Start: 2 3 4 5\n",
    "# X-Interactive: true\n",
    "$local_fs a +b\n",
    "$network $local_fs\n",
    "$all",
    "<interactive> a\n",
    "login = a\n",
    "late = b\n",
    "a start 18446744073709551615 1\n",
];

/// A root fixture as a container: scripts, facilities, links (a link's contents name the
/// script it points to), and an rc.conf and durations file.
fn system_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for root in ROOTS {
        let base = seeds::root().join(root).join("etc");
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        for (p, b) in seeds::dir(&format!("{root}/etc/init.d")) {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // Cut to the header: the rest of a script is shell the graph never reads.
            let end = find(&b, b"### END INIT INFO").map_or(b.len().min(2048), |e| e + 18);
            files.push((format!("init.d/{name}"), b[..end.min(b.len())].to_vec()));
        }
        files.push((
            "insserv.conf".into(),
            std::fs::read(base.join("insserv.conf")).unwrap_or_default(),
        ));
        for (p, b) in seeds::dir(&format!("{root}/etc/insserv.conf.d")) {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push((format!("insserv.conf.d/{name}"), b));
        }
        for rl in Runlevel::ALL {
            let dir = base.join(format!("rc{}.d", rl.label()));
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut names: Vec<(String, String)> = rd
                .flatten()
                .map(|e| {
                    let target = std::fs::read_link(e.path())
                        .ok()
                        .and_then(|t| t.file_name().map(|f| f.to_string_lossy().into_owned()))
                        .unwrap_or_default();
                    (e.file_name().to_string_lossy().into_owned(), target)
                })
                .collect();
            names.sort();
            for (n, t) in names {
                files.push((format!("rc{}.d/{n}", rl.label()), t.into_bytes()));
            }
        }
        files.push(("rc.conf".into(), RC_CONF.as_bytes().to_vec()));
        files.push(("rc-durations".into(), RC_DURATIONS.as_bytes().to_vec()));
        out.push(container::join(&files));
    }
    // A small one, so mutations of it are quick.
    out.push(
        container::join(&[
            ("init.d/a", "### BEGIN INIT INFO\n# Provides: a\n# Required-Start: $local_fs\n# Default-Start: 2\n### END INIT INFO\n"),
            ("init.d/b", "### BEGIN INIT INFO\n# Provides: b fs\n# Required-Start:\n# X-Start-Before: a\n### END INIT INFO\n"),
            ("init.d/c", "### BEGIN INIT INFO\n# Provides: c\n# Required-Start: $all\n### END INIT INFO\n"),
            ("insserv.conf", "$local_fs fs +nothing\n<interactive> c\n"),
            ("rcS.d/S01b", "b"),
            ("rc2.d/S01a", "a"),
            ("rc2.d/S02c", "c"),
            ("rc.conf", "login = a\nlate = c\n"),
            ("rc-durations", "# bootprint rc durations 1\na start 100 1\n"),
        ]),
    );
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A system as `System::load` reads it from a root, built from a container instead.
fn system_of(d: &[u8]) -> (System, run::Config, Durations) {
    let mut scripts = Vec::new();
    let mut conf = Conf::default();
    let mut cfg = run::Config::default();
    let mut durations = Durations::default();
    let mut link_files: Vec<(Runlevel, String, String)> = Vec::new();
    let mut files = container::split(d);
    // A directory lists each name once, in name order.
    files.sort_by(|a, b| a.0.cmp(&b.0));
    files.dedup_by(|a, b| a.0 == b.0);
    for (name, body) in &files {
        if let Some(script) = name.strip_prefix("init.d/") {
            if script.is_empty() || script.contains('/') || is_leftover(script) {
                continue;
            }
            let rel = Path::new("etc/init.d").join(script);
            let (parsed, _) = header::parse(&lossy(body), &rel);
            let header = match parsed {
                Parsed::Lsb(h) => Some(*h),
                _ => None,
            };
            scripts.push(Script {
                name: script.to_string(),
                path: rel,
                header,
            });
        } else if name == "insserv.conf" || name.starts_with("insserv.conf.d/") {
            if let Some(t) = strict(body) {
                let _ = conf.parse_into(t, Path::new(name));
            }
        } else if name == "rc.conf" {
            if let Some(t) = strict(body) {
                cfg = run::Config::parse(t, Path::new(name)).0;
            }
        } else if name == "rc-durations" {
            if let Some(t) = strict(body) {
                durations = Durations::parse(t, Path::new(name)).0;
            }
        } else if let Some((dir, link)) = name.split_once('/') {
            let rl = dir
                .strip_prefix("rc")
                .and_then(|r| r.strip_suffix(".d"))
                .and_then(Runlevel::parse);
            if let Some(rl) = rl {
                link_files.push((rl, link.to_string(), lossy(body).trim().to_string()));
            }
        }
    }
    let mut providers: BTreeMap<String, usize> = BTreeMap::new();
    for (i, s) in scripts.iter().enumerate() {
        for p in s.provided() {
            providers.entry(p).or_insert(i);
        }
    }
    let by_name: BTreeMap<&str, usize> = scripts
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let mut links: BTreeMap<Runlevel, Vec<Link>> = BTreeMap::new();
    for (rl, name, target) in &link_files {
        let v = links.entry(*rl).or_default();
        let b = name.as_bytes();
        if b.len() < 4 || b[0] != b'S' || !b[1].is_ascii_digit() || !b[2].is_ascii_digit() {
            continue;
        }
        let seq = (b[1] - b'0') * 10 + (b[2] - b'0');
        let target = if target.is_empty() {
            &name[3..]
        } else {
            target.as_str()
        };
        if let Some(&i) = by_name.get(target) {
            v.push(Link { seq, script: i });
        }
    }
    let sys = System {
        root: PathBuf::from("/nonexistent-fuzz-root"),
        scripts,
        conf,
        links,
        providers,
        diagnostics: Vec::new(),
    };
    (sys, cfg, durations)
}

fn run_system(d: &[u8]) {
    let (sys, cfg, durations) = system_of(d);
    let rls: Vec<Runlevel> = sys.links.keys().copied().collect();
    for rl in rls {
        let g = sys.graph(rl);
        let order = g.order();
        let _ = g.levels();
        let weight: Vec<u64> = g
            .nodes
            .iter()
            .map(|n| durations.get(&n.name, "start"))
            .collect();
        let prio = g.critical_path(&weight);
        let _ = g.order_by(&prio);
        // Every node comes out of the order once.
        let mut seen = vec![false; g.nodes.len()];
        for &id in &order {
            assert!(
                !std::mem::replace(&mut seen[id], true),
                "a node ordered twice"
            );
        }
        let previous = if rl == Runlevel::S {
            None
        } else {
            Some(Runlevel::S)
        };
        let plan = Plan::start(&sys, rl, &cfg, &durations, previous);
        let _ = plan.priorities();
        let _ = plan.describe();
    }
}
