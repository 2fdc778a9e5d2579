//! Plans: what the user asked for, parsed and validated before anything runs.

pub mod fiojob;
pub mod job;
pub mod parse;
pub mod profile;
