//! `iolab kv`: database workloads (glue to `kv::run`).

use crate::cli::kv::KvArgs;

pub fn run(args: KvArgs) -> anyhow::Result<()> {
    if let Some(v) = &args.old_target {
        return Err(crate::error::usage(
            "--target",
            format!("kv --target was renamed: use --target-ops {v} (or --rate {v})"),
        ));
    }
    crate::kv::run::run(args)
}
