//! Arguments of `iolab kv` (issue: database workloads).

use clap::Args;

#[derive(Debug, Args)]
pub struct KvArgs {}
