//! `bench fleet-view`: `bootprint fleet` over 10,000 boots (1,000 machines of 10 boots, as
//! records files in one directory a machine), on the host, no VM: its wall time (median of
//! `--runs`) and peak RSS (GNU time's `%M`), against the goal of 10 s (docs/fleet.md,
//! "Scale"); and that exactly the planted machines are flagged. Prints the figures; writes no
//! results file.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::json;

use crate::bench::registry::Request;
use crate::vm::util::{fresh_dir, io_err, median, run_logged, Error, Paths, Result};

/// Machines generated.
pub const MACHINES: usize = 1000;
/// Boots each.
pub const BOOTS: usize = 10;
/// Every this many machines, one has its newest boot 1.5 times slower (and a service that
/// grew by 3 s).
pub const PLANT_EVERY: usize = 97;
/// The goal: the whole view in under this many seconds.
pub const GOAL_S: f64 = 10.0;

const SERVICES: [&str; 10] = [
    "networking",
    "ssh",
    "cron",
    "rsyslog",
    "udev",
    "dbus",
    "systemd-logind",
    "getty@tty1",
    "apparmor",
    "keyboard-setup",
];

/// A planted machine (its name is `m` and four digits).
pub fn planted(m: usize) -> bool {
    m % PLANT_EVERY == PLANT_EVERY / 2
}

/// A small fixed jitter in [-0.05, 0.05): the same tree every run, never a 1.2 ratio.
fn jitter(m: usize, b: usize) -> f64 {
    let x = (m * 7919 + b * 104_729) % 1000;
    (x as f64 / 1000.0 - 0.5) / 10.0
}

/// Machine `m`'s records file: boots 0..4 on one kernel release, 5..9 on the next; five
/// models; the planted machines' newest boot slow.
fn records(m: usize) -> String {
    let mut out = String::new();
    for b in 0..BOOTS {
        let slow = planted(m) && b == BOOTS - 1;
        let base = 10.0 + (m % 5) as f64;
        let login = base * (1.0 + jitter(m, b)) * if slow { 1.5 } else { 1.0 };
        let services: serde_json::Map<String, serde_json::Value> = SERVICES
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut t = (0.2 + i as f64 * 0.1) * (1.0 + jitter(m, b + i));
                if slow && *s == "networking" {
                    t += 3.0;
                }
                (format!("{s}.service"), json!((t * 1000.0).round() / 1000.0))
            })
            .collect();
        let line = json!({
            "boot_id": format!("{m:04}-{b:02}-0000-4000-8000-000000000000"),
            "seq": b + 1,
            "kernel_release": if b < 5 { "6.1.0-9-amd64" } else { "6.1.0-10-amd64" },
            "vendor": "QEMU",
            "product": format!("Standard PC {}", m % 5),
            "text_login_s": (login * 1000.0).round() / 1000.0,
            "boot_done_s": ((login + 2.0) * 1000.0).round() / 1000.0,
            "services": services,
        });
        let _ = writeln!(out, "{line}");
    }
    out
}

/// Writes the gathered tree: DIR/m0000/boots.jsonl ...
fn generate(dir: &Path) -> Result<()> {
    for m in 0..MACHINES {
        let d = dir.join(format!("m{m:04}"));
        fs::create_dir_all(&d).map_err(|e| io_err("cannot create", &d, e))?;
        let f = d.join("boots.jsonl");
        fs::write(&f, records(m)).map_err(|e| io_err("cannot write", &f, e))?;
    }
    Ok(())
}

