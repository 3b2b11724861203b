//! Services: the init scripts (or systemd units) of a boot and when each ran. Three
//! sources, one module:
//!
//! - [`ServicesView`]: when bootprint's runner started the scripts, its span log (`rc.log`,
//!   read by [`trace::rclog`]) says exactly when each started and ended, what it waited for,
//!   whether it was late; with blame and the critical chain to the login
//!   (`bootprint services`, the report's services section).
//! - [`ServicesView::from_units`]: on a systemd boot, the same view of systemd's own unit
//!   timing (`systemd-units.log`, read by [`trace::units`]), by `systemd-analyze`'s rules
//!   (docs/systemd.md, "Units in the report").
//! - [`services`]: any sysvinit boot, from the process tree: an init script's run
//!   (`/etc/init.d/NAME` or an `/etc/rc?.d/` link) is one service span, from the script's
//!   process start to its exit; the outermost process running the script (its forks, which
//!   keep the command line, belong to it). The advice rules and the diff use these.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::BootModel;

/// One service start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Service {
    /// Script name without a `Snn`/`Knn` prefix (`ssh`, `udev`, `mountall.sh`).
    pub name: String,
    /// The script's action (`start`, `stop`, ...), when given.
    pub action: Option<String>,
    /// Pid of the outermost process running the script.
    pub pid: u32,
    /// Index in `BootModel::processes`.
    #[serde(skip)]
    pub index: usize,
    /// Start, seconds.
    pub start_s: f64,
    /// Last seen, seconds.
    pub end_s: f64,
    /// Still running at the end of the trace.
    pub alive_at_end: bool,
}

/// The script a command line runs, and its action: the first argument under `/etc/init.d/`
/// or `/etc/rc*.d/`.
pub fn script_of(cmdline: &str) -> Option<(String, Option<String>)> {
    let mut words = cmdline.split(' ');
    while let Some(w) = words.next() {
        let base = if let Some(rest) = w.strip_prefix("/etc/init.d/") {
            rest
        } else if w.starts_with("/etc/rc") && w.contains(".d/") {
            let b = w.rsplit('/').next().unwrap_or(w);
            // Links are named S20ssh / K01ssh.
            let t = b.trim_start_matches(['S', 'K']);
            t.trim_start_matches(|c: char| c.is_ascii_digit())
        } else {
            continue;
        };
        if base.is_empty() || base.contains('/') || base == "rc" {
            return None;
        }
        return Some((base.to_string(), words.next().map(String::from)));
    }
    None
}

/// The service spans of a boot, by start time.
pub fn services(m: &BootModel) -> Vec<Service> {
    let mut out = Vec::new();
    for (i, p) in m.processes.iter().enumerate() {
        // Without command lines (a bootchart2 log without cmdline2.log), rc's `Snn<name>`
        // links still show in `comm`.
        let from_comm = || {
            let parent_rc = p.parent.is_some_and(|pi| m.processes[pi].name == "rc");
            let rest = p.name.strip_prefix('S')?;
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            (parent_rc && digits == 2 && rest.len() > 2)
                .then(|| (rest[2..].to_string(), Some("start".to_string())))
        };
        let Some((name, action)) = p.cmdline.as_deref().and_then(script_of).or_else(from_comm)
        else {
            continue;
        };
        let parent_same = p
            .parent
            .and_then(|pi| m.processes[pi].cmdline.as_deref())
            .and_then(script_of)
            .is_some_and(|(n, _)| n == name);
        if parent_same {
            continue;
        }
        out.push(Service {
            name,
            action,
            pid: p.pid,
            index: i,
            start_s: p.start_s,
            end_s: p.end_s,
            alive_at_end: p.alive_at_end,
        });
    }
    out.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    out
}

/// The service a process belongs to: the nearest ancestor (or itself) that starts a span.
/// The walk takes at most one step per process, so a parent cycle cannot make it loop.
pub fn service_of<'a>(m: &BootModel, services: &'a [Service], index: usize) -> Option<&'a Service> {
    let mut cur = Some(index);
    for _ in 0..=m.processes.len() {
        let i = cur?;
        if let Some(s) = services.iter().find(|s| s.index == i) {
            return Some(s);
        }
        cur = m.processes[i].parent;
    }
    None
}

