//! The kernel report on real and hand-made logs from tests/fixtures/dmesg/ (see its README).

use std::path::PathBuf;

use kernel::Report;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/dmesg")
        .join(name)
}

fn report(name: &str) -> Report {
    kernel::read_path(&fixture(name)).expect("fixture readable")
}

fn ids(r: &Report) -> Vec<&'static str> {
    r.findings.iter().map(|f| f.id).collect()
}

#[test]
fn serial_capture_with_initcall_debug() {
    let r = report("debian12-6.1-qemu-initcall_debug.serial.log");
    let kb = &r.boot;
    // The README's figures: 7.34 s to `Run /init`, crypto_kdf108_init slowest at 3.9 s.
    assert_eq!(kb.phases.kernel_us, Some(7_339_389));
    let slowest = &kb.initcalls[kb.slowest()[0]];
    assert_eq!(slowest.func, "crypto_kdf108_init");
    assert_eq!(slowest.cost_us(), 3_916_026);
    assert_eq!(slowest.pid, Some(1));
    assert_eq!(kb.counts.bad_lines, 0, "{:?}", kb.bad);
    assert!(kb.counts.console_lines >= 30);
    assert_eq!(kb.counts.unfinished_initcalls, 0);
    assert_eq!(kb.counts.unpaired_returns, 0);
    // 703 `calling` lines, 15 of them PCI quirks (not initcalls).
    assert_eq!(kb.initcalls.len(), 688);
    assert_eq!(kb.landmarks.root_mounted.as_ref().unwrap().us, 13_430_921);
    assert_eq!(kb.phases.to_real_init_us, Some(13_980_605));
    assert_eq!(kb.initramfs_kib, Some(30432));
    // Ten threads ran initcalls: 0 (console setup), 1 (kernel_init), eight modprobes.
    assert_eq!(kb.threads.len(), 10);
    assert_eq!(kb.threads[0].pid, 1);
    // e1000's init overlapped other module inits: the kernel's 342966 us counts from the
    // last `calling` on any thread; the timestamps give the real span.
    let e1000 = kb
        .initcalls
        .iter()
        .find(|i| i.func == "e1000_init_module")
        .unwrap();
    assert!(e1000.overlapped);
    assert_eq!(e1000.duration_us, Some(342_966));
    assert_eq!(e1000.cost_us(), 10_445_957 - 9_106_399);
    assert_eq!(r.modules[0].module, "e1000");
    let f = ids(&r);
    for want in [
        "slow-selftest",
        "initramfs-unpack",
        "async-probe",
        "floppy",
        "initcall-debug",
        "verbose-console",
    ] {
        assert!(f.contains(&want), "{want} missing from {f:?}");
    }
    assert_eq!(f[0], "slow-selftest");
    assert_eq!(r.findings[0].gain_us, Some(3_916_026));
    // A virtual machine: the console findings do not claim a gain.
    let console = r
        .findings
        .iter()
        .find(|f| f.id == "initcall-debug")
        .unwrap();
    assert_eq!(console.gain_us, None);
    assert!(console.gain_basis.contains("virtual machine"));
    let probe = r.findings.iter().find(|f| f.id == "async-probe").unwrap();
    assert!(probe.advice.contains("driver_async_probe=e1000"));
}

#[test]
fn trace_dmesg_without_initcall_debug() {
    let r = report("debian12-6.1-qemu-quiet.trace.dmesg");
    let kb = &r.boot;
    assert!(kb.initcalls.is_empty());
    assert_eq!(kb.counts.bad_lines, 0);
    assert_eq!(kb.counts.console_lines, 0);
    assert_eq!(kb.phases.kernel_us, Some(10_659_736));
    assert_eq!(kb.phases.to_real_init_us, Some(17_676_281));
    assert_eq!(kb.phases.initramfs_us, Some(17_676_281 - 10_659_736));
    assert_eq!(kb.landmarks.root_mounted.as_ref().unwrap().us, 16_708_479);
    assert_eq!(kb.landmarks.initcalls_done.as_ref().unwrap().us, 10_431_845);
    assert_eq!(kb.initramfs_kib, Some(34612));
    assert_eq!(kb.deferred_pages.len(), 1);
    assert_eq!(kb.deferred_pages[0].ms, 24);
    assert_eq!(kb.memory_kib, Some(1_048_044));
    // The longest silence: 2.12 s to 8.49 s, while the KDF self-test and the initramfs
    // unpacking ran.
    let g = &kb.gaps[0];
    assert_eq!((g.before.lineno, g.after.lineno), (295, 296));
    assert_eq!(g.us, 8_493_000 - 2_119_699);
    let f = ids(&r);
    assert!(f.contains(&"silent-gap"), "{f:?}");
    assert!(f.contains(&"initramfs-unpack"), "{f:?}");
    // loglevel=6: info lines stay off the console, so no console finding.
    assert!(!f.contains(&"verbose-console"), "{f:?}");
    // The `\x0a` escapes of multi-line records are decoded.
    assert!(kb.bad.is_empty());
}

