//! Adapters from each embedded engine to `KvEngine`.

pub mod fjall;
pub mod lmdb;
pub mod null;
pub mod redb;
pub mod rocks;
pub mod sqlite;
