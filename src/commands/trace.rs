//! `iolab trace`: per-request latency breakdown.

use crate::cli::trace::TraceArgs;

pub fn run(_args: TraceArgs) -> anyhow::Result<()> {
    anyhow::bail!("iolab trace is not built yet")
}
