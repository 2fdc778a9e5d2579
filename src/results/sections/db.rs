//! The database sections of a run (`extra`): the server kv or oltp ran
//! on, what oltp's load did (one load, or one per pass of a media run),
//! the memory cgroup a kv run was held in, and the points a sweep skipped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::measure::diskstats::DeviceStats;
use crate::plan::job::JobSpec;
use crate::results::{ServerPointStats, TimelineSeries};

/// What a results file says about the server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// postgres, mariadb, redis, cassandra.
    /// postgres, mariadb, redis, mongodb.
    pub kind: String,
    pub version: String,
    /// The URL, password masked.
    pub url: String,
    /// iolab started it (false: `--server-url`).
    pub private: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_as: Option<String>,
    /// The settings the server reports (a chosen list, and those set).
    pub config: BTreeMap<String, String>,
}

/// What the load did (`results.extra.oltp_load`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoadInfo {
    pub warehouses: u32,
    /// Rows per table, counted by query after the load.
    pub rows: BTreeMap<String, u64>,
    pub wall_ns: u64,
    /// Database size after the load, logical: the lengths of SQLite's
    /// files (database, WAL, shared memory), the server's own figure for
    /// PostgreSQL (`pg_database_size`) and MariaDB (data and index length).
    pub db_size_bytes: u64,
    pub loader_threads: usize,
    /// The NURand constant C of C_LAST used at load.
    pub c_load: u32,
    /// False when an existing database was reused (`--db`): rows and size
    /// are those found.
    pub loaded: bool,
    /// Bytes of the INSERT statements the loaders sent: the rows as SQL
    /// text, the logical bytes of the load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logical_bytes: Option<u64>,
    /// The device under the data during the load (its indexes and
    /// statistics included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceStats>,
    /// Device bytes written / `logical_bytes` (`write_amp::PER_ROW_BYTES`);
    /// absent when not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_amplification: Option<f64>,
    /// The server during the load (server engines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerPointStats>,
    /// Per second during the load; the client's rate is rows per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<TimelineSeries>,
}

/// One pass's load of an oltp media run (`extra.oltp_loads`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassLoad {
    #[serde(flatten)]
    pub load: LoadInfo,
    pub medium: String,
    pub round: u32,
}

/// The memory cgroup a kv run held itself (and a private server) in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupRecord {
    pub path: String,
    /// cgroup v1 or v2.
    pub version: u8,
    /// memory.max (v2) or memory.limit_in_bytes (v1), bytes.
    pub limit: u64,
    /// A private server started after iolab entered the cgroup inherits it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_inside: Option<bool>,
}

/// One pass's cgroup of a kv media run (`extra.memory_cgroups`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassCgroup {
    pub target: String,
    pub round: u32,
    pub part: Option<String>,
    pub cgroup: CgroupRecord,
}

/// A point a sweep did not measure, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedPoint {
    pub name: String,
    pub experiment: String,
    pub reason: String,
    /// It failed (rather than could not run here).
    pub failed: bool,
    pub job: JobSpec,
}
