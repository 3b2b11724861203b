//! Firmware and boot loader time, which the kernel log cannot show: pure parsers for the ACPI
//! Firmware Basic Boot Performance Table (FBPT) and for the EFI variables a boot loader such
//! as systemd-boot leaves (`LoaderTimeInitUSec`, `LoaderTimeExecUSec`), plus readers that take
//! the sysfs directory as a parameter so tests use fake trees.
//!
//! Facts used (from the ACPI 6.x specification, section "Firmware Performance Data Table",
//! Linux's drivers/acpi/acpi_fpdt.c and systemd's boot loader interface):
//! - The FBPT starts with the signature `FBPT` and a little-endian u32 length, then records
//!   with a header (u16 type, u8 length, u8 revision). Type 2 is the Firmware Basic Boot
//!   Performance Data Record, 48 bytes: 4 reserved bytes, then five u64 nanosecond times
//!   since the processor's reset: ResetEnd, OsLoaderLoadImageStart, OsLoaderStartImageStart,
//!   ExitBootServicesEntry, ExitBootServicesExit.
//! - Linux (5.12 and later) shows them as decimal text in `/sys/firmware/acpi/fpdt/boot/`:
//!   `firmware_start_ns`, `bootloader_load_ns`, `bootloader_launch_ns`,
//!   `exitbootservice_start_ns`, `exitbootservice_end_ns`.
//! - An EFI variable file under `/sys/firmware/efi/efivars/` is a u32 of attributes followed
//!   by the value; the loader times are UTF-16LE decimal microseconds ending in a NUL, under
//!   the vendor GUID `4a67b082-0a4c-41cf-b6c7-440b29bb8c4f`. As systemd-analyze reads them,
//!   firmware time is `LoaderTimeInitUSec` and loader time is the difference of the two.

use std::path::Path;

use serde::Serialize;

/// The sysfs directory with the FPDT boot record.
pub const FPDT_SYSFS: &str = "/sys/firmware/acpi/fpdt/boot";
/// The EFI variables directory.
pub const EFIVARS: &str = "/sys/firmware/efi/efivars";
/// The systemd boot loader interface vendor GUID.
pub const LOADER_GUID: &str = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";

/// An error in firmware data: which input, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirmwareError {
    /// The file or table.
    pub what: String,
    /// What was wrong.
    pub reason: String,
}

impl std::fmt::Display for FirmwareError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.reason)
    }
}

impl std::error::Error for FirmwareError {}

fn err(what: &str, reason: impl Into<String>) -> FirmwareError {
    FirmwareError {
        what: what.to_string(),
        reason: reason.into(),
    }
}

/// The FPDT boot record: nanoseconds since the processor's reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FpdtBoot {
    /// ResetEnd: the firmware starts.
    pub reset_end_ns: u64,
    /// OsLoaderLoadImageStart: the firmware starts loading the OS loader.
    pub loader_load_ns: u64,
    /// OsLoaderStartImageStart: the OS loader starts.
    pub loader_start_ns: u64,
    /// ExitBootServicesEntry: the loader (or the kernel's EFI stub) leaves the firmware.
    pub exit_boot_services_entry_ns: u64,
    /// ExitBootServicesExit.
    pub exit_boot_services_exit_ns: u64,
}

impl FpdtBoot {
    /// Firmware time: reset to the start of loading the OS loader.
    pub fn firmware_ns(&self) -> u64 {
        self.loader_load_ns
    }

    /// Loader time: loading the loader until the firmware is left (ExitBootServicesExit),
    /// which includes the kernel's EFI stub.
    pub fn loader_ns(&self) -> u64 {
        self.exit_boot_services_exit_ns
            .saturating_sub(self.loader_load_ns)
    }
}

