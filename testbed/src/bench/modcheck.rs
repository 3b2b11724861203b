//! The module-set comparison: does the parallel loader (`bootprint.modules=1`) load what
//! udev's coldplug loads on the same image? Pure: it takes the text of two traces' files.
//!
//! Boot A is a normal boot, boot B one with the loader. From B's `events.log`: the loader's
//! `modules_plan` line names the modules loaded before it ran (`loaded_before`: the
//! initramfs's, since the loader starts before init), and one `module` line per planned
//! module says what became of it. Then:
//! - `A.proc_modules - B.loaded_before` is what udev (or a program) loaded on the real root
//!   in A; it must equal B's planned modules that ended live;
//! - `A.proc_modules` must equal `B.proc_modules`.
//!
//! Every difference must be explained by one of the [`Rule`]s; anything else is
//! unexplained and fails the check.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Modules a userspace program loads by name, not a modalias: udev's coldplug (and so the
/// loader) never asks for them. From Debian 12's systemd 252: PID 1 loads `autofs4`,
/// `ip_tables` (its `kmod_setup`); `modprobe@.service` instances load `configfs`, `dm_mod`,
/// `drm`, `efi_pstore`, `fuse`, `loop`; `x_tables` comes with `ip_tables`.
pub const USERSPACE: &[(&str, &str)] = &[
    ("autofs4", "systemd (PID 1 kmod_setup)"),
    ("ip_tables", "systemd (PID 1 kmod_setup)"),
    ("x_tables", "systemd (dependency of ip_tables)"),
    ("configfs", "systemd (modprobe@configfs.service)"),
    ("dm_mod", "systemd (modprobe@dm_mod.service)"),
    ("drm", "systemd (modprobe@drm.service)"),
    ("efi_pstore", "systemd (modprobe@efi_pstore.service)"),
    ("fuse", "systemd (modprobe@fuse.service)"),
    ("loop", "systemd (modprobe@loop.service)"),
    // Under UEFI: mounting /sys/firmware/efi/efivars makes the kernel load `fs-efivarfs`.
    (
        "efivarfs",
        "the efivarfs mount (mountkernfs.sh or systemd, under UEFI)",
    ),
];

/// Why a module is where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// Loaded before the loader ran (the initramfs): in both boots, not planned.
    Initramfs,
    /// Planned and live in B, and in A's real-root set: the same module, no difference.
    Same,
    /// The loader's insert failed with `ENODEV` (the driver found no device it handles:
    /// hardware QEMU lacks); udev's attempt fails the same way, so absent from both.
    NoDevice,
    /// Not tried by the loader because this module (a hard dependency) failed with
    /// `ENODEV`; absent from both.
    BlockedByNoDevice(String),
    /// Loaded by this userspace program by name, not asked for by any modalias.
    Userspace(&'static str),
    /// The loader was told it was already loaded (EEXIST: present in the kernel, as
    /// another load, udev's, was under way or failing) and left it; absent from both, so
    /// that load failed as it does without the loader (seen once: `pcc_cpufreq`, ENODEV).
    OtherLoad,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Initramfs => write!(f, "loaded by the initramfs"),
            Rule::Same => write!(f, "loaded by both"),
            Rule::NoDevice => write!(f, "ENODEV: hardware QEMU lacks, absent from both"),
            Rule::BlockedByNoDevice(by) => {
                write!(f, "not tried: needs {by}, which failed with ENODEV")
            }
            Rule::Userspace(who) => write!(f, "loaded by name by {who}, not by a modalias"),
            Rule::OtherLoad => write!(
                f,
                "left to another load under way (already_loaded), which failed: absent from both"
            ),
        }
    }
}

/// What the loader did to one module (a `module` line of `events.log`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// `loaded`, `already_loaded`, `failed`, `blocked`, `not_run`.
    pub outcome: String,
    /// The error (failed) or the module that failed (blocked).
    pub detail: String,
}

/// Boot B's loader, from its `events.log`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoaderRun {
    /// Modules loaded before the loader ran.
    pub loaded_before: BTreeSet<String>,
    /// Planned modules by name.
    pub planned: BTreeMap<String, Loaded>,
}

/// The comparison's result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Each module seen anywhere, with the rule that explains it.
    pub explained: BTreeMap<String, Rule>,
    /// What no rule explains, one sentence each (empty: the check passes).
    pub unexplained: Vec<String>,
}

impl Comparison {
    /// Modules explained by `rule`'s kind (for the summary line).
    pub fn count(&self, pred: impl Fn(&Rule) -> bool) -> usize {
        self.explained.values().filter(|r| pred(r)).count()
    }

    /// One line per module that differs between the boots or the planned set, with its rule.
    pub fn differences(&self) -> Vec<String> {
        self.explained
            .iter()
            .filter(|(_, r)| !matches!(r, Rule::Same | Rule::Initramfs))
            .map(|(m, r)| format!("{m}: {r}"))
            .collect()
    }
}

/// Module names of a `/proc/modules` text (`-` written as `_`, as the kernel does).
pub fn proc_modules(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|n| n.replace('-', "_"))
        .collect()
}

