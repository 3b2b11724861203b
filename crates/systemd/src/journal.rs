//! What systemd's journal says about a shutdown: each unit's stop job (the manager's
//! "Stopping X..." and "Stopped X." entries) and each unit that failed (a stop that ran out
//! its `TimeoutStopSec` fails with result `timeout`). Read by the boot after it, from the
//! persistent journal (`journalctl -b ID -o export`), and kept beside the shutdown's trace
//! as `systemd-stops.log` (docs/trace-format.md). systemd itself keeps no per-unit record of
//! a shutdown; this is the source its users script by hand (`JOB_TYPE=stop`).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// systemd's catalogue ids (systemd's sd-messages.h, `SD_MESSAGE_UNIT_STOPPING` ...): a unit
/// begins stopping, has stopped, failed.
pub const UNIT_STOPPING: &str = "de5b426a63be47a7b6ac3eaac82e2f6f";
/// `SD_MESSAGE_UNIT_STOPPED`.
pub const UNIT_STOPPED: &str = "9d1aaa27d60140bd96365438aad20286";
/// `SD_MESSAGE_UNIT_FAILURE_RESULT`: carries `UNIT_RESULT` (`timeout`, `signal`, ...).
pub const UNIT_FAILED: &str = "d9b373ed55a64feb8242e02dbe79a49c";

/// `SD_MESSAGE_SHUTDOWN`: logind carries out a shutdown ("System is rebooting."), with
/// `SHUTDOWN=reboot|power-off|halt|kexec`: the request, as the machine first acted on it.
pub const SHUTDOWN: &str = "98268866d1d54a499c4e98921d93bc40";

/// The trace file's first line.
pub const MAGIC: &str = "# bootprint events 1";
/// Its name in the shutdown's directory.
pub const FILE_NAME: &str = "systemd-stops.log";

/// One journal entry of the manager about a unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitEntry {
    /// CLOCK_MONOTONIC of that boot, µs.
    pub monotonic_us: u64,
    /// `stopping`, `stopped`, `failed`, or `requested` (logind's [`SHUTDOWN`]).
    pub what: &'static str,
    /// The unit (with `requested`: the `SHUTDOWN=` verb, `reboot`).
    pub unit: String,
    /// `JOB_RESULT` (stopped) or `UNIT_RESULT` (failed); empty if none.
    pub result: String,
}

/// One journal entry: its fields in the order `journalctl -o export` printed them.
pub type Fields = Vec<(String, String)>;

/// The value of field `name` of an entry (the first, if repeated).
pub fn field<'a>(entry: &'a Fields, name: &str) -> Option<&'a str> {
    entry
        .iter()
        .find(|(f, _)| f == name)
        .map(|(_, v)| v.as_str())
}

/// Parses `journalctl -o export` (journal-export-formats(7)) into its entries: entries
/// separated by an empty line, `FIELD=value` lines, binary fields as the name, a newline, a
/// 64-bit little-endian length, the data and a newline. A stream cut short ends with the
/// entry it was in.
pub fn export_entries(bytes: &[u8]) -> Vec<Fields> {
    let mut out = Vec::new();
    let mut fields: Fields = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let end = bytes[i..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| i + p);
        let line = &bytes[i..end];
        i = end + 1;
        if line.is_empty() {
            if !fields.is_empty() {
                out.push(std::mem::take(&mut fields));
            }
            continue;
        }
        match line.iter().position(|&b| b == b'=') {
            Some(eq) => fields.push((
                String::from_utf8_lossy(&line[..eq]).into_owned(),
                String::from_utf8_lossy(&line[eq + 1..]).into_owned(),
            )),
            None => {
                // A binary field: 8 bytes of length, the data, a newline.
                let Some(len) = bytes.get(i..i + 8) else {
                    break;
                };
                let n = u64::from_le_bytes(len.try_into().expect("8 bytes")) as usize;
                let data = bytes
                    .get(i + 8..(i + 8).saturating_add(n))
                    .unwrap_or_default();
                fields.push((
                    String::from_utf8_lossy(line).into_owned(),
                    String::from_utf8_lossy(data).into_owned(),
                ));
                i = (i + 8).saturating_add(n).saturating_add(1);
            }
        }
    }
    if !fields.is_empty() {
        out.push(fields);
    }
    out
}

/// The shutdown's entries of `journalctl -o export` output ([`export_entries`]): entries
/// other than the three kinds above, or without a unit or a time, are left out.
pub fn parse_export(bytes: &[u8]) -> Vec<UnitEntry> {
    let mut out = Vec::new();
    for entry in export_entries(bytes) {
        let get = |k: &str| field(&entry, k);
        let what = match get("MESSAGE_ID") {
            Some(UNIT_STOPPING) => "stopping",
            Some(UNIT_STOPPED) => "stopped",
            Some(UNIT_FAILED) => "failed",
            Some(SHUTDOWN) => "requested",
            _ => continue,
        };
        let t = get("__MONOTONIC_TIMESTAMP").and_then(|v| v.parse::<u64>().ok());
        let unit = match what {
            "requested" => get("SHUTDOWN").or(Some("shutdown")),
            _ => get("UNIT"),
        };
        if let (Some(t), Some(unit)) = (t, unit) {
            let result = get("JOB_RESULT").or(get("UNIT_RESULT")).unwrap_or_default();
            out.push(UnitEntry {
                monotonic_us: t,
                what,
                unit: unit.to_string(),
                result: result.to_string(),
            });
        }
    }
    out
}

