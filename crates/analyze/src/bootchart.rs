//! bootchart2 compatibility: the figures and the process tree exactly as bootchart2's
//! `pybootchartgui` derives them from the same logs, so a bootprint trace can be checked
//! against that project's reference extracts (`tests/fixtures/bootchart2-example1/`).
//!
//! The algorithms (described in `docs/report.md`, written here from that description):
//! - CPU per sample: user+nice, system+irq+softirq and iowait deltas of the `cpu` line, each
//!   over the sum of those plus idle.
//! - Disk per sample: summed over whole disks matching `[hsv]d.`, `mtdblock N`, `mmcblk N`,
//!   `cciss/cNdN...`: read and write KiB/s from sector deltas, and `io_ticks` delta over the
//!   interval divided by the number of CPUs (a bootchart2 quirk), clamped to 0..=1.
//! - Processes keyed by pid; start = min(first block time, `starttime` ticks taken as cs);
//!   a CPU sample per block after the first sighting; duration = last sample - start +
//!   the average sample period.
//! - The tree and its stages: build, merge the logger's children, prune, merge exploders,
//!   merge same-name siblings, merge single-child runs.
//!
//! The bootprint model ([`crate::BootModel`]) does not use this module's figures: it uses
//! seconds, real clock ticks and per-disk utilisation (see `docs/report.md`).

use trace::bootchart::{DiskBlock, PsLog, StatSample};

/// One CPU figure per `proc_stat.log` block after the first, as bootchart2 computes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuRow {
    /// Block time, centiseconds.
    pub t_cs: u64,
    /// user + nice share.
    pub user: f64,
    /// system + irq + softirq share.
    pub sys: f64,
    /// iowait share.
    pub io: f64,
}

/// bootchart2's CPU series.
pub fn cpu_series(stat: &[StatSample]) -> Vec<CpuRow> {
    stat.windows(2)
        .map(|w| {
            let (a, b) = (&w[0].cpu, &w[1].cpu);
            let d = |x: u64, y: u64| y.wrapping_sub(x) as f64;
            // The log's counters can be anything: wrapping sums, as the difference wraps.
            let user = d(a.user.wrapping_add(a.nice), b.user.wrapping_add(b.nice));
            let sys = d(
                a.system.wrapping_add(a.irq).wrapping_add(a.softirq),
                b.system.wrapping_add(b.irq).wrapping_add(b.softirq),
            );
            let idle = d(a.idle, b.idle);
            let io = d(a.iowait, b.iowait);
            let sum = (user + sys + idle + io).max(1.0);
            CpuRow {
                t_cs: w[1].t_cs,
                user: user / sum,
                sys: sys / sum,
                io: io / sum,
            }
        })
        .collect()
}

/// One disk figure per `proc_diskstats.log` block after the first, as bootchart2 computes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiskRow {
    /// Block time, centiseconds.
    pub t_cs: u64,
    /// KiB/s read.
    pub read_kibs: f64,
    /// KiB/s written.
    pub write_kibs: f64,
    /// Utilisation (bootchart2's: divided by the number of CPUs).
    pub util: f64,
}

/// Whether bootchart2 counts this device as a whole disk.
pub fn is_bootchart_disk(name: &str) -> bool {
    let b = name.as_bytes();
    let digit_after = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|r| r.len() == 1 && r.as_bytes()[0].is_ascii_digit())
    };
    (b.len() == 3 && matches!(b[0], b'h' | b's' | b'v') && b[1] == b'd')
        || digit_after("mtdblock")
        || digit_after("mmcblk")
        || name.strip_prefix("cciss/c").is_some_and(|r| {
            let digits = r.bytes().take_while(u8::is_ascii_digit).count();
            digits > 0
                && r[digits..].starts_with('d')
                && r[digits + 1..].starts_with(|c: char| c.is_ascii_digit())
        })
}

/// bootchart2's disk series; `ncpus` as [`num_cpus`] finds it.
pub fn disk_series(disk: &[DiskBlock], ncpus: u32) -> Vec<DiskRow> {
    let sums: Vec<(u64, [u64; 3])> = disk
        .iter()
        .map(|b| {
            let mut s = [0u64; 3];
            for d in b.disks.iter().filter(|d| is_bootchart_disk(&d.name)) {
                s[0] += d.read_sectors;
                s[1] += d.write_sectors;
                s[2] += d.io_ticks_ms;
            }
            (b.t_cs, s)
        })
        .collect();
    sums.windows(2)
        .map(|w| {
            let (t0, a) = w[0];
            let (t1, b) = w[1];
            let interval = (t1 as f64 - t0 as f64).max(1.0);
            let d = |i: usize| b[i] as f64 - a[i] as f64;
            DiskRow {
                t_cs: t1,
                read_kibs: d(0) / 2.0 * 100.0 / interval,
                write_kibs: d(1) / 2.0 * 100.0 / interval,
                util: (d(2) / 10.0 / interval / ncpus.max(1) as f64).clamp(0.0, 1.0),
            }
        })
        .collect()
}

