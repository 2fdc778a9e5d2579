//! The typed extensions of a point (`Point.extra` in the file): open-loop
//! statistics, latency-target steps, steady-state rounds, the phase and role
//! of a point, fio's job identity, a database server's use and the
//! per-second timeline (`measure::server_stats`). Keys this version does not type (or does
//! not know: older and newer files) stay in `other`, as they were read. On
//! disk it is the same sorted JSON object as before the model was typed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::analysis::steady::{Criterion, SteadyMetric};
use crate::measure::histogram::LatStats;
use crate::measure::numa::PointPlacement;
use crate::measure::peers::PeerStats;
use crate::measure::procstat::SystemCpu;

pub use crate::measure::server_stats::{ServerPointStats, TimelineSeries};

pub mod act;
pub mod hosts;
pub mod intel;
pub mod kv;
pub mod lsm;
pub mod oltp;
pub mod trace;

#[cfg(test)]
pub(crate) use hosts::on_hosts;
pub use hosts::{
    ClockOffset, HostRow, HostsInfo, LostHost, RowLatency, TargetDisk, TargetHostCpu,
    MAX_DISK_SECONDS,
};
pub use kv::{KvPhaseInfo, LatencyShare, LoadStats};
pub use oltp::{ConsistencyResult, OltpInfo, TxnCounts};
pub use trace::{BlockStats, Breakdown, ConfigResult, LostEvents, StageStats};

/// Everything a feature adds to a point.
///
/// Reading is tolerant: a known key whose value does not parse as its type
/// stays in `other` as read, so no file fails to load over one section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "BTreeMap<String, Value>", from = "BTreeMap<String, Value>")]
pub struct PointExt {
    /// The clock that timed the requests (`--clock`).
    pub clock: Option<ClockInfo>,
    /// The whole machine's CPU during the job (usr, sys, iowait ...).
    pub cpu: Option<SystemCpu>,
    /// fio's job identity (points imported from fio JSON).
    pub fio: Option<FioJobId>,
    /// The job was stopped early: the point is partial.
    pub interrupted: Option<bool>,
    /// One step of a latency-target search.
    pub latency_target: Option<TargetStepInfo>,
    /// Open-loop recorder summary (rate-driven points).
    pub open_loop: Option<OpenLoopStats>,
    /// "precondition" for passes that are not measurements; kv: "load"/"run".
    pub phase: Option<String>,
    /// `iolab run`: the rate as a share of the closed-loop maximum.
    pub rate_pct_of_max: Option<f64>,
    /// "closed_loop_max" for the point open-loop rates are relative to.
    pub role: Option<String>,
    /// One round of a steady-state run.
    pub steady: Option<SteadyRound>,
    /// A remote job's other side: the target's CPU and the link's traffic.
    pub peers: Option<PeerStats>,
    /// A kv phase: engine, load statistics, intended-start latency.
    pub kv: Option<Box<KvPhaseInfo>>,
    /// An oltp point: NOPM, per-transaction counts, consistency.
    pub oltp: Option<Box<OltpInfo>>,
    /// A database server over the point: its CPU and I/O, the database's
    /// size, device bytes per operation, write amplification.
    pub server: Option<Box<ServerPointStats>>,
    /// Per-second machine CPU, disk, server CPU and client throughput.
    pub timeline: Option<Box<TimelineSeries>>,
    /// `iolab trace` and `--breakdown`: the traced configuration, with its
    /// per-request stack breakdown.
    pub trace: Option<Box<ConfigResult>>,
    /// `--profile act`: the large-block streams and ACT's table.
    pub act: Option<Box<act::ActPoint>>,
    /// Measured on several hosts at once: each host's row, the start skew.
    pub hosts: Option<Box<HostsInfo>>,
    /// Several instances of one workload at once (`kv --instances`): each
    /// instance's row, in the hosts' shape (its `host` names the instance).
    pub instances: Option<Box<HostsInfo>>,
    /// Where each worker ran (CPU and its node) and its buffers' node.
    pub placement: Option<PointPlacement>,
    /// Keys not typed here (older or newer files), kept as read.
    pub other: BTreeMap<String, Value>,
}

impl PointExt {
    pub fn is_empty(&self) -> bool {
        *self == PointExt::default()
    }