fn u64_le(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Parses an FBPT (the table the FPDT points to), from its `FBPT` signature on.
pub fn parse_fbpt(bytes: &[u8]) -> Result<FpdtBoot, FirmwareError> {
    const W: &str = "FBPT";
    if bytes.len() < 8 || &bytes[..4] != b"FBPT" {
        return Err(err(W, "expected the signature `FBPT` and a length"));
    }
    let len = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    if len < 8 || len > bytes.len() {
        return Err(err(
            W,
            format!("length {len} does not fit the {} bytes given", bytes.len()),
        ));
    }
    let mut at = 8;
    while at + 4 <= len {
        let kind = u16::from_le_bytes([bytes[at], bytes[at + 1]]);
        let rlen = bytes[at + 2] as usize;
        if rlen < 4 || at + rlen > len {
            return Err(err(
                W,
                format!("record at offset {at} has length {rlen}, beyond the table"),
            ));
        }
        if kind == 2 {
            if rlen < 48 {
                return Err(err(
                    W,
                    format!("boot record at offset {at} is {rlen} bytes, expected 48"),
                ));
            }
            let r = &bytes[at..at + 48];
            return Ok(FpdtBoot {
                reset_end_ns: u64_le(r, 8),
                loader_load_ns: u64_le(r, 16),
                loader_start_ns: u64_le(r, 24),
                exit_boot_services_entry_ns: u64_le(r, 32),
                exit_boot_services_exit_ns: u64_le(r, 40),
            });
        }
        at += rlen;
    }
    Err(err(W, "no boot performance record (type 2)"))
}

/// Parses one sysfs value: decimal text, a newline allowed.
pub fn parse_decimal(what: &str, text: &str) -> Result<u64, FirmwareError> {
    text.trim().parse().map_err(|_| {
        err(
            what,
            format!("expected a decimal number, found {:?}", text.trim()),
        )
    })
}

/// Reads the FPDT boot record from the sysfs directory `dir` (normally [`FPDT_SYSFS`]).
/// `Ok(None)` when the directory does not exist (no FPDT, or an older kernel).
pub fn read_fpdt_sysfs(dir: &Path) -> Result<Option<FpdtBoot>, FirmwareError> {
    if !dir.is_dir() {
        return Ok(None);
    }
    let get = |name: &str| -> Result<u64, FirmwareError> {
        let p = dir.join(name);
        let what = p.display().to_string();
        let text = std::fs::read_to_string(&p).map_err(|e| err(&what, e.to_string()))?;
        parse_decimal(&what, &text)
    };
    Ok(Some(FpdtBoot {
        reset_end_ns: get("firmware_start_ns")?,
        loader_load_ns: get("bootloader_load_ns")?,
        loader_start_ns: get("bootloader_launch_ns")?,
        exit_boot_services_entry_ns: get("exitbootservice_start_ns")?,
        exit_boot_services_exit_ns: get("exitbootservice_end_ns")?,
    }))
}

/// Parses an efivarfs file holding a loader time: u32 attributes, then UTF-16LE decimal
/// microseconds, NUL-terminated.
pub fn parse_efi_usec(what: &str, bytes: &[u8]) -> Result<u64, FirmwareError> {
    if bytes.len() < 4 {
        return Err(err(what, "expected 4 bytes of attributes before the value"));
    }
    let value = &bytes[4..];
    if value.len() & 1 == 1 {
        return Err(err(
            what,
            "expected UTF-16LE text (an even number of bytes)",
        ));
    }
    let units: Vec<u16> = value
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    let text = String::from_utf16(&units).map_err(|_| err(what, "invalid UTF-16"))?;
    parse_decimal(what, &text)
}

/// Firmware and loader time as a boot loader reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LoaderTimes {
    /// `LoaderTimeInitUSec`: the loader started, microseconds since reset.
    pub init_us: u64,
    /// `LoaderTimeExecUSec`: the loader started the kernel.
    pub exec_us: u64,
}

impl LoaderTimes {
    /// Firmware time, as systemd-analyze shows it.
    pub fn firmware_us(&self) -> u64 {
        self.init_us
    }

    /// Loader time, as systemd-analyze shows it.
    pub fn loader_us(&self) -> u64 {
        self.exec_us.saturating_sub(self.init_us)
    }
}

