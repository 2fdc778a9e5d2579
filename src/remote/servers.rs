//! The storage servers of `iolab remote`, at their old path: they live in
//! `servers::storage` beside the database servers; `start` here runs one
//! on a topology's target host (in its network namespace, if any).

use std::path::Path;

use super::topology::Topology;
pub use crate::servers::storage::{
    OwnTargetOptions, StorageServer as Server, Transport, NVME_NQN, TGT_IQN, TRANSPORT_NAMES,
};

/// Start the server of `transport` on `topo`'s target host, serving
/// `backing` (`size` bytes) on `port`; wait until it answers a handshake.
pub fn start(
    transport: Transport,
    topo: &Topology,
    backing: &Path,
    size: u64,
    port: u16,
    own: &OwnTargetOptions,
    log_dir: &Path,
) -> anyhow::Result<Server> {
    crate::servers::storage::start(
        transport,
        topo.target_addr,
        |exe| topo.target_command(exe),
        backing,
        size,
        port,
        own,
        log_dir,
    )
}
