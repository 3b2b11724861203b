//! Real traces for the tests, and minimal edits to copies of them ("planting" a cost).
#![allow(dead_code)]

use std::path::PathBuf;

/// bootchart2's example log (Ubuntu 8.10), tests/fixtures/bootchart2-example1.
pub fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bootchart2-example1")
}

/// A real test-bed boot (Debian 12, sysvinit, QEMU TCG, bootprint-boot at 50 Hz), 2026-11-22.
pub fn testbed() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/testbed-sysvinit.tgz")
}

/// Another boot of the same test-bed image, recorded a minute earlier.
pub fn testbed2() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/testbed-sysvinit-2.tgz")
}

/// A copy of the example log in a fresh directory; `edit` rewrites proc_ps.log block by
/// block (time in cs, the block's lines) and may rewrite the other logs' blocks too.
pub fn planted(edit: impl Fn(&str, u64, &mut Vec<String>)) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for name in [
        "header",
        "proc_stat.log",
        "proc_diskstats.log",
        "proc_ps.log",
    ] {
        let text = std::fs::read_to_string(example().join(name)).unwrap();
        if name == "header" {
            std::fs::write(dir.join(name), text).unwrap();
            continue;
        }
        let mut out = String::new();
        for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
            let mut lines: Vec<String> = block.lines().map(String::from).collect();
            let t: u64 = lines[0].trim().parse().unwrap();
            let mut body = lines.split_off(1);
            edit(name, t, &mut body);
            out.push_str(&lines[0]);
            out.push('\n');
            for l in body {
                out.push_str(&l);
                out.push('\n');
            }
            out.push('\n');
        }
        std::fs::write(dir.join(name), out).unwrap();
    }
    tmp
}

/// A `/proc/PID/stat` line for a planted process: the layout of init's line in the log, with
/// pid, comm, state, ppid, no CPU time and the given start (cs).
pub fn ps_line(pid: u32, comm: &str, ppid: u32, start_cs: u64) -> String {
    let mut f: Vec<String> = "1 (init) S 0 0 0 0 -1 4202752 593 6281 0 0 0 114 2 2 20 0 1 0 29 1208320 97 4294967295 134512640 135460575 3215765968 3215764220 134647326 0 0 0 2 3222492493 0 0 0 1 0 0 0 0 0"
        .split(' ')
        .map(String::from)
        .collect();
    f[0] = pid.to_string();
    f[1] = format!("({comm})");
    f[3] = ppid.to_string();
    f[13] = "0".into();
    f[14] = "0".into();
    f[21] = start_cs.to_string();
    f.join(" ")
}
