//! The recording kept in memory until it can be written: sample blocks as the bytes they
//! will be on disk, and process samples stored once per change (a process whose counters did
//! not move between samples costs four bytes, not a line).

use std::collections::HashMap;
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use trace::writer::{self, PsRecord};
use trace::Event;

/// Who may read a trace. It holds the whole kernel log (read past `dmesg_restrict`) and every
/// command line, so, as the journal does, only root and group `adm`: directories 0750 and
/// files 0640 with group `adm` when `/etc/group` has it, else 0700 and 0600 (root only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// The group that may read (`adm`'s gid), or none.
    pub gid: Option<u32>,
}

impl Access {
    /// From the text of `/etc/group`: group `adm`, if listed.
    pub fn from_group_text(text: &str) -> Access {
        let gid = text.lines().find_map(|line| {
            let mut f = line.split(':');
            (f.next()? == "adm").then_some(())?;
            f.nth(1)?.trim().parse().ok()
        });
        Access { gid }
    }

    /// From the group file at `path` (root only when it cannot be read).
    pub fn from_group_file(path: &Path) -> Access {
        Access::from_group_text(&fs::read_to_string(path).unwrap_or_default())
    }

    /// The access of an existing trace directory, for files added to it later.
    pub fn of_dir(dir: &Path) -> io::Result<Access> {
        use std::os::unix::fs::MetadataExt;
        let meta = fs::metadata(dir)?;
        Ok(Access {
            gid: (meta.mode() & 0o050 != 0).then_some(meta.gid()),
        })
    }

    /// Mode of a directory.
    pub fn dir_mode(&self) -> u32 {
        if self.gid.is_some() {
            0o750
        } else {
            0o700
        }
    }

    /// Mode of a file.
    pub fn file_mode(&self) -> u32 {
        self.dir_mode() & 0o640
    }

    /// Gives an existing directory this access (set exactly, whatever the umask).
    pub fn set_dir(&self, dir: &Path) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        std::os::unix::fs::chown(dir, None, self.gid)?;
        fs::set_permissions(dir, fs::Permissions::from_mode(self.dir_mode()))
    }

    /// Creates (or truncates) a file with this access, before anything is written to it.
    pub fn create(&self, path: &Path) -> io::Result<fs::File> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(self.file_mode())
            .open(path)?;
        std::os::unix::fs::fchown(&f, None, self.gid)?;
        f.set_permissions(fs::Permissions::from_mode(self.file_mode()))?;
        Ok(f)
    }

    /// Writes a whole file with this access.
    pub fn write(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        self.create(path)?.write_all(bytes)
    }

    /// Writes a whole file with this access and syncs it to disk.
    pub(crate) fn write_synced(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut f = self.create(path)?;
        f.write_all(bytes)?;
        sync_file(&f, path)
    }
}

/// fsync(2) of an open file, which `path` names; the tests see which paths were synced, in
/// order (a power cut cannot be tested).
pub(crate) fn sync_file(f: &fs::File, path: &Path) -> io::Result<()> {
    #[cfg(test)]
    SYNCED.with(|s| s.borrow_mut().push(path.to_path_buf()));
    #[cfg(not(test))]
    let _ = path;
    f.sync_all()
}

/// fsync(2) of a directory: makes the entries created or renamed in it durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    sync_file(&fs::File::open(dir)?, dir)
}

#[cfg(test)]
thread_local! {
    /// The paths [`sync_file`] synced on this thread.
    pub(crate) static SYNCED: std::cell::RefCell<Vec<std::path::PathBuf>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// One process state as stored: compact, with the command interned.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CompactPs {
    pid: u32,
    ppid: u32,
    comm: u32,
    state: u8,
    nice: i8,
    priority: i16,
    num_threads: u32,
    utime: u64,
    stime: u64,
    starttime: u64,
    rss: u64,
    blkio_ticks: u64,
}

