//! Services as the trace shows them: an init script's run (`/etc/init.d/NAME` or an
//! `/etc/rc?.d/` link) is one service span, from the script's process start to its exit. A
//! sysvinit boot has no service events, so the spans come from the process tree: the
//! outermost process running the script (its forks, which keep the command line, belong to
//! it).

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
}
