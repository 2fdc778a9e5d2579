//! NVMe over Fabrics' wire format: `codec` (TCP's PDUs, commands,
//! completions), `identify` (Identify data and controller properties),
//! `discovery` (the discovery log page), `crc32c` (TCP's header and data
//! digests) and `rdma_cm` (the RDMA transport's connection manager data).

pub mod codec;
pub mod crc32c;
pub mod discovery;
pub mod identify;
pub mod rdma_cm;