/// Everything recorded so far.
#[derive(Default)]
pub struct Store {
    stat: Vec<u8>,
    diskstats: Vec<u8>,
    meminfo: Vec<u8>,
    cmdlines: Vec<u8>,
    /// (uptime cs, range into `ps_index`) per process sample.
    ps_samples: Vec<(u64, u32, u32)>,
    ps_index: Vec<u32>,
    ps_records: Vec<CompactPs>,
    last_record: HashMap<u32, u32>,
    comms: Vec<String>,
    comm_ids: HashMap<String, u32>,
    /// Events in the order they happened.
    pub events: Vec<Event>,
    /// Header entries.
    pub header: Vec<(String, String)>,
    /// The kernel log, `dmesg`-formatted.
    pub dmesg: Vec<u8>,
    /// Other files of the trace, by path relative to the trace directory (firmware times).
    pub extra_files: Vec<(std::path::PathBuf, Vec<u8>)>,
    /// The recorder's own pid: its counters move at every sample, so they do not count when
    /// deciding whether a process sample repeats the previous one.
    pub observer_pid: Option<u32>,
}

impl Store {
    /// Adds the system-wide files of one sample.
    pub fn push_system(
        &mut self,
        uptime_cs: u64,
        stat: &[u8],
        diskstats: &[u8],
        meminfo: Option<&[u8]>,
    ) {
        // Writing into a Vec cannot fail.
        let _ = writer::write_block(&mut self.stat, uptime_cs, stat);
        let _ = writer::write_block(&mut self.diskstats, uptime_cs, diskstats);
        if let Some(meminfo) = meminfo {
            let _ = writer::write_block(&mut self.meminfo, uptime_cs, meminfo);
        }
    }

    /// Whether two process samples (ranges of `ps_index`) hold the same records, the
    /// observer's aside.
    fn same_sample(&self, a: (u32, u32), b: (u32, u32)) -> bool {
        let others = |(start, end): (u32, u32)| {
            self.ps_index[start as usize..end as usize]
                .iter()
                .copied()
                .filter(move |&id| Some(self.ps_records[id as usize].pid) != self.observer_pid)
        };
        others(a).eq(others(b))
    }

    /// Adds one process sample.
    pub fn push_processes(&mut self, uptime_cs: u64, records: &[PsRecord]) {
        let start = self.ps_index.len() as u32;
        for r in records {
            // Most processes did not change since their last sample: recognise that before
            // building the compact record, which looks the name up in a map.
            let last = self.last_record.get(&r.pid).copied();
            if let Some(id) = last.filter(|&id| self.unchanged(id, r)) {
                self.ps_index.push(id);
                continue;
            }
            let compact = self.compact(r);
            let id = match last {
                Some(id) if self.ps_records[id as usize] == compact => id,
                _ => {
                    self.ps_records.push(compact);
                    let id = (self.ps_records.len() - 1) as u32;
                    self.last_record.insert(r.pid, id);
                    id
                }
            };
            self.ps_index.push(id);
        }
        self.ps_samples
            .push((uptime_cs, start, self.ps_index.len() as u32));
    }

    /// Adds a `cmdline2.log` block.
    pub fn push_cmdline(&mut self, pid: u32, exe: &str, argv: &[String]) {
        let _ = writer::write_cmdline(&mut self.cmdlines, pid, exe, argv);
    }

    /// Number of process samples so far.
    pub fn ps_sample_count(&self) -> usize {
        self.ps_samples.len()
    }

    /// Number of `proc_ps.log` lines the trace will have.
    pub fn ps_line_count(&self) -> usize {
        self.ps_index.len()
    }

    /// Whether stored record `id` holds exactly `r`.
    fn unchanged(&self, id: u32, r: &PsRecord) -> bool {
        let c = &self.ps_records[id as usize];
        c.pid == r.pid
            && c.ppid == r.ppid
            && c.state == r.state as u8
            && c.nice == r.nice as i8
            && c.priority == r.priority as i16
            && c.num_threads == r.num_threads as u32
            && c.utime == r.utime
            && c.stime == r.stime
            && c.starttime == r.starttime
            && c.rss == r.rss
            && c.blkio_ticks == r.blkio_ticks
            && self.comms[c.comm as usize] == r.comm
    }

    fn compact(&mut self, r: &PsRecord) -> CompactPs {
        let comm = match self.comm_ids.get(&r.comm) {
            Some(&id) => id,
            None => {
                self.comms.push(r.comm.clone());
                let id = (self.comms.len() - 1) as u32;
                self.comm_ids.insert(r.comm.clone(), id);
                id
            }
        };
        CompactPs {
            pid: r.pid,
            ppid: r.ppid,
            comm,
            state: r.state as u8,
            nice: r.nice as i8,
            priority: r.priority as i16,
            num_threads: r.num_threads as u32,
            utime: r.utime,
            stime: r.stime,
            starttime: r.starttime,
            rss: r.rss,
            blkio_ticks: r.blkio_ticks,
        }
    }

