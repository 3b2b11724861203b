//! The output of `systemctl show --property=... '*'`: one block of `Key=Value` lines per
//! loaded unit, blocks separated by an empty line; dependency lists are space-separated
//! unit names. systemd resolves aliases, drop-ins, implicit and reverse dependencies before
//! it prints them, so this is the manager's own graph, not a reading of unit files.

use std::collections::BTreeMap;

/// The properties [`parse`] reads (the `--property=` list to ask for): the graph the late
/// units are chosen from, and the four state-change times `systemd-analyze blame` and
/// `critical-chain` read (systemd's src/analyze/analyze-time-data.c).
pub const PROPERTIES: &str = "Id,Names,LoadState,ActiveState,SubState,Result,Type,\
DefaultDependencies,Wants,Requires,Requisite,BindsTo,After,Before,WantedBy,RequiredBy,BoundBy,\
TriggeredBy,InactiveExitTimestampMonotonic,ActiveEnterTimestampMonotonic,\
ActiveExitTimestampMonotonic,InactiveEnterTimestampMonotonic";

/// One loaded unit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unit {
    /// Its primary name, e.g. `cron.service`.
    pub id: String,
    /// Every name it is known by (aliases included).
    pub names: Vec<String>,
    /// `loaded`, `not-found`, `masked`, ...
    pub load_state: String,
    /// `active`, `inactive`, `failed`, ...
    pub active_state: String,
    /// `running`, `exited`, `dead`, ...
    pub sub_state: String,
    /// A service's `Result=` (`success`, `exit-code`, `timeout`, ...); empty for others.
    pub result: String,
    /// A service's `Type=` (`simple`, `forking`, `oneshot`, ...); empty for other units.
    pub service_type: String,
    /// `DefaultDependencies=`.
    pub default_dependencies: bool,
    /// Dependency lists by property name (`Wants`, `After`, `Before`, `WantedBy`, ...).
    pub deps: BTreeMap<String, Vec<String>>,
    /// The last state changes, CLOCK_MONOTONIC µs (0: never): left inactive (started
    /// activating), entered active, left active, entered inactive.
    pub times: Times,
}

/// A unit's last state changes, as `*TimestampMonotonic` (CLOCK_MONOTONIC µs, 0 never).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Times {
    /// `InactiveExitTimestampMonotonic`: it began activating.
    pub activating_us: u64,
    /// `ActiveEnterTimestampMonotonic`: it became active.
    pub active_us: u64,
    /// `ActiveExitTimestampMonotonic`: it began deactivating.
    pub deactivating_us: u64,
    /// `InactiveEnterTimestampMonotonic`: it became inactive (or failed).
    pub inactive_us: u64,
}

impl Unit {
    /// The units of dependency property `name` (empty when absent).
    pub fn dep(&self, name: &str) -> &[String] {
        self.deps.get(name).map_or(&[], Vec::as_slice)
    }

    /// The unit's kind: the part of its name after the last dot (`service`, `target`, ...).
    pub fn kind(&self) -> &str {
        self.id.rsplit_once('.').map_or("", |(_, k)| k)
    }
}

/// A line of the input that is not `Key=Value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What was there instead.
    pub found: String,
}

const DEP_PROPERTIES: [&str; 11] = [
    "Wants",
    "Requires",
    "Requisite",
    "BindsTo",
    "After",
    "Before",
    "WantedBy",
    "RequiredBy",
    "BoundBy",
    "TriggeredBy",
    "Names",
];

/// A `*TimestampMonotonic` value: µs as a decimal number.
fn us(i: usize, value: &str) -> Result<u64, ParseError> {
    value.parse().map_err(|_| ParseError {
        line: i + 1,
        found: format!("{value:.80} (expected microseconds, a whole number)"),
    })
}