#[test]
fn trace_directory_reads_its_dmesg() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::copy(
        fixture("debian12-6.1-qemu-quiet.trace.dmesg"),
        dir.join("dmesg"),
    )
    .unwrap();
    let r = kernel::read_path(dir).unwrap();
    assert!(r.source.ends_with("/dmesg"));
    assert_eq!(r.boot.phases.kernel_us, Some(10_659_736));
    let err = kernel::read_path(&fixture("no-such-file")).unwrap_err();
    assert!(err.to_string().contains("no-such-file"), "{err}");
}

#[test]
fn hand_made_hazards() {
    let r = report("hazards.log");
    let kb = &r.boot;
    // Broken stamp, broken level, no closing bracket, `calling` without a pid.
    assert_eq!(kb.counts.bad_lines, 4, "{:?}", kb.bad);
    let bad: Vec<usize> = kb.bad.iter().map(|b| b.lineno).collect();
    assert_eq!(bad, [12, 13, 14, 15]);
    assert_eq!(kb.counts.mended_lines, 2);
    assert_eq!(kb.counts.console_lines, 3);
    let names: Vec<&str> = kb.initcalls.iter().map(|i| i.func.as_str()).collect();
    assert_eq!(
        names,
        ["a_init", "b_init", "split_init", "m_init", "n_init"]
    );
    assert_eq!(kb.initcalls[1].ret, Some(-19));
    assert_eq!(kb.initcalls[2].duration_us, Some(250_000));
    assert!(kb.initcalls[3].overlapped);
    assert_eq!(kb.initcalls[3].cost_us(), 600_000);
    assert!(!kb.initcalls[4].overlapped);
    assert_eq!(kb.probes[0].initcall, Some(4));
    assert_eq!(kb.landmarks.run_init.as_ref().unwrap().lineno, 16);
    assert_eq!(kb.phases.kernel_us, Some(2_000_000));
    let real = kb.landmarks.real_init.as_ref().unwrap();
    assert!(real.approximate);
    assert_eq!(real.us, 4_000_000);
    assert_eq!(
        kb.cmdline.as_deref().map(|c| c.contains("loglevel=8")),
        Some(true)
    );
    let f = ids(&r);
    assert!(f.contains(&"async-probe"));
    assert!(f.contains(&"initcall-debug"));
    assert!(f.contains(&"verbose-console"));
    // No virtual-machine line: the console gains are estimated (115200 baud).
    assert!(
        r.findings.iter().all(|f| f.gain_us.is_some()),
        "{:?}",
        r.findings
    );
}

#[test]
fn every_cut_of_every_line_is_survived() {
    // A serial line can be cut anywhere; no cut may panic, and every cut is either read,
    // console text, or counted as unreadable.
    let text = std::fs::read_to_string(fixture("hazards.log")).unwrap()
        + &std::fs::read_to_string(fixture("debian12-6.1-qemu-initcall_debug.serial.log"))
            .unwrap()
            .lines()
            .skip(1230)
            .take(40)
            .collect::<Vec<_>>()
            .join("\n");
    for line in text.lines() {
        for (i, _) in line.char_indices() {
            let cut = &line[..i];
            let r = Report::from_text("cut", &format!("{cut}\n{}\n", &line[i..]));
            let c = &r.boot.counts;
            assert!(c.kernel_lines + c.console_lines + c.bad_lines >= 1 || cut.trim().is_empty());
        }
    }
}

