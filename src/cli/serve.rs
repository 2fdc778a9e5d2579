//! Arguments of `iolab serve` (iolab's own NBD, NVMe/TCP and NVMe/RDMA targets).

use std::path::PathBuf;

use crate::plan::units::{Size, Span};
use clap::Args;

#[derive(Debug, Args, Clone)]
#[command(after_help = "EXAMPLES:
  iolab serve -t /var/tmp --size 1G              a 1 GiB scratch file served as nbd://127.0.0.1:10809/
  iolab device --target nbd://127.0.0.1/ --rw randread --qd 32    (in another terminal) measure it
  iolab serve -t disk.img --read-only --threads 2    an existing image, read-only, two reactors
  iolab serve -t /var/tmp --time-limit 10m        stop after ten minutes
  iolab serve -t /var/tmp --poll                 a busy-polling reactor, pinned (100% of its CPU, always)
  iolab serve -t /var/tmp --fabric-delay 100us --stamps stamps.txt
                                                 every reply held 100 us after arrival; per-request stamps
  iolab serve -t /var/tmp --protocol nvme-tcp --listen 127.0.0.1:4420
                                                 NVMe/TCP: nvme-tcp://127.0.0.1:4420/nqn.2025-11.io.iolab:target?nsid=1
  nbdinfo --list nbd://127.0.0.1:10809            (another terminal) the NBD export
  nvme discover -t tcp -a 127.0.0.1 -s 4420       the NVMe/TCP subsystem, from its discovery controller
  nvme connect -t tcp -a 127.0.0.1 -s 4420 -n nqn.2025-11.io.iolab:target
                                                 Linux's initiator: the namespace as /dev/nvmeXnY
  iolab serve -t /var/tmp --protocol nvme-rdma --listen 10.0.0.1:4420 --allow-remote
                                                 NVMe over RDMA on the RDMA device (RoCE NIC or
                                                 soft-RoCE link) that has 10.0.0.1: one reactor
  nvme connect -t rdma -a 10.0.0.1 -s 4420 -n nqn.2025-11.io.iolab:target
                                                 Linux's nvme-rdma initiator

The target serves until Ctrl-C (or SIGTERM), then finishes what is in flight,
writes the stamps of every open connection, removes its scratch file and
exits 130 (0 when --time-limit ended it). NBD and NVMe/TCP have no
authentication here: a writable export listens on loopback only, unless
--allow-remote is given.")]
pub struct ServeArgs {
    /// What to serve: a directory (a scratch file is created in it and
    /// removed at exit), an existing file (with --overwrite or --read-only),
    /// or a block device (with --destroy-data naming it, or --read-only)
    #[arg(short = 't', long, value_name = "PATH")]
    pub target: PathBuf,
    /// Size of the scratch file (default 1G), or how much of a file or device to serve
    #[arg(long, value_name = "SIZE")]
    pub size: Option<Size>,
    /// Let clients write to an existing file iolab did not create
    #[arg(long)]
    pub overwrite: bool,
    /// Let clients write to this block device, destroying its data
    #[arg(long, value_name = "DEVICE")]
    pub destroy_data: Option<PathBuf>,
    /// Serve read-only (clients' writes fail with EPERM)
    #[arg(long)]
    pub read_only: bool,
    /// Protocol: nbd, nvme-tcp (one subsystem, namespace 1, and the
    /// discovery subsystem listing it), or nvme-rdma (the same over an
    /// RDMA device's address; 128 KiB transfers at most)
    #[arg(long, value_name = "PROTOCOL", default_value = "nbd")]
    pub protocol: String,
    /// Subsystem NQN of the NVMe/TCP target
    #[arg(
        long,
        value_name = "NQN",
        default_value = "nqn.2025-11.io.iolab:target"
    )]
    pub nqn: String,
    /// Address to listen on (loopback by default; port 10809 for nbd, 4420 for nvme-tcp)
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Let a writable export listen on an address other than loopback:
    /// NBD and NVMe/TCP have no authentication here, anyone who reaches
    /// the port can read and write the export
    #[arg(long)]
    pub allow_remote: bool,
    /// Reactor threads, each with its own io_uring; connections are spread over them
    #[arg(
        long,
        visible_alias = "target-threads",
        value_name = "N",
        default_value_t = 1
    )]
    pub threads: usize,
    /// Largest request accepted (advertised to NBD clients as the maximum
    /// block size; NVMe/TCP's is 1 MiB, its MDTS)
    #[arg(long, value_name = "SIZE", default_value = "1M")]
    pub max_block: Size,
    /// Hold every reply until its arrival plus TIME (an emulated fabric's round trip)
    #[arg(long, value_name = "TIME")]
    pub fabric_delay: Option<Span>,
    /// Append per-request stamps (arrival, device submit, device completion,
    /// reply send) of every connection to FILE when it closes
    #[arg(long, value_name = "FILE")]
    pub stamps: Option<PathBuf>,
    /// Close a connection whose replies waited TIME without leaving (NBD:
    /// its oldest queued reply waited TIME to leave whole; NVMe/TCP: not
    /// one byte taken by its socket): a client that does not read them, or
    /// reads them a trickle at a time, frees what it holds; at least 1s
    #[arg(long, value_name = "TIME", default_value = "30s")]
    pub stall_timeout: Span,
    /// Busy-poll (SPDK's model): each reactor is pinned to a CPU of its
    /// own and spins on its ring and sockets without ever sleeping, taking
    /// 100% of that CPU even while idle; SO_BUSY_POLL is set on the
    /// sockets where the kernel allows it
    #[arg(long)]
    pub poll: bool,
    /// With --poll: the CPUs of the reactors, e.g. 2,3 (reactor i on the
    /// i-th, in turn; default: CPU i of those this process may use)
    #[arg(long, value_name = "LIST", requires = "poll")]
    pub poll_cpus: Option<String>,
    /// Stop after TIME (default: serve until Ctrl-C or SIGTERM; --runtime is the same)
    #[arg(long, value_name = "TIME", visible_alias = "runtime")]
    pub time_limit: Option<Span>,
    /// Keep the scratch file at exit
    #[arg(long)]
    pub keep: bool,
    /// Say nothing on stderr about laying out the scratch file (what it
    /// serves still goes to stdout; warnings and errors to stderr)
    #[arg(short, long)]
    pub quiet: bool,
}