/// Reads the loader's lines out of an `events.log` text. Errors name the line and what was
/// expected; a log without a `modules_plan` line is an error (the loader did not run or is
/// older than the comparison).
pub fn loader_run(events: &str) -> Result<LoaderRun, String> {
    let mut run = LoaderRun::default();
    let mut seen_plan = false;
    for (n, line) in events.lines().enumerate() {
        let mut words = line.split(' ');
        let (Some(_t), Some(kind)) = (words.next(), words.next()) else {
            continue;
        };
        if kind != "modules_plan" && kind != "module" {
            continue;
        }
        let mut fields = BTreeMap::new();
        for w in words.filter(|w| !w.is_empty()) {
            let (k, v) = w
                .split_once('=')
                .ok_or_else(|| format!("events.log:{}: expected key=value, found {w:?}", n + 1))?;
            let v = trace::events::decode(v).map_err(|e| format!("events.log:{}: {e}", n + 1))?;
            fields.insert(k.to_string(), v);
        }
        let field = |k: &str| {
            fields
                .get(k)
                .cloned()
                .ok_or_else(|| format!("events.log:{}: {kind} line without {k}=", n + 1))
        };
        if kind == "modules_plan" {
            seen_plan = true;
            run.loaded_before = field("loaded_before")?
                .split(',')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
        } else {
            run.planned.insert(
                field("name")?,
                Loaded {
                    outcome: field("outcome")?,
                    detail: fields.get("detail").cloned().unwrap_or_default(),
                },
            );
        }
    }
    if !seen_plan {
        return Err("events.log: no modules_plan line (did the loader run?)".into());
    }
    Ok(run)
}

fn is_enodev(detail: &str) -> bool {
    // The loader's message: the module's path, strerror(ENODEV), the errno.
    detail.contains("No such device")
}

