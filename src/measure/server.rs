//! A database server's side of a point: `ServerSampler::start` at the
//! start of the measured time and `finish` at its end give the server's
//! CPU and I/O (its process group, `procgroup`), the device under its
//! data directory (/proc/diskstats), the directory's size at the end,
//! device bytes written per operation and, given what the server says it
//! wrote, the write amplification. Two readings per point, none between.

use std::path::{Path, PathBuf};

use super::server_stats::ServerPointStats;
use crate::measure::clock::mono_now_ns;
use crate::measure::diskstats::{device_of, dir_size};
use crate::measure::diskstats::{DeviceStats, DiskCounters, DiskSampler};
use crate::measure::procgroup::{self, GroupSample};

/// Counters at the start of a point.
pub struct ServerSampler {
    t0: u64,
    pgid: Option<u32>,
    group: Option<GroupSample>,
    data_dir: PathBuf,
    disk: Option<(DiskSampler, DiskCounters)>,
    db_written: Option<u64>,
}

impl ServerSampler {
    /// Read the counters of the server's process group `pgid` (none: not
    /// known, as with `--server-url`) and of the device under `data_dir`.
    pub fn start(pgid: Option<u32>, data_dir: &Path) -> ServerSampler {
        let disk = device_of(data_dir).and_then(|name| {
            let s = DiskSampler::new(name);
            s.sample().map(|c| (s, c))
        });
        ServerSampler {
            t0: mono_now_ns(),
            pgid,
            group: pgid.and_then(procgroup::sample),
            data_dir: data_dir.to_path_buf(),
            disk,
            db_written: None,
        }
    }

    /// What the server said it had written at the start (its own counter,
    /// `servers::Server::written_bytes`, asked just before `start`), for
    /// the write amplification.
    pub fn with_db_written(mut self, at_start: Option<u64>) -> ServerSampler {
        self.db_written = at_start;
        self
    }

    /// The device line sampled (the data directory's partition or disk).
    pub fn device(&self) -> Option<&str> {
        self.disk.as_ref().map(|(s, _)| s.device.as_str())
    }

    /// The point's figures, `ops` operations done in it.
    pub fn finish(&self, ops: u64) -> ServerPointStats {
        let wall = mono_now_ns().saturating_sub(self.t0).max(1);
        let process = match (self.pgid, &self.group) {
            (Some(pgid), Some(g0)) => procgroup::sample(pgid).map(|g1| g1.since(g0, wall)),
            _ => None,
        };
        let device = self.disk.as_ref().and_then(|(s, c0)| {
            s.sample()
                .map(|c1| DeviceStats::between(&s.device, c0, &c1, wall))
        });
        let (allocated, _) = dir_size(&self.data_dir);
        ServerPointStats {
            process,
            db_size_bytes: (allocated > 0).then_some(allocated),
            device_write_bytes_per_op: match &device {
                Some(d) if ops > 0 => Some(d.write_bytes as f64 / ops as f64),
                _ => None,
            },
            device,
            ops,
            db_written_bytes: None,
            write_amplification: None,
        }
    }

    /// `finish`, then what the server says it had written by then
    /// (`at_end` is asked after the counters are read, so its connection
    /// is not measured).
    pub fn finish_with_db_written(
        &self,
        ops: u64,
        at_end: impl FnOnce() -> Option<u64>,
    ) -> ServerPointStats {
        let mut stats = self.finish(ops);
        let written = match (self.db_written, at_end()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        stats.set_db_written(written);
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_of_this_process_is_measured() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), vec![7u8; 64 << 10]).unwrap();
        // SAFETY: getpgrp cannot fail.
        let pgid = unsafe { libc::getpgrp() } as u32;
        let s = ServerSampler::start(Some(pgid), dir.path()).with_db_written(Some(1000));
        let st = s.finish_with_db_written(10, || Some(5000));
        let p = st.process.as_ref().expect("own group");
        assert!(p.processes >= 1);
        assert!(st.db_size_bytes.unwrap() >= 64 << 10);
        assert_eq!((st.ops, st.db_written_bytes), (10, Some(4000)));
        // A device under the directory is found on a real disk (not tmpfs).
        if let Some(d) = &st.device {
            assert_eq!(Some(d.device.as_str()), s.device());
            assert_eq!(
                st.device_write_bytes_per_op,
                Some(d.write_bytes as f64 / 10.0)
            );
            let amp = (d.write_bytes > 0).then(|| d.write_bytes as f64 / 4000.0);
            assert_eq!(st.write_amplification, amp);
        }
        let none = ServerSampler::start(None, dir.path()).finish(0);
        assert!(none.process.is_none() && none.device_write_bytes_per_op.is_none());
        assert_eq!(none.write_amplification, None);
    }
}
