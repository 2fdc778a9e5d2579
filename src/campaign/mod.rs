//! Campaigns: the same workload on several setups, in rounds, against a
//! baseline (`device`, `kv`, `oltp` and `run` over several targets or
//! `--make` configurations). A campaign is Workload x Setup x Round (and,
//! next, x Host: `Placement`):
//!
//! - `setups` (`MediaSet`, `Subject`) and `given`: the setups, parsed and
//!   checked before anything is made, and the baseline;
//! - `pass`: one pass (a setup in a round, a part of the workload), how
//!   it names and tags its points (`results::PassId`);
//! - `driver`: the one round loop (`run_rounds`: interleaved order, stop,
//!   failures), the `Workload` trait a verb's workload implements, the
//!   `Tally` and the exit status;
//! - `overhead`: the wall time outside the measured intervals;
//! - `sink` and `tagged`: passes that run on directories and save their
//!   points through a tagging observer (`kv`, `oltp`: `kv.rs`, `oltp.rs`).

pub mod device;
pub mod device_plan;
pub mod driver;
pub mod given;
pub mod kernel_path;
pub mod kv;
pub mod kv_plan;
pub mod oltp;
pub mod oltp_plan;
pub mod overhead;
pub mod pass;
pub mod remote;
pub mod remote_db;
pub mod remote_plan;
pub mod remote_run;
pub mod run;
pub mod setups;
pub mod sink;
pub mod tagged;
pub mod transport;

pub use driver::{run_rounds, Order, PassOutcome, Schedule, Tally, Workload};
pub use overhead::Overhead;
pub use pass::{round_order, Pass};
pub use setups::{MediaSet, Subject};
