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
    /// The length of a slice of ACT's verdict (s): an hour, act_latency's
    /// default (a shorter run is one slice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slice_s: Option<f64>,
    /// The intervals merged into slices, each judged by ACT's criteria.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slices: Vec<ActSlice>,
    /// ACT's verdict over every slice (and whether the test was stopped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<ActVerdict>,
    /// The test was stopped because a stream fell too far behind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lag_stop: Option<ActLagStop>,
}

/// One slice of the run (an hour) in ACT's table, judged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ActSlice {
    /// Slice start, seconds from the start of the measured phase.
    pub t_s: f64,
    pub len_s: f64,
    pub reads: u64,
    /// Percent of the slice's small reads slower than each threshold.
    pub over_pct: Vec<f64>,
    /// Every criterion held in this slice.
    pub pass: bool,
}

/// ACT's acceptance: in every slice, fewer than `max_pct` percent of the
/// small reads slower than `over_ms`, for each criterion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ActVerdict {
    pub pass: bool,
    pub criteria: Vec<ActCriterion>,
    /// Slices that broke a criterion.
    pub failed_slices: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ActCriterion {
    pub over_ms: u64,
    pub max_pct: f64,
}

/// Why and when a test was stopped for lag (ACT's `max-lag-sec`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ActLagStop {
    /// "small reads", "large-block writes" or "large-block reads".
    pub stream: String,
    /// How far behind its schedule the stream was when it stopped the test.
    pub lag_ms: f64,
    pub max_lag_s: f64,
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
