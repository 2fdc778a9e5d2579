//! Database workloads (YCSB, db_bench style) on embedded engines and database servers.

pub mod bodypool;
pub mod chain;
pub mod clock;
pub mod compat;
pub mod dbbench;
pub mod describe;
pub mod engine;
pub mod engines;
pub mod fields;
pub mod generator;
pub mod instances;
pub mod keys;
pub mod loadstats;
/// The LSM state of a phase: owned by results (`results::ext::lsm`).
pub use crate::results::ext::lsm;
pub mod phase;
pub mod plan;
pub mod point;
pub mod props;
pub mod raw;
pub mod recorder;
pub mod report;
pub mod run;
pub mod settings;
pub mod space;
pub mod value;
pub mod wire;
pub mod ycsb;
