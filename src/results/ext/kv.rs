//! The `kv` section of a point (`extra.kv`): what a key-value phase adds,
//! in results' terms. `kv/` fills it (`kv::point::build`); reports read it.
//! Owned here so the results model imports no workload.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::measure::diskstats::DeviceStats;
use crate::measure::histogram::LatStats;
use crate::measure::rusage::CpuStats;

/// What a kv phase adds to its point (`extra.kv`): the engine, what the
/// phase cost, and the latency from each operation's intended start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KvPhaseInfo {
    pub engine: String,
    pub engine_version: String,
    pub engine_settings: BTreeMap<String, String>,
    pub engine_stats: BTreeMap<String, String>,
    pub load: LoadStats,
    /// Paced runs: latency from the intended start, per op kind.
    pub intended_lat: BTreeMap<String, LatStats>,
    /// How far behind schedule the paced workers ended (ns).
    pub max_backlog_ns: u64,
    /// Reads of keys that should have been there and were not.
    pub missing: u64,
    /// Intel's figure: the share of each op kind's operations at or under
    /// a latency threshold (`--under`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub under: Option<LatencyShare>,
    /// RocksDB: the LSM's state at the start and end of the phase, and the
    /// chain steps run before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lsm: Option<super::lsm::LsmPhase>,
    /// Intel's table for this phase (`analysis::intel`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intel: Option<super::intel::IntelRow>,
}

/// The share of operations at or under a latency threshold, per op kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyShare {
    pub threshold_ns: u64,
    /// Op kind -> percent of its operations at or under the threshold.
    pub share_pct: BTreeMap<String, f64>,
}

/// What a phase cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoadStats {
    pub wall_ns: u64,
    pub cpu: CpuStats,
    pub device: Option<DeviceStats>,
    /// Allocated bytes of the database directory (st_blocks * 512),
    /// preallocation included (RocksDB's WAL: tens of MiB for a small
    /// database); the database's own size is `db_apparent_bytes`. Absent
    /// where the data is not on this machine (`--server-url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_size_bytes: Option<u64>,
    /// The database's logical size: the sum of its files' lengths; absent
    /// as `db_size_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_apparent_bytes: Option<u64>,
    /// Key + value bytes the workload wrote.
    pub logical_written_bytes: u64,
    /// Device bytes written / key+value bytes the workload wrote
    /// (`write_amp::PER_KV_BYTES`); None when not measured: no device,
    /// nothing written, or nothing reached the device yet. Not the
    /// server's `extra.server.write_amplification`, whose denominator is
    /// what the server reports it wrote.
    pub write_amplification: Option<f64>,
}
