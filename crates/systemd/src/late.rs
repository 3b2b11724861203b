//! Which units can start after the login, once the machine is idle: those the boot starts
//! (wanted by the default target), that nothing on the path to a login needs or waits for,
//! that no socket, path or timer starts, and that no unit left early waits for. Pure: the
//! graph comes from [`crate::show`], the pins from `bootprint.toml`.
//!
//! The path to the login is every unit a login unit (a getty, the display manager) pulls in
//! or is ordered after, recursively: systemd waits for those before the login whatever we do,
//! and deferring one would only make the login wait for idle time.

use std::collections::{BTreeMap, BTreeSet};

use crate::show::Unit;

/// What the user pinned (`[systemd]` in bootprint.toml).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pins {
    /// `late_units`: start these late even if the default target does not want them.
    pub late: Vec<String>,
    /// `never_late`: never these (nor what they need).
    pub never_late: Vec<String>,
}

/// The choice, with the reason for every candidate kept early.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Choice {
    /// Units to start late, sorted.
    pub late: Vec<String>,
    /// Units the boot starts that stay where they are, and why.
    pub kept: BTreeMap<String, String>,
    /// The units the path to the login starts from (gettys, display manager).
    pub login_units: Vec<String>,
}

/// Targets whose wants are "what the boot starts".
const BOOT_TARGETS: [&str; 3] = ["multi-user.target", "graphical.target", "default.target"];

/// Dependencies a unit waits for or pulls in: the path follows these.
const NEEDS: [&str; 5] = ["Requires", "Requisite", "BindsTo", "Wants", "After"];

/// Units that are part of the manager or of logging in, whatever the graph says.
fn core_unit(id: &str) -> bool {
    id.starts_with("systemd-")
        || id.starts_with("dbus")
        || id.starts_with("getty")
        || id.starts_with("serial-getty@")
        || id.starts_with("console-getty")
        || id.starts_with("container-getty@")
        || id.starts_with("plymouth")
        || id == "display-manager.service"
}

/// Whether a unit starts a login: a getty of any kind, or the display manager.
fn login_unit(u: &Unit) -> bool {
    let names = std::iter::once(&u.id).chain(u.names.iter());
    names.into_iter().any(|n| {
        n.starts_with("getty@")
            || n.starts_with("serial-getty@")
            || n.starts_with("console-getty.")
            || n.starts_with("container-getty@")
            || n == "display-manager.service"
    })
}

