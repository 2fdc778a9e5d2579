//! Measurement primitives: the clock, latency histograms, process and device
//! counters, a database server's use over a point (`server`) and the
//! per-second timeline of database runs (`timeline`). Nothing here prints.

pub mod clock;
pub mod diskstats;
pub mod histogram;
pub mod numa;
pub mod overhead;
pub mod peers;
pub mod probe;
pub mod procgroup;
pub mod procstat;
pub mod rusage;
pub mod server;
pub mod server_stats;
pub mod sysfs;
pub mod tally;
pub mod timeline;
pub mod tsc;
pub mod write_amp;
