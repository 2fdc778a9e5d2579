//! NVMe over TCP so far: the wire format, `codec` (PDUs, commands,
//! completions), `identify` (Identify data and controller properties) and
//! `crc32c` (the digests), and the initiator's control path, `handshake`
//! (connect, enable, identify, queues). The pipelined engine and the
//! target come next (issue 13).

pub mod codec;
pub mod crc32c;
pub mod handshake;
pub mod identify;
