//! `systemd-units.log`: systemd's own timing of a boot's units, asked of the manager at boot
//! done (`systemctl show` of every unit `list-units --all` names) and kept in the trace.
//!
//! Format (docs/trace-format.md, section `systemd-units.log`): first line [`MAGIC`], then
//! one record per line, `<kind> key=value ...`, values percent-encoded as in `events.log`
//! ([`crate::events::encode`]); dependency lists are comma-separated unit names (systemd
//! allows no comma in a unit name). Kinds:
//!
//! - `clock boottime_minus_monotonic_ns=N`: CLOCK_BOOTTIME minus CLOCK_MONOTONIC when the
//!   manager was asked (both clocks read back to back); adding it to a systemd timestamp
//!   gives the trace's time base.
//! - `manager userspace_us=N finish_us=N`: the manager's `UserspaceTimestampMonotonic` and
//!   `FinishTimestampMonotonic`.
//! - `unit id=NAME type= load= active= sub= result= activating_us= active_us=
//!   deactivating_us= inactive_us= After=a,b Requires=... Wants=...`: one loaded unit, its
//!   four `*TimestampMonotonic` values (CLOCK_MONOTONIC µs, 0 never) and its dependency
//!   lists under their systemd property names.
//! - `note what=TEXT`: why something is missing (systemctl absent, timed out, garbage).
//!
//! Unknown kinds and keys are skipped (a newer writer may add some); a bad line is a
//! [`Problem`] naming the file and line, and the parse goes on.

use std::collections::BTreeMap;

use crate::events::{decode, encode};
use crate::rclog::{parse_records, Problem};

/// Name of the file inside a trace directory.
pub const FILE_NAME: &str = "systemd-units.log";

/// First line of the file; the number is the format version.
pub const MAGIC: &str = "# bootprint systemd units 1";

/// The dependency properties kept, in the order they are written.
pub const DEPS: [&str; 9] = [
    "After",
    "Before",
    "Requires",
    "Requisite",
    "BindsTo",
    "Wants",
    "WantedBy",
    "RequiredBy",
    "TriggeredBy",
];

/// One unit as systemd timed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unit {
    /// Its primary name (`cron.service`).
    pub id: String,
    /// A service's `Type=` (empty for other units).
    pub service_type: String,
    /// `LoadState`: `loaded`, `not-found`, ...
    pub load_state: String,
    /// `ActiveState`: `active`, `inactive`, `failed`, ...
    pub active_state: String,
    /// `SubState`: `running`, `exited`, `dead`, ...
    pub sub_state: String,
    /// A service's `Result`: `success`, `exit-code`, `timeout`, ... (empty for others).
    pub result: String,
    /// `InactiveExitTimestampMonotonic`, µs (0: never).
    pub activating_us: u64,
    /// `ActiveEnterTimestampMonotonic`, µs (0: never).
    pub active_us: u64,
    /// `ActiveExitTimestampMonotonic`, µs (0: never).
    pub deactivating_us: u64,
    /// `InactiveEnterTimestampMonotonic`, µs (0: never).
    pub inactive_us: u64,
    /// Dependency lists by systemd property name (one of [`DEPS`]).
    pub deps: BTreeMap<String, Vec<String>>,
}

