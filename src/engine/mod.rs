//! I/O engines: the one trait the runner drives, and the engines behind it.
//!
//! An engine owns the file descriptor(s) and the submission machinery of one
//! worker. The runner hands it requests (`queue`), asks it to start them
//! (`submit`) and collects completions (`reap`). Engines never allocate, lock or
//! read the clock on these calls: timing is the runner's job.
//!
//! Synchronous engines (psync, mmap) do the I/O inside `queue` and report the
//! completion on the next `reap`; the runner times them around `queue`.
//!
//! The seam (see docs/engines.md, "Adding an engine"): an `EngineKind` names
//! an engine and its `EngineCaps` say what it can do (the planner and runner
//! ask these, never the name); an `EngineConfig` variant carries the options
//! that engine alone owns (like fio's per-engine option tables); an
//! `EngineSetup` says what the engine opens (`EngineTarget`: nothing, a local
//! descriptor, or a remote endpoint); `dispatch::with_engine` is the one place
//! that builds an engine from them and hands it, statically typed, to the
//! runner's loop.

pub mod aio;
pub mod dispatch;
pub mod fake;
pub mod iscsi;
pub mod mmap;
pub mod nbd;
pub mod null;
pub mod nvmerdma;
pub mod nvmetcp;
pub mod peer_wait;
pub mod psync;
pub mod socket_pump;
pub mod uring;

use std::io;
use std::os::fd::RawFd;

use serde::{Deserialize, Serialize};

use crate::plan::endpoint::{RemoteEndpoint, WireProtocol};
use crate::plan::engines::{EngineConfig, UringOptions};
use crate::results::target::FeatureProbe;

/// What a request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Read,
    Write,
    Fsync,
}

impl OpKind {
    pub const ALL: [OpKind; 3] = [OpKind::Read, OpKind::Write, OpKind::Fsync];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Fsync => "fsync",
        }
    }
}

/// One request handed to an engine. `buf` points into the worker's aligned
/// buffer pool and stays valid until the request completes.
#[derive(Debug, Clone, Copy)]
pub struct IoRequest {
    /// Index of the in-flight slot (and of its buffer); echoed in the completion.
    pub slot: u32,
    pub op: OpKind,
    pub offset: u64,
    pub len: u32,
    pub buf: *mut u8,
}

/// A finished request: `result` is the byte count, or a negative errno.
#[derive(Debug, Clone, Copy, Default)]
pub struct Completion {
    pub slot: u32,
    pub result: i64,
}

/// Ask the server of a remote endpoint about what it exports, through
/// iolab's initiator for its transport (before the run, no timing).
pub fn probe_remote(ep: &RemoteEndpoint) -> io::Result<crate::results::target::RemoteExport> {
    match ep.transport {
        WireProtocol::Nbd => {
            let i = nbd::probe(ep)?;
            Ok(crate::results::target::RemoteExport {
                size_bytes: i.size,
                read_only: i.read_only(),
                multi_conn: i.can_multi_conn(),
                min_block: i.min_block,
                max_block: i.max_block,
                max_depth: None,
                detail: format!(
                    "NBD flags {:#06x}, {} replies, block sizes {}/{}/{} (min/preferred/max)",
                    i.flags,
                    if i.structured { "structured" } else { "simple" },
                    i.min_block,
                    i.preferred_block,
                    i.max_block
                ),
            })
        }
        WireProtocol::Iscsi => {
            let i = iscsi::probe(ep)?;
            Ok(crate::results::target::RemoteExport {
                size_bytes: i.size,
                read_only: false,
                multi_conn: true,
                min_block: i.block_len,
                max_block: 32 << 20,
                max_depth: None,
                detail: format!(
                    "SCSI LUN of {} blocks of {} bytes (READ CAPACITY 16), through libiscsi",
                    i.size / i.block_len as u64,
                    i.block_len
                ),
            })
        }
        WireProtocol::NvmeTcp => Ok(nvme_export(&nvmetcp::engine::probe(ep)?, "")),
        WireProtocol::NvmeRdma => Ok(nvme_export(
            &nvmerdma::engine::probe(ep)?,
            ", over RDMA (iolab's initiator, rdma-core's verbs)",
        )),
    }
}

