//! The `analysis.remote` and `analysis.remote_db` sections: each transport
//! (and the database on each volume) beside DAS. `analysis::remote`
//! computes them; reports draw them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One workload on one transport.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteRow {
    /// The job without its engine ("randrw-4k-mix80-qd32").
    pub workload: String,
    pub transport: String,
    pub point: String,
    pub iops: f64,
    pub mean_ns: Option<f64>,
    pub p95_ns: Option<u64>,
    /// iolab's CPU (user + system) per I/O, microseconds.
    pub host_cpu_us_per_io: Option<f64>,
    /// The target's processes, per I/O.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cpu_us_per_io: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iops_vs_das: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_vs_das: Option<f64>,
    /// Requests that completed with an error (`--continue-on-error`), per
    /// kind, as the point counted them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, u64>,
}

/// The database's mixed phase (readrandomwriterandom) on one volume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbRow {
    pub transport: String,
    pub value_size: u64,
    pub point: String,
    pub ops_s: f64,
    pub read_mean_ns: Option<f64>,
    pub read_p99_ns: Option<u64>,
    pub write_mean_ns: Option<f64>,
    pub write_p99_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops_vs_das: Option<f64>,
}
