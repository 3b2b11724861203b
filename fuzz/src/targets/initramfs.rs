//! The initramfs crate: what `/init` reads at boot (the kernel command line, the plan file,
//! a disk's superblock and partition table) and what the build reads (modules.dep, alias,
//! builtin, softdep and modprobe.d into a plan; ELF files; cpio archives).

use std::path::{Path, PathBuf};

use arbitrary::Unstructured;
use initramfs::cmdline::{self, Cmdline};
use initramfs::plan::{self, ChainLink, ModIndex, Plan};
use initramfs::{cpio, elf, probe};

use super::{lossy, strict};
use crate::{container, seeds, Target};

/// The targets of this file.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "initramfs_cmdline",
            about: "initramfs::cmdline::Cmdline::parse (/proc/cmdline in /init), split_words, parse_root, get",
            run: |d| {
                if let Some(t) = strict(d) {
                    for w in cmdline::split_words(t) {
                        if let Some(v) = w.strip_prefix("root=") {
                            let _ = cmdline::parse_root(v);
                        }
                        let _ = cmdline::unsupported_device(&w);
                    }
                    if let Ok(c) = Cmdline::parse(t) {
                        let _ = c.get("rootdelay");
                        let _ = c.get("bootprint.init");
                        let _ = initramfs::boot::fstypes(&c, Some("ext4"), &Plan::default());
                    }
                }
            },
            seeds: || {
                seeds::lit(&[
                    "BOOT_IMAGE=/vmlinuz-6.1.0 root=UUID=0a1b2c3d-1111-2222-3333-444455556666 ro quiet rootwait rootdelay=5 rootfstype=ext4,xfs\n",
                    "root=PARTUUID=1234abcd-02 rw init=/sbin/init \"quoted arg\" -- single\n",
                    "root=LABEL=root root=/dev/vda1 root=254:1 root=PARTLABEL=x root=nfs:/x rootflags=noatime bootprint.initramfs.fail=shell\n",
                ])
            },
            tokens: &["root=", "UUID=", "PARTUUID=", "LABEL=", "PARTLABEL=", "/dev/", "rootfstype=", "rootflags=", "rootdelay=", "rootwait", "ro", "rw", "init=", "--", "\"", "254:1", "/dev/mapper/x", "/dev/md0", "nfs"],
            structured: None,
        },
        Target {
            name: "initramfs_plan",
            about: "initramfs::plan::Plan::parse (the plan file /init reads), waves, to_text, boot::fstypes",
            run: |d| {
                if let Some(t) = strict(d) {
                    if let Ok(p) = Plan::parse(t, Path::new("plan")) {
                        let _ = p.waves();
                        let _ = Plan::parse(&p.to_text(), Path::new("again"));
                        if let Ok(c) = Cmdline::parse("root=/dev/vda1 rootfstype=xfs,btrfs") {
                            let _ = initramfs::boot::fstypes(&c, None, &p);
                        }
                    }
                }
            },
            seeds: || seeds::lit(&[PLAN]),
            tokens: &["bootprint-initramfs-plan 1", "module\t", "\t", "required", "optional", "-", ",", "kernel ", "root ", "fstype ", "workers ", "64", "65"],
            structured: None,
        },
        Target {
            name: "initramfs_modindex",
            about: "initramfs::plan::ModIndex::{parse_dep, parse_alias, parse_builtin, parse_modprobe_conf}, resolve, plan::build, to_text, waves",
            run: run_modindex,
            seeds: modindex_seeds,
            tokens: &["@@ modules.dep\n", "@@ modules.alias\n", "@@ modules.builtin\n", "@@ modules.softdep\n", "@@ modprobe.conf\n", "@@ chain\n", "@@ cpu\n", "kernel/a.ko: kernel/b.ko", "softdep a pre: b post: c", "options a x=1", "alias pci:v*d* a", "*", "?", "[", "]", "[!", "^"],
            structured: None,
        },
        Target {
            name: "initramfs_glob",
            about: "initramfs::plan::glob_match (modules.alias patterns against a modalias)",
            run: |d| {
                let t = lossy(d);
                let (pattern, text) = t.split_once('\n').unwrap_or((&t, ""));
                // A modalias is one sysfs attribute: at most a page.
                let text: String = text.chars().take(4096).collect();
                let _ = plan::glob_match(pattern, &text);
            },
            seeds: || {
                seeds::lit(&[
                    "pci:v00008086d*sv*sd*bc01sc06i01*\npci:v00008086d00002922sv00001AF4sd00001100bc01sc06i01",
                    "virtio:d00000002v*\nvirtio:d00000002v00001AF4",
                    "cpu:type:x86,ven*fam*mod*:feature:*0094*\ncpu:type:x86,ven0000fam0006mod003F:feature:,0000,0001,0094",
                    "[a-z][!0-9]?*\nab",
                ])
            },
            tokens: &["*", "?", "[", "]", "[!", "[^", "-", "a", "\n"],
            structured: None,
        },
        Target {
            name: "initramfs_cpio",
            about: "initramfs::cpio::read (a newc archive)",
            run: |d| {
                let _ = cpio::read(d);
            },
            seeds: || vec![sample_cpio()],
            tokens: &["070701", "TRAILER!!!", "00000000", "FFFFFFFF", "0000000B"],
            structured: Some(|u| {
                let mut a = cpio::Archive::new();
                for _ in 0..u.int_in_range(0..=8)? {
                    let name: String = u.arbitrary()?;
                    match u.int_in_range(0..=3)? {
                        0 => a.dir(&name, u.arbitrary()?),
                        1 => a.file(&name, u.arbitrary()?, u.arbitrary::<&[u8]>()?),
                        2 => a.symlink(&name, &u.arbitrary::<String>()?),
                        _ => a.char_dev(&name, u.arbitrary()?, u.arbitrary()?, u.arbitrary()?),
                    }
                }
                Ok(a.finish())
            }),
        },
        Target {
            name: "initramfs_elf",
            about: "initramfs::elf::parse (PT_INTERP and DT_NEEDED of a program or library)",
            run: |d| {
                let _ = elf::parse(d, Path::new("prog"));
            },
            seeds: || {
                vec![
                    mini_elf(Some("/lib64/ld-linux-x86-64.so.2"), &["libc.so.6", "libm.so.6"]),
                    mini_elf(None, &["libc.so.6"]),
                    mini_elf(None, &[]),
                ]
            },
            tokens: &["\u{7f}ELF", "\u{2}\u{1}\u{1}", "libc.so.6\0"],
            structured: Some(elf_structured),
        },
        Target {
            name: "initramfs_probe",
            about: "initramfs::probe::{superblock, partition} (a disk's first bytes, read by /init)",
            run: |d| {
                let _ = probe::superblock(d);
                for n in [0, 1, 2, 128, u32::MAX] {
                    for sector in [512, 4096] {
                        let _ = probe::partition(d, n, sector);
                    }
                }
            },
            seeds: probe_seeds,
            tokens: &["EFI PART", "XFSB", "_BHRfS_M", "\u{53}\u{ef}", "\u{55}\u{aa}"],
            structured: Some(probe_structured),
        },
    ]
}