/// What a remote NVMe namespace is, from its controller's answers.
fn nvme_export(
    i: &nvmetcp::handshake::ControllerInfo,
    over: &str,
) -> crate::results::target::RemoteExport {
    let max = nvmetcp::engine::max_transfer(i).min(32 << 20) as u32;
    crate::results::target::RemoteExport {
        size_bytes: i.ns.bytes(),
        read_only: false,
        multi_conn: true,
        min_block: i.ns.block_size,
        max_block: max,
        // The engine's queue holds --qd requests, a flush and one free entry.
        max_depth: Some((i.cap.mqes as u32 + 1).saturating_sub(2)),
        detail: format!(
            "NVMe namespace of {} blocks of {} bytes; controller {} {} (firmware {}), {} I/O queues of up to {} entries, {} bytes of in-capsule data{}{over}",
            i.ns.nsze,
            i.ns.block_size,
            i.id.model,
            i.id.serial,
            i.id.firmware,
            i.io_queues,
            i.cap.mqes as u32 + 1,
            i.id.in_capsule_data(),
            if i.id.vwc { ", volatile write cache" } else { "" }
        ),
    }
}

/// What an engine opens, for one worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineTarget {
    /// Nothing (null, fake); `size` is the addressed region.
    Nothing { size: u64 },
    /// An open local file or block device.
    LocalFd {
        fd: RawFd,
        /// Size of the used region in bytes (mmap maps this much).
        size: u64,
        /// Opened writable (mmap maps it shared + writable).
        writable: bool,
    },
    /// A remote endpoint the engine connects to itself.
    Remote {
        endpoint: RemoteEndpoint,
        size: u64,
        writable: bool,
        /// How long the engine's waits on the peer may last.
        limits: peer_wait::WaitLimits,
    },
}

impl EngineTarget {
    /// The local descriptor, or an error naming the engine that needs one.
    pub fn local_fd(&self, engine: &str) -> io::Result<RawFd> {
        match self {
            EngineTarget::LocalFd { fd, .. } => Ok(*fd),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{engine} needs a local file or block device"),
            )),
        }
    }

    /// Bytes the engine may address.
    pub fn size(&self) -> u64 {
        match self {
            EngineTarget::Nothing { size }
            | EngineTarget::LocalFd { size, .. }
            | EngineTarget::Remote { size, .. } => *size,
        }
    }

    pub fn writable(&self) -> bool {
        match self {
            EngineTarget::Nothing { .. } => true,
            EngineTarget::LocalFd { writable, .. } | EngineTarget::Remote { writable, .. } => {
                *writable
            }
        }
    }
}

/// Everything an engine needs to start: what it opens, the buffer pool, the
/// depth. Engine-specific options live in `EngineConfig`, not here.
#[derive(Debug, Clone)]
pub struct EngineSetup {
    pub target: EngineTarget,
    /// Requests in flight at most.
    pub depth: u32,
    /// Start and length of the buffer pool (for buffer registration).
    pub pool_base: *mut u8,
    pub pool_len: usize,
}

impl EngineSetup {
    /// A setup on a local descriptor (what the local engines and their tests use).
    pub fn local(fd: RawFd, size: u64, writable: bool, depth: u32, pool: (*mut u8, usize)) -> Self {
        EngineSetup {
            target: EngineTarget::LocalFd { fd, size, writable },
            depth,
            pool_base: pool.0,
            pool_len: pool.1,
        }
    }
}

/// The interface the runner drives. See the module comment for the contract.
pub trait Engine {
    /// Accept a request. Async engines stage it for `submit`; sync engines do it now.
    fn queue(&mut self, req: IoRequest) -> io::Result<()>;
    /// Start every staged request; returns how many were started.
    fn submit(&mut self) -> io::Result<usize>;
    /// Wait until at least `min` requests completed (0 = do not wait) and
    /// append their completions to `out` (whose capacity is the depth, so no
    /// allocation happens). Returns how many were appended.
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> io::Result<usize>;
    /// Wait in the kernel up to `timeout_ns` for at least one completion and
    /// append what completed to `out`; 0 when the time ran out. Only called
    /// when `waits_with_timeout` says the engine can; the open loop uses it
    /// to sleep until the next completion or the next arrival.
    fn reap_timeout(&mut self, timeout_ns: u64, out: &mut Vec<Completion>) -> io::Result<usize> {
        let _ = timeout_ns;
        self.reap(0, out)
    }
    /// Whether `reap_timeout` waits (false: the caller polls `reap(0)`).
    fn waits_with_timeout(&self) -> bool {
        false
    }
    /// Flush written data to stable storage, synchronously, with nothing in flight.
    fn fsync(&mut self) -> io::Result<()>;
    /// When the engine handed the request just completed in `slot` to the
    /// kernel and when its reply had been received (CLOCK_MONOTONIC ns), for
    /// engines that see both (a network protocol's): the initiator side of
    /// the remote latency breakdown. Only asked while requests are logged.
    fn request_stamps(&self, slot: u32) -> Option<(u64, u64)> {
        let _ = slot;
        None
    }
}

