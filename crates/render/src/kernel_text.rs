//! `bootprint kernel`: the kernel's share of the boot (`kernel::Report`) as text for a terminal.

use std::io::{self, Write};

use kernel::boot::{KernelBoot, Landmarks, Mark};
use kernel::{Firmware, Report};

/// How many rows the top lists show.
pub const TOP: usize = 15;

fn secs(us: u64) -> String {
    format!("{:.3} s", us as f64 / 1e6)
}

fn short(us: u64) -> String {
    if us >= 1_000_000 {
        format!("{:.2} s", us as f64 / 1e6)
    } else {
        format!("{:.1} ms", us as f64 / 1e3)
    }
}

/// Writes the text report.
pub fn write(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let kb = &r.boot;
    write_header(out, r)?;
    write_phases(out, r)?;
    write_landmarks(out, &kb.landmarks)?;
    if kb.has_initcalls() {
        write_slowest_initcalls(out, r)?;
        write_modules(out, r)?;
        write_after(out, r)?;
        write_threads(out, kb)?;
        write_probes(out, kb)?;
    } else {
        write_silences(out, kb)?;
    }
    write_findings(out, r)?;
    write_bad_lines(out, kb)
}

/// The log's name, its line counts, the kernel's version and command line.
fn write_header(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let kb = &r.boot;
    let c = &kb.counts;
    writeln!(out, "kernel log: {}", r.source)?;
    writeln!(
        out,
        "  {} kernel lines, {} console lines, {} unreadable",
        c.kernel_lines, c.console_lines, c.bad_lines
    )?;
    if let Some(v) = &kb.version {
        writeln!(out, "  {v}")?;
    }
    if let Some(cmd) = &kb.cmdline {
        writeln!(out, "  command line: {cmd}")?;
    }
    Ok(())
}

/// The kernel's phases, then the firmware's and the boot loader's times where known.
fn write_phases(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let kb = &r.boot;
    writeln!(out, "\nphases")?;
    let p = &kb.phases;
    let row = |out: &mut dyn Write, name: &str, v: Option<u64>| -> io::Result<()> {
        match v {
            Some(us) => writeln!(out, "  {name:<26}{:>10}", secs(us)),
            None => writeln!(out, "  {name:<26}{:>10}", "unknown"),
        }
    };
    let first = kb
        .landmarks
        .run_init_program
        .as_deref()
        .unwrap_or("first program");
    row(out, &format!("kernel (to {first})"), p.kernel_us)?;
    if p.initramfs_us.is_some() || kb.landmarks.initramfs_unpack_start.is_some() {
        row(out, "in initramfs", p.initramfs_us)?;
    }
    if let Some(init) = &kb.initramfs_init {
        writeln!(
            out,
            "  (the initramfs ran {init}; the real init is the one after the switch root)"
        )?;
    }
    row(out, "to real init", p.to_real_init_us)?;
    write_firmware(out, &r.firmware)
}

/// The firmware's and the boot loader's times, from the ACPI FPDT and the EFI loader
/// variables, and why they are missing.
fn write_firmware(out: &mut dyn Write, fw: &Firmware) -> io::Result<()> {
    let ms = |ns: u64| format!("{:.3} s", ns as f64 / 1e9);
    if let Some(f) = &fw.fpdt {
        writeln!(
            out,
            "  firmware (ACPI FPDT)        {:>10}",
            ms(f.firmware_ns())
        )?;
        writeln!(
            out,
            "  boot loader (ACPI FPDT)     {:>10}",
            ms(f.loader_ns())
        )?;
    }
    if let Some(l) = &fw.loader {
        writeln!(
            out,
            "  firmware (EFI loader vars)  {:>10}",
            ms(l.firmware_us() * 1000)
        )?;
        writeln!(
            out,
            "  boot loader (EFI vars)      {:>10}",
            ms(l.loader_us() * 1000)
        )?;
    }
    if fw.fpdt.is_none() && fw.loader.is_none() {
        writeln!(
            out,
            "  (firmware and boot loader time: the machine exposed neither an ACPI FPDT nor EFI loader times)"
        )?;
    }
    for e in &fw.errors {
        writeln!(out, "  (firmware: {e})")?;
    }
    Ok(())
}

/// The landmarks found in the log, each with its line.
fn write_landmarks(out: &mut dyn Write, lm: &Landmarks) -> io::Result<()> {
    writeln!(out, "\nlandmarks")?;
    let marks: [(&str, &Option<Mark>); 8] = [
        ("initramfs unpack started", &lm.initramfs_unpack_start),
        ("initramfs unpacked", &lm.initramfs_unpack_end),
        ("built-in initcalls done", &lm.initcalls_done),
        ("first program run", &lm.run_init),
        ("systemd in initramfs", &lm.initrd_init),
        ("root mounted", &lm.root_mounted),
        ("switched root", &lm.switch_root),
        ("real init started", &lm.real_init),
    ];
    let mut any = false;
    for (name, m) in marks {
        if let Some(m) = m {
            any = true;
            writeln!(
                out,
                "  {}{:>10}  {name:<26} line {}: {}",
                if m.approximate { ">" } else { " " },
                secs(m.us),
                m.lineno,
                m.text
            )?;
        }
    }
    if !any {
        writeln!(out, "  none found")?;
    }
    Ok(())
}

