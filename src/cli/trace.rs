//! Arguments of `iolab trace` (issue: per-request latency breakdown).

use std::path::PathBuf;

use crate::plan::units::{Size, Span};
use clap::Args;

#[derive(Debug, Args)]
pub struct TraceArgs {
    #[command(flatten)]
    pub opts: Box<TraceOpts>,
}

/// The options themselves (boxed so the CLI enum stays small).
#[derive(Debug, Args)]
pub struct TraceOpts {
    /// Directory for the scratch file, as --target in every verb (must be
    /// on a real block device; --dir is the same)
    #[arg(
        short = 't',
        long = "target",
        visible_alias = "dir",
        default_value = "/var/tmp",
        value_name = "DIR"
    )]
    pub dir: PathBuf,
    /// Scratch file size
    #[arg(long, default_value = "512M")]
    pub size: Size,
    /// Engines, comma separated: psync, aio, io_uring, io_uring+sqpoll
    #[arg(
        long,
        default_value = "psync",
        value_parser = crate::cli::names::TRACE_ENGINES,
        hide_possible_values = true
    )]
    pub engine: String,
    /// Queue depths, comma separated (psync always runs at 1)
    #[arg(long, default_value = "1")]
    pub qd: String,
    /// Worker threads (each with its own queue of --qd requests)
    #[arg(long, default_value_t = 1)]
    pub jobs: u32,
    /// Block size
    #[arg(long, default_value = "4k")]
    pub bs: Size,
    /// randread or randwrite
    #[arg(long, default_value = "randread")]
    pub rw: String,
    /// Measured time per configuration (traced; the same again untraced;
    /// --time is the same)
    #[arg(long, default_value = "3s", visible_alias = "time")]
    pub runtime: Span,
    /// I/O schedulers to compare, comma separated (e.g. none,mq-deadline,bfq,kyber);
    /// the original scheduler is restored afterwards
    #[arg(long)]
    pub scheduler: Option<String>,
    /// Untraced/traced pairs per configuration for the tracing overhead, run
    /// in alternating order (untraced first, then traced first, ...); the
    /// reported overhead is the median over the pairs
    #[arg(long, default_value_t = 1)]
    pub overhead_pairs: u32,
    /// Skip the untraced run that measures the tracing overhead
    #[arg(long)]
    pub no_overhead: bool,
    /// Do not trace syscall entry/exit (lower overhead; the submission and
    /// reaping edges merge into "prepare+submit" and "completion+reap")
    #[arg(long)]
    pub no_syscalls: bool,
    /// Ring-buffer size per CPU, KiB
    #[arg(long, default_value_t = 16384)]
    pub buffer_kb: u32,
    /// Also write FORMAT into FILE: blktrace DIR (each configuration's
    /// block events in blktrace's format under DIR; `--export DIR` alone
    /// is the same), or the results as html, text, markdown, csv or
    /// fio-json, as in every verb; repeat for several
    #[arg(long, num_args = 1..=2, value_names = ["FORMAT", "FILE"], action = clap::ArgAction::Append)]
    pub export: Option<Vec<String>>,
    /// Device number to write into exported blktrace records, MAJ:MIN
    /// (btt treats majors 9/253/254 as md/device-mapper)
    #[arg(long)]
    pub export_dev: Option<String>,
    /// Results file (JSON; --json is the same, as in every verb)
    #[arg(long, short = 'o', visible_alias = "json")]
    pub output: Option<PathBuf>,
    /// Replace an existing output file iolab did not write (iolab's own
    /// results and reports are replaced without it)
    #[arg(long)]
    pub force: bool,
    /// No tables (warnings and errors still go to stderr)
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the configurations and the expected duration, and exit
    #[arg(long)]
    pub dry_run: bool,
    /// Print the last second's IOPS, MiB/s and latency to stdout every SECS
    /// seconds while a configuration runs (fio's --status-interval)
    #[arg(long, value_name = "SECS")]
    pub status_interval: Option<f64>,
    /// Stop each run after this many requests
    #[arg(long, default_value_t = 2_000_000)]
    pub max_ops: usize,
    /// Seed of the offset and data generators (the same default in every verb)
    #[arg(long, default_value_t = 4207)]
    pub seed: u64,
}
