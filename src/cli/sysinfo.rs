//! Arguments of `iolab sysinfo`.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args, Clone)]
#[command(after_help = "EXAMPLES:
  iolab sysinfo                    machine, kernel, timer cost, and the disk under the current directory
  iolab sysinfo --target /mnt      the same for the filesystem and device under /mnt
  iolab sysinfo --json             machine-readable, to stdout (the same as -o -)
  iolab sysinfo -o machine.json    the JSON into a file")]
pub struct SysinfoArgs {
    /// Describe the filesystem and device under this path (default: current directory)
    #[arg(short = 't', long, value_name = "PATH")]
    pub target: Option<PathBuf>,
    /// Write the JSON to FILE instead of printing a table (`-` or no FILE:
    /// stdout); -o/--output and --json are one option, as in every verb
    #[arg(
        short = 'o',
        long,
        visible_alias = "json",
        value_name = "FILE",
        num_args = 0..=1,
        default_missing_value = "-"
    )]
    pub output: Option<PathBuf>,
}
