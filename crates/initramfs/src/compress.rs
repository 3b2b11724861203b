//! Compression of the archive (and which compressed module files the kernel can load as they
//! are), chosen by measurement among what the kernel can unpack
//! (`CONFIG_RD_*` in `/boot/config-RELEASE`) and what this host can produce (gzip always, in
//! process via flate2; xz, zstd, lz4 when their tools are installed), plus none.
//!
//! The cost of a choice at boot is reading the image (the boot loader, or firmware) plus the
//! kernel unpacking it. Both are estimated here: reading at [`READ_BYTES_PER_S`] and
//! unpacking as fast as this host's decompressor of the same format runs. The cheapest wins;
//! the figures are returned so the build can print and record them.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::{Error, ErrorKind};

/// An assumed read speed of the boot loader for the image: firmware block I/O is slow and
/// unbuffered; 50 MB/s is a middling SATA/SD figure.
pub const READ_BYTES_PER_S: f64 = 50e6;

/// A compression format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Uncompressed cpio.
    None,
    /// gzip (flate2, in process).
    Gzip,
    /// xz with CRC32 checks (the kernel's xz unpacker needs them).
    Xz,
    /// zstd.
    Zstd,
    /// lz4 in the legacy frame format (the kernel's unpacker wants it).
    Lz4,
}

/// Every method, in the order they are tried.
pub const ALL: [Method; 5] = [
    Method::None,
    Method::Gzip,
    Method::Xz,
    Method::Zstd,
    Method::Lz4,
];

impl Method {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Method::None => "none",
            Method::Gzip => "gzip",
            Method::Xz => "xz",
            Method::Zstd => "zstd",
            Method::Lz4 => "lz4",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<Method> {
        ALL.into_iter().find(|m| m.name() == s)
    }

    /// The kernel option that must be `y` to unpack it (None: always).
    pub fn kernel_option(self) -> Option<&'static str> {
        match self {
            Method::None => None,
            Method::Gzip => Some("CONFIG_RD_GZIP"),
            Method::Xz => Some("CONFIG_RD_XZ"),
            Method::Zstd => Some("CONFIG_RD_ZSTD"),
            Method::Lz4 => Some("CONFIG_RD_LZ4"),
        }
    }

    /// The host tool and its compress and decompress arguments.
    fn tool(
        self,
    ) -> Option<(
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
    )> {
        match self {
            Method::Xz => Some(("xz", &["--check=crc32", "-6", "-c"], &["-dc"])),
            Method::Zstd => Some(("zstd", &["-q", "-19", "-c"], &["-q", "-dc"])),
            Method::Lz4 => Some(("lz4", &["-q", "-l", "-9", "-c"], &["-q", "-dc"])),
            _ => None,
        }
    }
}

/// Whether the kernel config (text of `/boot/config-RELEASE`) lets the kernel unpack `m`;
/// with no config at hand only gzip and none are assumed.
pub fn kernel_supports(config: Option<&str>, m: Method) -> bool {
    let Some(opt) = m.kernel_option() else {
        return true;
    };
    match config {
        Some(text) => text.lines().any(|l| l.trim() == format!("{opt}=y")),
        None => m == Method::Gzip,
    }
}

/// The compression of a module file, by its name: the format and the kernel option under
/// which finit_module(2) unpacks it itself (flag `MODULE_INIT_COMPRESSED_FILE`, Linux 5.17;
/// the kernel unpacks only the one format it was configured to compress its modules with,
/// kernel/module/decompress.c). None: an uncompressed `.ko`.
pub fn module_format(path: &str) -> Option<(&'static str, &'static str)> {
    let file = path.rsplit('/').next().unwrap_or(path);
    match file.rsplit_once(".ko.")?.1 {
        "xz" => Some(("xz", "CONFIG_MODULE_COMPRESS_XZ")),
        "zst" => Some(("zstd", "CONFIG_MODULE_COMPRESS_ZSTD")),
        "gz" => Some(("gzip", "CONFIG_MODULE_COMPRESS_GZIP")),
        _ => None,
    }
}

