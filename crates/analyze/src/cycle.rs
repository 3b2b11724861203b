//! The reboot cycle as one time line: the shutdown that ended the boot before (its
//! `shutdown/` trace), the gap to this boot's kernel (the rest of the shutdown after its
//! trace was saved, the machine's reset, firmware, loader), then this boot to its login and
//! to boot done. The stages add up to the whole cycle by construction: the gap is what the
//! clocks say lies between the shutdown's save and this kernel's start.
//!
//! The two boots share no clock: each trace ties its CLOCK_BOOTTIME to the wall clock and
//! to the hardware clock (record's `clock` event: `realtime_ns`, `rtc_offset_ns` measured at
//! the hardware clock's second edge). The gap is computed in hardware-clock time when both
//! ends have the offset (the wall clock may have been stepped by NTP or set from the
//! hardware clock's whole second at boot), else in wall-clock time, and [`Cycle::clock`]
//! says which. What the firmware and loader reported (FPDT, systemd-boot's variables) is
//! shown as parts of the gap; the rest of it is inferred.

use std::path::Path;

use serde::Serialize;

use crate::model::BootModel;
use crate::shutdown::ShutdownView;

/// How the gap between the two boots was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CycleClock {
    /// The hardware clock, its offset measured at both ends: to a few milliseconds.
    Rtc,
    /// The wall clock: off by up to a second (the kernel sets it from the hardware clock's
    /// whole seconds), more if NTP stepped it.
    Wall,
}

/// One reboot cycle, seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cycle {
    /// The boot whose shutdown began the cycle.
    pub previous_boot: String,
    /// How the shutdown was asked for.
    pub shutdown_how: String,
    /// The request to the save of the shutdown's trace.
    pub shutdown_s: f64,
    /// The save to this kernel's start.
    pub gap_s: f64,
    /// Of the gap, what the firmware reported as its own (FPDT, or the loader's
    /// `LoaderTimeInitUSec`).
    pub firmware_s: Option<f64>,
    /// Of the gap, the boot loader's time as reported.
    pub loader_s: Option<f64>,
    /// The kernel start to init (the kernel's share of this boot).
    pub kernel_s: Option<f64>,
    /// The kernel's start to the text (else graphical) login.
    pub login_s: Option<f64>,
    /// The kernel's start to boot done.
    pub boot_done_s: f64,
    /// The request to the login: shutdown + gap + login.
    pub to_login_s: Option<f64>,
    /// The request to boot done.
    pub to_boot_done_s: f64,
    /// How the gap was measured.
    pub clock: CycleClock,
    /// The shutdown itself: its stops, blame (`bootprint services --shutdown`).
    pub shutdown: ShutdownView,
    /// Where the numbers need a word of caution (a gap that is negative, clocks apart).
    pub notes: Vec<String>,
}

/// A trace's `clock` event (the last): CLOCK_BOOTTIME, the wall clock and, when measured,
/// the wall clock minus the hardware clock, all ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockMark {
    /// When the clocks were read, CLOCK_BOOTTIME.
    pub boottime_ns: u64,
    /// The wall clock then, since the epoch.
    pub realtime_ns: i128,
    /// The wall clock minus the hardware clock.
    pub rtc_offset_ns: Option<i128>,
}

impl ClockMark {
    /// The last `clock` event of `events`, if it has the wall clock.
    pub fn of(events: &[trace::Event]) -> Option<ClockMark> {
        let e = events.iter().rev().find(|e| e.kind == "clock")?;
        Some(ClockMark {
            boottime_ns: e.t_ns,
            realtime_ns: e.get("realtime_ns")?.parse().ok()?,
            rtc_offset_ns: e.get("rtc_offset_ns").and_then(|v| v.parse().ok()),
        })
    }
}

/// What a cycle takes of the boot after the shutdown: its milestones, seconds since its
/// kernel started (from the model, or from a trace's events alone for `bootprint list`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootTimes {
    /// The kernel's milestone (init starts).
    pub kernel_s: Option<f64>,
    /// The text login, else the graphical one.
    pub login_s: Option<f64>,
    /// Boot done.
    pub boot_done_s: f64,
}

