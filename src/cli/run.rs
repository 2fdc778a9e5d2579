//! Arguments of `iolab run`: the default characterization of the storage
//! under a directory, within a time budget.

use std::path::PathBuf;

use crate::plan::units::{Size, Span};
use clap::Args;

#[derive(Debug, Args, Clone)]
#[command(after_help = "EXAMPLES:
  iolab run
      characterize the storage under the current directory in about 3 minutes
  iolab run /mnt/nvme --budget 10m --profile full
      a longer run with every experiment (bs x QD matrix, bs x mix heat map, batching sweep)
  iolab run /var/tmp --budget 20s --size 64m
      a quick look on a small scratch file
  iolab run --dry-run
      print the plan (steps, jobs, time per job) and exit
  iolab run ssd=/mnt/ssd nvme=/mnt/nvme --rounds 2 --baseline ssd --budget 10m
      the same plan on two directories, interleaved job by job, normalized to ssd
  iolab run /var/tmp --make tmpfs,ext4,xfs --budget 6m --profile quick
      the same plan on file systems iolab builds on loop devices (root)
  iolab run /data --hosts web1,web2 --budget 5m
      the device steps on both hosts at once (a scratch file in /data on each), merged per job

Writes DIR/iolab-<UTC time>/results.json (after every point) and report.html.
Ctrl-C stops the run and keeps what was measured.")]
pub struct RunArgs {
    /// Directory on the storage to characterize (a scratch file is created
    /// there and removed at exit; default: the current directory), or a
    /// remote export (nbd://HOST[:PORT]/[EXPORT], nvme-tcp://HOST[:PORT]/NQN,
    /// iscsi://HOST[:PORT]/IQN/LUN). Several, as
    /// [LABEL=]DIR: the same plan on each, interleaved by rounds and
    /// normalized to the baseline (docs/media.md)
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// The same as DIR, spelled as in every verb (may be given several times)
    #[arg(short = 't', long, value_name = "DIR", action = clap::ArgAction::Append)]
    pub target: Vec<PathBuf>,
    /// Allow writing to a remote export given as the target (its data is
    /// destroyed); a scratch file needs no permission
    #[arg(long)]
    pub overwrite: bool,
    /// Total time for the measurements (the scratch file layout comes on
    /// top); at least 0.5 s per job of the profile's core steps (2.5s quick,
    /// 4s standard, 6s full), else refused
    #[arg(long, default_value = "3m", value_name = "DURATION")]
    pub budget: Span,
    /// Not a flag of `run` (its time is the total --budget); refused with a pointer
    #[arg(long, value_name = "DURATION", hide = true)]
    pub runtime: Option<Span>,
    /// Which experiments: quick, standard or full
    #[arg(long, default_value = "standard", value_name = "NAME")]
    pub profile: String,
    /// Size of the scratch file (default 1g; 256m on each target of a media
    /// run), or of the region of a remote export to use (default: all of it)
    #[arg(long, value_name = "SIZE")]
    pub size: Option<Size>,
    /// I/O engine (default io_uring, falling back to aio, then psync, if it does not work here)
    #[arg(
        long,
        value_name = "ENGINE",
        value_parser = crate::cli::names::DEVICE_ENGINES,
        hide_possible_values = true
    )]
    pub engine: Option<String>,
    /// Where to write results.json and report.html (default DIR/iolab-<UTC
    /// time>; for a remote export, ./iolab-<UTC time>)
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Replace an existing output file iolab did not write (iolab's own
    /// results and reports are replaced without it)
    #[arg(long)]
    pub force: bool,
    /// Also write the results as FORMAT into FILE at the end (html, text,
    /// markdown, csv, fio-json; repeat for several; report.html is always
    /// written into the output directory)
    #[arg(long, num_args = 2, value_names = ["FORMAT", "FILE"], action = clap::ArgAction::Append)]
    pub export: Option<Vec<String>>,
    /// Seed of the offset and data generators
    #[arg(long, default_value = "4207")]
    pub seed: u64,
    /// No progress and no summary (errors still go to stderr)
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the last second's IOPS, MiB/s and latency to stdout every SECS
    /// seconds while a job runs, for logs (fio's --status-interval)
    #[arg(long, value_name = "SECS")]
    pub status_interval: Option<f64>,
    /// Add a remote step: the scratch file also served by iolab's own NBD
    /// target (in network namespaces as root, loopback otherwise), QD1
    /// latency and maximum 4k IOPS locally and over NBD, and the unloaded
    /// latency breakdown (`iolab remote` compares more transports)
    #[arg(long)]
    pub remote: bool,
    /// Print the plan and exit
    #[arg(long)]
    pub dry_run: bool,
    /// The configurations to build, rounds and baseline of a media run.
    #[command(flatten)]
    pub media: crate::cli::media::MediaArgs,
    /// The device steps on several hosts at once (DIR is then a directory
    /// on every host; the trace, database and remote steps are dropped).
    #[command(flatten)]
    pub hosts: crate::cli::hosts::HostsArgs,
    /// The one directory (or export) of a run on a single target, set
    /// from DIR or --target when the run starts.
    #[arg(skip)]
    pub dir: PathBuf,
}
