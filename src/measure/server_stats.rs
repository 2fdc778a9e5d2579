//! Point sections of database runs: `server` (`ServerPointStats`: what the
//! database server's processes used and what its storage took over a
//! point) and `timeline` (`TimelineSeries`: the machine, the device under
//! the data, the server and the client second by second). Filled by
//! `measure::server::ServerSampler` and `measure::timeline::Timeline`, for
//! oltp points and the kv phases on servers alike. The samplers' output
//! types, like `DeviceStats` and `CpuStats`: the results model is written in
//! them (`results::ext` re-exports both), measure imports no results.

use serde::{Deserialize, Serialize};

use super::diskstats::DeviceStats;
use super::procgroup::GroupUsage;

/// A database server over one point (or phase).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerPointStats {
    /// CPU (percent of one CPU) and storage bytes of the server's process
    /// group (/proc/PID/stat and /proc/PID/io); none when iolab does not
    /// know the server's processes (`--server-url`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<GroupUsage>,
    /// Bytes allocated on disk under the data directory at the end (with
    /// what the server preallocated: WAL segments, InnoDB's files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_size_bytes: Option<u64>,
    /// The block device under the data directory over the point (everything
    /// that used it, not only the server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceStats>,
    /// Operations of the point (transactions for oltp).
    pub ops: u64,
    /// Device bytes written per operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_write_bytes_per_op: Option<f64>,
    /// Bytes the server says it wrote (PostgreSQL: WAL bytes from
    /// pg_current_wal_lsn plus the buffers its checkpointer, background
    /// writer and backends wrote; MariaDB: Innodb_data_written plus
    /// Innodb_os_log_written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_written_bytes: Option<u64>,
    /// Device bytes written / `db_written_bytes` (`write_amp::PER_SERVER_BYTES`):
    /// what the file system and the rest of the machine add to the
    /// server's own writes; absent when not measured (`write_amp::ratio`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_amplification: Option<f64>,
}

impl ServerPointStats {
    /// Set what the server says it wrote, and the write amplification.
    pub fn set_db_written(&mut self, bytes: Option<u64>) {
        self.db_written_bytes = bytes;
        self.write_amplification = super::write_amp::ratio(self.device.as_ref(), bytes).ok();
    }
}

/// Per-second series over a point's measured time, one entry per interval
/// (columns of equal length; a column without a source is empty). Every
/// CPU figure is a percent of the whole machine (all `cpus` CPUs = 100),
/// as vmstat and iostat show it, so the server's share stacks with the
/// machine's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TimelineSeries {
    /// The /proc/diskstats line sampled: the device the data directory is
    /// on, a partition's own line when it is a partition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    pub cpus: usize,
    /// Interval start, seconds since the start of the measured time.
    pub t_s: Vec<f64>,
    /// Interval length (the last one may be short).
    pub len_s: Vec<f64>,
    /// user + nice.
    pub cpu_usr_pct: Vec<f64>,
    /// system; in files without `cpu_irq_pct` it includes irq and softirq.
    pub cpu_sys_pct: Vec<f64>,
    pub cpu_iowait_pct: Vec<f64>,
    pub cpu_idle_pct: Vec<f64>,
    /// irq + softirq (absent in files of older versions).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpu_irq_pct: Vec<f64>,
    /// Steal: time the hypervisor ran someone else on this VM's CPUs
    /// (absent in files of older versions). The six CPU columns add to 100.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpu_steal_pct: Vec<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disk_read_mib_s: Vec<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disk_write_mib_s: Vec<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disk_read_iops: Vec<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disk_write_iops: Vec<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_usr_pct: Vec<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_sys_pct: Vec<f64>,
    /// The client's operations (transactions for oltp) per second.
    pub client_ops_s: Vec<f64>,
    /// The sampling interval: 0.1 s for a phase under 10 s, else 1 s
    /// (absent in files of older versions: 1 s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_s: Option<f64>,
}

impl TimelineSeries {
    pub fn len(&self) -> usize {
        self.t_s.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }

    /// Seconds covered.
    pub fn span_s(&self) -> f64 {
        self.len_s.iter().sum()
    }
}