/// Compares boot A (`a_proc`: its `proc_modules`) with boot B (`b_proc`, and `b`: its
/// loader's run).
pub fn compare(a_proc: &BTreeSet<String>, b_proc: &BTreeSet<String>, b: &LoaderRun) -> Comparison {
    let mut c = Comparison::default();
    let userspace = |m: &str| USERSPACE.iter().find(|(n, _)| *n == m).map(|(_, w)| *w);
    let mut all: BTreeSet<&String> = a_proc.iter().chain(b_proc).collect();
    all.extend(b.loaded_before.iter());
    all.extend(b.planned.keys());
    for m in all {
        let (in_a, in_b) = (a_proc.contains(m), b_proc.contains(m));
        let mut fail = |why: String| c.unexplained.push(format!("{m}: {why}"));
        if b.loaded_before.contains(m) {
            if in_a && in_b {
                c.explained.insert(m.clone(), Rule::Initramfs);
            } else {
                fail(format!(
                    "loaded before the loader in B but in A's /proc/modules: {in_a}, \
                     B's: {in_b} (the initramfs loaded a different set?)"
                ));
            }
            continue;
        }
        match b.planned.get(m) {
            Some(l) if l.outcome == "loaded" || l.outcome == "already_loaded" => {
                if in_a && in_b {
                    c.explained.insert(m.clone(), Rule::Same);
                } else if l.outcome == "already_loaded" && !in_a && !in_b {
                    c.explained.insert(m.clone(), Rule::OtherLoad);
                } else if !in_a {
                    fail(format!(
                        "the loader loaded it ({}) but udev did not in A",
                        l.outcome
                    ));
                } else {
                    fail("the loader loaded it but it is gone from B's /proc/modules".into());
                }
            }
            Some(l) if l.outcome == "failed" && is_enodev(&l.detail) => {
                if in_a || in_b {
                    fail(format!(
                        "failed with ENODEV in B's loader, yet in A: {in_a}, in B: {in_b}"
                    ));
                } else {
                    c.explained.insert(m.clone(), Rule::NoDevice);
                }
            }
            Some(l) if l.outcome == "blocked" => {
                let by_enodev = b
                    .planned
                    .get(&l.detail)
                    .is_some_and(|d| d.outcome == "failed" && is_enodev(&d.detail));
                if by_enodev && !in_a && !in_b {
                    c.explained
                        .insert(m.clone(), Rule::BlockedByNoDevice(l.detail.clone()));
                } else {
                    fail(format!(
                        "blocked by {} in B (ENODEV: {by_enodev}); in A: {in_a}, in B: {in_b}",
                        l.detail
                    ));
                }
            }
            Some(l) => fail(format!(
                "the loader's outcome {} ({}); in A: {in_a}, in B: {in_b}",
                l.outcome, l.detail
            )),
            None => match userspace(m) {
                // A program loads it by name: in a boot that runs it, whatever the loader did.
                Some(who) => {
                    c.explained.insert(m.clone(), Rule::Userspace(who));
                }
                None => fail(format!(
                    "not planned by the loader, not loaded before it, in A: {in_a}, in B: {in_b} \
                     (a modalias the plan missed, or a program that loads it by name)"
                )),
            },
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real files from test-bed boots of image ea873e7ca1cee848 (Debian 12, sysvinit,
    /// kernel 6.1): A normal, B with `bootprint.modules=1`, and a systemd boot.
    const A_PROC: &str = include_str!("../../../tests/fixtures/modcheck/a.proc_modules");
    const B_PROC: &str = include_str!("../../../tests/fixtures/modcheck/b.proc_modules");
    const B_EVENTS: &str = include_str!("../../../tests/fixtures/modcheck/b.events.log");
    const SYSTEMD_PROC: &str =
        include_str!("../../../tests/fixtures/modcheck/systemd.proc_modules");

    fn real() -> (BTreeSet<String>, BTreeSet<String>, LoaderRun) {
        (
            proc_modules(A_PROC),
            proc_modules(B_PROC),
            loader_run(B_EVENTS).unwrap(),
        )
    }

    #[test]
    fn real_boots_agree_every_difference_explained() {
        let (a, b, run) = real();
        let c = compare(&a, &b, &run);
        assert!(c.unexplained.is_empty(), "{:#?}", c.unexplained);
        assert_eq!(a, b, "the same modules live with and without the loader");
        // The initramfs loaded the root disk's stack; the loader planned the rest.
        assert!(run.loaded_before.contains("virtio_blk") && run.loaded_before.contains("ext4"));
        assert!(c.count(|r| *r == Rule::Same) >= 5);
        assert!(c.count(|r| *r == Rule::NoDevice) >= 1);
    }

    #[test]
    fn userspace_modules_of_a_systemd_boot_are_explained_by_name() {
        let (_, b, run) = real();
        let sd = proc_modules(SYSTEMD_PROC);
        let c = compare(&sd, &b, &run);
        assert!(c.unexplained.is_empty(), "{:#?}", c.unexplained);
        assert_eq!(
            c.explained.get("fuse"),
            Some(&Rule::Userspace("systemd (modprobe@fuse.service)"))
        );
        assert!(c
            .differences()
            .iter()
            .any(|d| d.starts_with("autofs4: loaded by name")));
    }

    #[test]
    fn a_module_udev_loads_that_the_plan_missed_fails() {
        let (mut a, b, mut run) = real();
        a.insert("snd_hda_intel".into());
        let c = compare(&a, &b, &run);
        assert_eq!(c.unexplained.len(), 1, "{:?}", c.unexplained);
        assert!(c.unexplained[0].starts_with("snd_hda_intel: not planned"));
        // And one the loader loaded that udev did not.
        a.remove("snd_hda_intel");
        let (name, _) = run
            .planned
            .iter()
            .find(|(_, l)| l.outcome == "loaded")
            .map(|(n, l)| (n.clone(), l.clone()))
            .unwrap();
        a.remove(&name);
        let c = compare(&a, &b, &run);
        assert!(
            c.unexplained[0].contains("udev did not in A"),
            "{:?}",
            c.unexplained
        );
        // One the loader found already loading (EEXIST: udev's load under way, which then
        // failed): absent from both, as without the loader. Present in B only fails.
        let mut b_without = b.clone();
        b_without.remove(&name);
        run.planned.get_mut(&name).unwrap().outcome = "already_loaded".into();
        let c = compare(&a, &b_without, &run);
        assert!(c.unexplained.is_empty(), "{:?}", c.unexplained);
        assert_eq!(c.explained[&name], Rule::OtherLoad);
        let c = compare(&a, &b, &run);
        assert!(
            c.unexplained[0].contains("udev did not in A"),
            "{:?}",
            c.unexplained
        );
        // A failure other than ENODEV is not explained.
        let (a, b, _) = real();
        let enodev = run
            .planned
            .values_mut()
            .find(|l| l.outcome == "failed")
            .unwrap();
        enodev.detail = "/lib/modules/x.ko: Invalid argument".into();
        let c = compare(&a, &b, &run);
        assert!(!c.unexplained.is_empty());
    }

    #[test]
    fn loader_lines_are_read_and_bad_ones_named() {
        let run = loader_run(
            "5 modules_plan planned=2 skipped=0 workers=3 loaded_before=ext4,virtio_blk\n\
             7 module name=kvm end_ns=9 worker=1 outcome=loaded detail= expected_us=5000\n\
             8 module name=amd64_edac end_ns=9 worker=2 outcome=failed detail=/x.ko:%20No%20such%20device\n",
        )
        .unwrap();
        assert_eq!(run.loaded_before.len(), 2);
        assert_eq!(run.planned["amd64_edac"].detail, "/x.ko: No such device");
        assert!(is_enodev(&run.planned["amd64_edac"].detail));
        let e = loader_run("1 modules_plan planned=1\n").unwrap_err();
        assert_eq!(e, "events.log:1: modules_plan line without loaded_before=");
        let e = loader_run("1 boot_done reason=idle\n").unwrap_err();
        assert!(e.contains("no modules_plan line"));
        let e =
            loader_run("1 modules_plan loaded_before=a\n2 module name=x outcome=%4\n").unwrap_err();
        assert!(
            e.starts_with("events.log:2: two hex digits after '%'"),
            "{e}"
        );
    }
}
