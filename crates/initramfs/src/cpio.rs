//! A cpio "newc" archive writer, the format the kernel unpacks into its rootfs.
//!
//! Format facts from the kernel's Documentation/driver-api/early-userspace/buffer-format.rst:
//! each entry is a 110-byte ASCII header (`070701` and thirteen 8-digit hex fields: ino,
//! mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor, rdevminor,
//! namesize including the NUL, check), the NUL-terminated name padded to a multiple of four
//! bytes (counting the header), then the data padded to four; a `TRAILER!!!` entry ends the
//! archive. Names have no leading `/`. Everything is owned by root with mtime 0, so the same
//! inputs give the same bytes.

/// File type bits of `mode` (from `stat(2)`).
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;

/// An archive being written in memory.
#[derive(Debug, Default)]
pub struct Archive {
    buf: Vec<u8>,
    next_ino: u32,
    names: std::collections::HashSet<String>,
}

impl Archive {
    /// An empty archive.
    pub fn new() -> Archive {
        Archive {
            buf: Vec::new(),
            next_ino: 1,
            names: Default::default(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn entry(&mut self, name: &str, mode: u32, nlink: u32, rdev: (u32, u32), data: &[u8]) {
        let name = name.trim_start_matches('/');
        let ino = self.next_ino;
        self.next_ino += 1;
        let fields = [
            ino,
            mode,
            0,
            0,
            nlink,
            0,
            data.len() as u32,
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0,
        ];
        self.buf.extend_from_slice(b"070701");
        for f in fields {
            self.buf.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.push(0);
        self.pad();
        self.buf.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while self.buf.len() & 3 != 0 {
            self.buf.push(0);
        }
    }

    /// Whether an entry of this name was added.
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name.trim_start_matches('/'))
    }

    fn claim(&mut self, name: &str) -> bool {
        self.names.insert(name.trim_start_matches('/').to_string())
    }

    /// Adds a directory and, first, any parents not yet added.
    pub fn dir(&mut self, name: &str, perm: u32) {
        let name = name.trim_matches('/');
        if name.is_empty() || self.contains(name) {
            return;
        }
        if let Some((parent, _)) = name.rsplit_once('/') {
            self.dir(parent, 0o755);
        }
        self.claim(name);
        self.entry(name, S_IFDIR | (perm & 0o7777), 2, (0, 0), &[]);
    }

    /// Adds a regular file (its parent directories too); a second file of the same name is
    /// ignored, so shared libraries named twice are stored once.
    pub fn file(&mut self, name: &str, perm: u32, data: &[u8]) {
        if self.contains(name) {
            return;
        }
        self.parents(name);
        self.claim(name);
        self.entry(name, S_IFREG | (perm & 0o7777), 1, (0, 0), data);
    }

    /// Adds a symbolic link.
    pub fn symlink(&mut self, name: &str, target: &str) {
        if self.contains(name) {
            return;
        }
        self.parents(name);
        self.claim(name);
        self.entry(name, S_IFLNK | 0o777, 1, (0, 0), target.as_bytes());
    }

    /// Adds a character device node (`/dev/console` must exist before /init runs: the
    /// kernel opens it for init's standard input and output).
    pub fn char_dev(&mut self, name: &str, perm: u32, major: u32, minor: u32) {
        if self.contains(name) {
            return;
        }
        self.parents(name);
        self.claim(name);
        self.entry(name, S_IFCHR | (perm & 0o7777), 1, (major, minor), &[]);
    }

    fn parents(&mut self, name: &str) {
        if let Some((parent, _)) = name.trim_matches('/').rsplit_once('/') {
            self.dir(parent, 0o755);
        }
    }

    /// Ends the archive with its trailer and returns its bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, 1, (0, 0), &[]);
        self.buf
    }
}

/// One entry read back (for tests and `bootprint initramfs list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name, without a leading `/`.
    pub name: String,
    /// `st_mode`.
    pub mode: u32,
    /// Device numbers of a node.
    pub rdev: (u32, u32),
    /// File data or link target.
    pub data: Vec<u8>,
}