const PLAN: &str = "bootprint-initramfs-plan 1\n# written by `bootprint initramfs build`; format in docs/initramfs.md\nkernel 6.1.0-50-amd64\nroot /dev/vda1\nfstype ext4\nworkers 4\nmodule\tvirtio\t/lib/modules/6.1.0-50-amd64/kernel/drivers/virtio/virtio.ko\trequired\t-\t\nmodule\tvirtio_ring\t/lib/modules/x/virtio_ring.ko\trequired\tvirtio\t\nmodule\tvirtio_blk\t/lib/modules/x/virtio_blk.ko\trequired\tvirtio,virtio_ring\tqueue_depth=64\nmodule\tcrc32c_generic\t/lib/modules/x/crc32c_generic.ko\toptional\t-\t\n";

fn run_modindex(d: &[u8]) {
    let mut ix = ModIndex::default();
    let mut chain = Vec::new();
    let mut cpu = None;
    for (name, body) in container::split(d) {
        let Some(t) = strict(body) else { continue };
        let p = Path::new("modules");
        match name.as_str() {
            "modules.dep" => {
                let _ = ix.parse_dep(t, p);
            }
            "modules.alias" => {
                let _ = ix.parse_alias(t, p);
            }
            "modules.builtin" => ix.parse_builtin(t),
            "modules.softdep" | "modprobe.conf" => ix.parse_modprobe_conf(t),
            "cpu" => cpu = Some(t.trim().chars().take(4096).collect::<String>()),
            // One device a line, from the root device up: `DRIVER MODULE MODALIAS` (`-`: none).
            "chain" => {
                for line in t.lines() {
                    let w: Vec<&str> = line.split_whitespace().collect();
                    let opt = |i: usize| w.get(i).filter(|s| **s != "-").map(|s| s.to_string());
                    chain.push(ChainLink {
                        path: PathBuf::from("/sys/devices/x"),
                        driver: opt(0),
                        module: opt(1),
                        modalias: opt(2).map(|m| m.chars().take(4096).collect()),
                    });
                }
            }
            _ => {}
        }
    }
    for link in &chain {
        if let Some(m) = &link.modalias {
            let _ = ix.resolve(m);
        }
    }
    if let Ok(p) = plan::build(
        &ix,
        "6.1.0-fuzz",
        "/dev/vda1",
        "ext4",
        &chain,
        cpu.as_deref(),
    ) {
        let _ = p.waves();
        let _ = Plan::parse(&p.to_text(), Path::new("built"));
    }
}

