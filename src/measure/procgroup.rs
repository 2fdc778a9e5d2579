//! CPU time and storage I/O of a process group: a database server and the
//! processes it forks (PostgreSQL's backends, checkpointer, WAL writer,
//! which leave the group with setsid(), so descendants of the group's
//! leader count too), summed from /proc/PID/stat (utime, stime, and cutime/cstime: what the
//! group's processes reaped from children that ended) and /proc/PID/io
//! (read_bytes, write_bytes). Sampled on a cold path (phase ends, once a
//! second), never by a worker. write_bytes is the page cache the group
//! dirtied, counted a whole folio at a time: on file systems with large
//! folios (ext4 and XFS on kernel 6.x) one 8 KiB WAL write after an fsync
//! counts 2 MiB, so it is kept for the record and never used for write
//! amplification (the device's own counters are).

use serde::{Deserialize, Serialize};

/// One reading of a group's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GroupSample {
    /// User and system CPU in clock ticks.
    pub user_ticks: u64,
    pub sys_ticks: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub processes: u32,
}

/// A group's use over an interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupUsage {
    /// Percent of one CPU.
    pub usr_pct: f64,
    pub sys_pct: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Processes in the group at the end.
    pub processes: u32,
}

impl GroupUsage {
    pub fn cpu_pct(&self) -> f64 {
        self.usr_pct + self.sys_pct
    }
}

/// The counters of group `pgid` and of the leader's descendants now;
/// `None` when no process of it runs.
pub fn sample(pgid: u32) -> Option<GroupSample> {
    let mut procs: Vec<(u32, StatFields)> = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some(f) = stat_fields(&stat) {
            procs.push((pid, f));
        }
    }
    let parent: std::collections::HashMap<u32, u32> =
        procs.iter().map(|(pid, f)| (*pid, f.ppid)).collect();
    let descends = |mut pid: u32| {
        // Bounded: a chain of parents is short, and /proc may change under us.
        for _ in 0..64 {
            match parent.get(&pid) {
                Some(&pp) if pp == pgid => return true,
                Some(&pp) if pp > 1 => pid = pp,
                _ => return false,
            }
        }
        false
    };
    let mut s = GroupSample::default();
    for (pid, f) in &procs {
        if f.pgrp != pgid && *pid != pgid && !descends(*pid) {
            continue;
        }
        s.processes += 1;
        s.user_ticks += f.utime + f.cutime;
        s.sys_ticks += f.stime + f.cstime;
        if let Ok(io) = std::fs::read_to_string(format!("/proc/{pid}/io")) {
            let (r, w) = io_bytes(&io);
            s.read_bytes += r;
            s.write_bytes += w;
        }
    }
    (s.processes > 0).then_some(s)
}

impl GroupSample {
    /// Use from `earlier` to `self` over `wall_ns`.
    pub fn since(&self, earlier: &GroupSample, wall_ns: u64) -> GroupUsage {
        // SAFETY: sysconf cannot fail for _SC_CLK_TCK.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let wall_s = (wall_ns as f64 / 1e9).max(1e-9);
        let pct = |a: u64, b: u64| a.saturating_sub(b) as f64 / hz / wall_s * 100.0;
        GroupUsage {
            usr_pct: pct(self.user_ticks, earlier.user_ticks),
            sys_pct: pct(self.sys_ticks, earlier.sys_ticks),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            processes: self.processes,
        }
    }
}

struct StatFields {
    ppid: u32,
    pgrp: u32,
    utime: u64,
    stime: u64,
    cutime: u64,
    cstime: u64,
}

/// The fields of /proc/PID/stat this needs (counted after the command
/// name's closing parenthesis, which may hold spaces). No allocation: the
/// timeline reads it every second.
fn stat_fields(stat: &str) -> Option<StatFields> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Fields after the name: state, ppid, pgrp, ..., utime at 11.
    let mut f = [0u64; 15];
    let mut count = 0;
    for (slot, v) in f.iter_mut().zip(rest.split_whitespace()) {
        // The state is a letter, tty_nr and tpgid may be negative: only
        // the ids and counters matter.
        *slot = v.parse().unwrap_or(0);
        count += 1;
    }
    (count == f.len()).then_some(StatFields {
        ppid: u32::try_from(f[1]).ok()?,
        pgrp: u32::try_from(f[2]).ok()?,
        utime: f[11],
        stime: f[12],
        cutime: f[13],
        cstime: f[14],
    })
}

