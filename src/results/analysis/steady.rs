//! The steady-state vocabulary the results file records (in
//! `analysis.steady_state` and a point's `extra.steady`): the criterion,
//! the tracked metric and a window's verdict. Parsing them from flags and
//! checking a window are `analysis::steady`'s.

use serde::{Deserialize, Serialize};

/// Which test decides steady state.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Criterion {
    /// range <= 20% and slope excursion <= 10% of the window mean.
    Snia,
    /// fio `iops`/`bw`: every value within `limit` of the mean.
    FioRange { limit: f64 },
    /// fio `iops_slope`/`bw_slope`: slope within `limit` of the mean.
    FioSlope { limit: f64 },
}

/// The tracked variable of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    Iops,
    Bw,
    Lat,
}

/// The verdict on one window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowCheck {
    /// Rounds (0-based) covered by the window.
    pub first_round: usize,
    pub last_round: usize,
    pub mean: f64,
    pub range: f64,
    /// Least-squares slope per round and its excursion across the window.
    pub slope: f64,
    pub excursion: f64,
    /// Largest |value - mean| (fio's range criterion).
    pub max_deviation: f64,
    pub steady: bool,
}
