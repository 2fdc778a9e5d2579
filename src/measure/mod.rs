//! Measurement primitives: the clock, latency histograms, process and device
//! counters. Nothing here prints.

pub mod clock;
pub mod diskstats;
pub mod histogram;
pub mod overhead;
pub mod peers;
pub mod procgroup;
pub mod procstat;
pub mod rusage;
pub mod tsc;
