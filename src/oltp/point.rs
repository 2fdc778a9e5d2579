//! Turns a driven point into a `results::Point`: per transaction type its
//! latency stats and histogram (`ops`, keyed new_order, payment,
//! order_status, delivery, stock_level), transactions per second as
//! `total.iops`, the per-second series, CPU, and the typed `extra.oltp`
//! section (`OltpInfo`): NOPM, TPM, efficiency, per-type counts and p90,
//! new orders per second, the consistency verdicts.

use std::collections::BTreeMap;

use super::consistency::ConsistencyResult;
use super::driver::DriverOutcome;
use super::txn::TxnKind;
pub use crate::results::ext::oltp::{OltpInfo, TxnCounts};
use crate::results::{OpStats, Point, PointExt, Totals};

/// New orders per minute per warehouse at the spec's maximum pacing
/// (keying and think times): efficiency is NOPM against this.
pub const MAX_NOPM_PER_WAREHOUSE: f64 = 12.86;

/// Who ran the point.
pub struct PointSetup<'a> {
    pub engine: &'a str,
    pub engine_version: &'a str,
    pub warehouses: u32,
    pub users: usize,
    pub wait: bool,
    pub started_at: String,
    pub ramp_ns: u64,
}

pub fn build(s: &PointSetup<'_>, o: &DriverOutcome, consistency: Vec<ConsistencyResult>) -> Point {
    let secs = o.measured_ns as f64 / 1e9;
    let st = &o.stats;
    let mut ops = BTreeMap::new();
    let mut histograms = BTreeMap::new();
    let mut counts = BTreeMap::new();
    for k in TxnKind::ALL {
        let i = k.idx();
        let n = st.commits[i] + st.rollbacks[i];
        let h = &st.latency[i];
        ops.insert(
            k.name().to_string(),
            OpStats {
                ops: n,
                bytes: 0,
                iops: n as f64 / secs,
                mib_s: 0.0,
                slat: None,
                clat: None,
                lat: h.stats(),
            },
        );
        if !h.is_empty() {
            histograms.insert(format!("{}.lat", k.name()), h.encode());
        }
        counts.insert(
            k.name().to_string(),
            TxnCounts {
                commits: st.commits[i],
                rollbacks: st.rollbacks[i],
                retries: st.retries[i],
                failures: st.failures[i],
                p90_ns: (!h.is_empty()).then(|| h.value_at_percentile(90.0)),
            },
        );
    }
    let finished = st.finished();
    let nopm = st.commits[TxnKind::NewOrder.idx()] as f64 * 60.0 / secs;
    let info = OltpInfo {
        engine: s.engine.to_string(),
        engine_version: s.engine_version.to_string(),
        warehouses: s.warehouses,
        users: s.users,
        wait: s.wait,
        nopm,
        tpm: finished as f64 * 60.0 / secs,
        efficiency_pct: nopm * 100.0 / (MAX_NOPM_PER_WAREHOUSE * s.warehouses as f64),
        transactions: counts,
        new_orders_per_s: o.new_orders_per_s.clone(),
        delivery_skipped: st.delivery_skipped,
        consistency,
        errors: st.first_errors.clone(),
    };
    let mut warnings = Vec::new();
    if o.interrupted {
        warnings.push("interrupted: the point was stopped early".to_string());
    }
    let failed: u64 = st.failures.iter().sum();
    if failed > 0 {
        warnings.push(format!(
            "{failed} transaction(s) failed after {} retries",
            super::driver::MAX_RETRIES
        ));
    }
    let deliveries = st.commits[TxnKind::Delivery.idx()];
    if deliveries > 0 && st.delivery_skipped * 100 > deliveries * 10 {
        warnings.push(format!(
            "{} of {} district deliveries found no new order (more than 1%)",
            st.delivery_skipped,
            deliveries * 10
        ));
    }
    for c in info.consistency.iter().filter(|c| !c.passed) {
        warnings.push(format!(
            "consistency condition {} ({}) failed: {}",
            c.condition,
            c.description,
            c.first_violation.as_deref().unwrap_or("")
        ));
    }
    let mut errors = BTreeMap::new();
    if failed > 0 {
        errors.insert("retries_exhausted".to_string(), failed);
    }
    Point {
        name: format!("oltp.users{}", s.users),
        job: None,
        pass: None,
        params: BTreeMap::from([
            ("engine".to_string(), s.engine.to_string()),
            ("warehouses".to_string(), s.warehouses.to_string()),
            ("users".to_string(), s.users.to_string()),
            ("wait".to_string(), s.wait.to_string()),
        ]),
        started_at: s.started_at.clone(),
        duration_ns: o.measured_ns,
        ramp_ns: s.ramp_ns,
        direct: false,
        ops,
        total: Totals {
            ops: finished,
            bytes: 0,
            iops: finished as f64 / secs,
            mib_s: 0.0,
        },
        batch: None,
        cpu: o.cpu,
        device: None,
        series: o.series.clone(),
        verify: None,
        errors,
        warnings,
        histograms,
        extra: PointExt {
            // A partial point is no round of a comparison.
            interrupted: o.interrupted.then_some(true),
            oltp: Some(Box::new(info)),
            ..Default::default()
        },
    }
}
