//! CPU time and storage I/O of a process group: a database server and the
//! processes it forks (PostgreSQL's backends, checkpointer, WAL writer),
//! summed from /proc/PID/stat (utime, stime, and cutime/cstime: what the
//! group's processes reaped from children that ended) and /proc/PID/io
//! (read_bytes, write_bytes: what reached the block layer). Sampled on a
//! cold path (phase ends, once a second), never by a worker.

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

/// The counters of group `pgid` now; `None` when no process of it runs.
pub fn sample(pgid: u32) -> Option<GroupSample> {
    let mut s = GroupSample::default();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(f) = stat_fields(&stat) else {
            continue;
        };
        if f.pgrp != pgid {
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
    pgrp: u32,
    utime: u64,
    stime: u64,
    cutime: u64,
    cstime: u64,
}

/// The fields of /proc/PID/stat this needs (counted after the command
/// name's closing parenthesis, which may hold spaces).
fn stat_fields(stat: &str) -> Option<StatFields> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| f.get(i)?.parse::<u64>().ok();
    Some(StatFields {
        pgrp: f.get(2)?.parse().ok()?,
        utime: n(11)?,
        stime: n(12)?,
        cutime: n(13)?,
        cstime: n(14)?,
    })
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
            (f.pgrp, f.utime, f.stime, f.cutime, f.cstime),
            (4200, 57, 13, 5, 2)
        );
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
