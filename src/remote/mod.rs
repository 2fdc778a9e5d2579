//! Remote storage iolab serves itself (see DESIGN.md: targets, topology):
//! the server side of the NBD handshake (`nbd_negotiate`), the NBD target
//! (`nbd_target`: io_uring, O_DIRECT, per-request stamps) and the stamps
//! with the unloaded latency breakdown they give (`stamps`).

pub mod breakdown;
pub mod nbd_negotiate;
pub mod nbd_target;
pub mod servers;
pub mod stamps;
pub mod topology;
