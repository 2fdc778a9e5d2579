//! NVMe over TCP: the wire format, `codec` (PDUs, commands, completions),
//! `identify` (Identify data and controller properties) and `crc32c` (the
//! digests); the initiator's control path, `handshake` (connect, enable,
//! identify, queues) and `keep_alive` (the admin queue's thread); and the
//! pipelined engine, `engine`.

pub mod codec;
pub mod crc32c;
pub mod engine;
pub mod handshake;
pub mod identify;
pub mod keep_alive;

pub use engine::NvmeTcpEngine;
