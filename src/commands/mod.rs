//! Glue between parsed arguments and the library: one file per verb.

pub mod kv;
pub mod trace;

use crate::cli::{Cli, Command};

/// Run the verb the user asked for.
pub fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Kv(args) => kv::run(args),
        Command::Trace(args) => trace::run(args),
    }
}
