//! Load statistics of a phase (the Symas table): wall, user and system
//! time, CPU%, context switches and filesystem I/O from getrusage, device
//! bytes from /proc/diskstats, the database size on disk, and write
//! amplification = device bytes written / logical bytes written. Where the
//! database is not on this machine (a server at `--server-url`), only the
//! client's own counters are taken: no device, size or amplification.

use crate::measure::clock::mono_now_ns;
use crate::measure::diskstats::{device_of, dir_size, DeviceStats, DiskCounters, DiskSampler};
use crate::measure::rusage::RusageSnapshot;
pub use crate::results::ext::kv::LoadStats;
use std::path::Path;

/// Counters at the start of a phase.
pub struct LoadSampler {
    t0: u64,
    ru0: RusageSnapshot,
    disk: Option<(DiskSampler, DiskCounters)>,
}

impl LoadSampler {
    pub fn start(db_dir: Option<&Path>) -> LoadSampler {
        let disk = db_dir.and_then(device_of).and_then(|name| {
            let s = DiskSampler::new(name);
            s.sample().map(|c| (s, c))
        });
        LoadSampler {
            t0: mono_now_ns(),
            ru0: RusageSnapshot::now(),
            disk,
        }
    }

    pub fn finish(&self, db_dir: Option<&Path>, logical_written: u64) -> LoadStats {
        let wall = mono_now_ns().saturating_sub(self.t0).max(1);
        let cpu = RusageSnapshot::now().since(&self.ru0, wall);
        let device = self.disk.as_ref().and_then(|(s, c0)| {
            s.sample()
                .map(|c1| DeviceStats::between(&s.device, c0, &c1, wall))
        });
        // A raw block device has no directory to measure.
        let sizes = db_dir.filter(|d| d.is_dir()).map(dir_size);
        let write_amplification =
            crate::measure::write_amp::ratio(device.as_ref(), Some(logical_written)).ok();
        LoadStats {
            wall_ns: wall,
            cpu,
            device,
            db_size_bytes: sizes.map(|s| s.0),
            db_apparent_bytes: sizes.map(|s| s.1),
            logical_written_bytes: logical_written,
            write_amplification,
        }
    }
}

/// `sync; echo 3 > /proc/sys/vm/drop_caches` (needs root).
pub fn drop_caches() -> anyhow::Result<()> {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| {
        anyhow::anyhow!("--drop-caches: cannot write /proc/sys/vm/drop_caches ({e}); run as root")
    })
}
