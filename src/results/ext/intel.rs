//! Intel's NoSQL table for one kv phase (`extra.kv.intel`): throughput,
//! the share of reads and of writes at or under a latency, the latency's
//! standard deviation, the device's MiB/s, queue size and latency, and the
//! machine's CPU busy. A figure the phase did not measure is `None` (shown
//! as "not measured"), never 0. Computed by `analysis::intel`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IntelRow {
    /// Operations per second (YCSB's throughput, Intel's TPS).
    pub tps: f64,
    /// The latency the shares are taken at (`--under`).
    pub threshold_ns: u64,
    /// Percent of reads (read, scan, seek, readseq, the read of a
    /// read-modify-write) at or under the threshold; `None`: no reads.
    pub reads_under_pct: Option<f64>,
    /// Percent of writes (insert, update, write, delete, the update of a
    /// read-modify-write) at or under the threshold; `None`: no writes.
    pub writes_under_pct: Option<f64>,
    /// Standard deviation of the reads' and the writes' latency (ns).
    pub read_stdev_ns: Option<f64>,
    pub write_stdev_ns: Option<f64>,
    /// The device under the database (/proc/diskstats), over the phase.
    pub device_read_mib_s: Option<f64>,
    pub device_write_mib_s: Option<f64>,
    /// iostat's aqu-sz.
    pub device_avg_queue: Option<f64>,
    /// iostat's await: mean time per device I/O (ms).
    pub device_latency_ms: Option<f64>,
    /// The machine's CPUs busy (user, system, irq; not idle, iowait or
    /// steal), percent of all CPUs, over the phase (`extra.cpu`).
    pub cpu_busy_pct: Option<f64>,
}
