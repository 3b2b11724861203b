//! A boot in one line, for the history of kept traces (`bootprint list`): the kernel
//! release and the milestone times (text login, graphical login, boot done, and on a
//! desktop the session's start and desktop ready).
//!
//! A trace the recorder finished has those times as events (`milestone` text_login and
//! graphical_login, `boot_done`), which the full analysis takes as they are (`build`'s
//! milestones), so [`Summary::from_events`] reads them from `header` and `events.log` alone:
//! a list of 200 traces then parses 200 small files instead of 200 process logs. A trace
//! without a `boot_done` event (a bootchart2 log, a recording cut short) goes through the
//! whole model instead ([`Summary::from_model`]), whose figures are the report's.

use serde::Serialize;
use trace::Event;

use crate::model::BootModel;

/// One boot's line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// `uname -r` of the recorded boot.
    pub kernel_release: Option<String>,
    /// Text login prompt, seconds since the kernel started.
    pub text_login_s: Option<f64>,
    /// Graphical login greeter, seconds since the kernel started.
    pub graphical_login_s: Option<f64>,
    /// Boot done, seconds since the kernel started.
    pub boot_done_s: Option<f64>,
    /// Why recording stopped (`idle`, `limit`, `terminated`), from the event.
    pub boot_done_reason: Option<String>,
    /// A user's desktop session started (`session_start`), seconds since the kernel started.
    pub session_start_s: Option<f64>,
    /// Desktop ready (a `desktop_ready` event with `reason=idle`), seconds since the kernel
    /// started.
    pub desktop_ready_s: Option<f64>,
    /// The shutdown that ended this boot, when recorded: its request to its trace's save,
    /// seconds ([`Summary::with_shutdown`]).
    pub shutdown_s: Option<f64>,
    /// The reboot that led to this boot, its request to this boot's login
    /// ([`crate::cycle::Cycle::to_login_s`]; [`Summary::with_reboot`]), when the boot
    /// before's shutdown is known.
    pub reboot_s: Option<f64>,
    /// Where the figures came from: `events` or `model`.
    pub source: &'static str,
}

/// The kernel release a header names: `bootprint.kernel_release`, else the second word of
/// bootchart2's `system.uname`.
pub fn kernel_release(header: &[(String, String)]) -> Option<String> {
    let get = |k: &str| {
        header
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    get("bootprint.kernel_release")
        .map(str::to_string)
        .or_else(|| {
            get("system.uname")?
                .split_whitespace()
                .nth(1)
                .map(String::from)
        })
        .filter(|s| !s.is_empty())
}

impl Summary {
    /// The desktop start time, `desktop_ready_s - session_start_s`, when both are known.
    pub fn desktop_start_s(&self) -> Option<f64> {
        Some(self.desktop_ready_s? - self.session_start_s?)
    }

    /// From the header and the events, when the events have a `boot_done` (else None: the
    /// model is needed).
    pub fn from_events(header: &[(String, String)], events: &[Event]) -> Option<Summary> {
        let done = events.iter().find(|e| e.kind == "boot_done")?;
        let milestone = |name: &str| {
            events
                .iter()
                .find(|e| e.kind == "milestone" && e.get("name") == Some(name))
                .map(Event::t_s)
        };
        Some(Summary {
            kernel_release: kernel_release(header),
            text_login_s: milestone("text_login"),
            graphical_login_s: milestone("graphical_login"),
            boot_done_s: Some(done.t_s()),
            boot_done_reason: done.get("reason").map(String::from),
            session_start_s: milestone("session_start"),
            desktop_ready_s: events
                .iter()
                .find(|e| e.kind == "desktop_ready" && e.get("reason") == Some("idle"))
                .map(Event::t_s),
            shutdown_s: None,
            reboot_s: None,
            source: "events",
        })
    }

    /// Adds the shutdown recorded in `shutdown_events` (a trace's `shutdown/events.log`):
    /// `shutdown_start` to `shutdown_end`.
    pub fn with_shutdown(mut self, shutdown_events: &[Event]) -> Summary {
        let at = |k: &str| shutdown_events.iter().find(|e| e.kind == k).map(Event::t_s);
        if let (Some(start), Some(end)) = (at("shutdown_start"), at("shutdown_end")) {
            self.shutdown_s = Some(end - start);
        }
        self
    }

    /// Adds the reboot that led to this boot: the cycle from the boot before's shutdown (in
    /// the log directory beside `trace_dir`) to this boot's login, as the report joins it
    /// (`events`: this trace's).
    pub fn with_reboot(mut self, trace_dir: &std::path::Path, events: &[Event]) -> Summary {
        if let Some(done) = self.boot_done_s {
            let times = crate::cycle::BootTimes {
                kernel_s: None,
                login_s: self.text_login_s.or(self.graphical_login_s),
                boot_done_s: done,
            };
            self.reboot_s =
                crate::cycle::Cycle::load_with(trace_dir, events, times).and_then(|c| c.to_login_s);
        }
        self
    }

    /// From the whole model (the report's figures).
    pub fn from_model(header: &[(String, String)], model: &BootModel) -> Summary {
        let ms = &model.milestones;
        Summary {
            kernel_release: kernel_release(header),
            text_login_s: ms.text_login.as_ref().map(|m| m.t_s),
            graphical_login_s: ms.graphical_login.as_ref().map(|m| m.t_s),
            boot_done_s: Some(ms.boot_done.t_s),
            boot_done_reason: None,
            session_start_s: ms.session_start.as_ref().map(|m| m.t_s),
            desktop_ready_s: ms.desktop_ready.as_ref().map(|m| m.t_s),
            shutdown_s: None,
            reboot_s: None,
            source: "model",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_give_the_milestones_and_no_boot_done_asks_for_the_model() {
        let header = vec![(
            "system.uname".to_string(),
            "Linux 2.6.27-10-generic #1 i686".to_string(),
        )];
        let mut events = vec![
            Event::new(12_000_000_000, "milestone").with("name", "text_login"),
            Event::new(13_000_000_000, "milestone").with("name", "text_login"),
        ];
        assert_eq!(Summary::from_events(&header, &events), None);
        events.push(Event::new(14_500_000_000, "boot_done").with("reason", "idle"));
        let s = Summary::from_events(&header, &events).unwrap();
        assert_eq!(s.kernel_release.as_deref(), Some("2.6.27-10-generic"));
        assert_eq!((s.text_login_s, s.graphical_login_s), (Some(12.0), None));
        assert_eq!(
            (s.boot_done_s, s.boot_done_reason.as_deref()),
            (Some(14.5), Some("idle"))
        );
        let header = vec![(
            "bootprint.kernel_release".to_string(),
            "6.1.0-test".to_string(),
        )];
        assert_eq!(kernel_release(&header).as_deref(), Some("6.1.0-test"));
    }
}
