//! Arguments of `iolab device`: one job, or a built-in profile of jobs, on a
//! file or block device.

use std::path::PathBuf;

use clap::Args;

use crate::measure::tsc::ClockChoice;
use crate::plan::sweep::SweepKind;
use crate::plan::units::{BsAxis, Count, Rates, Size, Span, Spans};

/// `--sweep`: placement (clap prints the error naming the flag).
fn parse_sweep(s: &str) -> Result<SweepKind, String> {
    SweepKind::parse(s).ok_or_else(|| format!("'{s}' is not a sweep: placement"))
}

/// `--clock`: auto, tsc or mono (clap prints the error naming the flag).
fn parse_clock(s: &str) -> Result<ClockChoice, String> {
    ClockChoice::parse(s).ok_or_else(|| format!("'{s}' is not a clock: auto, tsc or mono"))
}

#[derive(Debug, Args, Clone)]
#[command(after_help = "EXAMPLES:
  iolab device --target /mnt/test --rw randread --bs 4k --qd 32 --runtime 10s
      4 KiB random reads at queue depth 32 on a 1 GiB scratch file in /mnt/test
  iolab device --target /mnt/test --rw randrw --mix 70 --bs 4k:70,64k:30 --jobs 4 --engine aio
      70/30 mixed random I/O with a block size split, 4 workers, kernel AIO
  iolab device --target /dev/nvme0n1 --rw randread --qd 64 --engine io_uring --uring-fixed-buffers
      read-only job on a block device (opened read-only)
  iolab device --target /dev/nvme0n1 --rw write --bs 1m --destroy-data /dev/nvme0n1
      writes to a block device need --destroy-data naming it; refused if mounted
  iolab device --engine null --qd 1 --io-count 10m --cpus 0
      iolab's own per-request overhead
  iolab device --target . --rw randread --batch 64 --bs 4k
      batched access: submit 64, wait for all 64, repeat; per-block latency = batch / 64
  iolab device --profile quick --target . --json results.json
      the short default characterization (QD1 latency, max IOPS, bandwidth)
  iolab device --target . --rw randread,randwrite --bs 4k..1m --qd 1,32 --budget 5m --dry-run
      a sweep: the cross product of every list; --dry-run prints the plan and its duration
  iolab device --target . --rw randread --qd 32 --rate 10%..100%/10 --arrival poisson
      load-latency curve: measure the closed-loop maximum, then open-loop runs at 10%..100% of it
  iolab device --target . --rw randread --latency-target 500us --percentile 99
      the largest QD whose p99 stays under 500 us (every step is kept in the results)
  iolab device --target . --profile snia-iops --steady-state --precondition --purge
      SNIA PTS IOPS test: purge, 2x precondition, rounds until steady state
  iolab device --target . --plan examples/bingmann-batched.toml --json out.json
      the experiments of a plan file
  iolab device --fio-job examples/randread.fio --json out.json
      run a fio job file (its filename/directory and size, unless --target/--size)
  iolab device --target . --rw randread --qd 16 --export fio-json out.fio.json
      also write the results in fio's JSON shape (fio-plot, fio_jsonplus_clat2csv)
  iolab device --target /var/tmp --rw randread --qd 1,16 --runtime 3s --breakdown
      trace every point through the I/O stack (root): a btt-style stage table per point
  iolab device --target /var/tmp --make ext4,ext4-nojournal,xfs,raw --rounds 3 --rw randread --qd 1,32
      the same jobs on file systems iolab builds on loop devices (root), interleaved by rounds, vs ext4
  iolab device -t ssd=/mnt/ssd -t nvme=/mnt/nvme -t ram=/dev/shm --rounds 3 --profile quick
      the same jobs on several targets of your own, interleaved by rounds, normalized to the first
  iolab device --hosts web1,web2,db@10.0.0.7:2222 --target /var/tmp --rw randread --qd 1,32
      every job on three hosts at once over ssh, one start, histograms merged exactly (docs/fleet.md)
  iolab device --hosts @groups.toml --target /var/tmp --rw randread --qd 8 --runtime 30s
      host groups: each [[group]] of the file runs its own rw, bs, iodepth, numjobs, rate, size or target,
      with a merged row per group (docs/fleet.md#host-groups)")]
pub struct DeviceArgs {
    /// Directory (a scratch file is created in it), existing file, block
    /// device, or remote export (nbd://HOST[:PORT]/[EXPORT],
    /// nvme-tcp://HOST[:PORT]/NQN[?nsid=N], iscsi://HOST[:PORT]/IQN/LUN). Given several
    /// times, as [LABEL=]PATH: the same jobs on every target, interleaved by
    /// rounds and normalized to the baseline (docs/media.md)
    #[arg(
        short = 't',
        long,
        value_name = "PATH",
        action = clap::ArgAction::Append,
        help_heading = "Target"
    )]
    pub target: Vec<PathBuf>,
    /// Bytes to address (default 1g for a scratch file, else the whole file/device)
    #[arg(long, value_name = "SIZE", help_heading = "Target")]
    pub size: Option<Size>,
    /// Allow writing to an existing file that iolab did not create
    #[arg(long, help_heading = "Target")]
    pub overwrite: bool,
    /// Allow writing to this block device, destroying its data (must name the
    /// target; with several targets, once per device written to)
    #[arg(
        long,
        value_name = "DEVICE",
        action = clap::ArgAction::Append,
        help_heading = "Target"
    )]
    pub destroy_data: Vec<PathBuf>,
    /// Keep a file iolab created instead of deleting it at exit
    #[arg(long, help_heading = "Target")]
    pub keep: bool,
    /// The configurations to build, rounds and baseline of a media run.
    #[command(flatten)]
    pub media: crate::cli::media::MediaArgs,
    /// Several hosts at once (docs/fleet.md).
    #[command(flatten)]
    pub hosts: crate::cli::hosts::HostsArgs,

    /// Access pattern: read, write, randread, randwrite, readwrite, randrw; a list sweeps it
    #[arg(
        long,
        default_value = "randread",
        value_name = "PATTERN",
        help_heading = "Workload"
    )]
    pub rw: String,
    /// Read percentage for readwrite/randrw; a list or range sweeps it (100,95,65,50,35,5,0 or 0..100/10)
    #[arg(
        long,
        default_value = "50",
        value_name = "READ_PERCENT",
        help_heading = "Workload"
    )]
    pub mix: String,
    /// Block size; a list (4k,64k,1m) or range (1k..64m doubles, 4k..64k/4k steps) sweeps it. A weighted split 4k:70,64k:30 is ONE block size; several splits are separated by ';' (4k:70,64k:30;8k)
    #[arg(
        long,
        default_value = "4k",
        value_name = "SIZE",
        help_heading = "Workload"
    )]
    pub bs: BsAxis,
    /// Requests in flight per job (async engines); list or range (1..4096 = powers of two, 1..64/8 = step 8)
    #[arg(long, default_value = "1", value_name = "N", help_heading = "Workload")]
    pub qd: String,
    /// Worker threads, each with its own engine instance and file descriptor; list or range
    #[arg(long, default_value = "1", value_name = "N", help_heading = "Workload")]
    pub jobs: String,
    /// How jobs share the target: shared (each addresses all of it, like fio) or split (disjoint slices)
    #[arg(
        long,
        default_value = "shared",
        value_name = "MODE",
        help_heading = "Workload"
    )]
    pub region: String,
    /// Submit K requests at once, wait for all K, repeat (batched access); list or range (1..4096 = powers of two)
    #[arg(long, value_name = "K", help_heading = "Workload")]
    pub batch: Option<String>,
    /// fsync after every N writes (per job)
    #[arg(long, default_value = "0", value_name = "N", help_heading = "Workload")]
    pub fsync_every: u32,
    /// Submit as soon as N requests are ready (1 = each at once, fio's default; larger saves syscalls)
    #[arg(long, default_value = "1", value_name = "N", help_heading = "Workload")]
    pub submit_batch: u32,
    /// Pause this long after every --thinktime-blocks completions, once the
    /// requests in flight are done (fio's thinktime: an application's
    /// processing time between I/Os), e.g. 100us
    #[arg(long, value_name = "TIME", help_heading = "Workload")]
    pub thinktime: Option<Span>,
    /// Completions between pauses with --thinktime (fio's thinktime_blocks)
    #[arg(long, default_value = "1", value_name = "N", help_heading = "Workload")]
    pub thinktime_blocks: u32,
    /// Seed of the offset and data generators
    #[arg(long, default_value = "4207", help_heading = "Workload")]
    pub seed: u64,
    /// A built-in set of jobs: quick, snia-iops, snia-throughput, snia-latency, batched-scan, batched-random, qd1-latency, max, act (see docs/sweeps.md)
    #[arg(long, value_name = "NAME", help_heading = "Workload")]
    pub profile: Option<String>,
    /// --profile act: ACT's load multiplier N ("Nx": 2000 x N small reads
    /// and 1000 x N writes per second; default 1)
    #[arg(long, value_name = "N", help_heading = "Workload")]
    pub act_scale: Option<f64>,
    /// Name of the job in results (default: derived from its parameters)
    #[arg(long, help_heading = "Workload")]
    pub name: Option<String>,

    /// I/O engine: psync, aio, io_uring, mmap, null, nbd (iolab's NBD
    /// client; the default for an nbd:// target), iscsi (libiscsi; the
    /// default for an iscsi:// target), nvme-tcp (iolab's NVMe/TCP
    /// initiator; the default for an nvme-tcp:// target); a list sweeps it
    #[arg(
        long,
        default_value = "io_uring",
        value_name = "ENGINE",
        value_parser = crate::cli::names::DEVICE_ENGINES,
        hide_possible_values = true,
        help_heading = "Engine"
    )]
    pub engine: String,
    /// Use O_DIRECT (the default where the target supports it)
    #[arg(long, help_heading = "Engine", conflicts_with = "buffered")]
    pub direct: bool,
    /// Go through the page cache instead of O_DIRECT
    #[arg(long, help_heading = "Engine")]
    pub buffered: bool,
    /// io_uring: register the buffers (READ_FIXED/WRITE_FIXED)
    #[arg(long, help_heading = "Engine")]
    pub uring_fixed_buffers: bool,
    /// io_uring: register the file
    #[arg(long, help_heading = "Engine")]
    pub uring_fixed_files: bool,
    /// io_uring: kernel submission polling thread
    #[arg(long, help_heading = "Engine")]
    pub uring_sqpoll: bool,
    /// io_uring: completion polling (needs a device with poll queues)
    #[arg(long, help_heading = "Engine")]
    pub uring_iopoll: bool,
    /// nbd and nvme-tcp: busy-poll the socket for replies (non-blocking
    /// receives in a spin, 100% of a CPU per job) instead of sleeping until
    /// they arrive; SO_BUSY_POLL where the kernel allows it (fio: hipri)
    #[arg(long, help_heading = "Engine")]
    pub poll: bool,
    /// Pin job i to CPU list[i % len], e.g. 0,2-3
    #[arg(long, value_name = "LIST", help_heading = "Engine")]
    pub cpus: Option<String>,
    /// Pin the workers to NUMA node N's CPUs and, unless --mem-node is
    /// given, bind their buffers to node N's memory
    #[arg(
        long,
        value_name = "N",
        conflicts_with = "cpus",
        help_heading = "Engine"
    )]
    pub numa_node: Option<u32>,
    /// Bind each worker's buffer memory to NUMA node N (mbind MPOL_BIND
    /// before the buffers are first touched)
    #[arg(long, value_name = "N", help_heading = "Engine")]
    pub mem_node: Option<u32>,
    /// A built-in sweep: placement (each job on the device's NUMA node and
    /// off it, workers and memory together; the off/on ratio in the analysis)
    #[arg(long, value_name = "placement", value_parser = parse_sweep, help_heading = "Workload")]
    pub sweep: Option<SweepKind>,
    /// nbd and nvme-tcp: give up on a server that leaves a request
    /// unanswered this long (default 30s, Linux's nvme io_timeout); the
    /// point then fails naming the server and the requests in flight
    #[arg(long, value_name = "DURATION", help_heading = "Engine")]
    pub io_timeout: Option<Span>,

    /// Measured time per job (default 10s unless --io-count/--io-bytes;
    /// --time is the same)
    #[arg(
        long,
        value_name = "DURATION",
        help_heading = "Duration",
        visible_alias = "time"
    )]
    pub runtime: Option<Span>,
    /// Stop after this many requests (all jobs together); k/m suffixes allowed
    #[arg(long, value_name = "N", help_heading = "Duration")]
    pub io_count: Option<Count>,
    /// Stop after this many bytes (all jobs together)
    #[arg(long, value_name = "SIZE", help_heading = "Duration")]
    pub io_bytes: Option<Size>,
    /// Total time shared evenly by every point of a sweep (instead of --runtime per point)
    #[arg(long, value_name = "DURATION", help_heading = "Duration")]
    pub budget: Option<Span>,
    /// Warm-up time excluded from statistics
    #[arg(long, value_name = "DURATION", help_heading = "Duration")]
    pub ramp: Option<Span>,

    /// Run the experiments of a TOML plan file (see examples/*.toml); flags given too are defaults
    #[arg(long, value_name = "FILE", help_heading = "Workload")]
    pub plan: Option<PathBuf>,

    /// Run the jobs of a fio job file (global and job sections; common options only, others are refused by name)
    #[arg(long, value_name = "FILE.fio", help_heading = "Workload", conflicts_with_all = crate::plan::options::fio_job_conflicts())]
    pub fio_job: Option<PathBuf>,

    /// Open loop: issue at this total rate (IOPS, split across jobs); a list (1k,5k), range (1k..64k) or a ramp of the measured closed-loop maximum (10%..100%/10)
    #[arg(long, value_name = "IOPS", help_heading = "Load")]
    pub rate: Option<Rates>,
    /// Open-loop arrivals: uniform (fixed gaps) or poisson (exponential gaps)
    #[arg(
        long,
        default_value = "uniform",
        value_name = "KIND",
        help_heading = "Load"
    )]
    pub arrival: String,
    /// Knee of the load-latency curve: highest load whose p99 stays under FACTOR x the unloaded p99
    #[arg(
        long,
        default_value = "2",
        value_name = "FACTOR",
        help_heading = "Load"
    )]
    pub knee_factor: f64,
    /// Find the largest QD (closed loop) or rate (with --rate) whose latency percentile meets this target
    #[arg(long, value_name = "DURATION", help_heading = "Load")]
    pub latency_target: Option<Span>,
    /// Percentile for --latency-target
    #[arg(long, default_value = "99", value_name = "P", help_heading = "Load")]
    pub percentile: f64,

    /// Repeat the plan in rounds until steady state (SNIA PTS) on iops, bw or lat
    #[arg(long, value_name = "METRIC", num_args = 0..=1, default_missing_value = "iops", help_heading = "Steady state")]
    pub steady_state: Option<String>,
    /// snia (range <= 20% and slope excursion <= 10% of the window mean), or fio's single criteria: fio-range, fio-slope
    #[arg(
        long,
        default_value = "snia",
        value_name = "MODE",
        help_heading = "Steady state"
    )]
    pub steady_criterion: String,
    /// Limit in percent of the window mean for fio-range / fio-slope
    #[arg(
        long,
        default_value = "20",
        value_name = "PCT",
        help_heading = "Steady state"
    )]
    pub steady_limit: f64,
    /// Rounds in the steady-state window
    #[arg(
        long,
        default_value = "5",
        value_name = "N",
        help_heading = "Steady state"
    )]
    pub steady_window: usize,
    /// Give up after this many rounds
    #[arg(
        long,
        default_value = "25",
        value_name = "N",
        help_heading = "Steady state"
    )]
    pub max_rounds: usize,
    /// Before measuring, write N x the target's size sequentially in 128 KiB blocks (default 2)
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "2", help_heading = "Steady state")]
    pub precondition: Option<String>,
    /// Before preconditioning, purge: punch holes in the file (BLKDISCARD on a block device given with --destroy-data)
    #[arg(long, help_heading = "Steady state")]
    pub purge: bool,

    /// Stamp written blocks and check every read of them; mismatches exit 3
    #[arg(long, help_heading = "Data")]
    pub verify: bool,

    /// Count requests that complete with an error (per errno, in the point's `errors`) and go on, as fio's continue_on_error; without it the first error fails the point
    #[arg(long, help_heading = "Data")]
    pub continue_on_error: bool,

    /// Clock that stamps requests: tsc (rdtsc, a few ns per read; where the
    /// TSC is invariant and the kernel's clocksource), mono
    /// (CLOCK_MONOTONIC), or auto (tsc where it can be used, else mono).
    /// --breakdown always uses mono, the clock of tracefs
    #[arg(long, value_name = "auto|tsc|mono", default_value = "auto", value_parser = parse_clock, help_heading = "Engine")]
    pub clock: ClockChoice,

    /// Write the results file here (atomically, after every job); - for stdout
    /// (-o/--output, as in every verb; --json is the same)
    #[arg(
        short = 'o',
        long,
        visible_alias = "output",
        value_name = "FILE",
        help_heading = "Output"
    )]
    pub json: Option<PathBuf>,
    /// Replace an existing output file iolab did not write (iolab's own
    /// results and reports are replaced without it)
    #[arg(long, help_heading = "Output")]
    pub force: bool,
    /// No progress and no tables (errors still go to stderr)
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,
    /// Print the last second's IOPS, MiB/s and latency to stdout every SECS
    /// seconds while a point runs, for logs (fio's --status-interval)
    #[arg(long, value_name = "SECS", help_heading = "Output")]
    pub status_interval: Option<f64>,
    /// Print the validated job(s) and exit
    #[arg(long, help_heading = "Output")]
    pub dry_run: bool,
    /// Write fio-format bandwidth, IOPS, latency and completion-latency
    /// histogram logs of every point into DIR (one line per second, fio's
    /// log_avg_msec=1000: for fio-plot -g, fio2gnuplot, fiologparser_hist)
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    pub log_dir: Option<PathBuf>,
    /// Also write the results as FORMAT into FILE (html, text, markdown,
    /// csv, fio-json; repeat for several): fio-json is kept up to date
    /// after every point, the others are written at the end (Ctrl-C too)
    #[arg(long, num_args = 2, value_names = ["FORMAT", "FILE"], action = clap::ArgAction::Append, help_heading = "Output")]
    pub export: Option<Vec<String>>,

    /// Trace every point through the I/O stack (needs root and tracefs; see docs/trace.md): stage table per point, extra.trace in the results
    #[arg(long, help_heading = "Breakdown")]
    pub breakdown: bool,
    /// Trace ring-buffer size per CPU for --breakdown, KiB
    #[arg(
        long,
        default_value = "16384",
        value_name = "KIB",
        help_heading = "Breakdown"
    )]
    pub breakdown_buffer_kb: u32,

    /// Fake engine service times (tests), e.g. 100us,200us
    #[arg(long, hide = true)]
    pub fake_latency: Option<Spans>,
    /// Fake engine parallel servers (tests)
    #[arg(long, hide = true, default_value = "1")]
    pub fake_servers: u32,

    /// The flags given on the command line (their ids), filled by
    /// `Cli::try_parse_args`: they override plan and fio job files.
    #[arg(skip)]
    pub given: Vec<String>,
}