/// One script run, from the runner's span log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Script name.
    pub script: String,
    /// start, stop.
    pub action: String,
    /// The runlevel it ran for.
    pub runlevel: String,
    /// Start, CLOCK_BOOTTIME ns.
    pub start_ns: u64,
    /// End (None: the log ends before it did).
    pub end_ns: Option<u64>,
    /// Exit status (None: killed by a signal, timed out or never ended).
    pub exit: Option<i32>,
    /// ok, failed, not_installed, not_configured, timed_out, signal, spawn_failed, running.
    pub outcome: String,
    /// Started after the login target was reached.
    pub late: bool,
    /// Runlevel S, one graph: beside the path to the login (rcS did not wait for it).
    pub beside: bool,
    /// The script whose end made this one ready (empty: ready from the start).
    pub waited_for: String,
    /// The runner's built-in did the work (a built-in that declined is not a span: the
    /// script that ran after it is).
    pub builtin: bool,
}

impl Span {
    /// Wall time in ns (0 while unfinished).
    pub fn duration_ns(&self) -> u64 {
        self.end_ns.map_or(0, |e| e.saturating_sub(self.start_ns))
    }
}

/// Where a services view came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Source {
    /// bootprint's runner's span log, `rc.log`.
    #[default]
    Runner,
    /// systemd's unit timing, `systemd-units.log`.
    Systemd,
}

/// The services view of one boot: the scripts bootprint's runner started, or systemd's units.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServicesView {
    /// Where it came from; the runner's views have runlevels, systemd's have units.
    pub source: Source,
    /// systemd: the login unit the critical chain goes to (the first getty or display
    /// manager to become active).
    pub login_unit: Option<String>,
    /// systemd: the units in the `failed` state (with a span or not).
    pub failed_units: Vec<String>,
    /// systemd: the units a socket, path or timer starts (`TriggeredBy=`): on demand.
    pub on_demand: Vec<String>,
    /// systemd: no unit had a dependency list (the units were read from the journal, which
    /// keeps none), so there is no critical chain to follow.
    pub no_dependencies: bool,
    /// systemd: when the manager started (`UserspaceTimestamp`), ns in the trace's time
    /// base; `systemd-analyze` gives its times from there.
    pub userspace_ns: u64,
    /// Every script run, by start time.
    pub spans: Vec<Span>,
    /// When each runlevel's path to the login was done (`rc_reached`): (runlevel, ns).
    pub reached: Vec<(String, u64)>,
    /// When late services were let go: (runlevel, ns, reason `idle`/`max_wait`).
    pub late_start: Vec<(String, u64, String)>,
    /// Runners that fell back to serial: (runlevel, reason).
    pub fallbacks: Vec<(String, String)>,
}

impl ServicesView {
    /// Builds the view from the span log's events ([`trace::rclog::parse`]).
    pub fn from_events(events: &[trace::Event]) -> ServicesView {
        let mut v = ServicesView::default();
        let mut open: BTreeMap<(String, String, String), usize> = BTreeMap::new();
        let get = |e: &trace::Event, k: &str| e.get(k).unwrap_or_default().to_string();
        for e in events {
            let key = (get(e, "runlevel"), get(e, "action"), get(e, "script"));
            match e.kind.as_str() {
                "rc_start" => {
                    open.insert(key, v.spans.len());
                    v.spans.push(Span {
                        script: get(e, "script"),
                        action: get(e, "action"),
                        runlevel: get(e, "runlevel"),
                        start_ns: e.t_ns,
                        end_ns: None,
                        exit: None,
                        outcome: "running".into(),
                        late: get(e, "late") == "1",
                        beside: get(e, "beside") == "1",
                        waited_for: get(e, "waited_for"),
                        builtin: get(e, "builtin") == "1",
                    });
                }
                "rc_end" => {
                    if let Some(i) = open.remove(&key) {
                        let s = &mut v.spans[i];
                        s.end_ns = Some(e.t_ns);
                        s.exit = e.get("exit").and_then(|x| x.parse().ok());
                        s.outcome = get(e, "outcome");
                    }
                }
                "rc_builtin_failed" => {
                    // The script runs next (its own rc_start): drop the built-in's try.
                    if let Some(i) = open.remove(&key) {
                        v.spans.remove(i);
                        for x in open.values_mut() {
                            if *x > i {
                                *x -= 1;
                            }
                        }
                    }
                }
                "rc_reached" => v.reached.push((get(e, "runlevel"), e.t_ns)),
                "rc_late" => v
                    .late_start
                    .push((get(e, "runlevel"), e.t_ns, get(e, "reason"))),
                "rc_fallback" => v.fallbacks.push((get(e, "runlevel"), get(e, "reason"))),
                _ => {}
            }
        }
        v.spans.sort_by_key(|s| s.start_ns);
        v
    }

