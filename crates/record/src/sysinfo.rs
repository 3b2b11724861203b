//! Facts about the recorded system for the trace header, so analysis never has to ask the
//! machine it runs on.

use std::fs;
use std::path::{Path, PathBuf};

use sample::procfs::ProcFs;

/// The kernel's boot id (a UUID), or `unknown-<uptime>` if it cannot be read.
pub fn boot_id(proc: &ProcFs) -> String {
    proc.read("sys/kernel/random/boot_id")
        .ok()
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .filter(|s| !s.is_empty() && !s.contains('/'))
        .unwrap_or_else(|| format!("unknown-{}", sys::boottime_ns()))
}

/// The event that ties a trace's clock (CLOCK_BOOTTIME) to the wall clock and the hardware
/// clock, so a shutdown and the boot after it can be put on one time line.
pub const CLOCK_EVENT: &str = "clock";

/// The hardware clock.
pub const RTC_DEV: &str = "/dev/rtc0";

/// A [`CLOCK_EVENT`] for now: `realtime_ns` (the wall clock), `monotonic_ns`
/// (CLOCK_MONOTONIC, the journal's clock) and, when known, `rtc_offset_ns`
/// (the wall clock minus the hardware clock, `sys::rtc_offset_ns`).
pub fn clock_event(rtc_offset_ns: Option<i64>) -> trace::Event {
    let (boot, real, mono) = (sys::boottime_ns(), sys::realtime_ns(), sys::monotonic_ns());
    let e = trace::Event::new(boot, CLOCK_EVENT)
        .with("realtime_ns", real)
        .with("monotonic_ns", mono);
    match rtc_offset_ns {
        Some(o) => e.with("rtc_offset_ns", o),
        None => e,
    }
}

/// The header entries, bootchart2's keys first; the machine's maker and model from the
/// firmware's DMI tables under `sys` (`class/dmi/id/sys_vendor`, `product_name`) where it
/// has them (a fleet groups its boots by them).
pub fn header(
    proc: &ProcFs,
    sys: &Path,
    hz: u32,
    clk_tck: u64,
    page_size: u64,
) -> Vec<(String, String)> {
    let text = |rel: &str| {
        proc.read(rel)
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            .unwrap_or_default()
    };
    let release = text("sys/kernel/osrelease");
    let uname = format!(
        "{} {} {} {}",
        text("sys/kernel/ostype"),
        release,
        text("sys/kernel/version"),
        std::env::consts::ARCH
    );
    let hostname = text("sys/kernel/hostname");
    let cpuinfo = text("cpuinfo");
    let os_release = fs::read_to_string("/etc/os-release").unwrap_or_default();
    let (model, ncpus) = cpu_model(&cpuinfo);
    let entries = [
        (
            "version",
            format!("bootprint {}", env!("CARGO_PKG_VERSION")),
        ),
        ("title", format!("Boot chart for {hostname}")),
        ("system.uname", uname),
        ("system.release", pretty_name(&os_release)),
        ("system.cpu", format!("model name : {model} ({ncpus})")),
        ("system.kernel.options", text("cmdline")),
        ("bootprint.format", "1".to_string()),
        ("bootprint.boot_id", boot_id(proc)),
        ("bootprint.boot_unix_s", boot_unix_s(&text("stat"))),
        ("bootprint.kernel_release", release),
        ("bootprint.clk_tck", clk_tck.to_string()),
        ("bootprint.page_size", page_size.to_string()),
        ("bootprint.ncpus", ncpus.to_string()),
        ("bootprint.hz", hz.to_string()),
    ];
    let dmi = |name: &str| {
        fs::read(sys.join("class/dmi/id").join(name))
            .ok()
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let mut out: Vec<(String, String)> = entries
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        // No key rather than an empty one when /proc/stat has no btime.
        .filter(|(k, v)| k != "bootprint.boot_unix_s" || !v.is_empty())
        .collect();
    for (key, file) in [
        ("bootprint.dmi_vendor", "sys_vendor"),
        ("bootprint.dmi_product", "product_name"),
    ] {
        if let Some(v) = dmi(file) {
            out.push((key.to_string(), v));
        }
    }
    out
}

/// [`header`]'s entries for the running machine, for a boot read without a trace
/// (`bootprint export --systemd`): its identity as a recorded boot's header gives it.
pub fn this_machine() -> Vec<(String, String)> {
    header(&ProcFs::default(), Path::new("/sys"), 0, 0, 0)
}

/// When the kernel started, seconds since the epoch: `btime` of `/proc/stat` (the wall clock
/// as the recorder starts, less the uptime; an exporter places the boot's spans by it).
/// Empty when the line is missing.
pub fn boot_unix_s(stat: &str) -> String {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .map(|v| v.trim().to_string())
        .unwrap_or_default()
}

/// The CPU model and the number of processors in `/proc/cpuinfo`.
pub fn cpu_model(cpuinfo: &str) -> (String, usize) {
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string());
    let count = cpuinfo
        .lines()
        .filter(|l| l.split(':').next().map(str::trim) == Some("processor"))
        .count();
    (model, count.max(1))
}

/// `PRETTY_NAME` from an os-release file.
pub fn pretty_name(os_release: &str) -> String {
    os_release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_default()
}