/// A trace directory whose recorder copied the firmware's own figures: the FPDT sysfs files
/// and the EFI loader variables are read from `firmware/`.
#[test]
fn firmware_times_come_from_the_trace_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let fpdt = dir.join("firmware/fpdt/boot");
    let efi = dir.join("firmware/efivars");
    std::fs::create_dir_all(&fpdt).unwrap();
    std::fs::create_dir_all(&efi).unwrap();
    std::fs::write(
        dir.join("dmesg"),
        "[    0.000000] Linux version 6.1.0\n[    1.500000] Run /init as init process\n",
    )
    .unwrap();
    for (name, v) in [
        ("firmware_start_ns", 0u64),
        ("bootloader_load_ns", 2_000_000_000),
        ("bootloader_launch_ns", 2_100_000_000),
        ("exitbootservice_start_ns", 2_900_000_000),
        ("exitbootservice_end_ns", 3_000_000_000),
    ] {
        std::fs::write(fpdt.join(name), format!("{v}\n")).unwrap();
    }
    let efi_var = |usec: &str| {
        let mut b = vec![7u8, 0, 0, 0];
        for u in usec.encode_utf16().chain([0]) {
            b.extend_from_slice(&u.to_le_bytes());
        }
        b
    };
    let guid = kernel::firmware::LOADER_GUID;
    std::fs::write(
        efi.join(format!("LoaderTimeInitUSec-{guid}")),
        efi_var("1800000"),
    )
    .unwrap();
    std::fs::write(
        efi.join(format!("LoaderTimeExecUSec-{guid}")),
        efi_var("2600000"),
    )
    .unwrap();

    let r = kernel::read_path(dir).unwrap();
    let f = r.firmware.fpdt.expect("FPDT read from the trace");
    assert_eq!(f.loader_load_ns, 2_000_000_000);
    assert_eq!(f.loader_ns(), 1_000_000_000);
    let l = r.firmware.loader.expect("loader times read from the trace");
    assert_eq!((l.firmware_us(), l.loader_us()), (1_800_000, 800_000));
    // The text report shows it: render's tests/kernel.rs.

    // A log file alone, or a trace without firmware/: nothing claimed.
    std::fs::remove_dir_all(dir.join("firmware")).unwrap();
    let r = kernel::read_path(dir).unwrap();
    assert!(r.firmware.fpdt.is_none() && r.firmware.loader.is_none());
}

/// Our own capture: the trace of a test-bed boot with initcall_debug, modules loaded by udev
/// after the switch to the real root included.
#[test]
fn testbed_initcall_debug_trace() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/dmesg/debian12-6.1-testbed-initcall_debug.trace.dmesg");
    let r = kernel::read_path(&path).unwrap();
    assert_eq!(r.boot.counts.bad_lines, 0);
    assert_eq!(r.boot.phases.kernel_us, Some(4_384_445));
    assert_eq!(r.boot.phases.to_real_init_us, Some(7_698_993));
    assert_eq!(r.boot.initcalls.len(), 697);
    assert!(r.boot.initcalls.iter().all(|i| i.return_line.is_some()));
    let slowest = r.boot.initcalls.iter().max_by_key(|i| i.cost_us()).unwrap();
    assert_eq!(slowest.func, "crypto_kdf108_init");
    assert_eq!(slowest.duration_us, Some(1_797_916));
    let modules: Vec<&str> = r.modules.iter().map(|m| m.module.as_str()).collect();
    for m in ["virtio_pci", "floppy", "virtio_blk"] {
        assert!(modules.contains(&m), "{m} missing from {modules:?}");
    }
    // udev loaded kvm_amd on the real root, after init started: listed apart (issue 42).
    assert!(r.after.modules.iter().any(|m| m.module == "kvm_amd"));
    let ids: Vec<&str> = r.findings.iter().map(|f| f.id).collect();
    for id in ["slow-selftest", "floppy", "initcall-debug"] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
}

