//! Database workloads on embedded engines (YCSB, db_bench style).

pub mod generator;
pub mod keys;