/// The ACPI FPDT boot record files (sysfs, Linux 5.12+), nanoseconds since reset.
const FPDT_FILES: [&str; 5] = [
    "firmware_start_ns",
    "bootloader_load_ns",
    "bootloader_launch_ns",
    "exitbootservice_start_ns",
    "exitbootservice_end_ns",
];

/// The EFI variables a boot loader sets with its times (Boot Loader Interface).
const LOADER_VARS: [&str; 2] = [
    "LoaderTimeInitUSec-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f",
    "LoaderTimeExecUSec-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f",
];

/// Copies of the firmware's and boot loader's own times where the machine exposes them,
/// as (path in the trace, bytes): `firmware/fpdt/boot/*` from `<sys>/firmware/acpi/fpdt/boot`
/// and `firmware/efivars/*` from `<sys>/firmware/efi/efivars`. Nothing when absent.
pub fn firmware_files(sys: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let fpdt = sys.join("firmware/acpi/fpdt/boot");
    for name in FPDT_FILES {
        if let Ok(b) = fs::read(fpdt.join(name)) {
            out.push((PathBuf::from("firmware/fpdt/boot").join(name), b));
        }
    }
    let efi = sys.join("firmware/efi/efivars");
    for name in LOADER_VARS {
        if let Ok(b) = fs::read(efi.join(name)) {
            out.push((PathBuf::from("firmware/efivars").join(name), b));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_and_release() {
        let cpuinfo = "processor\t: 0\nmodel name\t: QEMU Virtual CPU version 2.5+\n\nprocessor\t: 1\nmodel name\t: QEMU Virtual CPU version 2.5+\n";
        assert_eq!(
            cpu_model(cpuinfo),
            ("QEMU Virtual CPU version 2.5+".to_string(), 2)
        );
        assert_eq!(
            pretty_name("NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"),
            "Debian GNU/Linux 12 (bookworm)"
        );
    }

    #[test]
    fn firmware_files_are_copied_when_present() {
        let tmp = tempfile::tempdir().unwrap();
        let sys = tmp.path();
        assert!(firmware_files(sys).is_empty());
        fs::create_dir_all(sys.join("firmware/acpi/fpdt/boot")).unwrap();
        fs::create_dir_all(sys.join("firmware/efi/efivars")).unwrap();
        fs::write(
            sys.join("firmware/acpi/fpdt/boot/bootloader_load_ns"),
            "123\n",
        )
        .unwrap();
        fs::write(
            sys.join("firmware/efi/efivars").join(LOADER_VARS[0]),
            [7, 0, 0, 0, b'1', 0, 0, 0],
        )
        .unwrap();
        let files = firmware_files(sys);
        assert_eq!(files.len(), 2);
        assert_eq!(
            files[0],
            (
                PathBuf::from("firmware/fpdt/boot/bootloader_load_ns"),
                b"123\n".to_vec()
            )
        );
        assert_eq!(
            files[1].0,
            PathBuf::from("firmware/efivars").join(LOADER_VARS[0])
        );
    }

    #[test]
    fn header_of_this_machine_has_the_keys_analysis_needs() {
        let h = header(&ProcFs::default(), Path::new("/sys"), 50, 100, 4096);
        let get = |k: &str| h.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get("bootprint.clk_tck").as_deref(), Some("100"));
        assert!(get("system.cpu").unwrap().ends_with(')'));
        let id = get("bootprint.boot_id").unwrap();
        assert_eq!(id.len(), 36, "boot id {id}");
        // The kernel started before now and after 2020.
        let booted: u64 = get("bootprint.boot_unix_s").unwrap().parse().unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!((1_577_836_800..=now).contains(&booted), "btime {booted}");
        assert_eq!(
            boot_unix_s("cpu 1 2\nbtime 1700000000\nprocesses 9\n"),
            "1700000000"
        );
        assert_eq!(boot_unix_s("cpu 1 2\n"), "");
    }

    #[test]
    fn the_machines_maker_and_model_come_from_dmi_where_it_has_them() {
        let tmp = tempfile::tempdir().unwrap();
        let dmi = tmp.path().join("class/dmi/id");
        fs::create_dir_all(&dmi).unwrap();
        fs::write(dmi.join("sys_vendor"), "QEMU\n").unwrap();
        fs::write(
            dmi.join("product_name"),
            "Standard PC (i440FX + PIIX, 1996)\n",
        )
        .unwrap();
        let h = header(&ProcFs::default(), tmp.path(), 50, 100, 4096);
        let get = |k: &str| h.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get("bootprint.dmi_vendor").as_deref(), Some("QEMU"));
        assert_eq!(
            get("bootprint.dmi_product").as_deref(),
            Some("Standard PC (i440FX + PIIX, 1996)")
        );
        // No DMI (an ARM board, a container): no keys, not empty ones.
        fs::write(dmi.join("sys_vendor"), "  \n").unwrap();
        fs::remove_file(dmi.join("product_name")).unwrap();
        let h = header(&ProcFs::default(), tmp.path(), 50, 100, 4096);
        assert!(
            !h.iter().any(|(k, _)| k.starts_with("bootprint.dmi_")),
            "{h:?}"
        );
    }
}