/// The CPU count bootchart2 reads from the header: `system.cpu.num`, else the number in
/// parentheses at the end of `system.cpu`, else 1.
pub fn num_cpus(header: &[(String, String)]) -> u32 {
    let get = |k: &str| {
        header
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    if let Some(n) = get("system.cpu.num").and_then(|v| v.trim().parse::<u32>().ok()) {
        return n.max(1);
    }
    get("system.cpu")
        .and_then(|v| {
            let close = v.rfind(')')?;
            let open = v[..close].rfind('(')?;
            v[open + 1..close].parse::<u32>().ok()
        })
        .unwrap_or(1)
        .max(1)
}

/// One process as bootchart2 sees it (all sightings of one pid).
#[derive(Debug, Clone, PartialEq)]
pub struct BcProcess {
    /// Process id.
    pub pid: u32,
    /// The last `comm` seen (plus ` (+)` after an exploder merge).
    pub cmd: String,
    /// Parent pid (possibly rewritten by the rc fix-up).
    pub ppid: u32,
    /// Start, centiseconds.
    pub start_cs: f64,
    /// Duration, centiseconds.
    pub duration_cs: f64,
    /// Sample times (cs) with state and CPU shares (user, sys) of the interval.
    pub samples: Vec<BcSample>,
    /// More than two samples with CPU use or in state D.
    pub active: bool,
}

/// One bootchart2 process sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BcSample {
    /// Block time, centiseconds.
    pub t_cs: u64,
    /// State letter.
    pub state: char,
    /// User CPU share of the interval.
    pub user: f64,
    /// System CPU share of the interval.
    pub sys: f64,
}

/// bootchart2's view of `proc_ps.log`.
#[derive(Debug, Clone, PartialEq)]
pub struct PsStats {
    /// Processes in pid order.
    pub processes: Vec<BcProcess>,
    /// Average time between blocks, centiseconds.
    pub sample_period: f64,
    /// First block time.
    pub start_cs: u64,
    /// Last block time.
    pub end_cs: u64,
}

/// Builds bootchart2's process list from `proc_ps.log`.
pub fn ps_stats(log: &PsLog) -> PsStats {
    struct Acc {
        p: BcProcess,
        last: (u64, u64),
    }
    let mut by_pid: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    let mut accs: Vec<Acc> = Vec::new();
    let mut ltime: u64 = 0;
    for block in &log.blocks {
        let time = block.t_cs;
        for r in log.block_records(block) {
            let idx = match by_pid.get(&r.pid) {
                Some(&i) => {
                    accs[i].p.cmd.clone_from(&r.comm);
                    let a = &mut accs[i];
                    let interval = time.saturating_sub(ltime).max(1) as f64;
                    let mut user = r.utime.wrapping_sub(a.last.0) as f64 / interval;
                    let mut sys = r.stime.wrapping_sub(a.last.1) as f64 / interval;
                    let load = user + sys;
                    if load > 1.0 {
                        user /= load;
                        sys /= load;
                    }
                    a.p.samples.push(BcSample {
                        t_cs: time,
                        state: r.state,
                        user,
                        sys,
                    });
                    i
                }
                None => {
                    accs.push(Acc {
                        p: BcProcess {
                            pid: r.pid,
                            cmd: r.comm.clone(),
                            ppid: r.ppid,
                            start_cs: time.min(r.starttime) as f64,
                            duration_cs: 0.0,
                            samples: Vec::new(),
                            active: false,
                        },
                        last: (0, 0),
                    });
                    by_pid.insert(r.pid, accs.len() - 1);
                    accs.len() - 1
                }
            };
            accs[idx].last = (r.utime, r.stime);
        }
        ltime = time;
    }
    let start_cs = log.blocks.first().map_or(0, |b| b.t_cs);
    let n = log.blocks.len();
    let sample_period = if n > 1 {
        // Saturating: a block's time may go backwards in a damaged log.
        ltime.saturating_sub(start_cs) as f64 / (n - 1) as f64
    } else {
        0.0
    };
    let mut processes: Vec<BcProcess> = accs
        .into_iter()
        .map(|a| {
            let mut p = a.p;
            if let (Some(first), Some(last)) = (p.samples.first(), p.samples.last()) {
                p.start_cs = p.start_cs.min(first.t_cs as f64);
                p.duration_cs = last.t_cs as f64 - p.start_cs + sample_period;
            }
            let active = p.samples.iter().filter(|s| s.user + s.sys > 0.0).count()
                + p.samples.iter().filter(|s| s.state == 'D').count();
            p.active = active > 2;
            p
        })
        .collect();
    processes.sort_by_key(|p| p.pid);
    PsStats {
        processes,
        sample_period,
        start_cs,
        end_cs: ltime,
    }
}