impl BootTimes {
    /// A boot's, from its model.
    pub fn of(model: &BootModel) -> BootTimes {
        let m = &model.milestones;
        BootTimes {
            kernel_s: m.kernel.as_ref().map(|k| k.t_s),
            login_s: m
                .text_login
                .as_ref()
                .or(m.graphical_login.as_ref())
                .map(|l| l.t_s),
            boot_done_s: m.boot_done.t_s,
        }
    }
}

impl Cycle {
    /// The cycle that led to the boot recorded in `trace_dir` (with its parsed `events` and
    /// `model`): None when that trace names no previous boot, or the previous boot's
    /// directory beside it has no readable shutdown with a clock.
    pub fn load(trace_dir: &Path, events: &[trace::Event], model: &BootModel) -> Option<Cycle> {
        Cycle::load_with(trace_dir, events, BootTimes::of(model))
    }

    /// [`Cycle::load`] with the boot's milestones given.
    pub fn load_with(trace_dir: &Path, events: &[trace::Event], times: BootTimes) -> Option<Cycle> {
        let prev = events
            .iter()
            .find(|e| e.kind == "previous_boot")?
            .get("id")?
            .to_string();
        if prev.contains('/') || prev.starts_with('.') {
            return None;
        }
        let base = std::fs::canonicalize(trace_dir).ok()?;
        let shutdown_dir = base.parent()?.join(&prev).join("shutdown");
        let (view, _) = ShutdownView::load(&shutdown_dir).ok()?;
        let shutdown_clock = view.end_clock?;
        let firmware = kernel::Firmware::from_trace(trace_dir);
        Some(Cycle::join(
            prev,
            &view,
            shutdown_clock,
            ClockMark::of(events)?,
            times,
            &firmware,
        ))
    }

    /// Joins a shutdown (its view and its `clock` event) with the boot after it (its
    /// `clock` event, model and firmware times).
    pub fn join(
        previous_boot: String,
        shutdown: &ShutdownView,
        shutdown_clock: ClockMark,
        boot_clock: ClockMark,
        times: BootTimes,
        firmware: &kernel::Firmware,
    ) -> Cycle {
        let mut notes = Vec::new();
        // Each end on one clock: the wall clock at the event, back to the save (the shutdown)
        // or to CLOCK_BOOTTIME's zero (this boot's kernel), minus the hardware offset.
        let save_boottime = ((shutdown.start_uptime_s + shutdown.saved_s) * 1e9) as i128;
        let save_real =
            shutdown_clock.realtime_ns - (shutdown_clock.boottime_ns as i128 - save_boottime);
        let kernel_real = boot_clock.realtime_ns - boot_clock.boottime_ns as i128;
        let (clock, gap_ns) = match (shutdown_clock.rtc_offset_ns, boot_clock.rtc_offset_ns) {
            (Some(so), Some(bo)) => (CycleClock::Rtc, (kernel_real - bo) - (save_real - so)),
            _ => {
                notes.push(
                    "the hardware clock's offset is missing at one end: the gap is from the \
                     wall clock, to about a second"
                        .to_string(),
                );
                (CycleClock::Wall, kernel_real - save_real)
            }
        };
        let gap_s = gap_ns as f64 / 1e9;
        if gap_s < 0.0 {
            notes.push(format!(
                "this kernel started {:.2} s before the shutdown's trace was saved by the \
                 clocks: one of them was set between the two",
                -gap_s
            ));
        }
        let (firmware_s, loader_s) = match (&firmware.fpdt, &firmware.loader) {
            (Some(f), _) => (
                Some(f.firmware_ns() as f64 / 1e9),
                Some(f.loader_ns() as f64 / 1e9),
            ),
            (None, Some(l)) => (
                Some(l.firmware_us() as f64 / 1e6),
                Some(l.loader_us() as f64 / 1e6),
            ),
            (None, None) => (None, None),
        };
        let login_s = times.login_s;
        let before = shutdown.saved_s + gap_s;
        Cycle {
            previous_boot,
            shutdown_how: shutdown.how.clone(),
            shutdown_s: shutdown.saved_s,
            gap_s,
            firmware_s,
            loader_s,
            kernel_s: times.kernel_s,
            login_s,
            boot_done_s: times.boot_done_s,
            to_login_s: login_s.map(|l| before + l),
            to_boot_done_s: before + times.boot_done_s,
            clock,
            shutdown: shutdown.clone(),
            notes,
        }
    }
}