/// Chooses the late units of a loaded graph.
pub fn choose(units: &[Unit], pins: &Pins) -> Choice {
    let mut by_name: BTreeMap<&str, &Unit> = BTreeMap::new();
    for u in units {
        by_name.insert(u.id.as_str(), u);
        for n in &u.names {
            by_name.entry(n.as_str()).or_insert(u);
        }
    }
    let id_of = |name: &str| by_name.get(name).map(|u| u.id.as_str());

    // The path: from the login units (and the pinned never-late ones), everything needed.
    let login_units: Vec<String> = units
        .iter()
        .filter(|u| u.load_state == "loaded" && login_unit(u))
        .map(|u| u.id.clone())
        .collect();
    let mut path: BTreeMap<String, String> = BTreeMap::new(); // unit -> the login unit it serves
    let mut stack: Vec<(String, String)> = login_units
        .iter()
        .map(|l| (l.clone(), l.clone()))
        .chain(
            pins.never_late
                .iter()
                .filter_map(|n| id_of(n))
                .map(|id| (id.to_string(), format!("{id} (never_late)"))),
        )
        .collect();
    while let Some((id, root)) = stack.pop() {
        if path.contains_key(&id) {
            continue;
        }
        path.insert(id.clone(), root.clone());
        if let Some(u) = by_name.get(id.as_str()) {
            for dep in NEEDS.iter().flat_map(|d| u.dep(d)) {
                let dep = id_of(dep).unwrap_or(dep).to_string();
                if !path.contains_key(&dep) {
                    stack.push((dep, root.clone()));
                }
            }
        }
    }

    // Candidates: services the boot starts (wanted by a boot target), and the pinned ones.
    let mut kept = BTreeMap::new();
    let mut late: BTreeSet<String> = BTreeSet::new();
    let pinned_late: BTreeSet<&str> = pins.late.iter().filter_map(|n| id_of(n)).collect();
    for u in units {
        let wanted_at_boot = u
            .dep("WantedBy")
            .iter()
            .chain(u.dep("RequiredBy"))
            .any(|t| BOOT_TARGETS.contains(&t.as_str()));
        let pinned = pinned_late.contains(u.id.as_str());
        if u.kind() != "service" || !(wanted_at_boot || pinned) {
            continue;
        }
        if u.id.starts_with("bootprint-late.") {
            continue; // ours
        }
        if u.load_state != "loaded" && !pinned {
            continue; // wanted but not installed (display-manager.service on a text image)
        }
        let reason = if u.load_state != "loaded" {
            Some(format!("not loaded ({})", u.load_state))
        } else if let Some(root) = path.get(&u.id) {
            Some(if root.ends_with("(never_late)") {
                format!("needed by {root}")
            } else if *root == u.id {
                "starts a login".to_string()
            } else {
                format!("on the path to the login ({root} needs it)")
            })
        } else if let Some(t) = u.dep("TriggeredBy").first() {
            Some(format!("started by {t} on demand"))
        } else if core_unit(&u.id) {
            Some("part of systemd or of logging in".to_string())
        } else if !u.default_dependencies {
            Some("an early-boot unit (DefaultDependencies=no)".to_string())
        } else {
            None
        };
        match reason {
            Some(r) => {
                kept.insert(u.id.clone(), r);
            }
            None => {
                late.insert(u.id.clone());
            }
        }
    }

    // What only late units pull in goes late with them (postgresql.service wants its
    // cluster's instance): otherwise it would start early for nobody.
    loop {
        let mut grew = false;
        for u in units {
            if late.contains(&u.id)
                || kept.contains_key(&u.id)
                || path.contains_key(&u.id)
                || u.kind() != "service"
                || u.load_state != "loaded"
                || core_unit(&u.id)
                || !u.dep("TriggeredBy").is_empty()
            {
                continue;
            }
            let pullers: Vec<&String> = u
                .dep("WantedBy")
                .iter()
                .chain(u.dep("RequiredBy"))
                .chain(u.dep("BoundBy"))
                .collect();
            // bootprint-late.target wants every unit learned late last time: not a puller.
            let pullers: Vec<&String> = pullers
                .into_iter()
                .filter(|p| p.as_str() != crate::generator::TARGET)
                .collect();
            if !pullers.is_empty() && pullers.iter().all(|p| late.contains(p.as_str())) {
                late.insert(u.id.clone());
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }

    // A late unit that an early unit waits for, needs or wants stays early (the early one
    // would otherwise run without it). Repeat: keeping one can keep another.
    loop {
        let mut moved = Vec::new();
        for id in &late {
            let Some(u) = by_name.get(id.as_str()) else {
                continue;
            };
            let waiter = ["Before", "RequiredBy", "BoundBy", "WantedBy"]
                .iter()
                .flat_map(|d| u.dep(d))
                .map(|n| id_of(n).unwrap_or(n))
                .find(|n| {
                    !late.contains(*n)
                        && !n.ends_with(".target")
                        && by_name.get(n).is_some_and(|w| w.load_state == "loaded")
                });
            if let Some(w) = waiter {
                moved.push((id.clone(), format!("{w} waits for it or needs it")));
            }
        }
        if moved.is_empty() {
            break;
        }
        for (id, why) in moved {
            late.remove(&id);
            kept.insert(id, why);
        }
    }
    for n in &pins.late {
        if id_of(n).is_none() {
            kept.insert(n.clone(), "pinned late but not loaded".to_string());
        }
    }
    Choice {
        late: late.into_iter().collect(),
        kept,
        login_units,
    }
}

/// The state file's first line.
pub const STATE_HEADER: &str = "# bootprint systemd late units 1";

/// The choice as the state file the generator reads: a header, then one unit per line;
/// the kept ones follow as comments with their reasons, for people.
pub fn to_state(c: &Choice) -> String {
    let mut s = format!("{STATE_HEADER}\n");
    for u in &c.late {
        s.push_str(u);
        s.push('\n');
    }
    for (u, why) in &c.kept {
        s.push_str(&format!("# kept {u}: {why}\n"));
    }
    s
}

/// A unit name as systemd accepts one: letters, digits and `:-_.@\`, a known suffix.
pub fn valid_unit_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 255
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || ":-_.@\\".contains(c))
        && n.ends_with(".service")
        && !n.starts_with('.')
}

/// A line of a state file that is not a unit name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateError {
    /// 1-based line.
    pub line: usize,
    /// What was expected.
    pub expected: String,
}

/// Reads a state file: the late units. Anything wrong is an error naming the line (the
/// generator then defers nothing).
pub fn from_state(text: &str) -> Result<Vec<String>, StateError> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, l)) if l == STATE_HEADER => {}
        _ => {
            return Err(StateError {
                line: 1,
                expected: format!("{STATE_HEADER:?}"),
            })
        }
    }
    let mut units = Vec::new();
    for (i, l) in lines {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if !valid_unit_name(l) {
            return Err(StateError {
                line: i + 1,
                expected: format!("a service unit name, found {l:?}"),
            });
        }
        units.push(l.to_string());
    }
    Ok(units)
}
