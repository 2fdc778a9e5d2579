//! Remote storage iolab serves itself (see DESIGN.md: targets, topology):
//! the server side of the NBD handshake (`nbd_negotiate`), the NBD target
//! (`nbd_target`: io_uring, O_DIRECT, per-request stamps) and the stamps
//! with the unloaded latency breakdown they give (`stamps`), and a
//! filesystem on a local or remote volume for a database (`volume`), the
//! kernel's initiators (`kernel`), the NVMe/TCP target (`nvme_target`) on
//! its controller model (`nvme_controller`), and what both targets share
//! (`serving`).

pub mod breakdown;
#[cfg(test)]
pub mod fuzz_peer;
/// The kernel's initiator modules: `testbed::kernel_modules`, beside the
/// kernel paths that load them.
pub use crate::testbed::kernel_modules as kernel;
pub mod nbd_negotiate;
pub mod nbd_target;
pub mod nvme_controller;
pub mod nvme_target;
pub mod servers;
pub mod serving;
pub mod stamps;
pub mod topology;
pub mod volume;
