//! A recorded shutdown (record's `shutdown`: the `shutdown/` directory inside the trace of
//! the boot it ended): when it was asked for and how, when the trace was saved, and what
//! stopped in between, with blame (longest first) and the chain that held it (from the last
//! stop back through what each waited for).
//!
//! Stops come from the runner's span log when bootprint's runner ran runlevel 0 or 6
//! (`rc.log`: exact spans, with what each waited for); on systemd from the journal's stop
//! jobs, which the boot after added (`systemd-stops.log`: each unit from "Stopping" to
//! "Stopped", a unit that failed with its result); otherwise from the process tree:
//! every init script run with `stop`, and on systemd every program that started after the
//! request (an `ExecStop=`, a helper), from its first to its last sighting.

use std::path::Path;

use serde::Serialize;
use trace::events::SHUTDOWN_JOURNAL_BEFORE_NS as JOURNAL_BEFORE_NS;
use trace::events::{SHUTDOWN_SYNC_EVENT as SYNC_EVENT, SHUTDOWN_SYNC_FILE as SYNC_FILE};

use crate::cycle::ClockMark;
use crate::services::{self, ServicesView};

/// Where the stops of a [`ShutdownView`] come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopSource {
    /// The runner's `rc.log` (sysvinit with bootprint's runner).
    Runner,
    /// systemd's journal, as the next boot read it (`systemd-stops.log`).
    Systemd,
    /// The recorder's process samples.
    Processes,
}

/// One thing that ran during the shutdown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stop {
    /// The script (runner, init scripts) or the program's command line.
    pub name: String,
    /// Start, seconds since the shutdown was asked for.
    pub start_s: f64,
    /// End (last seen), seconds since then; None: still running when the trace was saved.
    pub end_s: Option<f64>,
    /// The runner's outcome (`ok`, `timed_out`, ...); empty from the process samples.
    pub outcome: String,
    /// The stop whose end let this one start (the runner's `waited_for`; empty: none).
    pub waited_for: String,
}

impl Stop {
    /// How long it ran, s (to the save when it had not ended).
    pub fn duration_s(&self, saved_s: f64) -> f64 {
        (self.end_s.unwrap_or(saved_s) - self.start_s).max(0.0)
    }
}

/// One recorded shutdown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShutdownView {
    /// How it was asked for (`runlevel 6`, `systemd`).
    pub how: String,
    /// The process that asked for it (`systemctl reboot`), when the recorder saw it.
    pub requested_by: Option<String>,
    /// When it was asked for (that process's start, else the recorder's): the boot's
    /// uptime, s.
    pub start_uptime_s: f64,
    /// When the trace was saved, s after the request (the root was still writable).
    pub saved_s: f64,
    /// Why recording ended: `saved`, `terminated` (systemd-shutdown), `limit`.
    pub end_reason: String,
    /// The clocks at the save, for the next boot's cycle (shown as `realtime_end_ns`, the
    /// wall clock then, ns since the epoch).
    #[serde(rename = "realtime_end_ns", serialize_with = "wall_clock_only")]
    pub end_clock: Option<ClockMark>,
    /// Where `stops` come from.
    pub source: StopSource,
    /// What ran, by start.
    pub stops: Vec<Stop>,
    /// Processes that outlived sendsigs' SIGTERM (sysvinit): ignoring it or slow to exit,
    /// each holds sendsigs until it is gone or, 10 s on, killed. Longest first.
    pub sigterm_survivors: Vec<TermSurvivor>,
    /// The shutdown's storage: data not yet on disk, what was written, the unmounts and
    /// the closing sync.
    pub storage: Storage,
}

