//! The typed extensions of a point (`Point.extra` in the file): open-loop
//! statistics, latency-target steps, steady-state rounds, the phase and role
//! of a point, fio's job identity. Keys this version does not type (or does
//! not know: older and newer files) stay in `other`, as they were read. On
//! disk it is the same sorted JSON object as before the model was typed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::analysis::steady::{Criterion, Metric};
use crate::measure::histogram::LatStats;

/// Everything a feature adds to a point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "BTreeMap<String, Value>")]
pub struct PointExt {
    /// fio's job identity (points imported from fio JSON).
    #[serde(default)]
    pub fio: Option<FioJob>,
    /// The job was stopped early: the point is partial.
    #[serde(default)]
    pub interrupted: Option<bool>,
    /// One step of a latency-target search.
    #[serde(default)]
    pub latency_target: Option<TargetStepInfo>,
    /// Open-loop recorder summary (rate-driven points).
    #[serde(default)]
    pub open_loop: Option<OpenLoopStats>,
    /// "precondition" for passes that are not measurements; kv: "load"/"run".
    #[serde(default)]
    pub phase: Option<String>,
    /// `iolab run`: the rate as a share of the closed-loop maximum.
    #[serde(default)]
    pub rate_pct_of_max: Option<f64>,
    /// "closed_loop_max" for the point open-loop rates are relative to.
    #[serde(default)]
    pub role: Option<String>,
    /// One round of a steady-state run.
    #[serde(default)]
    pub steady: Option<SteadyRound>,
    /// Keys not typed here (kv, trace, cpu ...) or unknown, kept as read.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

impl PointExt {
    pub fn is_empty(&self) -> bool {
        *self == PointExt::default()
    }

    /// Set `key` from JSON: typed keys are parsed into their field (kept in
    /// `other` if they do not parse), other keys go to `other`.
    pub fn insert(&mut self, key: String, value: Value) {
        let mut all: BTreeMap<String, Value> = self.clone().into();
        all.insert(key.clone(), value.clone());
        match serde_json::from_value::<PointExt>(Value::Object(all.into_iter().collect())) {
            Ok(ext) => *self = ext,
            Err(_) => {
                self.other.insert(key, value);
            }
        }
    }

    /// Whether `key` is set (typed or not).
    pub fn contains_key(&self, key: &str) -> bool {
        match key {
            "fio" => self.fio.is_some(),
            "interrupted" => self.interrupted.is_some(),
            "latency_target" => self.latency_target.is_some(),
            "open_loop" => self.open_loop.is_some(),
            "phase" => self.phase.is_some(),
            "rate_pct_of_max" => self.rate_pct_of_max.is_some(),
            "role" => self.role.is_some(),
            "steady" => self.steady.is_some(),
            k => self.other.contains_key(k),
        }
    }

    /// `key` as JSON, typed or not (for readers not yet typed).
    pub fn json(&self, key: &str) -> Option<Value> {
        BTreeMap::<String, Value>::from(self.clone()).remove(key)
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
        put("fio", e.fio.as_ref().map(|v| json(v)));
        put("interrupted", e.interrupted.map(Value::Bool));
        put("latency_target", e.latency_target.as_ref().map(|v| json(v)));
        put("open_loop", e.open_loop.as_ref().map(|v| json(v)));
        put("phase", e.phase.map(Value::String));
        put("rate_pct_of_max", e.rate_pct_of_max.map(|v| json(&v)));
        put("role", e.role.map(Value::String));
        put("steady", e.steady.as_ref().map(|v| json(v)));
        m
    }
}

mod erased {
    //! A JSON value from any `Serialize` behind a `dyn`.
    pub trait Ser {
        fn to_json(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Ser for T {
        fn to_json(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap_or_default()
        }
    }
}

/// fio's identity of an imported job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FioJob {
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
    pub metric: Metric,
    pub round: usize,
    pub tracked: bool,
    pub window: usize,
}