    fn expand(&self, c: &CompactPs) -> PsRecord {
        PsRecord {
            pid: c.pid,
            comm: self.comms[c.comm as usize].clone(),
            state: c.state as char,
            ppid: c.ppid,
            utime: c.utime,
            stime: c.stime,
            priority: c.priority as i64,
            nice: c.nice as i64,
            num_threads: c.num_threads as u64,
            starttime: c.starttime,
            rss: c.rss,
            blkio_ticks: c.blkio_ticks,
        }
    }

    /// Writes the trace files into `dir` (which must exist), each created with `access` and
    /// synced to disk (the caller syncs `dir` and renames it: a trace is whole or absent).
    pub fn write_to(&self, dir: &Path, access: Access) -> io::Result<()> {
        let path = dir.join("header");
        let mut header = BufWriter::new(access.create(&path)?);
        writer::write_header(&mut header, &self.header)?;
        sync_file(&header.into_inner().map_err(|e| e.into_error())?, &path)?;
        access.write_synced(&dir.join("proc_stat.log"), &self.stat)?;
        access.write_synced(&dir.join("proc_diskstats.log"), &self.diskstats)?;
        access.write_synced(&dir.join("proc_meminfo.log"), &self.meminfo)?;
        access.write_synced(&dir.join("cmdline2.log"), &self.cmdlines)?;
        access.write_synced(&dir.join("dmesg"), &self.dmesg)?;
        let ps_path = dir.join("proc_ps.log");
        let mut ps = BufWriter::with_capacity(1 << 16, access.create(&ps_path)?);
        // A block identical to the last one written is left out (readers see a longer
        // interval with the same counters), except once a second and at the end, so idle
        // stretches do not fill the disk.
        let mut last_written: Option<(u64, u32, u32)> = None;
        for (i, &(cs, start, end)) in self.ps_samples.iter().enumerate() {
            let is_last = i + 1 == self.ps_samples.len();
            if let Some((lcs, ls, le)) = last_written {
                let same = self.same_sample((ls, le), (start, end));
                if same && cs < lcs + 100 && !is_last {
                    continue;
                }
            }
            last_written = Some((cs, start, end));
            writeln!(ps, "{cs}")?;
            for &id in &self.ps_index[start as usize..end as usize] {
                self.expand(&self.ps_records[id as usize])
                    .write_line(&mut ps)?;
            }
            writeln!(ps)?;
        }
        sync_file(&ps.into_inner().map_err(|e| e.into_error())?, &ps_path)?;
        let mut subdirs = Vec::new();
        for (rel, bytes) in &self.extra_files {
            // Subdirectories (firmware/...) one by one, each with the trace's access.
            let mut sub = dir.to_path_buf();
            for part in rel.parent().into_iter().flat_map(Path::components) {
                sub.push(part);
                if !sub.is_dir() {
                    fs::create_dir(&sub)?;
                    access.set_dir(&sub)?;
                    subdirs.push(sub.clone());
                }
            }
            access.write_synced(&dir.join(rel), bytes)?;
        }
        // Deepest first, so each directory's entries are on disk before its parent's.
        for sub in subdirs.iter().rev() {
            sync_dir(sub)?;
        }
        // events.log last: its presence says the trace is complete.
        let ev_path = dir.join(trace::events::FILE_NAME);
        let mut ev = BufWriter::new(access.create(&ev_path)?);
        writeln!(ev, "{}", trace::events::HEADER_LINE)?;
        // Milestones carry their process's start time, which can precede events already
        // stored: the file is in time order.
        let mut events: Vec<&Event> = self.events.iter().collect();
        events.sort_by_key(|e| e.t_ns);
        for e in events {
            writeln!(ev, "{}", e.to_line())?;
        }
        sync_file(&ev.into_inner().map_err(|e| e.into_error())?, &ev_path)
    }