/// The storage figures of a shutdown. "Dirty" is `/proc/meminfo`'s Dirty plus Writeback
/// (written by no one yet, or being written): what must reach the disks before the
/// machine resets. Each figure is None where its file is missing (traces before it was
/// recorded) or says nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Storage {
    /// Dirty at the shutdown's first memory sample (the recorder's start), KiB.
    pub dirty_first_kib: Option<u64>,
    /// The most dirty in any sample up to the save, KiB.
    pub dirty_peak_kib: Option<u64>,
    /// Dirty at the last sample before the save, KiB.
    pub dirty_last_kib: Option<u64>,
    /// Written to the disks (whole disks, `trace::procfs::disk_write_sectors`) from the first
    /// sample to the last, KiB.
    pub written_kib: Option<u64>,
    /// The stops that unmount file systems or switch off swap (sysvinit's `umount*`
    /// scripts, systemd's `.mount` and `.swap` units), by start.
    pub unmounts: Vec<String>,
    /// From the first unmount's start to the last one's end (to the save for one still
    /// running), s.
    pub unmount_s: Option<f64>,
    /// The recorder's sync once the trace was saved (record's `shutdown::sync_after`).
    pub sync: Option<SyncFigures>,
}

/// What the closing sync took ([`Storage::sync`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncFigures {
    /// Its start, s after the shutdown was asked for (after the save).
    pub start_s: f64,
    /// How long sync(2) took, s.
    pub took_s: f64,
    /// Dirty before it, KiB.
    pub dirty_kib: Option<u64>,
    /// Dirty after it, KiB.
    pub after_dirty_kib: Option<u64>,
    /// Written to the disks while it ran, KiB.
    pub written_kib: Option<u64>,
}

/// Whether stop `name` unmounts file systems or switches off swap.
pub fn is_unmount(name: &str) -> bool {
    let script = name.rsplit('/').next().unwrap_or(name);
    name.ends_with(".mount") || name.ends_with(".swap") || script.starts_with("umount")
}

impl Storage {
    /// The figures from the shutdown directory `dir`'s samples and sync file, the stops
    /// found, `t0` (the request, ns) and the save (s after it). Files that cannot be read
    /// are problems, naming the file; missing ones leave their figures None.
    fn load(
        dir: &Path,
        stops: &[Stop],
        t0: u64,
        saved_s: f64,
        problems: &mut Vec<String>,
    ) -> Storage {
        let mut out = Storage::default();
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
        let dirty = |m: &trace::bootchart::MemBlock| {
            m.dirty.map(|d| d.saturating_add(m.writeback.unwrap_or(0)))
        };
        let save_cs = (t0 as f64 / 1e7 + saved_s * 100.0).ceil() as u64;
        if let Some(text) = read("proc_meminfo.log") {
            match trace::bootchart::parse_proc_meminfo(&text) {
                Ok(blocks) => {
                    let kept: Vec<u64> = blocks
                        .iter()
                        .filter(|b| b.t_cs <= save_cs)
                        .filter_map(dirty)
                        .collect();
                    out.dirty_first_kib = kept.first().copied();
                    out.dirty_last_kib = kept.last().copied();
                    out.dirty_peak_kib = kept.iter().copied().max();
                }
                Err(e) => problems.push(format!("{}/{e}", dir.display())),
            }
        }
        if let Some(text) = read("proc_diskstats.log") {
            match trace::bootchart::parse_proc_diskstats(&text) {
                Ok(blocks) => {
                    let written = |b: &trace::bootchart::DiskBlock| {
                        let names: Vec<&str> = b.disks.iter().map(|d| d.name.as_str()).collect();
                        b.disks
                            .iter()
                            .filter(|d| !trace::procfs::is_virtual_disk(&d.name))
                            .filter(|d| !trace::procfs::is_partition(&d.name, &names))
                            .fold(0u64, |a, d| a.saturating_add(d.write_sectors))
                    };
                    let kept: Vec<&trace::bootchart::DiskBlock> =
                        blocks.iter().filter(|b| b.t_cs <= save_cs).collect();
                    if let (Some(first), Some(last)) = (kept.first(), kept.last()) {
                        out.written_kib = Some(written(last).saturating_sub(written(first)) / 2);
                    }
                }
                Err(e) => problems.push(format!("{}/{e}", dir.display())),
            }
        }
        let unmounts: Vec<&Stop> = stops.iter().filter(|s| is_unmount(&s.name)).collect();
        out.unmounts = unmounts.iter().map(|s| s.name.clone()).collect();
        out.unmount_s = unmounts
            .iter()
            .map(|s| s.start_s)
            .min_by(f64::total_cmp)
            .zip(
                unmounts
                    .iter()
                    .map(|s| s.end_s.unwrap_or(saved_s))
                    .max_by(f64::total_cmp),
            )
            .map(|(a, b)| (b - a).max(0.0));
        let sync_path = dir.join(SYNC_FILE);
        if let Some(text) = read(SYNC_FILE) {
            match trace::events::parse(&text) {
                Ok(events) => {
                    out.sync = events.iter().find(|e| e.kind == SYNC_EVENT).and_then(|e| {
                        let kb = |k: &str| e.get(k).and_then(|v| v.parse::<u64>().ok());
                        let sum = |a: Option<u64>, b: Option<u64>| a.map(|a| a + b.unwrap_or(0));
                        Some(SyncFigures {
                            start_s: e.t_ns.saturating_sub(t0) as f64 / 1e9,
                            took_s: kb("ms")? as f64 / 1e3,
                            dirty_kib: sum(kb("dirty_kb"), kb("writeback_kb")),
                            after_dirty_kib: sum(kb("after_dirty_kb"), kb("after_writeback_kb")),
                            written_kib: kb("written_kb"),
                        })
                    });
                    if out.sync.is_none() {
                        problems.push(format!(
                            "{}: expected a {SYNC_EVENT} event with `ms`",
                            sync_path.display()
                        ));
                    }
                }
                Err(e) => problems.push(format!("{}: {e}", sync_path.display())),
            }
        }
        out
    }
}

