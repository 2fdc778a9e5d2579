//! Plans: what the user asked for, parsed and validated before anything runs.

pub mod job;
pub mod parse;
pub mod profile;