/// Reads a newc archive (uncompressed) up to its trailer; an error says at which byte
/// offset what was expected.
pub fn read(bytes: &[u8]) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let align = |x: usize| (x + 3) & !3;
    loop {
        let h = bytes.get(pos..pos + 110).ok_or(format!(
            "offset {pos}: expected a 110-byte header, found the end"
        ))?;
        if &h[..6] != b"070701" {
            return Err(format!("offset {pos}: expected the newc magic 070701"));
        }
        let field = |i: usize| -> Result<u32, String> {
            let s = std::str::from_utf8(&h[6 + 8 * i..14 + 8 * i]).map_err(|e| e.to_string())?;
            u32::from_str_radix(s, 16).map_err(|_| format!("offset {pos}: expected hex field {i}"))
        };
        let mode = field(1)?;
        let size = field(6)? as usize;
        let rdev = (field(9)?, field(10)?);
        let namesize = field(11)? as usize;
        let name_end = pos + 110 + namesize;
        let name = bytes
            .get(pos + 110..name_end.saturating_sub(1))
            .ok_or(format!("offset {pos}: name runs past the end"))?;
        let name = String::from_utf8_lossy(name).into_owned();
        let data_start = align(name_end);
        let data = bytes
            .get(data_start..data_start + size)
            .ok_or(format!("offset {pos}: data of {name} runs past the end"))?
            .to_vec();
        pos = align(data_start + size);
        if name == "TRAILER!!!" {
            return Ok(out);
        }
        out.push(Entry {
            name,
            mode,
            rdev,
            data,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout_and_padding() {
        let mut a = Archive::new();
        a.file("/init", 0o755, b"abcde");
        let bytes = a.finish();
        // Parent-less file: first entry is `init`.
        assert_eq!(&bytes[..6], b"070701");
        let hex = std::str::from_utf8(&bytes[6..110]).unwrap();
        assert_eq!(&hex[8..16], "000081ed", "mode: regular 0755");
        assert_eq!(&hex[48..56], "00000005", "file size");
        assert_eq!(&hex[88..96], "00000005", "namesize counts the NUL");
        // 110 + 5 = 115 -> padded to 116, then 5 data bytes -> padded to 124.
        assert_eq!(&bytes[110..116], b"init\0\0");
        assert_eq!(&bytes[116..121], b"abcde");
        assert_eq!(&bytes[121..124], &[0, 0, 0]);
        assert_eq!(&bytes[124..130], b"070701");
        assert_eq!(bytes.len() % 4, 0);
    }

    #[test]
    fn round_trip_with_parents_nodes_and_links() {
        let mut a = Archive::new();
        a.file("lib/modules/6.1/kernel/a.ko", 0o644, &[1, 2, 3]);
        a.file("lib/modules/6.1/kernel/a.ko", 0o644, &[9]);
        a.symlink("lib64/ld.so", "/lib/ld.so");
        a.char_dev("dev/console", 0o600, 5, 1);
        a.dir("proc", 0o555);
        let e = read(&a.finish()).unwrap();
        let names: Vec<&str> = e.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "lib",
                "lib/modules",
                "lib/modules/6.1",
                "lib/modules/6.1/kernel",
                "lib/modules/6.1/kernel/a.ko",
                "lib64",
                "lib64/ld.so",
                "dev",
                "dev/console",
                "proc"
            ]
        );
        assert_eq!(
            e[4].data,
            vec![1, 2, 3],
            "the first of two same-named files is kept"
        );
        assert_eq!(e[6].mode, 0o120777);
        assert_eq!(e[6].data, b"/lib/ld.so");
        assert_eq!((e[8].mode, e[8].rdev), (0o020600, (5, 1)));
        assert_eq!(e[9].mode, 0o040555);
        assert!(read(b"070707").unwrap_err().contains("offset 0"));
    }

    #[test]
    fn cpio_tool_reads_it() {
        // The reference reader, when the host has it.
        if std::process::Command::new("cpio")
            .arg("--version")
            .output()
            .is_err()
        {
            testkit::skip("no cpio on this host");
            return;
        }
        let mut a = Archive::new();
        a.file("bootprint/plan", 0o644, b"hello\n");
        a.symlink("x", "bootprint/plan");
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("a.cpio"), a.finish()).unwrap();
        let out = std::process::Command::new("cpio")
            .args(["-it", "-F"])
            .arg(dir.join("a.cpio"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let listed = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            listed.lines().collect::<Vec<_>>(),
            ["bootprint", "bootprint/plan", "x"]
        );
    }
}