/// One run: wall seconds, peak RSS KiB, the machines flagged.
fn once(bootprint: &Path, dir: &Path, rss_file: &Path) -> Result<(f64, u64, Vec<String>)> {
    let start = Instant::now();
    let o = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(rss_file)
        .arg(bootprint)
        .args(["fleet", "--json"])
        .arg(dir)
        .output()
        .map_err(|e| io_err("cannot run", Path::new("/usr/bin/time"), e))?;
    let wall = start.elapsed().as_secs_f64();
    if !o.status.success() {
        return Err(Error::fail(format!(
            "bootprint fleet: {}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        )));
    }
    let rss = fs::read_to_string(rss_file)
        .map_err(|e| io_err("cannot read", rss_file, e))?
        .trim()
        .parse()
        .map_err(|_| Error::fail("GNU time's %M is not a number"))?;
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .map_err(|e| Error::fail(format!("bootprint fleet --json: {e}")))?;
    let flagged = v["machines"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["regressed"] == true)
        .filter_map(|m| m["machine"].as_str().map(String::from))
        .collect();
    Ok((wall, rss, flagged))
}

/// `bench fleet-view` as the command line asks it.
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    if !Path::new("/usr/bin/time").exists() {
        return Err(Error::fail(
            "/usr/bin/time (GNU time, Debian's package time) is needed for the peak RSS",
        ));
    }
    if req.cargo {
        run_logged(
            Command::new("cargo").current_dir(&paths.repo).args([
                "build",
                "--release",
                "-p",
                "bootprint",
            ]),
            &paths.logs().join("cargo.log"),
        )?;
    }
    let bootprint = paths.repo.join("target/release/bootprint");
    let work = fresh_dir(&paths.cache.join("fleet-view"))?;
    let tree = work.join("gathered");
    let result = generate(&tree).and_then(|()| {
        let mut runs = Vec::new();
        for _ in 0..req.runs {
            runs.push(once(&bootprint, &tree, &work.join("rss"))?);
        }
        Ok(runs)
    });
    // 10,000 records are a few MB: never leave them behind.
    let _ = fs::remove_dir_all(&work);
    let runs = result?;
    let want: Vec<String> = (0..MACHINES)
        .filter(|m| planted(*m))
        .map(|m| format!("m{m:04}"))
        .collect();
    let walls: Vec<f64> = runs.iter().map(|r| r.0).collect();
    let wall = median(&walls).unwrap_or(f64::NAN);
    let rss = runs.iter().map(|r| r.1).max().unwrap_or(0);
    let right = runs.iter().all(|r| r.2 == want);
    let doc = json!({
        "bench": "fleet-view",
        "machines": MACHINES,
        "boots": MACHINES * BOOTS,
        "runs": walls.len(),
        "wall_s": walls,
        "median_wall_s": wall,
        "peak_rss_kib": rss,
        "planted": want,
        "flagged_right": right,
        "goal_s": GOAL_S,
        "goal_met": wall < GOAL_S,
    });
    if req.json {
        println!("{doc:#}");
    } else {
        println!(
            "fleet-view: {} machines, {} boots, {} runs: median wall {wall:.3} s (runs {}), \
             peak RSS {rss} KiB; goal < {GOAL_S} s: {}; planted {} machines, flagged {}",
            MACHINES,
            MACHINES * BOOTS,
            walls.len(),
            walls
                .iter()
                .map(|w| format!("{w:.3}"))
                .collect::<Vec<_>>()
                .join(" "),
            if wall < GOAL_S { "met" } else { "MISSED" },
            want.len(),
            if right {
                "exactly those"
            } else {
                "OTHERS (wrong)"
            }
        );
    }
    if !right {
        return Err(Error::fail(
            "bootprint fleet flagged other machines than the planted ones",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_plants_about_ten_machines_and_jitter_stays_small() {
        let planted: Vec<usize> = (0..MACHINES).filter(|m| planted(*m)).collect();
        assert_eq!(planted.len(), 10);
        for m in 0..50 {
            for b in 0..BOOTS {
                assert!(jitter(m, b).abs() <= 0.05);
            }
        }
        let lines = records(planted[0]);
        assert_eq!(lines.lines().count(), BOOTS);
        let last: serde_json::Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
        assert_eq!(last["seq"], 10);
        assert_eq!(last["services"].as_object().unwrap().len(), 10);
    }
}
