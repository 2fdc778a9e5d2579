//! `iolab remote`: the same jobs on local and remote storage side by side.
//! The harness's parts: the network namespaces and link (`topology`), the
//! storage servers it starts and stops (`servers`: iolab's own targets,
//! nbdkit, qemu-nbd, tgtd), the unloaded latency breakdown (`breakdown`),
//! a filesystem on a local or remote volume for a database (`volume`),
//! and errors injected through nbdkit's error filter (`faults`).
//! The targets themselves are `target/`; the kernel's initiator modules
//! `testbed::kernel_modules`.

pub mod breakdown;
pub mod faults;
pub mod servers;
pub mod topology;
pub mod volume;
