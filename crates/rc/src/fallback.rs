//! The runner's last resort, and the switch that forces it.
//!
//! Whatever fails in the runner (an error or a panic, in any phase), the runlevel's scripts
//! must all run: [`run_links`] runs them one at a time with the console, in the order of
//! their links in `/etc/rcN.d`, with the action `/lib/init/rc` and startpar would give them,
//! from the links alone (no header, no configuration: those may be what failed).
//!
//! - [`Fault`]: `bootprint.rc.fault=` on the kernel command line forces a failure in one
//!   phase, so a real boot on the test bed shows that every failure still runs every script.
//! - [`links`]: the scripts of a runlevel in link order, as `/lib/init/rc` and startpar pick
//!   them (`S??` to start, `K??` to stop, and what a runlevel switch skips).
//! - `wait_foreground` (crate-internal): waits for one script, bounded: on its timeout
//!   SIGTERM to its process group, SIGKILL [`KILL_DELAY`] later.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::conf::Conf;
use crate::header::{self, Parsed};
use crate::run::{console_stdout, Outcome, KILL_DELAY};
use crate::spans::SpanLog;
use crate::sys;
use crate::system::Runlevel;
use crate::Diagnostic;

/// A failure forced by `bootprint.rc.fault=VALUE` on the kernel command line (docs/rc.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `config`: reading the configuration fails (an error).
    Config,
    /// `load`: reading the system (`/etc/init.d`, insserv.conf, links) fails (an error).
    Load,
    /// `plan`: planning panics.
    Plan,
    /// `run`: the parallel run panics once its first script has started.
    Run,
    /// `panic`: a panic once the path to the login is done, outside every inner guard
    /// (before startpar's answer and the late services).
    Panic,
    /// `abort`: the runner aborts at once (SIGABRT, as a crash would) and runs nothing:
    /// the startpar wrapper's fallback to Debian's startpar takes over.
    Abort,
    /// `builtin`: every built-in fails after its first step; the runner runs the script.
    Builtin,
    /// `worker`: runlevel S's worker (one graph, docs/rc.md) aborts once its path is done,
    /// before it lets rcS return: the waiting parent runs what it had not started.
    Worker,
    /// `beside`: runlevel S's worker aborts right after rcS returned, with scripts beside
    /// the path left: the runner of the next runlevel runs those not started.
    Beside,
    /// `slow`: nothing fails, but the runner waits [`SLOW_WAIT`] before runlevel S's
    /// scripts: a runner that costs time, for its own verdict to find (docs/rc.md).
    Slow,
}

/// How long [`Fault::Slow`] holds runlevel S back.
pub const SLOW_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The kernel command line word that forces a fault.
pub const FAULT_PARAM: &str = "bootprint.rc.fault";

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 10] = [
        Fault::Config,
        Fault::Load,
        Fault::Plan,
        Fault::Run,
        Fault::Panic,
        Fault::Abort,
        Fault::Builtin,
        Fault::Worker,
        Fault::Beside,
        Fault::Slow,
    ];

    /// The value on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Config => "config",
            Fault::Load => "load",
            Fault::Plan => "plan",
            Fault::Run => "run",
            Fault::Panic => "panic",
            Fault::Abort => "abort",
            Fault::Builtin => "builtin",
            Fault::Worker => "worker",
            Fault::Beside => "beside",
            Fault::Slow => "slow",
        }
    }

    /// The fault asked for on a kernel command line (the last `bootprint.rc.fault=` word
    /// wins, as for the kernel's own parameters). Pure. An unknown value is an error that
    /// says what was expected.
    pub fn from_cmdline(text: &str) -> Result<Option<Fault>, String> {
        let prefix = format!("{FAULT_PARAM}=");
        let Some(value) = text
            .split_whitespace()
            .filter_map(|w| w.strip_prefix(&prefix))
            .next_back()
        else {
            return Ok(None);
        };
        match Fault::ALL.into_iter().find(|f| f.name() == value) {
            Some(f) => Ok(Some(f)),
            None => Err(format!(
                "{prefix}{value}: expected config, load, plan, run, panic, abort, builtin, worker, beside or slow; ignored"
            )),
        }
    }

    /// Reads `cmdline` (`/proc/cmdline`). A missing file means no fault; an unknown value
    /// is a diagnostic naming the file.
    pub fn read(cmdline: &Path) -> (Option<Fault>, Option<Diagnostic>) {
        let Ok(text) = std::fs::read_to_string(cmdline) else {
            return (None, None);
        };
        match Fault::from_cmdline(&text) {
            Ok(f) => (f, None),
            Err(e) => (None, Some(Diagnostic::new(cmdline, None, e))),
        }
    }

    /// What the console is told when the fault fires.
    pub fn message(self) -> String {
        format!(
            "{FAULT_PARAM}={} on the kernel command line: a failure forced for testing",
            self.name()
        )
    }
}

