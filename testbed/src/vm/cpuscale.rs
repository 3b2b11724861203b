//! `bootprint-testbed cpuscale`: how many times slower the guest's CPU is under emulation
//! (TCG) than the host's, the figure the time-scaled drive profiles (`hdd-scaled`,
//! `sd-scaled`) slow their drive by ([`crate::vm::hostload::tcg_slowdown`]), kept per host
//! in the cache.
//!
//! The same single-threaded work runs on the host and then in a booted guest (the text
//! image): compressing, sorting and hashing a 10 MB file of numbers, a shell loop, starting
//! 300 processes (fork, exec, the dynamic linker: what a boot does most) and listing 3,000
//! files with their metadata (system calls). Each
//! step runs three times and the fastest counts (the least disturbed); the slowdown is the
//! median of the steps' guest/host ratios. Both sides run Debian 12's own gzip, sort,
//! sha256sum and dash, so the programs are the same; only the CPU differs.

use std::process::Command;

use serde_json::json;

use crate::vm::hostload;
use crate::vm::image;
use crate::vm::qemu::{self, BootOpts, Profile};
use crate::vm::util::{io_err, today, Error, Paths, Result};

/// The work, as a POSIX shell script: each run of a step prints
/// `cpuscale STEP START END` (seconds since the epoch, with nanoseconds).
pub const WORKLOAD: &str = r#"set -e
d=$(mktemp -d)
seq 1 1500000 > "$d/w"
step() {
  name=$1; shift
  for i in 1 2 3; do
    s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N)
    echo "cpuscale $name $s $e"
  done
}
step gzip gzip -6 -c "$d/w"
step sort sort --parallel=1 -r "$d/w"
step sha256 sha256sum "$d/w"
step shell sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'
step exec sh -c 'i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i+1)); done'
mkdir "$d/t"
(cd "$d/t" && seq 1 3000 | xargs touch)
step stat ls -l "$d/t"
rm -rf "$d"
"#;

/// The fastest run of each step, in seconds, in the order first seen.
pub fn parse(out: &str) -> Vec<(String, f64)> {
    let mut best: Vec<(String, f64)> = Vec::new();
    for l in out.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        let [tag, name, s, e] = w[..] else { continue };
        let (Ok(s), Ok(e)) = (s.parse::<f64>(), e.parse::<f64>()) else {
            continue;
        };
        if tag != "cpuscale" || e < s {
            continue;
        }
        match best.iter_mut().find(|(n, _)| n == name) {
            Some((_, t)) => *t = t.min(e - s),
            None => best.push((name.to_string(), e - s)),
        }
    }
    best
}

/// One step measured on both sides: name, host s, guest s, guest / host.
pub type Row = (String, f64, f64, f64);

/// Per step (host s, guest s, ratio), and the median ratio; steps missing on either side are
/// left out. `None` when no step was measured on both.
pub fn ratios(host: &[(String, f64)], guest: &[(String, f64)]) -> Option<(Vec<Row>, f64)> {
    let rows: Vec<Row> = host
        .iter()
        .filter_map(|(n, h)| {
            let g = guest.iter().find(|(m, _)| m == n)?.1;
            (*h > 0.0).then(|| (n.clone(), *h, g, g / h))
        })
        .collect();
    let median = crate::vm::util::median(&rows.iter().map(|x| x.3).collect::<Vec<_>>())?;
    Some((rows, median))
}

/// Runs the work on the host and in a guest of `img`; keeps the slowdown as this host's
/// (`hostload::record_slowdown`: the scaled profiles of later runs use it).
pub fn measure(paths: &Paths, img: &image::Image) -> Result<(Vec<Row>, f64)> {
    eprintln!("cpuscale: the work on the host");
    let out = Command::new("sh")
        .arg("-c")
        .arg(WORKLOAD)
        .output()
        .map_err(|e| Error::fail(format!("cpuscale: cannot run sh on the host: {e}")))?;
    let host = parse(&String::from_utf8_lossy(&out.stdout));
    eprintln!("cpuscale: the work in a guest (text image, fast profile)");
    let mut o = BootOpts::new(Profile::Fast);
    o.guest_script = Some(WORKLOAD.to_string());
    let res = qemu::boot(paths, img, &o)?;
    let guest = parse(res.guest_output.as_deref().unwrap_or(""));
    let Some((rows, median)) = ratios(&host, &guest) else {
        return Err(Error::fail(format!(
            "cpuscale: no step measured on both sides (host {host:?}, guest {guest:?}); serial log {}",
            res.serial_log.display()
        )));
    };
    hostload::record_slowdown(&paths.cache, median, &today()).map_err(|e| {
        io_err(
            "cpuscale: cannot keep",
            &hostload::slowdown_file(&paths.cache),
            e,
        )
    })?;
    Ok((rows, median))
}

/// This host's slowdown and the date it was measured: the kept one, else measured now (one
/// boot). For a benchmark on a time-scaled profile, before its first boot.
pub fn ensure(paths: &Paths, cargo: bool) -> Result<(f64, String)> {
    if let Some(m) = hostload::measured_slowdown(&paths.cache) {
        return Ok(m);
    }
    eprintln!(
        "cpuscale: this host's CPU slowdown is not measured yet; the scaled profiles follow it"
    );
    let img = image::ensure(paths, cargo)?;
    let (_, median) = measure(paths, &img)?;
    Ok((median, today()))
}

pub fn run(paths: &Paths, cargo: bool, as_json: bool) -> Result<()> {
    let img = image::ensure(paths, cargo)?;
    let (rows, median) = measure(paths, &img)?;
    if as_json {
        let steps: Vec<_> = rows
            .iter()
            .map(|(n, h, g, r)| json!({"step": n, "host_s": h, "guest_s": g, "ratio": r}))
            .collect();
        println!("{}", json!({"steps": steps, "slowdown": median}));
    } else {
        println!(
            "{:<8} {:>9} {:>9} {:>7}",
            "step", "host s", "guest s", "ratio"
        );
        for (n, h, g, r) in &rows {
            println!("{n:<8} {h:>9.3} {g:>9.3} {r:>7.2}");
        }
        println!(
            "slowdown (median ratio): {median:.1}; kept in {}: the scaled profiles use it on this host",
            crate::vm::util::shown_path(&hostload::slowdown_file(&paths.cache))
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fastest_run_per_step_and_the_median_ratio() {
        let host = parse(
            "cpuscale gzip 10.0 10.5\ncpuscale gzip 20.0 20.4\nnoise\ncpuscale sort 1 2\ncpuscale shell 5 4\n",
        );
        assert_eq!(host.len(), 2, "{host:?}");
        assert!((host[0].1 - 0.4).abs() < 1e-9);
        let guest = parse("cpuscale gzip 0 4\ncpuscale sort 0 30\ncpuscale sha256 0 1\n");
        let (rows, median) = ratios(&host, &guest).unwrap();
        assert_eq!(rows.len(), 2);
        // gzip 4 / 0.4 = 10, sort 30 / 1 = 30: the median of two is their mean.
        assert!((median - 20.0).abs() < 1e-9, "{median}");
        assert!(ratios(&host, &[]).is_none());
    }

    /// The script itself, for real, on this host: every step measured.
    #[test]
    fn the_workload_runs_here() {
        let out = Command::new("sh").arg("-c").arg(WORKLOAD).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let steps = parse(&String::from_utf8_lossy(&out.stdout));
        let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["gzip", "sort", "sha256", "shell", "exec", "stat"]);
        assert!(steps.iter().all(|(_, t)| *t > 0.0));
    }
}