    /// How long each service took to start, seconds, the slowest first: start actions only,
    /// not runlevels 0 and 6 (a boot's, not a shutdown's); one figure a name, its longest run
    /// (a script run twice). The figures `bootprint export` and `bootprint fleet` give.
    pub fn start_times(&self) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = self
            .blame()
            .into_iter()
            .filter(|s| s.action == "start" && s.runlevel != "0" && s.runlevel != "6")
            .map(|s| (s.script.clone(), s.duration_ns() as f64 / 1e9))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut seen = std::collections::HashSet::new();
        out.retain(|(n, _)| seen.insert(n.clone()));
        out
    }

    /// The view of a span log's text; bad lines are returned as problems naming `file`.
    pub fn from_text(text: &str, file: &str) -> (ServicesView, Vec<trace::rclog::Problem>) {
        let (events, problems) = trace::rclog::parse(text, file);
        (ServicesView::from_events(&events), problems)
    }

    /// systemd's view of a boot from its unit timing ([`trace::units`]), by
    /// `systemd-analyze`'s rules (systemd 252, src/analyze/analyze-time-data.c and
    /// analyze-critical-chain.c): a unit with no `InactiveExitTimestamp` (it never started
    /// activating) has no span; a span runs from activating to active, or to inactive when it
    /// never became active (a failed or finished oneshot); a unit waited for the `After=`
    /// dependency that became active last, among those active before the manager finished
    /// starting (`FinishTimestamp`). Spans are in the trace's time base (CLOCK_BOOTTIME).
    pub fn from_units(u: &trace::units::Units) -> ServicesView {
        let mut v = ServicesView {
            source: Source::Systemd,
            userspace_ns: u.boottime_ns(u.userspace_us),
            no_dependencies: u.units.iter().all(|x| x.deps.is_empty()),
            ..ServicesView::default()
        };
        let started: BTreeMap<&str, &trace::units::Unit> = u
            .units
            .iter()
            .filter(|x| x.activating_us > 0)
            .map(|x| (x.id.as_str(), x))
            .collect();
        // The chain's rule ignores units active only after the manager finished starting.
        let in_range = |x: &trace::units::Unit| {
            x.active_us > 0 && (u.finish_us == 0 || x.active_us <= u.finish_us)
        };
        let login = started
            .values()
            .filter(|x| login_unit_name(&x.id) && x.active_us > 0)
            .min_by_key(|x| x.active_us);
        v.login_unit = login.map(|x| x.id.clone());
        if let Some(l) = login {
            v.reached
                .push(("systemd".into(), u.boottime_ns(l.active_us)));
        }
        for x in started.values() {
            let end_us = if x.active_us >= x.activating_us {
                Some(x.active_us)
            } else if x.inactive_us >= x.activating_us {
                Some(x.inactive_us)
            } else {
                None // still activating
            };
            let failed = x.active_state == "failed" || !matches!(x.result.as_str(), "" | "success");
            let outcome = if failed {
                "failed"
            } else if end_us.is_none() {
                "running"
            } else {
                "ok"
            };
            let waited_for = x
                .dep("After")
                .iter()
                .filter_map(|d| started.get(d.as_str()))
                .filter(|d| in_range(d))
                .fold(None::<&trace::units::Unit>, |best, d| match best {
                    Some(b) if b.active_us >= d.active_us => Some(b),
                    _ => Some(d),
                })
                .map(|d| d.id.clone())
                .unwrap_or_default();
            v.spans.push(Span {
                script: x.id.clone(),
                action: "start".into(),
                runlevel: String::new(),
                start_ns: u.boottime_ns(x.activating_us),
                end_ns: end_us.map(|e| u.boottime_ns(e)),
                exit: None,
                outcome: outcome.into(),
                late: login.is_some_and(|l| x.activating_us > l.active_us),
                beside: false,
                waited_for,
                builtin: false,
            });
        }
        v.on_demand = u
            .units
            .iter()
            .filter(|x| !x.dep("TriggeredBy").is_empty())
            .map(|x| x.id.clone())
            .collect();
        v.failed_units = u
            .units
            .iter()
            .filter(|x| x.active_state == "failed")
            .map(|x| x.id.clone())
            .collect();
        v.spans
            .sort_by(|a, b| (a.start_ns, &a.script).cmp(&(b.start_ns, &b.script)));
        v
    }

    /// The view of a `systemd-units.log`'s text; bad lines are returned as problems naming
    /// `file`.
    pub fn from_units_text(text: &str, file: &str) -> (ServicesView, Vec<trace::rclog::Problem>) {
        let (units, problems) = trace::units::parse(text, file);
        (ServicesView::from_units(&units), problems)
    }

    /// Spans by wall time, longest first (like `systemd-analyze blame`, which leaves out
    /// units that took no time: targets, most mounts, devices).
    pub fn blame(&self) -> Vec<&Span> {
        let mut b: Vec<&Span> = self
            .spans
            .iter()
            .filter(|s| self.source == Source::Runner || s.duration_ns() > 0)
            .collect();
        b.sort_by_key(|s| (std::cmp::Reverse(s.duration_ns()), s.start_ns));
        b
    }

    /// The chain of scripts that held up the login: from the last script (not late) to end
    /// before the last `rc_reached`, back through `waited_for` (the dependency whose end
    /// made each one ready). First element is the earliest.
    pub fn critical_chain(&self) -> Vec<&Span> {
        if self.source == Source::Systemd {
            return self.unit_chain();
        }
        let Some(&(ref rl, at)) = self.reached.last() else {
            return vec![];
        };
        let in_rl = |s: &&Span| !s.late && !s.beside && s.end_ns.is_some_and(|e| e <= at);
        let mut cur = self
            .spans
            .iter()
            .filter(|s| &s.runlevel == rl)
            .filter(in_rl)
            .max_by_key(|s| s.end_ns);
        let mut chain = Vec::new();
        while let Some(s) = cur {
            if chain.len() > self.spans.len() {
                break; // a malformed log with a waited_for loop
            }
            chain.push(s);
            cur = if s.waited_for.is_empty() {
                // Ready at once in its runlevel: it waited for the runlevel before (rcS
                // before rc2); go on from the last script there to end before it started.
                self.spans
                    .iter()
                    .filter(|p| p.runlevel != s.runlevel && !p.late && !p.beside)
                    .filter(|p| p.end_ns.is_some_and(|e| e <= s.start_ns))
                    .max_by_key(|p| p.end_ns)
            } else {
                self.spans
                    .iter()
                    .filter(|p| p.script == s.waited_for && p.start_ns <= s.start_ns)
                    .max_by_key(|p| p.start_ns)
            };
        }
        chain.reverse();
        chain
    }
}

