//! The flags of a media run (several targets side by side, docs/media.md),
//! shared by `device`, `kv` and `run`: the configurations iolab builds,
//! where, how many rounds and the baseline. Each verb keeps its own
//! `--target`, since what a target may be differs (a file or device for
//! `device`, a directory for `kv` and `run`).

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args, Clone)]
pub struct MediaArgs {
    /// Build these configurations on loop devices over scratch files in
    /// --target (or --make-in) and run the same workload on each, side by
    /// side (root): tmpfs, ext4, ext4-nojournal, xfs, btrfs, raw, stripe:N
    #[arg(long, value_name = "LIST", help_heading = "Media")]
    pub make: Option<String>,
    /// With --make: the directory the configurations are built in; every
    /// --target is then a target of its own beside them
    #[arg(long, value_name = "DIR", help_heading = "Media")]
    pub make_in: Option<PathBuf>,
    /// With --make or several --target: rounds over the targets, in
    /// alternating order (A B C, then C B A, ...), so drift hits every one alike
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = "Media")]
    pub rounds: u32,
    /// With --make or several --target: the target the others are
    /// normalized to, by label (default: the first)
    #[arg(long, value_name = "LABEL", help_heading = "Media")]
    pub baseline: Option<String>,
}
