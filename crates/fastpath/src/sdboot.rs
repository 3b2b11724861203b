//! The entry systemd-boot boots next, read as systemd reads it for `bootctl list` and
//! `systemctl kexec` (src/shared/bootspec.c of systemd 252 to 257; the Boot Loader
//! Specification's type #1 entries; loader.conf(5); the UAPI Version Format Specification
//! for the order):
//!
//! - the entries: every `loader/entries/*.conf` on the EFI system partition and on the
//!   extended boot loader partition (`/efi`, `/boot`, `/boot/efi`: those that hold
//!   `loader/`), each `KEY VALUE` per line (`linux`, `initrd` and `options` may repeat; a
//!   path is from the root of the partition the entry is on);
//! - their order: entries with a `sort-key` first, by sort key, then `machine-id`, then
//!   `version` newest first; then by file name, newest version first;
//! - the default: the EFI variable `LoaderEntryOneShot` (a one-time choice, `systemctl
//!   reboot --boot-loader-entry=`), else `LoaderEntryDefault` (`bootctl set-default`), else
//!   loader.conf's `default` glob, else the first entry; a name or glob that matches no entry
//!   falls through to the next, each matched case-insensitively as fnmatch(3) does.
//!
//! What systemd-boot decides at boot from anything else is refused, never guessed: unified
//! kernel images (`EFI/Linux/*.efi`, type #2) anywhere, boot counting (`NAME+LEFT-DONE.conf`),
//! `default @saved`, `~` or `^` in the names the order compares, and a chosen entry that
//! starts an EFI program (`efi`, `uki`), needs a device tree, is for another architecture or
//! gives no command line.

use std::ffi::CString;
use std::fs;
use std::path::{Path, PathBuf};

use crate::{error_in, BootEntry};

/// The vendor GUID of systemd-boot's EFI variables (systemd's Boot Loader Interface).
pub const VENDOR: &str = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";

/// Where systemd looks for the EFI system partition and the extended boot loader partition,
/// in its order, relative to the root.
pub const PARTITIONS: [&str; 3] = ["efi", "boot", "boot/efi"];

/// loader.conf's `default`: the file as this system shows it, its line, and the glob.
pub type DefaultPattern = (String, usize, String);

/// The largest entry or loader.conf read (an entry is a few hundred bytes).
const MAX_CONF_BYTES: usize = 64 * 1024;

/// One type #1 entry as its file gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// Its id: the file name (`debian-6.12.117+deb13-amd64.conf`).
    pub id: String,
    /// The file, as this system shows it (`/boot/efi/loader/entries/ID`).
    pub file: String,
    /// The partition it is on, under the root given.
    pub partition: PathBuf,
    /// `title`.
    pub title: Option<String>,
    /// `sort-key`.
    pub sort_key: Option<String>,
    /// `machine-id`.
    pub machine_id: Option<String>,
    /// `version`.
    pub version: Option<String>,
    /// `architecture`.
    pub architecture: Option<String>,
    /// `linux`: the kernel, from the partition's root.
    pub linux: Option<String>,
    /// `initrd` lines, in order.
    pub initrds: Vec<String>,
    /// `options` lines, in order (joined by spaces: the command line).
    pub options: Vec<String>,
    /// Keys that make systemd-boot start something bootprint cannot kexec (`efi`, `uki`,
    /// `uki-url`, `devicetree`, `devicetree-overlay`), with their lines.
    pub unsupported: Vec<(usize, String)>,
}

/// Parses one entry file (`file`: how messages name it). Unknown keys are ignored, as
/// systemd ignores them.
pub fn parse_entry(id: &str, file: &str, partition: &Path, text: &str) -> Entry {
    let mut e = Entry {
        id: id.to_string(),
        file: file.to_string(),
        partition: partition.to_path_buf(),
        ..Entry::default()
    };
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = match line.split_once([' ', '\t']) {
            Some((k, v)) => (k, v.trim().to_string()),
            None => (line, String::new()),
        };
        match key {
            "title" => e.title = Some(value),
            "sort-key" => e.sort_key = Some(value),
            "machine-id" => e.machine_id = Some(value),
            "version" => e.version = Some(value),
            "architecture" => e.architecture = Some(value),
            "linux" => e.linux = Some(value),
            "initrd" => e.initrds.push(value),
            "options" => e.options.push(value),
            "efi" | "uki" | "uki-url" | "devicetree" | "devicetree-overlay" => {
                e.unsupported.push((n + 1, key.to_string()))
            }
            _ => {}
        }
    }
    e
}

