//! The analysis of a parsed trace (`analyze`), the `[budget]` section, and the report's
//! renderings (`render`): a trace whose files all parse can still hold any numbers, pids and
//! parents, and `bootprint report` takes it to the end.

use std::io::sink;

use analyze::budget::Budgets;
use trace::reader::Trace;

use super::trace::{raw_trace, CONF_TOKENS};
use super::{strict, trace_container_seeds, TRACE_TOKENS};
use crate::{seeds, Target};

/// The targets of this file.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "analyze_trace",
            about: "analyze::analyze of a parsed trace, then budget phases, settle, services, advise, diff, the bootchart2 process tree",
            run: |d| {
                let _ = model_of(d);
            },
            seeds: trace_container_seeds,
            tokens: TRACE_TOKENS,
            structured: None,
        },
        Target {
            name: "analyze_budget",
            about: "analyze::budget::Budgets::from_toml ([budget] of bootprint.toml)",
            run: |d| {
                if let Some(t) = strict(d) {
                    let _ = Budgets::from_toml(t, "bootprint.toml");
                }
            },
            seeds: || {
                seeds::lit(&[
                    "[budget]\nkernel_s = 1\nearly_s = 1.5\ntext_login_s = 3\ngraphical_login_s = 4\ndone_s = 5\n",
                    "record = true\n[budget]\nkernel_s = 0\n[other]\nx = \"y\"\n",
                ])
            },
            tokens: CONF_TOKENS,
            structured: None,
        },
        Target {
            name: "render_report",
            about: "render: text, JSON, SVG chart, HTML, Perfetto, Prometheus of an analysed trace (what `bootprint report` writes)",
            run: run_render,
            seeds: trace_container_seeds,
            tokens: TRACE_TOKENS,
            structured: None,
        },
    ]
}

/// What `bootprint report` computes from a trace, up to the renderings.
fn model_of(d: &[u8]) -> Option<(Trace, analyze::BootModel)> {
    let trace = Trace::parse(raw_trace(d)).ok()?;
    let model = analyze::analyze(&trace).ok()?;
    let phases = analyze::budget::phases(&model, &Budgets::default());
    let _ = analyze::budget::worst(&phases);
    let _ = analyze::settle::settle(&model);
    let kernel = kernel_of(&trace);
    let _ = analyze::advise::advise(&model, kernel.as_ref());
    let _ = analyze::diff::diff(&model, &model);
    if let Ok(log) = trace.ps_log() {
        let stats = analyze::bootchart::ps_stats(&log);
        let mut tree = analyze::bootchart::ProcessTree::build(&stats);
        tree.merge_logger("bootchartd");
        tree.prune();
        tree.merge_exploders(&["udevd", "modprobe"]);
        tree.merge_siblings();
        tree.merge_runs();
        let _ = tree.flatten();
    }
    Some((trace, model))
}

/// As `bootprint report` makes the kernel report of a trace.
fn kernel_of(trace: &Trace) -> Option<kernel::Report> {
    trace
        .dmesg
        .as_deref()
        .map(|t| kernel::Report::from_text("dmesg", t))
        .filter(|k| k.boot.counts.kernel_lines > 0)
}

fn run_render(d: &[u8]) {
    let Some((trace, model)) = model_of(d) else {
        return;
    };
    let budgets = Budgets::default();
    let phases = analyze::budget::phases(&model, &budgets);
    let settle = analyze::settle::settle(&model);
    let kernel = kernel_of(&trace);
    let findings = analyze::advise::advise(&model, kernel.as_ref());
    let _ = render::text::write(&model, "fuzz", &mut sink());
    let _ = render::judge::write_budgets(&mut sink(), &phases, "defaults");
    let _ = render::judge::write_settle(&mut sink(), &settle);
    let _ = render::json::write(&model, "fuzz", &mut sink());
    let _ = render::advice::write_text(&mut sink(), "fuzz", &findings);
    let _ = render::prometheus::text_with(&model, &budgets);
    let _ = render::perfetto::write(&mut sink(), &model, "fuzz", kernel.as_ref());
    let data = render::chart::ChartData::from_model(&model);
    let mut svg = Vec::new();
    let _ = render::svg::render_svg(&data, &mut svg);
    let input = render::html::Input {
        model: &model,
        origin: "fuzz",
        phases: &phases,
        budget_source: "defaults",
        settle: &settle,
        findings: &findings,
    };
    let _ = render::html::write(&mut sink(), &input, &String::from_utf8_lossy(&svg));
    let diff = analyze::diff::diff(&model, &model);
    let _ = render::diff::write_text(&mut sink(), "a", "b", &diff);
}
