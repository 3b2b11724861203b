//! `bootprint modules plan`: the kernel modules the present hardware needs (the `modules`
//! crate's `Plan`) in the order the parallel loader would load them, as text and JSON.

use std::io::{self, Write};

use modules::kmod::Paths;
use modules::plan::{EdgeKind, Plan, SkipReason};
use serde_json::{json, Value};

/// Milliseconds, one decimal, from microseconds.
fn ms(us: u64) -> String {
    format!("{:.1}", us as f64 / 1000.0)
}

/// Shortens a long `wanted by` (CPU modaliases list every feature) to its start and the
/// file in parentheses.
fn short(w: &str) -> String {
    const KEEP: usize = 60;
    if w.chars().count() <= 100 {
        return w.to_string();
    }
    let head: String = w.chars().take(KEEP).collect();
    match w.rfind(" (") {
        Some(p) if p >= KEEP => format!("{head}...{}", &w[p..]),
        _ => format!("{head}..."),
    }
}

/// The plan as JSON: the system and kernel it is for, the load order by name, and the
/// whole plan.
pub fn json(plan: &Plan, paths: &Paths) -> Value {
    let order: Vec<&str> = plan
        .order()
        .into_iter()
        .map(|i| plan.modules[i].name.as_str())
        .collect();
    json!({
        "root": paths.root,
        "kernel": paths.release,
        "order": order,
        "plan": plan,
    })
}