/// loader.conf's `default` (its value and line), if set; the last one counts.
pub fn default_pattern(text: &str) -> Option<(usize, String)> {
    let mut out = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(("default", v)) = line.split_once([' ', '\t']) {
            out = Some((n + 1, v.trim().to_string()));
        }
    }
    out
}

/// Compares two version strings as the UAPI Version Format Specification says (systemd's
/// `strverscmp_improved`) for the characters it and Debian's kernel names use: ASCII letters
/// and digits, `-` and `.`, every other character a separator. `~` and `^` are refused
/// before any comparison ([`next_entry`]).
pub fn cmp_version(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    let special = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'~' | b'^');
    loop {
        while i < a.len() && !special(a[i]) {
            i += 1;
        }
        while j < b.len() && !special(b[j]) {
            j += 1;
        }
        match (i >= a.len(), j >= b.len()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        for (sep, with_it) in [(b'-', Ordering::Less), (b'.', Ordering::Less)] {
            match (a[i] == sep, b[j] == sep) {
                (true, false) => return with_it,
                (false, true) => return with_it.reverse(),
                _ => {}
            }
        }
        if a[i] == b'-' || a[i] == b'.' {
            i += 1;
            j += 1;
            continue;
        }
        if a[i].is_ascii_digit() || b[j].is_ascii_digit() {
            let run = |s: &[u8], mut k: usize| {
                while k < s.len() && s[k] == b'0' {
                    k += 1;
                }
                let start = k;
                while k < s.len() && s[k].is_ascii_digit() {
                    k += 1;
                }
                (start, k)
            };
            let ((sa, ea), (sb, eb)) = (run(a, i), run(b, j));
            let o = (ea - sa)
                .cmp(&(eb - sb))
                .then_with(|| a[sa..ea].cmp(&b[sb..eb]));
            if o.is_ne() {
                return o;
            }
            (i, j) = (ea, eb);
            continue;
        }
        // Letters: one by one (`A` < `a` in ASCII); the longer run is newer.
        loop {
            let x = a.get(i).filter(|c| c.is_ascii_alphabetic());
            let y = b.get(j).filter(|c| c.is_ascii_alphabetic());
            match (x, y) {
                (Some(x), Some(y)) if x == y => {
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) => return x.cmp(y),
                (Some(_), None) => return Ordering::Greater,
                (None, Some(_)) => return Ordering::Less,
                (None, None) => break,
            }
        }
    }
}

/// systemd's order of entries (bootspec.c's `boot_entry_compare`): the first is the default
/// when nothing else chooses.
fn cmp_entries(a: &Entry, b: &Entry) -> std::cmp::Ordering {
    let o = b.sort_key.is_some().cmp(&a.sort_key.is_some());
    if o.is_ne() {
        return o;
    }
    if let (Some(x), Some(y)) = (&a.sort_key, &b.sort_key) {
        let o = x
            .cmp(y)
            .then_with(|| a.machine_id.cmp(&b.machine_id))
            .then_with(|| {
                cmp_version(
                    b.version.as_deref().unwrap_or(""),
                    a.version.as_deref().unwrap_or(""),
                )
            });
        if o.is_ne() {
            return o;
        }
    }
    cmp_version(&b.id, &a.id)
}

/// Whether `name` matches the glob `pattern` as fnmatch(3) with `FNM_CASEFOLD` decides.
fn fnmatch_casefold(pattern: &str, name: &str) -> bool {
    let (Ok(p), Ok(n)) = (CString::new(pattern), CString::new(name)) else {
        return false;
    };
    // SAFETY: both are NUL-terminated strings that outlive the call.
    unsafe { libc::fnmatch(p.as_ptr(), n.as_ptr(), libc::FNM_CASEFOLD) == 0 }
}

