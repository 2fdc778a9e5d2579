//! Adapters from each embedded engine to `KvEngine`.

pub mod cassandra;
pub mod fjall;
pub mod lmdb;
pub mod maria;
pub mod mongo;
pub mod null;
pub mod pg;
pub mod redb;
pub mod redis;
pub mod resp;
pub mod rocks;
mod rocks_c;
pub mod server_ns;
pub mod sqlite;
pub mod wt;
