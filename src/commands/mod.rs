//! Glue between parsed arguments and the library: one file per verb.

pub mod agent;
pub mod compare;
pub mod device;
pub mod device_fio;
pub mod device_flags;
pub mod exports;
pub mod kv;
pub mod kv_flags;
pub mod kv_planfile;
pub mod oltp;
pub mod remote;
pub mod remote_flags;
pub mod report;
pub mod run;
pub mod serve;
pub mod server_flags;
pub mod sysinfo;
pub mod trace;

use crate::campaign::setups::MediaFlags;
use crate::cli::media::MediaArgs;
use crate::cli::{Cli, Command};

/// The media flags (`device`, `kv`, `oltp`, `run`) as
/// `campaign::setups::MediaFlags`.
pub fn media_flags(m: &MediaArgs) -> MediaFlags {
    let MediaArgs {
        make,
        make_in,
        rounds,
        baseline,
    } = m.clone();
    MediaFlags {
        make,
        make_in,
        rounds,
        baseline,
        on_hosts: false,
    }
}

/// Run the verb the user asked for.
pub fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Device(args) => device::run(*args),
        Command::Sysinfo(args) => sysinfo::run(args),
        Command::Kv(args) => kv::run(*args),
        Command::Oltp(args) => oltp::run(*args),
        Command::Trace(args) => trace::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Remote(args) => remote::run(*args),
        Command::Agent(args) => agent::run(args),
    }
}
