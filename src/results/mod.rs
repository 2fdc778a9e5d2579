//! The results file: a schema-versioned JSON document with provenance and
//! one `Point` per measured job, written atomically after every point so an
//! interrupted run keeps what it measured. Every verb writes this model;
//! `report` and `compare` read it.

pub mod analysis;
pub mod ext;
pub mod family;
pub mod merge;
pub mod output;
pub mod params;
pub mod pass;
pub mod provenance;
pub mod sections;
pub mod series;
pub mod sorted;
pub mod target;
pub mod time;
pub mod written;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::measure::diskstats::DeviceStats;
use crate::measure::histogram::LatStats;
use crate::measure::rusage::CpuStats;
use crate::plan::job::JobSpec;
pub use analysis::Analysis;
pub use ext::{ClockInfo, OpenLoopStats, PointExt, ServerPointStats, TimelineSeries};
pub use family::{op_order, Family};
pub use output::write_atomic;
pub use params::Param;
pub use pass::PassId;
pub use provenance::Provenance;
pub use sections::RunExt;

pub const SCHEMA: &str = "iolab-results";
/// Bump on incompatible changes; readers accept older minor additions.
pub const SCHEMA_VERSION: u32 = 1;
/// The verbs that write results files (and "fio" for imported fio JSON).
pub const KINDS: [&str; 7] = ["device", "run", "kv", "trace", "fio", "remote", "oltp"];

/// A whole results file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    pub schema: String,
    pub schema_version: u32,
    /// Which verb produced it: "device", "run", "kv", "trace", ...
    pub kind: String,
    pub provenance: Provenance,
    pub points: Vec<Point>,
    pub warnings: Vec<String>,
    /// True once every planned point ran; false while running or if interrupted.
    pub complete: bool,
    pub interrupted: bool,
    /// Derived metrics over the points (speedups, knees, steady state ...).
    #[serde(default, skip_serializing_if = "Analysis::is_empty")]
    pub analysis: Analysis,
    /// Sections verbs add about the run (`run`'s plan, media, hosts,
    /// remote's topology and breakdown, ...), typed in `sections`.
    #[serde(default, skip_serializing_if = "RunExt::is_empty")]
    pub extra: RunExt,
}

impl Results {
    pub fn new(kind: &str, provenance: Provenance) -> Results {
        Results {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            kind: kind.into(),
            provenance,
            points: Vec::new(),
            warnings: Vec::new(),
            complete: false,
            interrupted: false,
            analysis: Analysis::default(),
            extra: RunExt::default(),
        }
    }

    /// Write to `path` atomically (temp file in the same directory, then rename).
    pub fn write_atomic(&self, path: &Path) -> anyhow::Result<()> {
        let json = serde_json::to_vec_pretty(self)?;
        write_atomic(path, &json)?;
        if !output::is_stream(path) {
            written::remember(path);
        }
        Ok(())
    }

    /// Read an iolab results file; exit 2 for anything that is not one
    /// this version can read (schema, version 1..current, a known kind).
    pub fn read(path: &Path) -> anyhow::Result<Results> {
        let text = crate::input::read_text(path, "RESULTS", None)?;
        Results::parse(&text, &path.display().to_string())
    }

    /// Parse the text of a results file; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<Results> {
        let r: Results = serde_json::from_str(text).map_err(|e| {
            crate::error::usage(
                "RESULTS",
                format!("{origin} is not an iolab results file: {e}"),
            )
        })?;
        if !KINDS.contains(&r.kind.as_str()) {
            return Err(crate::error::usage(
                "RESULTS",
                format!(
                    "{origin}: kind '{}' is not one iolab writes ({})",
                    r.kind,
                    KINDS.join(", ")
                ),
            ));
        }
        if r.schema != SCHEMA || r.schema_version == 0 || r.schema_version > SCHEMA_VERSION {
            return Err(crate::error::usage(
                "RESULTS",
                format!(
                    "{origin}: schema {} v{} is not readable by this iolab",
                    r.schema, r.schema_version
                ),
            ));
        }
        Ok(r)
    }
}

