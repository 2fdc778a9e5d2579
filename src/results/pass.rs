//! Which pass of a campaign a point belongs to (`Point::pass`): the setup
//! it ran on, the round, whether that setup is the baseline, the part
//! (a kv plan's named part) and the workload the point measured. Point
//! names keep their readable `SETUP rN: WORKLOAD` shape, but nothing
//! parses them back: analysis reads this. Files written before it existed
//! carry the same facts in `params` (`medium`, `round`, `baseline`,
//! `part`) and the name; `analysis::media::pass_of` reads both.

use serde::{Deserialize, Serialize};

/// A point's pass: a workload measured on one setup in one round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassId {
    /// The setup's label (a target, a configuration, a transport).
    pub setup: String,
    /// 1-based.
    pub round: u32,
    /// This setup is the campaign's baseline.
    pub baseline: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
    /// What the point measured, without the pass prefix.
    pub workload: String,
}

impl PassId {
    /// `SETUP rN: WORKLOAD`, the point's name.
    pub fn name(&self) -> String {
        prefixed(&self.setup, self.round, &self.workload)
    }
}

/// `SETUP rN: TEXT`: a point name, a status line or warning of a pass.
pub fn prefixed(setup: &str, round: u32, text: &str) -> String {
    format!("{setup} r{round}: {text}")
}
