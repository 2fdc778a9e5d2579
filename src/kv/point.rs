//! Turns a phase's outcome into a `results::Point` (the same model as the
//! device core, so `report` and `compare` read it): per-op stats and
//! histograms, CPU and device counters, the 1 s series, verification, and a
//! `kv` section with the load statistics, intended-start latencies and
//! engine statistics.

use super::engine::KvEngine;
use super::phase::PhaseOutcome;
use super::recorder::KvOp;
pub use crate::results::ext::kv::{KvPhaseInfo, LatencyShare};
use crate::results::{OpStats, Point, Totals, VerifyMismatch, VerifyStats};
use std::collections::BTreeMap;

pub fn build(
    name: &str,
    params: BTreeMap<String, String>,
    o: &PhaseOutcome,
    engine: &dyn KvEngine,
    started_at: String,
    under_ns: u64,
) -> Point {
    let secs = (o.duration_ns as f64 / 1e9).max(1e-9);
    let mut ops = BTreeMap::new();
    let mut histograms = BTreeMap::new();
    let mut intended = BTreeMap::new();
    let mut under = LatencyShare {
        threshold_ns: under_ns,
        share_pct: BTreeMap::new(),
    };
    let mut total = Totals::default();
    for k in KvOp::ALL {
        let i = k.idx();
        let n = o.rec.ops[i];
        let Some(h) = o.rec.service[i].as_ref().filter(|h| !h.is_empty()) else {
            continue;
        };
        let bytes = o.rec.bytes[i];
        ops.insert(
            k.name().to_string(),
            OpStats {
                ops: n,
                bytes,
                iops: n as f64 / secs,
                mib_s: bytes as f64 / secs / (1 << 20) as f64,
                slat: None,
                clat: None,
                lat: h.stats(),
            },
        );
        histograms.insert(format!("{}.lat", k.name()), h.encode());
        under
            .share_pct
            .insert(k.name().to_string(), 100.0 * h.share_at_or_below(under_ns));
        // Parts of read-modify-write are not separate operations.
        if !matches!(k, KvOp::RmwRead | KvOp::RmwUpdate) {
            total.ops += n;
            total.bytes += bytes;
        }
        if let Some(ih) = o.rec.intended[i].as_ref().filter(|h| !h.is_empty()) {
            histograms.insert(format!("{}.intended", k.name()), ih.encode());
            if let Some(st) = ih.stats() {
                intended.insert(k.name().to_string(), st);
            }
        }
    }
    total.iops = total.ops as f64 / secs;
    total.mib_s = total.bytes as f64 / secs / (1 << 20) as f64;
    let mut warnings = Vec::new();
    if o.interrupted {
        warnings.push("interrupted: the phase was stopped early".to_string());
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1) as f64;
    if o.load.cpu.cpu_pct() > 90.0 * cores {
        warnings.push(
            "CPU-bound: user+sys is close to wall x cores; the device is not the limit".into(),
        );
    }
    if o.max_backlog_ns > 100_000_000 {
        warnings.push(format!(
            "target rate not held: workers ended {:.0} ms behind schedule (see intended latency)",
            o.max_backlog_ns as f64 / 1e6
        ));
    }
    let (clock, drifted) = super::clock::info();
    warnings.extend(drifted);
    let mut errors = BTreeMap::new();
    if o.rec.not_found > 0 {
        errors.insert("not_found".to_string(), o.rec.not_found);
    }
    let extra = crate::results::PointExt {
        // A partial phase is no round of a comparison.
        interrupted: o.interrupted.then_some(true),
        clock: Some(clock),
        kv: Some(Box::new(KvPhaseInfo {
            engine: engine.name().to_string(),
            engine_version: engine.version(),
            engine_settings: engine.settings().into_iter().collect(),
            engine_stats: engine.stats().into_iter().collect(),
            load: o.load.clone(),
            intended_lat: intended,
            max_backlog_ns: o.max_backlog_ns,
            missing: o.rec.missing,
            under: Some(under),
            lsm: o.lsm.clone(),
            intel: None,
        })),
        ..Default::default()
    };
    Point {
        name: name.to_string(),
        job: None,
        pass: None,
        params,
        started_at,
        duration_ns: o.duration_ns,
        ramp_ns: 0,
        direct: false,
        ops,
        total,
        batch: None,
        cpu: o.load.cpu,
        device: o.load.device.clone(),
        series: o.series.clone(),
        verify: Some(VerifyStats {
            blocks_checked: o.rec.verified,
            mismatches: o.rec.mismatches,
            never_written: 0,
            first_mismatches: o
                .rec
                .first_mismatches
                .iter()
                .map(|m| VerifyMismatch {
                    offset: 0,
                    reason: m.clone(),
                })
                .collect(),
        }),
        errors,
        warnings,
        histograms,
        extra,
    }
}
