//! `iolab kv`: database workloads.

use crate::cli::kv::KvArgs;

pub fn run(_args: KvArgs) -> anyhow::Result<()> {
    anyhow::bail!("iolab kv is not built yet")
}