/// The plan as text: a summary line, then the modules in load order (expected and priority
/// time, what each waits for or why it is wanted, its options), then what is skipped, the
/// soft dependencies dropped to break a cycle and the modaliases no module matches.
pub fn text(out: &mut impl Write, plan: &Plan, paths: &Paths) -> io::Result<()> {
    writeln!(
        out,
        "module plan for {} (kernel {}): {} to load, {} skipped, {} modaliases without a module",
        paths.root.display(),
        paths.release,
        plan.modules.len(),
        plan.skipped.len(),
        plan.unmatched.len()
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{:>4}  {:<24} {:>9} {:>9}  waits for / wanted by",
        "#", "module", "exp ms", "prio ms"
    )?;
    for (n, i) in plan.order().into_iter().enumerate() {
        let m = &plan.modules[i];
        // `~name` marks a soft dependency: the module loads even if that one fails.
        let after: Vec<String> = m
            .after
            .iter()
            .map(|e| {
                let name = &plan.modules[e.module].name;
                if e.kind == EdgeKind::Dep {
                    name.clone()
                } else {
                    format!("~{name}")
                }
            })
            .collect();
        let why = if after.is_empty() {
            m.wanted_by
                .iter()
                .map(|w| short(w))
                .collect::<Vec<_>>()
                .join("; ")
        } else {
            format!("after {}", after.join(" "))
        };
        writeln!(
            out,
            "{:>4}  {:<24} {:>9} {:>9}  {why}",
            n + 1,
            m.name,
            ms(m.expected_us),
            ms(m.priority_us)
        )?;
        if !m.options.is_empty() {
            writeln!(out, "{:>4}  {:<24} options: {}", "", "", m.options)?;
        }
    }
    if !plan.skipped.is_empty() {
        writeln!(out, "\nskipped:")?;
        for s in &plan.skipped {
            let reason = match &s.reason {
                SkipReason::Builtin => "builtin".to_string(),
                SkipReason::Loaded => "already loaded".to_string(),
                SkipReason::Blacklisted => "blacklisted".to_string(),
                SkipReason::InstallCommand(c) => format!("install command ({c}): left to modprobe"),
                SkipReason::NotFound => "no such module".to_string(),
            };
            let by = short(&s.wanted_by);
            writeln!(out, "  {:<24} {reason}; wanted by {by}", s.name)?;
        }
    }
    if !plan.dropped.is_empty() {
        writeln!(out, "\nsoftdeps dropped to break a cycle:")?;
        for d in &plan.dropped {
            writeln!(out, "  {} after {}", d.module, d.after)?;
        }
    }
    if !plan.unmatched.is_empty() {
        writeln!(out, "\nmodaliases no module matches:")?;
        for a in &plan.unmatched {
            writeln!(out, "  {a}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use modules::plan::{DroppedEdge, Edge, Planned, Skipped};
    use std::path::{Path, PathBuf};

    fn planned(name: &str, after: Vec<Edge>, wanted_by: &str) -> Planned {
        Planned {
            name: name.into(),
            path: PathBuf::from(format!("/lib/modules/k/{name}.ko")),
            options: String::new(),
            after,
            wanted_by: vec![wanted_by.into()],
            expected_us: 1500,
            priority_us: 4300,
        }
    }

    fn plan() -> Plan {
        let mut b = planned(
            "virtio_net",
            vec![
                Edge {
                    module: 0,
                    kind: EdgeKind::Dep,
                },
                Edge {
                    module: 2,
                    kind: EdgeKind::SoftPre,
                },
            ],
            "modalias virtio:d00000001v00001AF4",
        );
        b.options = "napi_tx=1".into();
        Plan {
            modules: vec![
                planned("virtio", vec![], "modalias virtio:d00000001v00001AF4"),
                b,
                planned("failover", vec![], "/etc/modules:3"),
            ],
            skipped: vec![Skipped {
                name: "floppy".into(),
                reason: SkipReason::InstallCommand("/bin/true".into()),
                wanted_by: "/etc/modules:4".into(),
            }],
            unmatched: vec!["pci:v00008086d00001237".into()],
            dropped: vec![DroppedEdge {
                module: "a".into(),
                after: "b".into(),
                kind: EdgeKind::SoftPost,
            }],
            ..Plan::default()
        }
    }

    #[test]
    fn long_wanted_by_keeps_its_start_and_file() {
        assert_eq!(short("modalias pci:v1"), "modalias pci:v1");
        let cpu = format!(
            "modalias cpu:type:x86{} (/sys/devices/system/cpu)",
            ",feature".repeat(20)
        );
        let s = short(&cpu);
        assert!(s.starts_with(&cpu[..60]), "{s}");
        assert!(s.ends_with("... (/sys/devices/system/cpu)"), "{s}");
        let plain = "x".repeat(120);
        assert_eq!(short(&plain), format!("{}...", "x".repeat(60)));
    }

    #[test]
    fn text_lists_order_waits_options_and_what_is_left_out() {
        let paths = Paths::new(Path::new("/mnt/img"), "6.1.0-56-amd64");
        let mut out = Vec::new();
        text(&mut out, &plan(), &paths).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with(
            "module plan for /mnt/img (kernel 6.1.0-56-amd64): 3 to load, 1 skipped, \
             1 modaliases without a module\n\n"
        ));
        assert!(s.contains("after virtio ~failover"), "{s}");
        assert!(s.contains("options: napi_tx=1"), "{s}");
        assert!(s.contains("      1.5       4.3  "), "{s}");
        assert!(
            s.contains("install command (/bin/true): left to modprobe; wanted by /etc/modules:4"),
            "{s}"
        );
        assert!(s.contains("\nsoftdeps dropped to break a cycle:\n  a after b\n"));
        assert!(s.ends_with("\nmodaliases no module matches:\n  pci:v00008086d00001237\n"));
    }

    #[test]
    fn json_names_the_system_and_the_order() {
        let paths = Paths::new(Path::new("/mnt/img"), "6.1.0-56-amd64");
        let v = json(&plan(), &paths);
        assert_eq!(v["root"], "/mnt/img");
        assert_eq!(v["kernel"], "6.1.0-56-amd64");
        assert_eq!(v["order"].as_array().unwrap().len(), 3);
        assert_eq!(v["plan"]["modules"][1]["options"], "napi_tx=1");
    }
}