/// One script of a runlevel directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The script, by its link's target (as insserv names it), else the name after `S??`.
    pub name: String,
    /// The link itself, which is what `/lib/init/rc` runs.
    pub path: PathBuf,
}

/// The `S??` (or `K??`) links of a runlevel directory, in link order, one per script (the
/// first link wins). An unreadable directory is an error.
fn prefixed(root: &Path, rl: Runlevel, prefix: u8) -> std::io::Result<Vec<Link>> {
    let dir = root.join(rl.dir());
    let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)?
        .flatten()
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .collect();
    names.sort();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (name, path) in names {
        let b = name.as_bytes();
        if b.len() < 4 || b[0] != prefix || !b[1].is_ascii_digit() || !b[2].is_ascii_digit() {
            continue;
        }
        let target = std::fs::read_link(&path)
            .ok()
            .and_then(|t| t.file_name().map(|f| f.to_string_lossy().into_owned()))
            .unwrap_or_else(|| name[3..].to_string());
        if seen.insert(target.clone()) {
            out.push(Link { name: target, path });
        }
    }
    Ok(out)
}

/// The scripts `/lib/init/rc` and startpar run for `action` in `rl`, in link order: the
/// `S??` links to start, the `K??` links to stop. When switching from `previous` (not at
/// boot): start skips what `previous` started already, and stop in 1-5 stops only what
/// `previous` started (in 0 and 6 everything stops), as the runner's own plans do.
pub fn links(
    root: &Path,
    rl: Runlevel,
    action: &str,
    previous: Option<Runlevel>,
) -> std::io::Result<Vec<Link>> {
    let stop = action == "stop";
    let mut v = prefixed(root, rl, if stop { b'K' } else { b'S' })?;
    let started_before = |p: Runlevel| -> BTreeSet<String> {
        prefixed(root, p, b'S')
            .unwrap_or_default()
            .into_iter()
            .map(|l| l.name)
            .collect()
    };
    match (previous, stop, rl) {
        (Some(p), false, _) if p != rl && rl != Runlevel::S => {
            let before = started_before(p);
            v.retain(|l| !before.contains(&l.name));
        }
        (Some(p), true, Runlevel::Num(1..=5)) => {
            let before = started_before(p);
            v.retain(|l| before.contains(&l.name));
        }
        _ => {}
    }
    Ok(v)
}

/// The interactive scripts the fallback knows of: `<interactive>` in insserv.conf(.d).
/// Whatever cannot be read counts as not interactive.
fn interactive_conf(root: &Path) -> Conf {
    let mut conf = Conf::default();
    let main = Path::new("etc/insserv.conf");
    if let Ok(t) = std::fs::read_to_string(root.join(main)) {
        conf.parse_into(&t, main);
    }
    if let Ok(d) = std::fs::read_dir(root.join("etc/insserv.conf.d")) {
        for e in d.flatten() {
            if let Ok(t) = std::fs::read_to_string(e.path()) {
                conf.parse_into(&t, &e.path());
            }
        }
    }
    conf
}

/// Whether a script must run with the console and no timeout: `X-Interactive: true` in its
/// header, or listed in insserv.conf.
fn is_interactive(root: &Path, conf: &Conf, name: &str) -> bool {
    if conf.is_interactive(name) {
        return true;
    }
    let path = root.join("etc/init.d").join(name);
    let Ok(bytes) = std::fs::read(&path) else {
        return false;
    };
    let text = String::from_utf8_lossy(&bytes);
    // A panic in the parser must not take the last resort down with it.
    std::panic::catch_unwind(|| match header::parse(&text, &path) {
        (Parsed::Lsb(h), _) => h.is_interactive(),
        _ => false,
    })
    .unwrap_or(false)
}

