//! An experiment: the jobs of a sweep or profile and how they are run —
//! plainly, at open-loop rates, as a latency-target search, or in rounds
//! until steady state — plus the SNIA preparation steps.

use serde::Serialize;

use super::steady::SteadyOptions;
use crate::plan::job::{Arrival, JobSpec};
use crate::plan::sweep::{self, RateAxis};

/// How the jobs of an experiment are driven.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Mode {
    /// Each job once.
    Plain,
    /// Each job at open-loop rates (absolute, or a ramp of its measured
    /// closed-loop maximum).
    Rates {
        #[serde(skip)]
        rates: RateAxis,
        arrival: Arrival,
    },
    /// Largest QD (closed loop) or rate (open loop, `arrival` set) whose
    /// latency percentile stays under the target.
    LatencyTarget {
        target_ns: u64,
        percentile: f64,
        open_loop: Option<Arrival>,
    },
    /// Rounds of every job until the tracked one is steady.
    Steady(SteadyOptions),
    /// Every job at once, released together (a fio job file's jobs
    /// between two stonewalls). One point per entry of `reports` (indices
    /// into `jobs`), merged exactly when it holds several jobs (fio's
    /// `group_reporting`).
    Concurrent { reports: Vec<Vec<usize>> },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Experiment {
    /// Empty for a command-line run; the plan file's name otherwise.
    pub name: String,
    pub jobs: Vec<JobSpec>,
    pub mode: Mode,
    /// Write N x capacity sequentially before measuring.
    pub precondition: Option<f64>,
    pub purge: bool,
    pub knee_factor: f64,
}

impl Experiment {
    /// Rough number of points and seconds, for --dry-run and the ETA.
    pub fn estimate(&self) -> (usize, f64) {
        let one = sweep::estimate_secs(&self.jobs);
        let n = self.jobs.len();
        match &self.mode {
            Mode::Plain => (n, one),
            Mode::Rates { rates, .. } => {
                let (k, extra) = match rates {
                    RateAxis::Iops(v) => (v.len(), 0),
                    RateAxis::PercentOfMax(v) => (v.len() + 1, 0),
                };
                (n * (k + extra), one * (k + extra) as f64)
            }
            // Doubling 1..4096 then bisecting: about 20 steps.
            Mode::LatencyTarget { .. } => (n * 20, one * 20.0),
            // At least one window of rounds.
            Mode::Steady(s) => (n * s.window, one * s.window as f64),
            Mode::Concurrent { reports } => (
                reports.len(),
                self.jobs
                    .iter()
                    .map(|j| sweep::estimate_secs(std::slice::from_ref(j)))
                    .fold(0.0, f64::max),
            ),
        }
    }
}
