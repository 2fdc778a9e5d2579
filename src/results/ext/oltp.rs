//! The `oltp` section of a point (`extra.oltp`): what a TPC-C-derived point
//! adds (NOPM, per-transaction counts, the consistency verdicts), in
//! results' terms. `oltp/` fills it (`oltp::point::build`); reports read it.
//! Owned here so the results model imports no workload.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What an oltp point adds (`extra.oltp`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OltpInfo {
    pub engine: String,
    pub engine_version: String,
    pub warehouses: u32,
    pub users: usize,
    pub wait: bool,
    /// New-Order transactions committed per minute of measured time.
    pub nopm: f64,
    /// Transactions of every type finished per minute.
    pub tpm: f64,
    /// NOPM / (12.86 x warehouses), in percent.
    pub efficiency_pct: f64,
    pub transactions: BTreeMap<String, TxnCounts>,
    /// New orders committed per second, aligned with the point's series.
    pub new_orders_per_s: Vec<f64>,
    /// Delivery's districts that had no new order to deliver.
    pub delivery_skipped: u64,
    /// Conditions 1-4 after the point (empty with --no-check).
    pub consistency: Vec<ConsistencyResult>,
    /// The first errors of failed transactions.
    pub errors: Vec<String>,
}

impl OltpInfo {
    pub fn consistency_failures(&self) -> u64 {
        self.consistency.iter().filter(|c| !c.passed).count() as u64
    }
}

/// Counts of one transaction type in a point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TxnCounts {
    pub commits: u64,
    /// New-Order's intended rollbacks (not failures).
    pub rollbacks: u64,
    /// Retries after deadlocks, serialization failures, lock timeouts, BUSY.
    pub retries: u64,
    /// Transactions still failing after the last retry.
    pub failures: u64,
    /// 90th percentile latency (TPC-C's response-time limit is on p90).
    pub p90_ns: Option<u64>,
}

/// One condition's verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConsistencyResult {
    /// 1..4 (clause 3.3.2.1-4).
    pub condition: u8,
    pub description: String,
    pub passed: bool,
    /// Warehouses or districts checked.
    pub checked: u64,
    pub violations: u64,
    pub first_violation: Option<String>,
}
