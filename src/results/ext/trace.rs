//! The `trace` section of a point (`extra.trace`): one traced configuration
//! of `iolab trace` or `--breakdown`, with its per-request stack breakdown,
//! block-layer counters and lost events, in results' terms. `trace/` fills
//! it (`trace::config`, `trace::stages`); reports read it. Owned here so the
//! results model imports no workload.

use serde::{Deserialize, Serialize};

/// The measured result of one configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConfigResult {
    pub label: String,
    pub engine: String,
    pub qd: u32,
    pub scheduler: String,
    pub traced_iops: f64,
    pub traced_mean_ns: f64,
    pub untraced_iops: Option<f64>,
    pub untraced_mean_ns: Option<f64>,
    /// traced mean latency / untraced mean latency - 1 (the median over
    /// `overhead_pairs` when several pairs ran).
    pub overhead: Option<f64>,
    /// Per-pair overheads, pairs run in alternating order (U T, T U, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overhead_pairs: Vec<f64>,
    pub breakdown: Option<Breakdown>,
    pub block: Option<BlockStats>,
    pub lost: Option<LostEvents>,
    pub missed_in_pages: u64,
    pub events: usize,
    pub pages: usize,
    pub unmatched_requests: u64,
    /// Mean Q2C and D2C over every completed bio of the capture (all I/O on
    /// the device, not only the job's): what btt computes from the same events.
    pub capture_q2c_mean_ns: Option<f64>,
    pub capture_d2c_mean_ns: Option<f64>,
    pub interrupted: bool,
}

/// The breakdown of a set of requests.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Breakdown {
    pub requests: u64,
    pub stages: Vec<StageStats>,
    pub total: StageStats,
    /// btt's Q2C and D2C over the same requests, for cross-checking.
    pub q2c: Option<StageStats>,
    pub d2c: Option<StageStats>,
    pub device_share: f64,
    pub software_share: f64,
    pub merged: u64,
    pub split: u64,
    pub requeued: u64,
    pub cross_cpu_completions: u64,
    pub with_irq: u64,
    /// Requests with an edge earlier than the one before it, by edge pair.
    pub reordered: std::collections::BTreeMap<String, u64>,
}

/// Statistics of one stage over all requests.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct StageStats {
    pub stage: String,
    pub n: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// Sum of this stage over the sum of all request totals.
    pub share: f64,
    /// This stage's contribution to the mean request (sum / requests): the
    /// value to stack in bars (`mean_ns` is per occurrence, as btt's AVG).
    /// Files written before it was measured lack it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_request_ns: Option<f64>,
    /// The stage's HDR histogram (ns, base64 V2 deflate, as the core's
    /// point histograms), for CDFs in reports.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub histogram: String,
}

/// Counters of what could not be matched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct BlockStats {
    pub bios: u64,
    pub merged: u64,
    pub split: u64,
    pub requeued: u64,
    /// Block events referring to a sector with nothing in flight (their Q was
    /// before tracing started, or events were lost).
    pub orphan_events: u64,
    /// Bios still without a completion at the end.
    pub incomplete: u64,
}

/// Loss counters summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct LostEvents {
    pub entries: u64,
    pub overrun: u64,
    pub commit_overrun: u64,
    pub dropped: u64,
}

impl LostEvents {
    pub fn total(&self) -> u64 {
        self.overrun + self.commit_overrun + self.dropped
    }
}
