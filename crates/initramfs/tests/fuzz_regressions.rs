//! Inputs the fuzz runner (`fuzz/`, docs/fuzzing.md) found, each shrunk by hand to what
//! triggers it: the disk's partition table (read by /init at boot) and ELF files hold any
//! offsets.

use std::path::Path;

use initramfs::{elf, probe};

/// fuzz target initramfs_probe: a GPT header whose entry LBA times the sector size
/// overflows (2^55 * 512 = 2^64). With overflow checks that panicked; without, the offset
/// wrapped to 0 and the MBR's bytes were read as a partition entry.
#[test]
fn fuzz_initramfs_probe_gpt_entry_offset_overflow() {
    let mut disk = vec![0u8; 1024];
    disk[..16].copy_from_slice(&[0xee; 16]);
    disk[512..520].copy_from_slice(b"EFI PART");
    disk[512 + 72..512 + 80].copy_from_slice(&(1u64 << 55).to_le_bytes());
    disk[512 + 80..512 + 84].copy_from_slice(&1u32.to_le_bytes());
    disk[512 + 84..512 + 88].copy_from_slice(&128u32.to_le_bytes());
    assert_eq!(probe::partition(&disk, 1, 512), None);
}

/// A 64-bit ELF whose only DT_NEEDED offset is `needed`, with its string table at file
/// offset 0x100 (vaddr 0x100) holding "\0libc.so.6\0".
fn elf_with_needed(needed: u64) -> Vec<u8> {
    let mut f = vec![0u8; 0x200];
    f[..4].copy_from_slice(b"\x7fELF");
    f[4] = 2;
    f[5] = 1;
    f[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
    f[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
    f[0x38..0x3a].copy_from_slice(&2u16.to_le_bytes());
    // PT_LOAD over the whole file at vaddr 0.
    let ph = 64;
    f[ph..ph + 4].copy_from_slice(&1u32.to_le_bytes());
    f[ph + 32..ph + 40].copy_from_slice(&0x200u64.to_le_bytes());
    // PT_DYNAMIC at 0x180.
    let ph = 64 + 56;
    f[ph..ph + 4].copy_from_slice(&2u32.to_le_bytes());
    f[ph + 8..ph + 16].copy_from_slice(&0x180u64.to_le_bytes());
    f[ph + 16..ph + 24].copy_from_slice(&0x180u64.to_le_bytes());
    f[ph + 32..ph + 40].copy_from_slice(&48u64.to_le_bytes());
    f[0x101..0x10a].copy_from_slice(b"libc.so.6");
    let d = 0x180;
    f[d..d + 8].copy_from_slice(&1u64.to_le_bytes());
    f[d + 8..d + 16].copy_from_slice(&needed.to_le_bytes());
    f[d + 16..d + 24].copy_from_slice(&5u64.to_le_bytes());
    f[d + 24..d + 32].copy_from_slice(&0x100u64.to_le_bytes());
    f
}

/// fuzz target initramfs_elf: a DT_NEEDED offset that wraps past the end of the address
/// space back into the string table. With overflow checks that panicked; without, the
/// wrapped offset named a library the file does not name.
#[test]
fn fuzz_initramfs_elf_needed_offset_overflow() {
    let ok = elf::parse(&elf_with_needed(1), Path::new("prog")).unwrap();
    assert_eq!(ok.needed, vec!["libc.so.6".to_string()]);
    // 0x100 + this wraps to 1: the ELF magic's "ELF...".
    let bad = elf::parse(
        &elf_with_needed(1u64.wrapping_sub(0x100)),
        Path::new("prog"),
    );
    assert!(bad.is_err(), "{bad:?}");
}

/// fuzz target initramfs_elf: a program-header offset near u64::MAX overflowed the reads'
/// end offsets.
#[test]
fn fuzz_initramfs_elf_program_header_offset_overflow() {
    let mut f = elf_with_needed(1);
    f[0x20..0x28].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
    assert!(elf::parse(&f, Path::new("prog")).is_err());
}
