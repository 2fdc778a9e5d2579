//! A job's merged recorder turned into a `Point`: per-op statistics and
//! encoded histograms, totals, batch and open-loop summaries, and the
//! warnings that follow from the numbers (CPU-bound, no completion, target
//! rate not reached). Also `params_of`, the keys that match points across runs.

use std::collections::BTreeMap;

use crate::engine::OpKind;
use crate::measure::diskstats::DeviceStats;
use crate::plan::job::JobSpec;
use crate::results::{BatchStats, OpStats, Point, Totals};
use crate::runner::openloop;
use crate::runner::recorder::{Recorder, CLAT, LAT, LAT_KINDS, SLAT};

/// Point parameters used to match points across runs.
pub fn params_of(spec: &JobSpec) -> BTreeMap<String, String> {
    let mut p = BTreeMap::new();
    p.insert("rw".into(), spec.pattern.name().into());
    p.insert("bs".into(), spec.bs_label());
    p.insert("qd".into(), spec.depth().to_string());
    p.insert("jobs".into(), spec.jobs.to_string());
    p.insert("engine".into(), spec.engine.name().into());
    if spec.pattern.is_mixed() {
        p.insert("mix".into(), spec.mix.to_string());
    }
    if let Some(k) = spec.batch {
        p.insert("batch".into(), k.to_string());
    }
    if let Some(side) = spec.placement {
        p.insert("placement".into(), side.name().into());
    }
    if let Some(ol) = &spec.open_loop {
        p.insert("rate".into(), format!("{:.0}", ol.rate_iops));
        p.insert("arrival".into(), ol.arrival.name().into());
    }
    p
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_point(
    spec: &JobSpec,
    rec: &Recorder,
    started_at: String,
    direct: bool,
    cpu: crate::measure::rusage::CpuStats,
    device: Option<DeviceStats>,
    mut warnings: Vec<String>,
    kind: crate::results::target::TargetKind,
) -> Point {
    let duration_ns = rec.last_done.saturating_sub(rec.measure_start);
    let secs = (duration_ns as f64 / 1e9).max(1e-9);
    let mut ops = BTreeMap::new();
    let mut histograms = BTreeMap::new();
    for op in OpKind::ALL {
        let k = op.index();
        if rec.ops[k] == 0 {
            continue;
        }
        for t in [SLAT, CLAT, LAT] {
            if !rec.hist[k][t].is_empty() {
                histograms.insert(
                    format!("{}.{}", op.name(), LAT_KINDS[t]),
                    rec.hist[k][t].encode(),
                );
            }
        }
        ops.insert(
            op.name().to_string(),
            OpStats {
                ops: rec.ops[k],
                bytes: rec.bytes[k],
                iops: rec.ops[k] as f64 / secs,
                mib_s: rec.bytes[k] as f64 / secs / (1 << 20) as f64,
                slat: rec.hist[k][SLAT].stats(),
                clat: rec.hist[k][CLAT].stats(),
                lat: rec.hist[k][LAT].stats(),
            },
        );
    }
    let io_ops = rec.ops[OpKind::Read.index()] + rec.ops[OpKind::Write.index()];
    let io_bytes = rec.bytes[OpKind::Read.index()] + rec.bytes[OpKind::Write.index()];
    let total = Totals {
        ops: io_ops,
        bytes: io_bytes,
        iops: io_ops as f64 / secs,
        mib_s: io_bytes as f64 / secs / (1 << 20) as f64,
    };
    let batch = spec.batch.and_then(|k| {
        let s = rec.batch.stats()?;
        histograms.insert("batch".into(), rec.batch.encode());
        let kf = k as f64;
        Some(BatchStats {
            k,
            batches: rec.batches,
            per_block_mean_ns: s.mean_ns / kf,
            per_block_p50_ns: s.percentile(50.0).unwrap_or(0) as f64 / kf,
            per_block_p99_ns: s.percentile(99.0).unwrap_or(0) as f64 / kf,
            batch_lat: s,
        })
    });
    let busy = cpu.cpu_pct() / spec.jobs as f64;
    if busy >= 90.0 && spec.engine.needs_file() {
        warnings.push(format!(
            "CPU-bound: each worker used {busy:.0}% of a CPU; iolab or the kernel, not the device, may be the limit (try an async engine, a higher --qd, or more --jobs)"
        ));
    }
    if io_ops == 0 {
        warnings.push("no request completed in the measured phase (runtime too short, or ramp longer than the run)".into());
    }
    let _ = kind;
    let mut extra = crate::results::PointExt::default();
    if let (Some(o), Some(ol)) = (&rec.open_loop, &spec.open_loop) {
        for (k, name) in [(0, "read"), (1, "write")] {
            if !o.intended[k].is_empty() {
                histograms.insert(format!("{name}.lat_intended"), o.intended[k].encode());
            }
        }
        let summary = openloop::summary(o, ol.rate_iops, ol.arrival.name(), total.iops, spec.jobs);
        if total.iops < 0.95 * ol.rate_iops {
            warnings.push(format!(
                "target rate not reached: {:.0} of {:.0} IOPS ({} requests still due at the end); latency from the intended issue time includes the queueing",
                total.iops, ol.rate_iops, o.final_backlog
            ));
        }
        extra.open_loop = Some(summary);
    }
    Point {
        name: spec.name.clone(),
        job: Some(spec.clone()),
        pass: None,
        params: params_of(spec),
        started_at,
        duration_ns,
        ramp_ns: spec.ramp_ns,
        direct,
        ops,
        total,
        batch,
        cpu,
        device,
        series: rec.series(rec.last_done),
        verify: if spec.verify {
            Some(rec.verify.clone())
        } else {
            None
        },
        errors: rec.errors.clone(),
        warnings,
        histograms,
        extra,
    }
}
