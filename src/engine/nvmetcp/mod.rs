//! NVMe over TCP, the wire format so far: `codec` (PDUs, commands,
//! completions) and `crc32c` (its digests). The initiator engine and the
//! target come next (issue 13).

pub mod codec;
pub mod crc32c;
