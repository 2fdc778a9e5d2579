//! `start`: one of `servers::storage`'s storage servers run on a
//! topology's target host (in its network namespace, if any).

use std::path::Path;

use super::topology::Topology;
use crate::servers::storage::{OwnTargetOptions, StorageServer, Transport};

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
) -> anyhow::Result<StorageServer> {
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
