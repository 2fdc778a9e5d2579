//! Runners: execute a job on a target with N workers and merge what they measured.

pub mod buffers;
pub mod job;
pub mod openloop;
pub mod pattern;
pub mod point;
pub mod recorder;
pub mod steady;
pub mod verify;
pub mod worker;
