//! The steady-state settings of an experiment (`--steady-state`,
//! `--steady-criterion`, SNIA PTS rounds): the tracked metric, the
//! criterion, the window and the most rounds. A plan's vocabulary, which
//! the results file records (`extra.steady`, `analysis.steady_state`);
//! parsing the flags and checking a window are `analysis::steady`'s, the
//! rounds are run by `runner::steady` and the session.

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
pub enum SteadyMetric {
    Iops,
    Bw,
    Lat,
}

/// Steady-state settings of an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyOptions {
    pub metric: SteadyMetric,
    pub criterion: Criterion,
    pub window: usize,
    pub max_rounds: usize,
}