/// The command that runs a script as `/lib/init/rc` does: `*.sh` through `/bin/sh`.
pub(crate) fn command(path: &Path, name: &str, action: &str) -> Command {
    let mut cmd = if name.ends_with(".sh") {
        let mut c = Command::new("/bin/sh");
        c.arg(path);
        c
    } else {
        Command::new(path)
    };
    cmd.arg(action);
    cmd
}

/// How a script's exit status reads.
pub(crate) fn outcome_of(st: std::process::ExitStatus) -> (Option<i32>, Outcome) {
    match (st.code(), st.signal()) {
        (Some(c), _) => (Some(c), Outcome::from_exit(c)),
        _ => (None, Outcome::Signal),
    }
}

/// Waits for a script run in the foreground until it exits or `deadline` (None: no
/// deadline, for an interactive script: someone may be typing a passphrase). Past the
/// deadline: when `group` (the script leads its own session) SIGTERM to the group, then
/// SIGKILL to what is left of it after [`KILL_DELAY`]; otherwise SIGKILL to the script. The
/// reap after SIGKILL is bounded too (1 s: a process stuck in the kernel may never die).
/// `tick` runs every 20 ms meanwhile (to drain a pty).
pub(crate) fn wait_foreground(
    child: &mut Child,
    deadline: Option<Instant>,
    group: bool,
    tick: &mut dyn FnMut(),
) -> (Option<i32>, Outcome) {
    let poll = Duration::from_millis(20);
    loop {
        tick();
        match child.try_wait() {
            Ok(Some(st)) => return outcome_of(st),
            Ok(None) if deadline.is_none_or(|d| Instant::now() < d) => std::thread::sleep(poll),
            Ok(None) => break,
            // Not a child we can wait for: nothing to wait on.
            Err(_) => return (None, Outcome::Failed),
        }
    }
    let pgid = child.id();
    if group {
        sys::kill_group(pgid, sys::SIGTERM);
        let until = Instant::now() + KILL_DELAY;
        while Instant::now() < until {
            tick();
            let _ = child.try_wait(); // reaps the leader, so only live members count
            if !sys::group_alive(pgid) {
                break;
            }
            std::thread::sleep(poll);
        }
        if sys::group_alive(pgid) {
            sys::kill_group(pgid, sys::SIGKILL);
        }
    } else {
        let _ = child.kill();
    }
    let until = Instant::now() + Duration::from_secs(1);
    while matches!(child.try_wait(), Ok(None)) && Instant::now() < until {
        std::thread::sleep(poll);
    }
    (None, Outcome::TimedOut)
}

/// Where and how [`run_links`] runs scripts.
#[derive(Debug, Clone)]
pub struct Serial<'a> {
    /// The system's root (for headers and insserv.conf: interactive scripts).
    pub root: &'a Path,
    /// The runlevel (`RUNLEVEL`).
    pub runlevel: Runlevel,
    /// `start` or `stop`.
    pub action: &'a str,
    /// `PREVLEVEL` (`N` at boot).
    pub prevlevel: &'a str,
    /// Per script (not for interactive ones).
    pub timeout: Duration,
}