/// bootchart2's process tree, in an arena: `nodes[i].children` index into `nodes`.
#[derive(Debug, Clone)]
pub struct ProcessTree {
    /// Every process ever in the tree (merged ones stay here, unreachable).
    pub nodes: Vec<TreeNode>,
    /// Top-level processes in order.
    pub roots: Vec<usize>,
    /// Average sample period, centiseconds.
    pub sample_period: f64,
    /// Tree start (earliest start) when built, centiseconds.
    pub start_cs: f64,
    /// Tree end minus start when built, centiseconds.
    pub duration_cs: f64,
}

/// A tree node: a process and its children.
#[derive(Debug, Clone)]
pub struct TreeNode {
    /// The process (samples and times grow as others merge into it).
    pub process: BcProcess,
    /// Children in order.
    pub children: Vec<usize>,
}

/// One line of a flattened tree, as in the `extract.processtree.*.log` files.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeRow {
    /// Process id.
    pub pid: u32,
    /// Command.
    pub cmd: String,
    /// Start, milliseconds.
    pub start_ms: f64,
    /// Duration, milliseconds.
    pub duration_ms: f64,
    /// Number of direct children.
    pub children: usize,
    /// Number of samples.
    pub samples: usize,
}

impl ProcessTree {
    /// Builds the tree: parents by ppid among the processes seen, children in pid order, then
    /// bootchart2's fix-up for daemons re-parented to init by Fedora's `runuser` (processes
    /// with ppid 1 whose pid lies inside the pid range of an `rc` (ppid 1) subtree become its
    /// children).
    pub fn build(stats: &PsStats) -> ProcessTree {
        let mut tree = ProcessTree {
            nodes: stats
                .processes
                .iter()
                .map(|p| TreeNode {
                    process: p.clone(),
                    children: Vec::new(),
                })
                .collect(),
            roots: Vec::new(),
            sample_period: stats.sample_period,
            start_cs: 0.0,
            duration_cs: 0.0,
        };
        tree.link();
        // The last `rc` with ppid 1 in pid order wins, as in bootchart2.
        let rc = (0..tree.nodes.len())
            .rev()
            .find(|&i| tree.nodes[i].process.cmd == "rc" && tree.nodes[i].process.ppid == 1);
        if let Some(rc) = rc {
            let start = tree.nodes[rc].process.pid;
            if let Some(end) = tree.max_pid(&tree.nodes[rc].children.clone()) {
                for n in &mut tree.nodes {
                    let p = &mut n.process;
                    if p.pid > start && p.pid < end && p.ppid == 1 {
                        p.ppid = start;
                    }
                }
                tree.link();
            }
        }
        let (start, end) = tree.span(&tree.roots.clone());
        tree.start_cs = start;
        tree.duration_cs = end - start;
        tree
    }