    /// Set `key` from JSON: a typed key is parsed into its field (kept in
    /// `other` if it does not parse), other keys go to `other`.
    pub fn insert(&mut self, key: String, value: Value) {
        let mut all: BTreeMap<String, Value> = std::mem::take(self).into();
        all.insert(key, value);
        *self = PointExt::from(all);
    }

    /// Whether `key` is set (typed, or kept as read).
    pub fn contains_key(&self, key: &str) -> bool {
        let typed = match key {
            "clock" => self.clock.is_some(),
            "cpu" => self.cpu.is_some(),
            "fio" => self.fio.is_some(),
            "interrupted" => self.interrupted.is_some(),
            "kv" => self.kv.is_some(),
            "oltp" => self.oltp.is_some(),
            "server" => self.server.is_some(),
            "timeline" => self.timeline.is_some(),
            "latency_target" => self.latency_target.is_some(),
            "open_loop" => self.open_loop.is_some(),
            "phase" => self.phase.is_some(),
            "rate_pct_of_max" => self.rate_pct_of_max.is_some(),
            "role" => self.role.is_some(),
            "steady" => self.steady.is_some(),
            "peers" => self.peers.is_some(),
            "trace" => self.trace.is_some(),
            "act" => self.act.is_some(),
            "hosts" => self.hosts.is_some(),
            "instances" => self.instances.is_some(),
            "placement" => self.placement.is_some(),
            _ => false,
        };
        typed || self.other.contains_key(key)
    }

    /// Section `key` as JSON, typed or kept as read (for charts that read
    /// older shapes tolerantly).
    pub fn json(&self, key: &str) -> Option<Value> {
        BTreeMap::<String, Value>::from(self.clone()).remove(key)
    }

    /// A traced point's breakdown as JSON, read tolerantly (stages by
    /// name; older files lack `per_request_ns`): `trace.breakdown`, or an
    /// older file's top-level `breakdown`.
    pub fn breakdown_json(&self) -> Option<Value> {
        self.json("trace")
            .and_then(|mut t| t.get_mut("breakdown").map(Value::take))
            .or_else(|| self.other.get("breakdown").cloned())
    }

    /// Preconditioning passes are not measurements of the plan.
    pub fn is_precondition(&self) -> bool {
        self.phase.as_deref() == Some("precondition")
    }

    /// The point open-loop rates are relative to.
    pub fn is_closed_loop_max(&self) -> bool {
        self.role.as_deref() == Some("closed_loop_max")
    }
}

impl From<PointExt> for BTreeMap<String, Value> {
    fn from(e: PointExt) -> Self {
        let mut m = e.other;
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        let json = |v: &dyn erased::Ser| v.to_json();
        put("clock", e.clock.as_ref().map(|v| json(v)));
        put("cpu", e.cpu.as_ref().map(|v| json(v)));
        put("fio", e.fio.as_ref().map(|v| json(v)));
        put("interrupted", e.interrupted.map(Value::Bool));
        put("latency_target", e.latency_target.as_ref().map(|v| json(v)));
        put("open_loop", e.open_loop.as_ref().map(|v| json(v)));
        put("phase", e.phase.map(Value::String));
        put("rate_pct_of_max", e.rate_pct_of_max.map(|v| json(&v)));
        put("role", e.role.map(Value::String));
        put("steady", e.steady.as_ref().map(|v| json(v)));
        put("peers", e.peers.as_ref().map(|v| json(v)));
        put("kv", e.kv.as_ref().map(|v| json(v)));
        put("oltp", e.oltp.as_ref().map(|v| json(v)));
        put("server", e.server.as_ref().map(|v| json(v)));
        put("timeline", e.timeline.as_ref().map(|v| json(v)));
        put("trace", e.trace.as_ref().map(|v| json(v)));
        put("act", e.act.as_ref().map(|v| json(v)));
        put("hosts", e.hosts.as_ref().map(|v| json(v)));
        put("instances", e.instances.as_ref().map(|v| json(v)));
        put("placement", e.placement.as_ref().map(|v| json(v)));
        m
    }
}

