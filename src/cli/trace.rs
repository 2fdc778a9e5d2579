//! Arguments of `iolab trace` (issue: per-request latency breakdown).

use clap::Args;

#[derive(Debug, Args)]
pub struct TraceArgs {}