/// Why the kernel whose config is `config` (the text of `/boot/config-RELEASE`) cannot load
/// the module file at `path` as it is; None when it can (uncompressed, or compressed in the
/// format the kernel unpacks).
pub fn module_unloadable(config: Option<&str>, path: &str) -> Option<String> {
    let (format, option) = module_format(path)?;
    let has = |opt: &str| config.is_some_and(|c| c.lines().any(|l| l.trim() == format!("{opt}=y")));
    if has("CONFIG_MODULE_DECOMPRESS") && has(option) {
        return None;
    }
    Some(match config {
        None => format!("it is {format}-compressed and the kernel's config is not there to say whether the kernel unpacks modules"),
        Some(_) => format!(
            "it is {format}-compressed and the kernel does not unpack such modules (needs CONFIG_MODULE_DECOMPRESS=y and {option}=y)"
        ),
    })
}

/// Compresses `data` with `m`.
pub fn compress(m: Method, data: &[u8]) -> Result<Vec<u8>, Error> {
    match m {
        Method::None => Ok(data.to_vec()),
        Method::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            e.write_all(data)
                .and_then(|_| e.finish())
                .map_err(|e| Error::new(ErrorKind::Compression, format!("gzip: {e}")))
        }
        _ => {
            let (tool, args, _) = m.tool().expect("external method");
            pipe(tool, args, data)
        }
    }
}

/// Decompresses `data` (used to time unpacking and to check the result).
pub fn decompress(m: Method, data: &[u8]) -> Result<Vec<u8>, Error> {
    match m {
        Method::None => Ok(data.to_vec()),
        Method::Gzip => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(data)
                .read_to_end(&mut out)
                .map_err(|e| Error::new(ErrorKind::Compression, format!("gunzip: {e}")))?;
            Ok(out)
        }
        _ => {
            let (tool, _, args) = m.tool().expect("external method");
            pipe(tool, args, data)
        }
    }
}