impl ServicesView {
    /// systemd's critical chain to the login unit: from it, back through the `After=`
    /// dependency that became active last ([`Span::waited_for`]), as `systemd-analyze
    /// critical-chain UNIT` prints it (first element the earliest).
    fn unit_chain(&self) -> Vec<&Span> {
        if self.no_dependencies {
            return vec![];
        }
        let by_name: BTreeMap<&str, &Span> =
            self.spans.iter().map(|s| (s.script.as_str(), s)).collect();
        let mut chain: Vec<&Span> = Vec::new();
        let mut cur = self
            .login_unit
            .as_deref()
            .and_then(|l| by_name.get(l).copied());
        while let Some(s) = cur {
            if chain.iter().any(|c| c.script == s.script) {
                break; // an ordering cycle: systemd-analyze prints "..." there
            }
            chain.push(s);
            cur = by_name.get(s.waited_for.as_str()).copied();
        }
        chain.reverse();
        chain
    }

    /// The failed spans, or (systemd) the units in the failed state.
    pub fn failed(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .spans
            .iter()
            .filter(|s| !matches!(s.outcome.as_str(), "ok" | "running"))
            .map(|s| s.script.clone())
            .collect();
        for u in &self.failed_units {
            if !out.contains(u) {
                out.push(u.clone());
            }
        }
        out
    }
}

