//! `bootprint report TRACE [--json] [--svg FILE]`: read a trace, build the boot model once,
//! render it as text or JSON, and optionally as an SVG chart.

use std::io::Write;

use crate::Outcome;

const HELP: &str = "\
usage: bootprint report TRACE [--json] [--svg FILE]

Shows where the time of a recorded boot went: kernel, init, login and boot-done times,
idle and iowait fractions, and the processes that used the most CPU or waited most on I/O.

TRACE       a bootprint trace directory (e.g. /var/log/bootprint/latest) or a bootchart2
            bootchart.tgz
--json      print one JSON object instead of the text report (keys: docs/report.md)
--svg FILE  also write a bootchart-style SVG chart to FILE
-h, --help  this help
";

/// Runs the verb.
pub fn run(args: &[String]) -> Outcome {
    let args =
        match crate::args::parse_input(args, "TRACE", "a TRACE (directory or .tgz) is required") {
            Ok(Some(a)) => a,
            Ok(None) => {
                print!("{HELP}");
                return Outcome::Ok;
            }
            Err(e) => return Outcome::Usage(format!("report: {e}")),
        };
    let trace = match trace::Trace::open(&args.input) {
        Ok(t) => t,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let model = match analyze::analyze(&trace) {
        Ok(m) => m,
        Err(e) => return Outcome::Failed(format!("{}: {e}", trace.origin)),
    };
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
    let kernel = trace
        .dmesg
        .as_deref()
        .map(|text| ::kernel::Report::from_text(&format!("{}/dmesg", trace.origin), text))
        .filter(|k| k.boot.counts.kernel_lines > 0);
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
        }
        serde_json::to_writer_pretty(&mut out, &value)
            .map_err(std::io::Error::from)
            .and_then(|_| writeln!(out))
    } else {
        render::text::write(&model, &trace.origin, &mut out).and_then(|_| match &kernel {
            Some(k) => write_kernel_text(k, &mut out),
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
