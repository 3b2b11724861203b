//! Just enough ELF to gather a program's shared libraries: the interpreter (`PT_INTERP`)
//! and the `DT_NEEDED` names of a 64-bit little-endian ELF file, and their resolution in
//! the standard library directories, recursively. Pure parsing of bytes; the resolver takes
//! its search directories and root as parameters.

use std::path::{Path, PathBuf};

use crate::{Error, ErrorKind};

/// What the dynamic linker needs for one ELF file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dynamic {
    /// `PT_INTERP`: the program interpreter's path, for an executable.
    pub interp: Option<String>,
    /// `DT_NEEDED` names, in order.
    pub needed: Vec<String>,
}

// Offsets come from the file: every sum is checked, so a huge one is "past the end" rather
// than an overflow (or, wrapped, some other bytes).
fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(o..o.checked_add(2)?)?.try_into().ok()?,
    ))
}
fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(o..o.checked_add(4)?)?.try_into().ok()?,
    ))
}
fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(o..o.checked_add(8)?)?.try_into().ok()?,
    ))
}
fn cstr_at(b: &[u8], o: usize) -> Option<String> {
    let rest = b.get(o..)?;
    let end = rest.iter().position(|&c| c == 0)?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// Parses the interpreter and needed libraries of an ELF file; `file` names it in errors.
/// A static executable gives an empty [`Dynamic`].
pub fn parse(bytes: &[u8], file: &Path) -> Result<Dynamic, Error> {
    let bad = |what: &str| {
        Error::new(ErrorKind::BadElf, format!("not a usable ELF file: {what}")).at(file)
    };
    if bytes.get(..4) != Some(b"\x7fELF") {
        return Err(bad("expected the ELF magic"));
    }
    if bytes.get(4) != Some(&2) || bytes.get(5) != Some(&1) {
        return Err(bad(
            "expected 64-bit little-endian (ELFCLASS64, ELFDATA2LSB)",
        ));
    }
    let phoff = u64_at(bytes, 0x20).ok_or_else(|| bad("truncated header"))? as usize;
    let phentsize = u16_at(bytes, 0x36).ok_or_else(|| bad("truncated header"))? as usize;
    let phnum = u16_at(bytes, 0x38).ok_or_else(|| bad("truncated header"))? as usize;
    // (p_type, p_offset, p_vaddr, p_filesz)
    let mut phdrs = Vec::with_capacity(phnum);
    for i in 0..phnum {
        let past = || bad("program header past the end");
        let o = phoff.checked_add(i * phentsize).ok_or_else(past)?;
        let t = u32_at(bytes, o).ok_or_else(past)?;
        let off = u64_at(bytes, o.saturating_add(8)).ok_or_else(past)?;
        let vaddr = u64_at(bytes, o.saturating_add(16)).ok_or_else(past)?;
        let filesz = u64_at(bytes, o.saturating_add(32)).ok_or_else(past)?;
        phdrs.push((t, off, vaddr, filesz));
    }
    const PT_LOAD: u32 = 1;
    const PT_DYNAMIC: u32 = 2;
    const PT_INTERP: u32 = 3;
    let mut d = Dynamic::default();
    if let Some(&(_, off, _, _)) = phdrs.iter().find(|p| p.0 == PT_INTERP) {
        d.interp = Some(cstr_at(bytes, off as usize).ok_or_else(|| bad("PT_INTERP past the end"))?);
    }
    let Some(&(_, dyn_off, _, dyn_size)) = phdrs.iter().find(|p| p.0 == PT_DYNAMIC) else {
        return Ok(d);
    };
    // The string table is named by address: map it to a file offset through a PT_LOAD.
    let to_offset = |addr: u64| {
        phdrs
            .iter()
            .find(|p| p.0 == PT_LOAD && p.2 <= addr && addr - p.2 < p.3)
            .and_then(|p| (addr - p.2).checked_add(p.1))
            .map(|o| o as usize)
    };
    let mut strtab = None;
    let mut needed_offsets = Vec::new();
    let mut o = dyn_off as usize;
    let end = dyn_off.saturating_add(dyn_size) as usize;
    while o.saturating_add(16) <= end {
        let tag = u64_at(bytes, o).ok_or_else(|| bad("dynamic section past the end"))?;
        let val = u64_at(bytes, o.saturating_add(8))
            .ok_or_else(|| bad("dynamic section past the end"))?;
        match tag {
            0 => break,
            1 => needed_offsets.push(val as usize),
            5 => strtab = Some(val),
            _ => {}
        }
        o += 16;
    }
    if !needed_offsets.is_empty() {
        let base = strtab
            .and_then(to_offset)
            .ok_or_else(|| bad("DT_STRTAB not in a loaded segment"))?;
        for n in needed_offsets {
            let name = base.checked_add(n).and_then(|o| cstr_at(bytes, o));
            d.needed
                .push(name.ok_or_else(|| bad("DT_NEEDED name past the end"))?);
        }
    }
    Ok(d)
}

/// The default library directories of a Debian x86-64 system, searched in order.
pub const LIB_DIRS: [&str; 6] = [
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// Every file `program` needs to run, itself excluded: its interpreter and its libraries,
/// recursively, as paths on the system under `root` (given as absolute paths in the
/// target), in first-needed order.
pub fn closure(root: &Path, program: &Path, lib_dirs: &[&str]) -> Result<Vec<PathBuf>, Error> {
    let read = |p: &Path| -> Result<Vec<u8>, Error> {
        let host = root.join(p.strip_prefix("/").unwrap_or(p));
        std::fs::read(&host).map_err(|e| crate::io_error(&host, "cannot read", e))
    };
    let mut out: Vec<PathBuf> = Vec::new();
    let mut todo: Vec<(PathBuf, Vec<u8>)> = vec![(program.to_path_buf(), read(program)?)];
    while let Some((path, bytes)) = todo.pop() {
        let d = parse(&bytes, &path)?;
        if let Some(i) = d.interp {
            let i = PathBuf::from(i);
            if !out.contains(&i) {
                out.push(i.clone());
            }
        }
        for name in d.needed {
            let found = lib_dirs
                .iter()
                .map(|dir| Path::new(dir).join(&name))
                .find(|p| root.join(p.strip_prefix("/").unwrap_or(p)).is_file())
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::NotFound,
                        format!("needs {name}, found in none of {}", lib_dirs.join(", ")),
                    )
                    .at(&path)
                })?;
            if !out.contains(&found) {
                out.push(found.clone());
                let b = read(&found)?;
                todo.push((found, b));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_test_binary() {
        // The running test binary is a real dynamic ELF executable (or static: then empty).
        let exe = std::env::current_exe().unwrap();
        let d = parse(&std::fs::read(&exe).unwrap(), &exe).unwrap();
        if let Some(i) = &d.interp {
            assert!(i.contains("ld-linux"), "{i}");
            assert!(d.needed.iter().any(|n| n.starts_with("libc.so")), "{d:?}");
            let all = closure(Path::new("/"), &exe, &LIB_DIRS).unwrap();
            assert!(all
                .iter()
                .any(|p| p.ends_with(i.rsplit('/').next().unwrap())));
            assert!(all.iter().any(|p| p.to_string_lossy().contains("libc.so")));
        }
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        let e = parse(b"#!/bin/sh\n", Path::new("/x")).unwrap_err();
        assert!(
            e.to_string().contains("/x") && e.to_string().contains("ELF magic"),
            "{e}"
        );
        assert_eq!(e.kind(), crate::ErrorKind::BadElf);
        let e = parse(b"\x7fELF\x01\x01\x01\0", Path::new("/y")).unwrap_err();
        assert!(e.to_string().contains("64-bit"), "{e}");
    }
}