fn pipe(tool: &str, args: &[&str], data: &[u8]) -> Result<Vec<u8>, Error> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::new(ErrorKind::Compression, format!("cannot run {tool}: {e}")))?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = data.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child
        .wait_with_output()
        .map_err(|e| Error::new(ErrorKind::Compression, format!("{tool}: {e}")))?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(Error::new(
            ErrorKind::Compression,
            format!(
                "{tool} {} failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    Ok(out.stdout)
}

/// Whether this host can produce `m`.
pub fn host_has(m: Method) -> bool {
    match m.tool() {
        None => true,
        Some((tool, _, _)) => Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok(),
    }
}

/// One measured candidate.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The method.
    pub method: Method,
    /// Compressed size in bytes.
    pub bytes: usize,
    /// Seconds this host took to decompress it (best of three).
    pub unpack_s: f64,
    /// Estimated boot cost: reading at [`READ_BYTES_PER_S`] plus unpacking.
    pub cost_s: f64,
    /// The compressed bytes.
    pub data: Vec<u8>,
}

/// Compresses `data` with every method in `candidates`, times unpacking, and returns them
/// cheapest first. A method whose tool fails is left out (its error is returned beside).
pub fn measure(data: &[u8], candidates: &[Method]) -> (Vec<Measured>, Vec<String>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for &m in candidates {
        let packed = match compress(m, data) {
            Ok(p) => p,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        let mut best = f64::MAX;
        let mut ok = true;
        for _ in 0..3 {
            let t = Instant::now();
            match decompress(m, &packed) {
                Ok(back) if back.len() == data.len() => best = best.min(t.elapsed().as_secs_f64()),
                Ok(_) => {
                    errors.push(format!("{}: the round trip changed the size", m.name()));
                    ok = false;
                    break;
                }
                Err(e) => {
                    errors.push(e.to_string());
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            continue;
        }
        // The uncompressed image is "unpacked" by a copy; count it as free.
        let unpack_s = if m == Method::None { 0.0 } else { best };
        out.push(Measured {
            method: m,
            bytes: packed.len(),
            unpack_s,
            cost_s: packed.len() as f64 / READ_BYTES_PER_S + unpack_s,
            data: packed,
        });
    }
    out.sort_by(|a, b| a.cost_s.total_cmp(&b.cost_s));
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_modules_need_the_kernels_unpacker() {
        assert_eq!(
            module_format("/lib/modules/6.1/kernel/fs/ext4/ext4.ko"),
            None
        );
        assert_eq!(
            module_format("/usr/lib/modules/6.12/kernel/fs/ext4/ext4.ko.xz"),
            Some(("xz", "CONFIG_MODULE_COMPRESS_XZ"))
        );
        assert_eq!(module_format("a/b.ko.zst").map(|f| f.0), Some("zstd"));
        // A directory named like a module does not make its files compressed.
        assert_eq!(module_format("/x.ko.xz/virtio.ko"), None);
        // Debian 13's kernel: xz modules, unpacked by the kernel.
        let trixie = "CONFIG_MODULE_COMPRESS_XZ=y\nCONFIG_MODULE_COMPRESS_ALL=y\nCONFIG_MODULE_DECOMPRESS=y\n";
        assert_eq!(module_unloadable(Some(trixie), "/m/ext4.ko.xz"), None);
        assert_eq!(module_unloadable(Some(trixie), "/m/ext4.ko"), None);
        let zst = module_unloadable(Some(trixie), "/m/ext4.ko.zst").unwrap();
        assert!(zst.contains("CONFIG_MODULE_COMPRESS_ZSTD=y"), "{zst}");
        let no_unpack = module_unloadable(
            Some("CONFIG_MODULE_COMPRESS_XZ=y\n# CONFIG_MODULE_DECOMPRESS is not set\n"),
            "/m/a.ko.xz",
        )
        .unwrap();
        assert!(
            no_unpack.contains("CONFIG_MODULE_DECOMPRESS=y"),
            "{no_unpack}"
        );
        assert!(module_unloadable(None, "/m/a.ko.xz")
            .unwrap()
            .contains("config is not there"));
        assert_eq!(module_unloadable(None, "/m/a.ko"), None);
    }

    #[test]
    fn kernel_config_decides() {
        let cfg = "CONFIG_RD_GZIP=y\n# CONFIG_RD_XZ is not set\nCONFIG_RD_ZSTD=y\n";
        assert!(kernel_supports(Some(cfg), Method::Gzip));
        assert!(!kernel_supports(Some(cfg), Method::Xz));
        assert!(kernel_supports(Some(cfg), Method::Zstd));
        assert!(kernel_supports(Some(cfg), Method::None));
        assert!(kernel_supports(None, Method::Gzip));
        assert!(!kernel_supports(None, Method::Zstd));
        assert_eq!(Method::parse("lz4"), Some(Method::Lz4));
        assert_eq!(Method::parse("lzma"), None);
    }

    #[test]
    fn gzip_round_trip_and_measure_orders_by_cost() {
        // Compressible data: gzip must beat none on size.
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 7) as u8).collect();
        let packed = compress(Method::Gzip, &data).unwrap();
        assert!(packed.len() < data.len() / 10);
        assert_eq!(&packed[..2], &[0x1f, 0x8b], "gzip magic");
        assert_eq!(decompress(Method::Gzip, &packed).unwrap(), data);
        let (m, errors) = measure(&data, &[Method::None, Method::Gzip]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(m.len(), 2);
        assert!(m[0].cost_s <= m[1].cost_s);
        let none = m.iter().find(|x| x.method == Method::None).unwrap();
        assert_eq!(none.bytes, data.len());
    }

    #[test]
    fn external_tools_when_present() {
        for m in [Method::Xz, Method::Zstd, Method::Lz4] {
            if !host_has(m) {
                testkit::skip(&format!("no {} on this host", m.name()));
                continue;
            }
            let data = b"bootprint initramfs ".repeat(1000);
            let p = compress(m, &data).unwrap();
            assert!(p.len() < data.len(), "{}", m.name());
            assert_eq!(decompress(m, &p).unwrap(), data, "{}", m.name());
        }
        if m_xz_magic_ok() {
            // xz's stream header says CRC32 (check type 1), which the kernel requires.
            let p = compress(Method::Xz, b"x").unwrap();
            assert_eq!(&p[..6], b"\xfd7zXZ\0");
            assert_eq!(p[7], 1, "CRC32 check");
        }
    }

    fn m_xz_magic_ok() -> bool {
        host_has(Method::Xz)
    }
}