impl Unit {
    /// The units of dependency property `name` (empty when absent).
    pub fn dep(&self, name: &str) -> &[String] {
        self.deps.get(name).map_or(&[], Vec::as_slice)
    }
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Units {
    /// CLOCK_BOOTTIME minus CLOCK_MONOTONIC, ns, when the manager was asked (None: unknown).
    pub boottime_minus_monotonic_ns: Option<u64>,
    /// `UserspaceTimestampMonotonic`, µs.
    pub userspace_us: u64,
    /// `FinishTimestampMonotonic`, µs (0: the manager had not finished starting).
    pub finish_us: u64,
    /// Every unit, in file order.
    pub units: Vec<Unit>,
    /// Why something is missing, as the recorder said.
    pub notes: Vec<String>,
}

impl Units {
    /// A systemd timestamp (µs of CLOCK_MONOTONIC) in the trace's time base (ns of
    /// CLOCK_BOOTTIME); 0 stays 0 (never).
    pub fn boottime_ns(&self, monotonic_us: u64) -> u64 {
        if monotonic_us == 0 {
            return 0;
        }
        (monotonic_us.saturating_mul(1000))
            .saturating_add(self.boottime_minus_monotonic_ns.unwrap_or(0))
    }
}

/// The file's text.
pub fn write(u: &Units) -> String {
    use std::fmt::Write as _;
    let mut s = format!("{MAGIC}\n");
    if let Some(off) = u.boottime_minus_monotonic_ns {
        let _ = writeln!(s, "clock boottime_minus_monotonic_ns={off}");
    }
    let _ = writeln!(
        s,
        "manager userspace_us={} finish_us={}",
        u.userspace_us, u.finish_us
    );
    for x in &u.units {
        let _ = write!(
            s,
            "unit id={} type={} load={} active={} sub={} result={} activating_us={} \
             active_us={} deactivating_us={} inactive_us={}",
            encode(&x.id),
            encode(&x.service_type),
            encode(&x.load_state),
            encode(&x.active_state),
            encode(&x.sub_state),
            encode(&x.result),
            x.activating_us,
            x.active_us,
            x.deactivating_us,
            x.inactive_us
        );
        for name in DEPS {
            let list = x.dep(name);
            if !list.is_empty() {
                let _ = write!(s, " {name}={}", encode(&list.join(",")));
            }
        }
        s.push('\n');
    }
    for n in &u.notes {
        let _ = writeln!(s, "note what={}", encode(n));
    }
    s
}

/// Parses the file's text. A wrong first line ends the parse; any other bad line is skipped
/// with a [`Problem`] naming `file` and the line.
pub fn parse(text: &str, file: &str) -> (Units, Vec<Problem>) {
    let mut out = Units::default();
    let problems = parse_records(text, file, MAGIC, |line| parse_line(line, &mut out));
    (out, problems)
}

fn parse_line(line: &str, out: &mut Units) -> Result<(), String> {
    let mut words = line.split(' ');
    let kind = words.next().unwrap_or_default();
    let shown: String = line.chars().take(80).collect();
    let mut fields = Vec::new();
    for word in words.filter(|w| !w.is_empty()) {
        let Some((k, v)) = word.split_once('=') else {
            return Err(format!("expected key=value, found {word:?} in {shown:?}"));
        };
        let v = decode(v).map_err(|e| format!("expected {e}, found {shown:?}"))?;
        fields.push((k, v));
    }
    let number = |k: &str, v: &str| {
        v.parse::<u64>()
            .map_err(|_| format!("expected a whole number for {k}, found {v:?}"))
    };
    match kind {
        "clock" => {
            for (k, v) in &fields {
                if *k == "boottime_minus_monotonic_ns" {
                    out.boottime_minus_monotonic_ns = Some(number(k, v)?);
                }
            }
        }
        "manager" => {
            for (k, v) in &fields {
                match *k {
                    "userspace_us" => out.userspace_us = number(k, v)?,
                    "finish_us" => out.finish_us = number(k, v)?,
                    _ => {}
                }
            }
        }
        "unit" => {
            let mut u = Unit::default();
            for (k, v) in fields {
                match k {
                    "id" => u.id = v,
                    "type" => u.service_type = v,
                    "load" => u.load_state = v,
                    "active" => u.active_state = v,
                    "sub" => u.sub_state = v,
                    "result" => u.result = v,
                    "activating_us" => u.activating_us = number(k, &v)?,
                    "active_us" => u.active_us = number(k, &v)?,
                    "deactivating_us" => u.deactivating_us = number(k, &v)?,
                    "inactive_us" => u.inactive_us = number(k, &v)?,
                    k if DEPS.contains(&k) => {
                        let list = v
                            .split(',')
                            .filter(|n| !n.is_empty())
                            .map(String::from)
                            .collect();
                        u.deps.insert(k.to_string(), list);
                    }
                    _ => {}
                }
            }
            if u.id.is_empty() {
                return Err(format!("expected id=NAME in a unit line, found {shown:?}"));
            }
            out.units.push(u);
        }
        "note" => {
            let what = fields.into_iter().find(|(k, _)| *k == "what");
            out.notes.push(what.map(|(_, v)| v).unwrap_or_default());
        }
        _ => {} // a newer writer's kind
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Units {
        let mut cron = Unit {
            id: "cron.service".into(),
            service_type: "simple".into(),
            load_state: "loaded".into(),
            active_state: "active".into(),
            sub_state: "running".into(),
            result: "success".into(),
            activating_us: 2_000_000,
            active_us: 2_000_500,
            ..Unit::default()
        };
        cron.deps.insert(
            "After".into(),
            vec!["basic.target".into(), "sysinit.target".into()],
        );
        Units {
            boottime_minus_monotonic_ns: Some(7),
            userspace_us: 1_500_000,
            finish_us: 9_000_000,
            units: vec![
                cron,
                Unit {
                    id: "a b%.service".into(),
                    ..Unit::default()
                },
            ],
            notes: vec!["a note, with spaces".into()],
        }
    }

    #[test]
    fn the_file_round_trips() {
        let u = sample();
        let text = write(&u);
        assert!(text.starts_with("# bootprint systemd units 1\n"), "{text}");
        assert!(
            text.contains(" After=basic.target,sysinit.target\n"),
            "{text}"
        );
        let (back, problems) = parse(&text, "t/systemd-units.log");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(back, u);
        assert_eq!(back.boottime_ns(2_000_000), 2_000_000_007);
        assert_eq!(back.boottime_ns(0), 0);
    }

    #[test]
    fn bad_lines_name_file_and_line_and_the_rest_is_kept() {
        let text = format!(
            "{MAGIC}\nunit id=a.service active_us=soon\nunit type=simple\n\
             unit id=b.service activating_us=5\nunit id=c.service x=%zz\nmanager finish\n\
             future kind=1\n"
        );
        let (u, problems) = parse(&text, "t/systemd-units.log");
        assert_eq!(u.units.len(), 1);
        assert_eq!(u.units[0].activating_us, 5);
        let lines: Vec<usize> = problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [2, 3, 5, 6]);
        assert_eq!(
            problems[0].to_string(),
            "t/systemd-units.log:2: expected a whole number for active_us, found \"soon\""
        );
        assert!(problems[1].message.contains("expected id=NAME"));
        let (u, problems) = parse("# bootprint rc 1\nunit id=a.service\n", "f");
        assert!(u.units.is_empty());
        assert!(problems[0]
            .message
            .starts_with("expected \"# bootprint systemd units 1\""));
    }
}