/// A process still alive [`SURVIVOR_GRACE_S`] or more after sendsigs' SIGTERM, and gone
/// (exited or killed) by the time sendsigs ended: what sendsigs waited for. Processes
/// sendsigs spares (the runner, the recorder, the pids in `/run/sendsigs.omit.d`) outlive
/// it and are not counted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermSurvivor {
    /// Its pid.
    pub pid: u32,
    /// Its command line (else its name).
    pub name: String,
    /// When sendsigs sent the SIGTERM, s after the shutdown was asked for.
    pub sigterm_s: f64,
    /// From the SIGTERM to its last sighting, s.
    pub outlived_s: f64,
}

/// How long after sendsigs' SIGTERM a process still alive counts as a survivor, s: a
/// process that exits on SIGTERM is gone long before (the samples are 0.2 s apart), and
/// sendsigs polls once a second.
pub const SURVIVOR_GRACE_S: f64 = 1.0;

/// A process as the samples saw it, for [`survivors_of`].
#[derive(Debug, Clone, PartialEq)]
pub struct Sighting {
    /// Its pid.
    pub pid: u32,
    /// Command line, else name.
    pub name: String,
    /// Its start and last sighting, s of uptime.
    pub start_s: f64,
    /// Its last sighting, s of uptime.
    pub end_s: f64,
    /// Still alive in the last sample.
    pub alive_at_end: bool,
}

/// When sendsigs ran and whom it spared, for [`survivors_of`] (s of uptime).
#[derive(Debug, Clone, PartialEq)]
pub struct SendsigsRun {
    /// Its start: what started from then on is its own (the script, killall5, sleep).
    pub start_s: f64,
    /// Its SIGTERM (its first `killall5`).
    pub term_s: f64,
    /// Its end.
    pub end_s: f64,
    /// The pids it spared (the runner's `spared`); None: not known.
    pub spared: Option<Vec<u32>>,
    /// Its own pid (the runner's `pid`): its start in clock ticks may round to before
    /// `start_s`.
    pub pid: Option<u32>,
}

