//! NVMe over TCP, the wire format so far: `codec` (PDUs, commands,
//! completions), `identify` (Identify data and controller properties) and
//! `crc32c` (the digests). The initiator engine and the target come next
//! (issue 13).

pub mod codec;
pub mod crc32c;
pub mod identify;
