//! Debian's Linux under qemu: every test that boots a guest, in one test
//! executable so that its guests boot two at a time (each qemu is a
//! single-threaded TCG emulator: one per core), instead of one executable
//! after another with a core idle.

#[path = "../common/mod.rs"]
mod common;

mod kernel_paths;
mod numa;
mod nvme_discover;
mod nvme_rdma_target;
mod nvmet_tcp;