/// The processes that outlived the SIGTERM of sendsigs run `run`: started before sendsigs,
/// not spared by it nor itself, seen [`SURVIVOR_GRACE_S`] or more after its SIGTERM, and
/// gone by its end (where the spared pids are not known, the ones still alive at the
/// trace's end stand for them). Longest first; `sigterm_s` is `run.term_s`. Pure.
pub fn survivors_of(seen: &[Sighting], run: &SendsigsRun) -> Vec<TermSurvivor> {
    // The sample that last saw a process killed at sendsigs' end may come a little later.
    const SAMPLE_SLACK_S: f64 = 0.5;
    let (term_s, end_s) = (run.term_s, run.end_s);
    let spared = |pid: u32| run.spared.as_ref().is_some_and(|s| s.contains(&pid));
    let mut out: Vec<TermSurvivor> = seen
        .iter()
        .filter(|p| p.start_s < run.start_s && !spared(p.pid) && Some(p.pid) != run.pid)
        .filter(|p| p.end_s >= term_s + SURVIVOR_GRACE_S)
        .filter(|p| !p.alive_at_end && p.end_s <= end_s + SAMPLE_SLACK_S)
        .map(|p| TermSurvivor {
            pid: p.pid,
            name: p.name.clone(),
            sigterm_s: term_s,
            outlived_s: p.end_s - term_s,
        })
        .collect();
    out.sort_by(|a, b| {
        b.outlived_s
            .total_cmp(&a.outlived_s)
            .then(a.pid.cmp(&b.pid))
    });
    out
}

/// `end_clock` in JSON: the wall clock alone, as it was first written.
fn wall_clock_only<S: serde::Serializer>(c: &Option<ClockMark>, s: S) -> Result<S::Ok, S::Error> {
    c.map(|c| c.realtime_ns as u64).serialize(s)
}

