//! `iolab serve`: iolab's own storage targets, two protocols on one
//! serving substrate (`serving`: backing store, slot memory, io_uring
//! reactors, TCP connection table, accept loop and handoff, stall
//! cut-off, stop and Drop). The NBD protocol (`nbd_target`: concurrent
//! bounded handshakes on `nbd_negotiate`) plugs into it on its own; the
//! NVMe target (`nvme_target`: a fabric-independent core generic over a
//! `Fabric`, NVMe/TCP its first, on the controller model
//! `nvme_controller`, with a discovery controller) plugs into it as NVMe
//! over TCP; per-request stamps for the unloaded breakdown (`stamps`). The
//! wire formats are `proto`'s;
//! the `iolab remote` harness that starts these targets is `remote`; the
//! verb's run (settings checked, backing prepared, served until a signal or
//! the time limit) is `serve`.

#[cfg(test)]
pub mod fuzz_peer;
pub mod nbd_negotiate;
pub mod nbd_target;
pub mod nvme_controller;
pub mod nvme_target;
pub mod serve;
pub mod serving;
pub mod stamps;
