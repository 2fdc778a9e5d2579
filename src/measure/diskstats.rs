//! Device-level counters from /proc/diskstats for the disk under a target:
//! bytes and I/Os read and written, and utilization (io_ticks / wall), as
//! deltas over a phase. The counters cover every process using the disk.
//! Also which disk a directory is on (`device_of`) and how many bytes a
//! directory takes (`dir_size`).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::measure::sysfs;

/// One line of /proc/diskstats (the fields iolab uses).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub reads: u64,
    pub read_merges: u64,
    pub read_sectors: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    pub write_ms: u64,
    pub in_flight: u64,
    pub io_ticks_ms: u64,
    /// Weighted time in queue (ms): each I/O's time in flight summed, so
    /// its delta over the wall time is iostat's average queue size.
    pub queue_ms: u64,
    pub discards: u64,
    pub flushes: u64,
}

/// Parse the line for device `name` out of diskstats text (no allocation:
/// the timeline reads it every second).
pub fn parse_diskstats(text: &str, name: &str) -> Option<DiskCounters> {
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        if fields.nth(2) != Some(name) {
            continue;
        }
        // Fields 3.. of the line: reads, merges, sectors, ms, writes, ...
        let mut f = [0u64; 17];
        let mut count = 0;
        for (slot, v) in f.iter_mut().zip(fields) {
            *slot = v.parse().unwrap_or(0);
            count += 1;
        }
        if count < 11 {
            continue;
        }
        return Some(DiskCounters {
            reads: f[0],
            read_merges: f[1],
            read_sectors: f[2],
            read_ms: f[3],
            writes: f[4],
            write_merges: f[5],
            write_sectors: f[6],
            write_ms: f[7],
            in_flight: f[8],
            io_ticks_ms: f[9],
            queue_ms: f[10],
            discards: f[11],
            flushes: f[15],
        });
    }
    None
}

/// Reads the counters of one named block device.
#[derive(Debug, Clone)]
pub struct DiskSampler {
    pub device: String,
}

impl DiskSampler {
    pub fn new(device: impl Into<String>) -> Self {
        DiskSampler {
            device: device.into(),
        }
    }

    pub fn sample(&self) -> Option<DiskCounters> {
        let text = std::fs::read_to_string("/proc/diskstats").ok()?;
        parse_diskstats(&text, &self.device)
    }
}

/// What the device did during a phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceStats {
    pub device: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub flushes: u64,
    /// Share of wall time the device had I/O in flight, percent.
    pub util_pct: f64,
    /// Mean time per I/O the device spent (read_ms + write_ms) / ios, ms.
    pub avg_wait_ms: f64,
    /// iostat's average queue size (aqu-sz): the weighted time in queue
    /// over the wall time. Absent in files of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_queue: Option<f64>,
}

impl DeviceStats {
    pub fn between(device: &str, a: &DiskCounters, b: &DiskCounters, wall_ns: u64) -> DeviceStats {
        let d = |x: u64, y: u64| y.saturating_sub(x);
        let ios = d(a.reads, b.reads) + d(a.writes, b.writes);
        let wait = d(a.read_ms, b.read_ms) + d(a.write_ms, b.write_ms);
        DeviceStats {
            device: device.to_string(),
            read_ios: d(a.reads, b.reads),
            write_ios: d(a.writes, b.writes),
            read_bytes: d(a.read_sectors, b.read_sectors) * 512,
            write_bytes: d(a.write_sectors, b.write_sectors) * 512,
            read_merges: d(a.read_merges, b.read_merges),
            write_merges: d(a.write_merges, b.write_merges),
            flushes: d(a.flushes, b.flushes),
            util_pct: (d(a.io_ticks_ms, b.io_ticks_ms) as f64 * 1e6 * 100.0
                / wall_ns.max(1) as f64)
                .min(100.0),
            avg_wait_ms: if ios > 0 {
                wait as f64 / ios as f64
            } else {
                0.0
            },
            avg_queue: Some(d(a.queue_ms, b.queue_ms) as f64 * 1e6 / wall_ns.max(1) as f64),
        }
    }
}

/// The kernel name of the block device holding `dir` (partition, if any).
pub fn device_of(dir: &Path) -> Option<String> {
    let dev = sysfs::devnum_of_path(dir)?;
    sysfs::device_names(dev).map(|(name, _disk)| name)
}

/// (allocated, apparent) bytes under `dir`, recursively.
pub fn dir_size(dir: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let mut alloc = 0;
    let mut apparent = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else {
                alloc += m.blocks() * 512;
                apparent += m.len();
            }
        }
    }
    (alloc, apparent)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = " 254       0 vda 1000 10 80000 500 2000 20 160000 900 0 1200 1400 5 0 40 2 30 4\n 253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

    #[test]
    fn parses_and_diffs() {
        let a = parse_diskstats(SAMPLE, "vda").unwrap();
        assert_eq!(a.reads, 1000);
        assert_eq!(a.write_sectors, 160000);
        assert_eq!(a.io_ticks_ms, 1200);
        assert_eq!(a.flushes, 30);
        assert_eq!(a.queue_ms, 1400);
        assert!(parse_diskstats(SAMPLE, "sdz").is_none());
        let mut b = a;
        b.reads += 100;
        b.read_sectors += 800;
        b.io_ticks_ms += 500;
        b.queue_ms += 2500;
        let s = DeviceStats::between("vda", &a, &b, 1_000_000_000);
        assert_eq!(s.read_ios, 100);
        assert_eq!(s.read_bytes, 800 * 512);
        assert!((s.util_pct - 50.0).abs() < 1e-9);
        // 2.5 s of I/O time in queue over 1 s: 2.5 requests in flight on average.
        assert_eq!(s.avg_queue, Some(2.5));
    }

    #[test]
    fn real_diskstats_is_readable() {
        let text = std::fs::read_to_string("/proc/diskstats").unwrap();
        let first = text
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .to_string();
        assert!(DiskSampler::new(first).sample().is_some());
    }
}