/// The manager's unit entries of boot `boot_id` (with or without dashes) from `journalctl`,
/// at or after `since_monotonic_us`, within `limit`.
pub fn unit_entries(
    journalctl: &Path,
    boot_id: &str,
    since_monotonic_us: u64,
    limit: Duration,
) -> Result<Vec<UnitEntry>, String> {
    let id: String = boot_id.chars().filter(|c| *c != '-').collect();
    if id.len() != 32 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!("{boot_id:?} is not a boot id"));
    }
    let mut cmd = Command::new(journalctl);
    cmd.args(["-b", &id, "-o", "export", "--no-pager", "_PID=1"])
        .arg(format!("MESSAGE_ID={UNIT_STOPPING}"))
        .arg(format!("MESSAGE_ID={UNIT_STOPPED}"))
        .arg(format!("MESSAGE_ID={UNIT_FAILED}"))
        // Or (journalctl's `+`) logind's record of the request.
        .arg("+")
        .arg(format!("MESSAGE_ID={SHUTDOWN}"))
        .arg("--output-fields=MESSAGE_ID,UNIT,JOB_RESULT,UNIT_RESULT,SHUTDOWN");
    let out = crate::learn::output_bytes_within(&mut cmd, limit)?;
    let mut v = parse_export(&out);
    v.retain(|e| e.monotonic_us >= since_monotonic_us);
    Ok(v)
}

/// `entries` as the trace file: `MAGIC`, then one event per entry, `<ns> unit_<what>
/// unit=U [result=R]` (the request: `<ns> shutdown_requested verb=V`), its time moved to
/// CLOCK_BOOTTIME by `boottime_minus_monotonic_ns`.
pub fn to_trace(entries: &[UnitEntry], boottime_minus_monotonic_ns: u64) -> String {
    let mut s = format!("{MAGIC}\n");
    for e in entries {
        let t = e.monotonic_us * 1000 + boottime_minus_monotonic_ns;
        if e.what == "requested" {
            s.push_str(&format!(
                "{t} shutdown_requested verb={}\n",
                encode(&e.unit)
            ));
            continue;
        }
        s.push_str(&format!("{t} unit_{} unit={}", e.what, encode(&e.unit)));
        if !e.result.is_empty() {
            s.push_str(&format!(" result={}", encode(&e.result)));
        }
        s.push('\n');
    }
    s
}

/// Unit names and results hold no space or newline, but a journal can say anything:
/// percent-encode as `events.log` does.
fn encode(v: &str) -> String {
    let mut s = String::new();
    for b in v.bytes() {
        if b <= 0x20 || b == b'%' || b == b'=' || b >= 0x7f {
            s.push_str(&format!("%{b:02X}"));
        } else {
            s.push(b as char);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_entries_with_a_binary_field_between() {
        let mut b = Vec::new();
        b.extend_from_slice(
            format!(
                "__CURSOR=s=1\n__MONOTONIC_TIMESTAMP=5000000\nMESSAGE_ID={UNIT_STOPPING}\nUNIT=bp-slowstop.service\n\n"
            )
            .as_bytes(),
        );
        b.extend_from_slice(b"MESSAGE\n");
        b.extend_from_slice(&3u64.to_le_bytes());
        b.extend_from_slice(b"a\nb\n");
        b.extend_from_slice(
            format!(
                "__MONOTONIC_TIMESTAMP=9000000\nMESSAGE_ID={UNIT_STOPPED}\nUNIT=bp-slowstop.service\nJOB_RESULT=done\n\n\
                 __MONOTONIC_TIMESTAMP=9100000\nMESSAGE_ID={UNIT_FAILED}\nUNIT=x y.service\nUNIT_RESULT=timeout\n\n\
                 __MONOTONIC_TIMESTAMP=4000000\nMESSAGE_ID={SHUTDOWN}\nSHUTDOWN=reboot\n\n\
                 __MONOTONIC_TIMESTAMP=1\nMESSAGE_ID=other\nUNIT=z.service\n"
            )
            .as_bytes(),
        );
        let v = parse_export(&b);
        assert_eq!(v.len(), 4, "{v:?}");
        assert_eq!((v[3].what, v[3].unit.as_str()), ("requested", "reboot"));
        assert_eq!(v[0].what, "stopping");
        assert_eq!(v[1].result, "done");
        assert_eq!(v[1].monotonic_us, 9_000_000);
        assert_eq!(v[2].result, "timeout");
        let t = to_trace(&v, 7);
        assert!(t.starts_with(MAGIC));
        assert!(
            t.contains("\n5000000007 unit_stopping unit=bp-slowstop.service\n"),
            "{t}"
        );
        assert!(
            t.contains("unit_failed unit=x%20y.service result=timeout"),
            "{t}"
        );
    }

    #[test]
    fn only_a_boot_id_is_asked_for() {
        let e = unit_entries(Path::new("journalctl"), "-1", 0, Duration::from_secs(1));
        assert!(e.unwrap_err().contains("not a boot id"));
    }
}
