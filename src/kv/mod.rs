//! Database workloads on embedded engines (YCSB, db_bench style).

pub mod dbbench;
pub mod engine;
pub mod engines;
pub mod generator;
pub mod keys;
pub mod loadstats;
pub mod phase;
pub mod plan;
pub mod point;
pub mod props;
pub mod recorder;
pub mod report;
pub mod run;
pub mod value;
pub mod ycsb;
