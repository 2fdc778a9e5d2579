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
    /// The path the requests took, where it names the layers each stage
    /// covers as the NVMe-oF study's figure does (`covers`); absent over
    /// TCP to iolab's targets, another server, or the local disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<StagePath>,
}

/// A path through NVMe over Fabrics whose stages are named by layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StagePath {
    /// iolab's nvme-rdma engine to iolab's NVMe target over RDMA: the
    /// engine's and the target's stamps.
    IolabRdma,
    /// The kernel's nvme-rdma initiator to nvmet-rdma: the block layer's,
    /// the nvme driver's and nvmet's tracepoints.
    KernelRdma,
    /// The kernel's nvme-tcp initiator to nvmet-tcp, traced as KernelRdma.
    KernelTcp,
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

    /// The layers stage `i` (of `STAGES`) covers on this breakdown's path,
    /// host first, in the NVMe-oF study's words; `None` where the stage's
    /// name says it (and for the initiator stage: `initiator_scope`).
    pub fn covers(&self, i: usize) -> Option<&'static str> {
        use StagePath::*;
        Some(match (self.path?, i) {
            (KernelRdma | KernelTcp, 0) => {
                "host: user space, the system call, the block layer and the nvme driver's command setup (to block_rq_issue; nvme_setup_cmd comes just before it), and the completion (nvme_complete_rq to reaped)"
            }
            (IolabRdma, 1) => {
                "host: nvme-rdma (iolab's engine posts the command, ibv_post_send), the RDMA stack and the wire; target: its completion queue polled"
            }
            (KernelRdma, 1) => {
                "host: nvme-rdma from block_rq_issue (mapping the data, posting the command), the RDMA stack and the wire; target: the RDMA stack and nvmet-rdma's receive (to nvmet_req_init)"
            }
            (KernelTcp, 1) => {
                "host: nvme-tcp from block_rq_issue (the command PDU sent from the submitting context or its io_work), TCP and the wire; target: TCP and nvmet-tcp's receive (to nvmet_req_init)"
            }
            (IolabRdma, 2) => {
                "target: iolab's NVMe core (command to file submit, file completion to the completion's post)"
            }
            (KernelRdma | KernelTcp, 2) => {
                "target: nvmet and its backing file's I/O, block layer and device included (nvmet_req_init to nvmet_req_complete; the file backend has no tracepoint, so no device stage of its own)"
            }
            (IolabRdma, 3) => "target: the block layer and the device (the file's io_uring I/O)",
            (IolabRdma, 4) => {
                "target: the data's RDMA WRITE and the completion's SEND, the RDMA stack and the wire; host: nvme-rdma's completion queue polled"
            }
            (KernelRdma, 4) => {
                "target: nvmet-rdma's RDMA WRITE and SEND, the RDMA stack and the wire; host: nvme-rdma's completion (to nvme_complete_rq)"
            }
            (KernelTcp, 4) => {
                "target: nvmet-tcp's send, TCP and the wire; host: nvme-tcp's receive (to nvme_complete_rq)"
            }
            _ => return None,
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The study's figure names the layers: host block layer, nvme-rdma,
    /// the RDMA stack; target nvmet-rdma and its block layer. A breakdown
    /// over RDMA says them per stage, and keeps its path through JSON.
    #[test]
    fn an_rdma_breakdown_names_the_studys_layers_per_stage() {
        let b = StampBreakdown {
            path: Some(StagePath::KernelRdma),
            ..StampBreakdown::default()
        };
        assert!(b.covers(0).unwrap().contains("block layer"));
        assert!(
            b.covers(1).unwrap().contains("nvme-rdma")
                && b.covers(1).unwrap().contains("RDMA stack")
        );
        assert!(b.covers(2).unwrap().contains("nvmet"));
        assert!(b.covers(4).unwrap().contains("nvmet-rdma"));
        let own = StampBreakdown {
            path: Some(StagePath::IolabRdma),
            ..b
        };
        assert!(own.covers(3).unwrap().contains("block layer"));
        assert_eq!(StampBreakdown::default().covers(1), None);
        let json = serde_json::to_string(&b).unwrap();
        assert!(json.contains("\"path\":\"kernel-rdma\""), "{json}");
        assert_eq!(serde_json::from_str::<StampBreakdown>(&json).unwrap(), b);
        let old = serde_json::to_string(&StampBreakdown::default()).unwrap();
        assert!(!old.contains("path"), "{old}");
    }
}
