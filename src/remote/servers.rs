//! `start`: one of `servers::storage`'s storage servers run on a
//! topology's target host (in its network namespace, if any).

use std::path::Path;

use super::topology::Topology;
use crate::servers::storage::{OwnTargetOptions, StorageServer, Transport};
use crate::testbed::soft_roce::SoftRoce;

/// Start the server of `transport` on `topo`'s target host, serving
/// `backing` (`size` bytes) on `port`; wait until it answers a handshake.
/// An RDMA transport's server listens on a soft-RoCE link of its own in
/// the initial network namespace instead (the server holds the link).
pub fn start(
    transport: Transport,
    topo: &Topology,
    backing: &Path,
    size: u64,
    port: u16,
    own: &OwnTargetOptions,
    log_dir: &Path,
) -> anyhow::Result<StorageServer> {
    if transport.is_rdma() {
        let link = SoftRoce::create()?;
        let mut server = crate::servers::storage::start(
            transport,
            link.addr.into(),
            |exe: &str| std::process::Command::new(exe),
            backing,
            size,
            port,
            own,
            log_dir,
        )?;
        server.link = Some(link);
        return Ok(server);
    }
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
