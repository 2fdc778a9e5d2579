//! Database workloads on embedded engines (YCSB, db_bench style).

pub mod engine;
pub mod engines;
pub mod generator;
pub mod keys;