fn modindex_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for dir in [
        "crates/initramfs/tests/fixtures/lib/modules/6.1.0-50-amd64",
        "tests/fixtures/modules/root/lib/modules/6.1.0-56-amd64",
    ] {
        let files: Vec<(&str, Vec<u8>)> = vec![
            ("modules.dep", seeds::file(&format!("{dir}/modules.dep"))),
            ("modules.alias", seeds::file(&format!("{dir}/modules.alias"))),
            ("modules.builtin", seeds::file(&format!("{dir}/modules.builtin"))),
            ("modules.softdep", seeds::file(&format!("{dir}/modules.softdep"))),
            ("chain", b"virtio_blk virtio_blk virtio:d00000002v00001AF4\nvirtio-pci virtio_pci pci:v00001AF4d00001001sv00001AF4sd00000002bc01sc00i00\n- - -\n".to_vec()),
            ("cpu", b"cpu:type:x86,ven0000fam0006mod003F:feature:,0000,0001,0094\n".to_vec()),
        ];
        out.push(container::join(&files));
    }
    out
}

fn sample_cpio() -> Vec<u8> {
    let mut a = cpio::Archive::new();
    a.dir("dev", 0o755);
    a.char_dev("dev/console", 0o600, 5, 1);
    a.file("init", 0o755, b"#!/bin/sh\nexec /sbin/init\n");
    a.symlink("bin", "usr/bin");
    a.finish()
}