/// Statistics of one op kind (read, write, fsync) in a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    pub ops: u64,
    pub bytes: u64,
    pub iops: f64,
    pub mib_s: f64,
    /// Submission latency (prepared -> submitted); absent for synchronous engines.
    pub slat: Option<LatStats>,
    /// Completion latency (submitted -> completion reaped).
    pub clat: Option<LatStats>,
    /// Total latency (prepared -> completion reaped) = slat + clat.
    pub lat: Option<LatStats>,
}

/// Sums over all op kinds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Totals {
    pub ops: u64,
    pub bytes: u64,
    pub iops: f64,
    pub mib_s: f64,
}

/// Batched-submission statistics (`--batch K`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchStats {
    pub k: u32,
    pub batches: u64,
    /// Time from preparing the first request of a batch to reaping its last.
    pub batch_lat: LatStats,
    /// Per-block latency = batch time / K.
    pub per_block_mean_ns: f64,
    pub per_block_p50_ns: f64,
    pub per_block_p99_ns: f64,
}

/// One interval of the per-second time series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// Seconds since the start of the measured phase (interval start).
    pub t_s: f64,
    /// Interval length in seconds (the last one may be longer: a short
    /// tail is folded into it, `results::series`; files written before
    /// may end on a short one).
    pub len_s: f64,
    pub iops: f64,
    pub mib_s: f64,
    pub mean_ns: f64,
    /// The interval's p99; absent where it was not measured (an interval
    /// without requests, and kv and oltp series, which keep no
    /// per-interval histogram).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ns: Option<u64>,
    /// Completion latencies of the interval (encoded HDR histogram), kept
    /// only for fio's histogram logs (`JobSpec::hist_log`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clat_hist: Option<String>,
}

/// Data verification outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct VerifyStats {
    /// Stamped units checked (4 KiB, or 512 bytes for block sizes that are
    /// no multiple of 4 KiB); files before issue 28 counted reads.
    pub blocks_checked: u64,
    pub mismatches: u64,
    /// Units read without iolab's stamp that this run did not write (never
    /// written with --verify): not checked, not mismatches.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub never_written: u64,
    /// The first mismatches (at most 64): offset and what was wrong.
    pub first_mismatches: Vec<VerifyMismatch>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyMismatch {
    pub offset: u64,
    pub reason: String,
}

/// One measured job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    pub name: String,
    /// The campaign pass (setup, round, baseline) the point was measured in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<PassId>,
    /// The job as run (device points); other verbs leave it empty and use `params`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobSpec>,
    /// Flat parameters used to match points across runs (bs, qd, rw, engine ...).
    pub params: BTreeMap<String, String>,
    pub started_at: String,
    /// Length of the measured phase (after ramp), ns.
    pub duration_ns: u64,
    pub ramp_ns: u64,
    /// O_DIRECT was in effect.
    pub direct: bool,
    pub ops: BTreeMap<String, OpStats>,
    pub total: Totals,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchStats>,
    pub cpu: CpuStats,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceStats>,
    pub series: Vec<SeriesPoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyStats>,
    /// Requests that completed with an error (errno name -> count).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
    /// Encoded HDR histograms, keyed "read.lat", "write.clat", "batch" ...
    pub histograms: BTreeMap<String, String>,
    /// Sections other features add (open-loop stats, steady-state round,
    /// stack breakdown ...).
    #[serde(default, skip_serializing_if = "PointExt::is_empty")]
    pub extra: PointExt,
}

impl Point {
    /// The point is partial (its job or phase was stopped early): the
    /// typed mark, or the warning text files of older versions carried.
    pub fn is_interrupted(&self) -> bool {
        self.extra.interrupted == Some(true)
            || self.warnings.iter().any(|w| w.starts_with("interrupted"))
    }

