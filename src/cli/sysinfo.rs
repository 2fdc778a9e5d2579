//! Arguments of `iolab sysinfo`.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args, Clone)]
#[command(after_help = "EXAMPLES:
  iolab sysinfo                 machine, kernel, timer cost, and the disk under the current directory
  iolab sysinfo --target /mnt   the same for the filesystem and device under /mnt
  iolab sysinfo --json          machine-readable")]
pub struct SysinfoArgs {
    /// Describe the filesystem and device under this path (default: current directory)
    #[arg(short = 't', long, value_name = "PATH")]
    pub target: Option<PathBuf>,
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
    /// Write the JSON to this file instead (as -o in every verb)
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}