/// [`run_links`] as a serial run of its own in the span log: `rc_fallback` (`why`: the
/// reason and the error) first, which ends what an earlier `rc_begin` opened, then
/// `rc_begin` .. `rc_reached`, `rc_done` around the scripts (the recorder waits for it).
pub fn run_links_spanned(
    todo: &[Link],
    how: &Serial,
    why: (&str, &str),
    log: &mut SpanLog,
    out: &mut dyn Write,
) {
    let kv = |extra: &[(&'static str, String)]| {
        let mut v = vec![
            ("runlevel", how.runlevel.label()),
            ("action", how.action.to_string()),
        ];
        v.extend_from_slice(extra);
        v
    };
    log.event(
        ::sys::boottime_ns(),
        "rc_fallback",
        &kv(&[("reason", why.0.into()), ("error", why.1.into())]),
    );
    log.event(
        ::sys::boottime_ns(),
        "rc_begin",
        &kv(&[
            ("tasks", todo.len().to_string()),
            ("late", "0".into()),
            ("learned", "0".into()),
        ]),
    );
    run_links(todo, how, log, out);
    log.event(::sys::boottime_ns(), "rc_reached", &kv(&[]));
    log.event(::sys::boottime_ns(), "rc_done", &kv(&[]));
}

/// Runs `todo` one at a time in link order with `how.action`, each with the console
/// (stdout on the console, never our stdout: that is the pipe `/lib/init/rc` evaluates). A
/// script not interactive gets its own session and `how.timeout`; an interactive one keeps
/// the console's session and has no timeout. Logs `rc_start` and `rc_end` as the runner
/// does.
pub fn run_links(todo: &[Link], how: &Serial, log: &mut SpanLog, out: &mut dyn Write) {
    let Serial {
        root,
        runlevel: rl,
        action,
        prevlevel,
        timeout,
    } = *how;
    let conf = interactive_conf(root);
    for l in todo {
        let interactive = is_interactive(root, &conf, &l.name);
        let kv = |extra: Vec<(&'static str, String)>| {
            let mut v = vec![
                ("script", l.name.clone()),
                ("action", action.to_string()),
                ("runlevel", rl.label()),
                ("late", "0".to_string()),
            ];
            v.extend(extra);
            v
        };
        let mut cmd = command(&l.path, &l.name, action);
        cmd.env("RUNLEVEL", rl.label()).env("PREVLEVEL", prevlevel);
        console_stdout(&mut cmd);
        if !interactive {
            sys::new_session_on_exec(&mut cmd);
        }
        let start_ns = ::sys::boottime_ns();
        let (exit, outcome) = match cmd.spawn() {
            Ok(mut child) => {
                log.event(
                    start_ns,
                    "rc_start",
                    &kv(vec![
                        ("waited_for", String::new()),
                        ("pid", child.id().to_string()),
                    ]),
                );
                let deadline = (!interactive).then(|| Instant::now() + timeout);
                let r = wait_foreground(&mut child, deadline, !interactive, &mut || {});
                if r.1 == Outcome::TimedOut {
                    let _ = writeln!(
                        out,
                        "{}: timed out after {:.0} s; the boot goes on without it",
                        l.name,
                        timeout.as_secs_f64()
                    );
                }
                r
            }
            Err(e) => {
                log.event(
                    start_ns,
                    "rc_start",
                    &kv(vec![("waited_for", String::new())]),
                );
                let _ = writeln!(out, "{}: cannot start {}: {e}", l.name, l.path.display());
                (None, Outcome::SpawnFailed)
            }
        };
        log.event(
            ::sys::boottime_ns(),
            "rc_end",
            &kv(crate::run::end_fields(exit, outcome).to_vec()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_from_the_kernel_command_line() {
        assert_eq!(Fault::from_cmdline("root=/dev/vda quiet\n"), Ok(None));
        assert_eq!(
            Fault::from_cmdline("bootprint.rc=1 bootprint.rc.fault=load quiet"),
            Ok(Some(Fault::Load))
        );
        // The last one wins, as for the kernel's parameters.
        assert_eq!(
            Fault::from_cmdline("bootprint.rc.fault=plan bootprint.rc.fault=run"),
            Ok(Some(Fault::Run))
        );
        for f in Fault::ALL {
            assert_eq!(
                Fault::from_cmdline(&format!("bootprint.rc.fault={}", f.name())),
                Ok(Some(f))
            );
        }
        let e = Fault::from_cmdline("bootprint.rc.fault=bogus").unwrap_err();
        assert_eq!(
            e,
            "bootprint.rc.fault=bogus: expected config, load, plan, run, panic, abort, builtin, worker, beside or slow; ignored"
        );
        // Another parameter that merely starts alike is not this one.
        assert_eq!(Fault::from_cmdline("bootprint.rc.faultx=load"), Ok(None));
    }
}
