//! Figures from a boot's logs, read with the trace crate's event reader
//! (`trace::events::parse_lenient`): `events.log`, and `rc.log` and `late.log`, which have
//! its line format (`<ns> <kind> key=value ...`, values percent-encoded). The one way the
//! test bed's checks and benchmarks read them; a bad line is skipped, so a log cut short
//! still gives its figures.

use std::collections::BTreeMap;

use trace::Event;

use crate::bench::runner::Figures;
use crate::vm::qemu::round3;

fn events(text: &str) -> Vec<Event> {
    trace::events::parse_lenient(text).0
}

/// Whether `e` has the field `with` (`key=value`, as written in the log), if given.
fn has(e: &Event, with: Option<&str>) -> bool {
    match with.and_then(|w| w.split_once('=')) {
        Some((k, v)) => e.fields.iter().any(|(ek, ev)| ek == k && ev == v),
        None => with.is_none(),
    }
}

/// The time (s, to the millisecond) of the first event of `kind` (with the field `with`,
/// `key=value`, if given).
pub fn event_seconds(text: &str, kind: &str, with: Option<&str>) -> Option<f64> {
    events(text)
        .iter()
        .find(|e| e.kind == kind && has(e, with))
        .map(|e| round3(e.t_ns as f64 / 1e9))
}

/// The number in field `key` of the first event of `kind` that has it as a number.
pub fn event_field(text: &str, kind: &str, key: &str) -> Option<f64> {
    events(text)
        .iter()
        .filter(|e| e.kind == kind)
        .find_map(|e| e.get(key)?.parse().ok())
}

/// The fields of the first event of `kind`, decoded.
pub fn event_fields(text: &str, kind: &str) -> Option<Vec<(String, String)>> {
    events(text)
        .into_iter()
        .find(|e| e.kind == kind)
        .map(|e| e.fields)
}

/// The value of `key` among an event's fields ([`event_fields`]).
pub fn field(fields: &Option<Vec<(String, String)>>, key: &str) -> Option<String> {
    fields
        .as_ref()?
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// The numeric fields of the last `recorder_stats` event.
pub fn recorder_stats(text: &str) -> Option<BTreeMap<String, f64>> {
    let last = events(text)
        .into_iter()
        .rfind(|e| e.kind == "recorder_stats")?;
    Some(
        last.fields
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.parse::<f64>().ok()?)))
            .collect(),
    )
}

/// `text_login_s` and `boot_done_s` (guest seconds) from a trace's `events.log`, and
/// `graphical_login_s` when there is one.
pub fn milestone_figures(text: &str) -> Figures {
    let mut f = Figures::new();
    f.insert(
        "text_login_s".into(),
        event_seconds(text, "milestone", Some("name=text_login")),
    );
    f.insert("boot_done_s".into(), event_seconds(text, "boot_done", None));
    if let Some(s) = event_seconds(text, "milestone", Some("name=graphical_login")) {
        f.insert("graphical_login_s".into(), Some(s));
    }
    f
}
