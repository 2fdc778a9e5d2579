//! Per-request latency breakdown through the I/O stack (tracefs).
//!
//! `tracefs` owns the private instance, `reader` drains per-CPU ring buffers,
//! `format` and `ringbuf` parse the kernel's formats and pages, `events`
//! decodes records, `correlate` builds per-request timelines, `stages` turns
//! them into a btt-style breakdown, and `blkexport` writes blktrace files.
//! `fabric` follows a request over the kernel's NVMe-oF path, host to nvmet,
//! and `fabric_breakdown` runs `iolab remote`'s breakdown on it traced.
//! `plan` is `iolab trace`'s checked settings and preparation.

pub mod blkexport;
pub mod config;
pub mod correlate;
pub mod events;
pub mod extents;
pub mod fabric;
pub mod fabric_breakdown;
pub mod format;
pub mod plan;
pub mod point_tracer;
pub mod reader;
pub mod ringbuf;
pub mod session;
pub mod stages;
pub mod tracefs;
