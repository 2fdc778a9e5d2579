//! `iolab serve`: iolab's own storage targets. The NBD target (`nbd_target`:
//! concurrent bounded handshakes on `nbd_negotiate`, io_uring reactors,
//! O_DIRECT) and the NVMe/TCP target (`nvme_target` on its controller model
//! `nvme_controller`) over what both share (`serving`: backing store, slot
//! memory, wakers, the accept loop, the stall cut-off); per-request stamps
//! for the unloaded breakdown (`stamps`). The wire formats are `proto`'s;
//! the `iolab remote` harness that starts these targets is `remote`.

#[cfg(test)]
pub mod fuzz_peer;
pub mod nbd_negotiate;
pub mod nbd_target;
pub mod nvme_controller;
pub mod nvme_target;
pub mod serving;
pub mod stamps;