/// Issue 42: systemd in the initramfs (Arch Linux, mkinitcpio's systemd hook) was taken for
/// the real init. Its journald took over its messages, so the log has no `Switching root.`:
/// the switch shows as the SIGTERM PID 1 sends before it switches.
#[test]
fn issue_42_systemd_in_initrd_ends_at_the_switch_root() {
    let r = report("arch-6.19-systemd-initrd.dmesg");
    let kb = &r.boot;
    let lm = &kb.landmarks;
    assert_eq!(kb.phases.kernel_us, Some(4_556_721));
    assert_eq!(lm.initrd_init.as_ref().unwrap().us, 4_575_504);
    let switch = lm.switch_root.as_ref().unwrap();
    assert_eq!(switch.us, 10_058_500);
    assert!(switch.text.contains("Received SIGTERM from PID 1"));
    // The real init is the systemd after the switch, not the initramfs's at 4.575 s.
    let real = lm.real_init.as_ref().unwrap();
    assert_eq!(real.us, 10_478_148);
    assert!(real
        .text
        .contains("systemd 259-1-arch running in system mode"));
    assert_eq!(kb.phases.initramfs_us, Some(10_058_500 - 4_556_721));
    assert_eq!(kb.phases.to_real_init_us, Some(10_478_148));
    assert_eq!(kb.initramfs_init.as_deref(), Some("systemd 259-1-arch"));
    assert_eq!(r.basis, "to real init");
    assert_eq!(kb.counts.bad_lines, 0, "{:?}", kb.bad);
}

/// Issue 42: module inits udev ran after the real init started are listed apart, not as a
/// share of the kernel's time to init.
#[test]
fn issue_42_module_inits_after_init_are_apart() {
    let r = report("debian12-6.1-testbed-initcall_debug.trace.dmesg");
    let kb = &r.boot;
    assert_eq!(r.basis_us, 7_698_993);
    assert_eq!(r.after.from_us, Some(7_698_993));
    // Twelve module inits from 13.28 s on (button ... powernow_k8).
    assert_eq!(r.after.initcalls.len(), 12);
    let first = &kb.initcalls[r.after.initcalls[0]];
    assert_eq!(first.label(), "svm_init [kvm_amd]");
    assert_eq!(first.cost_us(), 116_538);
    assert_eq!(first.start_us, Some(14_249_765));
    assert_eq!(r.after.modules[0].module, "kvm_amd");
    assert!(r.modules.iter().all(|m| m.module != "kvm_amd"));
    // The initramfs's module inits (floppy, virtio_pci, ...) stay in the kernel's time.
    assert!(r.modules.iter().any(|m| m.module == "virtio_pci"));
    for ic in &kb.initcalls {
        let s = r.initcall_share(ic);
        assert!((0.0..=1.0).contains(&s), "{} {s}", ic.label());
    }
}

/// Issue 42: deferred struct page initialisation taking seconds (32 GiB, page_poison=1) gets
/// a finding with the per-node figure and the cause on the command line.
#[test]
fn issue_42_slow_deferred_pages_finding() {
    let r = report("amd-6.3-page_poison-deferred-pages.dmesg");
    let kb = &r.boot;
    assert_eq!(kb.deferred_pages.len(), 1);
    assert_eq!(
        (kb.deferred_pages[0].node, kb.deferred_pages[0].ms),
        (0, 3587)
    );
    assert_eq!(kb.memory_kib, Some(33_511_684));
    assert_eq!(kb.phases.kernel_us, Some(6_292_974));
    let f = r
        .findings
        .iter()
        .find(|f| f.id == "deferred-pages")
        .expect("deferred-pages finding");
    assert_eq!(f.gain_us, Some(3_587_000));
    assert!(f.title.contains("3.59 s"), "{}", f.title);
    assert!(f.title.contains("node 0 3587 ms"), "{}", f.title);
    assert!(f.title.contains("32 GiB"), "{}", f.title);
    assert!(f.gain_basis.contains("page_poison=1"), "{}", f.gain_basis);
    assert!(f.evidence.iter().any(|e| e.text.contains("heap free:off")));
    assert_eq!(f.evidence[0].us, Some(4_441_562));
    // The biggest cost before init: first; the silence it explains is not a second finding.
    assert_eq!(r.findings[0].id, "deferred-pages");
    assert!(!ids(&r).contains(&"silent-gap"), "{:?}", ids(&r));
}