/// Reads the CPU time of a server and every process it forked, once a
/// second for the timeline: the process `root` and its descendants, found
/// through /proc/PID/task/PID/children (PostgreSQL's backends are the
/// postmaster's children; MariaDB is one process), with buffers reused so
/// a reading allocates nothing once warm. What ended was reaped by its
/// parent and counts in the parent's cutime/cstime.
pub struct GroupReader {
    root: u32,
    path: String,
    text: String,
    stack: Vec<u32>,
}

impl GroupReader {
    pub fn new(root: u32) -> GroupReader {
        GroupReader {
            root,
            path: String::with_capacity(64),
            text: String::with_capacity(1024),
            stack: Vec::with_capacity(64),
        }
    }

    /// (user, system) clock ticks of the root and its descendants now;
    /// `None` when the root is gone.
    pub fn ticks(&mut self) -> Option<(u64, u64)> {
        use std::fmt::Write as _;
        self.stack.clear();
        self.stack.push(self.root);
        let (mut user, mut sys, mut seen) = (0u64, 0u64, false);
        while let Some(pid) = self.stack.pop() {
            self.path.clear();
            let _ = write!(self.path, "/proc/{pid}/stat");
            if !read_into(&self.path, &mut self.text) {
                continue;
            }
            let Some(f) = stat_fields(&self.text) else {
                continue;
            };
            seen |= pid == self.root;
            user += f.utime + f.cutime;
            sys += f.stime + f.cstime;
            self.path.clear();
            let _ = write!(self.path, "/proc/{pid}/task/{pid}/children");
            if read_into(&self.path, &mut self.text) {
                self.stack.extend(
                    self.text
                        .split_whitespace()
                        .filter_map(|c| c.parse::<u32>().ok()),
                );
            }
        }
        seen.then_some((user, sys))
    }
}

/// Read the file at `path` into `buf` (cleared first); false if it cannot
/// be read.
pub fn read_into(path: &str, buf: &mut String) -> bool {
    use std::io::Read;
    buf.clear();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_string(buf))
        .is_ok()
}

fn io_bytes(io: &str) -> (u64, u64) {
    let field = |name: &str| {
        io.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("read_bytes:"), field("write_bytes:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_found_after_a_name_with_spaces() {
        let stat = "4242 (postgres: iolab x) S 1 4200 4200 0 -1 4194560 100 0 0 0 57 13 5 2 20 0 1 0 99 0 0";
        let f = stat_fields(stat).unwrap();
        assert_eq!(
            (f.ppid, f.pgrp, f.utime, f.stime, f.cutime, f.cstime),
            (1, 4200, 57, 13, 5, 2)
        );
    }

    #[test]
    fn a_short_stat_line_is_refused() {
        assert!(stat_fields("42 (x) S 1 42 42 0").is_none());
        assert!(stat_fields("no parenthesis").is_none());
    }

    #[test]
    fn a_process_and_its_children_are_read() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id();
        let mut r = GroupReader::new(me);
        let (u, s) = r.ticks().expect("this process is readable");
        // Burn some CPU: the reading grows.
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(60) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let (u2, s2) = r.ticks().unwrap();
        assert!(u2 + s2 >= u + s);
        assert!(r.stack.capacity() > 0);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(GroupReader::new(u32::MAX - 7).ticks().is_none());
    }

    #[test]
    fn children_that_left_the_group_still_count() {
        use std::os::unix::process::CommandExt;
        // A child in a group of its own, as PostgreSQL's backends are.
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .process_group(0)
            .spawn()
            .unwrap();
        let me = std::process::id();
        let with = sample(me).expect("this process");
        assert!(with.processes >= 2, "{with:?}");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn own_group_is_sampled() {
        // SAFETY: getpgrp cannot fail.
        let pgid = unsafe { libc::getpgrp() } as u32;
        let s = sample(pgid).expect("this process is in its own group");
        assert!(s.processes >= 1);
        assert!(sample(u32::MAX - 7).is_none());
        let io = "rchar: 10\nwchar: 20\nread_bytes: 4096\nwrite_bytes: 8192\n";
        assert_eq!(io_bytes(io), (4096, 8192));
    }
}
