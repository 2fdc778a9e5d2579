//! NVMe over TCP's wire format: `codec` (PDUs, commands, completions),
//! `identify` (Identify data and controller properties), `discovery` (the
//! discovery log page) and `crc32c` (the header and data digests).

pub mod codec;
pub mod crc32c;
pub mod discovery;
pub mod identify;
