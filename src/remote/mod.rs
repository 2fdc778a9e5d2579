//! `iolab remote`: the same jobs on local and remote storage side by side.
//! The harness's parts: the network namespaces and link (`topology`), the
//! storage servers it starts and stops (`servers`: iolab's own targets,
//! nbdkit, qemu-nbd, tgtd), the unloaded latency breakdown (`breakdown`),
//! a filesystem on a local or remote volume for a database (`volume`),
//! and errors injected through nbdkit's error filter (`faults`).
//! The targets themselves are `target` (re-exported here under their old
//! paths).

pub mod breakdown;
pub mod faults;
/// The kernel's initiator modules: `testbed::kernel_modules`, beside the
/// kernel paths that load them.
pub use crate::testbed::kernel_modules as kernel;
pub mod servers;
pub mod topology;
pub mod volume;

pub use crate::target::{nbd_negotiate, nbd_target, nvme_controller, nvme_target, serving, stamps};
