//! Derived metrics over results: pure functions of the points, no I/O.
//! `analyze` gathers every analysis that applies into `Results.analysis`.

pub mod act;
pub mod baseline;
pub mod batching;
pub mod compare;
pub mod intel;
pub mod kv_size;
pub mod loadlat;
pub mod media;
pub mod placement;
pub mod remote;
pub mod search;
pub mod steady;
pub mod types;

pub use types::Analysis;

use std::collections::BTreeMap;

use crate::measure::histogram::LatStats;
use crate::results::{Point, Results};

/// Options of the analyses.
#[derive(Debug, Clone, Copy)]
pub struct AnalysisOptions {
    /// Knee: highest load whose p99 stays under this factor x the unloaded p99.
    pub knee_factor: f64,
    /// Group points across `iolab run`'s steps (its `step` parameter is
    /// ignored), so the same job measured in two steps compares.
    pub across_steps: bool,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            knee_factor: 2.0,
            across_steps: false,
        }
    }
}

impl AnalysisOptions {
    /// The analysis of `iolab run` results.
    pub fn across_steps() -> AnalysisOptions {
        AnalysisOptions {
            across_steps: true,
            ..AnalysisOptions::default()
        }
    }
}

/// Every analysis that applies to `points`.
pub fn analyze(points: &[Point], opts: &AnalysisOptions) -> Analysis {
    if opts.across_steps {
        let stripped: Vec<Point> = points
            .iter()
            .map(|p| {
                let mut q = p.clone();
                q.params.remove("step");
                q
            })
            .collect();
        return analyze(
            &stripped,
            &AnalysisOptions {
                across_steps: false,
                ..*opts
            },
        );
    }
    let measured: Vec<&Point> = points.iter().filter(|p| !is_aux(p)).collect();
    Analysis {
        peaks: Some(compare::peaks(&measured)),
        batching: batching::analyze(&measured),
        read_write_asymmetry: compare::asymmetry(&measured),
        random_vs_sequential: compare::random_vs_sequential(&measured),
        load_latency: loadlat::analyze(points, opts.knee_factor),
        media: media::analyze(&measured),
        placement: placement::analyze(&measured),
        latency_target: search::analyze(points),
        steady_state: steady::analyze(points),
        remote: remote::analyze(&measured),
        remote_db: remote::analyze_db(&measured),
        other: BTreeMap::new(),
    }
}

/// Points that are not measurements of the plan (preconditioning passes).
pub fn is_aux(p: &Point) -> bool {
    p.extra.is_precondition()
}

/// Parameters of a point minus the named keys: points with equal keys
/// differ only in those parameters.
pub fn key_without(p: &Point, drop: &[&str]) -> BTreeMap<String, String> {
    p.params
        .iter()
        .filter(|(k, _)| !drop.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Key as text for JSON output: "bs=4k engine=io_uring ...".
pub fn key_text(k: &BTreeMap<String, String>) -> String {
    k.iter()
        .map(|(a, b)| format!("{a}={b}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Mean and percentiles of the point's main latency (read, else write).
pub fn lat_summary(s: &LatStats) -> types::LatSummary {
    types::LatSummary {
        mean_ns: s.mean_ns,
        p50_ns: s.percentile(50.0),
        p95_ns: s.percentile(95.0),
        p99_ns: s.percentile(99.0),
        p99_9_ns: s.percentile(99.9),
        max_ns: s.max_ns,
    }
}

/// Block size of a single-size point in bytes.
pub fn single_bs(p: &Point) -> Option<u64> {
    let job = p.job.as_ref()?;
    (job.bs.len() == 1).then(|| job.bs[0].0)
}

/// Computing a loaded file's analysis lives here, beside what it calls:
/// the results model (`results::Results`) imports no computation.
impl Results {
    /// Compute the analysis when the file has none (fio JSON and kv files).
    pub fn ensure_analysis(&mut self) {
        if self.analysis.is_empty() {
            let opts = if self.kind == "run" {
                AnalysisOptions::across_steps()
            } else {
                AnalysisOptions::default()
            };
            self.analysis = analyze(&self.points, &opts);
        }
        // Media runs written before the typed media analysis existed.
        if self.analysis.media.is_none() {
            let measured: Vec<&Point> = self.points.iter().filter(|p| !is_aux(p)).collect();
            self.analysis.media = media::analyze(&measured);
        }
    }

    /// `self`, with its analysis computed if the file has none (kv files,
    /// and results written before the analysis section existed): the
    /// report draws only what `analysis::analyze` computed.
    pub fn with_analysis(mut self) -> Results {
        self.ensure_analysis();
        self
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Synthetic points for the analysis tests.
    use std::collections::BTreeMap;

    use crate::measure::histogram::LatStats;
    use crate::plan::job::JobSpec;
    use crate::results::{BatchStats, OpStats, Point, Totals};
    use crate::runner::job::params_of;

    pub fn lat(mean: f64, p99: u64) -> LatStats {
        let mut percentiles_ns = BTreeMap::new();
        for (p, v) in [
            (50.0, mean as u64),
            (95.0, (mean as u64 + p99) / 2),
            (99.0, p99),
            (99.9, p99 * 2),
        ] {
            percentiles_ns.insert(crate::measure::histogram::percentile_key(p), v);
        }
        LatStats {
            n: 100,
            min_ns: 1,
            max_ns: p99 * 3,
            mean_ns: mean,
            stdev_ns: 0.0,
            percentiles_ns,
        }
    }

    /// A point of `spec` with the given throughput and latency.
    pub fn point(spec: &JobSpec, iops: f64, mean_ns: f64, p99: u64) -> Point {
        let bs = spec.max_bs();
        let mib_s = iops * bs as f64 / (1 << 20) as f64;
        let op = if spec.read_percent() > 0 {
            "read"
        } else {
            "write"
        };
        let mut ops = BTreeMap::new();
        ops.insert(
            op.to_string(),
            OpStats {
                ops: iops as u64,
                bytes: iops as u64 * bs,
                iops,
                mib_s,
                slat: None,
                clat: Some(lat(mean_ns, p99)),
                lat: Some(lat(mean_ns, p99)),
            },
        );
        let batch = spec.batch.map(|k| BatchStats {
            k,
            batches: 1,
            batch_lat: lat(mean_ns * k as f64, p99),
            per_block_mean_ns: 1e9 / iops,
            per_block_p50_ns: 1e9 / iops,
            per_block_p99_ns: 1e9 / iops,
        });
        Point {
            name: spec.default_name(),
            job: Some(spec.clone()),
            pass: None,
            params: params_of(spec),
            started_at: String::new(),
            duration_ns: 1_000_000_000,
            ramp_ns: 0,
            direct: true,
            ops,
            total: Totals {
                ops: iops as u64,
                bytes: iops as u64 * bs,
                iops,
                mib_s,
            },
            batch,
            cpu: Default::default(),
            device: None,
            series: Vec::new(),
            verify: None,
            errors: BTreeMap::new(),
            warnings: Vec::new(),
            histograms: BTreeMap::new(),
            extra: Default::default(),
        }
    }
}
