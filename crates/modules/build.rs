//! Links libkmod. pkg-config gives the flags where it is installed (Debian: libkmod-dev and
//! pkg-config); otherwise plain `-lkmod` is tried, which is all libkmod needs.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = Command::new("pkg-config")
        .args(["--libs", "libkmod"])
        .output();
    let mut linked = false;
    if let Ok(out) = out {
        if out.status.success() {
            for flag in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                if let Some(dir) = flag.strip_prefix("-L") {
                    println!("cargo:rustc-link-search=native={dir}");
                } else if let Some(lib) = flag.strip_prefix("-l") {
                    println!("cargo:rustc-link-lib={lib}");
                    linked = true;
                }
            }
        }
    }
    if !linked {
        println!("cargo:rustc-link-lib=kmod");
    }
}
