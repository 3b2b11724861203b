//! Time budgets per boot phase (seed 001, "five-second boot": kernel 1 s, early boot 1 s,
//! X 1 s, desktop 2 s), read from the `[budget]` section of `/etc/bootprint/bootprint.toml`,
//! and the boot judged against them: each phase's length, its budget, and when it overran,
//! the processes that used the most CPU or waited most on I/O inside it.

use std::path::Path;

use serde::Serialize;

use crate::model::BootModel;
use crate::usage::{self, Use};

/// The phase budgets in seconds. `docs/report.md` lists the keys and defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Budgets {
    /// Kernel start to the first program (`kernel_s`, default 1).
    pub kernel_s: f64,
    /// First program to the real init: initramfs and root mount (`early_s`, default 1).
    pub early_s: f64,
    /// Real init to the text login prompt (`text_login_s`, default 1).
    pub text_login_s: f64,
    /// The previous milestone to the graphical login greeter (`graphical_login_s`, default 1).
    pub graphical_login_s: f64,
    /// Login to boot done, CPU and disk idle (`done_s`, default 2).
    pub done_s: f64,
    /// Session start to desktop ready, the desktop start time (`desktop_s`, default 2: the
    /// five-second boot's desktop budget).
    pub desktop_s: f64,
}

impl Default for Budgets {
    fn default() -> Budgets {
        Budgets {
            kernel_s: 1.0,
            early_s: 1.0,
            text_login_s: 1.0,
            graphical_login_s: 1.0,
            done_s: 2.0,
            desktop_s: 2.0,
        }
    }
}

/// Default place of the configuration file holding `[budget]` (defined once, in
/// `trace::config`).
pub use trace::config::CONFIG_FILE;

impl Budgets {
    /// Defaults overridden by the `[budget]` section of a `bootprint.toml` text, read through
    /// the file's schema (`trace::config`): the whole file is checked, so an unknown key or a
    /// value of the wrong type in any section is an error naming the file and line.
    pub fn from_toml(text: &str, source: &str) -> Result<Budgets, trace::conf::ConfError> {
        let mut b = Budgets::default();
        for s in trace::config::parse_section(text, source, trace::config::Section::Budget)? {
            let v = s.value.num();
            match s.key.name {
                "kernel_s" => b.kernel_s = v,
                "early_s" => b.early_s = v,
                "text_login_s" => b.text_login_s = v,
                "graphical_login_s" => b.graphical_login_s = v,
                "done_s" => b.done_s = v,
                "desktop_s" => b.desktop_s = v,
                // A [budget] key of the table with no field here: the test below catches it.
                _ => {}
            }
        }
        Ok(b)
    }

    /// Reads `path`; a missing file gives the defaults (it is optional).
    pub fn load(path: &Path) -> Result<Budgets, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                Budgets::from_toml(&text, &path.display().to_string()).map_err(|e| e.to_string())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Budgets::default()),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// The budgets of the system's configuration file when no file was asked for: the file's
    /// when it reads, else the defaults with a warning naming the file, line and what was
    /// expected (a broken configuration must not stop a report of a boot, nor the export the
    /// recorder runs at boot done). Returns the budgets, where they came from, and the warning.
    pub fn load_system(path: &Path) -> (Budgets, String, Option<String>) {
        match Budgets::load(path) {
            Ok(b) if path.exists() => (b, path.display().to_string(), None),
            Ok(b) => (b, "defaults".to_string(), None),
            Err(e) => (
                Budgets::default(),
                "defaults".to_string(),
                Some(format!("{e}; using the default budgets")),
            ),
        }
    }

    fn of(&self, id: PhaseId) -> f64 {
        match id {
            PhaseId::Kernel => self.kernel_s,
            PhaseId::Early => self.early_s,
            PhaseId::TextLogin => self.text_login_s,
            PhaseId::GraphicalLogin => self.graphical_login_s,
            PhaseId::Done => self.done_s,
            PhaseId::Desktop => self.desktop_s,
        }
    }
}

/// The phases, each named after the milestone that ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseId {
    /// Kernel start to the first program (`kernel` milestone).
    Kernel,
    /// To the real init (`init_exec`): initramfs, root mount.
    Early,
    /// To the text login prompt.
    TextLogin,
    /// To the graphical login greeter.
    GraphicalLogin,
    /// To boot done (CPU and disk idle).
    Done,
    /// A user's session start to desktop ready (after boot done, from its own start: the
    /// time the greeter waited for the user is nobody's boot time).
    Desktop,
}

impl PhaseId {
    /// A short label for text output.
    pub fn label(self) -> &'static str {
        match self {
            PhaseId::Kernel => "kernel",
            PhaseId::Early => "early boot",
            PhaseId::TextLogin => "to text login",
            PhaseId::GraphicalLogin => "to graphical login",
            PhaseId::Done => "login to done",
            PhaseId::Desktop => "desktop start",
        }
    }
}

/// One phase against its budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    /// Which phase.
    pub id: PhaseId,
    /// Start (the previous milestone, or 0 for the kernel), seconds.
    pub from_s: f64,
    /// End (its milestone), seconds.
    pub to_s: f64,
    /// `to_s - from_s`.
    pub duration_s: f64,
    /// The budget.
    pub budget_s: f64,
    /// How much it overran (0 when within budget).
    pub over_s: f64,
    /// When it overran: the processes heaviest inside it (CPU + blocked), at most five.
    pub blame: Vec<Use>,
}