/// A 64-bit little-endian ELF with an interpreter, a PT_LOAD over the whole file and a
/// dynamic section naming `needed`.
fn mini_elf(interp: Option<&str>, needed: &[&str]) -> Vec<u8> {
    const BASE: u64 = 0x40_0000;
    let phnum: u64 = 3;
    let mut interp_bytes = interp.unwrap_or("").as_bytes().to_vec();
    interp_bytes.push(0);
    let interp_off = 64 + 56 * phnum;
    let strtab_off = interp_off + interp_bytes.len() as u64;
    let mut strtab = vec![0u8];
    let mut name_offs = Vec::new();
    for n in needed {
        name_offs.push(strtab.len() as u64);
        strtab.extend_from_slice(n.as_bytes());
        strtab.push(0);
    }
    let dyn_off = (strtab_off + strtab.len() as u64).div_ceil(8) * 8;
    let mut dynamic = Vec::new();
    for o in &name_offs {
        dynamic.extend_from_slice(&1u64.to_le_bytes());
        dynamic.extend_from_slice(&o.to_le_bytes());
    }
    dynamic.extend_from_slice(&5u64.to_le_bytes());
    dynamic.extend_from_slice(&(BASE + strtab_off).to_le_bytes());
    dynamic.extend_from_slice(&[0u8; 16]);
    let total = dyn_off + dynamic.len() as u64;
    let mut f = vec![0u8; 64];
    f[..4].copy_from_slice(b"\x7fELF");
    f[4] = 2;
    f[5] = 1;
    f[6] = 1;
    f[0x10] = 2; // ET_EXEC
    f[0x12] = 0x3e; // x86-64
    f[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
    f[0x34..0x36].copy_from_slice(&64u16.to_le_bytes());
    f[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
    f[0x38..0x3a].copy_from_slice(&(phnum as u16).to_le_bytes());
    let phdr = |t: u32, off: u64, vaddr: u64, size: u64| {
        let mut p = vec![0u8; 56];
        p[..4].copy_from_slice(&t.to_le_bytes());
        p[8..16].copy_from_slice(&off.to_le_bytes());
        p[16..24].copy_from_slice(&vaddr.to_le_bytes());
        p[32..40].copy_from_slice(&size.to_le_bytes());
        p[40..48].copy_from_slice(&size.to_le_bytes());
        p
    };
    let interp_type = if interp.is_some() { 3 } else { 4 }; // PT_INTERP or PT_NOTE
    f.extend(phdr(
        interp_type,
        interp_off,
        BASE + interp_off,
        interp_bytes.len() as u64,
    ));
    f.extend(phdr(1, 0, BASE, total));
    f.extend(phdr(2, dyn_off, BASE + dyn_off, dynamic.len() as u64));
    f.extend(&interp_bytes);
    f.extend(&strtab);
    f.resize(dyn_off as usize, 0);
    f.extend(&dynamic);
    f
}

/// A small ELF whose header and program-header fields are arbitrary (offsets, counts,
/// sizes and addresses), the rest taken from a valid one.
fn elf_structured(u: &mut Unstructured) -> arbitrary::Result<Vec<u8>> {
    let mut f = mini_elf(Some("/lib/ld.so"), &["libc.so.6", "libz.so.1"]);
    for _ in 0..u.int_in_range(1..=6)? {
        // A u64 or u16 field of the header or of one program header.
        let (at, width) = match u.int_in_range(0..=4)? {
            0 => (0x20, 8),
            1 => (0x36, 2),
            2 => (0x38, 2),
            _ => (
                64 + 56 * u.int_in_range(0..=2)? + [8, 16, 32][u.int_in_range(0..=2)?],
                8,
            ),
        };
        let v: u64 = match u.int_in_range(0..=3)? {
            0 => u64::MAX - u.int_in_range(0..=64)?,
            1 => u.int_in_range(0..=512)?,
            _ => u.arbitrary()?,
        };
        f[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
    }
    Ok(f)
}

fn probe_seeds() -> Vec<Vec<u8>> {
    let mut ext = vec![0u8; 2048];
    ext[1024 + 0x38] = 0x53;
    ext[1024 + 0x39] = 0xef;
    ext[1024 + 0x68..1024 + 0x78].copy_from_slice(&[0xab; 16]);
    ext[1024 + 0x78..1024 + 0x7c].copy_from_slice(b"root");
    let mut gpt = vec![0u8; 512 * 2 + 128 * 4];
    gpt[510] = 0x55;
    gpt[511] = 0xaa;
    gpt[512..520].copy_from_slice(b"EFI PART");
    gpt[512 + 72..512 + 80].copy_from_slice(&2u64.to_le_bytes());
    gpt[512 + 80..512 + 84].copy_from_slice(&4u32.to_le_bytes());
    gpt[512 + 84..512 + 88].copy_from_slice(&128u32.to_le_bytes());
    gpt.resize(512 * 2 + 128 * 4, 0);
    gpt.extend(vec![0u8; 512]);
    let e = 1024;
    gpt[e..e + 16].copy_from_slice(&[1; 16]);
    gpt[e + 16..e + 32].copy_from_slice(&[2; 16]);
    gpt[e + 56..e + 60].copy_from_slice(&[b'r', 0, b'o', 0]);
    let mut xfs = b"XFSB".to_vec();
    xfs.resize(512, 7);
    vec![ext, gpt, xfs]
}

/// A disk start with a GPT header whose table place, entry count and entry size are
/// arbitrary, or a superblock magic at its place.
fn probe_structured(u: &mut Unstructured) -> arbitrary::Result<Vec<u8>> {
    let sector: usize = if u.arbitrary()? { 512 } else { 4096 };
    let len = u.int_in_range(0..=(sector * 4))?;
    let mut d = vec![0u8; len.max(sector + 92)];
    d[sector..sector + 8].copy_from_slice(b"EFI PART");
    let lba: u64 = if u.ratio(1, 2)? {
        u.arbitrary()?
    } else {
        u.int_in_range(0..=8)?
    };
    let count: u32 = u.arbitrary()?;
    let size: u32 = if u.ratio(1, 2)? { u.arbitrary()? } else { 128 };
    d[sector + 72..sector + 80].copy_from_slice(&lba.to_le_bytes());
    d[sector + 80..sector + 84].copy_from_slice(&count.to_le_bytes());
    d[sector + 84..sector + 88].copy_from_slice(&size.to_le_bytes());
    let fill = u.bytes(u.len().min(d.len()))?;
    let n = fill.len().min(d.len().saturating_sub(sector + 92));
    d[sector + 92..sector + 92 + n].copy_from_slice(&fill[..n]);
    Ok(d)
}
