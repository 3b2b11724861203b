//! Which units can start after the login, once the machine is idle: those the boot starts
//! (wanted by the default target), that nothing on the path to a login needs or waits for,
//! that no socket, path or timer starts, and that no unit left early waits for. Pure: the
//! graph comes from [`crate::show`], the pins from `bootprint.toml`.
//!
//! The path to the login is every unit a login unit (a getty, the display manager) pulls in
//! or is ordered after, recursively: systemd waits for those before the login whatever we do,
//! and deferring one would only make the login wait for idle time.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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
pub fn core_unit(id: &str) -> bool {
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
    names.into_iter().any(|n| login_name(n))
}

/// Whether the name is a login's: a getty of any kind, or the display manager.
pub fn login_name(n: &str) -> bool {
    n.starts_with("getty@")
        || n.starts_with("serial-getty@")
        || n.starts_with("console-getty.")
        || n.starts_with("container-getty@")
        || n == "display-manager.service"
}

/// Chooses the late units of a loaded graph.
pub fn choose(units: &[Unit], pins: &Pins) -> Choice {
    let names = Names::of(units);
    let (login_units, path) = login_path(units, &names, pins);
    let (mut late, mut kept) = candidates(units, &names, &path, pins);
    pull_along(units, &mut late, &kept, &path);
    keep_what_early_units_wait_for(&names, &mut late, &mut kept);
    for n in &pins.late {
        if names.id_of(n).is_none() {
            kept.insert(n.clone(), "pinned late but not loaded".to_string());
        }
    }
    Choice {
        late: late.into_iter().collect(),
        kept,
        login_units,
    }
}

/// Every unit by its id and by each of its other names (the id wins).
struct Names<'a> {
    by_name: BTreeMap<&'a str, &'a Unit>,
}

impl<'a> Names<'a> {
    fn of(units: &'a [Unit]) -> Names<'a> {
        let mut by_name: BTreeMap<&str, &Unit> = BTreeMap::new();
        for u in units {
            by_name.insert(u.id.as_str(), u);
            for n in &u.names {
                by_name.entry(n.as_str()).or_insert(u);
            }
        }
        Names { by_name }
    }

    fn get(&self, name: &str) -> Option<&'a Unit> {
        self.by_name.get(name).copied()
    }

    /// The id of the unit `name` names, if the graph has one.
    fn id_of(&self, name: &str) -> Option<&'a str> {
        self.get(name).map(|u| u.id.as_str())
    }
}

/// The path: from the login units (and the pinned never-late ones), everything needed.
/// Returns the login units, and each unit on the path with the login unit it serves.
fn login_path(
    units: &[Unit],
    names: &Names,
    pins: &Pins,
) -> (Vec<String>, BTreeMap<String, String>) {
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
                .filter_map(|n| names.id_of(n))
                .map(|id| (id.to_string(), format!("{id} (never_late)"))),
        )
        .collect();
    while let Some((id, root)) = stack.pop() {
        if path.contains_key(&id) {
            continue;
        }
        path.insert(id.clone(), root.clone());
        if let Some(u) = names.get(id.as_str()) {
            for dep in NEEDS.iter().flat_map(|d| u.dep(d)) {
                let dep = names.id_of(dep).unwrap_or(dep).to_string();
                if !path.contains_key(&dep) {
                    stack.push((dep, root.clone()));
                }
            }
        }
    }
    (login_units, path)
}

/// Candidates: services the boot starts (wanted by a boot target), and the pinned ones.
/// Returns those that may start late, and those kept early with why.
fn candidates(
    units: &[Unit],
    names: &Names,
    path: &BTreeMap<String, String>,
    pins: &Pins,
) -> (BTreeSet<String>, BTreeMap<String, String>) {
    let mut kept = BTreeMap::new();
    let mut late: BTreeSet<String> = BTreeSet::new();
    let pinned_late: BTreeSet<&str> = pins.late.iter().filter_map(|n| names.id_of(n)).collect();
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
        match kept_early_because(u, path) {
            Some(r) => {
                kept.insert(u.id.clone(), r);
            }
            None => {
                late.insert(u.id.clone());
            }
        }
    }
    (late, kept)
}

/// Why a candidate stays early, if it does.
fn kept_early_because(u: &Unit, path: &BTreeMap<String, String>) -> Option<String> {
    if u.load_state != "loaded" {
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
    }
}

