//! Native libraries iolab loads at run time (dlopen), so a machine without
//! them builds and runs iolab and whatever needs one says what is missing:
//! `dlopen` the loader (libiscsi's engine uses it too), `verbs` rdma-core's
//! libibverbs and librdmacm, `rdma_memory` the registered memory and CM
//! addresses. A leaf of the core: the nvme-rdma engine and iolab's RDMA
//! target share it without importing each other.

pub mod dlopen;
pub mod rdma_memory;
pub mod verbs;
