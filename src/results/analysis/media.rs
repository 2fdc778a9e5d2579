//! The `analysis.media` section: several targets side by side, each
//! normalized to a baseline round by round. `analysis::media` computes
//! it; reports draw it.

use serde::{Deserialize, Serialize};

/// The media comparison of a run (`analysis.media`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MediaAnalysis {
    /// The target every other is normalized to.
    pub baseline: String,
    /// Rounds seen (the most any target measured).
    pub rounds: u32,
    /// Targets in the order of the first round.
    pub targets: Vec<String>,
    /// Workloads in the order they ran.
    pub workloads: Vec<String>,
    /// One row per workload and target, workload-major.
    pub rows: Vec<MediaRow>,
}

/// One workload on one target, over the rounds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MediaRow {
    pub workload: String,
    pub target: String,
    /// What `throughput` counts: "IOPS" (device points), "NOPM" (oltp,
    /// new orders per minute) or "ops/s".
    pub unit: String,
    /// Rounds this target measured the workload.
    pub rounds: u32,
    /// Median throughput over the rounds.
    pub throughput: f64,
    /// Median MiB/s over the rounds (points that move bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mib_s: Option<f64>,
    /// Median over the rounds of the mean latency (all operations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_lat_ns: Option<f64>,
    /// `throughput` over the baseline row's `throughput`: the ratio of
    /// the two values shown side by side (medians over the rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// `mean_lat_ns` over the baseline row's, likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_ratio: Option<f64>,
    /// Throughput over the baseline's in the same round: the median of
    /// the per-round ratios, and their range (what tells drift from a
    /// difference). None when no round of the baseline is comparable
    /// (missing, or zero throughput).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_baseline: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_max: Option<f64>,
    /// Rounds behind the ratio (measured on both this target and the baseline).
    pub paired_rounds: u32,
    /// The range straddles 1.0: not told apart from the baseline.
    pub noise: bool,
    /// Mean latency over the baseline's in the same round (median of the
    /// per-round ratios).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_vs_baseline: Option<f64>,
    /// The points of this row, one per round, in round order.
    pub points: Vec<String>,
}
