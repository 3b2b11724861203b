//! The kernel crate: a kernel log (a trace's `dmesg`, `dmesg` output or a serial capture)
//! through the whole report, and the firmware tables (FPDT's FBPT, the EFI loader
//! variables, the sysfs values).

use std::io::sink;

use arbitrary::Unstructured;
use kernel::firmware::{self, LoaderTimes};

use super::{lossy, trace_file_seeds};
use crate::{seeds, Target};

/// The targets of this file.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "kernel_dmesg",
            about: "kernel::Report::from_text (dmesg parse, analyze, findings, modules), text, JSON and SVG renderings",
            run: |d| {
                let r = kernel::Report::from_text("dmesg", &lossy(d));
                let _ = r.share(1);
                let _ = render::json::kernel(&r, &mut sink());
                let _ = render::kernel_text::write(&r, &mut sink());
                let _ = render::kernel_svg::write(&r, &mut sink());
            },
            seeds: || {
                let mut v = seeds::files(&[
                    "tests/fixtures/dmesg/hazards.log",
                    "tests/fixtures/dmesg/debian12-6.1-qemu-quiet.trace.dmesg",
                    "tests/fixtures/dmesg/debian12-6.1-testbed-initcall_debug.trace.dmesg",
                    "tests/fixtures/dmesg/debian12-6.1-qemu-initcall_debug.serial.log",
                    "tests/fixtures/mini-trace/dmesg",
                ]);
                v.extend(trace_file_seeds("dmesg"));
                v
            },
            tokens: DMESG_TOKENS,
            structured: None,
        },
        Target {
            name: "kernel_firmware",
            about: "kernel::firmware::{parse_fbpt, parse_efi_usec, parse_decimal} (ACPI FPDT, EFI loader variables, sysfs values)",
            run: |d| {
                if let Ok(b) = firmware::parse_fbpt(d) {
                    let _ = (b.firmware_ns(), b.loader_ns());
                }
                if let Ok(init_us) = firmware::parse_efi_usec("LoaderTimeInitUSec", d) {
                    let l = LoaderTimes { init_us, exec_us: init_us / 2 };
                    let _ = (l.firmware_us(), l.loader_us());
                }
                let _ = firmware::parse_decimal("firmware_start_ns", &lossy(d));
            },
            seeds: || vec![fbpt(&[0, 1, 2, 3, 4]), efi_usec("1234567"), b"123456789\n".to_vec()],
            tokens: &["FBPT", "\u{2}\0\u{30}\u{2}", "\0\0"],
            structured: Some(fbpt_structured),
        },
    ]
}

const DMESG_TOKENS: &[&str] = &[
    "[    0.000000] ",
    "[18446744073.709551] ",
    "[99999999999.999999] ",
    "[   -1.000000] ",
    "<6>",
    "<12>[    1.0] ",
    "calling  ",
    "initcall ",
    " returned 0 after ",
    " usecs",
    "+0x0/0x156 @ 1",
    " [virtio_blk]",
    "Run /init as init process",
    "Run /sbin/init as init process",
    "Freeing unused kernel image",
    "Command line: ",
    "Kernel command line: ",
    "initcall_debug",
    "probe of ",
    " returned ",
    "deferred",
    "usb-storage",
    "Memory: ",
    "node 0 deferred pages initialised in ",
    "ms",
    "clocksource: Switched to clocksource tsc",
    "EFI stub: ",
    "[T1] ",
    "[C0] ",
];

/// An FBPT with a boot performance record whose five times are `t` (ns).
fn fbpt(t: &[u64; 5]) -> Vec<u8> {
    let mut rec = vec![0u8; 48];
    rec[..2].copy_from_slice(&2u16.to_le_bytes());
    rec[2] = 48;
    rec[3] = 2;
    for (i, v) in t.iter().enumerate() {
        rec[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_le_bytes());
    }
    let mut f = b"FBPT".to_vec();
    f.extend_from_slice(&((8 + rec.len()) as u32).to_le_bytes());
    f.extend(rec);
    f
}

/// An efivarfs file: attributes, then UTF-16LE text and a NUL.
fn efi_usec(text: &str) -> Vec<u8> {
    let mut v = 7u32.to_le_bytes().to_vec();
    for u in text.encode_utf16().chain([0]) {
        v.extend_from_slice(&u.to_le_bytes());
    }
    v
}

/// An FBPT of arbitrary records (types, lengths, times), or an EFI variable of arbitrary text.
fn fbpt_structured(u: &mut Unstructured) -> arbitrary::Result<Vec<u8>> {
    if u.ratio(1, 3)? {
        return Ok(efi_usec(&u.arbitrary::<String>()?));
    }
    let mut body = Vec::new();
    for _ in 0..u.int_in_range(0..=6)? {
        let kind: u16 = if u.ratio(1, 2)? { 2 } else { u.arbitrary()? };
        let len: u8 = if u.ratio(1, 2)? { 48 } else { u.arbitrary()? };
        let mut rec = vec![0u8; usize::from(len).max(4)];
        rec[..2].copy_from_slice(&kind.to_le_bytes());
        rec[2] = len;
        let fill = u.bytes(rec.len() - 4)?;
        rec[4..4 + fill.len()].copy_from_slice(fill);
        body.extend(rec);
    }
    let mut f = b"FBPT".to_vec();
    let len: u32 = if u.ratio(3, 4)? {
        (8 + body.len()) as u32
    } else {
        u.arbitrary()?
    };
    f.extend_from_slice(&len.to_le_bytes());
    f.extend(body);
    Ok(f)
}
