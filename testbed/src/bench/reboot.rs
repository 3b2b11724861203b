//! `bench reboot`: the whole reboot cycle, timed by the host's serial clock (`vm::cycle`),
//! under Debian's default (sysvinit, startpar), systemd and sysvinit with bootprint's runner,
//! each by a plain `reboot`, and the fast path (`bootprint reboot --kexec`) under the runner
//! and under systemd. Every variant is recorded (bootprint-boot as init), so they differ only
//! in what runs the shutdown and how the machine comes back. Each run writes 1 MiB without a
//! sync just before the request and checks it after: nothing may be lost on any path.

use serde_json::json;

use crate::bench::registry::Request;
use crate::bench::runner::{self, recorded, Benchmark, Figures};
use crate::vm::cycle::{GRUB_CFG, KEXEC_COMMAND};
use crate::vm::image;
use crate::vm::qemu::{BootResult, Profile, RebootOpts};
use crate::vm::util::{section, Error, Paths, Result};

/// Before the request: the file the shutdown must write back, and its hash.
const BEFORE: &str = "#!/bin/sh
yes bootprint-reboot-bench | head -c 1048576 > /root/bp-bench.dat
echo '== written'
sha256sum /root/bp-bench.dat | cut -d' ' -f1
";
/// After the next login: the file's hash.
const AFTER: &str = "#!/bin/sh
echo '== kept'
sha256sum /root/bp-bench.dat | cut -d' ' -f1
";

/// The shutdown goal: sysvinit + bootprint's against Debian default's (issue 43).
const SHUTDOWN_GOAL: f64 = 0.5;
/// The fast path's goal: its whole cycle against the plain reboot's (issue 43, on OVMF).
const FAST_PATH_GOAL: f64 = 0.5;

/// The variants: Debian's default first (the baseline), then systemd, the runner, and the
/// fast path under each init that takes it: asked for (`bootprint reboot --kexec`), and by
/// a plain `reboot` with the `kexec` lever on (its entry from a grub.cfg written first,
/// `vm::cycle::GRUB_CFG`: the image boots with `-kernel`).
pub fn benchmark(profile: Profile) -> Benchmark {
    let sd = "bootprint.init=/lib/systemd/systemd";
    let sd_lever = "bootprint.init=/lib/systemd/systemd bootprint.kexec=1";
    let variants = [
        ("debian", "", "reboot"),
        ("systemd", sd, "reboot"),
        ("sysv+bp", "bootprint.rc=1", "reboot"),
        ("sysv+bp kexec", "bootprint.rc=1", KEXEC_COMMAND),
        ("systemd kexec", sd, KEXEC_COMMAND),
        (
            "sysv+bp lever",
            "bootprint.rc=1 bootprint.kexec=1",
            "reboot",
        ),
        ("systemd lever", sd_lever, "reboot"),
    ];
    Benchmark {
        name: "reboot",
        about: "the reboot cycle on the host's clock (request, shutdown, reset or kexec, kernel, \
                login): Debian's default, systemd, sysvinit + bootprint's runner, and the \
                fast path (bootprint reboot --kexec) under the runner and under systemd",
        seasoned_by: None,
        season_each: false,
        variants: variants
            .into_iter()
            .map(|(name, append, command)| {
                let mut v = recorded(name, profile, append.to_string(), cycle_figures);
                let before = match lever(name) {
                    true => BEFORE.replacen("#!/bin/sh\n", &format!("#!/bin/sh\n{GRUB_CFG}"), 1),
                    false => BEFORE.to_string(),
                };
                v.opts.reboot = Some(RebootOpts {
                    command: command.to_string(),
                    before: Some(before),
                    after: Some(AFTER.into()),
                    copy_log_dir: false,
                });
                v
            })
            .collect(),
    }
}

/// Whether the variant reboots by a plain `reboot` with the `kexec` lever on.
fn lever(name: &str) -> bool {
    name.ends_with(" lever")
}

/// Whether the variant's reboot must go by kexec.
fn by_kexec(name: &str) -> bool {
    name.ends_with(" kexec") || lever(name)
}

/// A run's cycle on the host's clock, whether it went by kexec, and whether the file
/// survived (1) or not (0).
fn cycle_figures(r: &BootResult) -> Figures {
    let mut f = Figures::new();
    let Some(c) = &r.cycle else {
        return f;
    };
    for (k, v) in [
        ("shutdown_s", c.shutdown_s()),
        ("reset_to_kernel_s", c.reset_to_kernel_s()),
        ("kernel_to_login_s", c.kernel_to_login_s()),
        ("whole_s", c.whole_s()),
        ("by_kexec", if c.by_kexec { 1.0 } else { 0.0 }),
    ] {
        f.insert(k.into(), Some(v));
    }
    let hash = |out: &Option<String>, name: &str| {
        let first = section(out.as_deref().unwrap_or_default(), name)
            .first()
            .copied();
        first.filter(|h| h.len() == 64).map(str::to_string)
    };
    let written = hash(&r.before_reboot_output, "written");
    let kept = hash(&r.after_reboot_output, "kept");
    f.insert(
        "file_intact".into(),
        Some(if written.is_some() && written == kept {
            1.0
        } else {
            0.0
        }),
    );
    f
}