impl From<BTreeMap<String, Value>> for PointExt {
    fn from(mut m: BTreeMap<String, Value>) -> Self {
        PointExt {
            clock: take(&mut m, "clock"),
            cpu: take(&mut m, "cpu"),
            fio: take(&mut m, "fio"),
            interrupted: take(&mut m, "interrupted"),
            latency_target: take(&mut m, "latency_target"),
            open_loop: take(&mut m, "open_loop"),
            phase: take(&mut m, "phase"),
            rate_pct_of_max: take(&mut m, "rate_pct_of_max"),
            role: take(&mut m, "role"),
            steady: take(&mut m, "steady"),
            peers: take(&mut m, "peers"),
            kv: take(&mut m, "kv"),
            oltp: take(&mut m, "oltp"),
            server: take(&mut m, "server"),
            timeline: take(&mut m, "timeline"),
            trace: take(&mut m, "trace"),
            act: take(&mut m, "act"),
            hosts: take(&mut m, "hosts"),
            instances: take(&mut m, "instances"),
            placement: take(&mut m, "placement"),
            other: m,
        }
    }
}

/// Key `k` of `m` parsed as `T` and removed from `m`, if `T` holds it
/// exactly: a value that does not parse, or would not be written back the
/// same (fields older files lack, fields this version does not know), is
/// left in `m` as read, so loading and saving a file never changes it.
pub(crate) fn take<T: serde::de::DeserializeOwned + Serialize>(
    m: &mut BTreeMap<String, Value>,
    k: &str,
) -> Option<T> {
    let v = m.get(k)?;
    let t = T::deserialize(v).ok()?;
    if serde_json::to_value(&t).ok().as_ref() != Some(v) {
        return None;
    }
    m.remove(k);
    Some(t)
}

pub(crate) use erased::Ser;

mod erased {
    //! A JSON value from any `Serialize` behind a `dyn`.
    pub trait Ser {
        fn to_json(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Ser for T {
        fn to_json(&self) -> serde_json::Value {
            crate::results::sorted::to_sorted_value(self)
        }
    }
}

/// The clock that timed a job's requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockInfo {
    /// "tsc" or "mono" (CLOCK_MONOTONIC).
    pub source: String,
    /// TSC frequency found by calibration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ghz: Option<f64>,
    /// TSC time minus CLOCK_MONOTONIC at the end of the job, in parts per
    /// million of the time since calibration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_ppm: Option<f64>,
}

/// How an imported fio job's warning starts when fio reported percentiles
/// of completion latency only (fio's default): the point's total-latency
/// percentiles are then clat's (`figures::measure` reads them as clat).
pub const FIO_CLAT_ONLY: &str = "fio reported percentiles of completion latency (clat) only";

/// fio's identity of an imported job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FioJobId {
    pub hostname: Option<String>,
    #[serde(rename = "job options")]
    pub job_options: Option<BTreeMap<String, String>>,
    pub jobname: Option<String>,
}

/// Summary of a point's open-loop recorder.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OpenLoopStats {
    pub achieved_fraction: f64,
    pub achieved_iops: f64,
    pub arrival: String,
    pub final_backlog: u64,
    pub issue_delay: Option<LatStats>,
    pub jobs: u32,
    /// Latency from the intended issue time, per op kind ("read", "write").
    pub lat_from_intended: BTreeMap<String, LatStats>,
    pub late: u64,
    pub late_fraction: f64,
    pub late_threshold_ns: u64,
    pub max_backlog: u64,
    pub measured: u64,
    pub target_iops: f64,
}

impl OpenLoopStats {
    /// Latency from the intended issue time of the main op kind.
    pub fn intended_main(&self) -> Option<&LatStats> {
        self.lat_from_intended
            .get("read")
            .or_else(|| self.lat_from_intended.get("write"))
    }
}

/// One step of a latency-target search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetStepInfo {
    pub meets: bool,
    pub measured_ns: Option<f64>,
    pub percentile: f64,
    pub step: u32,
    pub target_ns: u64,
    pub value: f64,
    pub variable: String,
}

/// One round of a steady-state run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyRound {
    pub criterion: Criterion,
    pub max_rounds: usize,
    pub metric: SteadyMetric,
    pub round: usize,
    pub tracked: bool,
    pub window: usize,
}
