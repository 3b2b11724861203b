//! The one analysis result of a recorded boot: everything `bootprint report`, `advise` and
//! `export` show, computed once. Every output format (text, JSON, SVG, HTML, Perfetto,
//! Prometheus) is a function over a [`Report`] in `render`; no verb assembles its own.

use crate::advise::{advise, Finding};
use crate::budget::{phases, Budgets, Phase};
use crate::services::ServicesView;
use crate::settle::{settle, Settle};
use crate::{analyze, AnalyzeError, BootModel};

/// A recorded boot, analysed.
#[derive(Debug, Clone)]
pub struct Report {
    /// Where the trace came from (a path as given, or an archive's name).
    pub origin: String,
    /// The boot model: milestones, series, processes.
    pub model: BootModel,
    /// The phases against their budgets.
    pub phases: Vec<Phase>,
    /// Where the budgets came from: a file's path, or `defaults`.
    pub budget_source: String,
    /// When CPU and disk went idle, and what ran after the login until then.
    pub settle: Settle,
    /// The kernel's share, from the trace's kernel log (None: no kernel lines in it).
    pub kernel: Option<kernel::Report>,
    /// The services view: the runner's (`rc.log`), or on a systemd boot systemd's units
    /// (`systemd-units.log`); None when the trace has neither.
    pub services: Option<ServicesView>,
    /// The reboot that led to this boot: the boot before's shutdown, the gap, this boot
    /// (None: that shutdown was not recorded, or the trace is not in a log directory).
    pub cycle: Option<crate::cycle::Cycle>,
    /// On a systemd boot, where the time to the login went (None: not systemd, or no login).
    pub account: Option<crate::account::LoginAccount>,
    /// What to change, each with its evidence and gain (user space and kernel).
    pub findings: Vec<Finding>,
    /// Problems in the trace's optional files that did not stop the analysis (a bad line
    /// of `rc.log`), each naming its file and line.
    pub warnings: Vec<String>,
}

impl Report {
    /// Analyses a trace and judges it against `budgets` (read from `budget_source`).
    pub fn build(
        trace: &trace::Trace,
        budgets: &Budgets,
        budget_source: &str,
    ) -> Result<Report, AnalyzeError> {
        let model = analyze(trace)?;
        let kernel = kernel_of(trace);
        let (services, warnings) = crate::services::view_of(trace);
        let mut findings = advise(&model, kernel.as_ref());
        if let Some(v) = &services {
            findings.extend(crate::advise::late_units(v, model.system.ncpus));
            crate::advise::sort(&mut findings);
        }
        let cycle = trace.events.as_deref().and_then(|events| {
            crate::cycle::Cycle::load(std::path::Path::new(&trace.origin), events, &model)
        });
        if let Some(c) = &cycle {
            findings.extend(crate::advise::shutdown(&c.shutdown, &c.previous_boot));
            crate::advise::sort(&mut findings);
        }
        let account = crate::account::of(&model, services.as_ref(), kernel.as_ref());
        if let (Some(a), Some(v)) = (&account, &services) {
            findings.extend(crate::advise::idle_getty(a, v));
            crate::advise::sort(&mut findings);
        }
        Ok(Report {
            origin: trace.origin.clone(),
            cycle,
            account,
            phases: phases(&model, budgets),
            budget_source: budget_source.to_string(),
            settle: settle(&model),
            findings,
            kernel,
            services,
            warnings,
            model,
        })
    }
}

/// The kernel report of the trace's dmesg, when it has kernel lines.
fn kernel_of(trace: &trace::Trace) -> Option<kernel::Report> {
    trace
        .dmesg
        .as_deref()
        .map(|text| kernel::Report::from_text(&format!("{}/dmesg", trace.origin), text))
        .filter(|k| k.boot.counts.kernel_lines > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_build_carries_every_part_and_reports_bad_span_log_lines() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/mini-trace");
        let mut trace = trace::Trace::open(&dir).unwrap();
        assert!(trace.rc_log.is_none());
        let r = Report::build(&trace, &Budgets::default(), "defaults").unwrap();
        assert!(r.services.is_none() && r.warnings.is_empty());
        assert_eq!(r.phases.len(), phases(&r.model, &Budgets::default()).len());
        assert_eq!(r.findings, advise(&r.model, r.kernel.as_ref()));
        assert_eq!(r.budget_source, "defaults");

        trace.rc_log = Some(format!(
            "{}\n10 rc_start script=a action=start runlevel=2\nbroken\n\
             20 rc_end script=a action=start runlevel=2 exit=0 outcome=ok\n",
            trace::rclog::MAGIC
        ));
        let r = Report::build(&trace, &Budgets::default(), "defaults").unwrap();
        let services = r.services.unwrap();
        assert_eq!(services.spans.len(), 1);
        assert_eq!(services.spans[0].duration_ns(), 10);
        assert_eq!(r.warnings.len(), 1);
        assert!(
            r.warnings[0]
                .ends_with("rc.log:3: expected `<ns> <kind> key=value ...`, found \"broken\""),
            "{:?}",
            r.warnings
        );
    }
}
