//! iolab's NVMe over RDMA initiator (`nvme-rdma://`): rdma-core's verbs and
//! connection manager loaded at run time (`native::verbs`), one queue pair with its
//! registered memory (`queue`), the control path shared with NVMe/TCP
//! (`nvmetcp::handshake::bring_up` over `RdmaQueue`).

pub mod engine;
pub mod queue;

use std::net::SocketAddr;
use std::time::Duration;

use crate::engine::nvmetcp::handshake::{self, ControllerInfo, Params};
use queue::{RdmaQueue, Shape};

/// The admin queue's depth (NVMe-oF's admin queue: 32 entries).
const ADMIN_ENTRIES: usize = 32;

/// Connect the admin queue at `addr`, enable the controller and learn the
/// namespace, as over NVMe/TCP.
pub fn connect_admin(
    addr: SocketAddr,
    p: &Params,
    step: Duration,
) -> anyhow::Result<(RdmaQueue, ControllerInfo)> {
    let shape = Shape {
        slots: ADMIN_ENTRIES,
        receives: ADMIN_ENTRIES,
        data_len: 4096,
    };
    let mut q = RdmaQueue::open(addr, 0, shape, step, None)?;
    let info = handshake::bring_up(&mut q, &addr.to_string(), p)?;
    Ok((q, info))
}