impl ShutdownView {
    /// Reads the shutdown directory `dir` (`TRACE/shutdown`). Errors name the file and what
    /// was expected; lines of `rc.log` that cannot be read are returned as problems.
    pub fn load(dir: &Path) -> Result<(ShutdownView, Vec<String>), String> {
        let events_path = dir.join(trace::events::FILE_NAME);
        let text = std::fs::read_to_string(&events_path)
            .map_err(|e| format!("{}: {e}", events_path.display()))?;
        let events =
            trace::events::parse(&text).map_err(|e| format!("{}: {e}", events_path.display()))?;
        let find = |kind: &str| events.iter().find(|e| e.kind == kind);
        let start = find("shutdown_start").ok_or_else(|| {
            format!(
                "{}: expected a shutdown_start event: not a shutdown's trace",
                events_path.display()
            )
        })?;
        let end = find("shutdown_end").ok_or_else(|| {
            format!(
                "{}: expected a shutdown_end event: the trace was not finished",
                events_path.display()
            )
        })?;
        // The requesting process's start, when the recorder still saw it, is the request;
        // else the recorder's start (the init already acting on it) stands for it.
        let request = find("shutdown_request").filter(|r| r.t_ns <= start.t_ns);
        let mut problems = Vec::new();
        // On systemd the journal may know better: logind's record of the request, or stop
        // jobs that began before the recorder did (within JOURNAL_BEFORE_NS of it).
        let journal = dir.join(SYSTEMD_STOPS);
        let journal_events = match std::fs::read_to_string(&journal) {
            Ok(t) => match trace::events::parse(&t) {
                Ok(ev) => Some(ev),
                Err(e) => {
                    problems.push(format!("{}: {e}", journal.display()));
                    None
                }
            },
            Err(_) => None,
        };
        let window = start.t_ns.saturating_sub(JOURNAL_BEFORE_NS);
        let journal_first = journal_events.as_ref().and_then(|ev| {
            ev.iter()
                .filter(|e| e.t_ns >= window && e.t_ns <= start.t_ns)
                .map(|e| e.t_ns)
                .min()
        });
        let t0 = [request.map(|r| r.t_ns), journal_first, Some(start.t_ns)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(start.t_ns);
        let rel = |ns: u64| ns.saturating_sub(t0) as f64 / 1e9;
        let rc = dir.join(trace::rclog::FILE_NAME);
        let rc_text = std::fs::read_to_string(&rc).ok();
        let runner_stops = rc_text.as_deref().map(|t| {
            let (view, p) = ServicesView::from_text(t, &rc.display().to_string());
            problems.extend(p.iter().map(ToString::to_string));
            runner_stops(&view, t0, rel)
        });
        let unit_stops = journal_events.as_ref().map(|ev| unit_stops(ev, t0, &rel));
        let (source, stops) = match (runner_stops, unit_stops) {
            (Some(s), _) if !s.is_empty() => (StopSource::Runner, s),
            (_, Some(s)) if !s.is_empty() => (StopSource::Systemd, s),
            // Without samples the shutdown's times still stand: only its stops are unknown.
            _ => match process_stops(dir, t0) {
                Ok(s) => (StopSource::Processes, s),
                Err(e) => {
                    problems.push(e);
                    (StopSource::Processes, Vec::new())
                }
            },
        };
        let sigterm_survivors = match stops.iter().find(|s| s.name == "sendsigs") {
            Some(ss) => match sendsigs_survivors(dir, rc_text.as_deref(), t0, ss) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(e);
                    Vec::new()
                }
            },
            None => Vec::new(),
        };
        let saved_s = rel(end.t_ns);
        let storage = Storage::load(dir, &stops, t0, saved_s, &mut problems);
        Ok((
            ShutdownView {
                how: start.get("how").unwrap_or("unknown").to_string(),
                requested_by: request
                    .and_then(|r| r.get("by"))
                    .map(|b| b.replace('_', " ")),
                start_uptime_s: t0 as f64 / 1e9,
                saved_s,
                end_reason: end.get("reason").unwrap_or_default().to_string(),
                end_clock: ClockMark::of(&events),
                source,
                stops,
                sigterm_survivors,
                storage,
            },
            problems,
        ))
    }

    /// The stops, longest first (ties by start).
    pub fn blame(&self) -> Vec<&Stop> {
        let mut v: Vec<&Stop> = self.stops.iter().collect();
        v.sort_by(|a, b| {
            b.duration_s(self.saved_s)
                .total_cmp(&a.duration_s(self.saved_s))
                .then(a.start_s.total_cmp(&b.start_s))
        });
        v
    }

    /// The chain that held the shutdown: the stop that ended last before the save, then
    /// what it waited for, and so on (runner's stops only; the process samples do not say
    /// what waited for what). First in time first.
    pub fn chain(&self) -> Vec<&Stop> {
        let mut out = Vec::new();
        if self.source != StopSource::Runner {
            return out;
        }
        let last = self
            .stops
            .iter()
            .filter(|s| s.end_s.is_some())
            .max_by(|a, b| a.end_s.unwrap_or(0.0).total_cmp(&b.end_s.unwrap_or(0.0)));
        let mut cur = last;
        while let Some(s) = cur {
            if out.len() > self.stops.len() {
                break; // a cycle in what the log says: stop there
            }
            out.push(s);
            cur = self
                .stops
                .iter()
                .find(|x| !s.waited_for.is_empty() && x.name == s.waited_for);
        }
        out.reverse();
        out
    }
}

/// The journal's stops as the boot after kept them.
pub const SYSTEMD_STOPS: &str = "systemd-stops.log";

/// Each unit's stop from the journal: from its `unit_stopping` (else its `unit_stopped`) to
/// its `unit_stopped`; the outcome `done`, or the result it failed with (`timeout`).
fn unit_stops(events: &[trace::Event], start_ns: u64, rel: &impl Fn(u64) -> f64) -> Vec<Stop> {
    let mut out: Vec<Stop> = Vec::new();
    let mut open: std::collections::BTreeMap<String, usize> = Default::default();
    for e in events.iter().filter(|e| e.t_ns >= start_ns) {
        let Some(unit) = e.get("unit") else { continue };
        let at = |unit: &str,
                  out: &mut Vec<Stop>,
                  open: &mut std::collections::BTreeMap<String, usize>| {
            *open.entry(unit.to_string()).or_insert_with(|| {
                out.push(Stop {
                    name: unit.to_string(),
                    start_s: rel(e.t_ns),
                    end_s: None,
                    outcome: String::new(),
                    waited_for: String::new(),
                });
                out.len() - 1
            })
        };
        match e.kind.as_str() {
            "unit_stopping" => {
                at(unit, &mut out, &mut open);
            }
            "unit_stopped" => {
                let i = at(unit, &mut out, &mut open);
                out[i].end_s = Some(rel(e.t_ns));
                if out[i].outcome.is_empty() {
                    out[i].outcome = e.get("result").unwrap_or("done").to_string();
                }
            }
            "unit_failed" => {
                let i = at(unit, &mut out, &mut open);
                out[i].outcome = e.get("result").unwrap_or("failed").to_string();
            }
            _ => {}
        }
    }
    out.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    out
}

