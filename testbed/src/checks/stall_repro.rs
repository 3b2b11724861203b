//! `stall-repro`: the guest-kernel stall behind issue 14's boot hangs, reproduced on demand.
//!
//! Two processes take copy-on-write faults without pause (`wp_page_copy`, which holds sites
//! of the delay-accounting static key) while a shell flips `kernel.task_delayacct` on and
//! off. Each flip makes the kernel patch those sites while they run (`text_poke_bp`: an
//! int3 over the first byte, the new bytes, then the new first byte, each step followed by
//! a sync of every CPU). In the hang, a vCPU traps on an int3 at such a site that is no
//! longer in memory (the guest's own `Code:` dump shows the new jump there); the kernel's
//! handler for a vanished breakpoint backs the instruction pointer up to re-run what is in
//! memory, and the vCPU traps on the same int3 again, for ever: it is executing a stale
//! translation of that code (QEMU's TCG), not what memory holds. The loop ends only when
//! something writes that code again (the next flip). With `--no-flip` the same load reads
//! the switch instead of writing it: the control. See docs/testbed.md "Kernel stalls".

use std::fs;

use serde_json::json;

use crate::vm::image;
use crate::vm::qemu::{self, BootOpts, Profile};
use crate::vm::util::{Error, Paths, Result};

/// What `stall-repro` options say.
#[derive(Debug, Clone)]
pub struct ReproOpts {
    /// Write the switch (the experiment) or only read it (the control).
    pub flip: bool,
    /// Seconds of load (guest uptime) the loop runs for, unless the guest stalls first.
    pub seconds: u64,
}

/// The guest script: the copy-on-write load, rounds of flips (or reads) for `seconds` of
/// guest uptime, progress every 100 rounds as `round N at UPTIME`, then `rounds N done` and
/// any stall the guest kernel logged. The loop uses shell builtins only (no fork of its
/// own), so flipping and reading rounds cost about the same.
pub fn script(o: &ReproOpts) -> String {
    let step = if o.flip {
        "echo 1 > $knob; echo 0 > $knob"
    } else {
        "read v < $knob; read v < $knob"
    };
    format!(
        r#"#!/bin/sh
knob=/proc/sys/kernel/task_delayacct
cow='my $x = "a" x (32<<20); while (1) {{ my $p = fork(); if (!$p) {{ for (my $i = 0; $i < length($x); $i += 4096) {{ substr($x, $i, 1, "b") }} exit 0 }} waitpid($p, 0) }}'
perl -e "$cow" & a=$!
perl -e "$cow" & b=$!
sleep 2
read up rest < /proc/uptime
echo "load started at $up"
end=$(( ${{up%.*}} + {seconds} ))
i=0
while [ ${{up%.*}} -lt $end ]; do
  {step}
  i=$((i+1))
  read up rest < /proc/uptime
  case $i in *00) echo "round $i at $up";; esac
done
kill $a $b
echo "rounds $i done at $(cut -d' ' -f1 /proc/uptime)"
dmesg | grep -E 'soft lockup|stalls on CPUs|blocked for more' || echo "no stall reports"
"#,
        seconds = o.seconds
    )
}

/// What the guest script printed: the load's start, the last round reported and when
/// (guest uptime, seconds), and whether every round was done.
#[derive(Debug, Default, PartialEq)]
pub struct Progress {
    pub load_start: Option<f64>,
    pub last_round: Option<(usize, f64)>,
    pub done: bool,
}

pub fn progress(out: &str) -> Progress {
    let mut p = Progress::default();
    for l in out.lines().map(str::trim) {
        let words: Vec<&str> = l.split_whitespace().collect();
        match words.as_slice() {
            ["load", "started", "at", t] => p.load_start = t.parse().ok(),
            ["round", n, "at", t] => {
                if let (Ok(n), Ok(t)) = (n.parse(), t.parse()) {
                    p.last_round = Some((n, t));
                }
            }
            ["rounds", _, "done", "at", _] => p.done = true,
            _ => {}
        }
    }
    p
}