/// What only late units pull in goes late with them (postgresql.service wants its
/// cluster's instance): otherwise it would start early for nobody.
fn pull_along(
    units: &[Unit],
    late: &mut BTreeSet<String>,
    kept: &BTreeMap<String, String>,
    path: &BTreeMap<String, String>,
) {
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
}

/// A late unit that an early unit waits for, needs or wants stays early (the early one
/// would otherwise run without it). Repeat: keeping one can keep another.
fn keep_what_early_units_wait_for(
    names: &Names,
    late: &mut BTreeSet<String>,
    kept: &mut BTreeMap<String, String>,
) {
    loop {
        let mut moved = Vec::new();
        for id in late.iter() {
            let Some(u) = names.get(id.as_str()) else {
                continue;
            };
            let waiter = ["Before", "RequiredBy", "BoundBy", "WantedBy"]
                .iter()
                .flat_map(|d| u.dep(d))
                .map(|n| names.id_of(n).unwrap_or(n))
                .find(|n| {
                    !late.contains(*n)
                        && !n.ends_with(".target")
                        && names.get(n).is_some_and(|w| w.load_state == "loaded")
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
}

/// The state file's first line. Version 2 added the fingerprint of the unit files and the
/// pins the choice was made with: a version 1 file is refused (nothing deferred), and the
/// next boot done learns again.
pub const STATE_HEADER: &str = "# bootprint systemd late units 2";

/// What the state file holds: the late units, and what they were chosen from (the unit
/// files' [`fingerprint`] and the pins), so the generator can tell whether the choice still
/// holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    /// Units to start late.
    pub late: Vec<String>,
    /// [`fingerprint`] of the unit files when they were chosen.
    pub units: u64,
    /// The pins they were chosen with.
    pub pins: Pins,
}

fn pins_line(key: &str, names: &[String]) -> String {
    let mut v = names.to_vec();
    v.sort();
    v.dedup();
    if v.is_empty() {
        format!("pins {key}\n")
    } else {
        format!("pins {key} {}\n", v.join(" "))
    }
}

/// The choice as the state file the generator reads: the header, the unit files'
/// fingerprint (`units HEX`), the pins (`pins never_late ...`, `pins late_units ...`), then
/// one late unit per line; the kept ones follow as comments with their reasons, for people.
pub fn to_state(c: &Choice, units: u64, pins: &Pins) -> String {
    let mut s = format!("{STATE_HEADER}\nunits {units:016x}\n");
    s.push_str(&pins_line("never_late", &pins.never_late));
    s.push_str(&pins_line("late_units", &pins.late));
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

/// A line of a state file that is not what it should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateError {
    /// 1-based line.
    pub line: usize,
    /// What was expected.
    pub expected: String,
}

/// Reads a state file. Anything wrong is an error naming the line (the generator then
/// defers nothing).
pub fn from_state(text: &str) -> Result<State, StateError> {
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
    let mut state = State::default();
    let mut units = None;
    let bad = |i: usize, what: &str, l: &str| StateError {
        line: i + 1,
        expected: format!("{what}, found {l:?}"),
    };
    for (i, l) in lines {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let mut w = l.split_whitespace();
        match w.next() {
            Some("units") => {
                let v = w
                    .next()
                    .filter(|h| h.len() == 16)
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .filter(|_| w.next().is_none() && units.is_none())
                    .ok_or_else(|| bad(i, "one `units` line with 16 hex digits", l))?;
                units = Some(v);
            }
            Some("pins") => {
                let into = match w.next() {
                    Some("never_late") => &mut state.pins.never_late,
                    Some("late_units") => &mut state.pins.late,
                    _ => return Err(bad(i, "`pins never_late|late_units NAME...`", l)),
                };
                for n in w {
                    if !valid_unit_name(n) {
                        return Err(bad(i, "service unit names after `pins`", l));
                    }
                    into.push(n.to_string());
                }
            }
            _ if valid_unit_name(l) => state.late.push(l.to_string()),
            _ => return Err(bad(i, "a service unit name", l)),
        }
    }
    state.units = units.ok_or_else(|| StateError {
        line: 2,
        expected: "a `units HEX` line (the unit files' fingerprint)".into(),
    })?;
    Ok(state)
}

/// Where unit files come from (systemd.unit(5): the system unit search path less the
/// directories of the running boot, /run, which the generators fill), and /etc/fstab, from
/// which systemd's generator makes the mount units.
pub const UNIT_SOURCES: [&str; 5] = [
    "/etc/systemd/system",
    "/usr/local/lib/systemd/system",
    "/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/etc/fstab",
];

/// A fingerprint of the unit files installed under `root`: every entry of [`UNIT_SOURCES`]
/// (and below, drop-in and `.wants` directories included), its name, type, size, mtime
/// and link target, and /etc/fstab (mount units come from it). A unit installed, removed,
/// enabled, edited or given a drop-in changes it; a directory reached twice (a merged /usr)
/// is read once. FNV-1a, for change detection only.
pub fn fingerprint(root: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    let mut seen = Vec::new();
    for d in UNIT_SOURCES {
        let p = root.join(d.trim_start_matches('/'));
        h.add(d.as_bytes());
        let Ok(md) = std::fs::metadata(&p) else {
            h.add(b"-");
            continue;
        };
        if seen.contains(&(md.dev(), md.ino())) {
            h.add(b"=");
            continue;
        }
        seen.push((md.dev(), md.ino()));
        walk_into(&mut h, &p, 0);
    }
    h.0
}

struct Fnv(u64);

impl Fnv {
    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes.iter().chain(&[0xff]) {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
}

fn walk_into(h: &mut Fnv, p: &Path, depth: u32) {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    let Ok(md) = std::fs::symlink_metadata(p) else {
        h.add(b"?");
        return;
    };
    h.add(&md.mode().to_le_bytes());
    h.add(&md.size().to_le_bytes());
    h.add(&md.mtime().to_le_bytes());
    h.add(&md.mtime_nsec().to_le_bytes());
    if md.file_type().is_symlink() {
        if let Ok(t) = std::fs::read_link(p) {
            h.add(t.as_os_str().as_bytes());
        }
    } else if md.is_dir() && depth < 3 {
        let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(p)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        names.sort();
        for n in names {
            h.add(n.as_bytes());
            walk_into(h, &p.join(&n), depth + 1);
        }
    }
}

/// What the generator defers this boot, from the state learned at the last boot done.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deferral {
    /// Units to defer.
    pub late: Vec<String>,
    /// Units the state lists that are kept early all the same, with why.
    pub refused: Vec<(String, String)>,
}

/// The generator's own checks of a learned state, every boot, before it defers anything:
///
/// - the unit files are those the choice was made from (`units` against `units_now`): a
///   unit installed, enabled or edited since may need a late one (a `Requires=`), so nothing
///   is deferred until the next boot done has learned again (Err);
/// - the pins are those it was made with (`pins_now`): a `never_late` pin added since keeps
///   its unit and what it needs early, which only a new choice knows (Err);
/// - each unit is not one that learning always keeps early, whatever the state says: a
///   unit of the manager or of logging in ([`core_unit`], [`login_name`]), ours, pinned
///   `never_late`, or one a socket, path or timer of the same name starts (`trigger_enabled`
///   says whether a unit of that name is enabled): those are refused, the rest deferred.
pub fn check_state(
    state: &State,
    units_now: u64,
    pins_now: &Pins,
    trigger_enabled: impl Fn(&str) -> bool,
) -> Result<Deferral, String> {
    if state.units != units_now {
        return Err("the unit files changed since the late units were learned".into());
    }
    let set = |v: &[String]| v.iter().cloned().collect::<BTreeSet<String>>();
    if set(&state.pins.never_late) != set(&pins_now.never_late)
        || set(&state.pins.late) != set(&pins_now.late)
    {
        return Err("the [systemd] pins changed since the late units were learned".into());
    }
    let mut d = Deferral::default();
    for u in &state.late {
        let stem = u.strip_suffix(".service").unwrap_or(u);
        let why = if core_unit(u) || login_name(u) {
            Some("part of systemd or of logging in".to_string())
        } else if u.starts_with("bootprint-late.") {
            Some("bootprint's own".to_string())
        } else if pins_now.never_late.contains(u) {
            Some("pinned never_late".to_string())
        } else {
            ["socket", "path", "timer"]
                .iter()
                .map(|k| format!("{stem}.{k}"))
                .find(|t| trigger_enabled(t))
                .map(|t| format!("started by {t} on demand"))
        };
        match why {
            Some(w) => d.refused.push((u.clone(), w)),
            None => d.late.push(u.clone()),
        }
    }
    Ok(d)
}
