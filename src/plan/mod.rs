//! Plans: what the user asked for, parsed and validated before anything runs.

pub mod act;
pub mod device_args;
pub mod endpoint;
pub mod engines;
pub mod experiment;
pub mod fiojob;
pub mod job;
pub mod log_request;
pub mod options;
pub mod parse;
pub mod planfile;
pub mod profile;
pub mod run_plan;
pub mod steady;
pub mod sweep;
pub mod units;
