//! The ACT section of a point (`extra.act`, `--profile act`): the
//! large-block streams beside the measured small reads, and ACT's table:
//! per interval, the percentage of small reads slower than 1, 2, 4 ... 64 ms.

use serde::{Deserialize, Serialize};

use crate::measure::histogram::LatStats;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ActPoint {
    /// ACT's load multiplier (1x: 2,000 reads and 1,000 writes per second).
    pub scale: f64,
    pub large_block_bytes: u64,
    /// The large-block writes' and reads' target rate, each.
    pub large_block_rate_per_s: f64,
    pub large_block_writes: LargeBlockStream,
    pub large_block_reads: LargeBlockStream,
    /// The table's thresholds (ms).
    pub thresholds_ms: Vec<u64>,
    /// One row per interval of the point's series.
    pub intervals: Vec<ActInterval>,
    /// The whole run: percent of small reads over each threshold.
    pub over_pct: Vec<f64>,
}

/// One large-block stream (one thread, fixed rate).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LargeBlockStream {
    pub ops: u64,
    /// Achieved operations per second.
    pub rate_per_s: f64,
    pub lat: Option<LatStats>,
    /// How far behind its schedule the stream fell at worst (ACT stops a
    /// test at 10 s of lag: `max-lag-sec`).
    pub max_lag_ms: f64,
}

/// One interval of ACT's table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ActInterval {
    /// Interval start, seconds from the start of the measured phase.
    pub t_s: f64,
    /// Small reads completed in the interval.
    pub reads: u64,
    /// Percent of them slower than each threshold.
    pub over_pct: Vec<f64>,
}
