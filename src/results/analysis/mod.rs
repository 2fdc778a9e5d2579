//! The typed `Results.analysis` section (its types only: `crate::analysis`
//! computes it): one struct per analysis that `analysis::analyze` produces, plus the unknown keys of older or newer
//! files, kept as they were. Fields are declared in alphabetical order so
//! the JSON is byte-for-byte what the untyped `serde_json::Value` wrote.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub mod media;
pub mod placement;
pub mod remote;
pub mod steady;

use steady::{Criterion, SteadyMetric, WindowCheck};

/// Every derived metric over a run's points. Written as one object with
/// sorted keys (unknown keys in their place), as the untyped section was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "BTreeMap<String, serde_json::Value>")]
pub struct Analysis {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batching: Vec<BatchingGroup>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_target: Vec<LatencyTargetGroup>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_latency: Vec<LoadLatencyGroup>,
    /// Storage media side by side: every target normalized to a baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<media::MediaAnalysis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peaks: Option<Peaks>,
    /// `--sweep placement`: off-node over on-node per job.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<placement::PlacementPenalty>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub random_vs_sequential: Vec<RandomVsSequential>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_write_asymmetry: Vec<Asymmetry>,
    /// Local vs remote: each transport beside DAS (`iolab remote`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote: Vec<remote::RemoteRow>,
    /// A database on each volume beside the one on the local file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remote_db: Vec<remote::DbRow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steady_state: Vec<SteadyGroup>,
    /// Keys this version does not know (older or newer files), kept as read.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl Analysis {
    /// Nothing analysed (the section is then left out of the file).
    pub fn is_empty(&self) -> bool {
        *self == Analysis::default()
    }
}

impl From<Analysis> for BTreeMap<String, serde_json::Value> {
    fn from(a: Analysis) -> Self {
        fn json<T: Serialize>(v: &T) -> serde_json::Value {
            crate::results::sorted::to_sorted_value(v)
        }
        let mut m = a.other;
        let mut put = |k: &str, empty: bool, v: serde_json::Value| {
            if !empty {
                m.insert(k.to_string(), v);
            }
        };
        put("batching", a.batching.is_empty(), json(&a.batching));
        put(
            "latency_target",
            a.latency_target.is_empty(),
            json(&a.latency_target),
        );
        put(
            "load_latency",
            a.load_latency.is_empty(),
            json(&a.load_latency),
        );
        put("media", a.media.is_none(), json(&a.media));
        put("peaks", a.peaks.is_none(), json(&a.peaks));
        put("placement", a.placement.is_empty(), json(&a.placement));
        put(
            "random_vs_sequential",
            a.random_vs_sequential.is_empty(),
            json(&a.random_vs_sequential),
        );
        put(
            "read_write_asymmetry",
            a.read_write_asymmetry.is_empty(),
            json(&a.read_write_asymmetry),
        );
        put("remote", a.remote.is_empty(), json(&a.remote));
        put("remote_db", a.remote_db.is_empty(), json(&a.remote_db));
        put(
            "steady_state",
            a.steady_state.is_empty(),
            json(&a.steady_state),
        );
        m
    }
}

/// The best point by one measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakRef {
    pub point: String,
    pub value: f64,
}

/// Highest IOPS and MiB/s, lowest mean and p99 latency (closed-loop points).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Peaks {
    pub max_iops: Option<PeakRef>,
    pub max_mib_s: Option<PeakRef>,
    pub min_mean_lat_ns: Option<PeakRef>,
    pub min_p99_lat_ns: Option<PeakRef>,
}

/// Write vs read of the same job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Asymmetry {
    pub group: String,
    pub read: String,
    pub write: String,
    pub write_over_read_iops: f64,
    pub write_over_read_mean_lat: Option<f64>,
    pub write_over_read_mib_s: f64,
}

/// Random vs sequential of the same job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandomVsSequential {
    pub group: String,
    pub random: String,
    pub random_over_sequential_mean_lat: Option<f64>,
    pub random_over_sequential_mib_s: f64,
    pub sequential: String,
}

/// Batching speedups of one group of points (equal but for bs, batch, qd).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchingGroup {
    pub bandwidth_by_k: Vec<BandwidthAtK>,
    pub group: String,
    pub parallelism: Option<Parallelism>,
    pub per_bs: Vec<BatchingAtBs>,
}

/// Bandwidth over block sizes at one batch size k.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthAtK {
    pub bs_at_max: u64,
    pub bs_reaching_90pct: u64,
    pub k: u32,
    pub max_mib_s: f64,
}

/// The effective parallelism: the best speedup over every block size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parallelism {
    pub bs: u64,
    pub k_at_max: u32,
    pub k_reaching_90pct: u32,
    pub max_speedup: f64,
}

/// Speedup over k at one block size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchingAtBs {
    pub bs: u64,
    pub k_at_max: u32,
    pub k_reaching_90pct: u32,
    pub max_speedup: f64,
    pub speedup: Vec<SpeedupAtK>,
}

/// One cell of the batching grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedupAtK {
    pub k: u32,
    pub mib_s: f64,
    pub per_block_ns: f64,
    pub speedup: f64,
}

/// Mean and percentiles of a latency distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatSummary {
    pub max_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: Option<u64>,
    pub p95_ns: Option<u64>,
    pub p99_9_ns: Option<u64>,
    pub p99_ns: Option<u64>,
}

/// The load-latency curve of one group of open-loop points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadLatencyGroup {
    pub closed_loop_max_iops: Option<f64>,
    pub curve: Vec<LoadPoint>,
    pub group: String,
    pub knee: Option<Knee>,
    pub knee_factor: f64,
    pub saturation: Saturation,
    pub unloaded_p99_ns: f64,
}

/// One open-loop point of the curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadPoint {
    pub achieved_iops: f64,
    pub lat_from_intended: LatSummary,
    pub lat_from_issue: Option<LatSummary>,
    pub late_fraction: Option<f64>,
    pub point: String,
    pub target_iops: f64,
}

/// The highest load whose p99 stays under knee_factor x the unloaded p99.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    pub achieved_iops: f64,
    pub p99_ns: Option<u64>,
    pub point: String,
    pub target_iops: f64,
}

/// Where the device stops keeping up with the target rate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    pub first_short_achieved_iops: Option<f64>,
    pub first_short_target_iops: Option<f64>,
    pub max_achieved_iops: Option<f64>,
}

/// One latency-target search: its answer and steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyTargetGroup {
    pub answer: Option<f64>,
    pub group: String,
    pub percentile: Option<f64>,
    pub steps: Vec<TargetStep>,
    pub target_ns: Option<u64>,
    pub variable: Option<String>,
}

/// One step of a latency-target search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetStep {
    pub meets: Option<bool>,
    pub measured_ns: Option<f64>,
    pub point: String,
    pub value: Option<f64>,
}

/// A steady-state run: the tracked value per round and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyGroup {
    pub criterion: Criterion,
    pub group: String,
    pub metric: SteadyMetric,
    pub rounds: Vec<f64>,
    pub steady: bool,
    pub window: usize,
    pub window_check: Option<WindowCheck>,
}