    fn link(&mut self) {
        let index: std::collections::HashMap<u32, usize> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.process.pid, i))
            .collect();
        self.roots.clear();
        for n in &mut self.nodes {
            n.children.clear();
        }
        let mut parents: Vec<Option<usize>> = (0..self.nodes.len())
            .map(|i| {
                index
                    .get(&self.nodes[i].process.ppid)
                    .copied()
                    .filter(|&p| p != i)
            })
            .collect();
        // bootchart2 would recurse forever on a parent cycle (pid reuse makes them): the
        // lowest pid in one becomes a root instead.
        crate::build::cut_parent_cycles(&mut parents, |a, b| a.cmp(&b));
        // Nodes are in pid order, so children lists come out in pid order.
        for (i, parent) in parents.into_iter().enumerate() {
            match parent {
                Some(p) => self.nodes[p].children.push(i),
                None => self.roots.push(i),
            }
        }
    }

    fn max_pid(&self, list: &[usize]) -> Option<u32> {
        list.iter()
            .map(|&i| {
                let own = self.nodes[i].process.pid;
                self.max_pid(&self.nodes[i].children)
                    .map_or(own, |m| m.max(own))
            })
            .max()
    }

    fn span(&self, list: &[usize]) -> (f64, f64) {
        let mut start = f64::INFINITY;
        let mut end = f64::NEG_INFINITY;
        let mut stack: Vec<usize> = list.to_vec();
        while let Some(i) = stack.pop() {
            let p = &self.nodes[i].process;
            start = start.min(p.start_cs);
            end = end.max(p.start_cs + p.duration_cs);
            stack.extend(&self.nodes[i].children);
        }
        (start, end)
    }

    fn count(&self, list: &[usize]) -> usize {
        list.iter()
            .map(|&i| 1 + self.count(&self.nodes[i].children))
            .sum()
    }

    /// Merges `b`'s samples and time span into `a`.
    fn merge_into(&mut self, a: usize, b: usize) {
        let other = std::mem::take(&mut self.nodes[b].process.samples);
        let (bs, bd) = (
            self.nodes[b].process.start_cs,
            self.nodes[b].process.duration_cs,
        );
        self.nodes[b].process.samples = other.clone();
        let p = &mut self.nodes[a].process;
        p.samples.extend(other);
        p.samples.sort_by_key(|s| s.t_cs);
        let end = (p.start_cs + p.duration_cs).max(bs + bd);
        p.start_cs = p.start_cs.min(bs);
        p.duration_cs = end - p.start_cs;
    }

    fn descendants(&self, i: usize, out: &mut Vec<usize>) {
        for &c in &self.nodes[i].children {
            out.push(c);
            self.descendants(c, out);
        }
    }

    /// Folds everything below each process named `logger` into it (the logger's `sleep`s
    /// and `cat`s). Returns how many processes were merged.
    pub fn merge_logger(&mut self, logger: &str) -> usize {
        let mut loggers = Vec::new();
        let mut stack: Vec<usize> = self.roots.iter().rev().copied().collect();
        while let Some(i) = stack.pop() {
            if self.nodes[i].process.cmd == logger {
                loggers.push(i);
            } else {
                stack.extend(self.nodes[i].children.iter().rev());
            }
        }
        let mut removed = 0;
        for l in loggers {
            let mut below = Vec::new();
            self.descendants(l, &mut below);
            for b in &below {
                self.merge_into(l, *b);
            }
            removed += below.len();
            self.nodes[l].children.clear();
        }
        removed
    }

    /// Removes short-lived processes (duration at most two sample periods) and idle
    /// background processes (inactive, alive to the end, started after the tree and lasting
    /// over 90% of it, childless); a removed process's children take its place (in reverse
    /// order, as bootchart2 inserts them). Top-level processes with children are kept.
    pub fn prune(&mut self) -> usize {
        let mut roots = std::mem::take(&mut self.roots);
        let n = self.prune_list(&mut roots, true);
        self.roots = roots;
        n
    }

    fn prune_list(&mut self, list: &mut Vec<usize>, top: bool) -> usize {
        let mut removed = 0;
        let mut idx = 0;
        while idx < list.len() {
            let i = list[idx];
            if !top || self.nodes[i].children.is_empty() {
                let p = &self.nodes[i].process;
                let end = p.start_cs + p.duration_cs;
                let idle_background = !p.active
                    && end >= self.start_cs + self.duration_cs
                    && p.start_cs > self.start_cs
                    && p.duration_cs > 0.9 * self.duration_cs
                    && self.count(&self.nodes[i].children) == 0;
                let short = p.duration_cs <= 2.0 * self.sample_period;
                if idle_background || short {
                    list.remove(idx);
                    for &c in &self.nodes[i].children.clone() {
                        list.insert(idx, c);
                    }
                    removed += 1;
                    continue;
                }
            }
            let mut children = std::mem::take(&mut self.nodes[i].children);
            removed += self.prune_list(&mut children, false);
            self.nodes[i].children = children;
            idx += 1;
        }
        removed
    }

    /// Folds the whole subtree of each process whose command is in `names` into it and marks
    /// it ` (+)`. (bootchart2 means to do this for `hwup`; its test data has none.)
    pub fn merge_exploders(&mut self, names: &[&str]) -> usize {
        let mut found = Vec::new();
        let mut stack: Vec<usize> = self.roots.clone();
        while let Some(i) = stack.pop() {
            if names.contains(&self.nodes[i].process.cmd.as_str())
                && !self.nodes[i].children.is_empty()
            {
                found.push(i);
            } else {
                stack.extend(&self.nodes[i].children);
            }
        }
        let mut removed = 0;
        for e in found {
            let mut below = Vec::new();
            self.descendants(e, &mut below);
            for b in &below {
                self.merge_into(e, *b);
            }
            removed += below.len();
            self.nodes[e].children.clear();
            self.nodes[e].process.cmd.push_str(" (+)");
        }
        removed
    }

    /// Merges adjacent siblings with the same command (threads or loops), the later into the
    /// earlier, taking its children; recursively.
    pub fn merge_siblings(&mut self) -> usize {
        let mut roots = std::mem::take(&mut self.roots);
        let n = self.merge_siblings_list(&mut roots);
        self.roots = roots;
        n
    }

    fn merge_siblings_list(&mut self, list: &mut Vec<usize>) -> usize {
        let mut removed = 0;
        let mut idx = 0;
        while idx < list.len() {
            let p = list[idx];
            while idx + 1 < list.len()
                && self.nodes[list[idx + 1]].process.cmd == self.nodes[p].process.cmd
            {
                let next = list.remove(idx + 1);
                let grandchildren = self.nodes[next].children.clone();
                self.nodes[p].children.extend(grandchildren);
                self.merge_into(p, next);
                removed += 1;
            }
            let mut children = std::mem::take(&mut self.nodes[p].children);
            removed += self.merge_siblings_list(&mut children);
            self.nodes[p].children = children;
            idx += 1;
        }
        removed
    }

    /// Merges a process's only child into it when they have the same command; repeatedly
    /// and recursively.
    pub fn merge_runs(&mut self) -> usize {
        let roots = self.roots.clone();
        self.merge_runs_list(&roots)
    }

    fn merge_runs_list(&mut self, list: &[usize]) -> usize {
        let mut removed = 0;
        for &p in list {
            while self.nodes[p].children.len() == 1 {
                let c = self.nodes[p].children[0];
                if self.nodes[c].process.cmd != self.nodes[p].process.cmd {
                    break;
                }
                self.nodes[p].children = self.nodes[c].children.clone();
                self.merge_into(p, c);
                removed += 1;
            }
            let children = self.nodes[p].children.clone();
            removed += self.merge_runs_list(&children);
        }
        removed
    }

    /// The tree depth-first, as in the extract files.
    pub fn flatten(&self) -> Vec<TreeRow> {
        let mut out = Vec::new();
        let mut stack: Vec<usize> = self.roots.iter().rev().copied().collect();
        while let Some(i) = stack.pop() {
            let n = &self.nodes[i];
            out.push(TreeRow {
                pid: n.process.pid,
                cmd: n.process.cmd.clone(),
                start_ms: n.process.start_cs * 10.0,
                duration_ms: n.process.duration_cs * 10.0,
                children: n.children.len(),
                samples: n.process.samples.len(),
            });
            stack.extend(n.children.iter().rev());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_names() {
        for yes in ["sda", "hdb", "vda", "mmcblk0", "mtdblock3", "cciss/c0d1"] {
            assert!(is_bootchart_disk(yes), "{yes}");
        }
        for no in ["sda1", "ram0", "loop0", "nvme0n1", "mmcblk0p1", "dm-0"] {
            assert!(!is_bootchart_disk(no), "{no}");
        }
    }

    /// Defect 3: `rc` (ppid 1) whose pid init's ppid names: the tree's walks must end.
    #[test]
    fn defect3_tree_with_a_parent_cycle_through_rc_is_built() {
        let mut text = Vec::new();
        for t in [100u64, 120] {
            let mut body = Vec::new();
            for (pid, ppid, comm) in [(1, 50, "init"), (50, 1, "rc"), (60, 50, "sh"), (61, 1, "d")]
            {
                trace::writer::PsRecord {
                    pid,
                    ppid,
                    comm: comm.into(),
                    state: 'S',
                    starttime: 90,
                    ..Default::default()
                }
                .write_line(&mut body)
                .unwrap();
            }
            trace::writer::write_block(&mut text, t, &body).unwrap();
        }
        let log = trace::bootchart::parse_proc_ps(std::str::from_utf8(&text).unwrap()).unwrap();
        let tree = ProcessTree::build(&ps_stats(&log));
        assert_eq!(tree.nodes.len(), 4);
    }

    #[test]
    fn cpus_from_header() {
        let h = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert_eq!(
            num_cpus(&h("system.cpu", "model name : X @ 2.40GHz (2)")),
            2
        );
        assert_eq!(num_cpus(&h("system.cpu.num", "4")), 4);
        assert_eq!(num_cpus(&h("title", "x")), 1);
    }
}
