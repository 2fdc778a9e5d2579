//! What kind of point a point is (a device's requests, a key-value phase,
//! a TPC-C-derived point), read from its sections as the results model
//! keeps them, and the order operation types are listed in. The figure
//! catalogue (`figures/`) and every view ask here.

use super::{Param, Point};

/// The kind of a point; which figures it has (`figures::Def::families`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// Requests to a device, file or remote volume (device, run, remote,
    /// trace, fio's JSON).
    Device,
    /// A key-value workload's phase (kv, run's database step).
    Kv,
    /// A TPC-C-derived point (oltp).
    Oltp,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Device => "device",
            Family::Kv => "kv",
            Family::Oltp => "oltp",
        }
    }
}

impl Point {
    /// The point's kind, from its sections (typed, or kept as read from an
    /// older shape), or, for a kv phase merged over hosts or instances,
    /// which keeps no kv section, its `workload`.
    pub fn family(&self) -> Family {
        if self.extra.contains_key("oltp") {
            Family::Oltp
        } else if self.extra.contains_key("kv") || self.has_param(Param::Workload) {
            Family::Kv
        } else {
            Family::Device
        }
    }
}

/// Operation types in the order tables list them.
pub fn op_order(name: &str) -> (usize, &str) {
    const ORDER: [&str; 4] = ["read", "write", "trim", "fsync"];
    (
        ORDER.iter().position(|o| *o == name).unwrap_or(ORDER.len()),
        name,
    )
}
