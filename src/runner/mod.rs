//! Runners: execute a job on a target with N workers and merge what they measured.

pub mod buffers;
pub mod verify;
