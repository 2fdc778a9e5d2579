//! iolab's NVMe over TCP initiator: the control path, `handshake` (connect,
//! enable, identify, queues) and `keep_alive` (the admin queue's thread),
//! and the pipelined engine, `engine`. The wire format (`codec`, `identify`,
//! `crc32c`) is `proto::nvme`, shared with the target.

pub mod engine;
pub mod handshake;
pub mod keep_alive;

/// The wire format, shared with the NVMe/TCP target: `proto::nvme`.
pub use crate::proto::nvme::{codec, crc32c, identify};

pub use engine::NvmeTcpEngine;