/// Reads the loader times from the efivarfs directory `dir` (normally [`EFIVARS`]).
/// `Ok(None)` when the loader did not set them.
pub fn read_loader_times(dir: &Path) -> Result<Option<LoaderTimes>, FirmwareError> {
    let get = |name: &str| -> Result<Option<u64>, FirmwareError> {
        let p = dir.join(format!("{name}-{LOADER_GUID}"));
        let what = p.display().to_string();
        match std::fs::read(&p) {
            Ok(b) => parse_efi_usec(&what, &b).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(err(&what, e.to_string())),
        }
    };
    match (get("LoaderTimeInitUSec")?, get("LoaderTimeExecUSec")?) {
        (Some(init_us), Some(exec_us)) => Ok(Some(LoaderTimes { init_us, exec_us })),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fbpt(records: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = records.concat();
        let mut t = b"FBPT".to_vec();
        t.extend_from_slice(&((8 + body.len()) as u32).to_le_bytes());
        t.extend(body);
        t
    }

    fn boot_record(times: [u64; 5]) -> Vec<u8> {
        let mut r = vec![2, 0, 48, 2, 0, 0, 0, 0];
        for t in times {
            r.extend_from_slice(&t.to_le_bytes());
        }
        r
    }

    #[test]
    fn fbpt_boot_record_read_after_other_records() {
        // A record of another type (S3 pointer-like, 8 bytes) comes first and is skipped.
        let other = vec![9, 0, 8, 1, 0xaa, 0xbb, 0xcc, 0xdd];
        let t = fbpt(&[
            other,
            boot_record([
                1_000,
                2_500_000_000,
                2_600_000_000,
                4_000_000_000,
                4_000_100_000,
            ]),
        ]);
        let b = parse_fbpt(&t).unwrap();
        assert_eq!(b.reset_end_ns, 1_000);
        assert_eq!(b.loader_start_ns, 2_600_000_000);
        assert_eq!(b.firmware_ns(), 2_500_000_000);
        assert_eq!(b.loader_ns(), 1_500_100_000);
    }

    #[test]
    fn fbpt_errors_say_what_was_expected() {
        assert!(parse_fbpt(b"FPDT\x08\0\0\0")
            .unwrap_err()
            .reason
            .contains("FBPT"));
        let mut t = fbpt(&[boot_record([0; 5])]);
        t[4] = 200;
        assert!(parse_fbpt(&t).unwrap_err().reason.contains("length 200"));
        let short = fbpt(&[vec![2, 0, 16, 2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]]);
        assert!(parse_fbpt(&short)
            .unwrap_err()
            .reason
            .contains("expected 48"));
        let none = fbpt(&[vec![9, 0, 8, 1, 0, 0, 0, 0]]);
        assert!(parse_fbpt(&none).unwrap_err().reason.contains("type 2"));
        let zero = fbpt(&[vec![9, 0, 0, 1]]);
        assert!(parse_fbpt(&zero).unwrap_err().reason.contains("offset 8"));
    }

    fn efivar(s: &str) -> Vec<u8> {
        let mut b = 7u32.to_le_bytes().to_vec();
        for u in s.encode_utf16().chain([0]) {
            b.extend_from_slice(&u.to_le_bytes());
        }
        b
    }

    #[test]
    fn efi_loader_times() {
        assert_eq!(parse_efi_usec("v", &efivar("1520345")), Ok(1_520_345));
        assert!(parse_efi_usec("v", &efivar("12x"))
            .unwrap_err()
            .reason
            .contains("decimal"));
        assert!(parse_efi_usec("v", &[1, 2]).is_err());
        assert!(parse_efi_usec("v", &[0, 0, 0, 0, 0x31]).is_err());
        let t = LoaderTimes {
            init_us: 1_500_000,
            exec_us: 2_250_000,
        };
        assert_eq!((t.firmware_us(), t.loader_us()), (1_500_000, 750_000));
    }

    #[test]
    fn readers_take_a_fake_sysfs() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let fpdt = root.join("fpdt");
        let efi = root.join("efivars");
        std::fs::create_dir_all(&fpdt).unwrap();
        std::fs::create_dir_all(&efi).unwrap();
        for (n, v) in [
            ("firmware_start_ns", "0\n"),
            ("bootloader_load_ns", "3000000000\n"),
            ("bootloader_launch_ns", "3100000000\n"),
            ("exitbootservice_start_ns", "3900000000\n"),
            ("exitbootservice_end_ns", "3950000000\n"),
        ] {
            std::fs::write(fpdt.join(n), v).unwrap();
        }
        let b = read_fpdt_sysfs(&fpdt).unwrap().unwrap();
        assert_eq!(b.loader_ns(), 950_000_000);
        assert_eq!(read_fpdt_sysfs(&root.join("absent")), Ok(None));
        std::fs::write(fpdt.join("bootloader_load_ns"), "soon\n").unwrap();
        let e = read_fpdt_sysfs(&fpdt).unwrap_err();
        assert!(e.what.ends_with("bootloader_load_ns"), "{e}");

        assert_eq!(read_loader_times(&efi), Ok(None));
        std::fs::write(
            efi.join(format!("LoaderTimeInitUSec-{LOADER_GUID}")),
            efivar("1000"),
        )
        .unwrap();
        std::fs::write(
            efi.join(format!("LoaderTimeExecUSec-{LOADER_GUID}")),
            efivar("5000"),
        )
        .unwrap();
        let t = read_loader_times(&efi).unwrap().unwrap();
        assert_eq!(t.loader_us(), 4000);
    }
}
