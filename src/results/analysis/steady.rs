//! A steady-state window's verdict as the results file records it (in
//! `analysis.steady_state`), beside the criterion and tracked metric
//! (`plan::steady`'s, re-exported). Checking a window is
//! `analysis::steady`'s.

use serde::{Deserialize, Serialize};

pub use crate::plan::steady::{Criterion, SteadyMetric};

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