/// A string EFI variable of systemd-boot's under `root` (efivarfs: four bytes of
/// attributes, then UTF-16LE up to a NUL); None when absent or empty.
pub fn efi_string(root: &Path, name: &str) -> Option<String> {
    let path = root.join(crate::EFIVARS).join(format!("{name}-{VENDOR}"));
    let data = fs::read(path).ok()?;
    let units: Vec<u16> = data
        .get(4..)?
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    let s = String::from_utf16(&units).ok()?;
    (!s.is_empty()).then_some(s)
}

/// The partitions under `root` that hold systemd-boot's `loader/` directory, in systemd's
/// order, each once (a bind mount or a link to the same directory counts once).
pub fn partitions(root: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for p in PARTITIONS {
        let dir = root.join(p);
        let Ok(m) = fs::metadata(dir.join("loader")) else {
            continue;
        };
        if m.is_dir() && !seen.contains(&(m.dev(), m.ino())) {
            seen.push((m.dev(), m.ino()));
            out.push(dir);
        }
    }
    out
}

/// How a path under `root` is shown: as on the running system.
fn shown(root: &Path, p: &Path) -> String {
    match p.strip_prefix(root) {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => p.display().to_string(),
    }
}

/// Reads a small regular file as text.
fn read_conf(path: &Path) -> Result<String, String> {
    let data = sys::read_regular(path, MAX_CONF_BYTES as u64)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    String::from_utf8(data).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

/// Every type #1 entry under `root`, in systemd's order, and loader.conf's `default` (its
/// file and line); Err: what systemd-boot would decide that bootprint does not read.
pub fn entries(root: &Path) -> Result<(Vec<Entry>, Option<DefaultPattern>), String> {
    let parts = partitions(root);
    if parts.is_empty() {
        return Err(format!(
            "no systemd-boot configuration: none of /{} holds loader/",
            PARTITIONS.join(", /")
        ));
    }
    let mut list = Vec::new();
    let mut pattern = None;
    for part in &parts {
        let conf = part.join("loader/loader.conf");
        if pattern.is_none() && conf.is_file() {
            let text = read_conf(&conf)?;
            pattern = default_pattern(&text).map(|(line, v)| (shown(root, &conf), line, v));
        }
        let ukis = part.join("EFI/Linux");
        if let Some(uki) = fs::read_dir(&ukis)
            .into_iter()
            .flatten()
            .flatten()
            .find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .to_ascii_lowercase()
                    .ends_with(".efi")
            })
        {
            return Err(format!(
                "{} is a unified kernel image, which bootprint does not read (systemd-boot \
                 lists it with the entries): use `systemctl kexec`",
                shown(root, &uki.path())
            ));
        }
        let dir = part.join("loader/entries");
        let mut names: Vec<String> = fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.to_ascii_lowercase().ends_with(".conf"))
            .collect();
        names.sort();
        for name in names {
            let path = dir.join(&name);
            let file = shown(root, &path);
            if counted(&name) {
                return Err(format!(
                    "{file}: boot counting (`+LEFT-DONE` in the name): which entry \
                     systemd-boot picks depends on the tries left"
                ));
            }
            let text = read_conf(&path)?;
            list.push(parse_entry(&name, &file, part, &text));
        }
    }
    for e in &list {
        for (what, v) in [
            ("name", Some(&e.id)),
            ("version", e.version.as_ref()),
            ("sort-key", e.sort_key.as_ref()),
        ] {
            if v.is_some_and(|v| v.contains(['~', '^'])) {
                return Err(format!(
                    "{}: its {what} has `~` or `^`, whose place in systemd-boot's order \
                     bootprint does not decide",
                    e.file
                ));
            }
        }
    }
    list.sort_by(cmp_entries);
    Ok((list, pattern))
}

/// Whether an entry's file name carries a boot counter (`NAME+LEFT.conf`,
/// `NAME+LEFT-DONE.conf`).
fn counted(name: &str) -> bool {
    let stem = &name[..name.len() - ".conf".len()];
    let Some((_, counter)) = stem.rsplit_once('+') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    match counter.split_once('-') {
        Some((left, done)) => digits(left) && digits(done),
        None => digits(counter),
    }
}