    /// Mark the point partial: the typed mark, and a warning for readers.
    pub fn mark_interrupted(&mut self, warning: &str) {
        self.extra.interrupted = Some(true);
        if !self.warnings.iter().any(|w| w == warning) {
            self.warnings.push(warning.to_string());
        }
    }

    /// Latency stats of the main op kind for summaries: read if any, else write.
    pub fn main_lat(&self) -> Option<&LatStats> {
        self.main_op()
            .and_then(|k| self.ops.get(k).and_then(|o| o.lat.as_ref()))
    }

    /// The op kind `main_lat` is of: read if it has a latency, else write,
    /// else fsync; a database point without those (a kv insert-only
    /// load, an oltp point) its new_order, else its first operation type
    /// with a latency in table order, so that no view drops its latency.
    pub fn main_op(&self) -> Option<&str> {
        let has_lat = |k: &str| self.ops.get(k).is_some_and(|o| o.lat.is_some());
        if let Some(k) = ["read", "write", "fsync"].into_iter().find(|k| has_lat(k)) {
            return Some(k);
        }
        if self.family() == Family::Device {
            return None;
        }
        if has_lat("new_order") {
            return Some("new_order");
        }
        let mut ops: Vec<&str> = self.ops.keys().map(String::as_str).collect();
        ops.sort_by_key(|o| op_order(o));
        ops.into_iter().find(|k| has_lat(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        let mut r = Results::new("device", Provenance::minimal());
        r.warnings.push("w".into());
        r.write_atomic(&p).unwrap();
        let back = Results::read(&p).unwrap();
        assert_eq!(back.warnings, vec!["w".to_string()]);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
        std::fs::write(&p, "{\"schema\":1}").unwrap();
        assert_eq!(crate::error::exit_code(&Results::read(&p).unwrap_err()), 2);
    }

    /// A kv load inserts only and an oltp point runs transactions: their
    /// main latency is of those, not None (a device point keeps read,
    /// write, fsync).
    #[test]
    fn a_database_point_without_reads_has_a_main_latency() {
        use crate::analysis::testutil::{lat, point};
        let base = point(&Default::default(), 1000.0, 50_000.0, 90_000);
        let stats = base.ops.values().next().unwrap().clone();
        let mut kv = base.clone();
        kv.ops = BTreeMap::from([("insert".to_string(), stats.clone())]);
        kv.params.insert("workload".into(), "ycsb-a".into());
        assert_eq!(kv.main_op(), Some("insert"));
        assert_eq!(kv.main_lat().map(|l| l.mean_ns), Some(50_000.0));
        let mut oltp = kv.clone();
        oltp.extra.oltp = Some(Default::default());
        oltp.ops.insert("delivery".into(), stats.clone());
        let mut no = stats.clone();
        no.lat = Some(lat(70_000.0, 100_000));
        oltp.ops.insert("new_order".into(), no);
        assert_eq!(oltp.main_op(), Some("new_order"));
        let mut dev = base.clone();
        dev.ops = BTreeMap::from([("trim".to_string(), stats)]);
        assert_eq!(dev.main_op(), None, "a device point's main op is unchanged");
    }

    /// Issue 31 item 4: kv and oltp series wrote `"p99_ns": 0`, which reads
    /// as measured; a p99 that was not measured is absent, and files
    /// written before still load.
    #[test]
    fn an_unmeasured_series_p99_is_absent() {
        let s = SeriesPoint {
            t_s: 0.0,
            len_s: 1.0,
            iops: 180.0,
            mib_s: 0.0,
            mean_ns: 5e6,
            p99_ns: None,
            clat_hist: None,
        };
        let v = serde_json::to_value(&s).unwrap();
        assert!(v.get("p99_ns").is_none(), "{v}");
        let old: SeriesPoint = serde_json::from_str(
            r#"{"t_s":0.0,"len_s":1.0,"iops":1.0,"mib_s":0.0,"mean_ns":1.0,"p99_ns":7}"#,
        )
        .unwrap();
        assert_eq!(old.p99_ns, Some(7));
    }
}