/// `bootprint-testbed stall-repro [--no-flip] [--seconds N]`: one boot of the text image,
/// the script, a summary and `testbed/results/DATE-stall-repro[-no-flip].json`. The
/// outcome is a finding either way, not a pass or fail.
pub fn run(paths: &Paths, o: &ReproOpts, cargo: bool) -> Result<()> {
    let img = image::ensure(paths, cargo)?;
    let mut b = BootOpts::new(Profile::Fast);
    b.guest_script = Some(script(o));
    b.stop_on_stall = true;
    eprintln!(
        "stall-repro: {} kernel.task_delayacct for {} s under a copy-on-write load",
        if o.flip {
            "flipping"
        } else {
            "reading (control)"
        },
        o.seconds
    );
    let r = qemu::boot(paths, &img, &b)?;
    let out = r.guest_output.clone().unwrap_or_default();
    let p = progress(&out);
    let Some(load_start) = p.load_start else {
        return Err(Error::fail(format!(
            "the guest script did not start its load; its output:\n{out}"
        )));
    };
    let (rounds_seen, at) = p.last_round.unwrap_or((0, load_start));
    // The watchdogs report a while after the CPU stopped (RCU: 21 s, soft lockup: 20-44 s).
    let reported_after = r
        .kernel_stall
        .as_deref()
        .and_then(crate::vm::serial::kernel_timestamp)
        .map(|t| t - load_start);
    let summary = match &r.kernel_stall {
        Some(line) => format!(
            "STALLED: reported {} s after the load started, at least {rounds_seen} rounds \
             done: {line}",
            reported_after.map_or("?".to_string(), |s| format!("{s:.1}"))
        ),
        None if p.done => format!(
            "no stall: {rounds_seen}+ rounds in {:.1} s of load",
            at - load_start
        ),
        None => format!("the script ended early after {rounds_seen} rounds:\n{out}"),
    };
    println!(
        "stall-repro ({}): {summary}",
        if o.flip { "flip" } else { "no flip" }
    );
    let qemu_version = std::process::Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string));
    let mut result = json!({
        "what": if o.flip {
            "kernel.task_delayacct written 1 then 0 each round while two processes take copy-on-write faults"
        } else {
            "control: kernel.task_delayacct read twice each round under the same load"
        },
        "flip": o.flip,
        "seconds": o.seconds,
        "rounds_reported": rounds_seen,
        "load_seconds": qemu::round3(at - load_start),
        "done": p.done,
        "kernel_stall": r.kernel_stall,
        "stall_reported_after_s": reported_after.map(qemu::round3),
        "qemu": qemu_version,
        "commit": crate::vm::util::git_commit(&paths.repo),
        "date": crate::vm::util::today(),
    });
    let results = paths.repo.join("testbed/results");
    let _ = fs::create_dir_all(&results);
    let stem = format!(
        "{}-stall-repro{}",
        crate::vm::util::today(),
        if o.flip { "" } else { "-no-flip" }
    );
    let file = crate::vm::util::unused_results_path(&results, &stem);
    // The serial log is the evidence (the stall's backtraces): kept beside the result.
    let log = file.with_extension("serial.log");
    if fs::copy(&r.serial_log, &log).is_ok() {
        result["serial_log"] = json!(crate::vm::util::shown_path(&log));
    }
    let _ = fs::write(&file, format!("{result:#}\n"));
    eprintln!(
        "stall-repro: result in {}",
        crate::vm::util::shown_path(&file)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_flips_only_when_asked() {
        let flip = script(&ReproOpts {
            flip: true,
            seconds: 5,
        });
        assert!(flip.contains("echo 1 > $knob; echo 0 > $knob"));
        assert!(flip.contains("end=$(( ${up%.*} + 5 ))"));
        let control = script(&ReproOpts {
            flip: false,
            seconds: 5,
        });
        assert!(!control.contains("echo 1 > $knob"));
        assert!(control.contains("read v < $knob"));
    }

    #[test]
    fn progress_is_read_from_the_output() {
        let out = "load started at 66.50\nround 100 at 67.10\nround 200 at 68.00\n";
        assert_eq!(
            progress(out),
            Progress {
                load_start: Some(66.5),
                last_round: Some((200, 68.0)),
                done: false
            }
        );
        let done = format!("{out}rounds 200 done at 68.01\nno stall reports\n");
        assert!(progress(&done).done);
        assert_eq!(progress("garbage\nround x at y\n"), Progress::default());
    }
}
