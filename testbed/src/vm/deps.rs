//! `deps`: installs the host packages the test bed needs, skipping what is installed.

use std::process::Command;

use crate::vm::util::{output_logged, run_logged, Error, Paths, Result};

/// Host packages: QEMU (TCG), qemu-img, debootstrap, mke2fs/debugfs/e2fsck, OVMF (UEFI).
pub const HOST_PACKAGES: &[&str] = &[
    "qemu-system-x86",
    "qemu-utils",
    "debootstrap",
    "e2fsprogs",
    "ovmf",
];

/// The packages of `pkgs` that dpkg does not report as installed.
pub fn missing(pkgs: &[&str], log: &std::path::Path) -> Result<Vec<String>> {
    let mut cmd = Command::new("dpkg-query");
    cmd.args(["-W", "-f=${Package} ${db:Status-Status}\n"])
        .args(pkgs);
    // dpkg-query exits 1 when a package is unknown; its stdout still lists the known ones.
    let out = match output_logged(&mut cmd, log) {
        Ok(o) => o,
        Err(_) => String::from_utf8_lossy(
            &Command::new("dpkg-query")
                .args(["-W", "-f=${Package} ${db:Status-Status}\n"])
                .args(pkgs)
                .output()
                .map_err(|e| Error::fail(format!("cannot run dpkg-query: {e}")))?
                .stdout,
        )
        .into_owned(),
    };
    Ok(parse_missing(pkgs, &out))
}

fn parse_missing(pkgs: &[&str], dpkg_out: &str) -> Vec<String> {
    pkgs.iter()
        .filter(|p| {
            !dpkg_out.lines().any(|l| {
                let mut w = l.split_whitespace();
                // dpkg-query may print "name:arch"
                let name = w.next().unwrap_or("");
                let name = name.split(':').next().unwrap_or("");
                name == **p && w.next() == Some("installed")
            })
        })
        .map(|p| p.to_string())
        .collect()
}

pub fn install(paths: &Paths) -> Result<()> {
    let log = paths.logs().join("deps.log");
    let need = missing(HOST_PACKAGES, &log)?;
    if need.is_empty() {
        println!("deps: all present ({})", HOST_PACKAGES.join(" "));
        return Ok(());
    }
    println!("deps: installing {}", need.join(" "));
    let lists_empty = std::fs::read_dir("/var/lib/apt/lists")
        .map(|d| {
            !d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with("_Packages"))
        })
        .unwrap_or(true);
    let install = |log: &std::path::Path| {
        run_logged(
            Command::new("apt-get")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .args(["install", "-y", "--no-install-recommends"])
                .args(&need),
            log,
        )
    };
    if lists_empty || install(&log).is_err() {
        // Package lists missing or stale: update once, then try again.
        run_logged(
            Command::new("apt-get")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .arg("update"),
            &log,
        )?;
        install(&log)?;
    }
    let still = missing(HOST_PACKAGES, &log)?;
    if !still.is_empty() {
        return Err(Error::fail(format!(
            "still missing after apt-get install: {} (log {})",
            still.join(" "),
            log.display()
        )));
    }
    println!("deps: done");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_missing_packages() {
        let out = "qemu-utils installed\ndebootstrap not-installed\ne2fsprogs:amd64 installed\n";
        assert_eq!(
            parse_missing(
                &["qemu-utils", "debootstrap", "e2fsprogs", "qemu-system-x86"],
                out
            ),
            vec!["debootstrap".to_string(), "qemu-system-x86".to_string()]
        );
    }
}
