//! `bootprint report TRACE [--json] [--svg FILE] [--config FILE] [--html FILE] [--perfetto
//! FILE]`: read a trace, build the boot model once, judge it against the phase budgets,
//! render it as text or JSON, and optionally as an SVG chart, an HTML page, Perfetto JSON.

use std::io::Write;

use crate::Outcome;

/// Runs the verb.
pub fn run(args: &crate::cli::Report) -> Outcome {
    let (budgets, budget_source) = match &args.config {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => {
                match analyze::budget::Budgets::from_toml(&text, &path.display().to_string()) {
                    Ok(b) => (b, path.display().to_string()),
                    Err(e) => return Outcome::Failed(e.to_string()),
                }
            }
            Err(e) => return Outcome::Failed(format!("{}: {e}", path.display())),
        },
        None => {
            let path = std::path::Path::new(analyze::budget::CONFIG_FILE);
            let (b, source, warning) = analyze::budget::Budgets::load_system(path);
            if let Some(w) = warning {
                eprintln!("bootprint: warning: {w}");
            }
            (b, source)
        }
    };
    let trace = match trace::Trace::open(&args.trace) {
        Ok(t) => t,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let model = match analyze::analyze(&trace) {
        Ok(m) => m,
        Err(e) => return Outcome::Failed(format!("{}: {e}", trace.origin)),
    };
    let phases = analyze::budget::phases(&model, &budgets);
    let settle = analyze::settle::settle(&model);
    if let Some(path) = &args.svg {
        let data = render::chart::ChartData::from_model(&model);
        let written = std::fs::File::create(path).and_then(|f| {
            let mut w = std::io::BufWriter::new(f);
            render::svg::render_svg(&data, &mut w)?;
            w.flush()
        });
        if let Err(e) = written {
            return Outcome::Failed(format!("{}: {e}", path.display()));
        }
    }
    // The kernel's share, from the trace's kernel log (see `bootprint kernel`).
    let kernel = kernel_of(&trace);
    // The services view, when bootprint's runner started the init scripts.
    let services = services_of(&args.trace);
    if let Some(path) = &args.perfetto {
        let written = write_file(path, |w| {
            render::perfetto::write(w, &model, &trace.origin, kernel.as_ref())
        });
        if let Err(e) = written {
            return Outcome::Failed(format!("{}: {e}", path.display()));
        }
    }
    if let Some(path) = &args.html {
        let findings = analyze::advise::advise(&model, kernel.as_ref());
        let mut svg = Vec::new();
        let data = render::chart::ChartData::from_model(&model);
        let written = render::svg::render_svg(&data, &mut svg).and_then(|_| {
            let input = render::html::Input {
                model: &model,
                origin: &trace.origin,
                phases: &phases,
                budget_source: &budget_source,
                settle: &settle,
                findings: &findings,
            };
            write_file(path, |w| {
                render::html::write(w, &input, &String::from_utf8_lossy(&svg))
            })
        });
        if let Err(e) = written {
            return Outcome::Failed(format!("{}: {e}", path.display()));
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = if args.json {
        let mut value = render::json::to_value(&model, &trace.origin);
        if let Some(obj) = value.as_object_mut() {
            obj.insert(
                "kernel".into(),
                kernel
                    .as_ref()
                    .map_or(serde_json::Value::Null, kernel_summary),
            );
            obj.insert(
                "budgets".into(),
                render::judge::budgets_json(&phases, &budget_source),
            );
            obj.insert("settle".into(), render::judge::settle_json(&settle));
            obj.insert(
                "services".into(),
                services
                    .as_ref()
                    .map_or(serde_json::Value::Null, crate::rc::services_json),
            );
        }
        serde_json::to_writer_pretty(&mut out, &value)
            .map_err(std::io::Error::from)
            .and_then(|_| writeln!(out))
    } else {
        render::text::write(&model, &trace.origin, &mut out)
            .and_then(|_| writeln!(out))
            .and_then(|_| render::judge::write_budgets(&mut out, &phases, &budget_source))
            .and_then(|_| writeln!(out))
            .and_then(|_| render::judge::write_settle(&mut out, &settle))
            .and_then(|_| match &kernel {
                Some(k) => write_kernel_text(k, &mut out),
                None => Ok(()),
            })
            .and_then(|_| match &services {
                Some(v) => write!(
                    out,
                    "\nServices (bootprint rc; details: bootprint rc services TRACE):\n{}",
                    rc::spans::render_text(v)
                ),
                None => Ok(()),
            })
    };
    match written.and_then(|_| out.flush()) {
        Ok(()) => Outcome::Ok,
        // A closed pipe (`| head`) is not a failure worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Outcome::Ok,
        Err(e) => Outcome::Failed(format!("writing the report: {e}")),
    }
}

/// Writes a file through a buffer.
fn write_file(
    path: &std::path::Path,
    f: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    f(&mut w)?;
    w.flush()
}

/// The services view of a trace directory's `rc.log` (the span log of `bootprint-boot rc`),
/// when it has one; problems in it are printed as warnings.
fn services_of(input: &std::path::Path) -> Option<rc::spans::Services> {
    let file = input.join("rc.log");
    if !file.is_file() {
        return None;
    }
    match rc::spans::load(&file) {
        Ok((view, diags)) => {
            for d in &diags {
                eprintln!("bootprint: report: {d}");
            }
            Some(view)
        }
        Err(e) => {
            eprintln!("bootprint: report: {e}");
            None
        }
    }
}

/// The kernel report of the trace's dmesg, when it has kernel lines.
pub fn kernel_of(trace: &trace::Trace) -> Option<::kernel::Report> {
    trace
        .dmesg
        .as_deref()
        .map(|text| ::kernel::Report::from_text(&format!("{}/dmesg", trace.origin), text))
        .filter(|k| k.boot.counts.kernel_lines > 0)
}

/// The kernel figures the main report carries: phases, the slowest initcalls, the findings.
fn kernel_summary(k: &::kernel::Report) -> serde_json::Value {
    let us = |v: Option<u64>| v.map(|u| u as f64 / 1e6);
    let mut slow: Vec<&::kernel::Initcall> = k.boot.initcalls.iter().collect();
    slow.sort_by_key(|c| std::cmp::Reverse(c.cost_us()));
    serde_json::json!({
        "kernel_s": us(k.boot.phases.kernel_us),
        "initramfs_s": us(k.boot.phases.initramfs_us),
        "to_real_init_s": us(k.boot.phases.to_real_init_us),
        "initcalls": k.boot.initcalls.len(),
        "slowest_initcalls": slow.iter().take(5).map(|c| serde_json::json!({
            "func": c.func,
            "module": c.module,
            "duration_s": c.cost_us() as f64 / 1e6,
        })).collect::<Vec<_>>(),
        "findings": k.findings.iter().map(|f| serde_json::json!({
            "id": f.id,
            "title": f.title,
            "gain_s": us(f.gain_us),
        })).collect::<Vec<_>>(),
    })
}

fn write_kernel_text(k: &::kernel::Report, out: &mut impl Write) -> std::io::Result<()> {
    let secs = |v: Option<u64>| v.map_or("-".to_string(), |u| format!("{:.2} s", u as f64 / 1e6));
    writeln!(out)?;
    writeln!(
        out,
        "Kernel (from the trace's dmesg; details: bootprint kernel TRACE):"
    )?;
    writeln!(
        out,
        "  to the first program {}, in initramfs {}, to the real init {}",
        secs(k.boot.phases.kernel_us),
        secs(k.boot.phases.initramfs_us),
        secs(k.boot.phases.to_real_init_us)
    )?;
    for f in k.findings.iter().take(5) {
        let gain = f.gain_us.map_or(String::new(), |g| {
            format!(" (gain ~{:.2} s)", g as f64 / 1e6)
        });
        writeln!(out, "  finding {}: {}{gain}", f.id, f.title)?;
    }
    Ok(())
}
