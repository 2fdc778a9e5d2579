//! Arguments of `iolab remote` (local vs remote block storage).

use std::path::PathBuf;

use crate::plan::units::{Percents, Size, Sizes, Span, TcRate};
use clap::Args;

#[derive(Debug, Args, Clone)]
#[command(after_help = "EXAMPLES:
  iolab remote -t /var/tmp                      DAS vs iolab's NBD target vs qemu-nbd vs nbdkit, 4k random mixes at QD 1 and 32
  iolab remote -t /var/tmp --transports das,iolab --mixes 100 --qd 1,8,32
  iolab remote -t /var/tmp --transports das,iolab,nvme-tcp,tgtd --mixes 100 --qd 1,32
                                                DAS vs NBD vs NVMe/TCP (iolab's initiator and target) vs iSCSI
  iolab remote -t /var/tmp --transports das,iolab --target-threads 1,2 --jobs 2
                                                target CPU and IOPS vs the target's reactor threads
  iolab remote -t /var/tmp --fabric-rate 1gbit  a 1 Gbit/s link (tbf on the veth pair)
  iolab remote -t /var/tmp --fabric-delay 100us  every reply held 100 us in iolab's target (netem is absent here)
  iolab remote -t /var/tmp --plan examples/nvmeof-remote.toml    the NVMe-oF study's figures
  iolab remote -t /var/tmp --transports das,iolab --db 800,10k
                                                RocksDB 80/20 on ext4 on the remote volume vs on the local file
  iolab remote -t /var/tmp --transports das,nbdkit-file --inject-errors 1% --continue-on-error
                                                EIO in 1% of nbdkit's requests, counted per point
  iolab remote --hosts h1,h2,h3 --target-host stor1 -t /data --transports iolab,nvme-tcp --qd 1,32
                                                three hosts at once against exports iolab serves on stor1
                                                (over ssh, as `device --hosts`), stor1's CPU in every point

As root, the initiator and the targets run in two network namespaces joined by
a veth pair (10.200.77.1 and 10.200.77.2); otherwise on loopback, said in the
results. The targets serve a scratch file on the storage under test; the same
jobs on the same file locally are the baseline (das). Everything iolab sets up
(namespaces, servers, the scratch file) is removed at exit, on Ctrl-C, and by
the next iolab start after a SIGKILL.")]
pub struct RemoteArgs {
    /// Directory on the storage under test (the scratch file goes here;
    /// with --target-host, a directory on that host)
    #[arg(short = 't', long, value_name = "DIR")]
    pub target: PathBuf,
    /// Settings from a TOML file (keys are this verb's flag names; flags
    /// given on the command line win), e.g. examples/nvmeof-remote.toml
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Size of the scratch file
    #[arg(long, value_name = "SIZE", default_value = "1G")]
    pub size: Size,
    /// Transports to compare: das, iolab (iolab's NBD target), nbdkit-file,
    /// nbdkit-memory, qemu-nbd, tgtd (iSCSI), nvme-tcp (iolab's NVMe/TCP
    /// target and initiator), nvme-tcp-kernel (the kernel's nvmet and
    /// nvme-tcp, where the kernel has them), nvme-rdma-kernel (the
    /// kernel's nvmet-rdma and nvme-rdma on a soft-RoCE link iolab makes)
    #[arg(
        long,
        value_name = "LIST",
        default_value = "das,iolab,qemu-nbd,nbdkit-file"
    )]
    pub transports: String,
    /// Read percentages of the random read/write mixes (100 = reads only)
    #[arg(long, value_name = "LIST", default_value = "100,80,50,20,0")]
    pub mixes: String,
    /// Queue depths (per job)
    #[arg(long, value_name = "LIST", default_value = "1,32")]
    pub qd: String,
    /// Block size
    #[arg(long, value_name = "SIZE", default_value = "4k")]
    pub bs: Size,
    /// Jobs (threads; over NBD one connection each)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: u32,
    /// Measured time of each point (--time is the same)
    #[arg(
        long,
        value_name = "TIME",
        default_value = "3s",
        visible_alias = "time"
    )]
    pub runtime: Span,
    /// Unmeasured warm-up before each point
    #[arg(long, value_name = "TIME", default_value = "1s")]
    pub ramp: Span,
    /// Give up on a server that leaves a request unanswered this long
    /// (iolab's nbd and nvme-tcp initiators; default 30s)
    #[arg(long, value_name = "TIME")]
    pub io_timeout: Option<Span>,
    /// Open-loop rates of the load-latency curve, in percent of each
    /// transport's closed-loop maximum (its randread point at the deepest
    /// --qd); none to skip
    #[arg(long, value_name = "LIST", default_value = "10,30,50,70,90")]
    pub rates: Percents,
    /// Reactor threads of iolab's own targets; one run of the iolab and
    /// nvme-tcp transports per value
    #[arg(long, value_name = "LIST", default_value = "1")]
    pub target_threads: String,
    /// Requests in the unloaded latency breakdown over iolab's targets (0:
    /// none; the breakdown is on by default here, where `device
    /// --breakdown` turns tracing on; `--breakdown N` is the old spelling)
    #[arg(
        long = "breakdown-requests",
        alias = "breakdown",
        value_name = "N",
        default_value_t = 2000
    )]
    pub breakdown: usize,
    /// Link bandwidth (tc tbf on both ends of the veth pair), e.g. 1gbit, 500mbit
    #[arg(long, value_name = "RATE")]
    pub fabric_rate: Option<TcRate>,
    /// Round-trip delay added by iolab's own target (each reply held until
    /// its arrival plus TIME); other servers need netem, which is detected
    #[arg(long, value_name = "TIME")]
    pub fabric_delay: Option<Span>,
    /// Database on the volume: RocksDB value sizes (e.g. 800,10k), one
    /// database each, on ext4 on a loop device over the local file (das) and
    /// over each NBD transport's export (through nbdfuse); none to skip
    #[arg(long, value_name = "SIZES", default_value = "none")]
    pub db: Sizes,
    /// Keys each database is loaded with (db_bench fillseq)
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    pub db_num: u64,
    /// Operations of the database's readrandomwriterandom
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    pub db_ops: u64,
    /// Reads per 100 operations of readrandomwriterandom
    #[arg(long, value_name = "PERCENT", default_value_t = 80)]
    pub db_read_percent: u8,
    /// Count requests that complete with an error (per errno, in the
    /// point's `errors`) and go on, as fio's continue_on_error; without it
    /// the first error fails the point
    #[arg(long)]
    pub continue_on_error: bool,
    /// Fail this share of the nbdkit transports' requests with EIO
    /// (nbdkit's error filter), e.g. 1% or 0.01; other transports run as
    /// usual
    #[arg(long, value_name = "RATE")]
    pub inject_errors: Option<String>,
    /// Run on loopback even as root
    #[arg(long)]
    pub loopback: bool,
    /// Output directory (results.json, report.html, server logs; default ./iolab-remote-TIME)
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Also write the results file here, as `device --json` and `kv --json`
    /// do (the output directory keeps its results.json); - for stdout
    /// instead of the tables
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Replace output files iolab did not write
    #[arg(long)]
    pub force: bool,
    /// Also write the results as FORMAT into FILE at the end (html, text,
    /// markdown, csv, fio-json; repeat for several; report.html is always
    /// written into the output directory)
    #[arg(long, num_args = 2, value_names = ["FORMAT", "FILE"], action = clap::ArgAction::Append)]
    pub export: Option<Vec<String>>,
    /// Seed of the random offsets (the same default in every verb)
    #[arg(long, default_value_t = 4207)]
    pub seed: u64,
    /// No progress and no tables
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the plan and exit
    #[arg(long)]
    pub dry_run: bool,
    /// With --hosts: the storage server, [user@]host[:port] reached over
    /// ssh as the hosts are; iolab serves each transport's export there
    /// (iolab's own NBD and NVMe/TCP targets, qemu-nbd, nbdkit) and
    /// measures its CPU
    #[arg(long, value_name = "HOST", help_heading = "Hosts")]
    pub target_host: Option<String>,
    /// With --target-host: the address the target host serves on, as the
    /// hosts reach it (ADDR or ADDR:PORT; default the address ssh reaches
    /// it at, any free port)
    #[arg(long, value_name = "ADDR", help_heading = "Hosts")]
    pub target_address: Option<String>,
    #[command(flatten)]
    pub hosts: crate::cli::hosts::HostsArgs,
    /// Flags given on the command line (they override --plan).
    #[arg(skip)]
    pub given: Vec<String>,
}
