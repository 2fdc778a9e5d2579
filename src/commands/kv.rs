//! `iolab kv`: database workloads (glue to `kv::run`).

use crate::cli::kv::KvArgs;

pub fn run(args: KvArgs) -> anyhow::Result<()> {
    crate::kv::run::run(args)
}
