//! The NUMA placement penalty (`--sweep placement`): each job's off-node
//! point beside its on-node point, as off/on ratios (the types;
//! `crate::analysis::placement` computes them).

use serde::{Deserialize, Serialize};

/// One job measured on the device's node and off it. Fields in
/// alphabetical order (the JSON's key order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementPenalty {
    /// The job's parameters but `placement` ("bs=4k engine=... qd=1 ...").
    pub group: String,
    /// Off-node IOPS over on-node IOPS (below 1: the penalty).
    pub iops_off_over_on: Option<f64>,
    /// Off-node mean latency over on-node (above 1: the penalty).
    pub mean_lat_off_over_on: Option<f64>,
    pub off_node: Option<u32>,
    pub off_point: String,
    pub on_node: Option<u32>,
    pub on_point: String,
    /// Off-node p99 latency over on-node.
    pub p99_lat_off_over_on: Option<f64>,
}
