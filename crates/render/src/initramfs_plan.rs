//! `bootprint initramfs plan`: what a host-only initramfs would do at boot (the `initramfs`
//! crate's `Plan`), as the plan file it would hold, with what was left out as comments.

use std::io::{self, Write};

use initramfs::plan::Plan;

/// The plan file's text (its format is the initramfs crate's), then every note (a module
/// left out and why) as a `# note:` comment line.
pub fn text(out: &mut impl Write, plan: &Plan) -> io::Result<()> {
    out.write_all(plan.to_text().as_bytes())?;
    for n in &plan.notes {
        writeln!(out, "# note: {n}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_follow_the_plan_file_as_comments() {
        let plan = Plan {
            kernel: "6.1.0-56-amd64".into(),
            root: "/dev/vda1".into(),
            fstype: "ext4".into(),
            notes: vec!["ext4 is builtin".into()],
            ..Plan::default()
        };
        let mut out = Vec::new();
        text(&mut out, &plan).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with(&plan.to_text()));
        assert!(
            s.ends_with("\nfstype ext4\n# note: ext4 is builtin\n"),
            "{s}"
        );
    }
}