/// The index in `list` (in systemd's order) of the entry systemd-boot boots next, and why:
/// the one-time variable, the default variable, loader.conf's pattern, or the first.
pub fn choose(
    list: &[Entry],
    oneshot: Option<&str>,
    default_var: Option<&str>,
    pattern: Option<&DefaultPattern>,
) -> Result<(usize, String), String> {
    if list.is_empty() {
        return Err("systemd-boot has no entries (loader/entries/*.conf)".into());
    }
    let find = |p: &str| list.iter().position(|e| fnmatch_casefold(p, &e.id));
    if let Some(i) = oneshot.and_then(find) {
        return Ok((i, "the one-time LoaderEntryOneShot".into()));
    }
    if let Some(i) = default_var.and_then(find) {
        return Ok((i, "LoaderEntryDefault (bootctl set-default)".into()));
    }
    if let Some((file, line, p)) = pattern {
        if p.starts_with('@') {
            return Err(format!(
                "{file}:{line}: `default {p}`: systemd-boot boots the entry it booted last, \
                 which bootprint does not read"
            ));
        }
        if let Some(i) = find(p) {
            return Ok((i, format!("{file}:{line} `default {p}`")));
        }
    }
    Ok((0, "the first entry in systemd-boot's order".into()))
}

/// The machine's architecture in systemd-boot's words (`x64`, `aa64`, ...).
fn efi_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "x64",
        "x86" => "ia32",
        "aarch64" => "aa64",
        "arm" => "arm",
        "riscv64" => "riscv64",
        "loongarch64" => "loongarch64",
        other => other,
    }
}

/// The entry systemd-boot boots next on the system under `root` (its EFI variables from
/// `root`'s efivarfs), as a kexec boots it, and the entry's file.
pub fn next_entry(root: &Path) -> Result<(BootEntry, PathBuf), String> {
    let (list, pattern) = entries(root)?;
    let oneshot = efi_string(root, "LoaderEntryOneShot");
    let default_var = efi_string(root, "LoaderEntryDefault");
    let (i, how) = choose(
        &list,
        oneshot.as_deref(),
        default_var.as_deref(),
        pattern.as_ref(),
    )?;
    let e = &list[i];
    to_boot_entry(root, e, &how).map(|b| (b, e.partition.join("loader/entries").join(&e.id)))
}

/// What a kexec of `e` boots, or why it cannot.
fn to_boot_entry(root: &Path, e: &Entry, how: &str) -> Result<BootEntry, String> {
    let err = error_in(&e.file);
    let refuse =
        |line: usize, message: String| Err::<BootEntry, String>(err(line, message).to_string());
    if let Some((line, key)) = e.unsupported.first() {
        return refuse(
            *line,
            format!(
                "the default entry has `{key}`: systemd-boot starts what bootprint does not kexec"
            ),
        );
    }
    if let Some(a) = &e.architecture {
        if !a.eq_ignore_ascii_case(efi_arch()) {
            return refuse(
                0,
                format!(
                    "the default entry is for architecture {a}, this machine is {}",
                    efi_arch()
                ),
            );
        }
    }
    let Some(linux) = &e.linux else {
        return refuse(0, "the default entry has no `linux` line".into());
    };
    if e.options.is_empty() {
        return refuse(
            0,
            "the default entry gives no command line (`options`)".into(),
        );
    }
    let on_partition = |p: &str| -> Result<PathBuf, String> {
        let path = e.partition.join(p.trim_start_matches('/'));
        if path.is_file() {
            Ok(path)
        } else {
            Err(err(
                0,
                format!("`{p}` is not a file here ({})", shown(root, &path)),
            )
            .to_string())
        }
    };
    Ok(BootEntry {
        kernel: on_partition(linux)?,
        initrds: e
            .initrds
            .iter()
            .map(|p| on_partition(p))
            .collect::<Result<_, _>>()?,
        cmdline: e.options.join(" "),
        source: format!(
            "{} `{}` ({how})",
            e.file,
            e.title.as_deref().unwrap_or(&e.id)
        ),
    })
}