    /// Bytes held in memory (approximately), for the recorder's own statistics.
    pub fn memory_bytes(&self) -> usize {
        self.stat.capacity()
            + self.diskstats.capacity()
            + self.meminfo.capacity()
            + self.cmdlines.capacity()
            + self.ps_index.capacity() * 4
            + self.ps_samples.capacity() * 16
            + self.ps_records.capacity() * std::mem::size_of::<CompactPs>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(pid: u32, comm: &str, utime: u64) -> PsRecord {
        PsRecord {
            pid,
            comm: comm.into(),
            state: 'S',
            ppid: 1,
            utime,
            starttime: 10,
            ..Default::default()
        }
    }

    #[test]
    fn unchanged_processes_are_stored_once_and_written_every_sample() {
        let mut s = Store::default();
        s.push_processes(100, &[rec(1, "init", 5), rec(2, "a b", 0)]);
        s.push_processes(102, &[rec(1, "init", 5), rec(2, "a b", 1)]);
        s.push_processes(104, &[rec(1, "init", 5)]);
        assert_eq!(s.ps_records.len(), 3, "init stored once, 'a b' twice");
        assert_eq!(s.ps_line_count(), 5);
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        s.events
            .push(Event::new(5, "boot_done").with("reason", "idle"));
        s.write_to(dir, Access { gid: None }).unwrap();
        let ps = fs::read_to_string(dir.join("proc_ps.log")).unwrap();
        let blocks: Vec<&str> = ps.split("\n\n").filter(|b| !b.is_empty()).collect();
        assert_eq!(blocks.len(), 3);
        assert!(blocks[1].starts_with("102\n"));
        assert!(blocks[1].contains("2 (a b) S 1 0 0 0 0 0 0 0 0 0 1 "));
        assert_eq!(blocks[2].lines().count(), 2);
        let ev = fs::read_to_string(dir.join("events.log")).unwrap();
        assert_eq!(ev, "# bootprint events 1\n5 boot_done reason=idle\n");
    }

    /// Defect 5: any local user names a process (prctl PR_SET_NAME, an exec path); a newline
    /// in one made the whole trace unreadable.
    #[test]
    fn defect5_hostile_names_leave_a_readable_trace_with_every_process() {
        let mut s = Store::default();
        let evil = "x\n\n42\n1 (init";
        s.push_processes(100, &[rec(1, "init", 5), rec(66, evil, 1)]);
        s.push_processes(102, &[rec(1, "init", 6), rec(66, evil, 2)]);
        s.push_cmdline(66, "/tmp/a\n\nb", &["a\n\n7".into(), "-x".into()]);
        s.push_cmdline(1, "/sbin/init", &["init".into()]);
        s.header = vec![("bootprint.format".into(), "1".into())];
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        s.write_to(dir, Access { gid: None }).unwrap();
        let t = trace::Trace::open(dir).expect("the trace reads");
        let log = t.ps_log().expect("proc_ps.log reads");
        assert_eq!(log.blocks.len(), 2);
        let pids: Vec<u32> = log.records.iter().map(|r| r.pid).collect();
        assert_eq!(pids, vec![1, 66, 1, 66]);
        assert_eq!(log.records[1].comm, "x\\x0a\\x0a42\\x0a1 (init");
        let c = t.cmdlines.unwrap();
        assert_eq!(c.iter().map(|c| c.pid).collect::<Vec<_>>(), vec![66, 1]);
        assert_eq!(c[0].exe, "/tmp/a\\x0a\\x0ab");
        assert_eq!(c[0].args, vec!["a\\x0a\\x0a7", "-x"]);
    }

    #[test]
    fn repeated_blocks_are_left_out_but_not_for_long() {
        let mut s = Store::default();
        for cs in 0..300u64 {
            // Something changes at 150 cs; otherwise every sample is the same but for the
            // observer (pid 9), which changes every time.
            s.observer_pid = Some(9);
            s.push_processes(
                cs,
                &[
                    rec(1, "init", if cs < 150 { 5 } else { 6 }),
                    rec(9, "rec", cs),
                ],
            );
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        s.write_to(dir, Access { gid: None }).unwrap();
        let ps = fs::read_to_string(dir.join("proc_ps.log")).unwrap();
        let times: Vec<u64> = ps
            .split("\n\n")
            .filter(|b| !b.is_empty())
            .map(|b| b.lines().next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(times, vec![0, 100, 150, 250, 299]);
    }
}