/// Parses the whole output. A block without `Id=` is skipped (systemctl prints none such);
/// a line that is not `Key=Value` is an error naming its line.
pub fn parse(text: &str) -> Result<Vec<Unit>, ParseError> {
    let mut units = Vec::new();
    let mut cur = Unit::default();
    let mut any = false;
    let mut finish = |cur: &mut Unit, any: &mut bool| {
        if *any && !cur.id.is_empty() {
            units.push(std::mem::take(cur));
        }
        *cur = Unit::default();
        *any = false;
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            finish(&mut cur, &mut any);
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(ParseError {
                line: i + 1,
                found: line.chars().take(80).collect(),
            });
        };
        any = true;
        match key {
            "Id" => cur.id = value.to_string(),
            "LoadState" => cur.load_state = value.to_string(),
            "ActiveState" => cur.active_state = value.to_string(),
            "SubState" => cur.sub_state = value.to_string(),
            "Result" => cur.result = value.to_string(),
            "Type" => cur.service_type = value.to_string(),
            "InactiveExitTimestampMonotonic" => cur.times.activating_us = us(i, value)?,
            "ActiveEnterTimestampMonotonic" => cur.times.active_us = us(i, value)?,
            "ActiveExitTimestampMonotonic" => cur.times.deactivating_us = us(i, value)?,
            "InactiveEnterTimestampMonotonic" => cur.times.inactive_us = us(i, value)?,
            "DefaultDependencies" => cur.default_dependencies = value == "yes",
            k if DEP_PROPERTIES.contains(&k) => {
                // systemctl quotes a name with a backslash escape in it, C-style, the
                // backslash doubled (`"run-credentials-systemd\\x2dsysctl.service.mount"`):
                // the name is the one in `Id=` only with it single again.
                let list: Vec<String> = value
                    .split_whitespace()
                    .map(
                        |n| match n.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
                            Some(quoted) => quoted.replace("\\\\", "\\"),
                            None => n.to_string(),
                        },
                    )
                    .collect();
                if k == "Names" {
                    cur.names = list;
                } else {
                    cur.deps.insert(k.to_string(), list);
                }
            }
            _ => {} // another property: not ours to judge
        }
    }
    finish(&mut cur, &mut any);
    Ok(units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_become_units_with_their_lists() {
        let text = "Id=cron.service\nNames=cron.service crond.service\nLoadState=loaded\n\
ActiveState=active\nType=simple\nDefaultDependencies=yes\nAfter=basic.target sysinit.target\n\
WantedBy=multi-user.target\nTriggeredBy=\n\nId=multi-user.target\nWants=cron.service\n";
        let units = parse(text).unwrap();
        assert_eq!(units.len(), 2);
        let cron = &units[0];
        assert_eq!(cron.id, "cron.service");
        assert_eq!(cron.names, ["cron.service", "crond.service"]);
        assert_eq!(cron.kind(), "service");
        assert!(cron.default_dependencies);
        assert_eq!(cron.dep("After"), ["basic.target", "sysinit.target"]);
        assert!(cron.dep("TriggeredBy").is_empty());
        assert!(cron.dep("Requires").is_empty());
        assert_eq!(units[1].dep("Wants"), ["cron.service"]);
    }

    /// From a real `systemctl show` (systemd 252, the test bed's image): a name with an
    /// escape is quoted in a list, its backslash doubled, and must match its `Id=`.
    #[test]
    fn a_quoted_name_in_a_list_is_the_unit_s_own_name() {
        let text = "Id=run-credentials-systemd\\x2dsysctl.service.mount\n\n\
Id=local-fs.target\nAfter=-.mount \"run-credentials-systemd\\\\x2dsysctl.service.mount\" local-fs-pre.target\n";
        let units = parse(text).unwrap();
        assert_eq!(
            units[0].id,
            "run-credentials-systemd\\x2dsysctl.service.mount"
        );
        assert_eq!(
            units[1].dep("After"),
            ["-.mount", units[0].id.as_str(), "local-fs-pre.target"]
        );
    }

    #[test]
    fn timestamps_are_read_and_a_bad_one_names_its_line() {
        let text = "Id=cron.service\nSubState=running\nResult=success\n\
InactiveExitTimestampMonotonic=1200\nActiveEnterTimestampMonotonic=3400\n\
ActiveExitTimestampMonotonic=0\nInactiveEnterTimestampMonotonic=0\n";
        let u = &parse(text).unwrap()[0];
        assert_eq!(
            (u.sub_state.as_str(), u.result.as_str()),
            ("running", "success")
        );
        assert_eq!((u.times.activating_us, u.times.active_us), (1200, 3400));
        assert_eq!(u.times.inactive_us, 0);
        let e = parse("Id=a.service\nActiveEnterTimestampMonotonic=soon\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.found.contains("expected microseconds"), "{e:?}");
    }

    #[test]
    fn a_line_without_equals_is_an_error_with_its_line() {
        let e = parse("Id=a.service\n\nnonsense here\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert_eq!(e.found, "nonsense here");
    }
}
