//! `extra.media`: a media run's baseline, rounds, targets and how each
//! configuration was made, the device verb's rows in their pre-analysis
//! shape, and the run's own overhead (set-up, between rounds, teardown).

use serde::{Deserialize, Serialize};

/// What a media run records about itself. Every field may be absent: a
/// results file without a media set-up gets one holding only `overhead`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MediaRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<MediaTarget>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configurations: Option<Vec<MediaConfig>>,
    /// `device`'s rows in the shape they had before `analysis.media`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<Vec<LegacyMediaRow>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<MediaOverhead>,
}

/// One target of a media run, as the verb that ran on it describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MediaTarget {
    /// A directory (kv, oltp, run), or `raw`'s block device.
    Directory(DirectoryTarget),
    /// A prepared target (device, run): its kind and size.
    Prepared(PreparedTarget),
}

/// A directory target: its file system and mount options (none for a
/// block device).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectoryTarget {
    pub label: String,
    pub path: String,
    /// "directory" or "block_device".
    pub kind: String,
    pub filesystem: Option<String>,
    pub mount_options: Option<String>,
    /// iolab made it (`--make`), or it was given.
    pub made: bool,
}

/// A prepared target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreparedTarget {
    pub label: String,
    pub path: String,
    pub kind: String,
    pub size_bytes: u64,
    pub made: bool,
}

/// How one configuration was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MediaConfig {
    pub name: String,
    pub made: String,
}

/// A workload on a target against the baseline (`device`'s legacy shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LegacyMediaRow {
    pub job: String,
    pub medium: String,
    pub iops: f64,
    pub vs_baseline: Option<f64>,
    pub vs_min: Option<f64>,
    pub vs_max: Option<f64>,
    pub noise: bool,
}

/// The run's own time besides the measured phases, seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MediaOverhead {
    pub wall_s: f64,
    pub measured_s: f64,
    pub setup_s: f64,
    pub between_s: f64,
    pub teardown_s: f64,
    pub overhead_s: f64,
    /// Overhead over measured time; absent (null) with nothing measured.
    pub share_of_measured: Option<f64>,
}