/// How many processes a phase's blame lists.
pub const BLAME_N: usize = 5;

/// The phases the trace shows, in time order, each from the previous milestone present.
/// A phase whose milestone is missing is left out (its time falls into the next one).
pub fn phases(m: &BootModel, b: &Budgets) -> Vec<Phase> {
    let ms = &m.milestones;
    let mut marks: Vec<(PhaseId, f64)> = Vec::new();
    if let Some(k) = &ms.kernel {
        marks.push((PhaseId::Kernel, k.t_s));
    }
    if let Some(x) = &ms.init_exec {
        marks.push((PhaseId::Early, x.t_s));
    }
    if let Some(x) = &ms.text_login {
        marks.push((PhaseId::TextLogin, x.t_s));
    }
    if let Some(x) = &ms.graphical_login {
        marks.push((PhaseId::GraphicalLogin, x.t_s));
    }
    // Stable: equal times keep the order above.
    marks.sort_by(|a, c| a.1.total_cmp(&c.1));
    if ms.login().is_some() {
        marks.push((
            PhaseId::Done,
            ms.boot_done.t_s.max(marks.last().map_or(0.0, |x| x.1)),
        ));
    }
    if let (Some(s), Some(d)) = (&ms.session_start, &ms.desktop_ready) {
        // Its own start: the phase begins at the session, not at the previous milestone.
        marks.push((PhaseId::Desktop, d.t_s.max(s.t_s)));
    }
    let mut out = Vec::new();
    let mut from = 0.0;
    for (id, to) in marks {
        if id == PhaseId::Desktop {
            from = ms.session_start.as_ref().map_or(from, |s| s.t_s);
        }
        let budget_s = b.of(id);
        let duration_s = (to - from).max(0.0);
        let over_s = (duration_s - budget_s).max(0.0);
        let blame = if over_s > 0.0 {
            usage::window(m, from, to)
                .into_iter()
                .take(BLAME_N)
                .collect()
        } else {
            Vec::new()
        };
        out.push(Phase {
            id,
            from_s: from,
            to_s: to,
            duration_s,
            budget_s,
            over_s,
            blame,
        });
        from = to;
    }
    out
}

/// The phase that overran its budget most, if any did.
pub fn worst(phases: &[Phase]) -> Option<&Phase> {
    phases
        .iter()
        .filter(|p| p.over_s > 0.0)
        .max_by(|a, b| a.over_s.total_cmp(&b.over_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 14 (fault matrix, garbage-config): a broken system configuration made
    /// `bootprint report` and the export the recorder runs at boot done fail outright.
    #[test]
    fn a_broken_system_configuration_gives_the_defaults_and_a_warning() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let f = d.join("bootprint.toml");
        std::fs::write(&f, "[record\nhz = = fast\n").unwrap();
        let (b, source, warning) = Budgets::load_system(&f);
        assert_eq!(b, Budgets::default());
        assert_eq!(source, "defaults");
        let w = warning.expect("a warning");
        assert!(
            w.contains("bootprint.toml:1") && w.contains("default budgets"),
            "{w}"
        );
        std::fs::write(&f, "[budget]\ntext_login_s = 7\n").unwrap();
        let (b, source, warning) = Budgets::load_system(&f);
        assert_eq!((b.text_login_s, warning), (7.0, None));
        assert_eq!(source, f.display().to_string());
        let (_, source, warning) = Budgets::load_system(&d.join("absent.toml"));
        assert_eq!((source.as_str(), warning), ("defaults", None));
    }

    #[test]
    fn budget_section_overrides_defaults() {
        let b = Budgets::from_toml(
            "[record]\nhz = 25\n[budget]\nkernel_s = 2.5\ndone = 4\n",
            "b.toml",
        )
        .unwrap();
        assert_eq!(b.kernel_s, 2.5);
        assert_eq!(b.done_s, 4.0);
        assert_eq!(b.early_s, 1.0, "untouched keys keep their defaults");
        let e = Budgets::from_toml("[budget]\nkernal_s = 1\n", "b.toml").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("\"kernal_s\""), "{e}");
        let e = Budgets::from_toml("[budget]\n\nkernel_s = -1\n", "b.toml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("b.toml:3: expected a number of seconds"),
            "{e}"
        );
        let e = Budgets::from_toml("[budget]\nkernel_s = \"1\"\n", "b.toml").unwrap_err();
        assert!(e.expected.contains("kernel_s"), "{e}");
        // The whole file is checked: a typo in another section is an error here too.
        let e =
            Budgets::from_toml("[record]\nhx = 5\n[budget]\nkernel_s = 2\n", "b.toml").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }

    /// Every `[budget]` key of the schema's table sets its field: the table's default gives
    /// the default, another value changes it.
    #[test]
    fn every_budget_key_of_the_schema_sets_its_field() {
        for k in trace::config::keys(trace::config::Section::Budget) {
            let b = Budgets::from_toml(&format!("[budget]\n{} = {}\n", k.name, k.default), "t");
            assert_eq!(b, Ok(Budgets::default()), "{}", k.name);
            let b = Budgets::from_toml(&format!("[budget]\n{} = 42\n", k.name), "t").unwrap();
            assert_ne!(b, Budgets::default(), "{}", k.name);
        }
    }

    #[test]
    fn missing_file_means_defaults() {
        let b = Budgets::load(Path::new("/nonexistent/bootprint.toml")).unwrap();
        assert_eq!(b, Budgets::default());
    }
}