/// The median of `figure` of variant `name` in the result document.
fn median_of(doc: &serde_json::Value, name: &str, figure: &str) -> Option<f64> {
    doc["variants"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == name)?["median"][figure]
        .as_f64()
}

/// `bench reboot` as the command line asks it: the runs, then the goals as notes and in
/// the document (`goals`); fails when a run lost the file or took the wrong path.
pub fn bench(paths: &Paths, req: &Request) -> Result<()> {
    let img = image::ensure(paths, req.cargo)?;
    let mut bench = benchmark(req.profile());
    req.select(&mut bench)?;
    let mut m = runner::measure(paths, &img, &bench, req.runs, req.profile())?;
    let ratio = |a: &str, b: &str, figure: &str| {
        Some(median_of(&m.doc, a, figure)? / median_of(&m.doc, b, figure)?)
    };
    let goals = [
        ("sysv+bp", "debian", "shutdown_s", SHUTDOWN_GOAL),
        ("sysv+bp kexec", "sysv+bp", "whole_s", FAST_PATH_GOAL),
        ("systemd kexec", "systemd", "whole_s", FAST_PATH_GOAL),
        ("sysv+bp lever", "sysv+bp", "whole_s", FAST_PATH_GOAL),
        ("systemd lever", "systemd", "whole_s", FAST_PATH_GOAL),
    ];
    let mut doc_goals = Vec::new();
    for (a, b, figure, goal) in goals {
        let r = ratio(a, b, figure);
        let verdict = match r {
            Some(r) if r <= goal => "met",
            Some(_) => "missed",
            None => "not measured",
        };
        m.notes.push(format!(
            "goal: {a} / {b}, median {figure}: {} (goal <= {goal}x): {verdict}",
            r.map_or("-".into(), |r| format!("{r:.2}x"))
        ));
        doc_goals.push(json!({"variant": a, "against": b, "figure": figure,
            "ratio": r.map(crate::vm::qemu::round3), "goal": goal, "verdict": verdict}));
    }
    // Every run's own figures: a lost file or a wrong path is a failure, not a median.
    let mut wrong = Vec::new();
    for v in m.doc["variants"].as_array().cloned().unwrap_or_default() {
        let name = v["name"].as_str().unwrap_or_default().to_string();
        let kexec = by_kexec(&name);
        for run in v["runs"].as_array().cloned().unwrap_or_default() {
            let fig = |k: &str| run["figures"][k].as_f64();
            if fig("whole_s").is_none() {
                continue;
            }
            if fig("file_intact") != Some(1.0) {
                wrong.push(format!(
                    "{name}: the file written before the reboot was lost"
                ));
            }
            if fig("by_kexec") != Some(if kexec { 1.0 } else { 0.0 }) {
                wrong.push(format!(
                    "{name}: the cycle did not go the way asked (kexec: {kexec})"
                ));
            }
        }
    }
    m.notes.push(format!(
        "nothing lost: {}",
        if wrong.is_empty() {
            "every run found the file it wrote before the reboot intact, on the path it asked for"
                .to_string()
        } else {
            wrong.join("; ")
        }
    ));
    m.doc["goals"] = json!(doc_goals);
    m.doc["wrong_runs"] = json!(wrong);
    runner::finish(paths, m, req.json)?;
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(Error::fail(format!("bench reboot: {}", wrong.join("; "))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_first_and_the_fast_path_under_both_inits() {
        let b = benchmark(Profile::Fast);
        let names: Vec<&str> = b.variants.iter().map(|v| v.name).collect();
        assert_eq!(
            names,
            [
                "debian",
                "systemd",
                "sysv+bp",
                "sysv+bp kexec",
                "systemd kexec",
                "sysv+bp lever",
                "systemd lever"
            ]
        );
        assert!(by_kexec("sysv+bp lever") && by_kexec("systemd kexec") && !by_kexec("sysv+bp"));
        let before = |name: &str| {
            let v = b.variants.iter().find(|v| v.name == name).unwrap();
            v.opts.reboot.as_ref().unwrap().before.clone().unwrap()
        };
        let lever = before("systemd lever");
        assert!(
            lever.starts_with("#!/bin/sh\nmkdir -p /boot/grub"),
            "{lever}"
        );
        assert!(lever.ends_with(BEFORE.trim_start_matches("#!/bin/sh\n")));
        assert!(!before("systemd kexec").contains("grub.cfg"));
        for v in &b.variants {
            let r = v.opts.reboot.as_ref().unwrap();
            assert_eq!(r.command.contains("--kexec"), v.name.ends_with("kexec"));
            assert!(v.opts.record);
        }
    }
}