/// The services view of a trace: the runner's (`rc.log`) or else systemd's units
/// (`systemd-units.log`), a boot having one service manager; with the problems of its file
/// (bad lines, the recorder's notes), each naming the file.
pub fn view_of(trace: &trace::Trace) -> (Option<ServicesView>, Vec<String>) {
    let mut warnings = Vec::new();
    if let Some(text) = trace.rc_log.as_deref() {
        let file = format!("{}/{}", trace.origin, trace::rclog::FILE_NAME);
        let (view, problems) = ServicesView::from_text(text, &file);
        warnings.extend(problems.iter().map(ToString::to_string));
        return (Some(view), warnings);
    }
    let Some(text) = trace.systemd_units.as_deref() else {
        return (None, warnings);
    };
    let file = format!("{}/{}", trace.origin, trace::units::FILE_NAME);
    let (units, problems) = trace::units::parse(text, &file);
    warnings.extend(problems.iter().map(ToString::to_string));
    warnings.extend(units.notes.iter().map(|n| format!("{file}: {n}")));
    (Some(ServicesView::from_units(&units)), warnings)
}

/// Whether a unit starts a login: a getty of any kind, or the display manager.
pub fn login_unit_name(id: &str) -> bool {
    id.starts_with("getty@")
        || id.starts_with("serial-getty@")
        || id.starts_with("console-getty.")
        || id.starts_with("container-getty@")
        || id == "display-manager.service"
        || matches!(
            id,
            "lightdm.service" | "gdm.service" | "gdm3.service" | "sddm.service" | "xdm.service"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_from_command_lines() {
        assert_eq!(
            script_of("/bin/sh /etc/init.d/ssh start"),
            Some(("ssh".into(), Some("start".into())))
        );
        assert_eq!(
            script_of("/bin/sh -e /etc/rc2.d/S01networking start"),
            Some(("networking".into(), Some("start".into())))
        );
        assert_eq!(script_of("/bin/sh /etc/init.d/rc 2"), None);
        assert_eq!(script_of("sed -e s/x/y/"), None);
    }

    const LOG: &str = "# bootprint rc 1
10 rc_start script=mountall action=start runlevel=S late=0 waited_for=
90 rc_end script=mountall action=start runlevel=S late=0 exit=0 outcome=ok timed_out=0
100 rc_begin runlevel=2 action=start
1000 rc_start script=a action=start runlevel=2 late=0 waited_for=
1500 rc_start script=c action=start runlevel=2 late=0 waited_for=
2000 rc_end script=a action=start runlevel=2 late=0 exit=0 outcome=ok timed_out=0
2100 rc_start script=b action=start runlevel=2 late=0 waited_for=a
2600 rc_end script=c action=start runlevel=2 late=0 exit=1 outcome=failed timed_out=0
5000 rc_end script=b action=start runlevel=2 late=0 exit=0 outcome=ok timed_out=0
5000 rc_reached runlevel=2
9000 rc_late runlevel=2 reason=idle
9100 rc_start script=z%20z action=start runlevel=2 late=1 waited_for=
";

    fn chain(v: &ServicesView) -> Vec<&str> {
        v.critical_chain()
            .iter()
            .map(|s| s.script.as_str())
            .collect()
    }

    #[test]
    fn view_blame_chain() {
        let (v, problems) = ServicesView::from_text(LOG, "rc.log");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(v.spans.len(), 5);
        let names: Vec<&str> = v.blame().iter().map(|s| s.script.as_str()).collect();
        assert_eq!(names, ["b", "c", "a", "mountall", "z z"]);
        assert_eq!(chain(&v), ["mountall", "a", "b"]);
        assert_eq!(v.spans[2].outcome, "failed");
        assert_eq!(v.spans[4].outcome, "running");
        assert!(v.spans[4].late);
        assert_eq!(v.late_start, vec![("2".into(), 9000, "idle".into())]);
    }

    /// One graph: udev, beside the path in S, ends after mountall but before runlevel 2's
    /// first script; the chain still goes back to mountall, which `a` waited for.
    #[test]
    fn the_chain_skips_what_was_beside_the_path() {
        let log = LOG.replace(
            "100 rc_begin runlevel=2 action=start\n",
            "20 rc_start script=udev action=start runlevel=S late=0 beside=1 waited_for=\n\
             95 rc_reached runlevel=S\n100 rc_begin runlevel=2 action=start\n\
             900 rc_end script=udev action=start runlevel=S late=0 beside=1 exit=0 outcome=ok timed_out=0\n",
        );
        let (v, _) = ServicesView::from_text(&log, "rc.log");
        let udev = v.spans.iter().find(|s| s.script == "udev").unwrap();
        assert!(udev.beside && !udev.late);
        assert_eq!(chain(&v), ["mountall", "a", "b"]);
    }
}
