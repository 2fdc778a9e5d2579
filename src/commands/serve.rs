//! `iolab serve`: its command line as `target::serve::ServeSettings`, run
//! by `target::serve::run` until interrupted.

use crate::cli::serve::ServeArgs;
use crate::target::serve::{self, ServeSettings};

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let ServeArgs {
        target,
        size,
        overwrite,
        destroy_data,
        read_only,
        protocol,
        nqn,
        listen,
        allow_remote,
        threads,
        max_block,
        fabric_delay,
        stamps,
        stall_timeout,
        poll,
        poll_cpus,
        time_limit,
        keep,
        quiet,
    } = args;
    serve::run(ServeSettings {
        target,
        size,
        overwrite,
        destroy_data,
        read_only,
        protocol,
        nqn,
        listen,
        allow_remote,
        threads,
        max_block,
        fabric_delay,
        stamps,
        stall_timeout,
        poll,
        poll_cpus,
        time_limit,
        keep,
        quiet,
    })
}