/// The runner's stop spans of runlevel 0 or 6 that began at or after the request.
fn runner_stops(view: &ServicesView, start_ns: u64, rel: impl Fn(u64) -> f64) -> Vec<Stop> {
    view.spans
        .iter()
        .filter(|s| s.action == "stop" && (s.runlevel == "0" || s.runlevel == "6"))
        .filter(|s| s.start_ns + 1_000_000_000 >= start_ns)
        .map(|s| Stop {
            name: s.script.clone(),
            start_s: rel(s.start_ns),
            end_s: s.end_ns.map(&rel),
            outcome: s.outcome.clone(),
            waited_for: s.waited_for.clone(),
        })
        .collect()
}

/// The processes that outlived sendsigs' SIGTERM ([`survivors_of`]): the SIGTERM is its
/// first `killall5` (exec events), else its start; `rc_text` the runner's span log, read
/// once by [`ShutdownView::load`]; `t0` the shutdown's start, ns.
fn sendsigs_survivors(
    dir: &Path,
    rc_text: Option<&str>,
    t0: u64,
    sendsigs: &Stop,
) -> Result<Vec<TermSurvivor>, String> {
    let Some(end_rel) = sendsigs.end_s else {
        return Ok(Vec::new());
    };
    let trace = trace::Trace::open(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let m = crate::analyze(&trace).map_err(|e| format!("{}: {e}", dir.display()))?;
    let base = t0 as f64 / 1e9;
    let (start_s, end_s) = (base + sendsigs.start_s, base + end_rel);
    let term_s = trace
        .events
        .iter()
        .flatten()
        .filter(|e| e.kind == "exec" && e.get("path").is_some_and(|p| p.ends_with("/killall5")))
        .map(|e| e.t_ns as f64 / 1e9)
        .find(|t| *t >= start_s && *t <= end_s)
        .unwrap_or(start_s);
    // The runner's rc_start of sendsigs names its pid and whom it spared.
    let started = rc_text
        .and_then(|t| trace::events::parse(t).ok())
        .and_then(|ev| {
            ev.into_iter().rev().find(|e| {
                e.kind == "rc_start"
                    && e.get("script") == Some("sendsigs")
                    && e.get("action") == Some("stop")
            })
        });
    let spared = started.as_ref().and_then(|e| {
        e.get("spared").map(|s| {
            s.split(',')
                .filter_map(|p| p.trim().parse::<u32>().ok())
                .collect::<Vec<u32>>()
        })
    });
    let pid = started
        .as_ref()
        .and_then(|e| e.get("pid"))
        .and_then(|p| p.parse().ok());
    let seen: Vec<Sighting> = m
        .processes
        .iter()
        .filter(|p| !p.kernel_thread && p.pid != 1)
        .map(|p| Sighting {
            pid: p.pid,
            name: p.cmdline.clone().unwrap_or_else(|| p.name.clone()),
            start_s: p.start_s,
            end_s: p.end_s,
            alive_at_end: p.alive_at_end,
        })
        .collect();
    let run = SendsigsRun {
        start_s,
        term_s,
        end_s,
        spared,
        pid,
    };
    let mut out = survivors_of(&seen, &run);
    for p in &mut out {
        p.sigterm_s -= base;
    }
    Ok(out)
}

/// From the process samples: init scripts run with `stop` (one span each), else every
/// program started after the request, but the recorder's own.
fn process_stops(dir: &Path, start_ns: u64) -> Result<Vec<Stop>, String> {
    let trace = trace::Trace::open(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let m = crate::analyze(&trace).map_err(|e| format!("{}: {e}", dir.display()))?;
    let t0 = start_ns as f64 / 1e9;
    let since = |s: f64| (s - t0).max(0.0);
    let scripts: Vec<Stop> = services::services(&m)
        .into_iter()
        .filter(|s| s.action.as_deref() == Some("stop"))
        .map(|s| Stop {
            name: s.name,
            start_s: since(s.start_s),
            end_s: (!s.alive_at_end).then(|| since(s.end_s)),
            outcome: String::new(),
            waited_for: String::new(),
        })
        .collect();
    if !scripts.is_empty() {
        return Ok(scripts);
    }
    let recorder_pid = trace
        .events
        .iter()
        .flatten()
        .find(|e| e.kind == "recorder_start")
        .and_then(|e| e.get("pid"))
        .and_then(|p| p.parse::<u32>().ok());
    let mut out: Vec<Stop> = m
        .processes
        .iter()
        .filter(|p| !p.kernel_thread && Some(p.pid) != recorder_pid && p.start_s >= t0)
        .filter(|p| p.parent.is_none_or(|pi| m.processes[pi].start_s < t0))
        .map(|p| Stop {
            name: p.cmdline.clone().unwrap_or_else(|| p.name.clone()),
            start_s: since(p.start_s),
            end_s: (!p.alive_at_end).then(|| since(p.end_s)),
            outcome: String::new(),
            waited_for: String::new(),
        })
        .collect();
    out.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(pid: u32, name: &str, start_s: f64, end_s: f64, alive_at_end: bool) -> Sighting {
        Sighting {
            pid,
            name: name.into(),
            start_s,
            end_s,
            alive_at_end,
        }
    }

    /// sendsigs' SIGTERM at 50 s, its end (the SIGKILL) at 60.3 s.
    #[test]
    fn survivors_are_what_sendsigs_waited_for_and_killed() {
        let v = [
            // Ignores SIGTERM: seen until the SIGKILL.
            seen(300, "bp-noterm 600", 10.0, 60.2, false),
            // Slow to exit: 2.5 s after SIGTERM.
            seen(301, "slowpoke", 12.0, 52.5, false),
            // Exits on SIGTERM at once.
            seen(302, "cron", 5.0, 50.1, false),
            // Spared by sendsigs (the runner, the recorder): outlives it.
            seen(303, "bootprint-boot rc 6", 49.0, 70.0, true),
            seen(304, "bootprint-boot shutdown", 49.0, 64.0, false),
            // Started by sendsigs itself, after its SIGTERM.
            seen(305, "sleep 1", 51.0, 52.0, false),
            // The script itself, its start rounded down to before its span's.
            seen(307, "/bin/sh /etc/init.d/sendsigs stop", 49.79, 60.3, false),
            // Spared by its own omit file (rsyslogd), stopped by its script just after.
            seen(306, "/usr/sbin/rsyslogd", 3.0, 60.5, false),
        ];
        let mut run = SendsigsRun {
            start_s: 49.8,
            term_s: 50.0,
            end_s: 60.3,
            spared: Some(vec![303, 304, 306]),
            pid: Some(307),
        };
        let s = survivors_of(&v, &run);
        let got: Vec<(u32, &str)> = s.iter().map(|t| (t.pid, t.name.as_str())).collect();
        assert_eq!(got, [(300, "bp-noterm 600"), (301, "slowpoke")]);
        assert!((s[0].outlived_s - 10.2).abs() < 1e-9);
        assert!((s[1].outlived_s - 2.5).abs() < 1e-9);
        // Nothing waited for: nothing to say.
        assert!(survivors_of(&v[2..], &run).is_empty());
        // Without the spared pids, the one stopped right after sendsigs is counted.
        run.spared = None;
        let got: Vec<u32> = survivors_of(&v, &run).iter().map(|t| t.pid).collect();
        assert_eq!(got, [306, 300, 301]);
    }
}
