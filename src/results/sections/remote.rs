//! `extra.remote`: how `iolab remote` (and `run`'s remote step) set up the
//! comparison: the topology, each transport with its backing and caching
//! (and errors injected), the kernel's initiators, a database run's plan
//! and volumes, the target host, and the unloaded latency breakdown per
//! transport (`StampBreakdown`).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

/// What a remote run records about its set-up. Keys one shape writes as
/// null and another leaves out are `Option<Option<_>>`: absent is `None`,
/// null is `Some(None)`, so a file is written back as it was read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RemoteRecord {
    /// "namespaces", "loopback", "hosts".
    pub topology: String,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub note: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_addr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiator_interface: Option<String>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub fabric_rate: Option<Option<String>>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub fabric_delay: Option<Option<String>>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub db: Option<Option<RemoteDbRecord>>,
    /// The kernel's initiator of each protocol, and the path iolab took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiators: Option<Vec<InitiatorRecord>>,
    pub transports: Vec<RemoteTransport>,
    /// `remote --hosts`: the host serving the exports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_host: Option<TargetHostRecord>,
    /// `nvme-tcp-kernel`: the kernel's path as connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvme_tcp_kernel: Option<String>,
    /// `nvme-rdma-kernel`: the kernel's path over RDMA as connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvme_rdma_kernel: Option<String>,
    /// Set when a transport ran over software RDMA (soft-RoCE): what its
    /// numbers can and cannot show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soft_rdma: Option<String>,
    /// The unloaded breakdown of each transport, by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<BTreeMap<String, StampBreakdown>>,
}

/// A key that is present (even as null) is `Some`.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

impl RemoteRecord {
    /// The database run's plan, if there was one.
    pub fn db(&self) -> Option<&RemoteDbRecord> {
        self.db.as_ref().and_then(Option::as_ref)
    }
}

/// One transport of the comparison.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RemoteTransport {
    pub label: String,
    /// What the target serves the export from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiator_cache: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cache: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected_errors: Option<InjectedErrors>,
}

/// Errors a transport's target was told to inject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InjectedErrors {
    pub errno: String,
    /// The share of requests, 0..1.
    pub rate: f64,
    pub by: String,
}

/// One protocol's kernel initiator as the run found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitiatorRecord {
    pub protocol: String,
    pub module: String,
    /// "loaded", "loadable" or "absent".
    pub kernel: String,
    pub path: String,
}

/// The host serving the exports of `remote --hosts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetHostRecord {
    pub host: String,
    pub hostname: String,
    pub agent_pid: u32,
    pub directory: String,
}

/// The plan of the database run over each transport (`remote --db`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteDbRecord {
    pub engine: String,
    pub workload: String,
    pub read_percent: u8,
    pub num: u64,
    pub ops: u64,
    pub values: Vec<u64>,
    pub direct_io: bool,
    pub cache_size: u64,
    pub write_buffer_size: u64,
    pub filesystem: String,
    pub kernel_nbd: String,
    /// The volume the database lived on, per transport.
    pub volumes: BTreeMap<String, String>,
}

/// Mean time of each stage of one request's life, in nanoseconds; the
/// stages of every request sum to its latency, so the means sum to the
/// mean latency.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StampBreakdown {
    pub requests: u64,
    /// Initiator user space: building the request, handling the reply.
    pub initiator_ns: f64,
    /// The send system call, TCP and the link, the target's wake-up and receive.
    pub fabric_out_ns: f64,
    /// The target between arrival and device submit, and between device
    /// completion and reply send.
    pub target_ns: f64,
    /// Device submit to device completion, as the target saw it.
    pub device_ns: f64,
    /// The target's send, TCP and the link, the initiator's wake-up and receive.
    pub fabric_back_ns: f64,
    /// Fabric, target and device together, over a target that keeps no
    /// stamps (a server other than iolab's own); 0 otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unstamped_ns: f64,
    /// Mean latency measured by the initiator (issue to done).
    pub latency_ns: f64,
    /// The mean latency of the job the requests came from, as its point
    /// reports it (all its requests, warm-up included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub point_mean_ns: Option<f64>,
    /// Where the initiator stage ends: `true` at the engine's own stamps
    /// (before its send call, from its receive call's return: the system
    /// calls are in the next stage), `false` at the return of the submit
    /// call (the kernel's submission path inside it: DAS, iscsi). Absent in
    /// files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_stamps: Option<bool>,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// The stages in the order of a request's life, each with its name.
pub const STAGES: [&str; 6] = [
    "initiator",
    "fabric out",
    "target",
    "device",
    "fabric back",
    "fabric, target and device (no target stamps)",
];

impl StampBreakdown {
    /// Every stage of `STAGES` with its mean.
    pub fn all_stages(&self) -> [(&'static str, f64); 6] {
        let v = [
            self.initiator_ns,
            self.fabric_out_ns,
            self.target_ns,
            self.device_ns,
            self.fabric_back_ns,
            self.unstamped_ns,
        ];
        std::array::from_fn(|i| (STAGES[i], v[i]))
    }

    /// What the initiator stage covers here, in words (its boundary is not
    /// the same on every transport: `engine_stamps`).
    pub fn initiator_scope(&self) -> &'static str {
        const ENGINE: &str = "due to the engine's send call, and the receive call's return to reaped: iolab's user space only (the send and receive calls are in the next stage)";
        const SUBMIT: &str = "due to the return of the submit call: iolab's user space and the kernel's submission path (the system call included)";
        let stamped = self.fabric_out_ns > 0.0 || self.fabric_back_ns > 0.0;
        match self.engine_stamps {
            Some(true) => ENGINE,
            Some(false) => SUBMIT,
            None if stamped => ENGINE,
            None if self.unstamped_ns == 0.0 => SUBMIT,
            None => "iolab's user space; the send call is outside it with the nbd and nvme-tcp engines, inside it (to the submit call's return) otherwise (not recorded in this file)",
        }
    }

    /// The stages this breakdown measured: over iolab's own target the five
    /// stamped ones; over another target the initiator and the rest; on
    /// the local disk (DAS, the reference) the initiator and the device.
    pub fn stages(&self) -> Vec<(&'static str, f64)> {
        let all = self.all_stages();
        if self.unstamped_ns > 0.0 {
            vec![all[0], all[5]]
        } else if self.fabric_out_ns == 0.0 && self.target_ns == 0.0 && self.fabric_back_ns == 0.0 {
            vec![all[0], all[3]]
        } else {
            all[..5].to_vec()
        }
    }
}
