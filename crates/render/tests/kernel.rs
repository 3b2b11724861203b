//! The kernel's report rendered (`bootprint kernel`: text, JSON, SVG) on the logs of
//! tests/fixtures/dmesg/ (see its README); the reading itself is tested in the kernel crate.

use std::path::PathBuf;

use kernel::Report;
use testkit::check_xml;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/dmesg")
        .join(name)
}

fn report(name: &str) -> Report {
    kernel::read_path(&fixture(name)).expect("fixture readable")
}

#[test]
fn svg_is_well_formed_and_deterministic() {
    for name in [
        "debian12-6.1-qemu-initcall_debug.serial.log",
        "debian12-6.1-qemu-quiet.trace.dmesg",
        "hazards.log",
    ] {
        let r = report(name);
        let mut a = Vec::new();
        render::kernel_svg::write(&r, &mut a).unwrap();
        let mut b = Vec::new();
        render::kernel_svg::write(&report(name), &mut b).unwrap();
        assert_eq!(a, b, "{name}: two renders differ");
        let s = String::from_utf8(a).unwrap();
        let n = check_xml(&s).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(n > 5, "{name}: only {n} elements");
        if r.boot.has_initcalls() {
            assert!(s.contains("crypto_kdf108_init 3.92 s") || name == "hazards.log");
            // One row label per thread.
            assert_eq!(s.matches(">pid ").count(), r.boot.threads.len(), "{name}");
        }
    }
}

#[test]
fn svg_escapes_names() {
    let r = Report::from_text(
        "a<b>&c",
        "[    1.0] calling  x<y>&z_init+0x0/0x1 @ 1\n\
         [    2.0] initcall x<y>&z_init+0x0/0x1 returned 0 after 1000000 usecs\n",
    );
    let mut v = Vec::new();
    render::kernel_svg::write(&r, &mut v).unwrap();
    let s = String::from_utf8(v).unwrap();
    check_xml(&s).unwrap();
    assert!(s.contains("x&lt;y&gt;&amp;z_init"));
}

#[test]
fn json_has_the_documented_keys() {
    let r = report("debian12-6.1-qemu-initcall_debug.serial.log");
    let mut v = Vec::new();
    render::json::kernel(&r, &mut v).unwrap();
    let j: serde_json::Value = serde_json::from_slice(&v).unwrap();
    assert_eq!(j["boot"]["phases"]["kernel_us"], 7_339_389);
    assert_eq!(j["basis"], "to real init");
    assert_eq!(j["findings"][0]["id"], "slow-selftest");
    assert!(j["boot"]["initcalls"].as_array().unwrap().len() == 688);
    assert_eq!(j["modules"][0]["module"], "e1000");
    assert_eq!(j["boot"]["counts"]["bad_lines"], 0);
}

#[test]
fn text_report_names_the_essentials() {
    let r = report("debian12-6.1-qemu-initcall_debug.serial.log");
    let mut v = Vec::new();
    render::kernel_text::write(&r, &mut v).unwrap();
    let s = String::from_utf8(v).unwrap();
    assert!(s.contains("kernel (to /init)            7.339 s"), "{s}");
    assert!(s.contains("3.92 s   28.0%  crypto_kdf108_init"), "{s}");
    assert!(s.contains("[slow-selftest]"));
}

#[test]
fn every_cut_of_a_line_renders() {
    // A serial line can be cut anywhere; every cut's report renders.
    let text = std::fs::read_to_string(fixture("hazards.log")).unwrap();
    for line in text.lines() {
        for (i, _) in line.char_indices() {
            let r = Report::from_text("cut", &format!("{}\n{}\n", &line[..i], &line[i..]));
            let mut svg = Vec::new();
            render::kernel_svg::write(&r, &mut svg).unwrap();
            check_xml(&String::from_utf8(svg).unwrap()).unwrap();
            render::kernel_text::write(&r, &mut Vec::new()).unwrap();
        }
    }
}

#[test]
fn the_text_shows_the_firmware_times() {
    let mut r = Report::from_text(
        "dmesg",
        "[    0.000000] Linux version 6.1.0\n[    1.500000] Run /init as init process\n",
    );
    r.firmware.fpdt = Some(kernel::firmware::FpdtBoot {
        reset_end_ns: 0,
        loader_load_ns: 2_000_000_000,
        loader_start_ns: 2_100_000_000,
        exit_boot_services_entry_ns: 2_900_000_000,
        exit_boot_services_exit_ns: 3_000_000_000,
    });
    let mut text = Vec::new();
    render::kernel_text::write(&r, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("boot loader (ACPI FPDT)"), "{text}");
}

/// fuzz target kernel_dmesg: one line stamped 18446744072563.709551 s made the chart's
/// span so long that the next axis tick overflowed.
#[test]
fn fuzz_kernel_dmesg_chart_of_a_timestamp_near_u64_max() {
    let r = kernel::Report::from_text("fuzz", "[18446744072563.709551] \n");
    let mut svg = Vec::new();
    render::kernel_svg::write(&r, &mut svg).unwrap();
    assert!(String::from_utf8(svg).unwrap().ends_with("</svg>\n"));
}