/// The slowest initcalls with their share of the basis, and a note where overlap made the
/// kernel's own figures wrong.
fn write_slowest_initcalls(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let kb = &r.boot;
    writeln!(
        out,
        "\nslowest initcalls (share of {} {})",
        short(r.basis_us),
        r.basis
    )?;
    let within = kb
        .slowest()
        .into_iter()
        .filter(|&i| kb.within_basis(&kb.initcalls[i]));
    for i in within.take(TOP) {
        let ic = &kb.initcalls[i];
        writeln!(
            out,
            "  {:>9}{}{:>6.1}%  {:<44} {}",
            short(ic.cost_us()),
            if ic.overlapped { "*" } else { " " },
            100.0 * r.initcall_share(ic),
            ic.label(),
            pid_and_failure(ic),
        )?;
    }
    if kb.initcalls.iter().any(|i| i.overlapped) {
        writeln!(
            out,
            "  * from the timestamps: the kernel keeps one start time for all threads, so \
             its own figure is wrong for initcalls that overlap"
        )?;
    }
    Ok(())
}

/// The modules' init times, costliest first.
fn write_modules(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    if r.modules.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nmodules (init time)")?;
    for m in r.modules.iter().take(TOP) {
        writeln!(
            out,
            "  {:>9} {:>6.1}%  {}",
            short(m.duration_us),
            100.0 * r.share(m.duration_us),
            m.module
        )?;
    }
    Ok(())
}

/// The initcalls that started after the basis ended (module inits run by udev or modprobe
/// once the real init was up), apart: they are not part of the kernel's time to init.
fn write_after(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let (Some(from), false) = (r.after.from_us, r.after.initcalls.is_empty()) else {
        return Ok(());
    };
    let kb = &r.boot;
    let cost: u64 = r
        .after
        .initcalls
        .iter()
        .map(|&i| kb.initcalls[i].cost_us())
        .sum();
    writeln!(
        out,
        "\nafter init: loaded by udev/modprobe from {} on, not part of the kernel's time \
         ({} initcalls, {} in all)",
        secs(from),
        r.after.initcalls.len(),
        short(cost)
    )?;
    for &i in r.after.initcalls.iter().take(TOP) {
        let ic = &kb.initcalls[i];
        writeln!(
            out,
            "  {:>9}{} at {:>10}  {:<44} {}",
            short(ic.cost_us()),
            if ic.overlapped { "*" } else { " " },
            ic.timeline_start().map(secs).unwrap_or_default(),
            ic.label(),
            pid_and_failure(ic),
        )?;
    }
    Ok(())
}

/// The threads that ran initcalls (the SVG's rows).
fn write_threads(out: &mut dyn Write, kb: &KernelBoot) -> io::Result<()> {
    writeln!(out, "\nthreads (timeline rows)")?;
    for t in &kb.threads {
        writeln!(
            out,
            "  pid {:<6} {:>4} initcalls  busy {:>9}  from {} to {}",
            t.pid,
            t.initcalls,
            short(t.busy_us),
            secs(t.first_us),
            secs(t.last_us)
        )?;
    }
    Ok(())
}

/// The slowest driver probes, each with the initcall it ran in.
fn write_probes(out: &mut dyn Write, kb: &KernelBoot) -> io::Result<()> {
    let mut probes: Vec<_> = kb.probes.iter().collect();
    probes.sort_by_key(|p| (std::cmp::Reverse(p.duration_us), p.lineno));
    if probes.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nslowest driver probes")?;
    for p in probes.iter().take(8) {
        let within = p
            .initcall
            .map(|i| format!("  in {}", kb.initcalls[i].label()))
            .unwrap_or_default();
        writeln!(out, "  {:>9}  {}{}", short(p.duration_us), p.device, within)?;
    }
    Ok(())
}

/// Without initcall lines: how to get them, and the longest silences in the log instead.
fn write_silences(out: &mut dyn Write, kb: &KernelBoot) -> io::Result<()> {
    writeln!(
        out,
        "\nno initcall lines: boot with initcall_debug to see the initcalls"
    )?;
    if kb.gaps.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nlongest silences before the first program")?;
    for g in &kb.gaps {
        let (a, b) = (&g.before, &g.after);
        writeln!(
            out,
            "  {:>9}  after line {} ({}): {}",
            short(b.us - a.us),
            a.lineno,
            secs(a.us),
            a.text
        )?;
    }
    Ok(())
}

/// The findings, each with its evidence, the change and the gain's basis.
fn write_findings(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    writeln!(out, "\nfindings")?;
    if r.findings.is_empty() {
        writeln!(out, "  none: nothing in this log shows a known kernel cost")?;
    }
    for f in &r.findings {
        let gain = f
            .gain_us
            .map(|g| format!("expected gain {}", short(g)))
            .unwrap_or_else(|| "gain unknown".into());
        writeln!(out, "  [{}] {} ({gain})", f.id, f.title)?;
        for e in &f.evidence {
            if e.lineno == 0 {
                writeln!(out, "      {}", e.text)?;
            } else {
                writeln!(out, "      line {}: {}", e.lineno, e.text)?;
            }
        }
        writeln!(out, "    change: {}", f.advice)?;
        writeln!(out, "    gain: {}", f.gain_basis)?;
    }
    Ok(())
}

/// The first unreadable lines, and why each could not be read.
fn write_bad_lines(out: &mut dyn Write, kb: &KernelBoot) -> io::Result<()> {
    if kb.counts.bad_lines > 0 {
        writeln!(
            out,
            "\nunreadable lines ({}; first shown)",
            kb.counts.bad_lines
        )?;
        for b in kb.bad.iter().take(5) {
            writeln!(out, "  line {}: {} ({})", b.lineno, b.text, b.reason)?;
        }
    }
    Ok(())
}

/// An initcall row's end: the thread that ran it, and its return code when it failed.
fn pid_and_failure(ic: &kernel::boot::Initcall) -> String {
    let pid = ic.pid.map(|p| format!("pid {p}")).unwrap_or_default();
    match ic.ret {
        Some(0) | None => pid,
        Some(e) => format!("{pid}  returned {e}"),
    }
}