/// Probe the optional features of the engine `config` names on the open
/// target `fd`, for provenance and warnings: io_uring (base and each of its
/// options) and aio (works; asynchronous, i.e. O_DIRECT). Other engines have
/// nothing to probe. Use `uring::check_uring_features` to refuse a run instead.
pub fn probe_engine(config: &EngineConfig, fd: RawFd) -> Vec<FeatureProbe> {
    match config {
        EngineConfig::IoUring(uring) => uring::probe_uring(fd, uring),
        EngineConfig::Aio => aio::probe_aio(fd),
        _ => Vec::new(),
    }
}

/// Turn a negative-errno completion result into an error.
pub fn completion_error(res: i64) -> io::Error {
    io::Error::from_raw_os_error((-res) as i32)
}

/// Check, before anything is timed, that the optional features a job asks
/// for work on this target (an unsupported one is an error that names it);
/// returns what was probed, for provenance.
pub fn probe_features(config: &EngineConfig, fd: RawFd) -> anyhow::Result<Vec<FeatureProbe>> {
    match config {
        EngineConfig::IoUring(uring) => {
            let probes = uring::probe_uring(fd, uring);
            let flag = |feature: &str| match feature {
                "io_uring fixed buffers" => "--uring-fixed-buffers",
                "io_uring fixed files" => "--uring-fixed-files",
                "io_uring SQPOLL" => "--uring-sqpoll",
                "io_uring IOPOLL" => "--uring-iopoll",
                _ => "--engine",
            };
            match probes.iter().find(|p| !p.supported) {
                Some(bad) => Err(crate::error::usage(flag(&bad.feature), bad.detail.clone())),
                None => Ok(probes),
            }
        }
        _ => Ok(probe_engine(config, fd)),
    }
}

#[cfg(test)]
pub(crate) mod test_support;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::engines::{engine_for_transport, EngineKind, FakeScript};
    use crate::plan::job::JobSpec;

    #[test]
    fn caps_keep_the_old_name_based_answers() {
        for k in EngineKind::ALL {
            assert_eq!(
                k.is_sync(),
                matches!(k, EngineKind::Psync | EngineKind::Mmap),
                "{k:?}"
            );
            assert_eq!(
                k.needs_file(),
                !matches!(
                    k,
                    EngineKind::Null
                        | EngineKind::Fake
                        | EngineKind::Nbd
                        | EngineKind::Iscsi
                        | EngineKind::NvmeTcp
                        | EngineKind::NvmeRdma
                ),
                "{k:?}"
            );
            assert_eq!(
                k.needs_target(),
                !matches!(k, EngineKind::Null | EngineKind::Fake),
                "{k:?}"
            );
            assert_eq!(k.caps().direct_io, k != EngineKind::Mmap, "{k:?}");
            assert_eq!(k.caps().virtual_clock, k == EngineKind::Fake, "{k:?}");
            assert_eq!(EngineKind::parse(k.name()), Some(k));
            assert_eq!(EngineConfig::default_for(k).kind(), k);
        }
        assert_eq!(
            engine_for_transport(WireProtocol::Nbd),
            Some(EngineKind::Nbd)
        );
        assert_eq!(
            engine_for_transport(WireProtocol::Iscsi),
            Some(EngineKind::Iscsi)
        );
        assert_eq!(
            engine_for_transport(WireProtocol::NvmeTcp),
            Some(EngineKind::NvmeTcp)
        );
        assert_eq!(
            engine_for_transport(WireProtocol::NvmeRdma),
            Some(EngineKind::NvmeRdma)
        );
    }

    #[test]
    fn job_spec_gives_each_engine_its_own_options() {
        let opts = UringOptions {
            fixed_buffers: true,
            sqpoll: true,
            ..Default::default()
        };
        let mut spec = JobSpec {
            engine: EngineKind::IoUring,
            uring: opts,
            ..Default::default()
        };
        assert_eq!(spec.engine_config(), EngineConfig::IoUring(opts));
        spec.engine = EngineKind::Aio;
        assert_eq!(spec.engine_config(), EngineConfig::Aio);
        spec.engine = EngineKind::Fake;
        assert_eq!(
            spec.engine_config(),
            EngineConfig::Fake(FakeScript::default())
        );
        // The stored form is unchanged: flat `engine` and `uring` fields.
        let v = serde_json::to_value(JobSpec {
            engine: EngineKind::IoUring,
            uring: opts,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(v["engine"], "io_uring");
        assert_eq!(v["uring"]["fixed_buffers"], true);
        assert_eq!(v["uring"]["sqpoll"], true);
    }
}