/// The id `bootctl list --json=short` marks `"isDefault": true`, if its output has one
/// (systemd's own reading, for a cross-check). Pure.
pub fn bootctl_default(json: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v.as_array()?
        .iter()
        .find(|e| e["isDefault"].as_bool() == Some(true))?["id"]
        .as_str()
        .map(str::to_string)
}

/// Asks the running system's `bootctl` which entry is the default; None when it is not
/// installed, fails, or does not say (systemd before 253 prints no `isDefault`).
pub fn ask_bootctl() -> Option<String> {
    let out = std::process::Command::new("bootctl")
        .args(["list", "--json=short", "--no-pager"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    bootctl_default(&String::from_utf8_lossy(&out.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering::*;

    /// The specification's examples that use only letters, digits, `-`, `.` and
    /// separators, and the order of Debian's kernel names.
    #[test]
    fn versions_compare_as_the_uapi_specification_says() {
        for (a, b, o) in [
            ("11", "11", Equal),
            ("systemd-123", "systemd-123", Equal),
            ("bar-123", "foo-123", Less),
            ("123a", "123", Greater),
            ("123.a", "123", Greater),
            ("123.a", "123.b", Less),
            ("123a", "123.a", Greater),
            ("A", "a", Less),
            ("", "0", Less),
            ("0.", "0", Greater),
            ("0.0", "0", Greater),
            ("1_", "1", Equal),
            ("_1", "1", Equal),
            ("1_", "1.2", Less),
            ("1_2_3", "1.3.3", Greater),
            ("1+", "1", Equal),
            ("+1", "1", Equal),
            ("1+2+3", "1.3.3", Greater),
            ("122.1", "123-1", Less),
            ("123", "123-a", Less),
            ("123-a", "123-a.1", Less),
            ("123-1", "123-1.1", Less),
            ("123.1-1", "123a-1", Less),
            ("10.0001", "10.1", Equal),
            (
                "debian-6.12.117+deb13-amd64.conf",
                "debian-6.12.118+deb13-amd64.conf",
                Less,
            ),
            (
                "debian-6.1.0-9-amd64.conf",
                "debian-6.1.0-13-amd64.conf",
                Less,
            ),
            (
                "debian-6.12.117+deb13-amd64-bootprint.conf",
                "debian-6.12.117+deb13-amd64.conf",
                Less,
            ),
        ] {
            assert_eq!(cmp_version(a, b), o, "{a} vs {b}");
            assert_eq!(cmp_version(b, a), o.reverse(), "{b} vs {a}");
        }
    }

    #[test]
    fn boot_counters_are_recognised() {
        assert!(counted("debian-6.12+3.conf"));
        assert!(counted("debian-6.12+3-1.conf"));
        assert!(!counted("debian-6.12.117+deb13-amd64.conf"));
        assert!(!counted("plain.conf"));
    }

    #[test]
    fn entries_sort_as_systemd_sorts_them() {
        let e = |id: &str, key: Option<&str>, version: Option<&str>| Entry {
            id: id.into(),
            sort_key: key.map(str::to_string),
            version: version.map(str::to_string),
            ..Entry::default()
        };
        let mut v = [
            e("zz-old.conf", None, None),
            e("debian-6.1.conf", Some("debian"), Some("6.1")),
            e("arch.conf", Some("arch"), Some("1")),
            e("debian-6.12.conf", Some("debian"), Some("6.12")),
            e("zz-new.conf", None, None),
        ];
        v.sort_by(cmp_entries);
        let ids: Vec<&str> = v.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "arch.conf",
                "debian-6.12.conf",
                "debian-6.1.conf",
                "zz-old.conf",
                "zz-new.conf"
            ]
        );
    }

    #[test]
    fn bootctls_default_is_read_from_its_json() {
        let json = r#"[{"type":"type1","id":"a.conf","isDefault":false},{"type":"type1","id":"b.conf","isDefault":true}]"#;
        assert_eq!(bootctl_default(json).as_deref(), Some("b.conf"));
        assert_eq!(bootctl_default(r#"[{"id":"a.conf"}]"#), None);
        assert_eq!(bootctl_default("not json"), None);
    }
}
