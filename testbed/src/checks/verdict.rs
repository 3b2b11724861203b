//! `verdict`: a lever judging itself on this machine (issue 15, part 5). Boots the text
//! image again and again from the disk the last boot left, every sysvinit lever on
//! (bootprint's initramfs, `bootprint.rc=1 bootprint.modules=1 bootprint.readahead=1`), as
//! a user's machine boots day after day, and reads what the module loader, readahead and the
//! runner did on each boot and what they concluded (`modules_history`, `modules_off`,
//! `readahead_history`, `readahead_off`, `rc_history`, `rc_off` in the trace; the runner
//! judges itself here too: [`JUDGE_RC`]). No verdict is asserted: it is this machine's to
//! give. Results in `testbed/results/DATE-verdict.json`.

use serde_json::{json, Value};

use crate::bench::figures::{event_fields, event_seconds, field};
use crate::bench::runner::{trace_file, write_result};
use crate::checks::parity::SYSV_LEVERS;
use crate::vm::image;
use crate::vm::qemu::{self, BootOpts, Profile};
use crate::vm::util::{Paths, Result};

/// The test bed keeps the runner from comparing (`qemu::NO_JUDGING`); here it judges itself
/// as on a user's machine.
const JUDGE_RC: &str = "bootprint.rc_compare_every=5";

pub fn run(paths: &Paths, boots: usize, cargo: bool) -> Result<()> {
    let img = image::ensure(paths, cargo)?;
    let ours = crate::vm::initramfs::ensure_ours(paths, &img)?;
    let mut disk = None;
    let mut rows: Vec<Value> = Vec::new();
    println!("verdict: {boots} boots, each from the disk the last one left: {SYSV_LEVERS} {JUDGE_RC} (bootprint's initramfs)");
    println!("  boot  modules   readahead  rc        text_login_s  verdicts");
    for i in 1..=boots {
        let mut o = BootOpts::new(Profile::Fast);
        o.record = true;
        o.append = format!("{SYSV_LEVERS} {JUDGE_RC}");
        o.initrd = Some(ours.clone());
        o.keep_disk = true;
        o.sync_disk = true;
        o.disk_from = disk.take();
        let r = qemu::boot(paths, &img, &o)?;
        let events = trace_file(&r, "events.log").unwrap_or_default();
        let modules = event_fields(&events, "modules_history");
        let readahead = event_fields(&events, "readahead_history");
        let modules_off = event_fields(&events, "modules_off");
        let readahead_off = event_fields(&events, "readahead_off");
        let rc = event_fields(&events, "rc_history");
        let rc_off = event_fields(&events, "rc_off");
        let login = event_seconds(&events, "milestone", Some("name=text_login"));
        let kind = |f: &Option<Vec<(String, String)>>, off: &Option<Vec<(String, String)>>| {
            field(f, "kind").unwrap_or_else(|| {
                if off.is_some() {
                    "off".into()
                } else {
                    "-".into()
                }
            })
        };
        let (mk, rk, ck) = (
            kind(&modules, &modules_off),
            kind(&readahead, &readahead_off),
            kind(&rc, &rc_off),
        );
        let verdicts: Vec<String> = [
            ("modules", &modules_off),
            ("readahead", &readahead_off),
            ("rc", &rc_off),
        ]
        .iter()
        .filter_map(|(n, off)| {
            Some(format!(
                "{n} off ({}): {}",
                field(off, "by")?,
                field(off, "reason")?
            ))
        })
        .collect();
        println!(
            "  {i:>4}  {mk:<8}  {rk:<9}  {ck:<8}  {:>12}  {}",
            login.map_or("-".into(), |s| format!("{s:.2}")),
            verdicts.join("; ")
        );
        rows.push(json!({
            "boot": i,
            "modules": mk,
            "readahead": rk,
            "rc": ck,
            "text_login_s": login,
            "modules_judged": field(&modules, "judged"),
            "readahead_judged": field(&readahead, "judged"),
            "rc_judged": field(&rc, "judged"),
            "modules_off": field(&modules_off, "reason"),
            "readahead_off": field(&readahead_off, "reason"),
            "rc_off": field(&rc_off, "reason"),
            "trace": r.trace_dir.as_ref().map(|d| d.strip_prefix(&paths.repo).unwrap_or(d).display().to_string()),
        }));
        disk = r.kept_disk();
    }
    let doc = json!({
        "benchmark": "verdict",
        "about": "the text image booted again and again from the disk the last boot left, every sysvinit lever on: what the module loader, readahead and the runner did on each boot and what they concluded about themselves",
        "release": paths.release.number(),
        "firmware": paths.firmware.name(),
        "append": format!("{SYSV_LEVERS} {JUDGE_RC}"),
        "boots": rows,
    });
    let file = write_result(paths, "verdict", None, &doc)?;
    println!(
        "verdict: results in {}",
        file.strip_prefix(&paths.repo).unwrap_or(&file).display()
    );
    Ok(())
}
