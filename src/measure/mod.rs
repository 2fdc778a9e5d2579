//! Measurement primitives: the clock, latency histograms, process and device
//! counters. Nothing here prints.

pub mod clock;
